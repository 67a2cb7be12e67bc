# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    DIALECTS,
    HostEntry,
    HostfileError,
    normalize_hosts,
    render_hostfile,
    uniform_slots,
    world_size,
)

UNIFORM = [
    {"name": "node1", "address": "10.0.0.1", "slots": 4},
    {"name": "node2", "address": "10.0.0.2", "slots": 4},
]
MIXED = [
    {"name": "node1", "address": "10.0.0.1", "slots": 4},
    {"name": "node2", "address": "10.0.0.2", "slots": 2},
]


def test_dialects():
    assert DIALECTS == ("intelmpi", "mpich", "openmpi")


def test_normalize_defaults():
    assert normalize_hosts([{"name": "node1"}, {"name": "node2", "address": "10.0.0.2", "slots": 3}]) == [
        HostEntry(name="node1", address="node1", slots=1),
        HostEntry(name="node2", address="10.0.0.2", slots=3),
    ]


def test_normalize_address_none_defaults_to_name():
    # AnsibleModule fills unset suboptions with None.
    assert normalize_hosts([{"name": "node1", "address": None, "slots": 2}]) == [HostEntry("node1", "node1", 2)]


def test_host_entry_is_frozen():
    host = HostEntry("node1", "node1", 1)
    with pytest.raises(AttributeError):
        host.slots = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        ("intelmpi", "10.0.0.1\n10.0.0.2\n"),
        ("mpich", "10.0.0.1:4\n10.0.0.2:4\n"),
        ("openmpi", "10.0.0.1 slots=4\n10.0.0.2 slots=4\n"),
    ],
)
def test_render_uniform(dialect, expected):
    assert render_hostfile(normalize_hosts(UNIFORM), dialect) == expected


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        ("mpich", "10.0.0.1:4\n10.0.0.2:2\n"),
        ("openmpi", "10.0.0.1 slots=4\n10.0.0.2 slots=2\n"),
    ],
)
def test_render_mixed_slots(dialect, expected):
    assert render_hostfile(normalize_hosts(MIXED), dialect) == expected


def test_render_single_host_defaults():
    hosts = normalize_hosts([{"name": "solo"}])
    assert render_hostfile(hosts, "intelmpi") == "solo\n"
    assert render_hostfile(hosts, "mpich") == "solo:1\n"
    assert render_hostfile(hosts, "openmpi") == "solo slots=1\n"


def test_render_intelmpi_rejects_mixed_slots():
    with pytest.raises(HostfileError) as exc:
        render_hostfile(normalize_hosts(MIXED), "intelmpi")
    message = str(exc.value)
    assert "intelmpi" in message and "-ppn" in message
    assert "node1" in message and "node2" in message


def test_render_unknown_dialect_lists_valid_ones():
    with pytest.raises(HostfileError) as exc:
        render_hostfile(normalize_hosts(UNIFORM), "slurm")
    message = str(exc.value)
    assert "slurm" in message
    for dialect in DIALECTS:
        assert dialect in message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_render_empty(dialect):
    with pytest.raises(HostfileError, match="empty"):
        render_hostfile([], dialect)


def test_world_size():
    assert world_size(normalize_hosts(MIXED)) == 6
    assert world_size(normalize_hosts([{"name": "a"}, {"name": "b"}, {"name": "c", "slots": 8}])) == 10


def test_uniform_slots():
    assert uniform_slots(normalize_hosts(UNIFORM)) == 4


def test_uniform_slots_names_hosts():
    hosts = normalize_hosts(MIXED + [{"name": "node3", "slots": 2}])
    with pytest.raises(HostfileError) as exc:
        uniform_slots(hosts)
    assert str(exc.value) == "hosts do not share one slot count (slots=2: node2, node3; slots=4: node1)"


def test_uniform_slots_empty():
    with pytest.raises(HostfileError, match="empty"):
        uniform_slots([])


def test_normalize_empty():
    with pytest.raises(HostfileError, match="empty"):
        normalize_hosts([])


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ([{"name": "node1"}, {"address": "10.0.0.2"}], "#2"),
        ([{"name": "node1"}, {"name": ""}], "#2"),
        ([{"name": "   "}], "#1"),
        ([{"name": "node1"}, "node2"], "#2"),
        ([{"name": "node1", "address": ""}], "'node1'"),
        ([{"name": "node1", "address": "10.0.0.1 slots=2"}], "'node1'"),
        ([{"name": "node1", "slots": 0}], "'node1'"),
        ([{"name": "node1", "slots": -3}], "'node1'"),
        ([{"name": "node1", "slots": "4"}], "'node1'"),
        ([{"name": "node1", "slots": 2.0}], "'node1'"),
        ([{"name": "node1", "slots": True}], "'node1'"),
        ([{"name": "node1", "slots": None}], "'node1'"),
    ],
)
def test_normalize_invalid_host(raw, named):
    with pytest.raises(HostfileError) as exc:
        normalize_hosts(raw)
    assert named in str(exc.value)


def test_normalize_duplicate_name():
    with pytest.raises(HostfileError) as exc:
        normalize_hosts([{"name": "node1", "address": "a"}, {"name": "node1", "address": "b"}])
    assert "'node1'" in str(exc.value)


def test_normalize_duplicate_address_names_both_hosts():
    with pytest.raises(HostfileError) as exc:
        normalize_hosts([{"name": "node1", "address": "10.0.0.1"}, {"name": "node2", "address": "10.0.0.1"}])
    assert str(exc.value) == "hosts 'node1' and 'node2' share the address '10.0.0.1'"


def test_normalize_address_defaulted_from_name_collides():
    with pytest.raises(HostfileError) as exc:
        normalize_hosts([{"name": "node1"}, {"name": "alias", "address": "node1"}])
    assert "'node1'" in str(exc.value) and "'alias'" in str(exc.value)


def test_hostfile_error_is_value_error():
    assert issubclass(HostfileError, ValueError)
