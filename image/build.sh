#!/usr/bin/env bash
# Builds nodelet's image on this machine without a Docker engine or a registry, as an OCI image
# layout tarred for `ctr images import`, named docker.io/library/nodelet:<package.json version> (the
# chart's default `image.repository: nodelet` with the tag defaulting to appVersion).
#
# The contents follow the Dockerfile (the recipe for those with a registry):
#   layer 1 (base)     a minimal Debian 12 root filesystem from mmdebstrap (--variant=minbase, docs and
#                      locales left out, as debian:bookworm-slim) with the Debian packages the
#                      Dockerfile's runtime stage installs (parsed from it: the CNI plugins, iptables,
#                      ca-certificates, redis-server)
#   layer 2 (runtime)  /usr/local: Node.js at image/versions.env's NODE_VERSION (image/fetch-node.sh:
#                      the official binary from the npm registry, integrity-checked; no npm), and
#                      containerd, its shim, ctr and runc at their pins (image/build-runtime.sh, from
#                      Go modules)
#   layer 3 (app)      /app: package.json, package-lock.json, the production node_modules (the host's
#                      installed tree pruned with `npm prune --omit=dev --offline`), bin/, dist/
#                      (compiled here with tsconfig.build.json), cri/api.proto, controllers/plugins/protos/
#   config             ENTRYPOINT ["node", "--max-semi-space-size=2", "bin/nodelet.js"], WorkingDir /app, NODE_ENV=production
#
# Each layer is cached under $NODELET_CACHE/images (default ~/.cache/nodelet/images) by a hash of its
# inputs, so a second run with nothing changed does no work, and a source change rebuilds only the
# app layer. The base's hash covers the package list and the apt sources, not the mirror's contents:
# to pick up Debian updates, remove the nodelet-layer-base-* entries. The runtime's covers the pins
# and the scripts that build it. Debian tools it needs (mmdebstrap) are installed when missing.
# Downloads: Debian packages, the Go module proxy and the npm registry only.
#
#   build.sh           builds what is missing; prints "<ref> <tar> <manifest digest>"
#   build.sh --print   same, but fails instead of building (tells whether the cache is warm)
#   build.sh --runtime-bin   builds only the runtime layer if missing; prints the directory of its
#                            unpacked binaries (node, containerd, containerd-shim-runc-v2, ctr, runc)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${NODELET_CACHE:-$HOME/.cache/nodelet}/images
sources=${NODELET_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources}
suite=bookworm
epoch="1970-01-01T00:00:00Z"
image_env_path="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# dpkg path filters of the base (debian:bookworm-slim leaves out the same).
# shellcheck source=debian-slim.sh
source "$here/debian-slim.sh"
dpkg_opts=("${slim_dpkg_opts[@]}")
# The project's files that go into /app (the Dockerfile's COPY lines of the runtime stage).
app_sources=(cmd server controllers reconcilers cri kube dashboard approver queue-users util bin)
log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Installs the Debian tools the build uses when missing (the install.sh pattern).
install_tools() {
  local missing=() pkg
  for pkg in mmdebstrap jq; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  log "installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The Debian packages of the Dockerfile's runtime stage: the `apt-get install` after the last FROM.
dockerfile_packages() {
  awk '/^FROM /{stage=""} {stage = stage "\n" $0} END {print stage}' "$repo/Dockerfile" |
    tr '\\' '\n' | grep -oE 'apt-get install .*' | head -n1 |
    tr ' ' '\n' | grep -vE '^(apt-get|install|-.*|&&|)$' | sort -u
}

oci_arch() {
  case $(uname -m) in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    *) die "unsupported machine $(uname -m)" ;;
  esac
}

base_hash() {
  {
    echo "base $suite $(oci_arch) ${dpkg_opts[*]}"
    dockerfile_packages
    sha256sum "$sources"
    dpkg-query -W -f='${Package} ${Version}\n' mmdebstrap
    sed -n '/^build_base()/,/^}/p' "$here/build.sh"
  } | sha256sum | cut -c1-16
}

app_hash() {
  {
    echo "app $(oci_arch)"
    (cd "$repo" && find "${app_sources[@]}" -type f ! -name '*.test.ts' -print0 | sort -z |
      xargs -0 sha256sum)
    (cd "$repo" && sha256sum package.json package-lock.json tsconfig.json tsconfig.build.json \
      node_modules/.package-lock.json)
    sed -n '/^build_app()/,/^}/p' "$here/build.sh"
    grep '^NODE_VERSION=' "$here/versions.env"
  } | sha256sum | cut -c1-16
}

runtime_hash() {
  {
    echo "runtime $(oci_arch) $(go version)"
    cat "$here/versions.env" "$here/build-runtime.sh" "$here/fetch-node.sh"
    sed -n '/^build_runtime()/,/^}/p' "$here/build.sh"
  } | sha256sum | cut -c1-16
}

# Writes a gzip layer of a directory into the cache entry; leaves diff_id, digest, size, files.txt.
# Names sorted, times fixed, gzip without a timestamp; owners kept (numeric) for the base.
write_layer() {
  local dir=$1 rootfs=$2 hex
  shift 2
  tar --sort=name --mtime=@0 --numeric-owner --format=gnu "$@" -C "$rootfs" -cf "$dir/layer.tar" .
  sha256sum "$dir/layer.tar" | cut -d' ' -f1 >"$dir/diff_id"
  stat -c %s "$dir/layer.tar" >"$dir/tar_size"
  tar -tf "$dir/layer.tar" | sed 's|^\./||; s|/$||' | grep -v '^\.\?$' | sort >"$dir/files.txt"
  gzip -n -6 "$dir/layer.tar"
  hex=$(sha256sum "$dir/layer.tar.gz" | cut -d' ' -f1)
  echo "$hex" >"$dir/digest"
  stat -c %s "$dir/layer.tar.gz" >"$dir/size"
}

build_base() {
  local dir=$1 work=$2 packages
  packages=$(dockerfile_packages | paste -sd, -)
  [[ $packages == *containernetworking-plugins* ]] || die "no apt-get install list in the Dockerfile"
  log "mmdebstrap $suite with $packages"
  nice -n 10 mmdebstrap --quiet --variant=minbase --include="$packages" "${dpkg_opts[@]}" \
    "$suite" "$work/rootfs" "$sources"
  # Device nodes are the runtime's to make; apt's lists and caches are gone already (mmdebstrap).
  write_layer "$dir" "$work/rootfs" --exclude='./dev/*'
  dpkg-query --admindir="$work/rootfs/var/lib/dpkg" -W -f='${Package} ${Version}\n' >"$dir/packages.txt"
  echo "Debian base (mmdebstrap)" >"$dir/created_by"
}

# /usr/local: node (no npm) and the container runtime, at image/versions.env's pins.
build_runtime() {
  local dir=$1 work=$2 local_dir=$2/rootfs/usr/local
  bash "$here/fetch-node.sh" "$local_dir"
  bash "$here/build-runtime.sh" "$local_dir/bin"
  # Each running container's bundle on the host records the path of the shim that runs it, and a
  # containerd that cannot find that path after an upgrade drops the container while its shim
  # keeps it running, unseen. The releases before containerd 2 ran Debian's shim from /usr/bin.
  mkdir -p "$work/rootfs/usr/bin"
  ln -s /usr/local/bin/containerd-shim-runc-v2 "$work/rootfs/usr/bin/containerd-shim-runc-v2"
  # The binaries also stay unpacked in the cache entry, for tests that run the image's containerd
  # on the host (`build.sh --runtime-bin`).
  cp -a "$local_dir/bin" "$dir/bin"
  write_layer "$dir" "$work/rootfs" --owner=0 --group=0
  echo "node, containerd and runc (/usr/local), the shim's path of earlier releases" >"$dir/created_by"
}

build_app() {
  local dir=$1 work=$2 app=$2/rootfs/app
  mkdir -p "$app/cri"
  log "compiling dist/ and pruning node_modules to production"
  cp "$repo/package.json" "$repo/package-lock.json" "$app/"
  cp -a "$repo/bin" "$app/bin"
  cp "$repo/cri/api.proto" "$app/cri/api.proto"
  mkdir -p "$app/controllers/plugins" && cp -a "$repo/controllers/plugins/protos" "$app/controllers/plugins/protos"
  (cd "$repo" && nice -n 10 node_modules/.bin/tsc -p tsconfig.build.json --outDir "$app/dist")
  cp -a "$repo/node_modules/." "$app/node_modules/"
  (cd "$app" && npm prune --omit=dev --offline --no-audit --no-fund --loglevel=error >/dev/null)
  # TypeScript stays after the prune as valibot's optional peer (devOptional in the lock); nothing
  # loads it at run time, and the image carries no build tools (as the Dockerfile's build stage).
  rm -rf "$app/node_modules/typescript" "$app/node_modules/.bin/tsc" "$app/node_modules/.bin/tsserver"
  write_layer "$dir" "$work/rootfs" --owner=0 --group=0
  echo "/app" >"$dir/created_by"
}

# Builds one layer into the cache unless it is there; prints its cache directory.
cached_layer() {
  local kind=$1 hash=$2 only_print=$3 dir work old
  dir="$cache/nodelet-layer-$kind-$hash"
  if [[ ! -f $dir/digest ]]; then
    [[ $only_print == 1 ]] && die "the $kind layer is not built yet ($dir)"
    work=$(mktemp -d "$cache/.build-nodelet-$kind.XXXXXX")
    local started=$SECONDS
    mkdir -p "$work/layer" "$work/rootfs"
    "build_$kind" "$work/layer" "$work"
    rm -rf "$work/rootfs" "$dir"
    mv "$work/layer" "$dir" && rm -rf "$work"
    log "built the $kind layer in $((SECONDS - started)) s"
    for old in "$cache/nodelet-layer-$kind"-*; do
      if [[ $old != "$dir" ]]; then rm -rf "$old"; fi
    done
  fi
  echo "$dir"
}

source "$here/layout.sh"

main() {
  local only_print=0 base runtime app ref version
  case ${1:-} in
    --print) only_print=1 ;;
    --runtime-bin)
      mkdir -p "$cache"
      runtime=$(cached_layer runtime "$(runtime_hash)" 0)
      echo "$runtime/bin"
      return 0 ;;
    "") ;;
    *) die "usage: build.sh [--print | --runtime-bin]" ;;
  esac
  ((only_print)) || install_tools
  mkdir -p "$cache"
  version=$(jq -r .version "$repo/package.json")
  ref="docker.io/library/nodelet:$version"
  base=$(cached_layer base "$(base_hash)" "$only_print")
  runtime=$(cached_layer runtime "$(runtime_hash)" "$only_print")
  app=$(cached_layer app "$(app_hash)" "$only_print")
  image_layout "$ref" "$only_print" "$base" "$runtime" "$app"
}

main "$@"
