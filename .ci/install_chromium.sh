#!/usr/bin/env bash
# Install Debian's Chromium for the real-browser tests (tests/test_browser.py) when it is missing.
# The system package only: never `playwright install`, which downloads a browser build of its own.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install_chromium.sh: chromium is missing and this user cannot apt-get install it" >&2
    exit 1
fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null 2>&1 || { echo "install_chromium.sh: chromium still not on PATH" >&2; exit 1; }
echo "install_chromium.sh: installed $(chromium --version 2>/dev/null | head -n 1)"
