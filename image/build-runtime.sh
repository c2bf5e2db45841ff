#!/usr/bin/env bash
# Builds the image's container runtime from Go modules (never release downloads) into a directory:
#   containerd, containerd-shim-runc-v2, ctr  <- github.com/containerd/containerd/v2 @ CONTAINERD_VERSION
#   runc                                       <- github.com/opencontainers/runc @ RUNC_VERSION
# at the pins of image/versions.env. containerd and its shim are static Go binaries (CGO off; the
# btrfs, devmapper and zfs snapshotters left out, as nodelet's containerd config disables them);
# runc is a static PIE with seccomp (cgo, Debian's libseccomp-dev, installed when missing), as
# runc's own releases are. Each binary prints its pinned version (checked here).
#
#   build-runtime.sh <out-dir>    builds into <out-dir> (created); used by image/build.sh (which
#                                 caches the result by the pins) and by the Dockerfile's runtime-build stage
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
out=${1:?usage: build-runtime.sh <out-dir>}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
log() { printf '[runtime] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

ensure_libseccomp() {
  dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q 'install ok installed' && return 0
  log "installing Debian's libseccomp-dev (runc's seccomp support)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libseccomp-dev >/dev/null
}

# A scratch module that requires containerd at its pin; the commands are built from it.
build_containerd() {
  local work=$1 module=github.com/containerd/containerd/v2
  mkdir -p "$work/containerd"
  printf 'module nodelet.dev/build/containerd\n\ngo 1.24\n' >"$work/containerd/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "%s/cmd/containerd"\n\t_ "%s/cmd/containerd-shim-runc-v2"\n\t_ "%s/cmd/ctr"\n)\n' \
    "$module" "$module" "$module" >"$work/containerd/tools.go"
  log "building containerd $CONTAINERD_VERSION (containerd, containerd-shim-runc-v2, ctr)"
  (
    cd "$work/containerd"
    go get "$module@$CONTAINERD_VERSION" >/dev/null 2>&1
    go mod tidy -e >/dev/null 2>&1
    CGO_ENABLED=0 nice -n 10 go build -trimpath -tags 'no_btrfs no_devmapper no_zfs' \
      -ldflags "-s -w -X $module/version.Version=$CONTAINERD_VERSION -X $module/version.Revision=$CONTAINERD_VERSION" \
      -o "$out/" "$module/cmd/containerd" "$module/cmd/containerd-shim-runc-v2" "$module/cmd/ctr"
  )
}

# runc's main package is its module root: built inside the downloaded module, read-only, to <out>.
build_runc() {
  local dir
  dir=$(go mod download -json "github.com/opencontainers/runc@$RUNC_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || die "no module directory for runc $RUNC_VERSION"
  log "building runc $RUNC_VERSION (static, seccomp)"
  (
    cd "$dir"
    CGO_ENABLED=1 nice -n 10 go build -trimpath -buildmode=pie -tags 'seccomp urfave_cli_no_docs netgo osusergo' \
      -ldflags "-s -w -X main.version=${RUNC_VERSION#v} -linkmode external -extldflags -static-pie" \
      -o "$out/runc" .
  )
}

check_versions() {
  "$out/containerd" --version | grep -qF " $CONTAINERD_VERSION " || die "containerd reports $("$out/containerd" --version)"
  "$out/runc" --version | grep -qx "runc version ${RUNC_VERSION#v}" || die "runc reports $("$out/runc" --version | head -1)"
  "$out/containerd-shim-runc-v2" -v | grep -qF "$CONTAINERD_VERSION" || die "the shim reports $("$out/containerd-shim-runc-v2" -v)"
}

main() {
  work=""
  mkdir -p "$out"
  ensure_libseccomp
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  build_containerd "$work"
  build_runc
  check_versions
  log "built in $out: $(cd "$out" && echo *)"
}

main
