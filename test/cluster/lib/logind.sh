# shellcheck shell=bash
# The node's system bus and logind, for graceful node shutdown: Debian's dbus-daemon on a private
# socket (test/doubles/logind/bus.conf.in) and the logind stand-in (test/doubles/logind/), which
# grants inhibitor locks and sends PrepareForShutdown when a test asks it to. The agent reaches
# them through DBUS_SYSTEM_BUS_ADDRESS and writes its logind drop-in under LOGIND_DIR, never to
# the host's /etc. Nothing here touches the machine's own D-Bus or logind.

LOGIND_DIR=$CLUSTER_DIR/logind
DBUS_SOCKET=$LOGIND_DIR/system_bus_socket
DBUS_ADDRESS=unix:path=$DBUS_SOCKET
LOGIND_CONF_DIR=$LOGIND_DIR/logind.conf.d
# The agent's graceful shutdown groups in the test cluster: 20 s for regular pods, 10 s for critical ones.
AGENT_SHUTDOWN_GRACE_PERIOD=30s
AGENT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS=10s

logind_start() {
  mkdir -p "$LOGIND_DIR"
  sed "s|@SOCKET@|$DBUS_SOCKET|g" "$REPO_DIR/test/doubles/logind/bus.conf.in" >"$LOGIND_DIR/bus.conf"
  start_daemon dbus-daemon "$LOGIND_DIR/bus.conf" dbus-daemon --config-file="$LOGIND_DIR/bus.conf" --nofork
  wait_daemon dbus-daemon "$LOGIND_DIR/bus.conf" 20 "the test system bus" test -S "$DBUS_SOCKET"
  # logind's own default delay (5 s): the agent must raise it through its drop-in.
  start_daemon logind-standin "$LOGIND_DIR/inhibit" node --import tsx "$REPO_DIR/test/doubles/logind/logind-standin.ts" \
    --bus "$DBUS_ADDRESS" --state-dir "$LOGIND_DIR/inhibit" --conf-dir "$LOGIND_CONF_DIR" --inhibit-delay-max-sec 5
  wait_daemon logind-standin "$LOGIND_DIR/inhibit" 30 "the logind stand-in" logind_ready
}

# The stand-in printed `ready` since its latest start (its log keeps earlier runs above a header).
logind_ready() {
  awk '/^==== / { ready = 0 } /^ready$/ { ready = 1 } END { exit !ready }' "$LOG_DIR/logind-standin.log"
}

logind_stop() {
  stop_daemon logind-standin "$LOGIND_DIR/inhibit" 10
  stop_daemon dbus-daemon "$LOGIND_DIR/bus.conf" 10
}
