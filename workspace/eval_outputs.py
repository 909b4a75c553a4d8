"""A skill's eval records on disk: the folder skill-creator's tools read (``judges/eval_records.py`` lays it out),
replaced whole, so that no run folder of an earlier report (a case once unscored, now graded) lingers beside the
new ones and a reader never sees half of either."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from workspace.atomic import atomic_write


def write_eval_outputs(folder: Path, files: dict[str, str]) -> None:
    """``files``: each file's text by its path under ``folder``. Written beside it, then swapped in."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for relative, text in files.items():
            atomic_write(fresh / relative, text)
        if folder.exists():
            old = folder.with_name(f".{folder.name}-old")
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
            fresh.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            fresh.rename(folder)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
