#!/usr/bin/env bash
# One command: set everything up (quick the second time) and run the whole test suite.
# Extra arguments go to pytest. Tests use temporary settings/data directories and a
# project-local model store (.cache/models), never the user's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/packaging/setup.sh" test
cd "$ROOT"
export SOTTO_MODELS_DIR=${SOTTO_MODELS_DIR:-$ROOT/.cache/models}
export QT_QPA_PLATFORM=offscreen
# Two processes where there are two cores (SOTTO_TEST_WORKERS overrides; 0: one process): most tests
# run real models on one core each, and the real-time ones leave a core idle while they wait for audio.
workers=${SOTTO_TEST_WORKERS:-$(( $(nproc 2>/dev/null || echo 1) >= 2 ? 2 : 0 ))}
parallel=()
[ "$workers" -gt 0 ] && parallel=(-n "$workers" --dist loadgroup)
exec .venv/bin/python -m pytest -ra --durations=25 "${parallel[@]}" "$@"
