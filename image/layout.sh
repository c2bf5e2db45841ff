# shellcheck shell=bash
# The OCI image layout of nodelet's image, from the two cached layers of image/build.sh: config,
# manifest and index written with jq, the layers' blobs linked in, the whole tarred for
# `ctr images import`. Cached by the layers' digests and the reference.

# Writes the image config, manifest and index into a layout directory.
# Args: layout base-layer-dir app-layer-dir ref.
write_image_json() {
  local layout=$1 base=$2 app=$3 ref=$4 arch cfg cfg_hex man man_hex
  arch=$(oci_arch)
  cfg=$(jq -n --arg arch "$arch" --arg created "$epoch" --arg path "$image_env_path" \
    --arg d1 "sha256:$(cat "$base/diff_id")" --arg d2 "sha256:$(cat "$app/diff_id")" '{
      created: $created, architecture: $arch, os: "linux",
      config: {Env: [$path, "NODE_ENV=production"], WorkingDir: "/app",
        Entrypoint: ["node", "--max-semi-space-size=2", "bin/nodelet.js"]},
      rootfs: {type: "layers", diff_ids: [$d1, $d2]},
      history: [{created: $created, created_by: "nodelet image/build.sh: Debian base (mmdebstrap) + node"},
        {created: $created, created_by: "nodelet image/build.sh: /app"}]
    }')
  cfg_hex=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$layout/blobs/sha256/$cfg_hex"
  man=$(jq -n --arg cd "sha256:$cfg_hex" --argjson cs "$(printf '%s' "$cfg" | wc -c)" \
    --arg l1 "sha256:$(cat "$base/digest")" --argjson s1 "$(cat "$base/size")" \
    --arg l2 "sha256:$(cat "$app/digest")" --argjson s2 "$(cat "$app/size")" '{
      schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [
        {mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l1, size: $s1},
        {mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: $l2, size: $s2}]
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
# Args: base-layer-dir app-layer-dir ref only-print.
image_layout() {
  local base=$1 app=$2 ref=$3 only_print=$4 hash dir work layer old
  hash=$(printf '%s\n' "$(cat "$base/digest")" "$(cat "$app/digest")" "$ref" "$epoch" \
    "$(sed -n '/^write_image_json()/,/^}/p' "$here/layout.sh")" | sha256sum | cut -c1-16)
  dir="$cache/nodelet-image-$hash"
  if [[ ! -f $dir/image.tar ]]; then
    [[ $only_print == 1 ]] && die "the image is not assembled yet ($dir)"
    work=$(mktemp -d "$cache/.build-nodelet-image.XXXXXX")
    mkdir -p "$work/layout/blobs/sha256"
    for layer in "$base" "$app"; do
      ln -f "$layer/layer.tar.gz" "$work/layout/blobs/sha256/$(cat "$layer/digest")" 2>/dev/null ||
        cp "$layer/layer.tar.gz" "$work/layout/blobs/sha256/$(cat "$layer/digest")"
    done
    write_image_json "$work/layout" "$base" "$app" "$ref"
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layout" \
      -cf "$work/image.tar" oci-layout index.json blobs
    # What the tests read: the file list of the whole image, its Debian packages, its sizes.
    sort -u "$base/files.txt" "$app/files.txt" >"$work/files.txt"
    cp "$base/packages.txt" "$work/packages.txt"
    jq -n --argjson c1 "$(cat "$base/size")" --argjson c2 "$(cat "$app/size")" \
      --argjson u1 "$(cat "$base/tar_size")" --argjson u2 "$(cat "$app/tar_size")" \
      '{compressed: ($c1 + $c2), uncompressed: ($u1 + $u2),
        layers: [{compressed: $c1, uncompressed: $u1}, {compressed: $c2, uncompressed: $u2}]}' \
      >"$work/sizes.json"
    rm -rf "$dir" && mv "$work" "$dir"
    for old in "$cache"/nodelet-image-*; do
      if [[ $old != "$dir" ]]; then rm -rf "$old"; fi
    done
  fi
  echo "$ref $dir/image.tar $(jq -r '.manifests[0].digest' "$dir/layout/index.json")"
}
