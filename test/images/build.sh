#!/usr/bin/env bash
# Builds the test cluster's container images without Docker or a registry, as OCI image layouts
# tarred for `ctr images import`:
#
#   pause    registry.k8s.io/pause:3.10                                  /pause from pause.c (static)
#   busybox  docker.io/library/busybox:1.35, docker.io/library/busybox:latest
#                                                                         Debian's busybox-static
#
# Each image is cached under $NODELET_CACHE/images (default ~/.cache/nodelet/images) in a directory
# named by a hash of everything that goes into it (this script, pause.c, the busybox binary, the
# compiler), so an unchanged input is never rebuilt. Layers are written reproducibly (sorted names,
# fixed owners and times, gzip without a timestamp): the same inputs give the same digests.
#
#   build.sh            builds what is missing; prints one line per image: <name> <tar> <manifest digest>
#   build.sh --print    same, but fails instead of building (tells whether the cache is warm)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NODELET_CACHE:-$HOME/.cache/nodelet}/images
busybox_bin=${BUSYBOX_BIN:-/bin/busybox}
image_path_env="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
epoch="1970-01-01T00:00:00Z"
log() { printf '[images] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The OCI architecture name of this machine (images are built for the host only).
oci_arch() {
  case $(uname -m) in
    x86_64) echo amd64 ;;
    aarch64) echo arm64 ;;
    *) die "unsupported machine $(uname -m)" ;;
  esac
}

# The contents' hashes of files, without their paths: every worktree of the repo gets the same
# cache entry (a path in the hash gave each its own, and prune_stale removed the others').
content_hash() { sha256sum "$@" | cut -d' ' -f1; }

# A short hash of every input of one image, so a change to any of them gives a new cache entry.
input_hash() {
  local image=$1
  {
    echo "$image $(oci_arch)"
    content_hash "$here/build.sh"
    case $image in
      pause) content_hash "$here/pause.c"; gcc --version | head -n1 ;;
      busybox) content_hash "$busybox_bin" ;;
    esac
    tar --version | head -n1
  } | sha256sum | cut -c1-16
}

# Moves a file into the layout's blob store under its digest; prints "sha256:<hex> <size>".
put_blob() {
  local layout=$1 file=$2 hex size
  hex=$(sha256sum "$file" | cut -d' ' -f1)
  size=$(stat -c %s "$file")
  mkdir -p "$layout/blobs/sha256"
  mv "$file" "$layout/blobs/sha256/$hex"
  echo "sha256:$hex $size"
}

# tar's options of a layer beyond the reproducible ones: every file root's by default. A recipe whose
# root filesystem has real owners (a Debian one) sets its own, with `local`.
layer_tar_opts=(--owner=0 --group=0)

# Writes a reproducible gzip layer of a root filesystem; prints "<diff_id> <digest> <size>".
write_layer() {
  local layout=$1 rootfs=$2 tmp diff_id blob
  tmp=$(mktemp -d)
  tar --sort=name --mtime=@0 "${layer_tar_opts[@]}" --numeric-owner --format=gnu \
    -C "$rootfs" -cf "$tmp/layer.tar" .
  diff_id="sha256:$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)"
  gzip -n -9 "$tmp/layer.tar"
  blob=$(put_blob "$layout" "$tmp/layer.tar.gz")
  rm -rf "$tmp"
  echo "$diff_id $blob"
}

# Writes the image config, manifest, index and oci-layout for one single-layer image.
# Args: layout rootfs process-json refs... where process-json is the config's "config" object
# (e.g. {"Entrypoint":["/pause"]}); Env defaults to PATH only and WorkingDir to /.
write_layout() {
  local layout=$1 rootfs=$2 process=$3 diff_id layer_digest layer_size
  shift 3
  read -r diff_id layer_digest layer_size < <(write_layer "$layout" "$rootfs")
  write_image "$layout" "$diff_id" "$layer_digest" "$layer_size" "$process" "$@"
}

# write_layout's config, manifest, index and oci-layout, for a layer already in the layout's blobs.
# Args: layout diff_id layer-digest layer-size process-json refs...
write_image() {
  local layout=$1 diff_id=$2 layer_digest=$3 layer_size=$4 process=$5 arch cfg cfg_blob manifest man_blob
  shift 5
  arch=$(oci_arch)
  cfg=$(mktemp)
  jq -n --arg arch "$arch" --arg created "$epoch" --arg env "$image_path_env" \
    --arg diff "$diff_id" --argjson process "$process" '{
      created: $created, architecture: $arch, os: "linux",
      config: ($process + {Env: ($process.Env // [$env]), WorkingDir: ($process.WorkingDir // "/")}),
      rootfs: {type: "layers", diff_ids: [$diff]},
      history: [{created: $created, created_by: "nodelet test/images/build.sh"}]
    }' >"$cfg"
  cfg_blob=$(put_blob "$layout" "$cfg")
  manifest=$(mktemp)
  jq -n --arg cd "${cfg_blob% *}" --argjson cs "${cfg_blob#* }" \
    --arg ld "$layer_digest" --argjson ls "$layer_size" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $ld, size: $ls}]
    }' >"$manifest"
  man_blob=$(put_blob "$layout" "$manifest")
  # One index entry per name. ctr names an imported image by io.containerd.image.name; the OCI
  # ref.name holds the same full reference (a bare tag would make ctr invent an import-<date> name).
  printf '%s\n' "$@" | jq -R . | jq -s --arg md "${man_blob% *}" --argjson ms "${man_blob#* }" \
    --arg arch "$arch" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: map({
        mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
        platform: {architecture: $arch, os: "linux"},
        annotations: {"io.containerd.image.name": ., "org.opencontainers.image.ref.name": .}
      })
    }' >"$layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
}

rootfs_pause() {
  local rootfs=$1
  gcc -static -Os -s -Wall -Wextra -Werror -o "$rootfs/pause" "$here/pause.c"
}

rootfs_busybox() {
  local rootfs=$1 applet
  [[ -x $busybox_bin ]] || die "$busybox_bin is missing (apt-get install busybox-static)"
  "$busybox_bin" --list-full >/dev/null || die "$busybox_bin cannot list its applets"
  mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/root" "$rootfs/tmp"
  chmod 1777 "$rootfs/tmp"
  chmod 0700 "$rootfs/root"
  cp "$busybox_bin" "$rootfs/bin/busybox"
  chmod 0755 "$rootfs/bin/busybox"
  while read -r applet; do
    [[ $applet == bin/busybox ]] && continue
    mkdir -p "$rootfs/$(dirname "$applet")"
    ln -sfn /bin/busybox "$rootfs/$applet"
  done < <("$busybox_bin" --list-full)
  [[ -L $rootfs/bin/sh ]] || ln -s /bin/busybox "$rootfs/bin/sh"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
    >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
}

# Removes cache entries of an image built from inputs that changed since.
prune_stale() {
  local name=$1 keep=$2 old
  for old in "$cache/$name"-*; do
    [[ -d $old && $old != "$keep" ]] && rm -rf "$old"
  done
  return 0
}

recipe_pause() {
  rootfs_pause "$1"
  write_layout "$2" "$1" '{"Entrypoint":["/pause"],"User":"65535:65535"}' registry.k8s.io/pause:3.10
}

recipe_busybox() {
  rootfs_busybox "$1"
  write_layout "$2" "$1" '{"Cmd":["sh"]}' docker.io/library/busybox:1.35 docker.io/library/busybox:latest
}

# Builds one image into the cache unless it is there; prints "<name> <tar> <manifest digest>".
# Args: name only-print [hash-fn recipe-fn]: hash-fn prints the input hash of <name> (default
# input_hash); recipe-fn fills <rootfs> and writes the layout (default recipe_<name>), given
# "<rootfs> <layout>".
build_image() {
  local name=$1 only_print=$2 hash_fn=${3:-input_hash} recipe=${4:-recipe_$1} dir work
  dir="$cache/$name-$("$hash_fn" "$name")"
  if [[ ! -f $dir/image.tar ]]; then
    [[ $only_print == 1 ]] && die "$name is not built yet ($dir)"
    log "building $name into $dir"
    work=$(mktemp -d "$cache/.build-$name.XXXXXX")
    chmod 0755 "$work"
    mkdir -p "$work/rootfs" "$work/layout"
    "$recipe" "$work/rootfs" "$work/layout"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layout" \
      -cf "$work/image.tar" oci-layout index.json blobs
    rm -rf "$work/rootfs"
    rm -rf "$dir" && mv "$work" "$dir"
    prune_stale "$name" "$dir"
  fi
  echo "$name $dir/image.tar $(jq -r '.manifests[0].digest' "$dir/layout/index.json")"
}

main() {
  local only_print=0
  case ${1:-} in
    --print) only_print=1 ;;
    "") ;;
    *) die "usage: build.sh [--print]" ;;
  esac
  command -v jq >/dev/null || die "jq is required"
  mkdir -p "$cache"
  build_image pause "$only_print"
  build_image busybox "$only_print"
}

# Sourced (build-e2e-images.sh reuses the layer and layout functions): define only.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then main "$@"; fi
