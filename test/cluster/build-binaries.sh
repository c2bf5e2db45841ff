#!/usr/bin/env bash
# Builds the test cluster's binaries from Go modules (never release downloads) and caches them
# under $NODELET_CACHE (default ~/.cache/nodelet), keyed by version. Idempotent: a component whose
# binaries already exist in the cache is not rebuilt.
#
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  <- k8s.io/kubernetes
#   etcd                                                              <- go.etcd.io/etcd/server/v3
#   helm                                                              <- helm.sh/helm/v3
#   crictl                                                            <- sigs.k8s.io/cri-tools
#   metrics-server                                                    <- sigs.k8s.io/metrics-server
#   kubelet (only with --kubelet: the bench's second node)            <- k8s.io/kubernetes
#   kube-proxy (only with --kube-proxy: Services on a multi-node cluster) <- k8s.io/kubernetes
#   coredns: build-coredns.sh (--coredns and --coredns-print hand over to it)
#   etcd of the e2e etcd image (only with --e2e-etcd: its own pin)    <- go.etcd.io/etcd/server/v3
#   sample-apiserver (only with --sample-apiserver: an e2e image)     <- k8s.io/sample-apiserver
#   sample-device-plugin (only with --sample-device-plugin: the device plugin e2e test)
#                                                                     <- k8s.io/kubernetes/test/images/sample-device-plugin
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${NODELET_CACHE:-$HOME/.cache/nodelet}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
log() { printf '[build] %s\n' "$*" >&2; }

# Prints the directory that holds the binaries of one component at one version.
bin_dir() { echo "$cache/bin/$1-$2"; }

# Writes a scratch module whose go.mod requires k8s.io/kubernetes and replaces every staging module
# (the release's own go.mod points them at ./staging, which does not exist outside its repository).
# Optional third argument and beyond: the commands the module's tools.go imports (default: the
# control plane and kubectl); a name with a slash is a package path inside k8s.io/kubernetes
# (test/images/sample-device-plugin).
k8s_scratch_module() {
  local dir=$1 version=$2 staging mod cmd
  shift 2
  local cmds=("$@")
  ((${#cmds[@]})) || cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
  staging=$(staging_version "$version")
  mkdir -p "$dir"
  (cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" >/dev/null)
  mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$version.mod"
  {
    echo "module nodelet.dev/build/kubernetes"
    echo
    grep -E '^(go|godebug) ' "$mod"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    grep -E '=> \./staging/src/' "$mod" | awk -v v="$staging" '{ print "\t" $1 " => " $1 " " v }'
    echo ")"
  } >"$dir/go.mod"
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for cmd in "${cmds[@]}"; do
      if [[ $cmd == */* ]]; then printf '\t_ "k8s.io/kubernetes/%s"\n' "$cmd"; else printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$cmd"; fi
    done
    printf ')\n'
  } >"$dir/tools.go"
  (cd "$dir" && go mod tidy -e >/dev/null)
}

# Linker flags that stamp a Kubernetes build with its release version, as a release build is
# stamped (clients and servers compare versions, e.g. kubectl's skew warning and e2e's checks).
k8s_version_ldflags() {
  local version=$1 minor flags="-s -w" pkg
  minor=${version#v1.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$flags"
}

build_kubernetes() {
  local version=$KUBERNETES_VERSION out work ldflags
  out=$(bin_dir kubernetes "$version")
  if [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/kube-scheduler && -x $out/kubectl ]]; then
    log "kubernetes $version cached in $out"; return
  fi
  log "building kubernetes $version (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
  work="$cache/work/kubernetes-$version"
  k8s_scratch_module "$work" "$version"
  ldflags=$(k8s_version_ldflags "$version")
  mkdir -p "$out.tmp"
  (cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# The kubelet of the same release, from the same modules: the second node `npm run kubelet:up` runs
# beside nodelet for the benchmark (never part of the cluster nodelet's tests see).
build_kubelet() {
  local version=$KUBERNETES_VERSION out work ldflags
  out=$(bin_dir kubelet "$version")
  if [[ -x $out/kubelet ]]; then log "kubelet $version cached in $out"; return; fi
  log "building kubelet $version"
  work="$cache/work/kubelet-$version"
  k8s_scratch_module "$work" "$version" kubelet
  ldflags=$(k8s_version_ldflags "$version")
  mkdir -p "$out.tmp"
  (cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" k8s.io/kubernetes/cmd/kubelet)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# kube-proxy of the same release, through the same version-stamped scratch module (its own work dir
# and cache entry, as the kubelet's: a cached control plane is never rebuilt for it). Opt-in: only
# a cluster with Services runs it (not the one-node cluster of `npm test` and `npm run demo`).
build_kube_proxy() {
  local version=$KUBERNETES_VERSION out work ldflags
  out=$(bin_dir kube-proxy "$version")
  if [[ -x $out/kube-proxy ]]; then log "kube-proxy $version cached in $out"; return; fi
  log "building kube-proxy $version"
  work="$cache/work/kube-proxy-$version"
  k8s_scratch_module "$work" "$version" kube-proxy
  ldflags=$(k8s_version_ldflags "$version")
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  (cd "$work" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp/" k8s.io/kubernetes/cmd/kube-proxy)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# Upstream's sample device plugin of the same release (resource example.com/resource, two devices
# Dev-1 and Dev-2; PLUGIN_SOCK_DIR is where its socket goes; it registers at the kubelet's fixed
# /var/lib/kubelet/device-plugins/kubelet.sock): test/e2e/device-plugins.test.ts runs it against nodelet.
build_sample_device_plugin() {
  local version=$KUBERNETES_VERSION out work
  out=$(bin_dir sample-device-plugin "$version")
  if [[ -x $out/sample-device-plugin ]]; then log "sample-device-plugin $version cached in $out"; return; fi
  log "building sample-device-plugin $version"
  work="$cache/work/sample-device-plugin-$version"
  k8s_scratch_module "$work" "$version" test/images/sample-device-plugin
  mkdir -p "$out.tmp"
  (cd "$work" && go build -trimpath -ldflags "-s -w" -o "$out.tmp/sample-device-plugin" k8s.io/kubernetes/test/images/sample-device-plugin)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# etcd server at <version> (default: the cluster's pin). The e2e etcd image has its own pin
# (E2E_ETCD_VERSION): its own cache entry and work dir, by version.
build_etcd() {
  local version=${1:-$ETCD_VERSION} out work
  out=$(bin_dir etcd "$version")
  if [[ -x $out/etcd ]]; then log "etcd $version cached in $out"; return; fi
  log "building etcd $version"
  work="$cache/work/etcd-$version"
  mkdir -p "$work"
  cat >"$work/go.mod" <<GOMOD
module nodelet.dev/build/etcd

go 1.25

require go.etcd.io/etcd/server/v3 $version
GOMOD
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >"$work/tools.go"
  (cd "$work" && go mod tidy -e >/dev/null && mkdir -p "$out.tmp" &&
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3)
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# go install pkg@version: works for modules whose go.mod has no replace directives.
go_install() {
  local name=$1 pkg=$2 version=$3 out
  out=$(bin_dir "$name" "$version")
  if [[ -x $out/$name ]]; then log "$name $version cached in $out"; return; fi
  log "building $name $version"
  mkdir -p "$out.tmp"
  GOBIN="$out.tmp" go install -trimpath -ldflags "-s -w" "$pkg@$version"
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# Some releases require pre-release versions of their dependencies (cri-tools v1.34.0 requires
# k8s.io/* v0.34.0-rc.2), which the checksum database does not know. Requires the final release of
# each instead (minimal version selection then picks it).
release_prereleases() {
  local work=$1 module=$2 version=$3 mod dep dep_version
  mod="$(go env GOMODCACHE)/cache/download/$module/@v/$version.mod"
  while read -r dep dep_version; do
    (cd "$work" && go mod edit -require="$dep@${dep_version%%-rc.*}")
  done < <(grep -E '^\s*k8s\.io/\S+ v[0-9.]+-rc\.[0-9]+' "$mod" | awk '{ print $1, $2 }')
}

# Builds one package of a module through a scratch module that requires it. Unlike `go install
# pkg@version`, this never asks the proxy for the module's version list (which `go install` does to
# look up deprecations, and which the proxy refuses for some modules, e.g. sigs.k8s.io/cri-tools).
# Only for modules whose go.mod has no replace directives.
go_build_scratch() {
  local name=$1 module=$2 pkg=$3 version=$4 out work
  out=$(bin_dir "$name" "$version")
  if [[ -x $out/$name ]]; then log "$name $version cached in $out"; return; fi
  log "building $name $version"
  work="$cache/work/$name-$version"
  mkdir -p "$work"
  printf 'module nodelet.dev/build/%s\n\ngo 1.24\n\nrequire %s %s\n' "$name" "$module" "$version" >"$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s"\n' "$pkg" >"$work/tools.go"
  (cd "$work" && go mod download "$module@$version" && release_prereleases "$work" "$module" "$version")
  (cd "$work" && go mod tidy -e >/dev/null && mkdir -p "$out.tmp" &&
    go build -trimpath -ldflags "-s -w" -o "$out.tmp/$name" "$pkg")
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# Links every cached binary into one directory (the cluster's bin/), so PATH needs one entry.
link_into() {
  local dest=$1
  mkdir -p "$dest"
  for f in "$(bin_dir kubernetes "$KUBERNETES_VERSION")"/* "$(bin_dir etcd "$ETCD_VERSION")/etcd" \
    "$(bin_dir helm "$HELM_VERSION")/helm" "$(bin_dir crictl "$CRICTL_VERSION")/crictl" \
    "$(bin_dir metrics-server "$METRICS_SERVER_VERSION")/metrics-server"; do
    ln -sfn "$f" "$dest/$(basename "$f")"
  done
}

# The version of Kubernetes' staging modules (k8s.io/api, k8s.io/sample-apiserver, ...) in a release.
staging_version() { echo "v0${1#v1}"; }

# Builds one component (unless the first argument is --print) and prints the directory of its
# binaries; fails when <bin> is not there. Args: --print|"" name version bin build-command...
one_component() {
  local print=$1 name=$2 version=$3 bin=$4
  shift 4
  if [[ $print != --print ]]; then
    command -v go >/dev/null || { log "go is required (the machine's Go toolchain)"; exit 1; }
    "$@" >&2
  fi
  [[ -x $(bin_dir "$name" "$version")/$bin ]] || { log "$name $version is not built"; exit 1; }
  bin_dir "$name" "$version"
}

main() {
  command -v go >/dev/null || { log "go is required (the machine's Go toolchain)"; exit 1; }
  # --kubelet: only the kubelet, linked into the directory given (test/cluster/kubelet-up.sh).
  if [[ ${1:-} == --kubelet ]]; then
    build_kubelet
    mkdir -p "$2" && ln -sfn "$(bin_dir kubelet "$KUBERNETES_VERSION")/kubelet" "$2/kubelet"
    return
  fi
  # --sample-device-plugin: only upstream's sample device plugin; prints its directory.
  if [[ ${1:-} == --sample-device-plugin ]]; then
    build_sample_device_plugin >&2
    bin_dir sample-device-plugin "$KUBERNETES_VERSION"
    return
  fi
  # --kube-proxy [DIR]: only kube-proxy, linked into DIR when given; prints its directory.
  if [[ ${1:-} == --kube-proxy ]]; then
    one_component "" kube-proxy "$KUBERNETES_VERSION" kube-proxy build_kube_proxy
    if [[ -n ${2:-} ]]; then mkdir -p "$2" && ln -sfn "$(bin_dir kube-proxy "$KUBERNETES_VERSION")/kube-proxy" "$2/kube-proxy"; fi
    return
  fi
  # The binaries of e2e images (test/images/build-e2e-images.sh); each prints its directory, and
  # with --print fails instead of building:
  #   --e2e-etcd          etcd at E2E_ETCD_VERSION (registry.k8s.io/etcd)
  #   --sample-apiserver  k8s.io/sample-apiserver of the cluster's release (the aggregator test's)
  case ${1:-} in
    --e2e-etcd)
      one_component "${2:-}" etcd "$E2E_ETCD_VERSION" etcd build_etcd "$E2E_ETCD_VERSION"
      return ;;
    --sample-apiserver)
      one_component "${2:-}" sample-apiserver "$(staging_version "$KUBERNETES_VERSION")" sample-apiserver \
        go_build_scratch sample-apiserver k8s.io/sample-apiserver k8s.io/sample-apiserver "$(staging_version "$KUBERNETES_VERSION")"
      return ;;
  esac
  # --coredns, --coredns-print: build-coredns.sh's (and --print) for older callers.
  if [[ ${1:-} == --coredns ]]; then exec bash "$here/build-coredns.sh"; fi
  if [[ ${1:-} == --coredns-print ]]; then exec bash "$here/build-coredns.sh" --print; fi
  build_etcd "$ETCD_VERSION"
  go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
  # The checksum database has no record of cri-tools' module versions; the proxy serves them.
  GONOSUMDB=sigs.k8s.io/cri-tools go_build_scratch crictl sigs.k8s.io/cri-tools \
    sigs.k8s.io/cri-tools/cmd/crictl "$CRICTL_VERSION"
  build_kubernetes
  # metrics-server's go.mod has no replace directives and needs no pre-release; kubectl top reads it.
  go_build_scratch metrics-server sigs.k8s.io/metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server \
    "$METRICS_SERVER_VERSION"
  if [[ ${1:-} == --link ]]; then link_into "$2"; fi
}

# Sourced (test/conformance/build-e2e.sh reuses the scratch-module functions): define only.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
