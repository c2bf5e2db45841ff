#!/usr/bin/env bash
# Builds the upstream e2e binaries of the cluster's Kubernetes version from the Go module proxy,
# through the same version-stamped scratch module as the cluster's own binaries
# (test/cluster/build-binaries.sh), cached in $NODELET_CACHE/bin/e2e-<version>:
#
#   e2e.test  go test -c k8s.io/kubernetes/test/e2e
#   ginkgo    github.com/onsi/ginkgo/v2/ginkgo at the version Kubernetes' go.mod requires
#   agnhost   k8s.io/kubernetes/test/images/agnhost   (copied into the agnhost test image)
#   nnp       k8s.io/kubernetes/test/images/nonewprivs (copied into the nonewprivs test image)
#
# Prints the directory. Skips the build when every binary is cached; --print fails instead.
set -euo pipefail
conformance_dir=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/build-binaries.sh
source "$conformance_dir/../cluster/build-binaries.sh"

e2e_binaries=(e2e.test ginkgo agnhost nnp)

e2e_cached() {
  local out=$1 b
  for b in "${e2e_binaries[@]}"; do [[ -x $out/$b ]] || return 1; done
}

build_e2e() {
  local version=$KUBERNETES_VERSION out work ldflags
  out=$(bin_dir e2e "$version")
  if e2e_cached "$out"; then log "e2e $version cached in $out"; echo "$out"; return; fi
  [[ ${1:-} == --print ]] && { log "e2e $version is not built yet ($out)"; exit 1; }
  command -v go >/dev/null || { log "go is required (the machine's Go toolchain)"; exit 1; }
  log "building e2e $version (e2e.test, ginkgo, agnhost, nnp): minutes on a cold build cache"
  work="$cache/work/e2e-$version"
  k8s_scratch_module "$work" "$version"
  # The test packages and their tools, so tidy records everything they import.
  cat >"$work/tools_e2e.go" <<'GO'
//go:build tools

package tools

import (
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
)
GO
  (cd "$work" && go mod tidy -e >/dev/null)
  ldflags=$(k8s_version_ldflags "$version")
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  (cd "$work" &&
    go test -c -trimpath -ldflags "$ldflags" -o "$out.tmp/e2e.test" k8s.io/kubernetes/test/e2e &&
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/ginkgo" github.com/onsi/ginkgo/v2/ginkgo &&
    go build -trimpath -ldflags "$ldflags" -o "$out.tmp/agnhost" k8s.io/kubernetes/test/images/agnhost &&
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/nnp" k8s.io/kubernetes/test/images/nonewprivs)
  rm -rf "$out" && mv "$out.tmp" "$out"
  echo "$out"
}

build_e2e "$@"
