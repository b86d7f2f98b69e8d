#!/usr/bin/env bash
# Prints a directory holding Kueue's manager as `kueue-manager` and `crd/` (Kueue's CRDs,
# copied from the module's config/components/crd/bases), keyed by the plane's build
# (progress goes to stderr). The manager itself is built by testenv/build.sh, in the plane's
# `go build`: Kueue's version is pinned in testenv/go.mod, and the k8s.io packages it shares
# with the plane compile once. Its own lock: two sessions never write it at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KUEUE_VERSION=$(awk '$1=="sigs.k8s.io/kueue"{print $2}' "$here/go.mod")
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
bin=$("$here/build.sh")
out="$cache/kueue-$KUEUE_VERSION-$(basename "$bin")"
mkdir -p "$out"

exec 9>"$cache/.kueue.lock"
flock 9
ln -sfn "$bin/kueue" "$out/kueue-manager"
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
