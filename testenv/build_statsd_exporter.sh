#!/usr/bin/env bash
# Builds (or reuses) Prometheus' statsd_exporter, the metrics tests' StatsD server (UDP
# statsd in, HTTP /metrics out), from its Go module at a pinned release into ~/.cache, keyed
# by version, and prints the binary's path (progress goes to stderr). Its own lock: two
# sessions never build it at once.
set -euo pipefail
STATSD_EXPORTER_VERSION=v0.31.0
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/statsd_exporter-$STATSD_EXPORTER_VERSION"
mkdir -p "$out"
export GOMODCACHE=${GOMODCACHE:-$HOME/.cache/go-mod}
export CGO_ENABLED=0 GOFLAGS=

exec 9>"$cache/.statsd_exporter.lock"
flock 9
if [ ! -x "$out/statsd_exporter" ]; then
  echo "building statsd_exporter $STATSD_EXPORTER_VERSION" >&2
  start=$SECONDS
  tmp=$(mktemp -d "$out/.gobin.XXXXXX")
  GOBIN="$tmp" go install -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" \
    "github.com/prometheus/statsd_exporter@$STATSD_EXPORTER_VERSION"
  mv "$tmp/statsd_exporter" "$out/statsd_exporter"
  rmdir "$tmp"
  echo "built statsd_exporter in $((SECONDS - start))s" >&2
fi
echo "$out/statsd_exporter"
