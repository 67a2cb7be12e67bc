# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Pythons a wheelhouse's wheels install on, read from their file names (host mode's first-play check)."""

from __future__ import annotations

import pytest

from ansible_collections.multinode.training.plugins.module_utils.wheelhouse import (
    projects_without_wheel,
    wheel_pythons,
    wheel_serves,
)

TORCH_311 = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
TORCH_313 = "torch-2.13.0+cpu-cp313-cp313-manylinux_2_28_x86_64.whl"
PURE = "typing_extensions-4.15.0-py3-none-any.whl"
STABLE_ABI = "cryptography-46.0.3-cp311-abi3-manylinux_2_34_x86_64.whl"
BUILD_TAG = "pkg-1.0-1local-cp311-cp311-linux_x86_64.whl"


@pytest.mark.parametrize(
    ("wheel", "python", "serves"),
    [
        (TORCH_311, "3.11", True),
        (TORCH_311, "3.13", False),
        (TORCH_313, "3.13", True),
        (PURE, "3.13", True),
        (PURE, "2.7", False),
        ("six-1.17.0-py2.py3-none-any.whl", "3.12", True),
        ("pkg-1.0-py311-none-any.whl", "3.11", True),
        ("pkg-1.0-py311-none-any.whl", "3.12", False),
        (STABLE_ABI, "3.13", True),
        (STABLE_ABI, "3.10", False),
        ("pkg-1.0-cp311-cp311-linux_x86_64.whl", "4.11", False),
        (BUILD_TAG, "3.11", True),
        ("not-a-wheel.tar.gz", "3.11", False),
        (TORCH_311, "3", False),
    ],
)
def test_a_wheel_serves_the_pythons_its_tags_name(wheel: str, python: str, serves: bool) -> None:
    assert wheel_serves(wheel, python) is serves


def test_a_project_is_missing_only_when_none_of_its_wheels_serves() -> None:
    wheels = [TORCH_311, TORCH_313, "numpy-2.3.5-cp311-cp311-manylinux_2_27_x86_64.whl", PURE, "README.txt"]
    assert projects_without_wheel(wheels, "3.13") == ["numpy"]
    assert projects_without_wheel(wheels, "3.11") == []
    assert projects_without_wheel(wheels, "3.12") == ["numpy", "torch"]
    assert projects_without_wheel([], "3.13") == []


def test_the_pythons_of_version_specific_wheels_are_listed_in_order() -> None:
    assert wheel_pythons([TORCH_313, TORCH_311, PURE, STABLE_ABI, "pkg-1.0-cp39-cp39-any.whl"]) == [
        "3.9",
        "3.11",
        "3.13",
    ]
    assert wheel_pythons([PURE]) == []
