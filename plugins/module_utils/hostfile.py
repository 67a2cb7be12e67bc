# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validate a list of hosts, render it as a launcher hostfile and parse hostfiles back.

Pure Python (no Ansible imports) so it runs on the controller, on managed
nodes (Python 3.9+) and in plain unit tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

# intelmpi:  Intel MPI hydra ``-f`` file, one address per line. Some Intel MPI
#            versions ignore ``host:N``, so the launcher passes ``-ppn`` and
#            ``I_MPI_PERHOST`` instead and slots must be the same on every host.
# mpich:     ``address:N``
# openmpi:   ``address slots=N``
# deepspeed: ``address slots=N``; DeepSpeed rejects a host listed twice.
# horovod:   ``address slots=N`` for ``horovodrun --hostfile``; the ``-H`` form
#            comes from horovod_hosts_arg().
# ipexrun:   one address per line, the first one an address of the machine
#            ipexrun runs on (see launcher_first()); the ranks per host come
#            from ``--nprocs-per-node``, so slots must be the same on every host.
DIALECTS = ("intelmpi", "mpich", "openmpi", "deepspeed", "horovod", "ipexrun")

# The argument spec of a module option that takes a host list (checked by normalize_hosts).
HOSTS_ARGUMENT_SPEC = dict(
    type="list",
    elements="dict",
    required=True,
    options=dict(
        name=dict(type="str", required=True),
        address=dict(type="str"),
        slots=dict(type="int", default=1),
    ),
)


@dataclass(frozen=True)
class HostEntry:
    name: str
    address: str
    slots: int


class HostfileError(ValueError):
    """The host list, the hostfile text or the requested dialect is invalid."""


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


def _address_line(host: HostEntry) -> str:
    return host.address


def _colon_line(host: HostEntry) -> str:
    return f"{host.address}:{host.slots}"


def _slots_line(host: HostEntry) -> str:
    return f"{host.address} slots={host.slots}"


_LINE: dict[str, Callable[[HostEntry], str]] = {
    "intelmpi": _address_line,
    "mpich": _colon_line,
    "openmpi": _slots_line,
    "deepspeed": _slots_line,
    "horovod": _slots_line,
    "ipexrun": _address_line,
}

# Dialects that write no slot counts: the launcher flag giving every host the same rank count.
_PER_HOST_FLAG = {"intelmpi": "-ppn", "ipexrun": "--nprocs-per-node"}


def render_hostfile(hosts: list[HostEntry], dialect: str) -> str:
    """The hostfile text for ``dialect``, ending in a single newline.

    Hosts are written in the order given. For ``ipexrun`` line 1 must be an
    address of the machine ipexrun runs on, so the caller passes the launcher
    first, e.g. ``render_hostfile(launcher_first(hosts, name), "ipexrun")``.
    """
    line = _LINE.get(dialect)
    if line is None:
        raise HostfileError(f"unknown dialect {dialect!r}; expected one of: {', '.join(DIALECTS)}")
    flag = _PER_HOST_FLAG.get(dialect)
    if flag is not None:
        try:
            uniform_slots(hosts)
        except HostfileError as exc:
            raise HostfileError(f"dialect {dialect!r} passes one {flag} to every host: {exc}") from exc
    if not hosts:
        raise HostfileError("the host list is empty")
    return "\n".join(line(host) for host in hosts) + "\n"


def horovod_hosts_arg(hosts: list[HostEntry]) -> str:
    """The ``horovodrun -H`` value: ``address:N,address:N,...`` in host order."""
    if not hosts:
        raise HostfileError("the host list is empty")
    return ",".join(_colon_line(host) for host in hosts)


def launcher_first(hosts: list[HostEntry], launcher_name: str) -> list[HostEntry]:
    """A copy of ``hosts`` with the host named ``launcher_name`` moved to the front."""
    for index, host in enumerate(hosts):
        if host.name == launcher_name:
            return [host] + hosts[:index] + hosts[index + 1 :]
    raise HostfileError(f"launcher {launcher_name!r} is not in the host list")


# ---------------------------------------------------------------- parsing

_COUNT = re.compile(r"[0-9]+")
_EQUALS = re.compile(r"\s*=\s*")
_IGNORED_OPTIONS = ("max_slots", "max-slots")


@dataclass(frozen=True)
class _Line:
    address: str
    slots: int
    keyword: bool  # written with ``slots=`` / ``max_slots=``: the host must not repeat


def _tokens(raw: str) -> list[str]:
    """The words of a hostfile line without its comment; ``slots = 4`` becomes ``slots=4``."""
    return _EQUALS.sub("=", raw.split("#", 1)[0]).split()


def _line_error(number: int, raw: str, reason: str) -> HostfileError:
    return HostfileError(f"line {number} {raw.strip()!r}: {reason}")


def _count(number: int, raw: str, what: str, value: str) -> int:
    if not _COUNT.fullmatch(value) or int(value) < 1:
        raise _line_error(number, raw, f"{what} must be an integer >= 1, got {value!r}")
    return int(value)


def _keyword_slots(number: int, raw: str, options: list[str]) -> int:
    slots: int | None = None
    for option in options:
        key, equals, value = option.partition("=")
        if not equals:
            raise _line_error(number, raw, f"expected key=value after the address, got {option!r}")
        if key == "slots":
            if slots is not None:
                raise _line_error(number, raw, "slots= is given more than once")
            slots = _count(number, raw, "slots", value)
        elif key not in _IGNORED_OPTIONS:
            raise _line_error(number, raw, f"unknown option {key!r}; expected slots= or max_slots=")
    return 1 if slots is None else slots


def _parse_line(number: int, raw: str) -> _Line | None:
    tokens = _tokens(raw)
    if not tokens:
        return None
    address, options = tokens[0], tokens[1:]
    if "=" in address:
        raise _line_error(number, raw, "the line must start with an address")
    if address.count(":") == 1:  # host:N (an address with more colons is IPv6)
        address, count = address.split(":")
        if not address:
            raise _line_error(number, raw, "the line must start with an address")
        if options:
            raise _line_error(number, raw, "host:N cannot be combined with key=value options")
        return _Line(address, _count(number, raw, "the slot count after ':'", count), keyword=False)
    if options:
        return _Line(address, _keyword_slots(number, raw, options), keyword=True)
    return _Line(address, 1, keyword=False)


def parse_hostfile(text: str) -> list[HostEntry]:
    """The hosts of a hostfile in any dialect, in order of first appearance; names are the addresses.

    Accepts ``address``, ``address:N`` and ``address slots=N`` lines (``slots = N``
    spacing and ``max_slots=``, which is ignored, as Open MPI allows), blank
    lines and ``#`` comments, full-line or trailing. A bare address counts as
    one slot. An address repeated on bare or ``address:N`` lines is one host
    whose slots are the sum, as Intel MPI and MPICH read it; an address
    repeated where any of its lines has ``slots=`` (or ``max_slots=``) is
    an error, as in DeepSpeed and Open MPI.
    """
    slots: dict[str, int] = {}  # insertion order = order of first appearance
    first_line: dict[str, int] = {}
    keyword: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _parse_line(number, raw)
        if line is None:
            continue
        if line.address in slots and (line.keyword or line.address in keyword):
            raise _line_error(
                number,
                raw,
                f"host {line.address!r} is already listed on line {first_line[line.address]};"
                " a host written with slots= must appear once",
            )
        slots[line.address] = slots.get(line.address, 0) + line.slots
        first_line.setdefault(line.address, number)
        if line.keyword:
            keyword.add(line.address)
    if not slots:
        raise HostfileError("the hostfile lists no hosts")
    return [HostEntry(name=address, address=address, slots=count) for address, count in slots.items()]


def detect_dialect(text: str) -> str:
    """Best-effort dialect of a hostfile: ``openmpi``, ``mpich`` or ``intelmpi``.

    ``openmpi`` if any line has a key=value option such as ``slots=N``,
    ``mpich`` if any line is ``host:N``, else ``intelmpi``. DeepSpeed and
    Horovod files look like Open MPI ones, ipexrun files like Intel MPI ones.
    """
    lines = [tokens for tokens in map(_tokens, text.splitlines()) if tokens]
    if any("=" in token for tokens in lines for token in tokens[1:]):
        return "openmpi"
    if any(tokens[0].count(":") == 1 for tokens in lines):
        return "mpich"
    return "intelmpi"
