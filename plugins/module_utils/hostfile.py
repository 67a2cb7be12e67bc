# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate a list of MPI hosts and render it as a launcher hostfile.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# intelmpi: Intel MPI hydra ``-f`` file, one address per line. Some Intel MPI
#           versions ignore ``host:N``, so the launcher passes ``-ppn`` and
#           ``I_MPI_PERHOST`` instead and slots must be the same on every host.
# mpich:    ``address:N``
# openmpi:  ``address slots=N``
DIALECTS = ("intelmpi", "mpich", "openmpi")


@dataclass(frozen=True)
class HostEntry:
    name: str
    address: str
    slots: int


class HostfileError(ValueError):
    """The host list or the requested dialect is invalid."""


def _host_entry(position: int, raw: Any) -> HostEntry:
    if not isinstance(raw, dict):
        raise HostfileError(f"host #{position} must be a mapping, got {type(raw).__name__}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise HostfileError(f"host #{position} has no name: {raw!r}")
    address = raw.get("address")
    if address is None:
        address = name
    if not isinstance(address, str) or not address.strip():
        raise HostfileError(f"host {name!r} has an empty address")
    if any(char.isspace() for char in address):
        raise HostfileError(f"host {name!r} has whitespace in its address {address!r}")
    slots = raw.get("slots", 1)
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise HostfileError(f"host {name!r} has invalid slots {slots!r}; expected an integer >= 1")
    return HostEntry(name=name, address=address, slots=slots)


def normalize_hosts(raw: list[dict[str, Any]]) -> list[HostEntry]:
    """Turn ``[{name, address?, slots?}, ...]`` into validated HostEntry objects."""
    if not raw:
        raise HostfileError("the host list is empty")
    hosts: list[HostEntry] = []
    name_seen: set[str] = set()
    address_owner: dict[str, str] = {}
    for position, item in enumerate(raw, start=1):
        host = _host_entry(position, item)
        if host.name in name_seen:
            raise HostfileError(f"host {host.name!r} is listed more than once")
        if host.address in address_owner:
            raise HostfileError(
                f"hosts {address_owner[host.address]!r} and {host.name!r} share the address {host.address!r}"
            )
        name_seen.add(host.name)
        address_owner[host.address] = host.name
        hosts.append(host)
    return hosts


def world_size(hosts: list[HostEntry]) -> int:
    """Total number of MPI ranks: the sum of all slots."""
    return sum(host.slots for host in hosts)


def uniform_slots(hosts: list[HostEntry]) -> int:
    """The slot count shared by every host; HostfileError if they differ."""
    if not hosts:
        raise HostfileError("the host list is empty")
    by_slots: dict[int, list[str]] = {}
    for host in hosts:
        by_slots.setdefault(host.slots, []).append(host.name)
    if len(by_slots) > 1:
        groups = "; ".join(f"slots={slots}: {', '.join(names)}" for slots, names in sorted(by_slots.items()))
        raise HostfileError(f"hosts do not share one slot count ({groups})")
    return hosts[0].slots


def render_hostfile(hosts: list[HostEntry], dialect: str) -> str:
    """The hostfile text for ``dialect``, ending in a single newline."""
    if dialect == "intelmpi":
        try:
            uniform_slots(hosts)
        except HostfileError as exc:
            raise HostfileError(f"dialect 'intelmpi' passes one -ppn to every host: {exc}") from exc
        lines = [host.address for host in hosts]
    elif dialect == "mpich":
        lines = [f"{host.address}:{host.slots}" for host in hosts]
    elif dialect == "openmpi":
        lines = [f"{host.address} slots={host.slots}" for host in hosts]
    else:
        raise HostfileError(f"unknown dialect {dialect!r}; expected one of: {', '.join(DIALECTS)}")
    if not lines:
        raise HostfileError("the host list is empty")
    return "\n".join(lines) + "\n"
