#!/bin/bash
# ansible-test sanity on the collection exactly as `ansible-galaxy collection build` packs it (build_ignore
# applied), so what is checked is what ships. Runs offline but for PyPI: ansible-test bootstraps pip in its
# test virtualenvs with get-pip.py from the internet (unreachable here); a stand-in in its cache bootstraps pip
# with ensurepip instead, and the sanity tests' own requirements then come from PyPI.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/.venv/bin"

pip_version="$(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" "$("$BIN/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" | head -n 1)"
[ -n "$pip_version" ] || { echo "sanity.sh: cannot find the pip version ansible-test bootstraps" >&2; exit 1; }
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -s "$cache" ]; then
  mkdir -p "$(dirname "$cache")"
  printf 'import ensurepip\nensurepip.bootstrap(upgrade=True)\n' >"$cache"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$BIN/ansible-galaxy" collection build --output-path "$work" "$ROOT" >/dev/null
tree="$work/ansible_collections/multinode/training"
mkdir -p "$tree"
tar -xzf "$work"/multinode-training-*.tar.gz -C "$tree"
cd "$tree"
# ansible-test lists the files to check from git when the tree is a repository.
git init -q && git add -A && git -c user.name=sanity -c user.email=sanity@localhost commit -qm "as built"
"$BIN/ansible-test" sanity --local --python 3.11 "$@"
