# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launcher registry (launch.REGISTRY): one declaration per launcher, complete, and the one thing the rest reads.

A launcher added to the launcher role's argument spec without a registry entry, or to the registry without one of
its parts (every field of Launcher is required, and each is checked here for what it must hold), fails here.

The lists of launchers that cannot be generated from the registry are held to it here, each failure naming the
launcher and the list it is missing from: the launcher role's argument spec (launcher_type choices), the
launch_script module's DOCUMENTATION (ansible-doc reads it as a literal), the Makefile's launcher map (RUNTIME,
SCHEDULER and VARIANTS as make itself evaluates them for each LAUNCHER), the image variants' molecule scenarios
and make targets, and the launchers the README and docs/LAUNCHERS.md tell a user to pick.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from ansible_collections.multinode.training.plugins.module_utils import hostfile, kubernetes_job, kubernetes_run
from ansible_collections.multinode.training.plugins.module_utils.launch import LAUNCHERS, REGISTRY, Launcher
from ansible_collections.multinode.training.plugins.module_utils.rank_contract import CONTRACT
from ansible_collections.multinode.training.plugins.modules import launch_script

REPO = Path(__file__).resolve().parents[4]
SPECS = yaml.safe_load((REPO / "roles/launcher/meta/argument_specs.yml").read_text())["argument_specs"]
CLUSTER_SPECS = yaml.safe_load((REPO / "roles/cluster/meta/argument_specs.yml").read_text())["argument_specs"]
RUNTIMES = CLUSTER_SPECS["main"]["options"]["cluster_runtime"]["choices"]
SCHEDULERS = CLUSTER_SPECS["main"]["options"]["cluster_scheduler"]["choices"]
SOURCES = {source for variable in CONTRACT for source in variable.sources}
MAKEFILE = REPO / "Makefile"


def variant(launcher: Launcher) -> str:
    """The image variant (images/training-<variant>/) the Makefile and molecule name the launcher's image by; empty:
    it needs none (the training image, or the hosts)."""
    return launcher.image.removeprefix("training-") if launcher.image.startswith("training-") else ""


VARIANT_LAUNCHERS = [launcher for launcher in REGISTRY.values() if variant(launcher)]


def missing(names: Sequence[str], listed: Sequence[str], where: str) -> list[str]:
    """A line naming each of ``names`` that ``listed`` (the list in ``where``) lacks."""
    return [f"{name}: missing from {where}" for name in names if name not in listed]


def unlike_the_registry(listed: Sequence[str], where: str, launchers: Sequence[str] = LAUNCHERS) -> list[str]:
    """Each of ``launchers`` (the registry's) that ``listed`` (the list in ``where``) lacks, and each it names that
    the registry lacks."""
    return missing(launchers, listed, where) + missing(listed, LAUNCHERS, f"the launcher registry (named in {where})")


def makefile_values(launcher: str, names: Sequence[str]) -> dict[str, str]:
    """The Makefile's variables ``names`` for ``LAUNCHER=launcher``, as make evaluates them (a rule of its own,
    given with --eval, prints them; nothing is built). The environment is PATH alone: a VARIANTS or MAKEFLAGS of
    an enclosing ``make test VARIANTS=...`` would otherwise win over the Makefile's own values."""
    rule = "registry-values: ; @printf '%s\\n' " + " ".join(f"'$(strip $({name}))'" for name in names)
    printed = subprocess.run(
        ["make", "-s", "--no-print-directory", "-f", str(MAKEFILE), "--eval", rule, f"LAUNCHER={launcher}", "registry-values"],
        cwd=REPO,
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(zip(names, printed.splitlines(), strict=True))


def test_the_argument_specs_choices_are_the_registrys_launchers_in_its_order() -> None:
    choices = SPECS["main"]["options"]["launcher_type"]["choices"]
    assert unlike_the_registry(choices, "roles/launcher/meta/argument_specs.yml (launcher_type choices)") == []
    assert choices == list(REGISTRY)


def test_the_launch_script_modules_documented_choices_are_the_registrys_launchers_in_its_order() -> None:
    """Its argument spec takes them from the registry (launch_files.LAUNCH_OPTIONS); its DOCUMENTATION is a literal."""
    choices = yaml.safe_load(launch_script.DOCUMENTATION)["options"]["launcher"]["choices"]
    assert unlike_the_registry(choices, "plugins/modules/launch_script.py DOCUMENTATION (launcher choices)") == []
    assert choices == list(REGISTRY)


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


def test_the_makefile_names_only_registered_launchers() -> None:
    """The names its launcher map matches LAUNCHER against: $(filter <names>,$(LAUNCHER))."""
    named = [name for words in re.findall(r"\$\(filter ([^,]+),\$\(LAUNCHER\)\)", MAKEFILE.read_text()) for name in words.split()]
    assert named and missing(named, LAUNCHERS, "the launcher registry (named in the Makefile's launcher map)") == []


@pytest.mark.parametrize("launcher", REGISTRY.values(), ids=lambda launcher: launcher.name)
def test_the_makefiles_launcher_map_is_the_registrys(launcher: Launcher) -> None:
    """make demo / make test with LAUNCHER=<name>: the image variant built and used, the runtime and the scheduler."""
    values = makefile_values(launcher.name, ("RUNTIME", "SCHEDULER", "VARIANTS"))
    where = f"the Makefile with LAUNCHER={launcher.name}"
    assert values["RUNTIME"] in launcher.runtimes, f"{where}: RUNTIME={values['RUNTIME']}, the registry's runtimes {launcher.runtimes}"
    assert values["SCHEDULER"] == launcher.scheduler, f"{where}: SCHEDULER={values['SCHEDULER']}, the registry's {launcher.scheduler}"
    assert values["VARIANTS"] == variant(launcher), f"{where}: VARIANTS={values['VARIANTS']!r}, the registry's image {launcher.image!r}"


@pytest.mark.parametrize("launcher", VARIANT_LAUNCHERS, ids=lambda launcher: launcher.name)
def test_each_image_variant_has_its_molecule_scenario_and_make_target(launcher: Launcher) -> None:
    """make test VARIANTS=<variant> runs molecule/<variant>; make molecule-<variant> runs it alone."""
    scenario = REPO / "molecule" / variant(launcher) / "molecule.yml"
    assert scenario.is_file(), f"{launcher.name}: no molecule scenario {scenario.relative_to(REPO)} for its image {launcher.image}"
    group_vars = yaml.safe_load(scenario.read_text())["provisioner"]["inventory"]["group_vars"]["all"]
    assert (group_vars["launcher_type"], group_vars["cluster_image"]) == (launcher.name, f"multinode/{launcher.image}:latest"), scenario
    assert re.search(rf"^molecule-{variant(launcher)}:", MAKEFILE.read_text(), re.M), f"{launcher.name}: no make target molecule-{variant(launcher)}"


def test_the_readme_offers_every_launcher_to_make_demo() -> None:
    """README: `make demo LAUNCHER=mpiexec` (or `mpirun`, ...): every launcher but the default one."""
    paragraph = next(part for part in (REPO / "README.md").read_text().split("\n\n") if "`make demo LAUNCHER=" in part)
    offered = re.findall(r"`(?:make demo LAUNCHER=)?([a-z]+)`", paragraph)
    default = yaml.safe_load((REPO / "roles/launcher/defaults/main.yml").read_text())["launcher_type"]
    others = [name for name in LAUNCHERS if name != default]
    assert unlike_the_registry(offered, "README.md (make demo LAUNCHER=...)", launchers=others) == []


@pytest.mark.parametrize("launcher", VARIANT_LAUNCHERS, ids=lambda launcher: launcher.name)
def test_docs_launchers_shows_each_image_variant_launcher(launcher: Launcher) -> None:
    assert f"-e launcher_type={launcher.name}" in (REPO / "docs/LAUNCHERS.md").read_text(), f"{launcher.name}: not in docs/LAUNCHERS.md"
