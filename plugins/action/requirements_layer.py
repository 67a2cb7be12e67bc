# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of multinode.training.requirements_layer: a workload's requirements built once, on the controller,
into a layer for the nodes' training environment (module_utils/requirements_layer.py says how)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import PLAN_FILE, build
ARGUMENT_SPEC: dict[str, Any] = {
    "requirements": {"type": "path", "required": True},
    "environment": {"type": "str", "required": True},
    "probes": {"type": "dict"},
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
        elif not args["probes"]:
            # Only the key, and that the controller lacks the layer: the nodes are asked only when one lacks it.
            result.update(changed=False, built=False, ready=False, install=[], replaced=[])
        elif self._task.check_mode:
            result.update(changed=True, built=False, install=[], replaced=[], msg="the layer would be built")
        else:
            try:
                plan = build(_with_node(args), key, layer_dir)
            except layers.LayerError as exc:
                raise AnsibleActionFail(str(exc)) from exc
            result.update(changed=True, built=True, **plan)
        result["warnings"] = [
            f"{args['requirements']} replaces {replaced} of the training environment: the layer's version comes "
            "first on every rank" for replaced in result["replaced"]
        ]
        return result


def _with_node(args: dict[str, Any]) -> dict[str, Any]:
    """The build's inputs: the probe the layer is built for (the first node's), once every probe agrees with it."""
    probes = args["probes"]
    differing = layers.differing_nodes(probes)
    if differing:
        raise layers.LayerError(
            "the nodes' training environments differ, and one layer is built for all of them: " + "; ".join(differing)
        )
    return {**args, "node": next(iter(probes.values())), "nodes": list(probes)}
