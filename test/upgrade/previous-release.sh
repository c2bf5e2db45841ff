#!/usr/bin/env bash
# The previous release, for `npm run test:upgrade`: the chart and image of NODELET_PREVIOUS_REF
# (default 61e295a, the last commit before per-node credentials, the bootstrap RBAC and containerd 2),
# exported from git into $NODELET_CACHE/previous/<commit>, its node_modules installed from the npm
# registry, its image built by that commit's own image/build.sh (with a cache directory of its own,
# since each build.sh prunes the layers it did not build), imported into the containerd that
# CONTAINERD_ADDRESS names and tagged docker.io/library/nodelet:<version>-previous.
# The import takes the image's own name (docker.io/library/nodelet:<version>) on the way, which is
# the current image's name too: run image/import.sh after this (the upgrade suite does).
#   previous-release.sh   prints "<commit> <chart dir> <image ref>"
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
: "${CONTAINERD_ADDRESS:?set CONTAINERD_ADDRESS (source .cluster/env)}"
log() { printf '[previous] %s\n' "$*" >&2; }
commit=$(git -C "$repo" rev-parse --verify "${NODELET_PREVIOUS_REF:-61e295a}^{commit}")
cache=${NODELET_CACHE:-$HOME/.cache/nodelet}/previous
src=$cache/$commit
if [[ ! -f $src/.exported ]]; then
  log "exporting $commit into $src"
  rm -rf "$src" && mkdir -p "$src"
  git -C "$repo" archive "$commit" | tar -x -C "$src"
  touch "$src/.exported"
fi
# That commit's lock file is one `npm ci` refuses (issue 31): `npm install` resolves the same tree.
if [[ ! -f $src/node_modules/.package-lock.json ]]; then
  log "installing that commit's node_modules"
  (cd "$src" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
read -r built_ref tar digest < <(NODELET_CACHE=$cache/build bash "$src/image/build.sh")
version=$(jq -r .version "$src/package.json")
previous_ref=docker.io/library/nodelet:$version-previous
ctr_k8s() { ctr --address "$CONTAINERD_ADDRESS" --namespace k8s.io "$@"; }
if [[ $(ctr_k8s images ls "name==$previous_ref" | awk 'NR == 2 { print $3 }') != "$digest" ]]; then
  log "importing $built_ref ($digest) as $previous_ref"
  ctr_k8s images import "$tar" >/dev/null
  ctr_k8s images tag --force "$built_ref" "$previous_ref" >/dev/null
fi
[[ $(ctr_k8s images ls "name==$previous_ref" | awk 'NR == 2 { print $3 }') == "$digest" ]] ||
  { log "error: $previous_ref is not $digest in containerd"; exit 1; }
echo "$commit $src/charts/nodelet $previous_ref"
