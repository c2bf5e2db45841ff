# shellcheck shell=bash
# The OCI image layout of nodelet's image, from the cached layers of image/build.sh (base, runtime,
# app, in that order): config, manifest and index written with jq, the layers' blobs linked in, the
# whole tarred for `ctr images import`. Cached by the layers' digests and the reference.

# Writes the image config, manifest and index into a layout directory.
# Args: layout ref layer-dir... (bottom first; each has diff_id, digest, size and created_by).
write_image_json() {
  local layout=$1 ref=$2 arch cfg cfg_hex man man_hex layers_json
  shift 2
  arch=$(oci_arch)
  layers_json=$(for layer in "$@"; do
    jq -n --arg diff "sha256:$(cat "$layer/diff_id")" --arg digest "sha256:$(cat "$layer/digest")" \
      --argjson size "$(cat "$layer/size")" --arg by "$(cat "$layer/created_by")" \
      '{diff: $diff, digest: $digest, size: $size, by: $by}'
  done | jq -s .)
  cfg=$(jq -n --arg arch "$arch" --arg created "$epoch" --arg path "$image_env_path" \
    --argjson layers "$layers_json" '{
      created: $created, architecture: $arch, os: "linux",
      config: {Env: [$path, "NODE_ENV=production"], WorkingDir: "/app",
        Entrypoint: ["node", "--max-semi-space-size=2", "bin/nodelet.js"]},
      rootfs: {type: "layers", diff_ids: [$layers[].diff]},
      history: [$layers[] | {created: $created, created_by: ("nodelet image/build.sh: " + .by)}]
    }')
  cfg_hex=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$layout/blobs/sha256/$cfg_hex"
  man=$(jq -n --arg cd "sha256:$cfg_hex" --argjson cs "$(printf '%s' "$cfg" | wc -c)" \
    --argjson layers "$layers_json" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [$layers[] | {mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: .digest, size: .size}]
    }')
  man_hex=$(printf '%s' "$man" | sha256sum | cut -d' ' -f1)
  printf '%s' "$man" >"$layout/blobs/sha256/$man_hex"
  # ctr names an imported image by io.containerd.image.name (see test/images/build.sh).
  jq -n --arg md "sha256:$man_hex" --argjson ms "$(printf '%s' "$man" | wc -c)" --arg arch "$arch" \
    --arg ref "$ref" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md, size: $ms,
        platform: {architecture: $arch, os: "linux"},
        annotations: {"io.containerd.image.name": $ref, "org.opencontainers.image.ref.name": $ref}}]
    }' >"$layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
}

# Builds the image tar unless cached; prints "<ref> <tar> <manifest digest>".
# Args: ref only-print layer-dir... (bottom first; the first is the Debian base).
image_layout() {
  local ref=$1 only_print=$2 hash dir work layer old
  shift 2
  hash=$( { for layer in "$@"; do cat "$layer/digest"; done
    printf '%s\n' "$ref" "$epoch" "$(sed -n '/^write_image_json()/,/^}/p' "$here/layout.sh")"; } |
    sha256sum | cut -c1-16)
  dir="$cache/nodelet-image-$hash"
  if [[ ! -f $dir/image.tar ]]; then
    [[ $only_print == 1 ]] && die "the image is not assembled yet ($dir)"
    work=$(mktemp -d "$cache/.build-nodelet-image.XXXXXX")
    mkdir -p "$work/layout/blobs/sha256"
    for layer in "$@"; do
      ln -f "$layer/layer.tar.gz" "$work/layout/blobs/sha256/$(cat "$layer/digest")" 2>/dev/null ||
        cp "$layer/layer.tar.gz" "$work/layout/blobs/sha256/$(cat "$layer/digest")"
    done
    write_image_json "$work/layout" "$ref" "$@"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layout" \
      -cf "$work/image.tar" oci-layout index.json blobs
    # What the tests read: the file list of the whole image, its Debian packages, its sizes.
    for layer in "$@"; do cat "$layer/files.txt"; done | sort -u >"$work/files.txt"
    cp "$1/packages.txt" "$work/packages.txt"
    for layer in "$@"; do
      jq -n --argjson c "$(cat "$layer/size")" --argjson u "$(cat "$layer/tar_size")" --arg by "$(cat "$layer/created_by")" \
        '{layer: $by, compressed: $c, uncompressed: $u}'
    done | jq -s '{compressed: (map(.compressed) | add), uncompressed: (map(.uncompressed) | add), layers: .}' \
      >"$work/sizes.json"
    rm -rf "$dir" && mv "$work" "$dir"
    for old in "$cache"/nodelet-image-*; do
      if [[ $old != "$dir" ]]; then rm -rf "$old"; fi
    done
  fi
  echo "$ref $dir/image.tar $(jq -r '.manifests[0].digest' "$dir/layout/index.json")"
}
