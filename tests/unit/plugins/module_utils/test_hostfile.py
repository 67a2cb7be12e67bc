# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

import pytest

from ansible_collections.multinode.training.plugins.module_utils.hostfile import (
    DIALECTS,
    HostEntry,
    HostfileError,
    detect_dialect,
    horovod_hosts_arg,
    launcher_first,
    normalize_hosts,
    parse_hostfile,
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
    assert DIALECTS == ("intelmpi", "mpich", "openmpi", "deepspeed", "horovod", "ipexrun")


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
        ("deepspeed", "10.0.0.1 slots=4\n10.0.0.2 slots=2\n"),
        ("horovod", "10.0.0.1 slots=4\n10.0.0.2 slots=2\n"),
    ],
)
def test_render_mixed_slots(dialect, expected):
    assert render_hostfile(normalize_hosts(MIXED), dialect) == expected


def test_render_single_host_defaults():
    hosts = normalize_hosts([{"name": "solo"}])
    assert render_hostfile(hosts, "intelmpi") == "solo\n"
    assert render_hostfile(hosts, "mpich") == "solo:1\n"
    assert render_hostfile(hosts, "openmpi") == "solo slots=1\n"


@pytest.mark.parametrize(("dialect", "flag"), [("intelmpi", "-ppn"), ("ipexrun", "--nprocs-per-node")])
def test_render_rejects_mixed_slots_where_one_count_serves_all(dialect, flag):
    with pytest.raises(HostfileError) as exc:
        render_hostfile(normalize_hosts(MIXED), dialect)
    message = str(exc.value)
    assert dialect in message and flag in message
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


# ------------------------------------------------------------ launcher dialects

SLOT_DIALECTS = ("mpich", "openmpi", "deepspeed", "horovod")  # write every host's slot count
ADDRESS_DIALECTS = ("intelmpi", "ipexrun")  # one address per line, one slot count for all


def hosts_named_by_address(slots):
    """Hosts as parse_hostfile returns them: the name is the address."""
    return [HostEntry(f"10.0.0.{index}", f"10.0.0.{index}", count) for index, count in enumerate(slots, start=1)]


def test_render_ipexrun_writes_addresses_in_order():
    assert render_hostfile(normalize_hosts(UNIFORM), "ipexrun") == "10.0.0.1\n10.0.0.2\n"
    assert render_hostfile(normalize_hosts(UNIFORM[::-1]), "ipexrun") == "10.0.0.2\n10.0.0.1\n"


@pytest.mark.parametrize("dialect", ("deepspeed", "horovod", "ipexrun"))
def test_render_new_dialects_empty(dialect):
    with pytest.raises(HostfileError, match="empty"):
        render_hostfile([], dialect)


def test_horovod_hosts_arg():
    assert horovod_hosts_arg(normalize_hosts(MIXED)) == "10.0.0.1:4,10.0.0.2:2"
    assert horovod_hosts_arg(normalize_hosts([{"name": "solo"}])) == "solo:1"


def test_horovod_hosts_arg_empty():
    with pytest.raises(HostfileError, match="empty"):
        horovod_hosts_arg([])


def test_launcher_first_moves_the_launcher_and_keeps_the_rest_in_order():
    hosts = normalize_hosts([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])
    assert [host.name for host in launcher_first(hosts, "c")] == ["c", "a", "b", "d"]
    assert launcher_first(hosts, "a") == hosts
    assert [host.name for host in hosts] == ["a", "b", "c", "d"]  # the input is not modified


def test_launcher_first_feeds_ipexrun():
    hosts = normalize_hosts(UNIFORM)
    assert render_hostfile(launcher_first(hosts, "node2"), "ipexrun") == "10.0.0.2\n10.0.0.1\n"


def test_launcher_first_names_a_missing_launcher():
    with pytest.raises(HostfileError) as exc:
        launcher_first(normalize_hosts(UNIFORM), "node9")
    assert str(exc.value) == "launcher 'node9' is not in the host list"


# ------------------------------------------------------------ parse_hostfile


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.0.0.1\n10.0.0.2\n", [("10.0.0.1", 1), ("10.0.0.2", 1)]),  # intelmpi / ipexrun
        ("10.0.0.1:4\n10.0.0.2:2\n", [("10.0.0.1", 4), ("10.0.0.2", 2)]),  # mpich
        ("10.0.0.1 slots=4\n10.0.0.2 slots=2\n", [("10.0.0.1", 4), ("10.0.0.2", 2)]),  # openmpi / deepspeed / horovod
        ("node-a.example.com slots=8", [("node-a.example.com", 8)]),  # no final newline
        ("a slots = 2\nb slots= 3\nc slots =4\nd\tslots=5\n", [("a", 2), ("b", 3), ("c", 4), ("d", 5)]),
        ("a slots=2 max_slots=8\nb max-slots=4 slots=3\nc max_slots=2\n", [("a", 2), ("b", 3), ("c", 1)]),
        ("a:08\n", [("a", 8)]),
        ("fe80::1\nfe80::2\n", [("fe80::1", 1), ("fe80::2", 1)]),  # IPv6 addresses are not host:N
        ("a\r\nb\r\n", [("a", 1), ("b", 1)]),
    ],
)
def test_parse_dialects(text, expected):
    assert parse_hostfile(text) == [HostEntry(address, address, slots) for address, slots in expected]


def test_parse_comments_and_blank_lines():
    text = (
        "# cluster of three\n"
        "\n"
        "   \n"
        "10.0.0.1 slots=4   # the launcher\n"
        "\t# indented comment\n"
        "10.0.0.2 slots=4#no space before the comment\n"
        "10.0.0.3:2 # mpich style on the same file\n"
        "10.0.0.4\n"
        "#10.0.0.5 slots=4\n"
    )
    assert parse_hostfile(text) == [
        HostEntry("10.0.0.1", "10.0.0.1", 4),
        HostEntry("10.0.0.2", "10.0.0.2", 4),
        HostEntry("10.0.0.3", "10.0.0.3", 2),
        HostEntry("10.0.0.4", "10.0.0.4", 1),
    ]


def test_parse_merges_repeated_lines_in_first_appearance_order():
    text = "b\na\nb\nc:2\nb\na:3\n# b\nc\n"
    assert parse_hostfile(text) == [HostEntry("b", "b", 3), HostEntry("a", "a", 4), HostEntry("c", "c", 3)]


@pytest.mark.parametrize(
    "text",
    [
        "a slots=2\nb slots=2\na slots=2\n",
        "a\nb slots=2\na slots=2\n",  # the repeat uses slots=
        "a slots=2\nb slots=2\na\n",  # the first line used slots=
        "a slots=2\nb slots=2\na:2\n",
    ],
)
def test_parse_rejects_repeated_slots_lines(text):
    with pytest.raises(HostfileError) as exc:
        parse_hostfile(text)
    message = str(exc.value)
    assert message.startswith("line 3 ")
    assert "host 'a' is already listed on line 1" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\nhost:0\n", "line 2 'host:0': the slot count after ':' must be an integer >= 1, got '0'"),
        (
            "a\n\nhost:x  # comment\n",
            "line 3 'host:x  # comment': the slot count after ':' must be an integer >= 1, got 'x'",
        ),
        ("host:\n", "line 1 'host:': the slot count after ':' must be an integer >= 1, got ''"),
        ("host:-1\n", "line 1 'host:-1': the slot count after ':' must be an integer >= 1, got '-1'"),
        (":4\n", "line 1 ':4': the line must start with an address"),
        ("host slots=abc\n", "line 1 'host slots=abc': slots must be an integer >= 1, got 'abc'"),
        ("host slots=0\n", "line 1 'host slots=0': slots must be an integer >= 1, got '0'"),
        ("host slots=\n", "line 1 'host slots=': slots must be an integer >= 1, got ''"),
        ("host slots=2.5\n", "line 1 'host slots=2.5': slots must be an integer >= 1, got '2.5'"),
        ("host slots=2 slots=3\n", "line 1 'host slots=2 slots=3': slots= is given more than once"),
        ("host cpus=2\n", "line 1 'host cpus=2': unknown option 'cpus'; expected slots= or max_slots="),
        ("host other\n", "line 1 'host other': expected key=value after the address, got 'other'"),
        ("host:2 slots=2\n", "line 1 'host:2 slots=2': host:N cannot be combined with key=value options"),
        ("slots=4\n", "line 1 'slots=4': the line must start with an address"),
    ],
)
def test_parse_errors_name_the_line(text, expected):
    with pytest.raises(HostfileError) as exc:
        parse_hostfile(text)
    assert str(exc.value) == expected


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n  # another\n"])
def test_parse_no_hosts(text):
    with pytest.raises(HostfileError, match="no hosts"):
        parse_hostfile(text)


@pytest.mark.parametrize("dialect", SLOT_DIALECTS)
def test_round_trip_keeps_slots(dialect):
    hosts = hosts_named_by_address([4, 1, 2, 8])
    assert parse_hostfile(render_hostfile(hosts, dialect)) == hosts


@pytest.mark.parametrize("dialect", ADDRESS_DIALECTS)
def test_round_trip_one_slot(dialect):
    hosts = hosts_named_by_address([1, 1, 1])
    assert parse_hostfile(render_hostfile(hosts, dialect)) == hosts


@pytest.mark.parametrize("dialect", ADDRESS_DIALECTS)
def test_round_trip_uniform_slots_read_back_as_one(dialect):
    text = render_hostfile(hosts_named_by_address([4, 4]), dialect)
    assert parse_hostfile(text) == hosts_named_by_address([1, 1])


@pytest.mark.parametrize(
    ("dialect", "detected"),
    [
        ("intelmpi", "intelmpi"),
        ("ipexrun", "intelmpi"),
        ("mpich", "mpich"),
        ("openmpi", "openmpi"),
        ("deepspeed", "openmpi"),
        ("horovod", "openmpi"),
    ],
)
def test_detect_rendered_dialect(dialect, detected):
    assert detect_dialect(render_hostfile(normalize_hosts(UNIFORM), dialect)) == detected


@pytest.mark.parametrize(
    ("text", "detected"),
    [
        ("", "intelmpi"),
        ("# a:4\n# b slots=2\na\n", "intelmpi"),  # comments do not count
        ("fe80::1\nfe80::2\n", "intelmpi"),
        ("a\nb:2\n", "mpich"),
        ("a:2\nb slots = 2\n", "openmpi"),
        ("a max_slots=4\n", "openmpi"),
    ],
)
def test_detect_dialect(text, detected):
    assert detect_dialect(text) == detected
