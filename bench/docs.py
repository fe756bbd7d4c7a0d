"""Writing benchmark tables into docs/BENCHMARKS.md between their markers."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"


def replace_block(begin: str, end: str, block: str, docs: Path = DOCS) -> None:
    """Put ``block`` between the ``begin`` and ``end`` marker lines (which must exist)."""
    text = docs.read_text(encoding="utf-8")
    start, stop = text.index(begin) + len(begin), text.index(end)
    docs.write_text(text[:start] + "\n" + block + text[stop:], encoding="utf-8")


def write_section(begin: str, end: str, block: str, heading: str, docs: Path = DOCS) -> None:
    """Put ``block`` between the ``begin`` and ``end`` markers; where they are not there yet, append
    ``heading`` and the markers with ``block`` to the end of the file."""
    text = docs.read_text(encoding="utf-8")
    if begin in text:
        replace_block(begin, end, block + "\n", docs)
    else:
        docs.write_text(text.rstrip("\n") + f"\n\n{heading}\n\n{begin}\n{block}\n{end}\n", encoding="utf-8")
