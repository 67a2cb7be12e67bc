# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pip command lines that resolve and download a node's wheels for the oneapi role."""

from __future__ import annotations

import pytest

from ansible_collections.multinode.training.plugins.module_utils.wheelhouse import (
    download_argv,
    platform_tags,
    resolve_argv,
)

BOOKWORM = {"python": "3.11", "libc": "glibc", "libc_version": "2.36", "machine": "x86_64"}
WHEELHOUSE = "/home/u/.cache/multinode-training/wheels/oneapi"
PACKAGES = ["impi-rt==2021.18.1", "mkl==2026.2.0"]

BOOKWORM_PLATFORMS = [f"--platform=manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)] + [
    "--platform=manylinux2014_x86_64",
    "--platform=linux_x86_64",
]

# What the Jinja of roles/oneapi/tasks/pip.yml (oneapi_pip_resolve_argv) rendered for BOOKWORM,
# oneapi_pip_controller_python=/usr/bin/python3, WHEELHOUSE and PACKAGES, before it moved here (the same
# options; --report now follows the platforms, which pip does not mind).
JINJA_RESOLVE_ARGV = [
    "/usr/bin/python3", "-m", "pip", "install", "--quiet", "--dry-run", "--ignore-installed", "--no-index",
    "--find-links", "/home/u/.cache/multinode-training/wheels/oneapi",
    "--target", "/home/u/.cache/multinode-training/wheels/oneapi/.never-written",
    "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
    "--platform=manylinux_2_36_x86_64", "--platform=manylinux_2_35_x86_64", "--platform=manylinux_2_34_x86_64",
    "--platform=manylinux_2_33_x86_64", "--platform=manylinux_2_32_x86_64", "--platform=manylinux_2_31_x86_64",
    "--platform=manylinux_2_30_x86_64", "--platform=manylinux_2_29_x86_64", "--platform=manylinux_2_28_x86_64",
    "--platform=manylinux_2_27_x86_64", "--platform=manylinux_2_26_x86_64", "--platform=manylinux_2_25_x86_64",
    "--platform=manylinux_2_24_x86_64", "--platform=manylinux_2_23_x86_64", "--platform=manylinux_2_22_x86_64",
    "--platform=manylinux_2_21_x86_64", "--platform=manylinux_2_20_x86_64", "--platform=manylinux_2_19_x86_64",
    "--platform=manylinux_2_18_x86_64", "--platform=manylinux_2_17_x86_64",
    "--platform=manylinux2014_x86_64", "--platform=linux_x86_64",
    "--report", "-",
    "impi-rt==2021.18.1", "mkl==2026.2.0",
]  # fmt: skip


def test_platform_tags_bookworm_from_its_glibc_down_to_2_17_then_legacy_and_linux():
    tags = platform_tags("2.36", "x86_64")
    assert tags == [f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)] + [
        "manylinux2014_x86_64",
        "linux_x86_64",
    ]
    assert tags[0] == "manylinux_2_36_x86_64"
    assert tags[19] == "manylinux_2_17_x86_64"
    assert len(tags) == 22


@pytest.mark.parametrize(
    ("libc_version", "machine", "expected"),
    [
        ("2.17", "aarch64", ["manylinux_2_17_aarch64", "manylinux2014_aarch64", "linux_aarch64"]),
        ("2.18", "x86_64", ["manylinux_2_18_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64"]),
        # Older than 2.17: no versioned tag (what the role's range(minor, 16, -1) gave too).
        ("2.12", "x86_64", ["manylinux2014_x86_64", "linux_x86_64"]),
        # A patch level does not change the minor.
        (
            "2.35.1",
            "x86_64",
            [f"manylinux_2_{m}_x86_64" for m in range(35, 16, -1)] + ["manylinux2014_x86_64", "linux_x86_64"],
        ),
    ],
)
def test_platform_tags_other_glibcs_and_machines(libc_version, machine, expected):
    assert platform_tags(libc_version, machine) == expected


@pytest.mark.parametrize("libc_version", ["", "2", "glibc 2.36", "2.x", None])
def test_platform_tags_rejects_a_version_without_a_minor(libc_version):
    with pytest.raises(ValueError, match="glibc version"):
        platform_tags(libc_version, "x86_64")


def test_platform_tags_rejects_an_empty_machine():
    with pytest.raises(ValueError, match="machine"):
        platform_tags("2.36", "")


def test_resolve_argv_is_exactly_what_the_role_s_jinja_built():
    assert resolve_argv("/usr/bin/python3", BOOKWORM, WHEELHOUSE, PACKAGES) == JINJA_RESOLVE_ARGV


def test_resolve_argv_other_python_sets_version_and_abi():
    argv = resolve_argv("python3", {**BOOKWORM, "python": "3.12", "libc_version": "2.39"}, "/w", ["mkl"])
    assert argv[argv.index("--python-version") + 1] == "3.12"
    assert argv[argv.index("--abi") + 1] == "cp312"
    assert argv[argv.index("--target") + 1] == "/w/.never-written"
    assert "--platform=manylinux_2_39_x86_64" in argv
    assert argv[-1] == "mkl"


def test_download_argv_fills_the_wheelhouse_for_the_node():
    assert download_argv(BOOKWORM, WHEELHOUSE, PACKAGES) == [
        "python3", "-m", "pip", "download", "--only-binary=:all:",
        "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
        *BOOKWORM_PLATFORMS,
        "-d", WHEELHOUSE,
        *PACKAGES,
    ]  # fmt: skip


def test_download_argv_with_another_python():
    assert download_argv(BOOKWORM, "/w", ["mkl"], python="/opt/py/bin/python3")[:4] == [
        "/opt/py/bin/python3",
        "-m",
        "pip",
        "download",
    ]


@pytest.mark.parametrize(
    "build",
    [lambda node: resolve_argv("python3", node, "/w", ["mkl"]), lambda node: download_argv(node, "/w", ["mkl"])],
)
@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"python": "3.11", "libc": "glibc", "machine": "x86_64"}, "lacks libc_version"),
        ({"libc": "glibc", "libc_version": "2.36"}, "lacks python, machine"),
        ({"python": "3.11", "libc_version": "", "machine": "x86_64"}, "lacks libc_version"),
        ({}, "lacks python, machine, libc_version"),
        ('{"python": "3.11"}', "must be a mapping"),
        (None, "must be a mapping"),
        ({**BOOKWORM, "python": "3"}, "not of the form <major>.<minor>"),
        ({**BOOKWORM, "libc_version": "musl"}, "glibc version 'musl'"),
    ],
)
def test_a_probe_that_lacks_keys_is_a_value_error(build, node, message):
    with pytest.raises(ValueError, match=message):
        build(node)


@pytest.mark.parametrize(
    ("wheelhouse", "packages", "message"),
    [
        ("", ["mkl"], "wheelhouse must be a non-empty string"),
        (None, ["mkl"], "wheelhouse must be a non-empty string"),
        ("/w", [], "non-empty list"),
        ("/w", None, "must be a list"),
        ("/w", "mkl", "must be a list"),
        ("/w", ["mkl", ""], "non-empty list"),
    ],
)
def test_wheelhouse_and_packages_are_checked(wheelhouse, packages, message):
    with pytest.raises(ValueError, match=message):
        download_argv(BOOKWORM, wheelhouse, packages)
    with pytest.raises(ValueError, match=message):
        resolve_argv("python3", BOOKWORM, wheelhouse, packages)


def test_resolve_argv_rejects_an_empty_python():
    with pytest.raises(ValueError, match="python must be a non-empty string"):
        resolve_argv("", BOOKWORM, "/w", ["mkl"])
