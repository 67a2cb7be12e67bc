#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: hostfile
short_description: Write a hostfile for Intel MPI, MPICH, Open MPI, DeepSpeed, Horovod or ipexrun
description:
  - Validates a list of hosts and writes it as a hostfile in the syntax of the chosen launcher.
  - The file is only rewritten, atomically, when its content differs.
author:
  - multinode.training team (@multinode-training)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  path:
    description:
      - Where to write the hostfile. The parent directory must exist.
    type: path
    required: true
  hosts:
    description:
      - The hosts, in rank order.
      - Names and addresses must be unique.
      - With O(dialect=ipexrun) the first host must be the machine that runs C(ipexrun).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - Name of the host, used in error messages and in the RV(hosts) return value.
        type: str
        required: true
      address:
        description:
          - Address written to the hostfile. Defaults to O(hosts[].name).
        type: str
      slots:
        description:
          - Number of MPI ranks on this host. Must be at least V(1).
          - With O(dialect=intelmpi) or O(dialect=ipexrun) every host must have the same value.
        type: int
        default: 1
  dialect:
    description:
      - Hostfile syntax.
      - V(intelmpi) writes one address per line for C(mpirun -f) (Intel MPI hydra). Slot counts are not written because
        some Intel MPI versions ignore C(host:N); the launcher passes C(-ppn) and C(I_MPI_PERHOST) instead,
        so all hosts must have the same O(hosts[].slots).
      - V(mpich) writes C(address:N).
      - V(openmpi) writes C(address slots=N).
      - V(deepspeed) writes C(address slots=N) for the C(deepspeed) launcher's C(--hostfile).
      - V(horovod) writes C(address slots=N) for C(horovodrun --hostfile); RV(horovod_hosts) has the same hosts
        in the C(horovodrun -H) form.
      - V(ipexrun) writes one address per line for C(ipexrun --hostfile). Slot counts are not written; the launcher
        passes C(--nprocs-per-node), so all hosts must have the same O(hosts[].slots). Line 1 must be an address of
        the machine C(ipexrun) runs on, and hosts are written in the order given, so list that host first.
    type: str
    choices: [intelmpi, mpich, openmpi, deepspeed, horovod, ipexrun]
    default: intelmpi
"""

EXAMPLES = r"""
- name: Intel MPI hostfile, 8 ranks per node
  multinode.training.hostfile:
    path: /etc/mpi/hostfile
    hosts:
      - {name: node1, slots: 8}
      - {name: node2, slots: 8}

- name: Open MPI hostfile on the high-speed network
  multinode.training.hostfile:
    path: /home/train/hostfile
    dialect: openmpi
    owner: train
    mode: "0644"
    hosts:
      - {name: node1, address: 10.10.0.1, slots: 4}
      - {name: node2, address: 10.10.0.2, slots: 2}
  register: mpi_hosts

- name: ipexrun hostfile, the launcher (this host) on line 1
  multinode.training.hostfile:
    path: /home/train/ipex.hostfile
    dialect: ipexrun
    hosts:
      - {name: node1, address: 10.10.0.1, slots: 2}
      - {name: node2, address: 10.10.0.2, slots: 2}

- name: Show the number of ranks
  ansible.builtin.debug:
    msg: "mpirun -np {{ mpi_hosts.world_size }} -hostfile {{ mpi_hosts.path }}"
"""

RETURN = r"""
path:
  description: Path of the hostfile.
  returned: always
  type: str
  sample: /etc/mpi/hostfile
content:
  description: The rendered hostfile text.
  returned: always
  type: str
  sample: "10.10.0.1 slots=4\n10.10.0.2 slots=2\n"
dialect:
  description: The hostfile syntax used.
  returned: always
  type: str
  sample: openmpi
world_size:
  description: Total number of MPI ranks, the sum of all slots.
  returned: always
  type: int
  sample: 6
horovod_hosts:
  description: The hosts as the value of C(horovodrun -H), C(address:slots) joined by commas, in host order.
  returned: always
  type: str
  sample: "10.10.0.1:4,10.10.0.2:2"
hosts:
  description: The validated hosts, with defaults filled in.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Host name.
      type: str
      returned: always
      sample: node1
    address:
      description: Address written to the hostfile.
      type: str
      returned: always
      sample: 10.10.0.1
    slots:
      description: Number of ranks on the host.
      type: int
      returned: always
      sample: 4
"""

import dataclasses

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.multinode.training.plugins.module_utils.files import ensure_content
from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    DIALECTS,
    HOSTS_ARGUMENT_SPEC,
    HostfileError,
    horovod_hosts_arg,
    normalize_hosts,
    render_hostfile,
    world_size,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            hosts=HOSTS_ARGUMENT_SPEC,
            dialect=dict(type="str", choices=list(DIALECTS), default="intelmpi"),
        ),
        add_file_common_args=True,
        supports_check_mode=True,
    )
    path = module.params["path"]
    dialect = module.params["dialect"]
    try:
        hosts = normalize_hosts(module.params["hosts"])
        content = render_hostfile(hosts, dialect)
    except HostfileError as exc:
        module.fail_json(msg=str(exc))

    module.exit_json(
        path=path,
        content=content,
        dialect=dialect,
        world_size=world_size(hosts),
        horovod_hosts=horovod_hosts_arg(hosts),
        hosts=[dataclasses.asdict(host) for host in hosts],
        **ensure_content(module, path, content),
    )


if __name__ == "__main__":
    main()
