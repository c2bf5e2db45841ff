#!/usr/bin/env bash
# Builds upstream's node e2e suite of the cluster's Kubernetes version from the Go module proxy,
# through the same version-stamped scratch module as e2e.test (build-e2e.sh), cached in
# $NODELET_CACHE/bin/e2e-node-<version>:
#
#   e2e_node.test  go test -c k8s.io/kubernetes/test/e2e_node
#
# (ginkgo comes from build-e2e.sh's directory: the same version.) Prints the directory. Skips the
# build when the binary is cached; --print fails instead.
set -euo pipefail
conformance_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/build-binaries.sh
source "$conformance_dir/../cluster/build-binaries.sh"

build_e2e_node() {
  local version=$KUBERNETES_VERSION out work ldflags
  out=$(bin_dir e2e-node "$version")
  if [[ -x $out/e2e_node.test ]]; then log "e2e-node $version cached in $out"; echo "$out"; return; fi
  [[ ${1:-} == --print ]] && { log "e2e-node $version is not built yet ($out)"; exit 1; }
  command -v go >/dev/null || { log "go is required (the machine's Go toolchain)"; exit 1; }
  log "building e2e_node.test $version: minutes on a cold build cache"
  work="$cache/work/e2e-node-$version"
  k8s_scratch_module "$work" "$version"
  # The test package, so tidy records everything it imports.
  cat >"$work/tools_e2e_node.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/test/e2e_node"
)
GO
  (cd "$work" && go mod tidy -e >/dev/null)
  ldflags=$(k8s_version_ldflags "$version")
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  (cd "$work" && go test -c -trimpath -ldflags "$ldflags" -o "$out.tmp/e2e_node.test" k8s.io/kubernetes/test/e2e_node)
  rm -rf "$out" && mv "$out.tmp" "$out"
  echo "$out"
}

build_e2e_node "$@"
