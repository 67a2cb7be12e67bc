#!/usr/bin/env python3
"""Your own training image: the collection's training image with the packages of your requirements file.

    scripts/own_image.py --name myteam/training:1 --requirements path/to/requirements.txt

The image is built FROM the training image (``--base``, default multinode/training:latest), so it keeps what a
worker needs (sshd, the ``dev`` user with uid 1000, Python with torch, Intel MPI, torchrun). Your packages are
resolved on this machine for the image's own Python and platform, with the image's packages held at their versions
(the same layer ``workload_requirements`` builds), and copied into the image's site-packages: nothing in the build
needs an index. The image is saved as a ``docker save`` tarball beside the collection's images; the script ends by
printing the variables that make the provisioning load it on every node.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "collections"))

# pylint: disable-next=wrong-import-position
from ansible_collections.multinode.training.plugins.module_utils import requirements_layer as layers  # noqa: E402

# pylint: disable-next=wrong-import-position
from ansible_collections.multinode.training.plugins.plugin_utils.layer_build import build  # noqa: E402

# Where the image's Python keeps its packages: torch's own directory's parent.
SITE_PROBE = "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"
DOCKERFILE = """FROM {base}
# The packages of {requirements} (scripts/own_image.py), beside the image's own.
COPY site/ {site}/
"""


def image_python(base: str, code: str) -> str:
    """What ``code`` prints when the base image's python3 runs it."""
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--entrypoint", "python3", base, "-c", code],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"own_image: {base}'s python3 failed: {done.stderr.strip()}")
    return done.stdout.strip()


def build_image(name: str, base: str, requirements: Path, cache: Path) -> Path:
    """Build the image ``name`` and save it; the tarball's path."""
    node = json.loads(image_python(base, layers.PROBE_SCRIPT))
    site = image_python(base, SITE_PROBE)
    with tempfile.TemporaryDirectory(prefix="multinode-own-image-") as scratch:
        context = Path(scratch) / "context"
        args = {"requirements": str(requirements), "node": node, "nodes": [base], "python": sys.executable}
        key = layers.layer_key(requirements.read_text(encoding="utf-8"), f"image:{base}")
        try:
            plan = build(args, key, context)
        except layers.LayerError as exc:
            raise SystemExit(f"own_image: {exc}") from exc
        for replaced in plan["replaced"]:
            print(f"own_image: warning: {requirements} replaces {replaced} of {base}", file=sys.stderr)
        print(f"own_image: {len(plan['install'])} packages into {site}: {' '.join(plan['install']) or 'none'}")
        (context / "Dockerfile").write_text(DOCKERFILE.format(base=base, requirements=requirements.name, site=site))
        subprocess.run(["docker", "build", "--force-rm", "--tag", name, str(context)], check=True)
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / (name.replace("/", "_").replace(":", "_") + ".tar")
    subprocess.run(["docker", "save", "--output", str(tarball), name], check=True)
    return tarball


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--name", required=True, help="the new image's name, e.g. myteam/training:1")
    parser.add_argument("--requirements", required=True, type=Path, help="a requirements file (pip's format)")
    parser.add_argument("--base", default="multinode/training:latest", help="the image to build FROM")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "multinode-training" / "images",
        help="where the docker save tarball goes",
    )
    options = parser.parse_args()
    if not options.requirements.is_file():
        raise SystemExit(f"own_image: {options.requirements} is not a file")
    tarball = build_image(options.name, options.base, options.requirements.resolve(), options.cache)
    print(f"own_image: {options.name} saved to {tarball}; use it with:")
    print(f"  -e cluster_image={options.name} -e container_runtime_image_tarball={tarball}")


if __name__ == "__main__":
    main()
