# shellcheck shell=bash
# metrics-server (what `kubectl top` reads), as a host process on NODE_IP:METRICS_SERVER_PORT with
# its own serving certificate, registered as the aggregated API v1beta1.metrics.k8s.io through a
# Service without selector and an EndpointSlice to that address (the API server routes to
# endpoints: --enable-aggregator-routing). It authenticates to the API server and to the node
# server with its own client certificate (CN=system:metrics-server, signed by the cluster CA, which
# both trust) and verifies the node server's certificate with the cluster CA (no
# --kubelet-insecure-tls). RBAC as upstream's manifests, bound to that user.

METRICS_SERVER_MARKER=$PKI_DIR/metrics-server.crt
METRICS_SERVER_KUBECONFIG=$CLUSTER_DIR/kubeconfig-metrics-server

metrics_server_pki() {
  sign_cert ca metrics-server "/CN=metrics-server" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:metrics-server.kube-system.svc"
  sign_cert ca metrics-server-client "/CN=system:metrics-server" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  cat >"$METRICS_SERVER_KUBECONFIG" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $PKI_DIR/ca.crt
users:
- name: system:metrics-server
  user:
    client-certificate: $PKI_DIR/metrics-server-client.crt
    client-key: $PKI_DIR/metrics-server-client.key
contexts:
- name: nodelet-test
  context: {cluster: nodelet-test, user: system:metrics-server}
current-context: nodelet-test
YAML
  chmod 0600 "$METRICS_SERVER_KUBECONFIG"
}

# Upstream's RBAC (manifests/base/rbac.yaml), for the user instead of a ServiceAccount, and the
# aggregated API's registration. Applied server-side on every cluster:up (idempotent).
metrics_server_objects() {
  cat <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:aggregated-metrics-reader
  labels:
    rbac.authorization.k8s.io/aggregate-to-view: "true"
    rbac.authorization.k8s.io/aggregate-to-edit: "true"
    rbac.authorization.k8s.io/aggregate-to-admin: "true"
rules:
- apiGroups: [metrics.k8s.io]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:metrics-server
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:metrics-server
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:metrics-server}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: metrics-server:system:auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: metrics-server-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: system:metrics-server}
---
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  ports:
  - {name: https, port: 443, protocol: TCP, targetPort: $METRICS_SERVER_PORT}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels:
    kubernetes.io/service-name: metrics-server
    endpointslice.kubernetes.io/managed-by: nodelet-harness
addressType: IPv4
ports:
- {name: https, port: $METRICS_SERVER_PORT, protocol: TCP}
endpoints:
- addresses: ["$NODE_IP"]
  conditions: {ready: true}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {name: metrics-server, namespace: kube-system, port: 443}
  caBundle: $(base64 -w0 <"$PKI_DIR/ca.crt")
YAML
}

metrics_server_ready() {
  # The storage check waits for two scrapes of a node with pods; the cluster may have no pod at
  # all, so readiness here is: serving, informers synced, delegated authentication loaded.
  curl -fsS --cacert "$PKI_DIR/ca.crt" \
    "https://$NODE_IP:$METRICS_SERVER_PORT/readyz?exclude=metric-storage-ready"
}

metrics_server_available() {
  [[ $(kubectl_admin get apiservice v1beta1.metrics.k8s.io \
    -o jsonpath='{.status.conditions[?(@.type=="Available")].status}' 2>/dev/null) == True ]]
}

metrics_server_start() {
  metrics_server_pki
  kubectl_admin apply --server-side --force-conflicts --field-manager nodelet-harness -f - \
    < <(metrics_server_objects) >/dev/null || die "applying metrics-server's objects failed"
  local args=(metrics-server \
    --kubeconfig "$METRICS_SERVER_KUBECONFIG" \
    --authentication-kubeconfig "$METRICS_SERVER_KUBECONFIG" \
    --authorization-kubeconfig "$METRICS_SERVER_KUBECONFIG" \
    --bind-address "$NODE_IP" --secure-port "$METRICS_SERVER_PORT" \
    --tls-cert-file "$PKI_DIR/metrics-server.crt" --tls-private-key-file "$PKI_DIR/metrics-server.key" \
    --kubelet-preferred-address-types InternalIP --kubelet-port "$NODE_SERVER_PORT" \
    --kubelet-certificate-authority "$PKI_DIR/ca.crt" \
    --kubelet-client-certificate "$PKI_DIR/metrics-server-client.crt" \
    --kubelet-client-key "$PKI_DIR/metrics-server-client.key" \
    --metric-resolution 15s --profiling=false --v=1)
  restart_if_changed metrics-server "$METRICS_SERVER_MARKER" "${args[@]}"
  start_daemon metrics-server "$METRICS_SERVER_MARKER" "${args[@]}"
  wait_daemon metrics-server "$METRICS_SERVER_MARKER" 60 "metrics-server's /readyz" metrics_server_ready
  wait_for 60 "the APIService v1beta1.metrics.k8s.io to be Available" metrics_server_available \
    || die "v1beta1.metrics.k8s.io not Available (see $LOG_DIR/kube-apiserver.log)"
}

# Also unregisters the API when the API server still answers (down.sh --keep-state): an APIService
# nobody serves makes discovery fail, and the namespace controller then cannot finish deleting
# any namespace.
metrics_server_stop() {
  if daemon_pid kube-apiserver "$PKI_DIR/apiserver.crt" >/dev/null; then
    kubectl_admin delete apiservice v1beta1.metrics.k8s.io --ignore-not-found --request-timeout 10s \
      >/dev/null 2>&1 || warn "could not delete the APIService v1beta1.metrics.k8s.io"
  fi
  stop_daemon metrics-server "$METRICS_SERVER_MARKER"
}
