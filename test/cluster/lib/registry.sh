# shellcheck shell=bash
# The harness's private image registry: Debian's docker-registry (distribution 2.8) listening on
# 127.0.0.1:5000 only, requiring basic auth (htpasswd, bcrypt), its storage under the cluster dir.
#
# containerd sends pulls of 127.0.0.1:5000/... images to it over plain http
# (certs.d/127.0.0.1:5000/hosts.toml; containerd reads hosts.toml on every pull, so no restart is
# needed); every other registry still resolves to the closed pull sink (see containerd.sh).
#
# The local busybox image is pushed as $REGISTRY_ADDR/private/busybox:1.35 and :latest, with a
# label that makes it an image of its own (its own ID, the same layers): CRI RemoveImage removes
# every name of an image ID, so a test removing the private image must not take
# docker.io/library/busybox with it. The credentials (user:password, random per cluster) are in
# $REGISTRY_DIR/credentials.

REGISTRY_ADDR=127.0.0.1:5000
REGISTRY_DIR=$CLUSTER_DIR/registry
REGISTRY_CONFIG=$REGISTRY_DIR/config.yml
REGISTRY_USER=nodelet
REGISTRY_IMAGES=("$REGISTRY_ADDR/private/busybox:1.35" "$REGISTRY_ADDR/private/busybox:latest")
# The same busybox once more, another image of its own, under the path the agent's credential
# provider plugin serves (agent.sh): pods pull it with the plugin's credentials, not a secret.
REGISTRY_PROVIDED_IMAGE=$REGISTRY_ADDR/provided/busybox:1.35

# The registry's credentials and htpasswd file, made once per cluster.
write_registry_auth() {
  mkdir -p "$REGISTRY_DIR/data"
  chmod 0700 "$REGISTRY_DIR"
  if [[ ! -s $REGISTRY_DIR/credentials || ! -s $REGISTRY_DIR/htpasswd ]]; then
    local password
    password=$(openssl rand -hex 16)
    (umask 077 && printf '%s:%s\n' "$REGISTRY_USER" "$password" >"$REGISTRY_DIR/credentials")
    # -i: the password from stdin, not the command line.
    printf '%s\n' "$password" | htpasswd -B -i -n "$REGISTRY_USER" >"$REGISTRY_DIR/htpasswd.new"
    mv "$REGISTRY_DIR/htpasswd.new" "$REGISTRY_DIR/htpasswd"
  fi
  if [[ ! -s $REGISTRY_DIR/http-secret ]]; then
    (umask 077 && openssl rand -hex 32 >"$REGISTRY_DIR/http-secret")
  fi
}

write_registry_config() {
  cat >"$REGISTRY_CONFIG" <<YAML
# Written by test/cluster/lib/registry.sh; rewritten on every cluster:up.
version: 0.1
log:
  level: info
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REGISTRY_ADDR
  secret: $(<"$REGISTRY_DIR/http-secret")
  headers:
    X-Content-Type-Options: [nosniff]
auth:
  htpasswd:
    realm: nodelet-test-registry
    path: $REGISTRY_DIR/htpasswd
YAML
}

# Pulls of 127.0.0.1:5000/... go to the registry itself, over plain http.
write_registry_hosts_toml() {
  local dir=$CONTAINERD_DIR/certs.d/$REGISTRY_ADDR
  mkdir -p "$dir"
  cat >"$dir/hosts.toml" <<TOML
# Written by test/cluster/lib/registry.sh: the harness's own registry, plain http on loopback.
server = "http://$REGISTRY_ADDR"

[host."http://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve"]
TOML
}

# The registry answers and refuses anonymous requests (HTTP 401 on /v2/).
registry_requires_auth() {
  [[ $(curl -sS --noproxy '*' --max-time 5 -o /dev/null -w '%{http_code}' "http://$REGISTRY_ADDR/v2/") == 401 ]]
}

registry_start() {
  write_registry_auth
  write_registry_config
  write_registry_hosts_toml
  start_daemon registry "$REGISTRY_CONFIG" docker-registry serve "$REGISTRY_CONFIG"
  wait_daemon registry "$REGISTRY_CONFIG" 30 "the registry to answer on $REGISTRY_ADDR" registry_requires_auth
  bash "$REPO_DIR/test/images/push.sh" --credentials "$REGISTRY_DIR/credentials" \
    --label dev.nodelet.test.registry=private busybox "${REGISTRY_IMAGES[@]}"
  bash "$REPO_DIR/test/images/push.sh" --credentials "$REGISTRY_DIR/credentials" \
    --label dev.nodelet.test.registry=provided busybox "$REGISTRY_PROVIDED_IMAGE"
}

registry_stop() {
  stop_daemon registry "$REGISTRY_CONFIG"
}
