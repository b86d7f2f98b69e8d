#!/usr/bin/env bash
# Builds (or reuses) the S3-compatible server the storage tests start: versitygw, a real
# S3 gateway (Apache-2.0) whose posix backend keeps each bucket as a directory. Cached
# under ~/.cache keyed by version; prints the path of the binary (progress goes to stderr).
set -euo pipefail
VERSITYGW_VERSION=v1.8.0
cache=${SPARKK8S_S3_CACHE:-$HOME/.cache/sparkk8s-s3}
out="$cache/versitygw-$VERSITYGW_VERSION"
mkdir -p "$out"
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export CGO_ENABLED=0

# One build at a time: sessions started side by side share this cache.
exec 9>"$cache/.build.lock"
flock 9
if [ ! -x "$out/versitygw" ]; then
  echo "building versitygw $VERSITYGW_VERSION" >&2
  start=$SECONDS
  GOBIN="$out/.tmp.$$" GOFLAGS= go install -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
    "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
  mv "$out/.tmp.$$/versitygw" "$out/versitygw"
  rmdir "$out/.tmp.$$"
  echo "built versitygw in $((SECONDS - start))s" >&2
fi
echo "$out/versitygw"
