#!/usr/bin/env bash
# Builds (or reuses) Toxiproxy, the fault-injecting TCP proxy of the fault tests, from its Go
# module into ~/.cache, keyed by version, and prints the path of toxiproxy-server (progress
# goes to stderr). Its own lock: two sessions never build it at once.
set -euo pipefail
TOXIPROXY_VERSION=v2.12.0
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/toxiproxy-$TOXIPROXY_VERSION"
mkdir -p "$out"
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export CGO_ENABLED=0 GOFLAGS=

exec 9>"$cache/.toxiproxy.lock"
flock 9
if [ ! -x "$out/toxiproxy-server" ]; then
  echo "building toxiproxy $TOXIPROXY_VERSION" >&2
  start=$SECONDS
  tmp=$(mktemp -d "$out/.gobin.XXXXXX")
  GOBIN="$tmp" go install -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
    "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
  mv "$tmp/server" "$out/toxiproxy-server"
  rmdir "$tmp"
  echo "built toxiproxy in $((SECONDS - start))s" >&2
fi
echo "$out/toxiproxy-server"
