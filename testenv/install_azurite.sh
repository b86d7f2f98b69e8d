#!/usr/bin/env bash
# Installs (or reuses) Azurite, Microsoft's Azure Storage emulator (the blob service of the
# abfs:// upload tests), from the npm registry at a pinned release into ~/.cache, keyed by
# version, and prints the path of its blob server's entry point, run with node (progress
# goes to stderr). 3.35.0 is the newest release whose engines accept Node 20 (3.36 wants 21,
# 3.37 wants 22). Its own lock: two sessions never install it at once.
set -euo pipefail
AZURITE_VERSION=3.35.0
cache=${SPARKK8S_TESTENV_CACHE:-$HOME/.cache/sparkk8s-testenv}
out="$cache/azurite-$AZURITE_VERSION"
entry="$out/node_modules/azurite/dist/src/blob/main.js"
mkdir -p "$cache"

exec 9>"$cache/.azurite.lock"
flock 9
if [ ! -f "$entry" ]; then
  echo "installing azurite $AZURITE_VERSION" >&2
  start=$SECONDS
  tmp=$(mktemp -d "$cache/.azurite.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  npm install --prefix "$tmp" --no-audit --no-fund --omit=dev --loglevel=error \
    "azurite@$AZURITE_VERSION" >&2
  test -f "$tmp/node_modules/azurite/dist/src/blob/main.js"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  echo "installed azurite in $((SECONDS - start))s" >&2
fi
echo "$entry"
