#!/usr/bin/env bash
# Installs what the Connections UI test drives: Debian's chromium (never a browser
# download from elsewhere), node, and playwright-core from npm, which ships no browser.
# Idempotent: each part is skipped when already present.
set -euo pipefail
cd "$(dirname "$0")/browser"

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules/playwright-core ]; then
    # playwright-core has no install script that fetches browsers; say so anyway.
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --silent
fi
