#!/usr/bin/env bash
# Builds (or reuses) Kueue's manager from its Go module at a pinned release, into ~/.cache
# keyed by version, and prints the directory holding `kueue-manager` and `crd/` (Kueue's
# CRDs, copied from the module's config/components/crd/bases; progress goes to stderr).
# Its own lock: two sessions never build it at once.
set -euo pipefail
KUEUE_VERSION=v0.17.0
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/kueue-$KUEUE_VERSION"
mkdir -p "$out"
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export CGO_ENABLED=0 GOFLAGS=

exec 9>"$cache/.kueue.lock"
flock 9
if [ ! -x "$out/kueue-manager" ]; then
  echo "building kueue $KUEUE_VERSION" >&2
  start=$SECONDS
  tmp=$(mktemp -d "$out/.gobin.XXXXXX")
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION"
  mv "$tmp/kueue" "$out/kueue-manager"
  rmdir "$tmp"
  echo "built kueue in $((SECONDS - start))s" >&2
fi
if [ ! -d "$out/crd" ]; then
  src="$GOMODCACHE/sigs.k8s.io/kueue@$KUEUE_VERSION/config/components/crd/bases"
  [ -d "$src" ] || GOFLAGS= go mod download "sigs.k8s.io/kueue@$KUEUE_VERSION"
  tmp=$(mktemp -d "$out/.crd.XXXXXX")
  cp "$src"/*.yaml "$tmp/"
  chmod u+w "$tmp"/*.yaml
  chmod 755 "$tmp"
  mv "$tmp" "$out/crd"
fi
echo "$out"
