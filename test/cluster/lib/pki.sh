# shellcheck shell=bash
# Credentials of the test cluster: a self-made CA, the API server's serving and kubelet-client
# certificates, service-account keys, static bearer tokens and one kubeconfig per client.
# Made once per cluster dir and kept while it exists (so a re-run of up keeps every credential).

# Makes a self-signed CA unless it exists. Usage: make_ca NAME COMMON_NAME
make_ca() {
  local name=$1 cn=$2
  [[ -f $PKI_DIR/$name.crt ]] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -keyout "$PKI_DIR/$name.key" -out "$PKI_DIR/$name.crt" -subj "/CN=$cn" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# Signs a certificate with one of our CAs. Usage: sign_cert CA NAME SUBJECT EXT_LINES
sign_cert() {
  local ca=$1 name=$2 subject=$3 ext=$4
  [[ -f $PKI_DIR/$name.crt ]] && return 0
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI_DIR/$name.key" -subj "$subject" -out "$PKI_DIR/$name.csr" 2>/dev/null
  printf '%b\n' "$ext" >"$PKI_DIR/$name.ext"
  openssl x509 -req -in "$PKI_DIR/$name.csr" -CA "$PKI_DIR/$ca.crt" -CAkey "$PKI_DIR/$ca.key" \
    -CAcreateserial -days 3650 -sha256 -extfile "$PKI_DIR/$name.ext" -out "$PKI_DIR/$name.crt" 2>/dev/null
  rm -f "$PKI_DIR/$name.csr"
}

make_pki() {
  mkdir -p "$PKI_DIR"
  chmod 0700 "$PKI_DIR"
  make_ca ca nodelet-test-cluster-ca
  # The request-header (front proxy) CA: the API server trusts it for aggregated APIs, and the
  # controller manager and scheduler read it when they authenticate delegated requests.
  make_ca front-proxy-ca nodelet-test-front-proxy-ca
  sign_cert front-proxy-ca front-proxy-client "/CN=front-proxy-client" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  sign_cert ca apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,IP:127.0.0.1,IP:$FIRST_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # Presented by the API server to the node's server (logs, exec, port-forward).
  sign_cert ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  # A serving certificate for the node agent's own server, should it serve one.
  sign_cert ca node-serving "/O=system:nodes/CN=system:node:$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:$NODE_NAME"
  if [[ ! -f $PKI_DIR/sa.key ]]; then
    openssl genrsa -out "$PKI_DIR/sa.key" 2048 2>/dev/null
    openssl rsa -in "$PKI_DIR/sa.key" -pubout -out "$PKI_DIR/sa.pub" 2>/dev/null
  fi
  make_tokens
}

# Static tokens (token-auth-file: token,user,uid,"groups"). One per client, random per cluster.
make_tokens() {
  local file=$PKI_DIR/tokens.csv
  [[ -f $file ]] && grep -q ",system:node:$NODE_NAME," "$file" && return 0
  {
    echo "$(openssl rand -hex 16),admin,admin,\"system:masters\""
    echo "$(openssl rand -hex 16),system:kube-controller-manager,system:kube-controller-manager"
    echo "$(openssl rand -hex 16),system:kube-scheduler,system:kube-scheduler"
    echo "$(openssl rand -hex 16),system:node:$NODE_NAME,system:node:$NODE_NAME,\"system:nodes\""
  } >"$file"
  chmod 0600 "$file"
}

token_of() { awk -F, -v u="$1" '$2 == u { print $1 }' "$PKI_DIR/tokens.csv"; }

# Usage: write_kubeconfig FILE USER SERVER
write_kubeconfig() {
  local file=$1 user=$2 server=$3
  cat >"$file" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: nodelet-test
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 <"$PKI_DIR/ca.crt")
users:
- name: $user
  user:
    token: $(token_of "$user")
contexts:
- name: nodelet-test
  context:
    cluster: nodelet-test
    user: $user
current-context: nodelet-test
YAML
  chmod 0600 "$file"
}

write_kubeconfigs() {
  write_kubeconfig "$CLUSTER_DIR/kubeconfig" admin "https://127.0.0.1:$APISERVER_PORT"
  write_kubeconfig "$CLUSTER_DIR/kubeconfig-controller-manager" system:kube-controller-manager \
    "https://127.0.0.1:$APISERVER_PORT"
  write_kubeconfig "$CLUSTER_DIR/kubeconfig-scheduler" system:kube-scheduler "https://127.0.0.1:$APISERVER_PORT"
  # The node reaches the API server at its own InternalIP, like a node of a real cluster would.
  write_kubeconfig "$CLUSTER_DIR/kubeconfig-node" "system:node:$NODE_NAME" "https://$NODE_IP:$APISERVER_PORT"
}
