# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job id formula (job_id.py), shared by the launcher role (filter multinode.training.job_id) and the Python
API (which loads it from the collection it runs, with the launcher role's default launcher)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from multinode_training import api

from ansible_collections.multinode.training.plugins.filter.cluster import FilterModule
from ansible_collections.multinode.training.plugins.module_utils.job_id import job_id

REPO = Path(__file__).resolve().parents[4]
NOW = datetime.datetime(2026, 11, 27, 14, 11, 48, tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize(
    ("given", "name", "launcher", "expected"),
    [
        ("my-job", "mnist", "mpiexec", "my-job"),
        ("", "mnist", "mpiexec", "20261127-141148-mnist"),
        ("", "", "mpiexec", "20261127-141148-mpiexec"),
    ],
)
def test_the_given_id_else_the_time_and_the_name_or_the_launcher(given: str, name: str, launcher: str, expected: str) -> None:
    assert job_id(given, name, launcher, NOW) == expected


def test_without_a_time_it_is_now_in_utc() -> None:
    before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    made = datetime.datetime.strptime(job_id("", "", "torchrun")[:15], "%Y%m%d-%H%M%S").replace(tzinfo=datetime.timezone.utc)
    assert before <= made <= datetime.datetime.now(datetime.timezone.utc)


def test_the_roles_filter_is_this_function() -> None:
    assert FilterModule().filters()["job_id"] is job_id


@pytest.mark.parametrize(
    ("extravars", "suffix"),
    [({}, "-torchrun"), ({"launcher_type": "mpiexec"}, "-mpiexec"), ({"launcher_job_name": "mnist", "launcher_type": "mpirun"}, "-mnist")],
)
def test_the_api_names_a_job_as_the_role_does(extravars: dict[str, str], suffix: str) -> None:
    assert api.job_id_for(extravars, REPO).endswith(suffix)
    assert api.job_id_for({**extravars, "launcher_job_id": "given"}, REPO) == "given"


def test_the_apis_default_launcher_is_the_launcher_roles() -> None:
    assert api.role_option_default(REPO, "launcher", "launcher_type") == "torchrun"
