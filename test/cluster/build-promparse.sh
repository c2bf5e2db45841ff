#!/usr/bin/env bash
# Builds test/cluster/promparse (the Prometheus project's text parser behind a tiny CLI) from Go
# modules, cached under $NODELET_CACHE (default ~/.cache/nodelet) keyed by the parser's module
# version and the program's hash, as build-binaries.sh caches the cluster's binaries. Idempotent:
# prints the binary's path, building it only when the cache has none.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${NODELET_CACHE:-$HOME/.cache/nodelet}
# The version the test cluster's Kubernetes release builds its own metrics with.
COMMON_VERSION=v0.67.5
CLIENT_MODEL_VERSION=v0.6.2
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
hash=$(sha256sum "$here/promparse/main.go" | cut -c1-12)
out="$cache/bin/promparse-$COMMON_VERSION-$hash"
if [[ -x $out/promparse ]]; then echo "$out/promparse"; exit 0; fi
command -v go >/dev/null || { echo "go is required (the machine's Go toolchain)" >&2; exit 1; }
work="$cache/work/promparse-$COMMON_VERSION-$hash"
mkdir -p "$work"
printf 'module nodelet.dev/build/promparse\n\ngo 1.24\n\nrequire (\n\tgithub.com/prometheus/common %s\n\tgithub.com/prometheus/client_model %s\n)\n' \
  "$COMMON_VERSION" "$CLIENT_MODEL_VERSION" >"$work/go.mod"
cp "$here/promparse/main.go" "$work/main.go"
(cd "$work" && go mod tidy >/dev/null 2>&1 && mkdir -p "$out.tmp" && go build -trimpath -ldflags "-s -w" -o "$out.tmp/promparse" .) >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/promparse"
