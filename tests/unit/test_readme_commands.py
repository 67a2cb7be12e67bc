# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command the README gives a user is run somewhere by a test or in CI, and still runs the way it is written.

The README's commands (its indented and fenced code lines, and the `make` targets it names) are each mapped below
to the place that runs them and a line of that place which shows it; a command added to the README without such a
place, or a place that stops running it, fails here. The README stays short: at most about 300 lines.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MAX_LINES = 300
# The programs whose lines in a code block are commands for the user to type.
PROGRAMS = ("make", "ansible-playbook", "ansible-galaxy", "ansible", "multinode-training", "pip")
NEWCOMER = "molecule/newcomer/files/newcomer.py"
# Each command (its words up to the first option value that is the user's own) -> the file that runs it, and a
# piece of that file showing it does.
RUN_BY: dict[str, tuple[str, str]] = {
    "ansible-playbook playbooks/train.yml -i inventory": (NEWCOMER, '[playbook, "playbooks/train.yml", "-i", str(inventory_path)]'),
    "ansible-playbook playbooks/train.yml -i inventories/sim": ("Makefile", "$(PLAYBOOK) playbooks/train.yml -i inventories/sim"),
    "ansible-playbook playbooks/train.yml -i inventory -e workload_src=~/src/myproject -e launcher_script=train.py": (
        "molecule/default/user_script.yml",
        "workload_src",
    ),
    "ansible-galaxy collection build .": ("molecule/default/verify_installed.yml", "collection, build"),
    "ansible-galaxy collection install multinode-training-*.tar.gz": ("molecule/default/verify_installed.yml", "install"),
    "ansible-playbook multinode.training.train -i inventory": ("molecule/default/verify_installed.yml", "multinode.training.train"),
    "multinode-training submit inventories/sim -e launcher_type=mpiexec": ("tests/unit/python/test_jobs.py", 'main(["submit"'),
    "multinode-training list": ("tests/unit/python/test_jobs.py", 'main(["list"'),
    "multinode-training logs -f latest": ("tests/unit/python/test_jobs.py", 'main(["logs", "-f"'),
    "multinode-training cancel latest": ("tests/unit/python/test_jobs.py", 'main(["cancel"'),
    "multinode-training cancel runs/<id>": ("molecule/default/files/api_e2e.py", '"multinode-training"), "cancel", str(job.run_dir)'),
    "multinode-training attach": ("molecule/default/files/api_e2e.py", '"multinode-training"), "attach", str(job.run_dir)'),
    "multinode-training attach runs/<id>": ("molecule/default/files/api_e2e.py", '"multinode-training"), "attach", str(job.run_dir)'),
    "multinode-training submit": ("tests/unit/python/test_jobs.py", 'main(["submit"'),
    "ansible all -i inventory -m ansible.builtin.ping": ("tests/unit/test_readme_commands.py", "def test_the_troubleshooting_ping_runs"),
    "pip install -e .": ("Makefile", "pip install -q -e ."),
    "make test": (".ci/run", "exec make test"),
    "make demo": ("Makefile", "DEMO_STEPS := venv+images sim train"),
    "make images": ("Makefile", "test: venv-dev host browser images wheels"),
    "make down": ("Makefile", "down: venv"),
    "make venv": ("Makefile", "venv: $(VENV)/.installed"),
    "make help": ("Makefile", "help: ##"),
}
# Each section whose fenced block is not commands (an inventory, a program) -> the file that runs the block as written,
# and a piece of that file showing it reads the block out of README.md.
BLOCKS_RUN_BY: dict[str, tuple[str, str]] = {
    "Your nodes": (NEWCOMER, 'readme_block(readme, "Your nodes", "yaml")'),
    "From Python": (NEWCOMER, 'readme_block(readme, "From Python", "python")'),
}
_CODE_SPAN = re.compile(r"`([^`]+)`")
_FENCED_BLOCK = re.compile(r"^```(\w+)\n", re.MULTILINE)


def readme_commands() -> list[str]:
    """The README's command lines: code lines that start with a program the user runs, and `make ...` spans."""
    commands = []
    fenced = False
    for line in README.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            words = line.strip()
            if words.split(" ", 1)[0] in PROGRAMS:
                commands.append(words)
            continue
        # A span of one word names a program; two or more are a command.
        commands += [span for span in _CODE_SPAN.findall(line) if span.split(" ", 1)[0] in PROGRAMS and " " in span]
    return commands


def known(command: str) -> str | None:
    """The RUN_BY entry ``command`` is (a `make demo VAR=...` variant counts as its target), or None."""
    if command in RUN_BY:
        return command
    target = " ".join(command.split()[:2])
    return target if command.startswith("make ") and target in RUN_BY else None


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= MAX_LINES


def test_the_readme_gives_commands() -> None:
    assert {"make demo", "make test", "ansible-playbook playbooks/train.yml -i inventory"} <= set(readme_commands())


@pytest.mark.parametrize("command", sorted(set(readme_commands())))
def test_every_command_of_the_readme_is_run_by_a_test_or_in_ci(command: str) -> None:
    entry = known(command)
    assert entry is not None, f"README command {command!r}: say in RUN_BY which test or CI step runs it"
    path, shows = RUN_BY[entry]
    assert shows in (REPO / path).read_text(), f"{path} no longer runs {entry!r} ({shows!r} not found)"


def test_every_make_target_the_readme_names_exists() -> None:
    targets = set(re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), re.MULTILINE))
    named = {command.split()[1] for command in readme_commands() if command.startswith("make ")}
    assert named <= targets


def test_the_troubleshooting_ping_runs(tmp_path: Path) -> None:
    """The README's first step for an unreachable node, on an inventory of the controller itself."""
    inventory = tmp_path / "inventory"
    inventory.write_text(f"[launcher]\nnode1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    command = "ansible all -i inventory -m ansible.builtin.ping".split()
    command[0] = str(Path(sys.executable).parent / "ansible")
    environ = {**os.environ, "ANSIBLE_CONFIG": str(REPO / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    result = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0 and '"ping": "pong"' in result.stdout, result.stdout + result.stderr


def readme_block_sections() -> list[str]:
    """The README sections (their `## ` headings) that hold a fenced block of some language."""
    sections = re.split(r"^## ", README.read_text(), flags=re.MULTILINE)[1:]
    return [section.split("\n", 1)[0] for section in sections if _FENCED_BLOCK.search(section)]


def test_the_readme_has_its_inventory_and_python_blocks() -> None:
    assert {"Your nodes", "From Python"} <= set(readme_block_sections())


@pytest.mark.parametrize("section", readme_block_sections())
def test_every_code_block_of_the_readme_is_run_by_a_test_as_written(section: str) -> None:
    assert section in BLOCKS_RUN_BY, f"README's block under '## {section}': say in BLOCKS_RUN_BY which test runs it"
    path, shows = BLOCKS_RUN_BY[section]
    assert shows in (REPO / path).read_text(), f"{path} no longer reads the block of '## {section}' ({shows!r} not found)"
