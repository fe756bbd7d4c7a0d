"""The entry point of an installed (PyInstaller) Sotto: the `sotto` command, frozen.

Two things differ from `python -m app` and are handled here, before the command line runs:

- `sotto -c CODE` runs CODE like `python -c`: the app re-runs its own executable to probe the
  display (`app/main.py`), and in a bundle that executable is this program.
- A windowed build (Windows' `sottow.exe`) has no stdout/stderr; they go to the null device so
  that one-sentence errors never crash it (the log file keeps the details).
"""

from __future__ import annotations

import os
import sys


def _quiet_streams() -> None:
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def main() -> int:
    _quiet_streams()
    if len(sys.argv) >= 3 and sys.argv[1] == "-c":  # python -c CODE, for the app's own probes
        code, sys.argv = sys.argv[2], ["-c", *sys.argv[3:]]
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
        return 0
    from app.cli import main as sotto

    return sotto()


if __name__ == "__main__":
    sys.exit(main())
