# shellcheck shell=bash
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and Redis, each a detached process
# with its pid and log under the cluster dir. Liveness is by pid and start time, readiness by each
# daemon's own health answer (see common.sh). The markers (a path of the cluster dir each command
# line names; for Redis, which rewrites its title, its address) only serve pid files written by an
# older harness.

REDIS_MARKER="redis-server 127.0.0.1:$REDIS_PORT"

etcd_start() {
  mkdir -p "$CLUSTER_DIR/etcd"
  chmod 0700 "$CLUSTER_DIR/etcd"
  # --unsafe-no-fsync: a throwaway test store; the page cache survives a crash of etcd itself.
  start_daemon etcd "$CLUSTER_DIR/etcd" etcd --name nodelet-test \
    --data-dir "$CLUSTER_DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "nodelet-test=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync --quota-backend-bytes 2147483648 --log-level warn
  wait_daemon etcd "$CLUSTER_DIR/etcd" 60 "etcd to report healthy" \
    curl -fsS "http://127.0.0.1:$ETCD_CLIENT_PORT/health"
}

# The API server verifies the node server's certificate (--kubelet-certificate-authority: the
# cluster CA signs the agent's node-serving certificate) and reaches aggregated APIs at their
# endpoints (--enable-aggregator-routing: there is no kube-proxy, the service range is blackholed).
apiserver_start() {
  local args=(kube-apiserver \
    --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
    --advertise-address "$NODE_IP" --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$PKI_DIR/apiserver.crt" --tls-private-key-file "$PKI_DIR/apiserver.key" \
    --client-ca-file "$PKI_DIR/ca.crt" \
    --token-auth-file "$PKI_DIR/tokens.csv" \
    --authorization-mode Node,RBAC \
    --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI_DIR/sa.pub" \
    --service-account-signing-key-file "$PKI_DIR/sa.key" \
    --kubelet-client-certificate "$PKI_DIR/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI_DIR/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --kubelet-certificate-authority "$PKI_DIR/ca.crt" \
    --enable-aggregator-routing=true \
    --requestheader-client-ca-file "$PKI_DIR/front-proxy-ca.crt" \
    --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI_DIR/front-proxy-client.crt" \
    --proxy-client-key-file "$PKI_DIR/front-proxy-client.key" \
    --allow-privileged=true --profiling=false \
    --endpoint-reconciler-type lease \
    --v=1)
  restart_if_changed kube-apiserver "$PKI_DIR/apiserver.crt" "${args[@]}"
  start_daemon kube-apiserver "$PKI_DIR/apiserver.crt" "${args[@]}"
  wait_daemon kube-apiserver "$PKI_DIR/apiserver.crt" 180 "the API server's /readyz" \
    kubectl_admin get --raw /readyz
}

# The signer issues CSR certificates for a year, or for NODELET_CLUSTER_SIGNING_DURATION (e.g. 10m:
# npm run test:rotation watches the chart's agent renew and outlive its certificates).
controller_manager_start() {
  local kubeconfig=$CLUSTER_DIR/kubeconfig-controller-manager
  start_daemon kube-controller-manager "$kubeconfig" kube-controller-manager \
    --kubeconfig "$kubeconfig" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$CONTROLLER_MANAGER_PORT" \
    --leader-elect=false \
    --controllers '*,-nodeipam' --allocate-node-cidrs=false \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$PKI_DIR/sa.key" \
    --root-ca-file "$PKI_DIR/ca.crt" \
    --cluster-signing-cert-file "$PKI_DIR/ca.crt" --cluster-signing-key-file "$PKI_DIR/ca.key" \
    --cluster-signing-duration "${NODELET_CLUSTER_SIGNING_DURATION:-8760h}" \
    --profiling=false --v=1
  wait_daemon kube-controller-manager "$kubeconfig" 60 "kube-controller-manager's /healthz" \
    curl -fsSk "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
}

scheduler_start() {
  local kubeconfig=$CLUSTER_DIR/kubeconfig-scheduler
  start_daemon kube-scheduler "$kubeconfig" kube-scheduler \
    --kubeconfig "$kubeconfig" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" \
    --leader-elect=false --profiling=false --v=1
  wait_daemon kube-scheduler "$kubeconfig" 60 "kube-scheduler's /healthz" \
    curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

redis_ping() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -qx PONG; }

# Another process may already serve Redis on the port (e.g. started by hand for queue tests): it
# is used as is, and never stopped by cluster:down, since the harness did not start it.
redis_start() {
  if ! daemon_pid redis "$REDIS_MARKER" >/dev/null && redis_ping; then
    warn "a Redis not started by the harness already answers on 127.0.0.1:$REDIS_PORT: using it"
    return 0
  fi
  mkdir -p "$CLUSTER_DIR/redis"
  start_daemon redis "$REDIS_MARKER" redis-server --bind 127.0.0.1 --port "$REDIS_PORT" \
    --save '' --appendonly no --protected-mode yes --dir "$CLUSTER_DIR/redis" --daemonize no
  wait_daemon redis "$REDIS_MARKER" 20 "Redis to answer PING" redis_ping
}

control_plane_stop() {
  stop_daemon kube-scheduler "$CLUSTER_DIR/kubeconfig-scheduler"
  stop_daemon kube-controller-manager "$CLUSTER_DIR/kubeconfig-controller-manager"
  stop_daemon kube-apiserver "$PKI_DIR/apiserver.crt" 30
  stop_daemon etcd "$CLUSTER_DIR/etcd"
  stop_daemon redis "$REDIS_MARKER"
}
