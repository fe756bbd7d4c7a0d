"""Writing benchmark tables into docs/BENCHMARKS.md between their markers."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"


def replace_block(begin: str, end: str, block: str, docs: Path = DOCS) -> None:
    """Put ``block`` between the ``begin`` and ``end`` marker lines (which must exist)."""
    text = docs.read_text(encoding="utf-8")
    start, stop = text.index(begin) + len(begin), text.index(end)
    docs.write_text(text[:start] + "\n" + block + text[stop:], encoding="utf-8")
