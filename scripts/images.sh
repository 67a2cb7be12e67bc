#!/usr/bin/env bash
# Build the project's images offline, or reuse them.
#
# There is no image registry here (see docs/NODES.md, "How it runs offline"), so every image is built
# from Debian packages (debootstrap) and a host-side wheelhouse. Each image carries a label with
# the hash of its inputs; an image whose label matches is reused, an image saved on disk under
# $MULTINODE_CACHE/images is loaded instead of rebuilt (this survives `docker system prune -a`).
#
#   multinode/base:bookworm      debootstrap minbase + openssh-server, python3, sudo, iproute2
#   multinode/sim-node:bookworm  a bare "server" for the simulated cluster (no Docker engine)
#   multinode/training:latest    torch 2.13.0 CPU, numpy, scikit-learn, Intel MPI, user dev (1000)
#
# Simulated nodes of another Debian release, built only when named (scripts/images.sh trixie; make images VARIANTS=trixie):
#   multinode/base:trixie, multinode/sim-node:trixie   the same two images from Debian 13's packages (same mirror)
#
# Variants, built only when named (scripts/images.sh deepspeed tensorflow horovod; make images VARIANTS=deepspeed):
#   multinode/training-deepspeed:latest   the training image plus DeepSpeed 0.19.8 and pdsh
#   multinode/training-tensorflow:latest  the training image plus tensorflow-cpu 2.21.0, Keras 3 and tf-keras 2.21
#   multinode/training-horovod:latest     the training image plus Horovod 0.28.1 (torch, Gloo, MPI), built from source
#   multinode/training-ipex:latest        the training image's recipe with torch 2.8.0 and Intel Extension for PyTorch
#                                         2.8.0 (ipexrun) in place of torch 2.13.0: about 8 GB (torch 2.8's CUDA wheels)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${MULTINODE_CACHE:-$HOME/.cache/multinode-training}
IMAGES="$CACHE/images"
WHEELS="$CACHE/wheels"
PYTHON=${PYTHON:-python3}
mkdir -p "$IMAGES" "$WHEELS"

log() { printf '[images] %s\n' "$*" >&2; }

apt_mirror() {
  local sources=/etc/apt/sources.list.d/debian.sources uri=""
  [ -f "$sources" ] && uri=$(awk '/^URIs:/ {print $2; exit}' "$sources")
  echo "${uri:-http://deb.debian.org/debian}"
}

# hash_inputs FILE... : one hash over the content of the given files (and extra words on stdin)
hash_inputs() { { if [ $# -gt 0 ]; then cat "$@"; fi; cat; } | sha256sum | cut -c1-16; }

image_label() { docker image inspect -f '{{ index .Config.Labels "multinode.inputs" }}' "$1" 2>/dev/null || true; }

# on_disk NAME HASH : the image cache holds NAME saved with that input hash
on_disk() {
  local tar="$IMAGES/${1//[\/:]/_}.tar"
  [ -f "$tar" ] && [ "$(cat "$tar.inputs" 2>/dev/null)" = "$2" ]
}

# needs_build NAME HASH : neither docker nor the image cache holds NAME with that input hash
needs_build() { [ "$(image_label "$1")" != "$2" ] && ! on_disk "$1" "$2"; }

# ensure NAME HASH BUILD_FUNCTION : present with that input hash, from docker, disk, or a build
ensure() {
  local name=$1 hash=$2 build=$3 tar="$IMAGES/${1//[\/:]/_}.tar"
  if [ "$(image_label "$name")" = "$hash" ]; then
    log "$name: present (inputs $hash)"
  elif on_disk "$name" "$hash"; then
    log "$name: loading cached $tar"
    docker load -i "$tar" >/dev/null
  else
    log "$name: building (inputs $hash)"
    "$build" "$name" "$hash"
  fi
  if [ ! -f "$tar" ] || [ "$(cat "$tar.inputs" 2>/dev/null)" != "$hash" ]; then
    log "$name: saving to $tar"
    docker save -o "$tar.tmp" "$name"
    mv "$tar.tmp" "$tar"
    echo "$hash" >"$tar.inputs"
    sha256sum "$tar" | cut -d' ' -f1 >"$tar.sha256"
  fi
}

BASE_PACKAGES=openssh-server,python3,sudo,iproute2,ca-certificates,procps,rsync

# build_base NAME HASH: NAME is multinode/base:<Debian release>
build_base() {
  local name=$1 hash=$2 release=${1##*:} rootfs
  command -v debootstrap >/dev/null || { log "debootstrap missing (run scripts/host-setup.sh)"; exit 1; }
  rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$release" "$rootfs" "$(apt_mirror)" \
      >"$CACHE/debootstrap.log" 2>&1; then
    tail -n 20 "$CACHE/debootstrap.log" >&2
    rm -rf "$rootfs"
    exit 1
  fi
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  # The rootfs keeps the host's apt mirror: containers reach it over plain HTTP.
  tar -C "$rootfs" -c . | docker import --change "LABEL multinode.inputs=$hash" - "$name" >/dev/null
  rm -rf "$rootfs"
}

# The build stages' images are left untagged; they are removed, after a failed build too, with its containers (the
# IPEX variant's build stage is 12 GB): a rebuild starts over.
build_dir() {
  local name=$1 hash=$2 dir=$3 status=0
  shift 3
  docker build -q --force-rm --label "multinode.inputs=$hash" "$@" -t "$name" "$dir" >/dev/null || status=$?
  docker image prune -f >/dev/null
  return "$status"
}

build_sim_node() { build_dir "$1" "$2" "$ROOT/images/sim-node" --build-arg "RELEASE=${1##*:}"; }

# fetch_wheels DIR REQUIREMENTS : the wheels of REQUIREMENTS and of everything they need
fetch_wheels() {
  log "wheelhouse: $1"
  "$PYTHON" -m pip download -q --only-binary=:all: -d "$1" -r "$2" >&2
}

build_training() {
  local name=$1 hash=$2 context
  if [ -n "$wheels_fetch" ]; then
    wait "$wheels_fetch"
  else
    fetch_wheels "$WHEELS" "$ROOT/images/training/requirements.txt"
  fi
  context=$(mktemp -d "$CACHE/context.XXXXXX")
  cp "$ROOT"/images/training/* "$context/"
  mkdir "$context/wheels"
  cp -l "$WHEELS"/*.whl "$context/wheels/" 2>/dev/null || cp "$WHEELS"/*.whl "$context/wheels/"
  build_dir "$name" "$hash" "$context"
  rm -rf "$context"
}

# A variant's packages come from PyPI into a wheelhouse of its own (host mode ships the main wheelhouse to the nodes:
# a variant's packages stay out of it). A variant with a Dockerfile builds on the training image: its requirements
# pin every package the image lacks (--no-deps), as wheels except those published only as source archives
# (DeepSpeed, Horovod), which its Dockerfile builds against the image's torch. A variant without one is a whole
# Python environment of its own (another torch): the training image's recipe with the variant's requirements.txt and
# check.py in place of the training image's, its wheels resolved like the training image's.
build_variant() {
  local name=$1 hash=$2 variant=${1#multinode/training-} context
  variant=${variant%%:*}
  local dir="$ROOT/images/training-$variant"
  context=$(mktemp -d "$CACHE/context.XXXXXX")
  if [ -f "$dir/Dockerfile" ]; then
    log "wheelhouse: $WHEELS-$variant"
    "$PYTHON" -m pip download -q --no-deps --prefer-binary -d "$WHEELS-$variant" -r "$dir/requirements.txt" >&2
  else
    fetch_wheels "$WHEELS-$variant" "$dir/requirements.txt"
    cp "$ROOT"/images/training/* "$context/"
  fi
  cp "$dir"/* "$context/"
  cp -rl "$WHEELS-$variant" "$context/wheels"
  build_dir "$name" "$hash" "$context"
  rm -rf "$context"
}

# base_inputs RELEASE : the input hash of the base image of that Debian release
base_inputs() { echo "$BASE_PACKAGES $(apt_mirror)${1#bookworm}" | hash_inputs; }

# sim_node RELEASE: the base and sim-node images of that Debian release
sim_node() {
  local release=$1 sim_hash base_hash
  base_hash=$(base_inputs "$release")
  ensure "multinode/base:$release" "$base_hash" build_base
  sim_hash=$(echo "$base_hash" | hash_inputs "$ROOT"/images/sim-node/*)
  ensure "multinode/sim-node:$release" "$sim_hash" build_sim_node
}

training_hash=$(base_inputs bookworm | hash_inputs "$ROOT"/images/training/*)
# The training image's wheels come from PyPI while debootstrap fetches Debian's packages and builds the base images
# (build_training waits for them).
wheels_fetch=""
if needs_build multinode/training:latest "$training_hash"; then
  fetch_wheels "$WHEELS" "$ROOT/images/training/requirements.txt" &
  wheels_fetch=$!
  trap 'kill "$wheels_fetch" 2>/dev/null || true' EXIT
fi

NODE_RELEASES=" trixie "
for word in "$@"; do
  [[ $NODE_RELEASES == *" $word "* ]] && sim_node "$word"
done
sim_node bookworm
ensure multinode/training:latest "$training_hash" build_training

for variant in "$@"; do
  [[ $NODE_RELEASES == *" $variant "* ]] && continue
  [ -d "$ROOT/images/training-$variant" ] || { log "no image variant '$variant' (images/training-<variant>/)"; exit 2; }
  variant_hash=$(echo "$training_hash" | hash_inputs "$ROOT/images/training-$variant"/*)
  ensure "multinode/training-$variant:latest" "$variant_hash" build_variant
done

log "ready: $(cd "$IMAGES" && ls ./*.tar | tr '\n' ' ')"
