#!/usr/bin/env bash
# One command: set everything up (quick the second time) and run Sotto: the desktop app
# (control window, tray icon, caption overlay); with no display, live terminal captions of
# the bundled demo sample instead. Extra arguments go to `sotto` (e.g. `caption talk.mp3`).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/packaging/setup.sh" app
cd "$ROOT"
if [ "$(uname -s)" = Linux ]; then
  # the applications-menu launcher (double-click start); rewritten only when it changed
  .venv/bin/sotto desktop-entry --install --quiet || echo "Could not install the desktop launcher; Sotto runs anyway." >&2
fi
if [ $# -eq 0 ]; then
  exec .venv/bin/sotto run
fi
exec .venv/bin/sotto "$@"
