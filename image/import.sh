#!/usr/bin/env bash
# Builds nodelet's image (image/build.sh, cached) and imports it into a containerd's k8s.io namespace,
# unless an image of that name and manifest digest is there already. The containerd is the one
# CONTAINERD_ADDRESS names (the test cluster's, once .cluster/env is sourced; /tmp/nl/with-cluster.sh
# and test/run-suite.sh do that); `cluster:up` never calls this (a cold build takes minutes).
#   import.sh    prints "<ref> <manifest digest>"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${CONTAINERD_ADDRESS:?set CONTAINERD_ADDRESS (source .cluster/env)}"
read -r ref tar digest < <(bash "$here/build.sh")
ctr_k8s() { ctr --address "$CONTAINERD_ADDRESS" --namespace k8s.io "$@"; }
current=$(ctr_k8s images ls "name==$ref" 2>/dev/null | awk 'NR == 2 { print $3 }')
if [[ $current != "$digest" ]]; then
  printf '[image] importing %s (%s) into containerd\n' "$ref" "$digest" >&2
  ctr_k8s images import "$tar" >/dev/null
fi
current=$(ctr_k8s images ls "name==$ref" | awk 'NR == 2 { print $3 }')
[[ $current == "$digest" ]] || { echo "[image] error: $ref is $current in containerd, not $digest" >&2; exit 1; }
echo "$ref $digest"
