#!/usr/bin/env bash
# Fill the controller-side wheelhouse that the oneapi role installs from (oneapi_install_method: pip).
#
#   scripts/oneapi-wheels.sh [REQUIREMENT...]
#
# With no arguments the requirements are the role's default `oneapi_pip_packages` (read from
# roles/oneapi/defaults/main.yml, so the two cannot drift apart). Wheels are downloaded for the
# nodes, not for this machine: Linux, CPython $ONEAPI_PYTHON_VERSION, glibc up to $ONEAPI_GLIBC,
# $ONEAPI_ARCH, binary wheels only, with every dependency.
#
# Idempotent and cached: it first resolves the requirements OFFLINE against the wheelhouse (the
# same resolution the role does); when that succeeds nothing is downloaded. Only a missing wheel
# makes it run `pip download` (which reuses the files already there).
#
# Environment:
#   ONEAPI_WHEELS          wheelhouse (default $MULTINODE_CACHE/wheels/oneapi,
#                          MULTINODE_CACHE defaults to ~/.cache/multinode-training)
#   ONEAPI_PYTHON_VERSION  the nodes' Python, major.minor (default 3.11: Debian bookworm)
#   ONEAPI_GLIBC           the OLDEST glibc among the nodes, major.minor (default 2.35: Ubuntu jammy;
#                          bookworm has 2.36, noble 2.39)
#   ONEAPI_ARCH            the nodes' machine (default x86_64; Intel publishes these wheels for it only)
#   PYTHON                 the Python whose pip downloads (default python3; pip >= 22.2)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MULTINODE_CACHE:-$HOME/.cache/multinode-training}
DEST=${ONEAPI_WHEELS:-$CACHE/wheels/oneapi}
PYVER=${ONEAPI_PYTHON_VERSION:-3.11}
GLIBC=${ONEAPI_GLIBC:-2.35}
ARCH=${ONEAPI_ARCH:-x86_64}
PYTHON=${PYTHON:-python3}

log() { printf '[oneapi-wheels] %s\n' "$*" >&2; }

# default_requirements: the list under `oneapi_pip_packages:` in the role's defaults (block style)
default_requirements() {
  awk '/^oneapi_pip_packages:/ {inlist=1; next}
       inlist && /^  - / {sub(/^  - /, ""); gsub(/["'\'']/, ""); print; next}
       inlist {exit}' "$ROOT/roles/oneapi/defaults/main.yml"
}

# platform_args: --platform for every manylinux tag a node with glibc $GLIBC accepts
platform_args() {
  local major=${GLIBC%%.*} minor=${GLIBC#*.} m
  for ((m = minor; m >= 17; m--)); do printf -- '--platform\nmanylinux_%s_%s_%s\n' "$major" "$m" "$ARCH"; done
  printf -- '--platform\nmanylinux2014_%s\n--platform\nlinux_%s\n' "$ARCH" "$ARCH"
}

if [ $# -gt 0 ]; then
  requirements=("$@")
else
  mapfile -t requirements < <(default_requirements)
fi
[ ${#requirements[@]} -gt 0 ] || { log "no requirements (and none found in roles/oneapi/defaults/main.yml)"; exit 1; }
mapfile -t platforms < <(platform_args)
abi="cp${PYVER/./}"
target_args=(--only-binary=:all: --python-version "$PYVER" --implementation cp --abi "$abi" "${platforms[@]}")
mkdir -p "$DEST"

# resolves_offline: true when the wheelhouse alone satisfies every requirement and dependency.
# --target is required by older pip for platform options; with --dry-run nothing is written there.
resolves_offline() {
  PIP_CONFIG_FILE=/dev/null "$PYTHON" -m pip install -q --dry-run --ignore-installed --no-index \
    --find-links "$DEST" --target "$DEST/.never-written" "${target_args[@]}" "${requirements[@]}" \
    >/dev/null 2>&1
}

if resolves_offline; then
  log "cached: $DEST satisfies ${requirements[*]}"
  exit 0
fi
log "downloading ${requirements[*]} (cp${PYVER/./}, glibc <= $GLIBC, $ARCH) into $DEST"
"$PYTHON" -m pip download -q --disable-pip-version-check -d "$DEST" "${target_args[@]}" "${requirements[@]}"
resolves_offline || { log "downloaded, but $DEST still does not resolve ${requirements[*]}"; exit 1; }
log "ready: $(find "$DEST" -maxdepth 1 -name '*.whl' | wc -l) wheels, $(du -sh "$DEST" | cut -f1)"
