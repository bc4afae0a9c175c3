"""Where the book's commands may write, and one run per build folder.

Every command that writes (``run -o``, ``execute``/``run --build-dir``, ``pdf -o``, ``browser --screenshots``)
checks its output with :func:`check_output` before anything runs: an output is never a chapter source, a file
under ``book/``, ``lib/`` or ``tests/``, a file inside a build's ``executed/`` or ``cache/`` folder (another
chapter's outputs: only the executor writes there, each chapter to its own place), nor a build folder inside
the source tree other than the default ``_build`` (and folders under it, as ``_build/seed-1``). Paths are
compared after resolving symbolic links and ``..``.

:class:`BuildLock` holds an exclusive lock on a build folder while a run uses it, so that a second run on the
same build stops at once with one line instead of overwriting the first one's files.
"""

from __future__ import annotations

import os
from pathlib import Path

from .toc import BookError

#: The folders of the source tree that no command writes into.
SOURCE_FOLDERS = ("book", "lib", "tests")

#: The folders of a build that hold the executor's records of each chapter.
RECORD_FOLDERS = ("executed", "cache")


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _chapter_sources(root: Path) -> set[Path]:
    from .toc import toc_files

    try:
        entries = toc_files(root)
    except Exception:  # an unreadable TOC is reported by the command itself
        return set()
    return {(root / f"{entry}.{ext}").resolve() for entry in entries for ext in ("md", "ipynb")}


def _is_build(folder: Path, root: Path, build_dirs: tuple[Path, ...]) -> bool:
    return (
        folder == (root / "_build").resolve()
        or folder in build_dirs
        or (folder / "executed" / "report.json").is_file()
        or (folder / "cache").is_dir()
        and (folder / "executed").is_dir()
    )


def check_output(
    path: Path,
    root: Path,
    option: str,
    *,
    folder: bool = False,
    suffix: str | None = None,
    own: Path | None = None,
    build_dirs: tuple[Path, ...] = (),
) -> Path:
    """The resolved ``path`` if a command may write there (a file, or with ``folder`` a folder it fills); else a
    one-line :class:`BookError` naming ``option`` and why. ``own`` is the one place inside a build folder this
    output may be (a chapter's own executed notebook); ``build_dirs`` are the run's build folders."""
    given = path
    path = Path(os.path.abspath(Path(path).expanduser())).resolve()
    root = Path(root).resolve()
    builds = tuple(Path(b).resolve() for b in build_dirs)
    if own is not None and path == Path(own).resolve():
        return path

    def refuse(why: str) -> BookError:
        return BookError(f"{option} {given}: {why}")

    if suffix is not None and not folder and path.suffix.lower() != suffix:
        raise refuse(f"not a {suffix} file; this command writes a {suffix} file")
    for name in SOURCE_FOLDERS:
        base = (root / name).resolve()
        if _inside(path, base) or (folder and _inside(base, path)):
            raise refuse(f"inside the book's sources ({base}); write outputs elsewhere, e.g. under _build/")
    if not folder and path in _chapter_sources(root):
        raise refuse("is a chapter source; write outputs elsewhere, e.g. under _build/")
    for ancestor in (path, *path.parents):
        if ancestor.name in RECORD_FOLDERS and _is_build(ancestor.parent, root, builds):
            raise refuse(
                f"inside the build folder {ancestor.parent}'s {ancestor.name}/, which holds each chapter's "
                f"executed outputs and records; only the executor writes there"
            )
    if folder and _inside(path, root):
        default = (root / "_build").resolve()
        if not _inside(path, default):
            raise refuse(
                f"a build folder inside the book's source tree {root}; use {default} (the default), a folder "
                f"under it, or one outside the source tree"
            )
    return path


class BuildLock:
    """An exclusive, non-blocking lock on a build folder (``<build>/.lock``) for the length of a run.

    A second run on the same build raises :class:`BookError` at once, naming the process that holds it. The
    lock is the kernel's (``flock``): it goes with the process, so a run killed outright leaves none behind.
    """

    def __init__(self, build_dir: Path):
        self.path = Path(build_dir) / ".lock"
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            self.handle = handle
            return self
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise BookError(
                f"the build folder {self.path.parent} is in use by another run ({holder}); wait for it to "
                f"finish or give another --build-dir"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self.handle = handle
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            self.handle.close()
            self.handle = None
