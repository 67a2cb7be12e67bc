# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/shellcheck_generated.py (make lint): every launcher of the registry in each of its runtimes and every
backend's rank.sh are rendered for ShellCheck, and a finding names the script's variant."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.multinode.training.plugins.module_utils.cluster import RUNTIMES
from ansible_collections.multinode.training.plugins.module_utils.launch import LAUNCHERS, REGISTRY, TRAINING_BACKENDS
from ansible_collections.multinode.training.tests.unit.scripts.conftest import load_script

SCRIPT = load_script("shellcheck_generated")
RENDERED = SCRIPT.scripts()
VARIANTS = {script.variant for script in RENDERED}


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_every_launcher_is_checked_in_each_of_its_runtimes(launcher: str) -> None:
    for runtime in REGISTRY[launcher].runtimes:
        assert f"launch.sh {launcher} {runtime} plain" in VARIANTS
        assert f"launch.sh {launcher} {runtime} staged+replicated+ready+secret" in VARIANTS


def test_the_full_launch_scripts_hold_what_their_name_says() -> None:
    full = [script.text for script in RENDERED if script.variant.endswith(" staged+replicated+ready+secret")]
    assert full and all("stage()" in text and "replicator=" in text and "ready_token=" in text for text in full)
    assert not any("hf_example" in text for text in full)  # the secret variable reaches rank.sh only, by its file


def test_slurm_batch_and_task_scripts_are_checked() -> None:
    assert {"slurm.sbatch host", "slurm task script host"} <= VARIANTS


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("backend", ["none", *TRAINING_BACKENDS])
def test_every_backend_s_rank_wrapper_is_checked(runtime: str, backend: str) -> None:
    assert f"rank.sh {runtime} backend={backend} plain" in VARIANTS
    assert f"rank.sh {runtime} backend={backend} secret+stack-dump+layer" in VARIANTS


def test_each_variant_has_a_file_of_its_own() -> None:
    assert len({script.file_name for script in RENDERED}) == len(RENDERED)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="no shellcheck (make shellcheck installs it)")
def test_a_finding_names_the_variant_and_the_excluded_codes_are_not_reported(tmp_path: Path) -> None:
    scripts = [
        SCRIPT.Script("launch.sh example plain", "#!/bin/bash\necho $1\n"),
        SCRIPT.Script("rank.sh example plain", "#!/bin/bash\n. /srv/env.sh\ntrap 'echo \"$?\"' EXIT\n"),
    ]
    assert SCRIPT.findings(scripts, tmp_path) == [
        "launch.sh example plain: line 2: SC2086 (info): Double quote to prevent globbing and word splitting."
    ]
