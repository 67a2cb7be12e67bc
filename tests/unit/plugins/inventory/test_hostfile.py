# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostfile inventory plugin, run for real through InventoryManager and the ansible CLIs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ansible import constants as C
from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

from ansible_collections.multinode.training.plugins.inventory.hostfile import InventoryModule
from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    DIALECTS,
    HostEntry,
    launcher_first,
    render_hostfile,
)

REPO = Path(__file__).resolve().parents[4]
PLUGIN = "multinode.training.hostfile"
HOSTS = [
    HostEntry("10.0.0.1", "10.0.0.1", 4),
    HostEntry("10.0.0.2", "10.0.0.2", 2),
    HostEntry("10.0.0.3", "10.0.0.3", 8),
]
ONE_SLOT = [HostEntry(host.name, host.address, 1) for host in HOSTS]


@pytest.fixture(scope="module", autouse=True)
def collection_loader():
    """Let Ansible's collection loader own ``ansible_collections`` while this module runs, as ansible-inventory does.

    tests/unit/conftest.py made ``ansible_collections`` a plain namespace package, which the plugin loader
    cannot resolve ``multinode.training.*`` names in; the package modules are set aside and restored afterwards.
    """
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "ansible_collections"}
    for name in saved:
        del sys.modules[name]
    init_plugin_loader([str(REPO / "collections")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(C, "INVENTORY_ENABLED", [PLUGIN, "yaml"])
        patch.setattr(C, "INVENTORY_ANY_UNPARSED_IS_FAILED", True)
        yield
    _AnsibleCollectionFinder._remove()
    for name in [name for name in sys.modules if name.split(".")[0] == "ansible_collections"]:
        del sys.modules[name]
    sys.modules.update(saved)


def inventory(source: Path) -> dict:
    """The groups (member lists in order, empty groups left out) and host variables of ``source``."""
    manager = InventoryManager(loader=DataLoader(), sources=[str(source)])
    return {
        "groups": {name: [host.name for host in group.hosts] for name, group in manager.groups.items() if group.hosts},
        "hostvars": {
            name: {key: value for key, value in host.vars.items() if not key.startswith("inventory_")}
            for name, host in manager.hosts.items()
        },
    }


def parse_error(source: Path) -> str:
    """The plugin's own error for ``source`` (InventoryManager only shows it as a warning)."""
    plugin = inventory_loader.get(PLUGIN)
    assert plugin.verify_file(str(source))
    with pytest.raises(AnsibleParserError) as exc:
        plugin.parse(InventoryData(), DataLoader(), str(source))
    with pytest.raises(AnsibleError, match="Completely failed to parse inventory source"):
        InventoryManager(loader=DataLoader(), sources=[str(source)])
    return exc.value.message


def hosts_of(inv: dict, launcher_group: str = "launcher", workers_group: str = "workers") -> list[HostEntry]:
    """The hosts of an inventory made by the plugin, launcher first."""
    names = inv["groups"][launcher_group] + inv["groups"].get(workers_group, [])
    hostvars = inv["hostvars"]
    return [HostEntry(name, hostvars[name]["cluster_address"], hostvars[name]["launcher_nproc_per_node"]) for name in names]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect(tmp_path, dialect):
    hosts = ONE_SLOT if dialect in ("intelmpi", "ipexrun") else HOSTS
    source = write(tmp_path / "cluster.hostfile", render_hostfile(hosts, dialect))

    inv = inventory(source)

    assert inv["groups"] == {"launcher": ["10.0.0.1"], "workers": ["10.0.0.2", "10.0.0.3"]}
    assert inv["hostvars"] == {
        host.address: {"ansible_host": host.address, "cluster_address": host.address, "launcher_nproc_per_node": host.slots}
        for host in hosts
    }
    assert hosts_of(inv) == hosts


def test_ipexrun_line_one_is_the_launcher(tmp_path):
    source = write(tmp_path / "cluster.hostfile", render_hostfile(launcher_first(ONE_SLOT, "10.0.0.3"), "ipexrun"))
    assert inventory(source)["groups"] == {"launcher": ["10.0.0.3"], "workers": ["10.0.0.1", "10.0.0.2"]}


def test_comments_and_repeated_lines(tmp_path):
    text = "# cluster\n\nb   # launcher\na\nb\n  # a:9\nc:2\nb\n"
    inv = inventory(write(tmp_path / "hostfile", text))
    assert inv["groups"] == {"launcher": ["b"], "workers": ["a", "c"]}
    assert {name: hostvars["launcher_nproc_per_node"] for name, hostvars in inv["hostvars"].items()} == {"b": 3, "a": 1, "c": 2}


def test_single_host_still_creates_the_workers_group(tmp_path):
    source = write(tmp_path / "solo.hostfile", "solo slots=2\n")
    manager = InventoryManager(loader=DataLoader(), sources=[str(source)])
    assert [host.name for host in manager.groups["launcher"].hosts] == ["solo"]
    assert manager.groups["workers"].hosts == []


def test_options_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MULTINODE_HOSTFILE_SSH_USER", "train")
    monkeypatch.setenv("MULTINODE_HOSTFILE_SSH_PORT", "2222")
    monkeypatch.setenv("MULTINODE_HOSTFILE_LAUNCHER_GROUP", "head")
    monkeypatch.setenv("MULTINODE_HOSTFILE_WORKERS_GROUP", "ranks")
    inv = inventory(write(tmp_path / "cluster.hostfile", render_hostfile(HOSTS, "openmpi")))
    assert inv["groups"] == {"head": ["10.0.0.1"], "ranks": ["10.0.0.2", "10.0.0.3"]}
    for hostvars in inv["hostvars"].values():
        assert hostvars["ansible_user"] == "train"
        assert hostvars["ansible_port"] == 2222


@pytest.mark.parametrize("suffix", [".hostfile.yml", ".hostfile.yaml"])
def test_yaml_config(tmp_path, suffix):
    (tmp_path / "hosts").mkdir()
    write(tmp_path / "hosts" / "cluster.hostfile", render_hostfile(HOSTS, "mpich"))
    config = write(
        tmp_path / f"cluster{suffix}",
        f"plugin: {PLUGIN}\n"
        "path: hosts/cluster.hostfile  # relative to this file\n"
        "ssh_user: train\n"
        "ssh_port: 2200\n"
        "launcher_group: head\n"
        "workers_group: ranks\n",
    )

    inv = inventory(config)

    assert inv["groups"] == {"head": ["10.0.0.1"], "ranks": ["10.0.0.2", "10.0.0.3"]}
    assert inv["hostvars"]["10.0.0.3"] == {
        "ansible_host": "10.0.0.3",
        "ansible_port": 2200,
        "ansible_user": "train",
        "cluster_address": "10.0.0.3",
        "launcher_nproc_per_node": 8,
    }
    assert hosts_of(inv, "head", "ranks") == HOSTS


def test_yaml_config_through_the_auto_plugin(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "INVENTORY_ENABLED", ["auto"])
    write(tmp_path / "cluster.hostfile", render_hostfile(HOSTS, "deepspeed"))
    config = write(tmp_path / "c.hostfile.yml", f"plugin: {PLUGIN}\npath: {tmp_path}/cluster.hostfile\n")
    assert hosts_of(inventory(config)) == HOSTS


@pytest.mark.parametrize(
    ("source_text", "dialect"),
    [
        ("a:4\nb slots=2\nc\nc\n", "mpich"),
        ("a:4\nb:2\nc:2\n", "openmpi"),
        ("a slots=4\nb slots=2\nc slots=2\n", "deepspeed"),
        ("# mixed\na slots=4\nb:2\nc\nc\n", "horovod"),
        ("a\nb\nc\n", "intelmpi"),
        ("a # launcher\nb\nc\n", "ipexrun"),
    ],
)
def test_round_trip_inventory_hostfile_inventory(tmp_path, source_text, dialect):
    first = inventory(write(tmp_path / "source.hostfile", source_text))
    hosts = hosts_of(first)

    second = inventory(write(tmp_path / "rendered.hostfile", render_hostfile(hosts, dialect)))

    assert second == first
    assert hosts_of(second) == hosts


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\nhost:0\n", "line 2 'host:0': the slot count after ':' must be an integer >= 1, got '0'"),
        ("a\nhost:x\n", "line 2 'host:x': the slot count after ':' must be an integer >= 1, got 'x'"),
        ("a slots=abc\n", "line 1 'a slots=abc': slots must be an integer >= 1, got 'abc'"),
        (
            "a slots=1\na slots=1\n",
            "line 2 'a slots=1': host 'a' is already listed on line 1; a host written with slots= must appear once",
        ),
        ("# nothing\n", "the hostfile lists no hosts"),
    ],
)
def test_parse_errors_name_the_file_and_line(tmp_path, text, message):
    source = write(tmp_path / "bad.hostfile", text)
    assert parse_error(source) == f"{source}: {message}"


def test_yaml_config_without_path(tmp_path):
    config = write(tmp_path / "c.hostfile.yml", f"plugin: {PLUGIN}\n")
    assert parse_error(config) == f"{config}: the option 'path' (the hostfile to read) is required"


def test_yaml_config_missing_hostfile(tmp_path):
    config = write(tmp_path / "c.hostfile.yml", f"plugin: {PLUGIN}\npath: nowhere.hostfile\n")
    assert parse_error(config).startswith(f"cannot read hostfile {tmp_path}/nowhere.hostfile: ")


def test_same_launcher_and_workers_group(tmp_path):
    write(tmp_path / "c.hostfile", "a\nb\n")
    config = write(
        tmp_path / "c.hostfile.yml",
        f"plugin: {PLUGIN}\npath: c.hostfile\nlauncher_group: nodes\nworkers_group: nodes\n",
    )
    assert parse_error(config) == "launcher_group and workers_group are both 'nodes'; they must differ"


@pytest.mark.parametrize(
    ("name", "accepted"),
    [
        ("cluster.hostfile", True),
        ("hostfile", True),
        ("cluster.hostfile.yml", True),
        ("cluster.hostfile.yaml", True),
        ("hostfile.txt", False),
        ("my_hostfile", False),
        ("cluster.yml", False),
        ("hosts", False),
    ],
)
def test_verify_file(tmp_path, name, accepted):
    assert InventoryModule().verify_file(str(write(tmp_path / name, "a\n"))) is accepted


def test_verify_file_missing(tmp_path):
    assert InventoryModule().verify_file(str(tmp_path / "missing.hostfile")) is False


# ------------------------------------------------------------ the command-line tools, in a subprocess


def run_cli(tool: str, *args: str, **env: str) -> str:
    environ = {
        **os.environ,
        "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"),
        "ANSIBLE_INVENTORY_ENABLED": f"{PLUGIN},yaml",
        "ANSIBLE_NOCOLOR": "1",
        **env,
    }
    result = subprocess.run(
        [str(Path(sys.executable).parent / tool), *args], env=environ, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_ansible_inventory_graph(tmp_path):
    source = write(tmp_path / "cluster.hostfile", "10.0.0.1 slots=4  # launcher\n10.0.0.2 slots=4\n10.0.0.3 slots=4\n")
    assert run_cli("ansible-inventory", "-i", str(source), "--graph") == (
        "@all:\n"
        "  |--@ungrouped:\n"
        "  |--@launcher:\n"
        "  |  |--10.0.0.1\n"
        "  |--@workers:\n"
        "  |  |--10.0.0.2\n"
        "  |  |--10.0.0.3\n"
    )


def test_ansible_playbook(tmp_path):
    source = write(tmp_path / "hostfile", "10.0.0.1:2\n10.0.0.2:2\n")
    playbook = write(
        tmp_path / "play.yml",
        "- hosts: workers\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ inventory_hostname }} {{ launcher_nproc_per_node }} {{ ansible_user }} {{ groups['launcher'] }}\"\n",
    )
    stdout = run_cli("ansible-playbook", "-i", str(source), str(playbook), MULTINODE_HOSTFILE_SSH_USER="train")
    assert '"msg": "10.0.0.2 2 train [\'10.0.0.1\']"' in stdout


def test_ranks_per_node_precedence_extra_vars_over_host_over_group_over_the_role_default(tmp_path):
    # One variable, Ansible's own precedence: what the launcher role reads for each host.
    (tmp_path / "group_vars").mkdir()
    write(tmp_path / "group_vars" / "workers.yml", "launcher_nproc_per_node: 5\n")
    hostfile = write(tmp_path / "hostfile", "10.0.0.1\n10.0.0.2 slots=2\n")
    hosts = write(
        tmp_path / "hosts.yml",
        "all:\n  children:\n    launcher: {hosts: {node1: {}}}\n    workers: {hosts: {node2: {launcher_nproc_per_node: 2}, node3: {}}}\n",
    )
    playbook = write(
        tmp_path / "play.yml",
        "- hosts: all\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - {ansible.builtin.import_role: {name: multinode.training.launcher}, when: false}  # its defaults only\n"
        "    - ansible.builtin.debug:\n"
        "        msg: \"{{ inventory_hostname }}={{ launcher_nproc_per_node }}\"\n",
    )

    def ranks(*args: str) -> dict[str, str]:
        stdout = run_cli("ansible-playbook", *args, str(playbook))
        return dict(line.split('"msg": "')[1].rstrip('"').split("=") for line in stdout.splitlines() if '"msg": "' in line)

    # The hostfile's slots are host variables: they beat the group's; a bare address is one slot.
    assert ranks("-i", str(hostfile)) == {"10.0.0.1": "1", "10.0.0.2": "2"}
    assert ranks("-i", str(hosts)) == {"node1": "auto", "node2": "2", "node3": "5"}
    assert ranks("-i", str(hosts), "-e", "launcher_nproc_per_node=4") == {"node1": "4", "node2": "4", "node3": "4"}
