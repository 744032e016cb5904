#!/usr/bin/env bash
# Headless Chromium for tests/report/test_html_browser.py (Debian's package; the test drives it with
# playwright's bundled driver, so no browser build is downloaded).  Idempotent: installs only
# when /usr/bin/chromium is missing.  DejaVu fonts so that text renders on a bare machine.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "setup-browser: /usr/bin/chromium is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q chromium fonts-dejavu-core
/usr/bin/chromium --version
