# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building a requirements layer on the controller (module_utils/requirements_layer.py says what a layer is): the
requirements_layer action and scripts/own_image.py share it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers

PLAN_FILE = "plan.json"


def build(args: dict[str, Any], key: str, layer_dir: Path) -> dict[str, Any]:
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
        raise layers.LayerError(
            f"{args['requirements']}: no wheel of {', '.join(missing)} {where} on the package index "
            "(a name that does not exist, a version that is not there, or a package without a wheel for these nodes)"
        )
    reason = " ".join(done.stderr.split())[-1500:]
    raise layers.LayerError(f"{args['requirements']}: pip could not {step} the requirements {where}: {reason}")
