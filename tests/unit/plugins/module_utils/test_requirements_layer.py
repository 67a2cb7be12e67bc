# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/requirements_layer.py: the layer's key, its plan from pip's report, pip's command
lines for the nodes, and the probe of the nodes' training environments."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from ansible_collections.multinode.training.plugins.module_utils import wheelhouse
from ansible_collections.multinode.training.plugins.module_utils.requirements_layer import (
    KEY_LENGTH,
    PROBE_SCRIPT,
    FileOptions,
    LayerError,
    LayerPlan,
    Pin,
    Replacement,
    canonical_name,
    differing_nodes,
    environment_constraints,
    hash_mismatches,
    install_argv,
    install_requirements,
    layer_key,
    merge_options,
    plan_layer,
    read_options,
    resolve_argv,
    sources_isolated,
    unresolvable,
)

NODE: dict[str, Any] = {"python": "3.11", "machine": "x86_64", "libc": "glibc", "libc_version": "2.36", "packages": {}}
PYTHON = "/usr/bin/python3"
REQUIREMENTS = "/home/u/train/requirements.txt"
CONSTRAINTS = "/tmp/layer-constraints.txt"
PINNED = "/tmp/multinode-layer-pins.txt"
SCRATCH = "/tmp/layer-scratch"
TARGET = "/home/u/.cache/multinode-training/layers/f3eae34671cc212a/site"
ENVIRONMENT = "docker:ghcr.io/example/train@sha256:abc"
REQUIREMENTS_TEXT = "numpy==2.1.0\n"

# What the training environment has (as the probe reports it: the distributions' own spelling).
ENVIRONMENT_PACKAGES = {
    "torch": "2.5.1+cpu",
    "numpy": "2.1.0",
    "Typing_Extensions": "4.12.2",
    "threadpoolctl": "3.8.0",
    "filelock": "3.16.1",
}

NO_SUCH_PACKAGE = (
    "ERROR: Could not find a version that satisfies the requirement no-such-package-xyz (from versions: none)\n"
    "ERROR: No matching distribution found for no-such-package-xyz\n"
)


ZERO = "0" * 64
ONE = "1" * 64
# pip 26's words for a downloaded file whose hash the requirements file does not allow (two --hash values).
HASH_MISMATCH = (
    "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package "
    "versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have "
    "tampered with them.\n"
    "    demo_pkg==1.0 from file:///srv/b/demo_pkg-1.0-py3-none-any.whl#sha256=4bbe9b (from -r req.txt (line 1)):\n"
    f"        Expected sha256 {ZERO}\n"
    f"        Expected     or {ONE}\n"
    "             Got        4bbe9b\n"
)


def report_item(name: str, version: str, requested: bool = False, digest: str = ZERO) -> dict[str, Any]:
    """One entry of ``install`` in pip's installation report (``pip install --dry-run --report -``)."""
    wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    return {
        "download_info": {
            "url": f"https://files.pythonhosted.org/packages/00/11/{wheel}",
            "archive_info": {"hash": "sha256=" + digest, "hashes": {"sha256": digest}},
        },
        "is_direct": False,
        "is_yanked": False,
        "requested": requested,
        "metadata": {
            "metadata_version": "2.1",
            "name": name,
            "version": version,
            "requires_dist": [],
            "requires_python": ">=3.8",
        },
    }


def pip_report(*items: dict[str, Any]) -> dict[str, Any]:
    """pip's installation report (version 1) holding ``items``."""
    return {
        "version": "1",
        "pip_version": "24.2",
        "install": list(items),
        "environment": {"implementation_name": "cpython", "python_version": "3.11", "platform_machine": "x86_64"},
    }


def option_value(argv: list[str], option: str) -> str:
    """The word after ``option`` in ``argv`` (``option`` must occur once)."""
    assert argv.count(option) == 1, argv
    return argv[argv.index(option) + 1]


def probe(packages: dict[str, str], **node: str) -> dict[str, Any]:
    """A node's probe: NODE's Python and platform (``node`` overrides them) with ``packages``."""
    return {**NODE, **node, "packages": packages}


# --- names ---


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Typing_Extensions", "typing-extensions"),
        ("typing-extensions", "typing-extensions"),
        ("typing.extensions", "typing-extensions"),
        ("Zope.Interface", "zope-interface"),
        ("a__-._b", "a-b"),
        ("torch", "torch"),
        ("PyYAML", "pyyaml"),
    ],
)
def test_canonical_name(name: str, expected: str) -> None:
    assert canonical_name(name) == expected


# --- the layer's key ---


def test_layer_key_is_16_hex_digits() -> None:
    key = layer_key(REQUIREMENTS_TEXT, ENVIRONMENT)
    assert KEY_LENGTH == 16
    assert re.fullmatch(r"[0-9a-f]{16}", key), key


def test_layer_key_is_stable() -> None:
    # The same on every controller and in every run: a changed key builds the layer again on every node.
    assert layer_key(REQUIREMENTS_TEXT, ENVIRONMENT) == layer_key(REQUIREMENTS_TEXT, ENVIRONMENT)
    assert layer_key(REQUIREMENTS_TEXT, ENVIRONMENT) == "f3eae34671cc212a"


@pytest.mark.parametrize("other", ["numpy==2.1.1\n", "numpy==2.1.0\nscipy\n", "numpy==2.1.0", ""])
def test_layer_key_changes_with_the_requirements(other: str) -> None:
    assert layer_key(other, ENVIRONMENT) != layer_key(REQUIREMENTS_TEXT, ENVIRONMENT)


@pytest.mark.parametrize("other", ["docker:ghcr.io/example/train@sha256:abd", "host:/opt/venv", "x"])
def test_layer_key_changes_with_the_environment(other: str) -> None:
    assert layer_key(REQUIREMENTS_TEXT, other) != layer_key(REQUIREMENTS_TEXT, ENVIRONMENT)


def test_layer_key_does_not_mix_up_environment_and_requirements() -> None:
    assert layer_key("b", "a") != layer_key("a", "b")
    assert layer_key("bc", "a") != layer_key("c", "ab")


def test_layer_key_refuses_an_empty_environment() -> None:
    with pytest.raises(LayerError, match="empty"):
        layer_key(REQUIREMENTS_TEXT, "")


# --- the environment's packages as constraints ---


def test_environment_constraints_pin_every_package_sorted_by_canonical_name() -> None:
    assert environment_constraints(ENVIRONMENT_PACKAGES) == [
        "filelock==3.16.1",
        "numpy==2.1.0",
        "threadpoolctl==3.8.0",
        "torch==2.5.1+cpu",
        "Typing_Extensions==4.12.2",
    ]


def test_environment_constraints_sort_by_canonical_name_not_spelling() -> None:
    # "Zope.Interface" < "a-b" by code point, but "a-b" < "zope-interface" as names.
    assert environment_constraints({"Zope.Interface": "7.0", "a_b": "1", "M": "2"}) == [
        "a_b==1",
        "M==2",
        "Zope.Interface==7.0",
    ]


def test_environment_constraints_of_nothing() -> None:
    assert environment_constraints({}) == []


# --- the plan, from pip's report ---


def test_plan_leaves_out_what_the_environment_has_at_that_version() -> None:
    report = pip_report(report_item("numpy", "2.1.0"), report_item("filelock", "3.16.1"))
    assert plan_layer(report, ENVIRONMENT_PACKAGES, {}) == LayerPlan(pins=(), replaced=())


def test_plan_compares_names_as_pip_does() -> None:
    # The environment spells it Typing_Extensions, pip's report typing-extensions: the same package.
    report = pip_report(report_item("typing-extensions", "4.12.2"))
    assert plan_layer(report, ENVIRONMENT_PACKAGES, {}) == LayerPlan(pins=(), replaced=())


def test_plan_installs_what_the_environment_lacks() -> None:
    report = pip_report(report_item("einops", "0.8.0", requested=True), report_item("numpy", "2.1.0"))
    plan = plan_layer(report, ENVIRONMENT_PACKAGES, {})
    assert plan.install == ("einops==0.8.0",)
    assert plan.replaced == ()


def test_plan_installs_and_names_a_replacement() -> None:
    report = pip_report(
        report_item("scikit-learn", "1.5.2", requested=True),
        report_item("threadpoolctl", "3.5.0"),
        report_item("numpy", "2.1.0"),
        report_item("joblib", "1.4.2"),
    )
    plan = plan_layer(report, ENVIRONMENT_PACKAGES, {})
    assert plan.install == ("scikit-learn==1.5.2", "threadpoolctl==3.5.0", "joblib==1.4.2")
    assert plan.replaced == (Replacement("threadpoolctl", "3.8.0", "3.5.0"),)
    assert [replacement.describe() for replacement in plan.replaced] == ["threadpoolctl 3.8.0 -> 3.5.0"]


def test_a_replacement_is_named_as_pip_spells_it() -> None:
    report = pip_report(report_item("typing_extensions", "4.9.0"))
    plan = plan_layer(report, ENVIRONMENT_PACKAGES, {})
    assert plan.install == ("typing_extensions==4.9.0",)
    assert [replacement.describe() for replacement in plan.replaced] == ["typing_extensions 4.12.2 -> 4.9.0"]


def test_plan_over_an_empty_environment_installs_everything() -> None:
    report = pip_report(report_item("einops", "0.8.0"), report_item("numpy", "2.1.0"))
    assert plan_layer(report, {}, {}).install == ("einops==0.8.0", "numpy==2.1.0")


@pytest.mark.parametrize("report", [{}, {"install": []}, {"install": None}, pip_report()])
def test_an_empty_report_gives_an_empty_plan(report: dict[str, Any]) -> None:
    assert plan_layer(report, ENVIRONMENT_PACKAGES, {}) == LayerPlan(pins=(), replaced=())


@pytest.mark.parametrize("missing", ["name", "version"])
def test_a_report_item_without_name_or_version_is_refused(missing: str) -> None:
    item = report_item("einops", "0.8.0")
    del item["metadata"][missing]
    with pytest.raises(LayerError, match="without a name and version") as raised:
        plan_layer(pip_report(item), ENVIRONMENT_PACKAGES, {})
    assert "einops-0.8.0-py3-none-any.whl" in str(raised.value)  # the message says which download it was


def test_a_report_item_without_metadata_is_refused() -> None:
    item = report_item("einops", "0.8.0")
    del item["metadata"]
    with pytest.raises(LayerError):
        plan_layer(pip_report(item), ENVIRONMENT_PACKAGES, {})


# --- the plan pins the files pip chose, by their hashes ---


def test_plan_pins_each_file_by_the_hash_in_pip_s_report() -> None:
    report = pip_report(report_item("einops", "0.8.0", digest=ONE), report_item("joblib", "1.4.2"))
    plan = plan_layer(report, {}, {})
    assert plan.pins == (Pin("einops", "0.8.0", (f"sha256:{ONE}",)), Pin("joblib", "1.4.2", (f"sha256:{ZERO}",)))
    assert [pin.line() for pin in plan.pins] == [
        f"einops==0.8.0 --hash=sha256:{ONE}",
        f"joblib==1.4.2 --hash=sha256:{ZERO}",
    ]


def test_plan_takes_the_hash_of_an_older_pip_s_report() -> None:
    item = report_item("einops", "0.8.0", digest=ONE)
    del item["download_info"]["archive_info"]["hashes"]
    assert plan_layer(pip_report(item), {}, {}).pins[0].hashes == (f"sha256:{ONE}",)


def test_plan_refuses_a_file_without_a_hash() -> None:
    item = report_item("einops", "0.8.0")
    item["download_info"]["archive_info"] = {}
    with pytest.raises(LayerError, match="no hash of the file of einops 0.8.0"):
        plan_layer(pip_report(item), {}, {})


def test_plan_keeps_a_hash_the_requirements_allow() -> None:
    allowed = {"einops": frozenset({f"sha256:{ZERO}", f"sha256:{ONE}"})}
    plan = plan_layer(pip_report(report_item("einops", "0.8.0", digest=ONE)), {}, allowed)
    assert plan.pins[0].hashes == (f"sha256:{ONE}",)


def test_plan_refuses_a_file_whose_hash_the_requirements_do_not_allow_naming_the_package() -> None:
    allowed = {"einops": frozenset({f"sha256:{ZERO}"})}
    with pytest.raises(LayerError) as raised:
        plan_layer(pip_report(report_item("einops", "0.8.0", digest=ONE)), {}, allowed)
    message = str(raised.value)
    assert message.startswith("the hash of einops 0.8.0 did not match")
    assert f"einops-0.8.0-py3-none-any.whl has sha256:{ONE}" in message
    assert f"allow sha256:{ZERO}" in message


def test_plan_compares_hashes_under_the_canonical_name() -> None:
    allowed = {"typing-extensions": frozenset({f"sha256:{ZERO}"})}
    with pytest.raises(LayerError, match="Typing_Extensions 4.9.0 did not match"):
        plan_layer(pip_report(report_item("Typing_Extensions", "4.9.0", digest=ONE)), {}, allowed)


def test_plan_pins_a_direct_requirement_by_its_url() -> None:
    item = report_item("einops", "0.8.0", digest=ONE)
    item["is_direct"] = True
    item["download_info"]["url"] = "file:///srv/wheels/einops-0.8.0-py3-none-any.whl"
    pin = plan_layer(pip_report(item), {}, {}).pins[0]
    assert pin.line() == f"einops @ file:///srv/wheels/einops-0.8.0-py3-none-any.whl --hash=sha256:{ONE}"
    assert pin.requirement() == "einops==0.8.0"


# --- a requirements file's options and hashes ---


def test_read_options_keeps_the_option_lines_in_order() -> None:
    text = (
        "# train's packages\n"
        "--index-url https://pypi.example.com/simple\n"
        "--extra-index-url=https://download.pytorch.org/whl/cpu\n"
        "-f ./wheels  # local ones\n"
        "--trusted-host pypi.example.com\n"
        "--pre\n"
        "einops==0.8.0\n"
    )
    options = read_options(text)
    assert options.options == (
        ("--index-url", "https://pypi.example.com/simple"),
        ("--extra-index-url", "https://download.pytorch.org/whl/cpu"),
        ("-f", "./wheels"),
        ("--trusted-host", "pypi.example.com"),
        ("--pre", None),
    )
    assert options.lines() == [
        "--index-url https://pypi.example.com/simple",
        "--extra-index-url https://download.pytorch.org/whl/cpu",
        "-f ./wheels",
        "--trusted-host pypi.example.com",
        "--pre",
    ]
    assert options.hashes == {}


def test_read_options_takes_short_options_with_their_value_attached() -> None:
    assert read_options("-ihttps://i.example/simple\n-fwheels\n").options == (
        ("-i", "https://i.example/simple"),
        ("-f", "wheels"),
    )


def test_read_options_keeps_included_files_where_they_are_and_leaves_out_editables() -> None:
    options = read_options("-r base.txt\n--pre\n--constraint=pins.txt\n-c more.txt\n-e ./mypkg\neinops\n")
    assert options.options == (("-r", "base.txt"), ("--pre", None), ("--constraint", "pins.txt"), ("-c", "more.txt"))


def test_read_options_collects_hashes_by_canonical_name_across_continued_lines() -> None:
    text = (
        "Demo_Pkg==1.0 \\\n"
        f"    --hash=sha256:{ZERO} \\\n"
        f"    --hash sha256:{ONE}\n"
        f"einops==0.8.0 ; python_version >= '3.8' --hash=sha256:{ONE}  # pinned\n"
        "numpy==2.1.0\n"
    )
    options = read_options(text)
    assert options.hashes == {
        "demo-pkg": frozenset({f"sha256:{ZERO}", f"sha256:{ONE}"}),
        "einops": frozenset({f"sha256:{ONE}"}),
    }
    assert options.hashed == ("Demo_Pkg==1.0", "einops==0.8.0 ; python_version >= '3.8'")
    assert options.options == ()


def test_read_options_of_a_file_without_options() -> None:
    assert read_options("numpy==2.1.0\n\n# nothing else\n") == FileOptions()


@pytest.mark.parametrize(
    ("text", "replaces"),
    [
        ("--index-url https://i.example/simple\n", True),
        ("-i https://i.example/simple\n", True),
        ("--no-index\n--find-links wheels\n", True),
        ("--extra-index-url https://i.example/simple\n", False),
        ("--find-links wheels\n", False),
        ("numpy\n", False),
    ],
)
def test_only_an_own_index_replaces_the_controller_s(text: str, replaces: bool) -> None:
    assert read_options(text).replaces_index() is replaces


def test_option_values_are_quoted_in_lines() -> None:
    assert FileOptions(options=(("--find-links", "/srv/my wheels"),)).lines() == ["--find-links '/srv/my wheels'"]


def test_merge_options_keeps_each_file_s_options_in_order_and_joins_hashes() -> None:
    top = read_options(f"--index-url https://i.example/simple\neinops --hash=sha256:{ZERO}\n")
    base = read_options(f"--trusted-host i.example\nEinops --hash=sha256:{ONE}\nnumpy --hash=sha256:{ONE}\n")
    merged = merge_options([top, base])
    assert merged.options == (("--index-url", "https://i.example/simple"), ("--trusted-host", "i.example"))
    assert merged.hashes == {
        "einops": frozenset({f"sha256:{ZERO}", f"sha256:{ONE}"}),
        "numpy": frozenset({f"sha256:{ONE}"}),
    }
    assert merged.hashed == ("einops", "Einops", "numpy")
    assert merged.replaces_index()


# --- the install's requirements file ---


def test_install_requirements_are_the_options_then_the_pins_by_their_hashes() -> None:
    options = read_options("--index-url https://i.example/simple\n--trusted-host i.example\neinops\n")
    pins = [Pin("einops", "0.8.0", (f"sha256:{ONE}",)), Pin("joblib", "1.4.2", (f"sha256:{ZERO}",))]
    assert install_requirements(options, pins) == (
        "--index-url https://i.example/simple\n"
        "--trusted-host i.example\n"
        f"einops==0.8.0 --hash=sha256:{ONE}\n"
        f"joblib==1.4.2 --hash=sha256:{ZERO}\n"
    )


@pytest.mark.parametrize("pins", [[], ()])
def test_install_requirements_refuse_nothing_to_install(pins: Sequence[Pin]) -> None:
    with pytest.raises(LayerError, match="nothing to install"):
        install_requirements(FileOptions(), pins)


# --- pip's environment for a file that names its own index ---

PIP_CONFIG = (
    ":env:.find-links='/srv/a'\n"
    "global.cert='/etc/ssl/certs/ca-certificates.crt'\n"
    "global.constraint='/etc/pip/constraints.txt'\n"
    "global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'\n"
    "global.find-links='/opt/wheels'\n"
    "global.index-url='https://mirror.example/simple'\n"
    "global.timeout='60'\n"
    "install.no-index='true'\n"
    "install.timeout='30'\n"
    "download.proxy='http://download-only.example:3128'\n"
)


def test_sources_isolated_drops_every_package_source_of_the_controller() -> None:
    environ = {
        "HOME": "/home/u",
        "PIP_FIND_LINKS": "/srv/a",
        "PIP_INDEX_URL": "file:///srv/a/simple",
        "PIP_EXTRA_INDEX_URL": "https://extra.example/simple",
        "PIP_NO_INDEX": "1",
        "PIP_CONFIG_FILE": "/home/u/pip.conf",
        "PIP_DEFAULT_TIMEOUT": "180",
    }
    isolated = sources_isolated(environ, PIP_CONFIG)
    assert isolated == {
        "HOME": "/home/u",
        "PIP_CERT": "/etc/ssl/certs/ca-certificates.crt",
        "PIP_CONSTRAINT": "/etc/pip/constraints.txt",
        "PIP_TIMEOUT": "30",
        "PIP_DEFAULT_TIMEOUT": "180",
        "PIP_CONFIG_FILE": os.devnull,
    }


def test_sources_isolated_lets_the_controller_s_variables_win_over_its_files() -> None:
    isolated = sources_isolated({"PIP_CERT": "/home/u/ca.pem"}, PIP_CONFIG)
    assert isolated["PIP_CERT"] == "/home/u/ca.pem"


def test_sources_isolated_without_any_pip_configuration() -> None:
    assert sources_isolated({"PATH": "/usr/bin"}, "") == {"PATH": "/usr/bin", "PIP_CONFIG_FILE": os.devnull}


# --- pip's errors ---


def test_hash_mismatches_name_the_requirement_the_file_and_its_hash() -> None:
    assert hash_mismatches(HASH_MISMATCH) == [
        "demo_pkg==1.0: file:///srv/b/demo_pkg-1.0-py3-none-any.whl has sha256:4bbe9b"
    ]


def test_hash_mismatches_name_each_package() -> None:
    second = (
        "    einops==0.8.0 from https://files.example/einops-0.8.0-py3-none-any.whl (from -r req.txt (line 2)):\n"
        f"        Expected sha256 {ZERO}\n"
        "             Got        c0ffee\n"
    )
    assert [line.split(":")[0] for line in hash_mismatches(HASH_MISMATCH + second)] == [
        "demo_pkg==1.0",
        "einops==0.8.0",
    ]


@pytest.mark.parametrize("output", ["", NO_SUCH_PACKAGE])
def test_hash_mismatches_find_nothing_in_other_errors(output: str) -> None:
    assert hash_mismatches(output) == []


def test_unresolvable_names_a_missing_package_once() -> None:
    assert unresolvable(NO_SUCH_PACKAGE) == ["no-such-package-xyz"]


def test_unresolvable_keeps_the_version_pip_could_not_find() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement torch==9.9.9 "
        "(from versions: 2.4.0, 2.4.1, 2.5.0, 2.5.1)\n"
        "ERROR: No matching distribution found for torch==9.9.9\n"
    )
    assert unresolvable(output) == ["torch==9.9.9"]


def test_unresolvable_names_each_missing_package() -> None:
    output = NO_SUCH_PACKAGE + "ERROR: No matching distribution found for other-missing\n"
    assert unresolvable(output) == ["no-such-package-xyz", "other-missing"]


@pytest.mark.parametrize(
    "output",
    [
        "",
        "ERROR: Cannot install einops==0.8.0 because these package versions have conflicting dependencies.\n",
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device\n",
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'NewConnectionError': /simple/einops/\n",
    ],
)
def test_unresolvable_finds_nothing_in_other_errors(output: str) -> None:
    assert unresolvable(output) == []


# --- pip's command lines ---


def test_resolve_argv_reports_without_installing() -> None:
    argv = resolve_argv(PYTHON, NODE, REQUIREMENTS, SCRATCH, CONSTRAINTS)
    assert argv[:4] == [PYTHON, "-m", "pip", "install"]
    assert "--dry-run" in argv
    assert "--ignore-installed" in argv
    assert option_value(argv, "--report") == "-"
    assert option_value(argv, "--target") == SCRATCH
    assert option_value(argv, "--requirement") == REQUIREMENTS
    assert option_value(argv, "--constraint") == CONSTRAINTS


def test_resolve_argv_without_constraints_has_no_constraint_option() -> None:
    argv = resolve_argv(PYTHON, NODE, REQUIREMENTS, SCRATCH)
    assert "--constraint" not in argv
    assert option_value(argv, "--requirement") == REQUIREMENTS
    assert argv == resolve_argv(PYTHON, NODE, REQUIREMENTS, SCRATCH, "")


def test_resolve_argv_picks_wheels_for_the_node() -> None:
    argv = resolve_argv(PYTHON, NODE, REQUIREMENTS, SCRATCH, CONSTRAINTS)
    assert "--only-binary=:all:" in argv
    assert option_value(argv, "--python-version") == "3.11"
    assert option_value(argv, "--implementation") == "cp"
    assert option_value(argv, "--abi") == "cp311"
    platforms = [word for word in argv if word.startswith("--platform=")]
    assert platforms[0] == "--platform=manylinux_2_36_x86_64"
    assert "--platform=manylinux_2_17_x86_64" in platforms
    assert platforms[-2:] == ["--platform=manylinux2014_x86_64", "--platform=linux_x86_64"]


def test_resolve_argv_follows_another_node() -> None:
    node = {**NODE, "python": "3.12", "machine": "aarch64", "libc_version": "2.17"}
    argv = resolve_argv(PYTHON, node, REQUIREMENTS, SCRATCH)
    assert option_value(argv, "--python-version") == "3.12"
    assert option_value(argv, "--abi") == "cp312"
    assert [word for word in argv if word.startswith("--platform=")] == [
        "--platform=manylinux_2_17_aarch64",
        "--platform=manylinux2014_aarch64",
        "--platform=linux_aarch64",
    ]


def test_resolve_argv_refuses_an_incomplete_probe() -> None:
    node = {key: value for key, value in NODE.items() if key != "libc_version"}
    with pytest.raises(ValueError, match="libc_version"):
        resolve_argv(PYTHON, node, REQUIREMENTS, SCRATCH)


def test_install_argv_installs_exactly_the_pinned_files() -> None:
    argv = install_argv(PYTHON, NODE, TARGET, PINNED)
    assert argv[:4] == [PYTHON, "-m", "pip", "install"]
    assert "--no-deps" in argv
    assert "--require-hashes" in argv
    assert "--ignore-installed" in argv
    assert "--dry-run" not in argv
    assert "--report" not in argv
    assert option_value(argv, "--target") == TARGET
    assert option_value(argv, "--requirement") == PINNED


def test_install_argv_picks_wheels_for_the_node() -> None:
    argv = install_argv(PYTHON, NODE, TARGET, PINNED)
    assert "--only-binary=:all:" in argv
    assert option_value(argv, "--python-version") == "3.11"
    assert "--platform=manylinux_2_36_x86_64" in argv
    node_args = wheelhouse.node_target_args(NODE)
    start = argv.index(node_args[0])
    assert argv[start : start + len(node_args)] == node_args


# --- nodes that differ ---


def test_identical_nodes_do_not_differ() -> None:
    packages = {"torch": "2.5.1", "numpy": "2.1.0"}
    probes = {"node1": probe(packages), "node2": probe(dict(packages)), "node3": probe(dict(packages))}
    assert not differing_nodes(probes)


def test_no_nodes_do_not_differ() -> None:
    assert not differing_nodes({})
    assert not differing_nodes({"node1": probe({"torch": "2.5.1"})})


def test_the_same_package_spelled_otherwise_does_not_differ() -> None:
    probes = {"node1": probe({"Typing_Extensions": "4.12.2"}), "node2": probe({"typing-extensions": "4.12.2"})}
    assert not differing_nodes(probes)


def test_a_node_with_another_torch_is_named_with_both_versions() -> None:
    probes = {
        "node1": probe({"torch": "2.5.1", "numpy": "2.1.0"}),
        "node2": probe({"torch": "2.4.0", "numpy": "2.1.0"}),
        "node3": probe({"torch": "2.5.1", "numpy": "2.1.0"}),
    }
    lines = differing_nodes(probes)
    assert len(lines) == 1, lines
    assert "node2" in lines[0] and "node1" in lines[0] and "node3" not in lines[0]
    assert "torch" in lines[0] and "2.4.0" in lines[0] and "2.5.1" in lines[0]
    assert "numpy" not in lines[0]
    assert lines == ["node2 has torch 2.4.0 where node1 has torch 2.5.1"]


def test_a_node_with_another_python_is_named() -> None:
    packages = {"torch": "2.5.1"}
    lines = differing_nodes({"node1": probe(packages), "node2": probe(packages, python="3.12")})
    assert len(lines) == 1, lines
    assert "node2" in lines[0] and "python" in lines[0]
    assert lines == ["node2 has python 3.12 where node1 has python 3.11"]


def test_a_node_without_a_package_says_none() -> None:
    lines = differing_nodes({"node1": probe({"torch": "2.5.1", "einops": "0.8.0"}), "node2": probe({"torch": "2.5.1"})})
    assert lines == ["node2 has einops (none) where node1 has einops 0.8.0"]


def test_every_difference_of_a_node_is_on_its_line() -> None:
    first = probe({"torch": "2.5.1"})
    other = probe({"torch": "2.4.0"}, machine="aarch64", libc_version="2.35")
    lines = differing_nodes({"node1": first, "node2": other})
    assert lines == [
        "node2 has machine aarch64, libc_version 2.35, torch 2.4.0 where node1 has machine x86_64, "
        "libc_version 2.36, torch 2.5.1"
    ]


# --- the probe, run for real ---


def test_the_probe_script_reports_this_interpreter() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE_SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert set(found) == {"python", "machine", "libc", "libc_version", "packages"}
    assert found["python"] == "%d.%d" % sys.version_info[:2]
    assert isinstance(found["machine"], str) and found["machine"]
    assert isinstance(found["libc"], str) and isinstance(found["libc_version"], str)
    packages = found["packages"]
    assert isinstance(packages, dict) and packages
    assert all(isinstance(name, str) and isinstance(version, str) for name, version in packages.items())
    assert "pytest" in {canonical_name(name) for name in packages}


def test_the_probe_of_this_interpreter_gives_pip_s_command_lines() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE_SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    node = json.loads(result.stdout)
    if node["libc"] != "glibc":
        pytest.skip(f"this machine's libc is {node['libc']!r}, not glibc")
    argv = resolve_argv(sys.executable, node, REQUIREMENTS, SCRATCH)
    assert option_value(argv, "--python-version") == node["python"]
    assert f"--platform=linux_{node['machine']}" in argv
    assert environment_constraints(node["packages"])
