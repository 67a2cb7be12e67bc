#!/bin/bash
# Test fixture of the oneapi scenario (runs in its repository container): a small but real
# oneAPI-style apt repository built from Intel's impi-rt wheel, signed with a throwaway key.
#
#   build-repo.sh WHEEL OUT
#
# OUT/oneapi   pool/main/*.deb, dists/all/{InRelease,Release,Release.gpg}, dists/all/main/binary-amd64/
#              Packages(.gz), key.asc (the signing key). Packages, in Intel's naming:
#                intel-oneapi-mpi-<X.Y>     Intel MPI repackaged into the oneAPI layout under
#                                           /opt/intel/oneapi/mpi/<X.Y> with env/vars.sh, plus mpi/latest
#                intel-oneapi-common-vars   /opt/intel/oneapi/setvars.sh (sources */latest/env/vars.sh)
#                intel-oneapi-mpi           metapackage depending on both
# OUT/mirror   the same repository under another URL (for a source signed-by a wrong key)
# OUT/wrong-key.asc  another throwaway key that did NOT sign the repository
# Prints "built" when it built, "present" when OUT was already complete.
set -euo pipefail
wheel=$1 out=$2
if [ -f "$out/oneapi/dists/all/InRelease" ] && [ -f "$out/wrong-key.asc" ]; then echo present; exit 0; fi

ver=$(basename "$wheel" | sed -E 's/^impi_rt-([0-9.]+)-.*/\1/')   # 2021.18.1
short=${ver%.*}                                                     # 2021.18
rev=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/wheel"
data="$work/wheel/impi_rt-$ver.data/data"

# --- intel-oneapi-mpi-X.Y: the wheel's files in oneAPI's layout ---------------------------------
pkg="$work/intel-oneapi-mpi-$short"
root="$pkg/opt/intel/oneapi/mpi/$short"
fab="$root/opt/mpi/libfabric"
mkdir -p "$root/bin" "$root/lib" "$root/env" "$fab/bin" "$fab/lib/prov" "$pkg/DEBIAN"
cp -r "$data/opt" "$data/share" "$root/"
for f in "$data"/bin/*; do [ -f "$f" ] && cp "$f" "$root/bin/"; done
cp "$data"/bin/libfabric/* "$fab/bin/"
for f in "$data"/lib/*; do
  [ -f "$f" ] || continue
  case $(basename "$f") in
    libfabric.so*) cp "$f" "$fab/lib/" ;;
    *-fi.so) cp "$f" "$fab/lib/prov/" ;;
    *) cp "$f" "$root/lib/" ;;
  esac
done
cp -r "$data/lib/mpi" "$root/lib/"
# zip archives do not keep modes
find "$root" -type d -exec chmod 0755 {} + && find "$root" -type f -exec chmod 0644 {} +
chmod 0755 "$root"/bin/* "$fab"/bin/* "$root/opt/mpi/tune_fast/mpitune_fast"
ln -s "$short" "$pkg/opt/intel/oneapi/mpi/latest"
cat >"$root/env/vars.sh" <<VARS
# shellcheck shell=sh
# Intel MPI $ver environment (oneAPI layout; test package of multinode.training's oneapi scenario)
I_MPI_ROOT=/opt/intel/oneapi/mpi/$short; export I_MPI_ROOT
PATH="\$I_MPI_ROOT/bin:\$I_MPI_ROOT/opt/mpi/libfabric/bin\${PATH:+:\$PATH}"; export PATH
LD_LIBRARY_PATH="\$I_MPI_ROOT/lib:\$I_MPI_ROOT/opt/mpi/libfabric/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"; export LD_LIBRARY_PATH
FI_PROVIDER_PATH="\$I_MPI_ROOT/opt/mpi/libfabric/lib/prov:/usr/lib/x86_64-linux-gnu/libfabric"; export FI_PROVIDER_PATH
VARS
cat >"$pkg/DEBIAN/control" <<CONTROL
Package: intel-oneapi-mpi-$short
Version: $ver-$rev
Architecture: amd64
Maintainer: multinode.training molecule <noreply@example.invalid>
Section: devel
Priority: optional
Description: Intel MPI $ver runtime (test repackaging of the impi-rt wheel)
 Intel MPI Library runtime in the oneAPI layout, built by the oneapi molecule scenario.
CONTROL

# --- intel-oneapi-common-vars: setvars.sh --------------------------------------------------------
vars="$work/intel-oneapi-common-vars"
mkdir -p "$vars/DEBIAN" "$vars/opt/intel/oneapi"
cat >"$vars/opt/intel/oneapi/setvars.sh" <<'SETVARS'
# shellcheck shell=sh
# oneAPI environment: every installed component's latest/env/vars.sh (test package of
# multinode.training's oneapi scenario; Intel's setvars.sh does the same and more)
for __oneapi_vars in /opt/intel/oneapi/*/latest/env/vars.sh; do
    if [ -f "$__oneapi_vars" ]; then . "$__oneapi_vars"; fi
done
unset __oneapi_vars
SETVARS
cat >"$vars/DEBIAN/control" <<CONTROL
Package: intel-oneapi-common-vars
Version: 2025.0.0-$rev
Architecture: all
Maintainer: multinode.training molecule <noreply@example.invalid>
Section: devel
Priority: optional
Description: oneAPI setvars.sh (test package)
 Sources every oneAPI component's environment script.
CONTROL

# --- intel-oneapi-mpi: metapackage ---------------------------------------------------------------
meta="$work/intel-oneapi-mpi"
mkdir -p "$meta/DEBIAN"
cat >"$meta/DEBIAN/control" <<CONTROL
Package: intel-oneapi-mpi
Version: $ver-$rev
Architecture: amd64
Depends: intel-oneapi-mpi-$short (= $ver-$rev), intel-oneapi-common-vars
Maintainer: multinode.training molecule <noreply@example.invalid>
Section: metapackages
Priority: optional
Description: Intel MPI runtime, latest version (test metapackage)
 Depends on the versioned package, like Intel's repository.
CONTROL

repo="$out/oneapi"
mkdir -p "$repo/pool/main" "$repo/dists/all/main/binary-amd64"
for p in "$pkg" "$vars" "$meta"; do
  dpkg-deb --root-owner-group -Zgzip -z1 --build "$p" "$repo/pool/main/" >/dev/null
done

# --- index, Release, signatures ------------------------------------------------------------------
export GNUPGHOME="$work/gnupg"
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key 'mnt-oneapi test repository <noreply@example.invalid>' ed25519 sign never
gpg --batch --armor --export >"$repo/key.asc"
(cd "$repo" && apt-ftparchive packages pool >dists/all/main/binary-amd64/Packages)
gzip -9kf "$repo/dists/all/main/binary-amd64/Packages"
apt-ftparchive \
  -o APT::FTPArchive::Release::Origin="mnt-oneapi test repository" \
  -o APT::FTPArchive::Release::Label=oneAPI \
  -o APT::FTPArchive::Release::Suite=all \
  -o APT::FTPArchive::Release::Codename=all \
  -o APT::FTPArchive::Release::Architectures=amd64 \
  -o APT::FTPArchive::Release::Components=main \
  release "$repo/dists/all" >"$work/Release"
mv "$work/Release" "$repo/dists/all/Release"
gpg --batch --yes --clearsign -o "$repo/dists/all/InRelease" "$repo/dists/all/Release"
gpg --batch --yes --armor --detach-sign -o "$repo/dists/all/Release.gpg" "$repo/dists/all/Release"
ln -sfn oneapi "$out/mirror"

export GNUPGHOME="$work/gnupg-wrong"
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key 'mnt-oneapi wrong key <noreply@example.invalid>' ed25519 sign never
gpg --batch --armor --export >"$out/wrong-key.asc.tmp"
mv "$out/wrong-key.asc.tmp" "$out/wrong-key.asc"
echo built
