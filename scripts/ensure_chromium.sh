#!/usr/bin/env bash
# The browser the explorer page's end-to-end tests drive: Debian's chromium and chromedriver (/usr/bin), installed
# from the distribution's packages when missing (as root, or with sudo). Nothing is downloaded by a test tool.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  exit 0
fi
as_root=""
[ "$(id -u)" -eq 0 ] || as_root="sudo"
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get install -y -q chromium chromium-driver >/dev/null \
  || { $as_root apt-get update -q >/dev/null && $as_root apt-get install -y -q chromium chromium-driver >/dev/null; }
chromium --version
