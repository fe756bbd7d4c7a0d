"""Where a benchmark's result goes: its JSON (when asked for) and its table on standard output."""

from __future__ import annotations

import json
from pathlib import Path


def report(result: dict, json_path: str | None, table: str) -> int:
    """Write ``result`` to ``json_path`` (when given), print ``table``; returns the exit status."""
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    print(table)
    return 0
