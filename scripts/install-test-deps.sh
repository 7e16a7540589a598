#!/usr/bin/env bash
# System packages the tests need beyond pip: headless Chromium for the HTML report tests.
# Installs with apt-get when running as root (CI and the dev machines); otherwise says what to do.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the HTML report tests (apt-get)…"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "note: chromium not found and not root; HTML browser tests will be skipped." >&2
  echo "      install it with: sudo apt-get install chromium" >&2
fi
