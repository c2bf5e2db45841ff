#!/usr/bin/env bash
# Builds CoreDNS from its Go module (github.com/coredns/coredns at versions.env's COREDNS_VERSION,
# never a release download) through a scratch module, as build-binaries.sh builds the cluster's
# other binaries (its functions, sourced), and caches it as $NODELET_CACHE/bin/coredns-<version>/
# coredns. Idempotent: a cached binary is not rebuilt.
#
# The module's main package carries upstream's default plugin set (core/plugin/zplugin.go, generated
# from plugin.cfg and committed upstream): what the release binary has. The build checks that the
# plugins of the cluster-DNS Corefile (test/cluster/addons/coredns.yaml) are in it.
#
# Users: the cluster-DNS add-on's image registry.k8s.io/coredns/coredns:<version>
# (test/images/build-e2e-images.sh, e2e-coredns) and /coredns of the glibc-dns-testing e2e image.
#
#   build-coredns.sh            builds when missing; prints the directory
#   build-coredns.sh --print    prints it, or fails when it is not built
set -euo pipefail
coredns_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=build-binaries.sh
source "$coredns_here/build-binaries.sh"

# Plugins the cluster-DNS Corefile names, and `file` (the static zone of the loopback check).
coredns_required_plugins=(errors health ready kubernetes prometheus forward cache loop reload loadbalance log file)

coredns_check_plugins() {
  local bin=$1 listed plugin
  listed=$("$bin" -plugins)
  for plugin in "${coredns_required_plugins[@]}"; do
    grep -qx "$plugin" <<<"$listed" || { log "coredns has no $plugin plugin"; return 1; }
  done
}

build_coredns() {
  local dir
  dir=$(bin_dir coredns "$COREDNS_VERSION")
  if [[ ${1:-} != --print ]]; then
    command -v go >/dev/null || { log "go is required (the machine's Go toolchain)"; exit 1; }
    # Its go.mod has no replace directives: the generic scratch-module build (CGO off, -trimpath,
    # -s -w), as the release is built less its git-commit stamp (the module has no git).
    if [[ ! -x $dir/coredns ]]; then
      go_build_scratch coredns github.com/coredns/coredns github.com/coredns/coredns "$COREDNS_VERSION" >&2
      coredns_check_plugins "$dir/coredns" || { rm -rf "$dir"; exit 1; }
    else
      log "coredns $COREDNS_VERSION cached in $dir"
    fi
  fi
  [[ -x $dir/coredns ]] || { log "coredns $COREDNS_VERSION is not built (bash test/cluster/build-coredns.sh)"; exit 1; }
  echo "$dir"
}

case ${1:-} in
  "" | --print) build_coredns "$@" ;;
  *) log "usage: build-coredns.sh [--print]"; exit 1 ;;
esac
