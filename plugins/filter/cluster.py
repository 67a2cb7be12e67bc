# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: hostfile_entries
short_description: Turn inventory hosts into hostfile entries (name, address, slots)
description:
  - For each host name, builds C({name, address, slots}) from that host's C(cluster_address)
    (falling back to C(ansible_host), then the name) and C(cluster_slots) (falling back to
    O(slots)). The result feeds M(multinode.training.hostfile).
positional: hostvars, slots
options:
  _input:
    description: Host names, in launch order.
    type: list
    elements: str
    required: true
  hostvars:
    description: The C(hostvars) of the play.
    type: dict
    required: true
  slots:
    description: Slots (ranks) per host when the host sets no C(cluster_slots).
    type: int
    default: 1
"""

EXAMPLES = r"""
- name: Write an Intel MPI hostfile for the cluster
  multinode.training.hostfile:
    path: /tmp/hostfile
    hosts: "{{ groups['launcher'] + groups['workers'] | multinode.training.hostfile_entries(hostvars, 2) }}"
"""

RETURN = r"""
_value:
  description: One entry per host.
  type: list
  elements: dict
"""

from collections.abc import Mapping
from typing import Any


def hostfile_entries(hosts: list[str], hostvars: Mapping[str, Any], slots: int = 1) -> list[dict[str, Any]]:
    entries = []
    for name in hosts:
        host = hostvars[name]
        address = host.get("cluster_address") or host.get("ansible_host") or name
        entries.append({"name": name, "address": str(address), "slots": int(host.get("cluster_slots", slots))})
    return entries


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"hostfile_entries": hostfile_entries}
