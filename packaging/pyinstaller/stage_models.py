"""Stage the bundled models for an installer: prepared, sha256-checked, nothing else.

    python packaging/pyinstaller/stage_models.py DEST

Each bundled catalogue model is prepared in the model store (``SOTTO_MODELS_DIR``, or the user
cache; once), then its files and manifest are linked (or copied) to ``DEST/<name>/`` and every
file is checked against the digest pinned in ``core/models/registry.py``. Whatever else the store
keeps for a model (the speculative engine's ``hf-converted/``) stays out. The installed app reads
``DEST`` read-only (``core.models.store.bundled_models_dir``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.models.download import sha256_file  # noqa: E402
from core.models.registry import MODELS  # noqa: E402
from core.models.store import MANIFEST, ModelStore  # noqa: E402


class StagingError(Exception):
    """A bundled model could not be staged; ``str()`` says which and why."""


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def stage(dest: Path, store: ModelStore | None = None) -> list[str]:
    """Stage every bundled model into ``dest`` (made anew); returns their names."""
    store = store or ModelStore()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    names = []
    for spec in MODELS.values():
        if not spec.bundled:
            continue
        source = store.location(spec.name)
        if store._check_quick(source) != "ready":
            store.prepare_bundled(spec)
            source = store.model_dir(spec.name)
        target = dest / source.name
        target.mkdir()
        for mfile in spec.files:
            src = next((source / n for n in (mfile.name, *mfile.alternatives) if (source / n).is_file()), None)
            if src is None:
                raise StagingError(f"The model '{spec.name}' in {source} has no {mfile.name}.")
            if mfile.sha256 and sha256_file(src) != mfile.sha256:
                raise StagingError(f"The model file {src} does not match its pinned sha256; "
                                   f"run `sotto models remove {spec.name}` and build again.")
            _link_or_copy(src, target / src.name)
        shutil.copy2(source / MANIFEST, target / MANIFEST)
        if ModelStore(dest / ".none", bundled=dest).shipped_dir(spec.name) is None:
            raise StagingError(f"The staged model '{spec.name}' in {target} is not ready (its manifest disagrees).")
        names.append(spec.name)
    return names


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        staged = stage(Path(sys.argv[1]))
    except Exception as exc:  # one sentence for the build log (StagingError, or a store error)
        sys.exit(f"stage_models: {exc}")
    print(f"staged {', '.join(staged)} in {sys.argv[1]}")
