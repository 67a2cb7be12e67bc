# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: hostfile
short_description: Use a launcher hostfile as the inventory
description:
  - Reads an existing hostfile in any dialect of the M(multinode.training.hostfile) module (Intel MPI, MPICH, Open MPI,
    DeepSpeed, Horovod, ipexrun), so a playbook can run against the hosts of a cluster that only has a hostfile.
  - Lines are C(address), C(address:N) or C(address slots=N) (C(slots = N) spacing and C(max_slots=N), which is ignored,
    are accepted). Blank lines and C(#) comments, full-line or trailing, are skipped.
  - A bare address counts as one slot. An address repeated on bare or C(address:N) lines is one host whose slots are
    the sum, as Intel MPI and MPICH read it; repeating an address written with C(slots=) (or C(max_slots=)) is an
    error.
  - Every host is named after its address and gets the host variables C(ansible_host) and C(cluster_address) (its
    address) and C(launcher_nproc_per_node) (its slot count, the ranks the launcher role starts there, unless
    C(-e launcher_nproc_per_node=...) sets another count for every host).
  - The first host of the file is the only member of O(launcher_group); the other hosts, in file order, are the members
    of O(workers_group). Both groups are always created.
  - The source is either the hostfile itself or a YAML configuration file.
    A hostfile has no YAML header, so the plugin takes any file whose name ends in C(.hostfile) or is exactly
    C(hostfile), for example C(ansible-inventory -i cluster.hostfile --graph); its options then come from the
    environment variables and C(ansible.cfg) entries below.
    A YAML configuration file must have a name ending in C(.hostfile.yml) or C(.hostfile.yaml), set
    O(plugin=multinode.training.hostfile) and name the hostfile in O(path).
  - The plugin must be enabled in the C([inventory]) section of C(ansible.cfg), B(before) C(ini), because the C(ini)
    plugin also accepts a hostfile and would read its lines as INI hosts.
author:
  - multinode.training team (@multinode-training)
options:
  plugin:
    description:
      - The name of this plugin. Required in a YAML configuration file, unused when the source is the hostfile itself.
    type: str
    choices: [multinode.training.hostfile]
  path:
    description:
      - The hostfile to read. Required in a YAML configuration file, where a relative path is relative to the directory
        of that file. Unused when the source is the hostfile itself.
    type: str
  ssh_user:
    description:
      - If set, the C(ansible_user) host variable of every host.
    type: str
    env:
      - name: MULTINODE_HOSTFILE_SSH_USER
    ini:
      - section: multinode_hostfile_inventory
        key: ssh_user
  ssh_port:
    description:
      - If set, the C(ansible_port) host variable of every host.
    type: int
    env:
      - name: MULTINODE_HOSTFILE_SSH_PORT
    ini:
      - section: multinode_hostfile_inventory
        key: ssh_port
  launcher_group:
    description:
      - The group of the first host, the machine the launcher runs on.
    type: str
    default: launcher
    env:
      - name: MULTINODE_HOSTFILE_LAUNCHER_GROUP
    ini:
      - section: multinode_hostfile_inventory
        key: launcher_group
  workers_group:
    description:
      - The group of all hosts but the first. Must differ from O(launcher_group).
    type: str
    default: workers
    env:
      - name: MULTINODE_HOSTFILE_WORKERS_GROUP
    ini:
      - section: multinode_hostfile_inventory
        key: workers_group
"""

EXAMPLES = r"""
# ansible.cfg: enable the plugin before ini
# [inventory]
# enable_plugins = multinode.training.hostfile, host_list, script, auto, yaml, ini, toml

# The hostfile itself is the inventory (the name must end in .hostfile or be "hostfile"):
#   ansible-inventory -i cluster.hostfile --graph
#   MULTINODE_HOSTFILE_SSH_USER=train ansible-playbook -i cluster.hostfile playbooks/train.yml
# cluster.hostfile:
#   10.10.0.1 slots=4   # launcher
#   10.10.0.2 slots=4

# cluster.hostfile.yml, a configuration file with options:
plugin: multinode.training.hostfile
path: cluster.hostfile
ssh_user: train
ssh_port: 2222
workers_group: ranks
"""

import os

from ansible.errors import AnsibleParserError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.inventory import BaseFileInventoryPlugin

from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    HostEntry,
    HostfileError,
    parse_hostfile,
)

HOSTFILE_NAME = "hostfile"
HOSTFILE_SUFFIX = ".hostfile"
CONFIG_SUFFIXES = (".hostfile.yml", ".hostfile.yaml")


def is_config(path: str) -> bool:
    return path.endswith(CONFIG_SUFFIXES)


def is_hostfile(path: str) -> bool:
    return os.path.basename(path) == HOSTFILE_NAME or path.endswith(HOSTFILE_SUFFIX)


def read_hosts(path: str) -> list[HostEntry]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise AnsibleParserError(f"cannot read hostfile {path}: {to_native(exc)}") from exc
    try:
        return parse_hostfile(text)
    except HostfileError as exc:
        raise AnsibleParserError(f"{path}: {exc}") from exc


class InventoryModule(BaseFileInventoryPlugin):
    NAME = "multinode.training.hostfile"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and (is_config(path) or is_hostfile(path))

    def parse(self, inventory, loader, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        if is_config(path):
            self._read_config_data(path)
            hostfile = self._configured_hostfile(path)
        else:
            self.set_options()
            hostfile = path
        self._populate(read_hosts(hostfile))

    def _configured_hostfile(self, config_path: str) -> str:
        hostfile = self.get_option("path")
        if not hostfile:
            raise AnsibleParserError(f"{config_path}: the option 'path' (the hostfile to read) is required")
        return os.path.join(os.path.dirname(config_path), os.path.expanduser(hostfile))

    def _populate(self, hosts: list[HostEntry]) -> None:
        launcher_group = self.get_option("launcher_group")
        workers_group = self.get_option("workers_group")
        if launcher_group == workers_group:
            raise AnsibleParserError(f"launcher_group and workers_group are both {launcher_group!r}; they must differ")
        launcher_group = self.inventory.add_group(launcher_group)
        workers_group = self.inventory.add_group(workers_group)
        host_vars = {"ansible_user": self.get_option("ssh_user"), "ansible_port": self.get_option("ssh_port")}
        for index, host in enumerate(hosts):
            name = self.inventory.add_host(host.address, group=workers_group if index else launcher_group)
            self.inventory.set_variable(name, "ansible_host", host.address)
            self.inventory.set_variable(name, "cluster_address", host.address)
            self.inventory.set_variable(name, "launcher_nproc_per_node", host.slots)
            for key, value in host_vars.items():
                if value is not None:
                    self.inventory.set_variable(name, key, value)
