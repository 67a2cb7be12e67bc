# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/slurm.py: node lines from node facts, slurm.conf, sacct's output read back."""

from __future__ import annotations

from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils.slurm import (
    SlurmError,
    SlurmNode,
    job_record,
    node_name,
    parse_sacct,
    render_conf,
    slurm_node,
)

CPU = {"sockets": 2, "cores_per_socket": 8, "threads_per_core": 2, "physical_cores": 16}


def facts(**changes: Any) -> dict[str, Any]:
    return {"cpu": CPU, "memory_mib": 257000, **changes}


def nodes(count: int = 3) -> list[SlurmNode]:
    return [slurm_node(f"node{i}", f"host{i}.example.org", f"10.0.0.{i}", facts()) for i in range(1, count + 1)]


def conf_lines(text: str) -> dict[str, str]:
    """The ``Key=value`` lines of slurm.conf whose key appears once (not the node lines)."""
    pairs = [line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#")]
    keys = [key for key, _ in pairs]
    return {key: value for key, value in pairs if keys.count(key) == 1}


def test_node_line_from_facts() -> None:
    node = slurm_node("node1", "host1.example.org", "10.0.0.1", facts())
    assert node.cpus == 32
    assert node.line() == (
        "NodeName=node1 NodeHostname=host1 NodeAddr=10.0.0.1 CPUs=32 Sockets=2 CoresPerSocket=8"
        " ThreadsPerCore=2 RealMemory=257000 State=UNKNOWN"
    )


@pytest.mark.parametrize("name", ["node1", "a", "gpu-node_7", "N" * 63])
def test_plain_host_names_are_node_names(name: str) -> None:
    assert node_name(name) == name


@pytest.mark.parametrize("name", ["10.0.0.5", "node1.example.org", "1node", "-a", "", "n" * 64, "a b"])
def test_other_inventory_names_are_refused_naming_the_host(name: str) -> None:
    with pytest.raises(SlurmError, match=f"host {name}: Slurm needs node names"):
        node_name(name)


def test_a_node_without_host_name_is_refused() -> None:
    with pytest.raises(SlurmError, match="host node1: no host name"):
        slurm_node("node1", "", "10.0.0.1", facts())


def test_conf_controller_is_the_first_node_and_its_line_comes_first() -> None:
    text = render_conf("Multinode", nodes(), "train", (6817, 6818))
    settings = conf_lines(text)
    assert settings["ClusterName"] == "multinode"
    assert settings["SlurmctldHost"] == "host1(10.0.0.1)"
    assert (settings["SlurmctldPort"], settings["SlurmdPort"]) == ("6817", "6818")
    node_lines = [line for line in text.splitlines() if line.startswith("NodeName=")]
    assert [line.split()[0] for line in node_lines] == ["NodeName=node1", "NodeName=node2", "NodeName=node3"]
    assert "PartitionName=train Nodes=ALL Default=YES MaxTime=INFINITE State=UP" in text.splitlines()


def test_conf_runs_without_slurmdbd_or_cgroups() -> None:
    settings = conf_lines(render_conf("c", nodes(1), "p", (6817, 6818)))
    assert settings["AccountingStorageType"] == "accounting_storage/none"
    assert settings["JobCompType"] == "jobcomp/filetxt"
    assert settings["JobCompLoc"] == "/var/log/slurm/jobcomp.log"
    assert settings["ProctrackType"] == "proctrack/linuxproc"
    assert settings["SlurmdPidFile"] == "/run/slurm/slurmd.pid"
    assert settings["KillOnBadExit"] == "1"


@pytest.mark.parametrize(
    ("field", "what"),
    [("name", "node name"), ("hostname", "host name"), ("address", "address")],
)
def test_conf_refuses_two_nodes_alike(field: str, what: str) -> None:
    first, second = nodes(2)
    same = SlurmNode(**{**second.__dict__, field: getattr(first, field)})
    with pytest.raises(SlurmError, match=f"several nodes have the same {what}"):
        render_conf("c", [first, same], "p", (6817, 6818))


def test_conf_needs_a_node() -> None:
    with pytest.raises(SlurmError, match="no nodes"):
        render_conf("c", [], "p", (6817, 6818))


SACCT = """\
12|job-a|FAILED|3:0|node[1-3]|2026-11-25T11:19:38|2026-11-25T11:19:39|00:00:01
13|job-b|COMPLETED|0:0|node1|2026-11-25T11:20:37|2026-11-25T11:20:40|00:00:03

"""


def test_parse_sacct_names_each_field() -> None:
    records = parse_sacct(SACCT)
    assert len(records) == 2
    assert records[0] == {
        "JobID": "12", "JobName": "job-a", "State": "FAILED", "ExitCode": "3:0", "NodeList": "node[1-3]",
        "Start": "2026-11-25T11:19:38", "End": "2026-11-25T11:19:39", "Elapsed": "00:00:01",
    }


def test_parse_sacct_pads_short_lines() -> None:
    assert parse_sacct("14|x", ("JobID", "JobName", "State")) == [{"JobID": "14", "JobName": "x", "State": ""}]


def test_job_record_finds_the_job_not_its_steps() -> None:
    records = parse_sacct("13.batch|batch|COMPLETED|0:0\n13|j|COMPLETED|0:0\n", ("JobID", "JobName", "State", "ExitCode"))
    assert job_record(records, "13")["JobName"] == "j"
    assert job_record(records, "99") == {}
