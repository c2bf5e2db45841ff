#!/usr/bin/env bash
# Runs the kubelet (the same Kubernetes version as the cluster, built from the same Go modules) as
# a second node of the running test cluster, <host>-kubelet, on its own containerd: the reference
# the benchmark compares nodelet with (npm run kubelet:up; bench/run.sh calls it). Needs the test
# cluster up (npm run cluster:up). Idempotent: what runs already is kept. A run that fails removes
# everything again (kubelet-down.sh).
#
# Keep it out of `npm test`: a second Ready node changes what the e2e suites see. kubelet-down.sh
# (npm run kubelet:down; also called by cluster:down) removes it with all it made.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for lib in common network containerd kubelet; do
  # shellcheck source=/dev/null
  source "$here/lib/$lib.sh"
done

KUBELET_BIN=$KUBELET_DIR/bin/kubelet

# Host directories the kubelet writes outside its root dir: the ones that do not exist yet are
# noted (once, before its first start), so kubelet-down removes exactly those.
note_host_dirs() {
  [[ -f $KUBELET_CREATED_HOST_DIRS ]] && return 0
  local dir
  for dir in "${KUBELET_HOST_DIRS[@]}"; do [[ -e $dir ]] || echo "$dir"; done >"$KUBELET_CREATED_HOST_DIRS"
}

# The sysctls the kubelet rewrites at start, saved once before its first start (a second
# kubelet:up must not save the values the running kubelet set).
save_sysctls() {
  [[ -f $KUBELET_SAVED_SYSCTLS ]] && return 0
  local name value
  for name in "${KUBELET_SYSCTLS[@]}"; do
    value=$(sysctl -n "$name" 2>/dev/null) || continue
    printf '%s=%s\n' "$name" "$value"
  done >"$KUBELET_SAVED_SYSCTLS.tmp"
  mv "$KUBELET_SAVED_SYSCTLS.tmp" "$KUBELET_SAVED_SYSCTLS"
}

kubelet_network_up() {
  local ipt
  if ! ip link show "$KUBELET_HOST_IF" >/dev/null 2>&1; then
    ip link add "$KUBELET_HOST_IF" type dummy 2>/dev/null || ip link add "$KUBELET_HOST_IF" type ifb
  fi
  ip addr replace "$KUBELET_NODE_IP/32" dev "$KUBELET_HOST_IF"
  ip link set "$KUBELET_HOST_IF" up
  bridge_up "$KUBELET_BRIDGE" "$KUBELET_POD_GATEWAY"
  # Traffic from its pods stays on its bridge or goes to this host; never forwarded elsewhere.
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    # shellcheck disable=SC2046  # the rule is a list of words
    "$ipt" -C $(kubelet_fw_rule) 2>/dev/null || "$ipt" -I $(kubelet_fw_rule)
  done
  write_cni_config "$KUBELET_CNI_CONF_DIR/10-nodelet-kubelet.conflist" "$KUBELET_CNI_IPAM_DIR" "$KUBELET_CNI_NETWORK" \
    "$KUBELET_BRIDGE" "$KUBELET_POD_CIDR" "$KUBELET_POD_GATEWAY"
}

# The kubelet refuses to start unless its cgroup root exists in every hierarchy.
make_cgroup_root() {
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [[ $hierarchy == */unified/ ]] && continue
    mkdir -p "$hierarchy${KUBELET_CGROUP_ROOT#/}"
  done
}

containerd_up() {
  write_containerd_config
  start_daemon kubelet-containerd "$CONTAINERD_CONFIG" "$BIN_DIR/containerd" --config "$CONTAINERD_CONFIG"
  wait_daemon kubelet-containerd "$CONTAINERD_CONFIG" 60 "the kubelet's containerd to answer" crictl_cmd info
  wait_daemon kubelet-containerd "$CONTAINERD_CONFIG" 30 "the kubelet's containerd to be ready" containerd_ready
  containerd_import_images
  containerd_check_pull_sink
}

csr_issued() { [[ -n $(kubectl_admin get csr "$1" -o jsonpath='{.status.certificate}' 2>/dev/null) ]]; }

# Its client certificate (system:node:<name> in system:nodes), issued through the
# CertificateSigningRequest API as a kubelet's bootstrap gets it: signer
# kubernetes.io/kube-apiserver-client-kubelet, approved here by the admin, signed by the
# controller manager with the cluster CA. Its serving certificate is signed by the harness CA
# directly (IP SAN: its node address), as nodelet's is.
make_certs() {
  local dir=$KUBELET_CERT_DIR csr
  mkdir -p "$dir" && chmod 0700 "$dir"
  if [[ ! -s $dir/client.crt ]]; then
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/client.key" \
      -subj "/O=system:nodes/CN=system:node:$KUBELET_NODE_NAME" -out "$dir/client.csr" 2>/dev/null
    csr=nodelet-kubelet-client-$(date +%s)
    kubectl_admin create -f - >/dev/null <<YAML
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: $csr
spec:
  request: $(base64 -w0 <"$dir/client.csr")
  signerName: kubernetes.io/kube-apiserver-client-kubelet
  usages: [digital signature, client auth]
YAML
    kubectl_admin certificate approve "$csr" >/dev/null
    wait_for 60 "CSR $csr to be signed" csr_issued "$csr" || die "CSR $csr was not signed"
    kubectl_admin get csr "$csr" -o jsonpath='{.status.certificate}' | base64 -d >"$dir/client.crt"
    kubectl_admin delete csr "$csr" >/dev/null
    rm -f "$dir/client.csr"
    log "client certificate for system:node:$KUBELET_NODE_NAME issued through the CSR API"
  fi
  if [[ ! -s $dir/serving.crt ]]; then
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/serving.key" \
      -subj "/O=system:nodes/CN=system:node:$KUBELET_NODE_NAME" -out "$dir/serving.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:%s,DNS:%s\n' \
      "$KUBELET_NODE_IP" "$KUBELET_NODE_NAME" >"$dir/serving.ext"
    openssl x509 -req -in "$dir/serving.csr" -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" -CAcreateserial \
      -CAserial "$dir/ca.srl" -days 30 -sha256 -extfile "$dir/serving.ext" -out "$dir/serving.crt" 2>/dev/null
    rm -f "$dir/serving.csr"
  fi
}

write_kubelet_files() {
  cat >"$KUBELET_KUBECONFIG" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: https://$NODE_IP:$APISERVER_PORT
    certificate-authority: $PKI_DIR/ca.crt
users:
- name: system:node:$KUBELET_NODE_NAME
  user:
    client-certificate: $KUBELET_CERT_DIR/client.crt
    client-key: $KUBELET_CERT_DIR/client.key
contexts:
- name: nodelet-test
  context: {cluster: nodelet-test, user: "system:node:$KUBELET_NODE_NAME"}
current-context: nodelet-test
YAML
  chmod 0600 "$KUBELET_KUBECONFIG"
  # The limits of nodelet's node: maxPods 110 and the kubelet's default eviction thresholds (which
  # nodelet's defaults copy). Everything it would write outside KUBELET_DIR is pointed inside.
  cat >"$KUBELET_CONFIG" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 on this machine: refused without it.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $KUBELET_CGROUP_ROOT
containerRuntimeEndpoint: unix://$KUBELET_CONTAINERD_SOCK
imageServiceEndpoint: unix://$KUBELET_CONTAINERD_SOCK
# Its container GC deletes the log dirs it does not know in here: never nodelet's /var/log/pods.
podLogsDir: $KUBELET_POD_LOGS
# Static pods, as nodelet's node has them (.cluster/manifests): the node conformance suite's mirror
# pod tests write their manifests into the directory /configz names.
staticPodPath: $KUBELET_DIR/manifests
volumePluginDir: $KUBELET_DIR/volume-plugins
address: $KUBELET_NODE_IP
port: $NODE_SERVER_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $KUBELET_CERT_DIR/serving.crt
tlsPrivateKeyFile: $KUBELET_CERT_DIR/serving.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI_DIR/ca.crt}
authorization:
  mode: Webhook
clusterDNS: [$KUBELET_CLUSTER_DNS]
clusterDomain: cluster.local
maxPods: 110
failSwapOn: false
# Otherwise it adds KUBE-FIREWALL jumps to INPUT and OUTPUT.
makeIPTablesUtilChains: false
registerWithTaints:
- {key: $KUBELET_TAINT_KEY, value: "true", effect: NoSchedule}
YAML
}

kubelet_healthy() { curl -fsS "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"; }

kubelet_node_ready() {
  [[ $(kubectl_admin get node "$KUBELET_NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

kubelet_start() {
  if daemon_pid kubelet "$KUBELET_CONFIG" >/dev/null; then
    log "kubelet already running"
  else
    # A Node object left from an earlier run keeps its old Ready condition until the new process
    # syncs: remove it, so Ready below is this process's.
    kubectl_admin delete node "$KUBELET_NODE_NAME" --ignore-not-found >/dev/null
    start_daemon kubelet "$KUBELET_CONFIG" "$KUBELET_BIN" --config "$KUBELET_CONFIG" \
      --kubeconfig "$KUBELET_KUBECONFIG" --hostname-override "$KUBELET_NODE_NAME" \
      --node-ip "$KUBELET_NODE_IP" --root-dir "$KUBELET_ROOT" --cert-dir "$KUBELET_CERT_DIR"
  fi
  wait_daemon kubelet "$KUBELET_CONFIG" 120 "the kubelet's /healthz" kubelet_healthy
  wait_daemon kubelet "$KUBELET_CONFIG" 120 "node $KUBELET_NODE_NAME to report Ready" kubelet_node_ready
}

write_kubelet_env() {
  cat >"$KUBELET_ENV" <<ENV
# Written by test/cluster/kubelet-up.sh: the kubelet node beside nodelet's (bench/run.sh sources it).
export KUBELET_NODE_NAME='$KUBELET_NODE_NAME'
export KUBELET_CRI_ENDPOINT='unix://$KUBELET_CONTAINERD_SOCK'
export KUBELET_PID_FILE='$(pid_file kubelet)'
export KUBELET_CLUSTER_DNS='$KUBELET_CLUSTER_DNS'
ENV
}

on_exit() {
  local status=$1
  trap - EXIT INT TERM HUP
  if ((status != 0)); then
    warn "kubelet:up failed: removing what it made (kubelet-down.sh); logs were in $KUBELET_LOG_DIR:"
    tail -n 20 "$KUBELET_LOG_DIR/kubelet.log" >&2 2>/dev/null || true
    bash "$here/kubelet-down.sh" || true
  fi
  exit "$status"
}

main() {
  [[ $(id -u) == 0 ]] || die "the kubelet node needs root"
  [[ -f $CLUSTER_DIR/kubeconfig ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1 ||
    die "the test cluster is not up (npm run cluster:up)"
  mkdir -p "$KUBELET_DIR" "$KUBELET_ROOT" "$KUBELET_POD_LOGS" "$KUBELET_LOG_DIR" "$KUBELET_DIR/bin" "$KUBELET_DIR/manifests"
  trap 'on_exit $?' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
  bash "$HARNESS_DIR/build-binaries.sh" --kubelet "$KUBELET_DIR/bin"
  note_host_dirs
  save_sysctls
  kubelet_network_up
  make_cgroup_root
  with_kubelet_containerd containerd_up
  make_certs
  write_kubelet_files
  LOG_DIR=$KUBELET_LOG_DIR kubelet_start
  write_kubelet_env
  log "node $KUBELET_NODE_NAME ($KUBELET_NODE_IP) is Ready: the kubelet on unix://$KUBELET_CONTAINERD_SOCK, pods $KUBELET_POD_CIDR on $KUBELET_BRIDGE (npm run kubelet:down removes it)"
}

main
