#!/usr/bin/env bash
# Run molecule scenarios, the groups one after another and the scenarios of a group side by side, each timed.
#
#   scripts/molecule_scenarios.sh default -- oneapi gpu_drivers container_runtime slurm
#
# Groups are separated by `--`. A group of one runs with its output on the terminal; in a group of several each
# scenario writes its own log (under $MOLECULE_LOGS, default /tmp/molecule-logs), whose tail is shown when it fails.
# Scenarios run side by side only when nothing of theirs can meet: their platforms, networks and ephemeral
# directories are their own (every role scenario names its containers and network mnt-<scenario>-*). Every scenario
# runs to its end whatever the others do; the script fails when one failed, after the time table.
set -uo pipefail

LOGS=${MOLECULE_LOGS:-/tmp/molecule-logs}
mkdir -p "$LOGS"
times=$(mktemp)
failed=()

run_group() {
  local names=("$@") started pids=() name index
  started=$(date +%s)
  if [ ${#names[@]} -eq 1 ]; then
    molecule test -s "${names[0]}" || failed+=("${names[0]}")
    printf '  %-20s %5d s\n' "${names[0]}" $(( $(date +%s) - started )) >>"$times"
    return
  fi
  for name in "${names[@]}"; do
    echo "[molecule] ${name}: started beside ${names[*]}, log in $LOGS/$name.log"
    ( from=$(date +%s); molecule test -s "$name" >"$LOGS/$name.log" 2>&1; code=$?
      printf '  %-20s %5d s%s\n' "$name" $(( $(date +%s) - from )) "$([ $code -eq 0 ] || echo ' FAILED')" >>"$times"
      exit $code ) &
    pids+=($!)
  done
  for index in "${!pids[@]}"; do
    if ! wait "${pids[$index]}"; then
      name=${names[$index]}
      failed+=("$name")
      echo "[molecule] ${name} FAILED; the end of $LOGS/$name.log:"
      tail -n 150 "$LOGS/$name.log"
    fi
  done
  printf '  %-20s %5d s (side by side)\n' "${names[*]}" $(( $(date +%s) - started )) >>"$times"
}

group=()
for word in "$@" --; do
  if [ "$word" = "--" ]; then
    [ ${#group[@]} -eq 0 ] || run_group "${group[@]}"
    group=()
  else
    group+=("$word")
  fi
done

printf '\nmolecule, time per scenario:\n%s\n' "$(cat "$times")"
rm -f "$times"
if [ ${#failed[@]} -gt 0 ]; then
  echo "[molecule] failed: ${failed[*]}"
  exit 1
fi
