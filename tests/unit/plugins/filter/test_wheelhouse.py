# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pip_wheel_argv filter (oneapi role, pip install method)."""

from __future__ import annotations

import shlex

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.multinode.training.plugins.filter.wheelhouse import FilterModule
from ansible_collections.multinode.training.plugins.module_utils.wheelhouse import download_argv, resolve_argv

pip_wheel_argv = FilterModule().filters()["pip_wheel_argv"]

NODE = {"python": "3.11", "libc": "glibc", "libc_version": "2.36", "machine": "x86_64"}
PACKAGES = ["impi-rt==2021.18.1", "oneccl==2022.1.2"]


def test_resolve_is_the_default_mode():
    assert pip_wheel_argv(NODE, wheelhouse="/w", packages=PACKAGES, python="/usr/bin/python3") == resolve_argv(
        "/usr/bin/python3", NODE, "/w", PACKAGES
    )


def test_resolve_mode():
    argv = pip_wheel_argv(NODE, mode="resolve", wheelhouse="/w", packages=PACKAGES, python="/venv/bin/python")
    assert argv[:6] == ["/venv/bin/python", "-m", "pip", "install", "--quiet", "--dry-run"]
    assert argv[-2:] == PACKAGES


def test_download_mode_defaults_to_python3():
    argv = pip_wheel_argv(NODE, mode="download", wheelhouse="/w", packages=PACKAGES)
    assert argv == download_argv(NODE, "/w", PACKAGES)
    assert argv[:4] == ["python3", "-m", "pip", "download"]
    assert argv[argv.index("-d") + 1] == "/w"


def test_positional_arguments_follow_the_documented_order():
    assert pip_wheel_argv(NODE, "download", "/w", PACKAGES, "py") == download_argv(NODE, "/w", PACKAGES, "py")


def test_download_command_quotes_to_a_shell_line_that_splits_back():
    argv = pip_wheel_argv(NODE, mode="download", wheelhouse="/my wheels", packages=["mkl>=2026"])
    line = " ".join(shlex.quote(word) for word in argv)
    assert "'/my wheels'" in line
    assert "'mkl>=2026'" in line
    assert shlex.split(line) == argv


@pytest.mark.parametrize(
    ("node", "kwargs", "message"),
    [
        ({"python": "3.11", "machine": "x86_64"}, {}, "pip_wheel_argv: the node probe lacks libc_version"),
        ("not a probe", {}, "must be a mapping"),
        (NODE, {"mode": "install"}, "mode must be one of resolve, download"),
        (NODE, {"wheelhouse": None}, "wheelhouse must be a non-empty string"),
        (NODE, {"packages": []}, "packages must be a non-empty list"),
    ],
)
def test_bad_input_is_a_filter_error(node, kwargs, message):
    arguments = {"wheelhouse": "/w", "packages": PACKAGES, **kwargs}
    with pytest.raises(AnsibleFilterError, match=message):
        pip_wheel_argv(node, **arguments)


python_wheel_problems = FilterModule().filters()["python_wheel_problems"]
WHEELS_311 = ["torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "typing_extensions-4.15.0-py3-none-any.whl"]


def test_no_problem_outside_a_host_mode_provisioning_run():
    assert python_wheel_problems({"node1": "3.13"}, None) == []


def test_no_problem_when_every_node_python_has_its_wheels():
    assert python_wheel_problems({"node1": "3.11", "node2": "3.11"}, WHEELS_311) == []


def test_the_nodes_of_another_python_are_named_once_with_the_missing_packages_and_how_to_fill_them():
    problems = python_wheel_problems({"node1": "3.11", "node3": "3.13", "node2": "3.13"}, WHEELS_311)
    assert len(problems) == 1
    assert problems[0].startswith("host_runtime_wheelhouse: node2, node3 run Python 3.13 and the wheelhouse has no wheel of torch")
    assert "its wheels are for Python 3.11" in problems[0]
    assert "--python-version 3.13 --only-binary=:all:" in problems[0]
    assert "cluster_runtime: container" in problems[0]


def test_a_node_without_the_interpreter_is_named():
    assert python_wheel_problems({"node1": None}, WHEELS_311) == [
        "host_runtime_wheelhouse: no /usr/bin/python3 on node1, which host mode builds the training environment with"
    ]
