# shellcheck shell=bash
# The node agent under test (nodelet), run against the harness's cluster as the node NODE_NAME.

AGENT_ROOT=$CLUSTER_DIR/nodelet-root
# The agent's credential provider plugin (test/cluster/credential-provider/): it gives the
# registry's credentials for 127.0.0.1:5000/provided only, and logs every call here.
CREDENTIAL_PROVIDER_CONFIG=$CLUSTER_DIR/credential-providers.yaml
CREDENTIAL_PROVIDER_CALLS=$CLUSTER_DIR/credential-provider-calls.log
# Static pod manifests (the e2e static-pod test writes here and leaves it empty).
MANIFEST_DIR=$CLUSTER_DIR/manifests

# Builds and starts nodelet unless it runs already. Returns 1 (after a warning) when the agent
# does not exist yet, so the cluster can still come up without it.
agent_start() {
  if [[ ! -f $REPO_DIR/cmd/nodelet.ts ]]; then
    warn "cmd/nodelet.ts does not exist yet: the cluster runs without a node agent"
    return 1
  fi
  if daemon_pid nodelet "$AGENT_ROOT" >/dev/null; then
    :
  elif [[ ${NODELET_AGENT_PREBUILT:-0} == 1 && -f $REPO_DIR/dist/cmd/nodelet.js ]]; then
    # Fault tests that kill the agent many times restart the build an earlier up.sh made (an
    # operator's restart does not rebuild either); the build is the same, only slower.
    log "starting the agent built before (NODELET_AGENT_PREBUILT=1)"
  else
    log "building nodelet (npm run build)"
    (cd "$REPO_DIR" && npm run --silent build) || die "npm run build failed"
    agent_stamp_build
  fi
  mkdir -p "$AGENT_ROOT" "$POD_LOG_DIR" "$MANIFEST_DIR"
  write_credential_provider_config
  # NODELET_AGENT_NODE_ARGS: extra flags for node itself, for investigations only (not NODE_OPTIONS,
  # which the build and every other node process would inherit), e.g.
  # '--diagnostic-dir=/tmp/prof --cpu-prof' (a CPU profile written when the agent exits on SIGTERM)
  # or '--diagnostic-dir=/tmp/prof --heapsnapshot-signal=SIGUSR2' (a heap snapshot per SIGUSR2).
  local node_args=()
  read -r -a node_args <<<"${NODELET_AGENT_NODE_ARGS:-}"
  # --max-semi-space-size=2: the image's ENTRYPOINT runs the agent with it too (Dockerfile); see
  # "Agent CPU and memory" in docs/benchmarks.md.
  # The node's system bus is the harness's own (logind.sh): graceful node shutdown talks to the stand-in.
  start_daemon nodelet "$AGENT_ROOT" env DBUS_SYSTEM_BUS_ADDRESS="$DBUS_ADDRESS" node --max-semi-space-size=2 "${node_args[@]}" "$REPO_DIR/bin/nodelet.js" \
    --kubeconfig "$CLUSTER_DIR/kubeconfig-node" \
    --node-name "$NODE_NAME" --node-ip "$NODE_IP" \
    --cri-endpoint "unix://$CONTAINERD_SOCK" \
    --redis-url "redis://127.0.0.1:$REDIS_PORT" \
    --root-dir "$AGENT_ROOT" --pod-log-dir "$POD_LOG_DIR" \
    --allowed-unsafe-sysctls 'kernel.msgmnb' \
    --client-ca-file "$PKI_DIR/ca.crt" \
    --node-server-port "$NODE_SERVER_PORT" --enable-system-log-query \
    --tls-cert-file "$PKI_DIR/node-serving.crt" --tls-private-key-file "$PKI_DIR/node-serving.key" \
    --pod-manifest-path "$MANIFEST_DIR" \
    --image-credential-provider-config "$CREDENTIAL_PROVIDER_CONFIG" \
    --image-credential-provider-bin-dir "$REPO_DIR/test/cluster/credential-provider" \
    --shutdown-grace-period "$AGENT_SHUTDOWN_GRACE_PERIOD" --shutdown-grace-period-critical-pods "$AGENT_SHUTDOWN_GRACE_PERIOD_CRITICAL_PODS" \
    --logind-conf-dir "$LOGIND_CONF_DIR"
}

# The kubelet's CredentialProviderConfig for the test plugin: only the registry's provided/ path,
# so the pull-secret tests of private/ still see pods without credentials.
write_credential_provider_config() {
  cat >"$CREDENTIAL_PROVIDER_CONFIG" <<YAML
# Written by test/cluster/lib/agent.sh; rewritten on every start of the agent.
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: nodelet-test-registry
    matchImages: ["$REGISTRY_ADDR/provided"]
    defaultCacheDuration: 10m
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    env:
      - name: REGISTRY_CREDENTIALS_FILE
        value: $REGISTRY_DIR/credentials
      - name: CALL_LOG
        value: $CREDENTIAL_PROVIDER_CALLS
YAML
}

# What the build in dist/ was made from, for reports on the running agent (npm run conformance):
# the commit, and "+dirty" when the tree differed from it (the generated conformance doc aside).
agent_stamp_build() {
  local commit
  # shellcheck source=tree-commit.sh
  source "$(dirname "${BASH_SOURCE[0]}")/tree-commit.sh"
  commit=$(tree_commit "$REPO_DIR" 2>/dev/null) || return 0
  echo "$commit" >"$REPO_DIR/dist/BUILD_COMMIT"
}

node_ready() {
  [[ $(kubectl_admin get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}

agent_wait_ready() {
  wait_daemon nodelet "$AGENT_ROOT" "${NODELET_READY_TIMEOUT:-120}" "node $NODE_NAME to report Ready" node_ready
  log "node $NODE_NAME is Ready"
}

agent_stop() { stop_daemon nodelet "$AGENT_ROOT" 30; }
