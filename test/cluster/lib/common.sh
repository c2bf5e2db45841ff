# shellcheck shell=bash disable=SC2034  # settings used by the files that source this one
# Settings and helpers shared by up.sh, down.sh and status.sh. Sourced, never run.
#
# Everything the harness creates is named `nodelet*` (interfaces, iptables comment) or lives under
# CLUSTER_DIR (default <repo>/.cluster), so teardown can find exactly what is ours.

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$HARNESS_DIR/../.." && pwd)
CLUSTER_DIR=${NODELET_CLUSTER_DIR:-$REPO_DIR/.cluster}
CACHE_DIR=${NODELET_CACHE:-$HOME/.cache/nodelet}
export NODELET_CACHE=$CACHE_DIR

# Addresses. The node's InternalIP lives on a dummy interface so it is stable and never routable
# off the machine; pods live on a bridge whose forwarded traffic is dropped (see network.sh).
NODE_IP=10.213.0.1
HOST_IF=nodelet-host0
BRIDGE=nodelet0
POD_CIDR=10.214.0.0/24
POD_GATEWAY=10.214.0.1
# The self-hosted node (test/selfhosted: nodelet installed by its chart, its own containerd inside
# the DaemonSet's pod): its pods live on a second bridge and /24 the harness makes, with the same
# firewall rule, handed to the chart as runtime.cni.bridge/subnet.
SELF_BRIDGE=nodelet1
SELF_POD_CIDR=10.216.0.0/24
SELF_POD_GATEWAY=10.216.0.1
SERVICE_CIDR=10.215.0.0/24
FIRST_SERVICE_IP=10.215.0.1
FW_COMMENT=nodelet-harness
CNI_NETWORK=nodelet

# Ports, all on loopback except the API server (loopback and NODE_IP).
APISERVER_PORT=6443
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380
REDIS_PORT=16379
CONTROLLER_MANAGER_PORT=10257
SCHEDULER_PORT=10259
# On NODE_IP: the node agent's server (the kubelet's port) and metrics-server (an aggregated API the
# API server reaches at that address, as it would reach a metrics-server pod).
NODE_SERVER_PORT=10250
METRICS_SERVER_PORT=4443

NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}

BIN_DIR=$CLUSTER_DIR/bin
PID_DIR=$CLUSTER_DIR/pids
LOG_DIR=$CLUSTER_DIR/logs
PKI_DIR=$CLUSTER_DIR/pki
CNI_CONF_DIR=$CLUSTER_DIR/cni/net.d
CNI_IPAM_DIR=$CLUSTER_DIR/cni/ipam
CONTAINERD_DIR=$CLUSTER_DIR/containerd
POD_LOG_DIR=/var/log/pods

# containerd's state dir holds unix sockets; a unix socket path must fit in 108 bytes, so when the
# cluster dir is deep the state moves to a short directory under /run named by the cluster dir.
containerd_state_dir() {
  local state=$CONTAINERD_DIR/state
  if ((${#state} > 60)); then
    state=/run/nodelet-cluster/$(printf '%s' "$CLUSTER_DIR" | sha256sum | cut -c1-12)/state
  fi
  echo "$state"
}
CONTAINERD_STATE=$(containerd_state_dir)
CONTAINERD_ROOT=$CONTAINERD_DIR/root
CONTAINERD_SOCK=$CONTAINERD_STATE/containerd.sock
CONTAINERD_CONFIG=$CONTAINERD_DIR/config.toml

export PATH="$BIN_DIR:$PATH"

log() { printf '[cluster] %s\n' "$*" >&2; }
warn() { printf '[cluster] WARNING: %s\n' "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

# Runs a command until it succeeds or the timeout (seconds) passes. Usage: wait_for 30 desc cmd...
wait_for() {
  local timeout=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      warn "timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.5
  done
}

# Like wait_for, for a daemon the harness started: readiness is the daemon's own answer (the
# command, e.g. its health endpoint), liveness is its pid (daemon_pid); gives up at once (showing
# its log) if the daemon exits. Usage: wait_daemon NAME MARKER TIMEOUT DESC cmd...
wait_daemon() {
  local name=$1 marker=$2 timeout=$3 what=$4 deadline
  shift 4
  deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    daemon_pid "$name" "$marker" >/dev/null || fail_with_log "$name" "$name exited before $what"
    ((SECONDS < deadline)) || fail_with_log "$name" "timed out after ${timeout}s waiting for $what"
    sleep 0.5
  done
  # Something else may have answered (a leftover on the port) while ours failed to bind and exited.
  daemon_pid "$name" "$marker" >/dev/null || fail_with_log "$name" "$name exited before $what"
}

pid_file() { echo "$PID_DIR/$1.pid"; }
# Beside each pid file, the identity of that process (see proc_identity), as "<pid> <identity>".
# A file of its own, so the pid file stays a single number for the readers of it outside this
# directory (test/faults/harness.ts, test/test-all.sh, `kill -0 "$(cat <name>.pid)"`).
start_file() { echo "$PID_DIR/$1.start"; }
# Beside them, a digest of the command line the daemon was started with (see restart_if_changed).
args_file() { echo "$PID_DIR/$1.args"; }
args_digest() { printf '%s\0' "$@" | sha256sum | cut -c1-16; }

# True while a process exists and has not exited: a zombie (exited, not yet reaped by whoever
# adopted it) counts as gone.
alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $state && $state != Z ]]
}

# Prints what identifies a process for as long as it lives: the boot it runs in and its start
# time (field 22 of /proc/<pid>/stat, clock ticks since boot). Unlike its command line or
# executable, neither changes from fork to exit: not while the spawned shell is still on its way
# to exec the daemon (setsid, nohup), not when the daemon retitles itself (redis-server), and
# redis-server's /proc/<pid>/exe is redis-check-rdb on Debian anyway. A recycled pid has another
# start time; after a reboot, another boot id.
proc_identity() {
  local stat boot
  { read -r stat <"/proc/$1/stat" && read -r boot </proc/sys/kernel/random/boot_id; } 2>/dev/null || return 1
  # The command name (field 2) may hold spaces and parentheses: count from the last ") ", where
  # field 3 (the state) begins; field 22 is then the 20th word.
  stat=${stat##*) }
  # shellcheck disable=SC2086  # the fields are words
  set -- $stat
  (($# >= 20)) || return 1
  echo "$boot ${20}"
}

# Prints the pid of a harness daemon if its pid file names a live process that is the one the
# harness started: same start time and boot (so a recycled pid is never mistaken for ours, and a
# daemon still on its way through setsid/nohup to exec counts as alive). A pid file without a
# matching start file (written by an older harness, or by hand) falls back to the old check: the
# daemon's command line contains MARKER (a process started long ago has exec'd and retitled).
daemon_pid() {
  local name=$1 marker=$2 pid recorded identity
  [[ -f $(pid_file "$name") ]] || return 1
  { read -r pid <"$(pid_file "$name")"; } 2>/dev/null || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  if { read -r recorded <"$(start_file "$name")"; } 2>/dev/null && [[ ${recorded%% *} == "$pid" ]]; then
    identity=$(proc_identity "$pid") || return 1
    [[ ${recorded#* } == "$identity" ]] || return 1
  else
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$marker" || return 1
  fi
  echo "$pid"
}

# Closes every open descriptor of this (sub)shell but stdin, stdout and stderr.
close_inherited_fds() {
  local fd
  for fd in /proc/"$BASHPID"/fd/*; do
    fd=${fd##*/}
    if [[ $fd =~ ^[0-9]+$ ]] && ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

# Daemons this shell started (start_daemon), in order, with their markers: what a failed
# cluster:up stops again (see up.sh), and nothing else.
STARTED_NAMES=()
STARTED_MARKERS=()

# Starts a daemon detached from this shell (own session, stdin closed) unless it already runs,
# and records its pid and identity. Usage: start_daemon NAME MARKER cmd...
# (MARKER: a string its command line contains once it runs; only read for old pid files.)
start_daemon() {
  local name=$1 marker=$2 pid identity
  shift 2
  if pid=$(daemon_pid "$name" "$marker"); then
    log "$name already running (pid $pid)"
    return 0
  fi
  mkdir -p "$PID_DIR" "$LOG_DIR"
  printf '\n==== %s starting: %s\n' "$(date -Is)" "$*" >>"$LOG_DIR/$name.log"
  # The background subshell closes every descriptor it inherited beyond 0-2 (a caller's lock, e.g.
  # `flock` or with-cluster.sh's fd 9, would otherwise be held by the daemon for its whole life),
  # then execs in place. In a non-interactive shell the job is not a process group leader, so
  # setsid calls setsid() and execs in place, and so does nohup: $! is the daemon's own pid from
  # fork to exit.
  (
    close_inherited_fds
    exec setsid nohup "$@" </dev/null >>"$LOG_DIR/$name.log" 2>&1
  ) &
  pid=$!
  # Read at once: the start time is the fork's, the same before and after the exec. If the process
  # is gone already, record an identity nothing matches, so it counts as dead.
  identity=$(proc_identity "$pid") || identity="gone"
  STARTED_NAMES+=("$name")
  STARTED_MARKERS+=("$marker")
  echo "$pid $identity" >"$(start_file "$name")"
  args_digest "$@" >"$(args_file "$name")"
  echo "$pid" >"$(pid_file "$name")"
  log "$name started (pid $pid, log $LOG_DIR/$name.log)"
}

# Stops a daemon by its pid file: TERM, up to `grace` seconds, then KILL (until it is gone).
# Removes the pid file.
stop_daemon() {
  local name=$1 marker=$2 grace=${3:-15} pid deadline
  if pid=$(daemon_pid "$name" "$marker"); then
    log "stopping $name (pid $pid)"
    local started=$SECONDS
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + grace))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    if alive "$pid"; then
      warn "$name did not stop in ${grace}s, killing it"
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$((SECONDS + 10))
      while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
    fi
    log "$name stopped ($((SECONDS - started))s)"
  fi
  rm -f "$(pid_file "$name")" "$(start_file "$name")" "$(args_file "$name")"
}

# Stops a running daemon whose command line is not the one given (another harness version started
# it with other flags, or none was recorded), so that start_daemon then starts it as this harness
# wants. For daemons whose restart costs little (the API server); not for containerd or nodelet.
# Usage: restart_if_changed NAME MARKER cmd...
restart_if_changed() {
  local name=$1 marker=$2 recorded=""
  shift 2
  daemon_pid "$name" "$marker" >/dev/null || return 0
  { read -r recorded <"$(args_file "$name")"; } 2>/dev/null || true
  [[ $recorded == "$(args_digest "$@")" ]] && return 0
  log "$name runs with other flags than this harness gives it: restarting it"
  # A short grace: the API server's graceful termination can hang on open long-running requests
  # for more than 30 s, and killing it loses nothing (its state is etcd's).
  stop_daemon "$name" "$marker" 10
}

# Fails with the tail of a daemon's log: for use when it did not come up.
fail_with_log() {
  local name=$1 what=$2
  warn "last lines of $LOG_DIR/$name.log:"
  tail -n 30 "$LOG_DIR/$name.log" >&2 || true
  die "$what"
}

crictl_cmd() { crictl --runtime-endpoint "unix://$CONTAINERD_SOCK" --timeout 10s "$@"; }
ctr_cmd() { ctr --address "$CONTAINERD_SOCK" --namespace k8s.io "$@"; }
kubectl_admin() { kubectl --kubeconfig "$CLUSTER_DIR/kubeconfig" "$@"; }
