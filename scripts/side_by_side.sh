#!/usr/bin/env bash
# Run named commands side by side, each timed, and fail when one failed (after all of them ended):
#
#   scripts/side_by_side.sh 'default=molecule test -s default' 'checks=make unit lint sanity' -- 'next=...'
#
# Groups are separated by `--` and run one after another. Every command writes $SIDE_BY_SIDE_LOGS/<name>.log (default
# /tmp/side-by-side); in a group the first command's output also goes to the terminal (the long one: what CI shows
# while it runs), every other command says when it ended and shows its log's tail when it failed. The last lines
# printed name, for each failed command, the last errors in its log (a play's own, not those a nested run printed
# inside a task's output): what a CI that keeps only the end shows. The commands of a group must not meet: their
# containers, networks, ports and files are their own. A command runs with `nice` when its name ends in `~` (for one
# that only fills the CPU the first one leaves idle). Each line of a log starts with the time it was written
# (HH:MM:SS), so a log says where a lane's minutes went; the terminal shows the lines as the command wrote them.
# Where the CPU went is printed at the end: each command's own CPU seconds (its processes, not its containers) and,
# from scripts/container_cpu.sh, each container's ($LOGS/cpu.txt).
set -uo pipefail

LOGS=${SIDE_BY_SIDE_LOGS:-/tmp/side-by-side}
mkdir -p "$LOGS"
times=$(mktemp)
failed=()
STAMP_WIDTH=9  # "HH:MM:SS "

# Standard input, each line prefixed with the time it arrived.
stamp() {
  perl -MPOSIX -ne 'BEGIN { $| = 1 } print strftime("%H:%M:%S ", localtime), $_'
}

# Sets cpu_seconds: the user and system CPU seconds of this shell's ended children and theirs, from the second line
# of bash's `times`, which must run in this shell (in a $(...) subshell it has no children), so it goes through FILE.
children_cpu_seconds() {
  local file=$1
  times >"$file"
  cpu_seconds=$(awk 'NR == 2 { split($1 " " $2, parts, "[ ms]+"); printf "%d", parts[1] * 60 + parts[2] + parts[3] * 60 + parts[4] }' "$file")
  rm -f "$file"
}

# One command: name=command, its log, whether its output also goes to the terminal. Records its time and status.
run_one() {
  local name=$1 command=$2 log=$3 show=$4 from code cpu_seconds
  from=$(date +%s)
  if [ "${name: -1}" = "~" ]; then
    command="nice -n 10 $command"
    name=${name%\~}
  fi
  if [ "$show" = yes ]; then
    bash -c "$command" 2>&1 | stamp | tee "$log" | cut -c$((STAMP_WIDTH + 1))-
    code=${PIPESTATUS[0]}
  else
    bash -c "$command" 2>&1 | stamp >"$log"
    code=${PIPESTATUS[0]}
  fi
  children_cpu_seconds "$log.cpu"
  printf '  %-28s %5d s, CPU %5d s%s\n' "$name" $(( $(date +%s) - from )) "$cpu_seconds" \
    "$([ "$code" -eq 0 ] || echo " FAILED ($code)")" >>"$times"
  return "$code"
}

run_group() {
  local started pids=() names=() item name index first=1
  started=$(date +%s)
  for item in "$@"; do
    name=${item%%=*}
    names+=("${name%\~}")
  done
  for item in "$@"; do
    name=${item%%=*}
    if [ $first -eq 1 ]; then
      [ $# -eq 1 ] || echo "[side-by-side] ${name%\~}: started here, beside ${names[*]:1}"
      run_one "$name" "${item#*=}" "$LOGS/${name%\~}.log" yes &
    else
      echo "[side-by-side] ${name%\~}: started, log in $LOGS/${name%\~}.log"
      ( run_one "$name" "${item#*=}" "$LOGS/${name%\~}.log" no; code=$?
        echo "[side-by-side] ${name%\~}: ended with $code"; exit $code ) &
    fi
    pids+=($!)
    first=0
  done
  for index in "${!pids[@]}"; do
    if ! wait "${pids[$index]}"; then
      name=${names[$index]}
      failed+=("$name")
      if [ "$index" -gt 0 ]; then
        echo "[side-by-side] ${name} FAILED; the end of $LOGS/$name.log:"
        tail -n 150 "$LOGS/$name.log"
      fi
    fi
  done
  [ $# -eq 1 ] || printf '  %-28s %5d s (side by side)\n' "${names[*]}" $(( $(date +%s) - started )) >>"$times"
}

# Every 15 s, the free space of the file system holding Docker's data (what the suite fills: the simulated nodes'
# images and venvs), in MB, after the time: a suite that ran out of it fails in every lane at once.
watch_disk() {
  local root
  root=$(docker info -f '{{.DockerRootDir}}' 2>/dev/null) || root=/var/lib/docker
  while :; do
    echo "$(date +%H:%M:%S) $(df -BM --output=avail "$root" 2>/dev/null | awk 'NR == 2 { print $1 + 0 }') $root"
    sleep 15
  done >"$1"
}

# The disk's lowest free space from watch_disk's readings, and when.
disk_report() {
  sort -k2,2n "$1" | awk 'NR == 1 { printf "%.1f GB free at the lowest (%s), on the file system of %s", $2 / 1024, $1, $3 }'
}

# One watch per suite: a side_by_side.sh inside one of its commands (make molecule-roles) reports nothing of its own.
watcher='' disk_watcher=''
if [ -z "${SIDE_BY_SIDE_CPU_WATCH:-}" ]; then
  export SIDE_BY_SIDE_CPU_WATCH=$LOGS/cpu.readings
  "$(dirname "$0")/container_cpu.sh" watch "$SIDE_BY_SIDE_CPU_WATCH" &
  watcher=$!
  watch_disk "$LOGS/disk.readings" &
  disk_watcher=$!
fi

group=()
for word in "$@" --; do
  if [ "$word" = "--" ]; then
    [ ${#group[@]} -eq 0 ] || run_group "${group[@]}"
    group=()
  elif [[ "$word" != *=* ]]; then
    echo "side_by_side.sh: '$word' is not name=command" >&2
    exit 2
  else
    group+=("$word")
  fi
done

printf '\nside by side, time per command:\n%s\n' "$(cat "$times")"
if [ -n "$watcher" ]; then
  kill "$watcher" 2>/dev/null
  wait "$watcher"
  "$(dirname "$0")/container_cpu.sh" report "$SIDE_BY_SIDE_CPU_WATCH" >"$LOGS/cpu.txt"
  printf '\nCPU seconds, the largest containers and in all (%s):\n%s\n%s\n' "$LOGS/cpu.txt" \
    "$(head -n -3 "$LOGS/cpu.txt" | head -n 10)" "$(tail -n 3 "$LOGS/cpu.txt")"
  kill "$disk_watcher" 2>/dev/null
  wait "$disk_watcher" 2>/dev/null
  printf '\nDisk: %s\n' "$(disk_report "$LOGS/disk.readings")"
fi
rm -f "$times"
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    plain=$(cut -c$((STAMP_WIDTH + 1))- "$LOGS/$name.log" | sed 's/\x1b\[[0-9;]*m//g')
    # A command of several make targets (make -k) goes on past a failed one: name each that failed, since the last
    # errors may be another target's, or a rescued error a scenario expects.
    targets=$(grep -oE 'make(\[[0-9]+\])?: \*\*\* \[[^]]*\]' <<<"$plain" | sed 's/.*\[//; s/\]$//' | sort -u | tr '\n' ' ')
    [ -z "$targets" ] || echo "[side-by-side] $name: its failed make targets: $targets"
    echo "[side-by-side] $name: its last errors ($LOGS/$name.log):"
    # Each line cut at 300 characters, not bytes: cut -c cuts bytes and can leave half a character, which makes the
    # whole output binary to grep.
    grep -v '\.\.\.ignoring' <<<"$plain" | grep -E -A5 '^[ │]*\[ERROR\]: Task failed|^FAILED |^E  +[A-Za-z]+Error|Idempotence test failed|^ERROR: ' \
      | tail -n 18 | LC_ALL=C.UTF-8 sed -E 's/^(.{300}).+$/\1/; s/^/    /'
  done
  echo "[side-by-side] failed: ${failed[*]}"
  exit 1
fi
