#!/usr/bin/env bash
# Builds (or reuses) fake-gcs-server, the GCS emulator of the gs:// upload tests (it serves
# the JSON API and keeps each bucket as a directory), from its Go module at a pinned release
# into ~/.cache, keyed by version; prints the binary's path (progress goes to stderr). Its
# own lock: two sessions never build it at once.
set -euo pipefail
FAKE_GCS_SERVER_VERSION=v1.56.1
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/fake-gcs-server-$FAKE_GCS_SERVER_VERSION"
mkdir -p "$out"
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export CGO_ENABLED=0 GOFLAGS=

exec 9>"$cache/.fake-gcs-server.lock"
flock 9
if [ ! -x "$out/fake-gcs-server" ]; then
  echo "building fake-gcs-server $FAKE_GCS_SERVER_VERSION" >&2
  start=$SECONDS
  tmp=$(mktemp -d "$out/.gobin.XXXXXX")
  GOBIN="$tmp" go install -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
    "github.com/fsouza/fake-gcs-server@$FAKE_GCS_SERVER_VERSION"
  mv "$tmp/fake-gcs-server" "$out/fake-gcs-server"
  rmdir "$tmp"
  echo "built fake-gcs-server in $((SECONDS - start))s" >&2
fi
echo "$out/fake-gcs-server"
