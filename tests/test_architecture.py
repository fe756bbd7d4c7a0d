"""The house rules, checked on the source: core never imports a front door, a benchmark or Qt,
and core's parts import each other without a loop (``TYPE_CHECKING`` imports included)."""

from __future__ import annotations

import ast
from itertools import pairwise
from pathlib import Path

from conftest import ROOT

CORE = ROOT / "core"
FORBIDDEN = ("app", "bench", "PySide6", "shiboken6", "PyQt5", "PyQt6")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Absolute names of every module ``path`` imports, with line numbers."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(text: str, package: str) -> list[tuple[str, int]]:
    """Absolute names imported by source ``text`` of a module in ``package`` (every branch,
    including ``if TYPE_CHECKING:`` and imports inside functions)."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((name, node.lineno))
            # "from . import x" / "from .pkg import mod" may name submodules
            out += [(f"{name}.{alias.name}", node.lineno) for alias in node.names]
    return out


def _part(name: str) -> str | None:
    """The part of core a module belongs to: ``core.asr.speculative.decoder`` → ``asr``
    (None for the ``core`` package itself, whose ``__init__`` only holds the logger)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "core" else None


def _core_files() -> list[Path]:
    return sorted(CORE.rglob("*.py"))


def test_core_imports_no_front_door_benchmark_or_qt():
    bad = []
    for path in _core_files():
        for name, line in _imports(path):
            if name.split(".")[0] in FORBIDDEN:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def test_core_parts_import_each_other_without_a_loop():
    existing = {p.stem if p.suffix else p.name for p in CORE.iterdir()}
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for path in _core_files():
        src = _part(_module_name(path))
        if src is None:
            continue
        for name, line in _imports(path):
            dst = _part(name)
            if dst is None or dst == src or dst not in existing:
                continue
            edges.setdefault(src, set()).add(dst)
            where.setdefault((src, dst), f"{path.relative_to(ROOT)}:{line}")
    cycle = _find_cycle(edges)
    assert cycle is None, "import loop: " + " → ".join(cycle) + "\n" + "\n".join(
        where[(x, y)] for x, y in pairwise(cycle))


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A loop in a directed graph (first node repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_checks_see_a_loop_and_a_forbidden_import():
    """The checker itself: a relative import under TYPE_CHECKING, a Qt import inside a function
    and a two-part loop are all found."""
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..captions.policy import X\n"
           "def f():\n    from PySide6 import QtCore\n")
    names = [n for n, _ in _imports_in(src, "core.translate")]
    assert "core.captions.policy" in names and "PySide6" in names
    assert _find_cycle({"captions": {"translate"}, "translate": {"captions"}}) == ["captions", "translate", "captions"]
    assert _find_cycle({"session": {"asr", "translate"}, "translate": {"text"}, "asr": {"text"}}) is None


def test_core_loads_without_qt():
    """Importing every core module at run time pulls in no Qt either."""
    import subprocess
    import sys

    code = (
        "import sys, pkgutil, importlib, core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [m for m in sys.modules if m.startswith(('PySide6', 'shiboken6', 'PyQt', 'app', 'bench'))]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
