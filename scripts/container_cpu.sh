#!/usr/bin/env bash
# Where the suite's CPU went, by container: while it runs, record each Docker container's CPU seconds (its cgroup's
# cpuacct or cpu.stat, which holds the containers a simulated node runs inside it), then sum them by container name.
#
#   scripts/container_cpu.sh watch FILE &   # every 15 s: one "name nanoseconds" line per running container, appended
#   scripts/container_cpu.sh report FILE    # each container's last seconds, summed by name, largest first, and the
#                                           # machine's CPU seconds outside any container since the watch began
#
# A container removed between two looks loses at most its last 15 s. By name, not id: a container created again under
# its name (a scenario's sim cluster made anew) adds its new seconds to the old ones.
set -uo pipefail

mode=${1:?usage: container_cpu.sh watch|report FILE}
file=${2:?usage: container_cpu.sh watch|report FILE}

# The CPU nanoseconds of a container's cgroup (cgroup v1 or v2), or nothing.
usage_ns() {
  local id=$1 path
  for path in "/sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage" "/sys/fs/cgroup/cpu,cpuacct/docker/$id/cpuacct.usage"; do
    [ -r "$path" ] && { cat "$path"; return; }
  done
  for path in "/sys/fs/cgroup/system.slice/docker-$id.scope/cpu.stat" "/sys/fs/cgroup/docker/$id/cpu.stat"; do
    [ -r "$path" ] && { awk '$1 == "usage_usec" { print $2 * 1000 }' "$path"; return; }
  done
}

# The machine's CPU nanoseconds (busy time of every CPU since boot).
machine_ns() {
  awk '$1 == "cpu" { printf "%.0f\n", ($2 + $3 + $4 + $7 + $8) * 1e9 / '"$(getconf CLK_TCK)"' }' /proc/stat
}

case $mode in
  watch)
    # A last look when stopped (TERM), so a run shorter than one interval is read too.
    # PREFIX NAME NANOSECONDS per running container, then the machine's.
    look() {
      docker ps --no-trunc --format '{{.ID}} {{.Names}}' 2>/dev/null | while read -r id name; do
        ns=$(usage_ns "$id")
        [ -z "$ns" ] || echo "$1$name $ns"
      done >>"$file"
      echo "machine $(machine_ns)" >>"$file"
    }
    trap 'look ""; exit 0' TERM
    # What the containers running already had spent before the watch (base:NAME) is not counted.
    : >"$file"
    look base:
    while true; do
      sleep 15 &
      wait $!
      look ""
    done
    ;;
  report)
    # Per name, the sum of each incarnation's last reading (a reading below the one before starts a new one), less
    # what it had before the watch.
    awk '
      $1 == "machine" && first == "" { first = $2 }
      $1 ~ /^base:/ { base[substr($1, 6)] = $2; next }
      $1 != "machine" && $2 < seen[$1] { ended[$1] += seen[$1] }
      { seen[$1] = $2 }
      END {
        machine = seen["machine"] - first; inside = 0
        for (name in seen) if (name != "machine") {
          total = ended[name] + seen[name] - base[name]; inside += total
          printf "%8.0f s  %s\n", total / 1e9, name | "sort -rn"
        }
        close("sort -rn")
        printf "%8.0f s  every container\n%8.0f s  outside containers (controller: ansible, molecule, tests, lint)\n%8.0f s  the machine\n",
          inside / 1e9, (machine - inside) / 1e9, machine / 1e9
      }' "$file"
    ;;
  *)
    echo "container_cpu.sh: unknown mode $mode (watch or report)" >&2
    exit 2
    ;;
esac
