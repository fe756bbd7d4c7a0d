"""The house rules, checked on the source (every import counts: inside functions and under
``TYPE_CHECKING`` too):

- core never imports a front door, a benchmark or Qt;
- core's parts import each other without a loop, and no module of core or app is part of an
  import cycle;
- app and bench use no underscore name of a core module;
- only a runner touches a library's private parts.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from itertools import pairwise
from pathlib import Path

from conftest import ROOT

CORE = ROOT / "core"
APP = ROOT / "app"
BENCH = ROOT / "bench"
FORBIDDEN = ("app", "bench", "PySide6", "shiboken6", "PyQt5", "PyQt6")
PROJECT = ("core", "app", "bench")
# A runner is the one file that bends a library to Sotto's needs: a file named ``*_runner.py``, or
# this one (the speculative engine's runner for transformers and torch, named before the rule).
RUNTIME = "core/asr/speculative/runtime.py"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, int]]:
    """Absolute names of every module ``path`` imports, with line numbers."""
    return _imports_in(path.read_text(encoding="utf-8"), _package(path))


def _package(path: Path) -> str:
    """The package that relative imports in ``path`` start from."""
    module = _module_name(path)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a ``from … import`` in ``package`` imports from."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports_in(text: str, package: str) -> list[tuple[str, int]]:
    """Absolute names imported by source ``text`` of a module in ``package`` (every branch,
    including ``if TYPE_CHECKING:`` and imports inside functions)."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            name = _from_module(node, package)
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


def test_every_entry_point_loads_core_before_numpy():
    """``core.compute`` sets how the libraries' idle threads wait, read by each library as it loads:
    numpy loaded first keeps its OpenBLAS threads spinning beside CTranslate2 (``python -m
    bench.verified`` did: tiny.en's decodes took 1.6 times as long on two cores). Each entry point,
    in a fresh process: the app's command, and every benchmark module as ``python -m`` runs it."""
    import subprocess

    modules = ["app.cli", "app.main"] + [f"bench.{p.stem}" for p in sorted(BENCH.glob("*.py")) if p.stem != "__init__"]
    code = (
        "import builtins, importlib, sys\n"
        "order = []\n"
        "real = builtins.__import__\n"
        "def watch(name, *a, **k):\n"
        "    top = name.split('.')[0]\n"
        "    if top in ('numpy', 'core') and top not in order and top not in sys.modules:\n"
        "        order.append(top)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = watch\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(order)\n"
        "sys.exit(0 if order[:1] == ['core'] else 1)\n"
    )
    wrong = {}
    for module in modules:
        proc = subprocess.run([sys.executable, "-c", code, module], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            wrong[module] = (proc.stdout + proc.stderr)[-300:]
    assert not wrong, wrong


# -- import cycles among modules ----------------------------------------------------------------------

def _sources(*folders: Path) -> dict[str, tuple[str, str]]:
    """Every module under ``folders``: its name → (source text, file relative to the root)."""
    return {_module_name(p): (p.read_text(encoding="utf-8"), p.relative_to(ROOT).as_posix())
            for folder in folders for p in sorted(folder.rglob("*.py"))}


def _longest_known(name: str, known) -> str | None:
    """``name`` or the longest part of it before a dot that is a module in ``known``."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return None


def _modules_imported(text: str, package: str, known) -> list[tuple[str, int]]:
    """The modules of ``known`` that source ``text`` of a module in ``package`` imports, with line
    numbers: ``import a.b`` imports ``a.b``; ``from a import b`` imports the module ``a.b`` if
    there is one, else ``a`` (``b`` is then a name in ``a``). Relative imports are resolved from
    ``package``; imports inside functions and under ``TYPE_CHECKING`` count like the others."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_module(node, package)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        out += [(found, node.lineno) for found in (_longest_known(n, known) for n in names) if found]
    return out


def _module_graph(sources: dict[str, tuple[str, str]]) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """Which module imports which (module granularity), and where, from ``sources`` (module →
    (text, file)).

    Importing ``a.b.c`` also runs the ``__init__`` of ``a.b`` and ``a`` first: those packages count
    as imported too, except the ones the importing module is inside (they are always imported
    before it)."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for module, (text, file) in sources.items():
        package = module if file.endswith("__init__.py") else module.rpartition(".")[0]
        inside = {".".join(module.split(".")[:end]) for end in range(1, module.count(".") + 1)}
        for target, line in _modules_imported(text, package, sources):
            parts = target.split(".")
            above = [".".join(parts[:end]) for end in range(1, len(parts))]
            for dst in [target] + [p for p in above if p in sources and p not in inside]:
                if dst == module:
                    continue
                edges.setdefault(module, set()).add(dst)
                note = "" if dst == target else f" (importing {target} runs it first)"
                where.setdefault((module, dst), f"{file}:{line} imports {dst}{note}")
    return edges, where


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One shortest loop (first node repeated at the end) in each group of nodes that reach each
    other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1 or node in edges.get(node, ()):
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return sorted(_shortest_loop(edges, min(group), group) for group in groups)


def _shortest_loop(edges: dict[str, set[str]], start: str, within: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself through ``within``."""
    before: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(before[path[-1]])
                return path[::-1] + [start]
            if nxt in within and nxt not in before:
                before[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in no loop")


def _cycle_report(sources: dict[str, tuple[str, str]]) -> list[str]:
    """Each import cycle among ``sources``, named with the import behind each step."""
    edges, where = _module_graph(sources)
    return ["  " + " → ".join(loop) + "".join(f"\n      {where[step]}" for step in pairwise(loop))
            for loop in _cycles(edges)]


def test_no_module_of_core_or_app_is_part_of_an_import_cycle():
    """Module granularity: a ring of imports between modules (``a`` imports ``b``, ``b`` imports
    ``a``, or longer rings) fails, wherever the imports stand in the files."""
    report = _cycle_report(_sources(CORE, APP))
    assert not report, "import cycles:\n" + "\n".join(report)


def test_the_module_check_resolves_imports_and_names_the_cycle():
    """The checker itself, on made-up modules: a relative import under TYPE_CHECKING and one inside
    a function close a loop; ``from . import sibling`` imports the sibling, not its package; a
    package's ``__init__`` runs before its modules for importers outside it only."""
    sources = {
        "core": ("", "core/__init__.py"),
        "core.audio": ("from .loopback import Source\n", "core/audio/__init__.py"),
        "core.audio.loopback": ("def f():\n    from .macos_tap import run\n", "core/audio/loopback.py"),
        "core.audio.macos_tap": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from ..audio.loopback import Source\nfrom . import convert\n"
                                 "from .. import logger\n", "core/audio/macos_tap.py"),
        "core.audio.convert": ("import numpy\n", "core/audio/convert.py"),
        "core.asr": ("", "core/asr/__init__.py"),
        "core.asr.engine": ("from ..audio.convert import x\n", "core/asr/engine.py"),
    }
    edges, _ = _module_graph(sources)
    assert edges["core.audio.macos_tap"] == {"core.audio.loopback", "core.audio.convert", "core"}
    assert edges["core.asr.engine"] == {"core.audio.convert", "core.audio"}
    report = _cycle_report(sources)
    assert len(report) == 1 and "core.audio.loopback → core.audio.macos_tap → core.audio.loopback" in report[0]
    assert "core/audio/loopback.py:2 imports core.audio.macos_tap" in report[0]
    assert "core/audio/macos_tap.py:3 imports core.audio.loopback" in report[0]
    # a module of a package that imports a name from the package's own __init__: a real cycle
    sources["core.audio.convert"] = ("from . import Source\n", "core/audio/convert.py")
    sources["core.audio.loopback"] = ("from .convert import x\n", "core/audio/loopback.py")
    assert ["core.audio → core.audio.loopback → core.audio.convert → core.audio"] == [
        r.splitlines()[0].strip() for r in _cycle_report(sources)]


# -- app and bench use core's public names only -----------------------------------------------------

def _private(name: str) -> bool:
    """An underscore name (``_x``, ``__x``), not a dunder (``__x__``)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _in_core(name: str) -> bool:
    return name == "core" or name.startswith("core.")


def _core_owner(node: ast.AST, bound: dict[str, str]) -> str | None:
    """The dotted name of ``node`` when it is a name or attribute chain that starts at a core
    module (``llama_runner.LlamaRunner`` → ``core.translate.llama_runner.LlamaRunner``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in bound:
        return None
    return ".".join([bound[node.id]] + parts[::-1])


def _private_uses_of_core(text: str, package: str, known) -> list[tuple[int, str]]:
    """Underscore names of core modules that source ``text`` imports (``from core.x import _y``,
    ``import core._x``) or reaches through a core module (``mod._y``, ``mod.Class._y``,
    ``setattr(mod, "_y", …)``, ``monkeypatch.setattr("core.x._y", …)``), with line numbers.
    A core module is known by the import that binds it (``import core.x as mod``,
    ``from core.x import mod``)."""
    tree = ast.parse(text)
    bound: dict[str, str] = {}  # local name → the core module it names
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in (a for a in node.names if _in_core(a.name)):
                found += [(node.lineno, alias.name)] if any(map(_private, alias.name.split("."))) else []
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    bound["core"] = "core"
        elif isinstance(node, ast.ImportFrom) and _in_core(base := _from_module(node, package)):
            for alias in node.names:
                name = f"{base}.{alias.name}"
                if any(map(_private, name.split("."))):
                    found.append((node.lineno, name))
                elif name in known:
                    bound[alias.asname or alias.name] = name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = _core_owner(node.value, bound)
            if owner:
                found.append((node.lineno, f"{owner}.{node.attr}"))
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and _private(name.value):
                owner = _core_owner(node.args[0], bound)
                if owner:
                    found.append((node.lineno, f"{owner}.{name.value}"))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and re.fullmatch(r"core(\.\w+)+", node.value) and any(map(_private, node.value.split(".")))):
            found.append((node.lineno, node.value))
    return sorted(set(found))


def test_app_and_bench_use_no_underscore_name_of_core():
    """An underscore name in core is core's own business: app and bench use what core makes public."""
    known = _sources(CORE)
    bad = []
    for folder in (APP, BENCH):
        for path in sorted(folder.rglob("*.py")):
            bad += [f"{path.relative_to(ROOT)}:{line} uses {name}"
                    for line, name in _private_uses_of_core(path.read_text(encoding="utf-8"), _package(path), known)]
    assert not bad, "\n".join(bad)


def test_the_private_use_check_sees_imports_attributes_and_patches():
    known = {"core", "core.audio", "core.audio.sources", "core.translate", "core.translate.llama_runner"}
    src = ("from core.audio.sources import _sounddevice, load_sounddevice\n"
           "from core.translate import llama_runner as lr\n"
           "import core.translate.llama_runner\n"
           "def f(monkeypatch):\n"
           "    lr._without_weight_repacking = None\n"
           "    core.translate.llama_runner._reserve(1)\n"
           "    setattr(lr, '_params_lock', None)\n"
           "    monkeypatch.setattr('core.audio.sources._sounddevice', None)\n"
           "    lr.LlamaRunner(1)._x, lr.REPACK_WEIGHTS, self._y, other._z\n")
    assert _private_uses_of_core(src, "app", known) == [
        (1, "core.audio.sources._sounddevice"), (5, "core.translate.llama_runner._without_weight_repacking"),
        (6, "core.translate.llama_runner._reserve"), (7, "core.translate.llama_runner._params_lock"),
        (8, "core.audio.sources._sounddevice")]


# -- only runners touch a library's private parts --------------------------------------------------

# Underscore names that their library documents as public: not private parts.
DOCUMENTED_PUBLIC = {
    "_MEIPASS": "PyInstaller's folder of a frozen app's files, documented as sys._MEIPASS",
}


def _third_party(module: str) -> bool:
    top = module.split(".")[0]
    return bool(top) and top not in sys.stdlib_module_names and top not in PROJECT and top != "__future__"


def _own_private_names(tree: ast.AST) -> set[str]:
    """The underscore names a module defines itself: its functions, classes, variables and
    parameters, attributes it sets on ``self``/``cls``, and names it imports from Sotto."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
        elif isinstance(node, ast.arg):
            own.add(node.arg)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            own.add(node.attr)
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PROJECT):
            own.update(alias.asname or alias.name for alias in node.names)
    return {name for name in own if _private(name)}


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _library_reach(text: str) -> list[tuple[int, str]]:
    """Where source ``text`` touches a library's private parts, with line numbers:

    - ``obj._x`` (also ``getattr``/``setattr``/``hasattr``/``delattr(obj, "_x")``) where ``obj``
      is not ``self``/``cls`` and ``_x`` is none of this module's own underscore names
      (:func:`_own_private_names`): no type is known statically, so an underscore attribute this
      module did not define belongs to someone else, a library or another module (whose private
      name is no business of this one either);
    - importing an underscore name or module of a third-party library;
    - subclassing a class imported from a third-party library (overriding its methods reaches
      into how it works inside);
    - setting or deleting an attribute of a name imported from a third-party library (patching it).

    Not seen: a library's private attribute whose name this module also uses for its own, and
    objects patched through a name that was not bound by an import."""
    tree = ast.parse(text)
    own = _own_private_names(tree)
    library: dict[str, str] = {}  # names bound by importing from a third-party library → what they name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in (a for a in node.names if _third_party(a.name)):
                if any(map(_private, alias.name.split("."))):
                    found.append((node.lineno, f"imports {alias.name}"))
                local = alias.asname or alias.name.split(".")[0]
                library[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and not node.level and _third_party(node.module or ""):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if any(map(_private, name.split("."))):
                    found.append((node.lineno, f"imports {name}"))
                library[alias.asname or alias.name] = name

    def foreign(name: str) -> bool:
        return _private(name) and name not in own and name not in DOCUMENTED_PUBLIC

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            receiver = node.value
            if foreign(node.attr) and not (isinstance(receiver, ast.Name) and receiver.id in ("self", "cls")):
                found.append((node.lineno, f"{ast.unparse(node)}: {node.attr} is not this module's own"))
            if isinstance(node.ctx, (ast.Store, ast.Del)) and _root_name(receiver) in library:
                found.append((node.lineno, f"patches {ast.unparse(node)} of {library[_root_name(receiver)]}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2):
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and foreign(name.value):
                found.append((node.lineno, f"{ast.unparse(node)}: {name.value} is not this module's own"))
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _root_name(base) in library:
                    found.append((node.lineno, f"class {node.name} subclasses {ast.unparse(base)} of "
                                               f"{library[_root_name(base)]}"))
    return sorted(set(found))


def _is_runner(path: Path) -> bool:
    return path.stem.endswith("_runner") or path.relative_to(ROOT).as_posix() == RUNTIME


def test_only_runners_touch_a_library_s_private_parts():
    """A library's private parts (underscore names, its classes' insides, patches) are touched in
    one file per library, named as its runner (``*_runner.py``, and ``core/asr/speculative/runtime.py``);
    everywhere else in core uses what libraries make public. How a file is judged: :func:`_library_reach`."""
    assert (ROOT / RUNTIME).is_file(), f"{RUNTIME} is gone: update RUNTIME"
    bad = []
    for path in _core_files():
        if not _is_runner(path):
            bad += [f"{path.relative_to(ROOT)}:{line} {what}"
                    for line, what in _library_reach(path.read_text(encoding="utf-8"))]
    assert not bad, "only a runner may touch a library's private parts:\n" + "\n".join(bad)


def test_the_library_check_sees_private_attributes_subclasses_and_patches():
    src = ("import sys\nimport soundcard as sc\nfrom faster_whisper import WhisperModel\n"
           "from llama_cpp import _internals\n"
           "class Reader:\n"
           "    def __init__(self, rec):\n"
           "        self._rec = rec\n"
           "    def same(self, other):\n"
           "        return other._rec is self._rec\n"
           "def f(pa):\n"
           "    pa._pulse._pa_stream_get_state(1), getattr(pa, '_ffi'), getattr(sys, '_MEIPASS', None)\n"
           "    sc.default_speaker = None\n"
           "class Model(WhisperModel):\n"
           "    pass\n")
    assert [line for line, _ in _library_reach(src)] == [4, 11, 11, 11, 12, 13]
