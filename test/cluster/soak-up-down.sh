#!/usr/bin/env bash
# Proves that cluster:up and cluster:down alternate cleanly (npm run cluster:soak [-- N]).
#
#   soak-up-down.sh [N]     N rounds (default 20) of up.sh then down.sh, each from a torn-down
#                           cluster (a first down.sh runs before round 1)
#
# A round passes when up.sh and down.sh both exit 0 and, after down.sh, nothing of the harness is
# left: no process it started (by the pids up.sh recorded, and by command line: the cluster dir,
# containerd's socket for shims), nothing listening on its ports, no interface, iptables rule,
# blackhole route or mount of it, no cluster dir. A failed up.sh must leave no process either
# (checked before down.sh cleans up). One line per round; the last line counts them. Exits 0 only
# when every round passed with 0 leftovers. Leaves the cluster down. Not part of npm test.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common containerd registry; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

rounds=${1:-20}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "usage: soak-up-down.sh [N]" >&2; exit 2; }
[[ $(id -u) == 0 ]] || die "the soak needs root (it runs cluster:up and cluster:down)"

# Logs of every step outside the cluster dir, which down.sh deletes.
SOAK_DIR=$(mktemp -d "${TMPDIR:-/tmp}/nodelet-soak.XXXXXX")
HARNESS_PORTS=("$APISERVER_PORT" "$ETCD_CLIENT_PORT" "$ETCD_PEER_PORT" "$CONTROLLER_MANAGER_PORT"
  "$SCHEDULER_PORT" "$REDIS_PORT" "${REGISTRY_ADDR##*:}" "$NODE_SERVER_PORT" "$METRICS_SERVER_PORT")
external_redis=0

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
secs() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }

# This script and its ancestors (flock, sudo, a terminal) may name the cluster dir: never leftovers.
ancestors() {
  local pid=$$
  while ((pid > 1)); do
    echo "$pid"
    # The parent is the 2nd field after the command name, which may hold spaces ("npm run x").
    pid=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{ print $2 }') || break
    [[ $pid =~ ^[0-9]+$ ]] || break
  done
}

# Every pid (with its identity) that the harness recorded while the cluster was up.
recorded_pids() {
  local f
  for f in "$PID_DIR"/*.start; do
    [[ -f $f ]] && echo "$(basename "$f" .start) $(<"$f")"
  done
  return 0
}

# Prints one line per harness process still running. $1: the "name pid identity" lines recorded
# while the cluster was up.
leftover_processes() {
  local recorded=$1 name pid identity skip line seen=" "
  skip=" $(ancestors | tr '\n' ' ') "
  while read -r name pid identity; do
    [[ -n $name ]] || continue
    if alive "$pid" && [[ $(proc_identity "$pid") == "$identity" ]]; then
      echo "process: $name (pid $pid) still runs"
      seen+="$pid "
    fi
  done <<<"$recorded"
  # By command line: every daemon names the cluster dir (redis before it retitles), shims name
  # containerd's socket.
  for pid in $(pgrep -f -- "$CLUSTER_DIR/|$CONTAINERD_SOCK" || true); do
    [[ $skip$seen == *" $pid "* ]] && continue
    line=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    [[ -n $line ]] || continue
    echo "process: pid $pid: ${line:0:120}"
    seen+="$pid "
  done
  # By port: a retitled Redis (or anything else) still serving one of the harness's ports.
  for pid in $(ss -Hltnp 2>/dev/null | awk -v ports=" ${HARNESS_PORTS[*]} " '{
      n = split($4, a, ":"); if (index(ports, " " a[n] " ")) print $0 }' |
    grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u); do
    [[ $seen == *" $pid "* ]] && continue
    if ((external_redis)) && ss -Hltnp "sport = :$REDIS_PORT" | grep -q "pid=$pid,"; then continue; fi
    line=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | sed 's/ *$//')
    echo "process: pid $pid listens on a harness port: ${line:0:120}"
  done
}

# Prints one line per network, mount or file leftover of the harness.
leftover_system() {
  local ipt link
  for link in "$BRIDGE" "$SELF_BRIDGE" "$HOST_IF"; do
    if ip link show "$link" >/dev/null 2>&1; then echo "network: interface $link"; fi
  done
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    "$ipt" -S 2>/dev/null | grep -F -- "--comment $FW_COMMENT" | sed "s/^/network: $ipt /"
  done
  if ip route show type blackhole 2>/dev/null | grep -qF "$SERVICE_CIDR"; then echo "network: blackhole $SERVICE_CIDR"; fi
  findmnt -rn -o TARGET | awk -v a="$CLUSTER_DIR/" -v b="$CONTAINERD_STATE/" \
    'index($0, a) == 1 || index($0, b) == 1 { print "mount: " $0 }'
  if [[ -e $CLUSTER_DIR ]]; then echo "file: $CLUSTER_DIR still exists"; fi
  return 0
}

# Runs one step with its output to a log file; prints its duration in ms, returns its status.
timed() {
  local log=$1 start status
  shift
  start=$(now_ms)
  "$@" >"$log" 2>&1
  status=$?
  echo $(($(now_ms) - start))
  return "$status"
}

# Prints min/median/max of the ms figures given.
stats() {
  local sorted n
  mapfile -t sorted < <(printf '%s\n' "$@" | sort -n)
  n=${#sorted[@]}
  ((n)) || { echo "n/a"; return; }
  echo "min $(secs "${sorted[0]}")s, median $(secs "${sorted[n / 2]}")s, max $(secs "${sorted[n - 1]}")s"
}

main() {
  local i passed=0 leftovers=0 up_ms down_ms recorded problems up_status down_status verdict
  local -a ups=() downs=() totals=()
  echo "soak: $rounds rounds of cluster:up then cluster:down on $CLUSTER_DIR (logs in $SOAK_DIR)"
  if ! bash "$here/down.sh" >"$SOAK_DIR/down-0.log" 2>&1; then
    die "the first down.sh failed (see $SOAK_DIR/down-0.log)"
  fi
  if redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -qx PONG; then
    external_redis=1
    echo "soak: a Redis the harness did not start answers on port $REDIS_PORT: used, never counted as a leftover"
  fi
  problems=$(leftover_processes ""; leftover_system)
  if [[ -n $problems ]]; then
    printf '%s\n' "$problems" | sed 's/^/  /'
    die "leftovers after the first down.sh, before any round: not a clean start"
  fi
  for ((i = 1; i <= rounds; i++)); do
    up_ms=$(timed "$SOAK_DIR/up-$i.log" bash "$here/up.sh")
    up_status=$?
    recorded=$(recorded_pids)
    problems=""
    if ((up_status != 0)); then
      # A failed up must have stopped what it started: look before down.sh cleans up.
      problems=$(leftover_processes "$recorded" | sed 's/^/after the failed up: /')
    fi
    down_ms=$(timed "$SOAK_DIR/down-$i.log" bash "$here/down.sh")
    down_status=$?
    problems+=$'\n'$(leftover_processes "$recorded"; leftover_system)
    problems=$(sed '/^$/d' <<<"$problems")
    ups+=("$up_ms") downs+=("$down_ms") totals+=($((up_ms + down_ms)))
    verdict=ok
    if ((up_status != 0)); then verdict="FAILED: up.sh exited $up_status ($(grep -m1 'ERROR' "$SOAK_DIR/up-$i.log" || echo "see $SOAK_DIR/up-$i.log"))"; fi
    if ((down_status != 0)); then verdict="FAILED: down.sh exited $down_status (see $SOAK_DIR/down-$i.log)"; fi
    if [[ -n $problems ]]; then
      leftovers=$((leftovers + $(wc -l <<<"$problems")))
      [[ $verdict == ok ]] && verdict="FAILED: $(wc -l <<<"$problems") leftovers"
    fi
    [[ $verdict == ok ]] && passed=$((passed + 1))
    printf 'soak round %d/%d: up %ss, down %ss: %s\n' "$i" "$rounds" "$(secs "$up_ms")" "$(secs "$down_ms")" "$verdict"
    [[ -n $problems ]] && printf '%s\n' "$problems" | sed 's/^/  leftover: /'
  done
  echo "soak: up $(stats "${ups[@]}"); down $(stats "${downs[@]}"); round $(stats "${totals[@]}")"
  echo "soak: the cluster is down now (npm run cluster:up brings it back)"
  echo "soak: $passed of $rounds up/down rounds passed, $leftovers leftovers"
  ((passed == rounds && leftovers == 0))
}

main
