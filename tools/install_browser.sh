#!/bin/sh
# Install what tools/browser_check.py needs: Debian's Chromium (the system browser; playwright
# drives it and downloads none of its own) and the playwright package into the given Python.
#   sh tools/install_browser.sh .venv/bin/python
set -e
PY="${1:-python3}"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi
if ! "$PY" -c "import playwright" 2>/dev/null; then
  "$PY" -m pip install --quiet "playwright>=1.40,<2"
fi
