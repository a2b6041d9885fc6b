#!/usr/bin/env bash
# Install Debian's Chromium when it is missing (the browser tests drive it with playwright).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
