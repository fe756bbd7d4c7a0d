#!/usr/bin/env bash
# One command: set everything up (quick the second time) and run Sotto.
# Extra arguments go to `sotto` (default: live captions of the bundled demo sample, translated to German).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/packaging/setup.sh" app
cd "$ROOT"
if [ $# -eq 0 ]; then
  exec .venv/bin/sotto run
fi
exec .venv/bin/sotto "$@"
