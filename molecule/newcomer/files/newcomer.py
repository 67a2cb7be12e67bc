"""A newcomer's first hour, from the README alone, on bare nodes of mixed OSes.

    python newcomer.py PROJECT SIM_INVENTORY WORK_DIR

The nodes are bare servers (Debian 12 launcher, Debian 13 workers) with only what a server needs to be reached: an
`admin` login with sudo (the scenario's prepare). Everything else comes from README.md, read here so the two cannot
drift:
1. "Your nodes": its inventory, as written, with the nodes' addresses and what reaching them needs (the admin key and
   the pinned host keys) and nothing more: the test fails if it would add any other variable.
2. `ansible-playbook playbooks/train.yml -i inventory`, from the checkout, with no Ansible setting in the environment
   but ANSIBLE_NOCOLOR (for reading the play recap): it succeeds, every rank of one world exits 0, and the run's summary
   says succeeded.
3. A second provisioning (`playbooks/provision.yml`) changes nothing on any node.
4. "From Python": the README's block as written, with the inventory path put in: the job succeeds.
5. The README's mode switch to host mode (`RUNTIME=host LAUNCHER=mpiexec`): the Debian 13 workers' Python (3.13) has no
   wheels in the controller's wheelhouse (3.11), so the first play refuses it, naming them, with changed=0 everywhere.
Prints one JSON line with what it measured; exits non-zero on the first broken promise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

READ_ONLY_VARIABLES = {"ansible_host", "ansible_ssh_private_key_file", "ansible_ssh_common_args"}
RECAP = re.compile(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.MULTILINE)


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"newcomer: {message}")


def readme_block(readme: str, section: str, language: str) -> str:
    """The first fenced block of ``language`` under the README heading ``section``."""
    match = re.search(rf"^## {re.escape(section)}\n.*?^```{language}\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    check(match is not None, f"README.md has no {language} block under '## {section}'")
    return match.group(1)


def newcomer_inventory(readme: str, sim_inventory: Path) -> dict[str, Any]:
    """The README's inventory, its hosts given the sim nodes' addresses in order, and the admin key and pinned host
    keys the sim inventory reaches them with."""
    inventory = yaml.safe_load(readme_block(readme, "Your nodes", "yaml"))
    sim = yaml.safe_load(sim_inventory.read_text())["all"]
    sim_hosts = [host for group in ("launcher", "workers") for host in sim["children"][group]["hosts"].values()]
    readme_hosts = [
        host for group in ("launcher", "workers") for host in inventory["all"]["children"][group]["hosts"].values()
    ]
    check(len(readme_hosts) == len(sim_hosts), f"README names {len(readme_hosts)} nodes, the sim has {len(sim_hosts)}")
    for readme_host, sim_host in zip(readme_hosts, sim_hosts):
        readme_host["ansible_host"] = sim_host["ansible_host"]
    reach = {name: sim["vars"][name] for name in ("ansible_ssh_private_key_file", "ansible_ssh_common_args")}
    inventory["all"]["vars"].update(reach)
    return inventory


def added_variables(readme: str, inventory: dict[str, Any]) -> set[str]:
    """Every variable name of ``inventory`` that the README's inventory does not set."""

    def names(node: Any) -> set[str]:
        if not isinstance(node, dict):
            return set()
        found = set(node.get("vars", {}))
        for host in node.get("hosts", {}).values():
            found |= set(host or {})
        for child in node.get("children", {}).values():
            found |= names(child)
        return found

    return names(inventory["all"]) - names(yaml.safe_load(readme_block(readme, "Your nodes", "yaml"))["all"])


def user_environment() -> dict[str, str]:
    """The environment of a user's shell: no Ansible or molecule setting (the checkout's ansible.cfg applies) but
    ANSIBLE_NOCOLOR, so that the play recap reads plainly."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("ANSIBLE_", "MOLECULE_")) and name not in ("VIRTUAL_ENV", "PYTHONPATH")
    } | {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "ANSIBLE_NOCOLOR": "1"}


def run(argv: list[str], project: Path, log: Path) -> tuple[int, str, float]:
    """Exit code, output and seconds of ``argv`` run from the checkout; the output goes to ``log`` as it comes."""
    started = time.monotonic()
    with log.open("w") as output:
        returncode = subprocess.run(
            argv, cwd=project, env=user_environment(), stdout=output, stderr=subprocess.STDOUT, check=False
        ).returncode
    return returncode, log.read_text(), time.monotonic() - started


def recap(output: str) -> dict[str, tuple[int, int, int]]:
    """Each host's changed, unreachable and failed counts from the play recap."""
    return {
        host: (int(changed), int(unreachable), int(failed))
        for host, changed, unreachable, failed in RECAP.findall(output)
    }


def new_run(runs: Path, before: set[str]) -> Path:
    made = sorted(
        path for path in runs.iterdir() if path.is_dir() and not path.is_symlink() and path.name not in before
    )
    check(len(made) == 1, f"expected one new run under {runs}, found {[path.name for path in made]}")
    return made[0]


def succeeded_in_one_world(run_dir: Path, hosts: list[str]) -> dict[str, Any]:
    """The run's summary, after checking it succeeded with every rank of one world, on every host, exiting 0."""
    summary = json.loads((run_dir / "summary.json").read_text())
    check(summary["status"] == "succeeded", f"{run_dir.name}: {summary['status']}, {summary.get('failure_reasons')}")
    world_size = summary["world_size"]
    exits = summary["rank_exit_codes"]
    check(world_size >= len(hosts) and len(exits) == world_size, f"{run_dir.name}: {world_size} ranks, exits {exits}")
    check(set(exits.values()) == {0}, f"{run_dir.name}: rank exit codes {exits}")
    check(summary["world"]["formed"] is True, f"{run_dir.name}: the ranks formed no one world: {summary['world']}")
    check(
        sorted(set(summary["rank_nodes"].values())) == sorted(hosts),
        f"{run_dir.name}: ranks on {summary['rank_nodes']}",
    )
    return summary


def main(project: Path, sim_inventory: Path, work: Path) -> None:
    readme = (project / "README.md").read_text()
    work.mkdir(parents=True, exist_ok=True)
    inventory = newcomer_inventory(readme, sim_inventory)
    check(
        added_variables(readme, inventory) <= READ_ONLY_VARIABLES,
        f"the test added {added_variables(readme, inventory) - READ_ONLY_VARIABLES} to the README's inventory",
    )
    # A newcomer's controller has never seen the cluster: no state of its name (its keys, its nodes' records).
    shutil.rmtree(Path.home() / ".multinode-training" / inventory["all"]["vars"]["cluster_name"], ignore_errors=True)
    (work / "inventory").mkdir(exist_ok=True)
    inventory_path = work / "inventory" / "hosts.yml"
    inventory_path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    groups = inventory["all"]["children"]
    hosts = [*groups["launcher"]["hosts"], *groups["workers"]["hosts"]]
    playbook = str(Path(sys.executable).parent / "ansible-playbook")
    runs = project / "runs"
    runs.mkdir(exist_ok=True)
    measured: dict[str, Any] = {"hosts": hosts}

    before = {path.name for path in runs.iterdir()}
    rc, output, measured["train_s"] = run(
        [playbook, "playbooks/train.yml", "-i", str(inventory_path)], project, work / "train.log"
    )
    check(rc == 0, f"train.yml exited {rc}: {output[-3000:]}")
    summary = succeeded_in_one_world(new_run(runs, before), hosts)
    measured["train_ranks"] = summary["world_size"]

    rc, output, measured["provision_again_s"] = run(
        [playbook, "playbooks/provision.yml", "-i", str(inventory_path)], project, work / "provision-again.log"
    )
    counts = recap(output)
    check(rc == 0 and set(counts) == set(hosts), f"provision.yml again exited {rc}: {output[-3000:]}")
    check(all(changed == 0 for changed, _, _ in counts.values()), f"a second provisioning changed: {counts}")

    example = readme_block(readme, "From Python", "python").replace('"inventories/sim"', repr(str(inventory_path)))
    check(repr(str(inventory_path)) in example, "the README's Python example no longer submits to inventories/sim")
    before = {path.name for path in runs.iterdir()}
    rc, output, measured["python_example_s"] = run([sys.executable, "-c", example], project, work / "python.log")
    check(rc == 0, f"the README's Python example exited {rc}: {output[-3000:]}")
    succeeded_in_one_world(new_run(runs, before), hosts)
    check("\nsucceeded {" in output, f"the README's Python example printed no succeeded run: {output[-1500:]}")

    switch = ["-e", "cluster_runtime=host", "-e", "launcher_type=mpiexec"]
    # What make demo's sim inventory sets for host mode here: Intel's apt repository is out of reach, its MPI comes
    # from the controller's wheelhouse (make wheels).
    switch += ["-e", json.dumps({"oneapi_install_method": "pip", "oneapi_pip_packages": ["impi-rt"]})]
    rc, output, measured["host_switch_refused_s"] = run(
        [playbook, "playbooks/train.yml", "-i", str(inventory_path), *switch], project, work / "host-switch.log"
    )
    counts = recap(output)
    check(rc != 0, "host mode on Python 3.13 workers with a wheelhouse for 3.11 was not refused")
    workers = ", ".join(sorted(groups["workers"]["hosts"]))
    check(
        f"{workers} run Python 3.13 and the wheelhouse has no wheel of" in output,
        f"the refusal does not name the Debian 13 workers ({workers}) and their Python: {output[-3000:]}",
    )
    check(all(changed == 0 for changed, _, _ in counts.values()) and counts, f"the refused switch changed: {counts}")
    print(
        json.dumps({name: round(value, 1) if isinstance(value, float) else value for name, value in measured.items()})
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
