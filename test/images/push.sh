#!/usr/bin/env bash
# Pushes a test image built by build.sh (its OCI layout in the cache) to a registry with the
# registry HTTP API v2, with curl alone: each blob (config, layers) by a monolithic upload
# (POST, then PUT with its digest), then the manifest under each tag. Idempotent: a blob the
# registry has, or a tag that already names this manifest, is not sent again.
#
#   push.sh [--credentials FILE] [--label KEY=VALUE]... IMAGE REF...
#     IMAGE        busybox or pause (as build.sh names them)
#     REF          host[:port]/repository:tag, e.g. 127.0.0.1:5000/private/busybox:1.35
#     FILE         holds user:password for basic auth (kept off the command line)
#     --label      adds a label to the image config, which makes it a different image (another
#                  image ID) with the same layers. Needed when the runtime also holds the original:
#                  CRI RemoveImage removes every name of an image ID, so a pushed copy with the
#                  original's ID could not be removed without removing the original too.
#
# Plain http only, and only to the registry each REF names: meant for the test cluster's loopback
# registry.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
OCI_MANIFEST=application/vnd.oci.image.manifest.v1+json
log() { printf '[push] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

curl_rc=""
work=""
cleanup() {
  if [[ -n $curl_rc ]]; then rm -f "$curl_rc"; fi
  if [[ -n $work ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# curl with the credentials (if any) from a private config file, never through a proxy.
registry_curl() {
  if [[ -n $curl_rc ]]; then
    curl -sS --noproxy '*' --max-time 60 -K "$curl_rc" "$@"
  else
    curl -sS --noproxy '*' --max-time 60 "$@"
  fi
}

# The OCI layout directory of IMAGE, built if missing.
layout_of() {
  local image=$1 name tar digest
  while read -r name tar digest; do
    if [[ $name == "$image" ]]; then
      echo "$(dirname "$tar")/layout"
      return 0
    fi
  done < <("$here/build.sh")
  die "build.sh knows no image named $image"
}

# A blob of the image: written by this script (a relabelled config or manifest) or from the layout.
blob_path() {
  local layout=$1 digest=$2
  if [[ -n $work && -f $work/${digest#sha256:} ]]; then
    echo "$work/${digest#sha256:}"
  else
    echo "$layout/blobs/sha256/${digest#sha256:}"
  fi
}

# Stores a file as a blob of this push; prints its digest and size.
stage_blob() {
  local file=$1 hex
  hex=$(sha256sum "$file" | cut -d' ' -f1)
  mv "$file" "$work/$hex"
  echo "sha256:$hex $(stat -c %s "$work/$hex")"
}

# The manifest digest to push: the layout's, or that of a copy whose config carries the labels
# (a JSON object). Written deterministically, so the same labels give the same digest again.
manifest_to_push() {
  local layout=$1 labels=$2 digest manifest config config_size
  digest=$(jq -r '.manifests[0].digest' "$layout/index.json")
  if [[ $labels == '{}' ]]; then
    echo "$digest"
    return 0
  fi
  manifest=$(blob_path "$layout" "$digest")
  jq -c --argjson labels "$labels" '.config.Labels = ((.config.Labels // {}) + $labels)' \
    "$(blob_path "$layout" "$(jq -r '.config.digest' "$manifest")")" >"$work/config"
  read -r config config_size < <(stage_blob "$work/config")
  jq -c --arg d "$config" --argjson s "$config_size" '.config.digest = $d | .config.size = $s' "$manifest" >"$work/manifest"
  stage_blob "$work/manifest" | cut -d' ' -f1
}

# Uploads one blob unless the repository has it. Args: base-url repository layout digest
upload_blob() {
  local base=$1 repo=$2 layout=$3 digest=$4 code headers location
  code=$(registry_curl -o /dev/null -w '%{http_code}' -I "$base/v2/$repo/blobs/$digest")
  [[ $code == 200 ]] && return 0
  headers=$(registry_curl -o /dev/null -D - -X POST "$base/v2/$repo/blobs/uploads/")
  [[ $(head -n1 <<<"$headers") == *" 202"* ]] || die "starting an upload to $base/v2/$repo failed: $(head -n1 <<<"$headers")"
  location=$(sed -n 's/^[Ll]ocation: *//p' <<<"$headers" | tr -d '\r')
  [[ -n $location ]] || die "the registry gave no upload location"
  if [[ $location == /* ]]; then location=$base$location; fi
  if [[ $location == *\?* ]]; then location+="&digest=$digest"; else location+="?digest=$digest"; fi
  code=$(registry_curl -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/octet-stream' \
    --data-binary "@$(blob_path "$layout" "$digest")" "$location")
  [[ $code == 201 ]] || die "uploading $digest to $base/v2/$repo failed: HTTP $code"
}

# Pushes the layout's manifest and its blobs as one reference (host/repository:tag).
push_ref() {
  local layout=$1 manifest_digest=$2 ref=$3 host rest repo tag manifest code current digest
  host=${ref%%/*}
  rest=${ref#*/}
  [[ $rest == *:* && $host != "$ref" ]] || die "$ref is not host/repository:tag"
  repo=${rest%:*}
  tag=${rest##*:}
  manifest=$(blob_path "$layout" "$manifest_digest")
  local base="http://$host"
  current=$(registry_curl -o /dev/null -D - -I -H "Accept: $OCI_MANIFEST" "$base/v2/$repo/manifests/$tag" |
    sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: *//p' | tr -d '\r')
  if [[ $current == "$manifest_digest" ]]; then
    log "$ref is already $manifest_digest"
    return 0
  fi
  for digest in $(jq -r '.config.digest, .layers[].digest' "$manifest"); do
    upload_blob "$base" "$repo" "$layout" "$digest"
  done
  code=$(registry_curl -o /dev/null -w '%{http_code}' -X PUT -H "Content-Type: $OCI_MANIFEST" \
    --data-binary "@$manifest" "$base/v2/$repo/manifests/$tag")
  [[ $code == 201 ]] || die "pushing the manifest of $ref failed: HTTP $code"
  log "pushed $ref ($manifest_digest)"
}

main() {
  local credentials="" labels='{}' image layout ref digest
  command -v jq >/dev/null || die "jq is required"
  while [[ ${1:-} == --* ]]; do
    case $1 in
      --credentials) credentials=${2:?--credentials needs a file} ;;
      --label)
        [[ ${2:-} == ?*=* ]] || die "--label needs KEY=VALUE"
        labels=$(jq -c --arg k "${2%%=*}" --arg v "${2#*=}" '. + {($k): $v}' <<<"$labels") ;;
      *) die "unknown option $1" ;;
    esac
    shift 2
  done
  (($# >= 2)) || die "usage: push.sh [--credentials FILE] [--label KEY=VALUE]... IMAGE REF..."
  image=$1
  shift
  if [[ -n $credentials ]]; then
    [[ -r $credentials ]] || die "cannot read $credentials"
    curl_rc=$(mktemp)
    chmod 0600 "$curl_rc"
    printf 'user = "%s"\n' "$(head -n1 "$credentials")" >"$curl_rc"
  fi
  layout=$(layout_of "$image")
  # Blobs this push writes (a relabelled config and manifest); made here, not in the subshell below.
  work=$(mktemp -d)
  digest=$(manifest_to_push "$layout" "$labels")
  for ref in "$@"; do
    push_ref "$layout" "$digest" "$ref"
  done
}

main "$@"
