#!/bin/sh
# What the training image's packages carry that no rank uses, cut from the build stage before the image copies it
# (about 230 MB of 1.8 GB: each node's copy and load of the image is that much shorter).
# - torch's own C++ test programs: torch/test (83 MB) and in torch/bin all but torch_shm_manager and the
#   upgrader models (about 45 MB, protoc among them).
# - The copies pip makes of a library's versioned names: a wheel cannot hold a symlink, so impi-rt installs
#   libmpi.so, libmpi.so.12, libmpi.so.12.0 and libmpi.so.12.0.0 as four 15 MB files (about 105 MB in all its
#   libraries). A shorter name with the same bytes becomes a link to the longest, as the library's own package
#   would have installed it.
# Usage: trim.sh PREFIX (pip's --prefix: PREFIX/lib, PREFIX/lib/python3*/dist-packages).
set -eu
prefix=$1
for torch in "$prefix"/lib/python3*/dist-packages/torch; do
  rm -rf "$torch/test"
  if [ -d "$torch/bin" ]; then
    find "$torch/bin" -maxdepth 1 -type f \( -name 'test_*' -o -name '*Test' -o -name 'protoc*' \) -delete
  fi
done
# Longest names first (libmpi.so.12.0.0 sorts after libmpi.so.12.0): each links its shorter names to itself.
for lib in $(find "$prefix/lib" -maxdepth 1 -type f -name 'lib*.so.*' | sort -r); do
  name=$lib
  while [ "${name%.*}" != "$name" ] && [ "${name%.so*}" != "${name%.*}" ]; do
    name=${name%.*}
    if [ -f "$name" ] && [ ! -L "$name" ] && cmp -s "$lib" "$name"; then
      ln -sf "$(basename "$lib")" "$name"
    fi
  done
done
