# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster contract: the one structure every role reads (the fact ``cluster``).

The cluster role builds it once per run from its inputs (the ``cluster_*`` variables, as extra vars, the
inventory or the role's defaults give them) with the filter multinode.training.cluster_contract. Every name,
id and path the roles share is a field here, derived in one place; no role re-aliases or re-derives them.
The per-node facts (address, interface, devices) are the separate fact ``cluster_node`` (see ``Node``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils.plain_data import plain
from ansible_collections.multinode.training.plugins.module_utils.slurm import MUNGED_PIDFILE, SlurmPaths

RUNTIMES = ("container", "host")
# "slurm": the slurm role runs Slurm on the nodes, and launcher_type=slurm submits jobs to it.
SCHEDULERS = ("none", "slurm")


class ContractError(ValueError):
    """An input the contract cannot be built from."""


@dataclass(frozen=True)
class Cluster:
    """What every node of one cluster shares. The inputs are the fields; the rest are derived.

    ``hosts`` are the nodes a job runs on, launcher first; ``spares`` are provisioned alike (SSH mesh, worker,
    code) but idle until a restart puts one in place of a lost node (launcher_lost_node: spare).
    """

    name: str
    user: str
    uid: int
    gid: int
    ssh_port: int
    image: str
    runtime: str
    scheduler: str
    root: str
    state_dir: str
    launcher_host: str
    hosts: tuple[str, ...]
    spares: tuple[str, ...]

    def _under_root(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}"

    @property
    def workdir(self) -> str:
        """Code, data and job directories on every node."""
        return self._under_root("work")

    @property
    def code_dir(self) -> str:
        """The training code's mirror on every node: the workload role syncs it, each job copies it."""
        return f"{self.workdir}/code"

    @property
    def jobs_dir(self) -> str:
        """The jobs' directories on every node: the workload role creates it, the launcher role fills it."""
        return f"{self.workdir}/jobs"

    @property
    def ssh_dir(self) -> str:
        """The SSH mesh's files on every node."""
        return self._under_root("ssh")

    @property
    def ssh_server_dir(self) -> str:
        """The workers' sshd files: sshd_config, host key, authorized_keys."""
        return f"{self.ssh_dir}/server"

    @property
    def home(self) -> str:
        """The training user's home in the host runtime (the cluster's own, not a home the site uses)."""
        return self._under_root("home")

    @property
    def ssh_client_dir(self) -> str:
        """Where the launcher's SSH client finds its key and config: ~/.ssh on the hosts, a mount in a container."""
        return f"{self.home}/.ssh" if self.runtime == "host" else f"{self.ssh_dir}/client"

    @property
    def env_script(self) -> str:
        """The script a host-runtime shell sources (oneAPI and the Python environment); empty in containers."""
        return self._under_root("env.sh") if self.runtime == "host" else ""

    @property
    def run_dir(self) -> str:
        """Pid files of the host runtime's sshd."""
        return self._under_root("run")

    @property
    def worker_pidfile(self) -> str:
        return f"{self.run_dir}/sshd.pid"

    @property
    def worker_container(self) -> str:
        return f"{self.name}-worker"

    @property
    def launcher_container(self) -> str:
        return f"{self.name}-launcher"

    @property
    def slurm_pidfiles(self) -> dict[str, str]:
        """Pid file of each Slurm daemon (munged, slurmctld on the launcher, slurmd), when the scheduler is Slurm."""
        if self.scheduler != "slurm":
            return {}
        paths = SlurmPaths()
        return {"munged": MUNGED_PIDFILE, "slurmctld": paths.slurmctld_pidfile, "slurmd": paths.slurmd_pidfile}

    @property
    def owner(self) -> str:
        """``uid:gid``, as Docker's ``user`` option takes it."""
        return f"{self.uid}:{self.gid}"

    def as_fact(self) -> dict[str, Any]:
        """Every field and derived value, as the plain mapping a play reads (``cluster.workdir``)."""
        fact = asdict(self)
        fact["hosts"] = list(self.hosts)
        fact["spares"] = list(self.spares)
        for name in DERIVED:
            fact[name] = getattr(self, name)
        return fact


INPUTS = tuple(field.name for field in fields(Cluster))
DERIVED = tuple(
    name for name, member in vars(Cluster).items() if isinstance(member, property)
)


def build(inputs: Mapping[str, Any]) -> Cluster:
    """The contract from its inputs (every field of ``Cluster``); ids and the port as whole numbers."""
    missing = [name for name in INPUTS if name not in inputs]
    if missing:
        raise ContractError(f"cluster contract: missing inputs {missing}")
    runtime = str(inputs["runtime"])
    if runtime not in RUNTIMES:
        raise ContractError(f"cluster_runtime: {runtime!r} is not allowed; use 'container' or 'host'")
    scheduler = str(inputs["scheduler"])
    if scheduler not in SCHEDULERS:
        raise ContractError(f"cluster_scheduler: {scheduler!r} is not allowed; use 'none' or 'slurm'")
    hosts = _names(inputs, "hosts")
    spares = [spare for spare in _names(inputs, "spares") if spare not in hosts]
    return Cluster(
        name=str(inputs["name"]),
        user=str(inputs["user"]),
        uid=_whole(inputs, "uid"),
        gid=_whole(inputs, "gid"),
        ssh_port=_whole(inputs, "ssh_port"),
        image=str(inputs["image"]),
        runtime=runtime,
        scheduler=scheduler,
        root=str(inputs["root"]).rstrip("/") or "/",
        state_dir=str(inputs["state_dir"]),
        launcher_host=str(inputs["launcher_host"]),
        hosts=tuple(hosts),
        spares=tuple(spares),
    )


def _names(inputs: Mapping[str, Any], name: str) -> list[str]:
    names = inputs[name]
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ContractError(f"cluster contract: {name} must be a list of names, not {names!r}")
    return [str(item) for item in names]


def _whole(inputs: Mapping[str, Any], name: str) -> int:
    value = inputs[name]
    try:
        if isinstance(value, bool):
            raise ValueError
        return int(str(value))
    except ValueError:
        raise ContractError(f"cluster_{name}: {value!r} is not a whole number") from None


@dataclass(frozen=True)
class Node:
    """What one node contributes (the fact ``cluster_node``): its place on the cluster network and its devices."""

    address: str
    iface: str
    hostname: str
    cpu: Mapping[str, Any]
    memory_mib: int
    dri_devices: tuple[str, ...]
    device_gids: tuple[int, ...]
    # The kernel's boot id: nodes with the same one share that kernel's CPUs.
    kernel: str = ""

    def as_fact(self) -> dict[str, Any]:
        """The plain mapping a play reads (``cluster_node.iface``)."""
        return {
            "address": self.address,
            "iface": self.iface,
            "hostname": self.hostname,
            "cpu": dict(self.cpu),
            "memory_mib": self.memory_mib,
            "dri_devices": list(self.dri_devices),
            "device_gids": list(self.device_gids),
            "kernel": self.kernel,
        }


def node(node_facts: Mapping[str, Any], connect_address: str, address: str = "", iface: str = "") -> dict[str, Any]:
    """``cluster_node`` from what node_facts found on the node (``ansible_facts.multinode_node``).

    The address is ``address`` if the inventory sets one; else the launcher's (whose route to itself is local)
    is ``connect_address`` (ansible_host or the inventory name), every other node's the source address of its
    route to the launcher, so a management address in ansible_host is never mistaken for the cluster network.
    The interface is ``iface`` if set; else the one carrying the inventory's ``address`` (empty if none does: an
    address of another machine, or a typo, is named before any node changes, not when the job fails to reach it);
    else that of the route to the launcher, or on the launcher the one carrying its address (empty if none does).
    DRI devices are passed into containers and, only where there are some, the render/video group ids (the guides'
    ``--group-add``)."""
    route = node_facts.get("route") or {}
    local = bool(route.get("local")) or not route.get("source_address")
    found_address = address or (connect_address if local else str(route["source_address"]))
    carried = address and node_facts.get("ipv4_addresses")
    found_iface = iface or (
        _carrying(node_facts, found_address) if carried or route.get("local") else str(route.get("interface") or "")
    )
    dri = node_facts.get("dri") or {}
    devices = tuple(f"/dev/dri/{name}" for name in list(dri.get("cards") or []) + list(dri.get("render_nodes") or []))
    gids = tuple(dict.fromkeys(gid for gid in (node_facts.get("gids") or {}).values() if _is_id(gid))) if devices else ()
    return Node(
        found_address,
        found_iface,
        str(node_facts.get("hostname") or ""),
        plain(node_facts.get("cpu") or {}),
        int(node_facts.get("memory_mib") or 0),
        devices,
        gids,
        str(node_facts.get("boot_id") or ""),
    ).as_fact()


def address_problems(nodes: Mapping[str, Mapping[str, Any] | None], addresses: Mapping[str, Any] | None = None) -> list[str]:
    """What is wrong with the nodes' addresses on the cluster network: a node no interface of which carries its
    address, and several hosts that are one node (the inventory naming one machine twice, under a name and an IP).
    ``nodes`` maps each host to its ``cluster_node`` (None for a host without one: left out), ``addresses`` each host to
    its node facts' ``ipv4_addresses`` (the addresses a message offers)."""
    found = {host: node for host, node in nodes.items() if node}
    problems = [
        f"host {host}: no interface carries {node['address']}; set cluster_address to one of "
        f"{', '.join(_other_addresses((addresses or {}).get(host) or {}))} or set cluster_iface"
        for host, node in found.items()
        if not node.get("iface")
    ]
    hosts_at: dict[str, list[str]] = {}
    for host, node in found.items():
        hosts_at.setdefault(str(node["address"]), []).append(host)
    shared = [f"{' = '.join(hosts)} ({address})" for address, hosts in hosts_at.items() if len(hosts) > 1]
    if shared:
        problems.append(
            f"cluster_address: several hosts are the same node on the cluster network: {', '.join(shared)}; list each node once"
        )
    return problems


def _other_addresses(by_iface: Mapping[str, Any]) -> list[str]:
    """Every IPv4 address of the node but loopback's."""
    return [str(address) for addresses in by_iface.values() for address in (addresses or []) if not str(address).startswith("127.")]


def _carrying(node_facts: Mapping[str, Any], address: str) -> str:
    """The first interface one of whose IPv4 addresses is ``address``, or empty."""
    by_iface = node_facts.get("ipv4_addresses") or {}
    return next((str(name) for name, addresses in by_iface.items() if address in (addresses or [])), "")


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
