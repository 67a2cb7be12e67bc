#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: node_facts
short_description: Gather CPU topology, Intel GPUs, DRI devices and the route to a peer of a training node
version_added: 0.1.0
description:
  - Reads C(/proc/cpuinfo) and C(/sys/devices/system/node/node*/cpulist) for the CPU and NUMA topology,
    C(/proc/meminfo) for the memory size,
    C(/sys/bus/pci/devices/*/{vendor,device,class}) for Intel GPUs, lists C(/dev/dri) and reads
    C(/etc/group) for the GIDs of the C(render) and C(video) groups.
  - With O(peer), runs C(ip -o route get) to find the interface and source address this node uses to reach the peer.
  - With O(python), runs that interpreter once to read its version.
  - Returns everything as the C(multinode_node) fact. Changes nothing on the node.
author:
  - multinode.training team (@multinode-training)
attributes:
  check_mode:
    support: full
    description: Only reads files and runs C(ip route get) and O(python), so it runs unchanged in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is no diff.
  facts:
    support: full
    description: Returns an C(ansible_facts) dictionary that updates the host's facts.
options:
  peer:
    description:
      - IP address of another node, for example the launcher. The route to it gives the interface and source address
        this node uses on the cluster network.
      - Without it, RV(ansible_facts.multinode_node.route) is V(null).
    type: str
  python:
    description:
      - An interpreter on the node (for example the one host mode builds the training environment with,
        C(/usr/bin/python3)) whose C(major.minor) version is returned as RV(ansible_facts.multinode_node.python).
      - V(null) is returned when it does not exist or does not run.
    type: path
  sysfs_root:
    description:
      - Directory that C(/proc), C(/sys), C(/dev/dri) and C(/etc/group) are read under, for containers that bind-mount
        the host's files elsewhere and for tests with a fake root.
      - Does not apply to the C(ip) command.
    type: path
    default: /
  jobs_dir:
    description:
      - The directory the cluster's jobs live in on the node (C(<workdir>/work/jobs)). With it, the processes of the
        node (C(/proc/*/cmdline)) are searched for a job's C(launch.sh) or C(rank.sh) under it, and the jobs found
        are returned as RV(ansible_facts.multinode_node.running_jobs), with how many of each one's ranks run here and
        the TCP ports in use on the node (for a job that runs beside them).
      - Reading every process's command line needs root (C(become)).
    type: path
  workdir:
    description:
      - The cluster's work directory on the node (C(<root>/work)); with it,
        RV(ansible_facts.multinode_node.workdir_exists) says whether provisioning made it (the health check stops on
        a node without it).
    type: path
  watch:
    description:
      - Also observe what multinode.training.node_state watches, in the same module run, and return it as
        RV(ansible_facts.multinode_node.provisioning) (the record of the last provisioning run and the watched
        parts as they are now), so the node_state check that follows needs no run of its own (O(multinode.training.node_state#module:observed) there).
      - Reading the record needs root (C(become)).
    type: dict
    suboptions:
      record:
        description: The node's record file (O(multinode.training.node_state#module:path)).
        type: path
        required: true
      trees:
        description: Directories whose files are watched.
        type: list
        elements: path
        default: []
      containers:
        description: Containers whose state and image are watched.
        type: list
        elements: str
        default: []
      images:
        description: Images whose id is watched.
        type: list
        elements: str
        default: []
      pid_files:
        description: Pid files of processes that are watched.
        type: list
        elements: path
        default: []
      docker_socket:
        description: The Docker daemon's socket.
        type: path
        default: /var/run/docker.sock
notes:
  - Intel GPUs are recognized by PCI vendor C(0x8086) and PCI class display controller (C(0x03xxxx)) or processing
    accelerator (C(0x12xxxx)). The family comes from the device IDs in Linux C(include/drm/intel/pciids.h).
  - The C(render) and C(video) GIDs come from C(/etc/group) only, not from NSS (LDAP, SSSD).
"""

EXAMPLES = r"""
- name: Gather node facts and the route to the launcher
  multinode.training.node_facts:
    peer: "{{ hostvars[groups['launcher'][0]]['ansible_default_ipv4']['address'] }}"

- name: Show the topology and the cluster interface
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.multinode_node.cpu.sockets }} sockets x
      {{ ansible_facts.multinode_node.cpu.cores_per_socket }} cores,
      {{ ansible_facts.multinode_node.gpus | length }} Intel GPUs,
      launcher reached over {{ ansible_facts.multinode_node.route.interface }}

- name: Read the host's files from inside a container
  multinode.training.node_facts:
    sysfs_root: /host
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host's facts.
  returned: always
  type: dict
  contains:
    multinode_node:
      description: What a training launcher needs to know about the node.
      returned: always
      type: dict
      contains:
        cpu:
          description:
            - CPU topology. Processors without C(physical id) count as socket 0, processors without C(core id) as
              cores of their own.
            - Per-socket and per-core numbers are the largest ones on the node, as C(lscpu) reports them.
          returned: always
          type: dict
          contains:
            model_name:
              description: C(model name) of the first processor, V(null) if there is none (ARM).
              type: str
              returned: always
              sample: Intel(R) Xeon(R) Gold 6244 CPU @ 3.60GHz
            sockets:
              description: Number of CPU packages.
              type: int
              returned: always
              sample: 2
            numa_nodes:
              description:
                - Number of NUMA nodes; V(1) if the kernel has no NUMA information.
                - Memory-only nodes (HBM, CXL) count too; their RV(ansible_facts.multinode_node.cpu.numa_node_cpus)
                  entry is empty.
              type: int
              returned: always
              sample: 2
            numa_node_cpus:
              description: Logical CPU numbers of each NUMA node, keyed by node number.
              type: dict
              returned: always
              sample: {"0": [0, 1, 2, 3, 8, 9, 10, 11], "1": [4, 5, 6, 7, 12, 13, 14, 15]}
            cores_per_socket:
              description: Physical cores per socket.
              type: int
              returned: always
              sample: 8
            logical_cpus_per_socket:
              description: Logical CPUs (hardware threads) per socket.
              type: int
              returned: always
              sample: 16
            threads_per_core:
              description: Hardware threads per physical core, V(2) with Hyper-Threading.
              type: int
              returned: always
              sample: 2
            physical_cores:
              description: Physical cores on the node.
              type: int
              returned: always
              sample: 16
            logical_cpus:
              description: Logical CPUs on the node.
              type: int
              returned: always
              sample: 32
        memory_mib:
          description: MemTotal of C(/proc/meminfo) in MiB, rounded down (Slurm's RealMemory of the node).
          type: int
          returned: always
          sample: 515703
        hostname:
          description: The node's host name as the kernel reports it (C(hostname)), which Slurm's daemons go by.
          type: str
          returned: always
          sample: node1
        boot_id:
          description:
            - The running kernel's boot id (C(/proc/sys/kernel/random/boot_id)); empty where it cannot be read.
            - Nodes with the same one share a kernel and so its CPUs (containers on one server, as a simulated
              cluster is), so automatic OpenMP threads split the cores over the ranks of all of them.
          type: str
          returned: always
          sample: 0b6a1c5e-4f2d-4b0e-9a51-6d1f0e8c7a42
        gpus:
          description: Intel GPUs, sorted by PCI address. Empty without one.
          type: list
          elements: dict
          returned: always
          contains:
            pci_address:
              description: PCI address.
              type: str
              returned: always
              sample: "0000:4d:00.0"
            device_id:
              description: PCI device ID.
              type: str
              returned: always
              sample: "0x56c0"
            family:
              description:
                - V(flex) (Data Center GPU Flex 140/170), V(max) (Data Center GPU Max), V(arc) (Arc A-series and
                  Arc Pro), V(integrated) (a VGA device at C(00:02.0) not in the table) or V(unknown).
              type: str
              returned: always
              sample: flex
        dri:
          description: Device nodes in C(/dev/dri); empty lists if it does not exist.
          type: dict
          returned: always
          contains:
            cards:
              description: C(cardN) nodes in numeric order.
              type: list
              elements: str
              returned: always
              sample: [card0, card1, card2]
            render_nodes:
              description: C(renderDN) nodes in numeric order.
              type: list
              elements: str
              returned: always
              sample: [renderD128, renderD129]
        gids:
          description: GIDs from C(/etc/group), V(null) for a group that is not there.
          type: dict
          returned: always
          contains:
            render:
              description: GID of the C(render) group.
              type: int
              returned: always
              sample: 109
            video:
              description: GID of the C(video) group.
              type: int
              returned: always
              sample: 44
        route:
          description: How this node reaches O(peer); V(null) without O(peer).
          type: dict
          returned: always
          contains:
            peer:
              description: The O(peer) address.
              type: str
              returned: when O(peer) is set
              sample: 10.0.0.1
            interface:
              description: Outgoing interface.
              type: str
              returned: when O(peer) is set
              sample: eth0
            source_address:
              description: Source address the kernel picks for the peer, V(null) if C(ip) names none.
              type: str
              returned: when O(peer) is set
              sample: 10.0.0.2
            gateway:
              description: Next hop, V(null) when the peer is on a directly attached network.
              type: str
              returned: when O(peer) is set
              sample: 10.0.0.254
            local:
              description: Whether O(peer) is an address of this node.
              type: bool
              returned: when O(peer) is set
              sample: false
        ipv4_addresses:
          description: Each interface's IPv4 addresses (C(ip -o -4 addr show)), without prefix length.
          type: dict
          returned: always
          sample: {"lo": ["127.0.0.1"], "eth0": ["10.0.0.2"]}
        python:
          description: The C(major.minor) version of O(python), V(null) when it does not exist or does not run.
          type: str
          returned: when O(python) is set
          sample: "3.11"
        running_jobs:
          description:
            - Each job with a process on the node, by its id, and which of its scripts (C(launch.sh), C(rank.sh)) run.
            - Empty when none runs.
          type: dict
          returned: when O(jobs_dir) is set
          sample: {"20261127-093000-torchrun": ["launch.sh", "rank.sh"]}
        running_ranks:
          description:
            - How many ranks of each job in RV(ansible_facts.multinode_node.running_jobs) run on this node (its rank
              status files under O(jobs_dir) without an end).
          type: dict
          returned: when O(jobs_dir) is set
          sample: {"20261127-093000-torchrun": 1}
        workdir_exists:
          description: Whether O(workdir) is a directory on the node (provisioning made it).
          type: bool
          returned: when O(workdir) is set
          sample: true
        listening_ports:
          description: The TCP ports something listens on at this node (C(/proc/net/tcp) and C(tcp6)), sorted.
          type: list
          elements: int
          returned: when O(jobs_dir) is set
          sample: [22, 12345, 29500]
        provisioning:
          description:
            - C(path) and C(record), the node's record of its last provisioning run (null without one), and C(parts),
              the watched things as they are now; pass it to multinode.training.node_state as O(multinode.training.node_state#module:observed).
          type: dict
          returned: when O(watch) is set
          sample: {"path": "/opt/multinode/state/provisioned.json", "record": {"version": 1, "inputs": "3f2a...", "parts": {"files /opt/ssh": "9c1e..."}},
                   "parts": {"files /opt/ssh": "9c1e..."}}
"""

import glob
import os
import socket
from collections.abc import Iterator

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.multinode.training.plugins.module_utils import node_state
from ansible_collections.multinode.training.plugins.module_utils.node_facts import (
    cpu_topology,
    memory_mib,
    dri_nodes,
    group_gids,
    intel_gpus,
    parse_ipv4_addresses,
    listening_ports,
    parse_route_get,
    ranks_running,
    running_jobs,
)

PCI_FILES = ("vendor", "device", "class")


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def boot_id(root: str) -> str:
    """The running kernel's boot id, or empty where there is none to read."""
    try:
        return read_text(os.path.join(root, "proc/sys/kernel/random/boot_id")).strip()
    except OSError:
        return ""


def node_cpulists(root: str) -> dict[str, str]:
    paths = glob.glob(os.path.join(root, "sys/devices/system/node/node*/cpulist"))
    return {os.path.basename(os.path.dirname(path)): read_text(path) for path in paths}


def pci_devices(root: str) -> dict[str, dict[str, str]]:
    """``{address: {vendor, device, class}}``, leaving out files that do not exist."""
    devices_dir = os.path.join(root, "sys/bus/pci/devices")
    if not os.path.isdir(devices_dir):
        return {}
    devices = {}
    for address in os.listdir(devices_dir):
        paths = {name: os.path.join(devices_dir, address, name) for name in PCI_FILES}
        devices[address] = {name: read_text(path) for name, path in paths.items() if os.path.isfile(path)}
    return devices


def dri_listing(root: str) -> list[str]:
    dri_dir = os.path.join(root, "dev/dri")
    return os.listdir(dri_dir) if os.path.isdir(dri_dir) else []


def group_text(root: str) -> str:
    path = os.path.join(root, "etc/group")
    return read_text(path) if os.path.isfile(path) else ""


def ip_output(module: AnsibleModule, *arguments: str) -> str:
    """The output of ``ip arguments``; the module fails naming the command when it does."""
    rc, out, err = module.run_command([module.get_bin_path("ip", required=True), *arguments])
    if rc != 0:
        module.fail_json(msg=f"ip {' '.join(arguments)} failed: {(err or out).strip()}", rc=rc)
    return out


def route_to(module: AnsibleModule, peer: str) -> dict:
    out = ip_output(module, "-o", "route", "get", peer)
    try:
        return dict(peer=peer, **parse_route_get(out))
    except ValueError as exc:
        module.fail_json(msg=str(exc))


def ipv4_addresses(module: AnsibleModule) -> dict[str, list[str]]:
    return parse_ipv4_addresses(ip_output(module, "-o", "-4", "addr", "show"))


def python_version(module: AnsibleModule, python: str) -> str | None:
    """``major.minor`` of the interpreter ``python`` on the node, None when it does not exist or does not run."""
    if not os.path.isfile(python):
        return None
    rc, out, _err = module.run_command([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    return out.strip() if rc == 0 and out.strip() else None


def status_texts(job_dir: str) -> Iterator[str]:
    """The text of each rank status file of the job in ``job_dir`` (one that is replaced while it is read is skipped)."""
    for path in glob.glob(os.path.join(job_dir, "status", "rank-*.json")):
        try:
            yield read_text(path)
        except OSError:
            continue


def process_arguments(root: str) -> Iterator[list[str]]:
    """The argument list of every process under ``root``/proc; a process that ends while it is read is skipped."""
    for path in glob.glob(os.path.join(root, "proc", "[0-9]*", "cmdline")):
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        yield [argument for argument in text.split("\0") if argument]


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            peer=dict(type="str"),
            python=dict(type="path"),
            sysfs_root=dict(type="path", default="/"),
            jobs_dir=dict(type="path"),
            workdir=dict(type="path"),
            watch=dict(
                type="dict",
                options=dict(record=dict(type="path", required=True), **node_state.WATCHED_OPTIONS),
            ),
        ),
        supports_check_mode=True,
    )
    root = module.params["sysfs_root"]
    peer = module.params["peer"]
    try:
        facts = dict(
            cpu=cpu_topology(read_text(os.path.join(root, "proc/cpuinfo")), node_cpulists(root)),
            memory_mib=memory_mib(read_text(os.path.join(root, "proc/meminfo"))),
            hostname=socket.gethostname(),
            boot_id=boot_id(root),
            gpus=intel_gpus(pci_devices(root)),
            dri=dri_nodes(dri_listing(root)),
            gids=group_gids(group_text(root)),
        )
    except (OSError, ValueError) as exc:
        module.fail_json(msg=f"cannot gather node facts under {root}: {to_native(exc)}")
    facts["route"] = route_to(module, peer) if peer else None
    facts["ipv4_addresses"] = ipv4_addresses(module)
    if module.params["python"]:
        facts["python"] = python_version(module, module.params["python"])
    if module.params["jobs_dir"]:
        facts["running_jobs"] = running_jobs(process_arguments(root), module.params["jobs_dir"])
        jobs_dir = os.path.join(root, module.params["jobs_dir"].lstrip("/"))
        facts["running_ranks"] = {job: ranks_running(status_texts(os.path.join(jobs_dir, job))) for job in facts["running_jobs"]}
        facts["listening_ports"] = listening_ports(
            read_text(os.path.join(root, "proc/net", table)) for table in ("tcp", "tcp6")
            if os.path.exists(os.path.join(root, "proc/net", table))
        )
    if module.params["workdir"]:
        facts["workdir_exists"] = os.path.isdir(os.path.join(root, module.params["workdir"].lstrip("/")))
    watch = module.params["watch"]
    if watch:
        facts["provisioning"] = dict(
            path=watch["record"],
            record=node_state.read_record(watch["record"]),
            parts=node_state.watched_parts(watch),
        )
    module.exit_json(changed=False, ansible_facts=dict(multinode_node=facts))


if __name__ == "__main__":
    main()
