#!/bin/bash
# ansible-test on a staged copy of the collection, at the path ansible-test requires
# (ansible_collections/multinode/training):
#   scripts/ansible_test.sh sanity [ARGS...]  the collection exactly as `ansible-galaxy collection build` packs it
#                                             (build_ignore applied), so what is checked is what ships
#   scripts/ansible_test.sh units [ARGS...]   the working tree's files (tracked and new, not ignored), tests included
# Runs offline but for PyPI: ansible-test bootstraps pip in its test virtualenvs with get-pip.py from the internet
# (unreachable here); a stand-in in its cache bootstraps pip with ensurepip instead, and the sanity tests' own
# requirements then come from PyPI. The units run in this venv (requirements-dev.txt has their pytest plugins).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/.venv/bin"
command="${1:?usage: ansible_test.sh sanity|units [ARGS...]}"
shift

pip_version="$(sed -n "s/.*pip='\([0-9.]*\)'.*/\1/p" "$("$BIN/python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal/python_requirements.py" | head -n 1)"
[ -n "$pip_version" ] || { echo "ansible_test.sh: cannot find the pip version ansible-test bootstraps" >&2; exit 1; }
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -s "$cache" ]; then
  mkdir -p "$(dirname "$cache")"
  printf 'import ensurepip\nensurepip.bootstrap(upgrade=True)\n' >"$cache"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tree="$work/ansible_collections/multinode/training"
mkdir -p "$tree"
case "$command" in
  sanity)
    "$BIN/ansible-galaxy" collection build --output-path "$work" "$ROOT" >/dev/null
    tar -xzf "$work"/multinode-training-*.tar.gz -C "$tree"
    ;;
  units)
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r tar -cf - --ignore-failed-read) | tar -xf - -C "$tree"
    ;;
  *)
    echo "ansible_test.sh: unknown command $command (sanity or units)" >&2
    exit 2
    ;;
esac
cd "$tree"
# ansible-test lists the files to test from git when the tree is a repository.
git init -q && git add -A && git -c user.name=ansible-test -c user.email=ansible-test@localhost commit -qm "staged"
"$BIN/ansible-test" "$command" --local --python 3.11 "$@"
