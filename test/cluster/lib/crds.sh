# shellcheck shell=bash
# nodelet's custom resources (crds/) and the RBAC the harness's node agent needs for them.

crd_established() {
  [[ $(kubectl_admin get crd nodeagents.nodelet.dev \
    -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]]
}

# Applies every CRD in crds/ and the NodeAgent RBAC (idempotent: server-side apply), then waits
# until the NodeAgent CRD is served.
crds_apply() {
  log "applying crds/ and the NodeAgent RBAC"
  kubectl_admin apply --server-side --force-conflicts --field-manager nodelet-harness \
    -f "$REPO_DIR/crds/" -f "$HARNESS_DIR/lib/nodeagent-rbac.yaml" >/dev/null \
    || die "applying crds/ failed"
  wait_for 30 "the NodeAgent CRD to be established" crd_established || die "NodeAgent CRD not established"
}
