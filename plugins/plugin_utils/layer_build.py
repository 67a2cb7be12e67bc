# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Building a requirements layer on the controller (module_utils/requirements_layer.py says what a layer is): the
requirements_layer action and scripts/own_image.py share it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers

PLAN_FILE = "plan.json"


def build(args: dict[str, Any], key: str, layer_dir: Path) -> dict[str, Any]:
    """Resolve, install into a scratch directory beside the layer's the very files resolved (by their hashes, with
    the requirements file's options), then move it into place (never half a layer)."""
    node = args["node"]
    options = file_options(Path(args["requirements"]))
    args = {**args, "environ": _pip_environment(args["python"], options)}
    layer_dir.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".building-{key}-", dir=layer_dir.parent))
    try:
        report = _resolve(args, scratch)
        try:
            plan = layers.plan_layer(report, node.get("packages") or {}, options.hashes)
        except layers.LayerError as exc:
            raise layers.LayerError(f"{args['requirements']}: {exc}") from exc
        site = scratch / layers.SITE_DIR
        site.mkdir()
        if plan.pins:
            _install(args, options, plan.pins, site)
        recorded = {"install": list(plan.install), "replaced": [item.describe() for item in plan.replaced]}
        (scratch / PLAN_FILE).write_text(json.dumps(recorded, indent=2) + "\n")
        (scratch / layers.STAMP_FILE).write_text(key + "\n")
        os.chmod(scratch, 0o755)
        scratch.rename(layer_dir)
        return recorded
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _install(args: dict[str, Any], options: layers.FileOptions, pins: tuple[layers.Pin, ...], site: Path) -> None:
    """Install exactly ``pins`` into ``site``, through a requirements file of their own that is not left in the
    layer (it holds the file's index URLs, credentials too)."""
    with tempfile.NamedTemporaryFile("w", prefix="multinode-layer-", suffix=".txt", encoding="utf-8") as pinned:
        pinned.write(layers.install_requirements(options, pins))
        pinned.flush()
        _pip(layers.install_argv(args["python"], args["node"], str(site), pinned.name), args, "install")


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
    if layers.hash_mismatches(held.stderr):
        _fail(held, args, "resolve")  # resolved freely, pip would download the same files
    free = _pip(layers.resolve_argv(args["python"], node, args["requirements"], never_written), args, "resolve")
    return json.loads(free.stdout)


def file_options(path: Path, outer: frozenset[Path] = frozenset()) -> layers.FileOptions:
    """The options and hashes of the requirements file at ``path`` with those of the files it includes (``-r``,
    ``-c``) where it includes them, each relative find-links path made absolute as pip takes it (beside its file, when
    there is one there). ``outer``: the files that include this one (a file that includes itself is read once)."""
    try:
        own = layers.read_options(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise layers.LayerError(f"{path}: {exc.strerror}") from exc
    inside = outer | {path.resolve()}
    parts: list[layers.FileOptions] = []
    for option, value in own.options:
        if option in layers.INCLUDES and value:
            if "://" in value:
                raise layers.LayerError(f"{path}: the included file {value} is a URL; include a local file")
            if (path.parent / value).resolve() not in inside:
                parts.append(file_options(path.parent / value, inside))
        else:
            located = _beside(path, value) if option in layers.FIND_LINKS and value else value
            parts.append(layers.FileOptions(((option, located),)))
    return layers.merge_options([*parts, layers.FileOptions(hashes=own.hashes, hashed=own.hashed)])


def _beside(requirements: Path, location: str) -> str:
    """A find-links location of the ``requirements`` file as pip takes it: the path beside the file when that exists."""
    candidate = requirements.parent / location
    return str(candidate.resolve()) if "://" not in location and candidate.exists() else location


def _pip_environment(python: str, options: layers.FileOptions) -> Mapping[str, str]:
    """pip's environment: the controller's, or, for a file that names its own index, the controller's without its
    package sources (pip would search the controller's find-links as well, and prefer them)."""
    if not options.replaces_index():
        return dict(os.environ)
    return layers.sources_isolated(os.environ, pip_config(python))


def pip_config(python: str) -> str:
    """What ``pip config list`` of ``python`` says: the settings of the controller's pip configuration files."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        raise layers.LayerError(f"pip could not list its configuration: {' '.join(listed.stderr.split())}")
    return listed.stdout


def _pip(argv: list[str], args: dict[str, Any], step: str, fail: bool = True) -> subprocess.CompletedProcess[str]:
    """Run pip; on failure (when ``fail``), say which requirements and for which nodes, with pip's reason."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=args["environ"])
    if done.returncode == 0 or not fail:
        return done
    _fail(done, args, step)


def _fail(done: subprocess.CompletedProcess[str], args: dict[str, Any], step: str) -> NoReturn:
    """Say why pip failed: which files' hashes did not match, which requirements it cannot find, or its own words."""
    mismatched = layers.hash_mismatches(done.stderr)
    if mismatched:
        raise layers.LayerError(
            f"{args['requirements']}: the hash did not match for {'; '.join(mismatched)} (a --hash line that is "
            "wrong, or a file that is not the one it was taken from)"
        )
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
