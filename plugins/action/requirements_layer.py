# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.requirements_layer: a workload's requirements built once, on the controller,
into a layer for the nodes' training environment (module_utils/requirements_layer.py says how)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers

PLAN_FILE = "plan.json"
ARGUMENT_SPEC: dict[str, Any] = {
    "requirements": {"type": "path", "required": True},
    "environment": {"type": "str", "required": True},
    "node": {"type": "dict"},
    "nodes": {"type": "list", "elements": "str", "default": []},
    "cache_dir": {"type": "path", "required": True},
    "python": {"type": "str", "default": sys.executable},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self.validate_argument_spec(ARGUMENT_SPEC)[1]
        text = Path(args["requirements"]).read_text(encoding="utf-8")
        try:
            key = layers.layer_key(text, args["environment"])
        except layers.LayerError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        layer_dir = Path(args["cache_dir"]) / key
        result.update(
            key=key, path=str(layer_dir), site=str(layer_dir / layers.SITE_DIR), stamp_file=layers.STAMP_FILE,
            probe_script=layers.PROBE_SCRIPT,
        )
        ready = (layer_dir / layers.STAMP_FILE).is_file()
        if ready:
            plan = json.loads((layer_dir / PLAN_FILE).read_text())
            result.update(changed=False, built=False, ready=True, **plan)
        elif args["node"] is None:
            # Only the key, and that the controller lacks the layer: the nodes are asked only when one lacks it.
            result.update(changed=False, built=False, ready=False, install=[], replaced=[])
        elif self._task.check_mode:
            result.update(changed=True, built=False, install=[], replaced=[], msg="the layer would be built")
        else:
            plan = _build(args, key, layer_dir)
            result.update(changed=True, built=True, **plan)
        result["warnings"] = [
            f"{args['requirements']} replaces {replaced} of the training environment: the layer's version comes "
            "first on every rank" for replaced in result["replaced"]
        ]
        return result


def _build(args: dict[str, Any], key: str, layer_dir: Path) -> dict[str, Any]:
    """Resolve, install into a scratch directory beside the layer's, then move it into place (never half a layer)."""
    node = args["node"]
    layer_dir.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".building-{key}-", dir=layer_dir.parent))
    try:
        report = _resolve(args, scratch)
        plan = layers.plan_layer(report, node.get("packages") or {})
        site = scratch / layers.SITE_DIR
        site.mkdir()
        if plan.install:
            _pip(layers.install_argv(args["python"], node, str(site), plan.install), args, "install")
        recorded = {"install": list(plan.install), "replaced": [item.describe() for item in plan.replaced]}
        (scratch / PLAN_FILE).write_text(json.dumps(recorded, indent=2) + "\n")
        (scratch / layers.STAMP_FILE).write_text(key + "\n")
        os.chmod(scratch, 0o755)
        scratch.rename(layer_dir)
        return recorded
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _resolve(args: dict[str, Any], scratch: Path) -> dict[str, Any]:
    """pip's report, resolved with the environment's packages held at their versions; when that cannot be
    satisfied, resolved freely (the layer then replaces some of them, which the caller warns about)."""
    node = args["node"]
    constraints = scratch / "environment-constraints.txt"
    constraints.write_text("\n".join(layers.environment_constraints(node.get("packages") or {})) + "\n")
    never_written = str(scratch / "resolve-target")
    held = _pip(
        layers.resolve_argv(args["python"], node, args["requirements"], never_written, str(constraints)),
        args,
        "resolve",
        fail=False,
    )
    if held.returncode == 0:
        return json.loads(held.stdout)
    free = _pip(layers.resolve_argv(args["python"], node, args["requirements"], never_written), args, "resolve")
    return json.loads(free.stdout)


def _pip(argv: list[str], args: dict[str, Any], step: str, fail: bool = True) -> subprocess.CompletedProcess[str]:
    """Run pip; on failure (when ``fail``), say which requirements and for which nodes, with pip's reason."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode == 0 or not fail:
        return done
    missing = layers.unresolvable(done.stderr)
    node = args["node"]
    where = (
        f"for {', '.join(args['nodes']) or 'the nodes'} (Python {node.get('python')}, {node.get('machine')}, "
        f"glibc {node.get('libc_version')})"
    )
    if missing:
        raise AnsibleActionFail(
            f"{args['requirements']}: no wheel of {', '.join(missing)} {where} on the package index "
            "(a name that does not exist, a version that is not there, or a package without a wheel for these nodes)"
        )
    reason = " ".join(done.stderr.split())[-1500:]
    raise AnsibleActionFail(f"{args['requirements']}: pip could not {step} the requirements {where}: {reason}")
