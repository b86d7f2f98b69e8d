#!/usr/bin/env bash
# Installs (or reuses) tinyproxy, the real HTTP CONNECT proxy of the proxy tests, from
# Debian's tinyproxy-bin package, unpacked into ~/.cache (no system service is installed or
# started), and prints the binary's path (progress goes to stderr). Its own lock: two
# sessions never install it at once.
set -euo pipefail
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
mkdir -p "$cache"
exec 9>"$cache/.tinyproxy.lock"
flock 9
found=$(ls -d "$cache"/tinyproxy-*/usr/bin/tinyproxy 2>/dev/null | head -1 || true)
if [ -n "$found" ] && [ -x "$found" ]; then
  echo "$found"
  exit 0
fi
echo "installing tinyproxy-bin from Debian's packages" >&2
start=$SECONDS
tmp=$(mktemp -d "$cache/.tinyproxy.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download -q tinyproxy-bin >&2 2>/dev/null); then
  apt-get update -q >&2
  (cd "$tmp" && apt-get download -q tinyproxy-bin >&2)
fi
deb=$(ls "$tmp"/tinyproxy-bin_*.deb)
version=$(dpkg-deb -f "$deb" Version)
out="$cache/tinyproxy-$version"
rm -rf "$out"
dpkg-deb -x "$deb" "$out"
"$out/usr/bin/tinyproxy" -v >&2
echo "installed tinyproxy $version in $((SECONDS - start))s" >&2
echo "$out/usr/bin/tinyproxy"
