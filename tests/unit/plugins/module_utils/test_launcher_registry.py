# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launcher registry (launch.REGISTRY): one declaration per launcher, complete, and the one thing the rest reads.

A launcher added to the launcher role's argument spec without a registry entry, or to the registry without one of
its parts (every field of Launcher is required, and each is checked here for what it must hold), fails here.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils import hostfile, kubernetes_job, kubernetes_run
from ansible_collections.multinode.training.plugins.module_utils.launch import LAUNCHERS, REGISTRY, Launcher
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import CONTRACT

REPO = Path(__file__).resolve().parents[4]
SPECS = yaml.safe_load((REPO / "roles/launcher/meta/argument_specs.yml").read_text())["argument_specs"]
CLUSTER_SPECS = yaml.safe_load((REPO / "roles/cluster/meta/argument_specs.yml").read_text())["argument_specs"]
RUNTIMES = CLUSTER_SPECS["main"]["options"]["cluster_runtime"]["choices"]
SCHEDULERS = CLUSTER_SPECS["main"]["options"]["cluster_scheduler"]["choices"]
SOURCES = {source for variable in CONTRACT for source in variable.sources}


def test_the_argument_specs_choices_are_the_registrys_launchers_in_its_order() -> None:
    assert SPECS["main"]["options"]["launcher_type"]["choices"] == list(REGISTRY)


def test_the_kubernetes_entry_points_choices_are_the_launchers_with_a_kubernetes_kind() -> None:
    assert SPECS["kubernetes"]["options"]["launcher_type"]["choices"] == list(kubernetes_job.LAUNCHERS)
    assert kubernetes_job.LAUNCHERS == tuple(name for name, launcher in REGISTRY.items() if launcher.kubernetes_kinds)


def test_the_default_launcher_is_a_registered_one_and_the_same_in_the_spec_and_the_defaults() -> None:
    defaults = yaml.safe_load((REPO / "roles/launcher/defaults/main.yml").read_text())
    assert SPECS["main"]["options"]["launcher_type"]["default"] == defaults["launcher_type"] in REGISTRY


def test_every_part_is_required() -> None:
    fields = dataclasses.fields(Launcher)
    assert all(field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING for field in fields)
    with pytest.raises(TypeError):
        Launcher(**{field.name: None for field in fields[:-1]})  # type: ignore[arg-type]


def test_each_entry_is_filed_under_its_name() -> None:
    assert all(name == launcher.name for name, launcher in REGISTRY.items()) and LAUNCHERS == tuple(REGISTRY)


@pytest.mark.parametrize("launcher", REGISTRY.values(), ids=lambda launcher: launcher.name)
def test_each_declaration_holds_what_its_parts_must(launcher: Launcher) -> None:
    assert launcher.summary and callable(launcher.build)
    assert launcher.hostfile_dialect in hostfile.DIALECTS
    assert launcher.rank_variables and set(launcher.rank_variables) <= SOURCES
    assert launcher.runtimes and set(launcher.runtimes) <= set(RUNTIMES)
    assert launcher.scheduler in SCHEDULERS
    assert set(launcher.kubernetes_kinds) <= set(kubernetes_run.API_VERSIONS)
    # A launcher that runs in containers names the image that has it (images/<image>/).
    assert ("container" not in launcher.runtimes) or (REPO / "images" / launcher.image).is_dir()
    assert launcher.image == "" or (REPO / "images" / launcher.image).is_dir()
    if launcher.output_label:
        re.compile(launcher.output_label)
    assert isinstance(launcher.node_agent, str)
    assert isinstance(launcher.one_rank_per_node, bool) and isinstance(launcher.shell_joined, bool)


@pytest.mark.parametrize(
    ("line", "label"),
    [("[1]<stdout>:[rank 1 n2] x", "horovodrun"), ("[0,3]<stderr>:[rank 3 n2] x", "mpirun"), ("[2] [rank 2 n1] x", "ipexrun")],
)
def test_each_output_label_matches_what_its_launcher_writes(line: str, label: str) -> None:
    assert re.match(REGISTRY[label].output_label, line)


def test_no_python_restates_the_default_launcher() -> None:
    """The default launcher is the launcher role's (its defaults and argument spec); no Python falls back to it."""
    fallback = re.compile(r"""(?:or|get\([^)]*,)\s*["']torchrun["']""")
    sources = [*REPO.glob("plugins/**/*.py"), *REPO.glob("src/**/*.py")]
    found = [f"{path.relative_to(REPO)}:{number}" for path in sources for number, line in enumerate(path.read_text().splitlines(), 1) if fallback.search(line)]
    assert found == []
