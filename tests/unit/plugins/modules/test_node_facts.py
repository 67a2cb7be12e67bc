# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from unittest import mock

import pytest
from ansible.module_utils import basic

from ansible_collections.multinode.training.plugins.module_utils import node_state
from ansible_collections.multinode.training.plugins.modules import node_facts

IP = "/usr/sbin/ip"
ROUTE = "10.0.0.1 dev ens1f0np0 src 10.0.0.2 uid 0 \\    cache \n"
ADDRESSES = (
    "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n"
    "5: ens1f0np0    inet 10.0.0.2/24 brd 10.0.0.255 scope global ens1f0np0\\       valid_lft forever\n"
)


@pytest.fixture
def ip_route(monkeypatch):
    """Replace ``ip`` with canned results (its ``answers`` by subcommand); returns the mock to inspect its calls."""
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", mock.Mock(return_value=IP))
    answers = {"route": (0, ROUTE, ""), "addr": (0, ADDRESSES, "")}
    run_command = mock.Mock(side_effect=lambda argv: answers["route" if "route" in argv else "addr"])
    run_command.answers = answers
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    return run_command


def test_flex170_node(run_module, ip_route, node_facts_root):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("flex170")), peer="10.0.0.1")
    assert result["changed"] is False
    node = result["ansible_facts"]["multinode_node"]
    assert node["cpu"]["sockets"] == 2
    assert node["cpu"]["numa_nodes"] == 2
    assert node["cpu"]["cores_per_socket"] == 16
    assert node["cpu"]["logical_cpus_per_socket"] == 32
    assert node["cpu"]["threads_per_core"] == 2
    assert (node["cpu"]["physical_cores"], node["cpu"]["logical_cpus"]) == (32, 64)
    assert node["cpu"]["numa_node_cpus"]["0"] == list(range(0, 16)) + list(range(32, 48))
    assert node["gpus"] == [
        {"pci_address": "0000:4d:00.0", "device_id": "0x56c0", "family": "flex"},
        {"pci_address": "0000:b3:00.0", "device_id": "0x56c0", "family": "flex"},
    ]
    assert node["dri"] == {"cards": ["card0", "card1", "card2"], "render_nodes": ["renderD128", "renderD129"]}
    assert node["gids"] == {"render": 109, "video": 44}
    assert node["route"] == {
        "peer": "10.0.0.1",
        "interface": "ens1f0np0",
        "source_address": "10.0.0.2",
        "gateway": None,
        "local": False,
    }
    assert node["ipv4_addresses"] == {"lo": ["127.0.0.1"], "ens1f0np0": ["10.0.0.2"]}
    assert node["boot_id"] == "0b6a1c5e-4f2d-4b0e-9a51-6d1f0e8c7a42"
    assert ip_route.call_args_list == [mock.call([IP, "-o", "route", "get", "10.0.0.1"]), mock.call([IP, "-o", "-4", "addr", "show"])]


def test_xeon_2s_node_without_peer(run_module, ip_route, node_facts_root):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("xeon_2s")))
    node = result["ansible_facts"]["multinode_node"]
    assert node["cpu"]["model_name"] == "Intel(R) Xeon(R) Gold 6244 CPU @ 3.60GHz"
    assert (node["cpu"]["sockets"], node["cpu"]["numa_nodes"], node["cpu"]["cores_per_socket"]) == (2, 2, 8)
    assert (node["cpu"]["physical_cores"], node["cpu"]["logical_cpus"]) == (16, 32)
    assert node["gpus"] == []
    assert node["dri"] == {"cards": [], "render_nodes": []}
    assert node["gids"] == {"render": None, "video": 44}
    assert node["route"] is None
    # no boot id to read (a kernel without it, or a root that lacks it): no kernel shared with any other node
    assert node["boot_id"] == ""
    ip_route.assert_called_once_with([IP, "-o", "-4", "addr", "show"])


def test_single_socket_node(run_module, ip_route, node_facts_root):
    node = run_module(node_facts.main, sysfs_root=str(node_facts_root("single_socket")))["ansible_facts"]["multinode_node"]
    assert node["cpu"]["numa_node_cpus"] == {"0": list(range(8))}
    assert (node["cpu"]["sockets"], node["cpu"]["cores_per_socket"], node["cpu"]["threads_per_core"]) == (1, 8, 1)
    assert node["gpus"] == [{"pci_address": "0000:00:02.0", "device_id": "0x3e98", "family": "integrated"}]
    assert node["dri"] == {"cards": ["card0"], "render_nodes": ["renderD128"]}
    assert node["gids"] == {"render": 106, "video": 44}


def test_no_gpu_node_in_check_mode(run_module, ip_route, node_facts_root):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), _ansible_check_mode=True)
    assert result["changed"] is False
    node = result["ansible_facts"]["multinode_node"]
    assert (node["cpu"]["sockets"], node["cpu"]["logical_cpus"]) == (1, 4)
    assert node["gpus"] == []
    assert node["dri"] == {"cards": ["card0"], "render_nodes": []}
    assert node["gids"] == {"render": 997, "video": 39}


def test_local_peer(run_module, ip_route, node_facts_root):
    ip_route.answers["route"] = (0, "local 10.0.0.2 dev lo table local src 10.0.0.2 uid 0 \\    cache <local> \n", "")
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), peer="10.0.0.2")
    assert result["ansible_facts"]["multinode_node"]["route"] == {
        "peer": "10.0.0.2",
        "interface": "lo",
        "source_address": "10.0.0.2",
        "gateway": None,
        "local": True,
    }


def test_unreachable_peer_fails(run_module, ip_route, node_facts_root):
    ip_route.answers["route"] = (2, "", "RTNETLINK answers: Network is unreachable\n")
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), peer="192.0.2.1")
    assert result["failed"] is True
    assert result["rc"] == 2
    assert "192.0.2.1" in result["msg"]
    assert "Network is unreachable" in result["msg"]


def test_missing_cpuinfo_fails(tmp_path, run_module):
    result = run_module(node_facts.main, sysfs_root=str(tmp_path))
    assert result["failed"] is True
    assert "cpuinfo" in result["msg"]
    assert str(tmp_path) in result["msg"]


def test_watch_observes_the_record_and_the_watched_parts(run_module, ip_route, node_facts_root, tmp_path):
    ssh_dir = tmp_path / "ssh"
    ssh_dir.mkdir()
    (ssh_dir / "sshd_config").write_text("Port 12345\n")
    parts = node_state.node_parts([str(ssh_dir)], [], [], [], str(tmp_path / "no.sock"))
    record = tmp_path / "provisioned.json"
    node_state.write_record(str(record), node_state.new_record("inputs-1", parts))
    watch = {"record": str(record), "trees": [str(ssh_dir)], "containers": ["sim-worker"], "docker_socket": str(tmp_path / "no.sock")}
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), watch=watch)
    observed = result["ansible_facts"]["multinode_node"]["provisioning"]
    assert observed["path"] == str(record)
    assert observed["record"]["inputs"] == "inputs-1"
    assert observed["parts"] == {f"files {ssh_dir}": parts[f"files {ssh_dir}"], "container sim-worker": "no daemon"}


def test_without_watch_nothing_is_observed(run_module, ip_route, node_facts_root):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")))
    assert "provisioning" not in result["ansible_facts"]["multinode_node"]


def test_jobs_dir_finds_the_jobs_whose_scripts_run(run_module, ip_route, node_facts_root):
    """Processes of /proc under the root: a job's launch.sh (as the launcher container's timeout and bash run it) and a
    rank.sh; a script of another directory and a kernel thread (empty cmdline) are not jobs."""
    root = node_facts_root("no_gpu")
    jobs = "/opt/multinode/work/jobs"
    processes = {
        "101": ["timeout", "--kill-after=30", "3600", "bash", f"{jobs}/20261127-a/launch.sh"],
        "102": ["bash", f"{jobs}/20261127-a/launch.sh"],
        "201": ["bash", f"{jobs}/20261127-b/rank.sh", "python3", "train.py"],
        "301": ["bash", "/home/me/launch.sh"],
        "2": [],
    }
    for pid, arguments in processes.items():
        (root / "proc" / pid).mkdir(parents=True)
        (root / "proc" / pid / "cmdline").write_bytes(b"".join(argument.encode() + b"\0" for argument in arguments))
    # Job b's rank 0 ended, its rank 1 runs, its rank 2 is being recorded (half written).
    status = root / jobs.lstrip("/") / "20261127-b" / "status"
    status.mkdir(parents=True)
    (status / "rank-0.json").write_text('{"rank": 0, "started": 1.0, "ended": 2.0, "code": 0}')
    (status / "rank-1.json").write_text('{"rank": 1, "started": 1.0}')
    (status / "rank-2.json").write_text('{"rank": 2, "sta')
    # 29500 listens on IPv4 (0x733C), 22 on IPv6 (0x16); 41000 is an established connection.
    (root / "proc" / "net").mkdir(parents=True)
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (root / "proc" / "net" / "tcp").write_text(
        header
        + "   0: 0B4D1EAC:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n"
        + "   1: 0B4D1EAC:A028 0C4D1EAC:733C 01 00000000:00000000 00:00000000 00000000  1000        0 2 1\n"
    )
    (root / "proc" / "net" / "tcp6").write_text(
        header + "   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 0 0 0 0 0 3 1\n"
    )
    node = run_module(node_facts.main, sysfs_root=str(root), jobs_dir=jobs + "/")["ansible_facts"]["multinode_node"]
    assert node["running_jobs"] == {"20261127-a": ["launch.sh"], "20261127-b": ["rank.sh"]}
    assert node["running_ranks"] == {"20261127-a": 0, "20261127-b": 2}
    assert node["listening_ports"] == [22, 29500]


def test_workdir_exists_says_whether_provisioning_made_it(run_module, ip_route, node_facts_root):
    """The health gate stops on a node without it, saying it is not provisioned."""
    root = node_facts_root("no_gpu")
    facts = run_module(node_facts.main, sysfs_root=str(root), workdir="/opt/multinode/work")["ansible_facts"]
    assert facts["multinode_node"]["workdir_exists"] is False
    (root / "opt" / "multinode" / "work").mkdir(parents=True)
    facts = run_module(node_facts.main, sysfs_root=str(root), workdir="/opt/multinode/work")["ansible_facts"]
    assert facts["multinode_node"]["workdir_exists"] is True
    assert "workdir_exists" not in run_module(node_facts.main, sysfs_root=str(root))["ansible_facts"]["multinode_node"]


def test_without_jobs_dir_no_process_is_read(run_module, ip_route, node_facts_root):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")))
    assert "running_jobs" not in result["ansible_facts"]["multinode_node"]


def test_python_is_the_version_the_named_interpreter_reports(run_module, ip_route, node_facts_root, tmp_path):
    python = tmp_path / "python3"
    python.write_text("")
    answers = {str(python): (0, "3.13\n", "")}
    addr = ip_route.answers["addr"]
    ip_route.side_effect = lambda argv: answers.get(argv[0], addr)
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), python=str(python))
    assert result["ansible_facts"]["multinode_node"]["python"] == "3.13"
    assert ip_route.call_args_list[-1] == mock.call([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    answers[str(python)] = (1, "", "broken")
    assert run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), python=str(python))["ansible_facts"]["multinode_node"]["python"] is None


def test_python_is_none_without_the_interpreter_and_absent_unless_asked(run_module, ip_route, node_facts_root, tmp_path):
    result = run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")), python=str(tmp_path / "none"))
    assert result["ansible_facts"]["multinode_node"]["python"] is None
    assert "python" not in run_module(node_facts.main, sysfs_root=str(node_facts_root("no_gpu")))["ansible_facts"]["multinode_node"]
