"""Where the book's commands may write: the one rule shared by the book tooling and the claims command line.

An output is never a chapter source, a file under ``book/``, ``lib/`` or ``tests/``, a file inside a build's
``executed/`` or ``cache/`` folder (another chapter's outputs: only the executor writes there, each chapter to its
own place) or its ``html/`` or ``jb/`` (each HTML build replaces them; ``html/`` is what is published), nor a
build folder inside the source tree other than the default ``_build`` (and folders under it, as
``_build/seed-1``). Paths are compared after resolving symbolic links and ``..``, as the command will write them:
a ``~`` the shell did not expand is a folder named ``~``, never the home folder (a check of the home folder's
``~/../book/x`` would pass a write into ``./book/x``).

:func:`check_output` raises :class:`OutputRefused` (a ``ValueError``) with one line naming the option and why;
:mod:`resnet_theory.book.safety` re-raises it as the book tooling's ``BookError``. This module imports nothing
from :mod:`resnet_theory.book` (the claims package uses it too, and may not import the book tooling).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The folders of the source tree that no command writes into.
SOURCE_FOLDERS = ("book", "lib", "tests")

#: The folders of a build that hold the executor's records of each chapter.
RECORD_FOLDERS = ("executed", "cache")

#: The folders of a build that each HTML build replaces: the book as published, and Jupyter Book's scratch folder.
BUILT_FOLDERS = ("html", "jb")


class OutputRefused(ValueError):
    """An output a command may not write (a source, another chapter's records, a build inside the sources)."""


def is_book_root(folder: Path) -> bool:
    """Whether ``folder`` holds a book (``_toc.yml`` and ``_config.yml``)."""
    return (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file()


def book_roots(*paths: Path) -> list[Path]:
    """Every book root at or above each of ``paths`` (resolved), nearest first, without repeats."""
    found: list[Path] = []
    for given in paths:
        here = Path(os.path.abspath(given)).resolve()
        for folder in (here, *here.parents):
            if folder not in found and is_book_root(folder):
                found.append(folder)
    return found


def toc_entries(root: Path) -> list[str]:
    """Every file named in ``root``'s ``_toc.yml`` (root first), relative to ``root`` without suffix."""
    import yaml

    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    files.append(str(node[key]))
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [f[:-3] if f.endswith(".md") else f for f in files]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _chapter_sources(root: Path) -> set[Path]:
    try:
        entries = toc_entries(root)
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
    one-line :class:`OutputRefused` naming ``option`` and why. ``own`` is the one place inside a build folder
    this output may be (a chapter's own executed notebook); ``build_dirs`` are the run's build folders.

    The rule holds for ``root`` and for every other book at or above ``path`` (another checkout's sources and
    records are as much a source as this one's)."""
    resolved = Path(os.path.abspath(path)).resolve()
    roots = [Path(root).resolve()]
    roots += [other for other in book_roots(resolved) if other not in roots]
    for each in roots:
        _check_against(path, each, option, folder=folder, suffix=suffix, own=own, build_dirs=build_dirs)
    return resolved


def _check_against(
    path: Path,
    root: Path,
    option: str,
    *,
    folder: bool,
    suffix: str | None,
    own: Path | None,
    build_dirs: tuple[Path, ...],
) -> Path:
    given = path
    path = Path(os.path.abspath(path)).resolve()
    root = Path(root).resolve()
    builds = tuple(Path(b).resolve() for b in build_dirs)
    if own is not None and path == Path(own).resolve():
        return path

    def refuse(why: str) -> OutputRefused:
        return OutputRefused(f"{option} {given}: {why}")

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
        if ancestor.name in BUILT_FOLDERS and _is_build(ancestor.parent, root, builds):
            raise refuse(
                f"inside the build folder {ancestor.parent}'s {ancestor.name}/, which each HTML build replaces "
                f"(html/ is the book as published): write outputs beside it"
            )
    if folder and _inside(path, root):
        default = (root / "_build").resolve()
        if not _inside(path, default):
            raise refuse(
                f"a build folder inside the book's source tree {root}; use {default} (the default), a folder "
                f"under it, or one outside the source tree"
            )
    return path


def file_in_the_way(path: Path, folder: bool = False) -> str | None:
    """Why nothing can be written at ``path`` because a file stands where a folder must be (``path`` itself when
    ``folder``, else one of the folders above it), or None."""
    path = Path(path)
    for above in (path, *path.parents) if folder else path.parents:
        if above.exists() and not above.is_dir():
            return "not a folder" if above == path else f"{above} is not a folder (a file stands there)"
    return None


def check_command_output(path: Path, option: str, *, folder: bool = False, suffix: str | None = None) -> Path:
    """:func:`check_output` for a command outside the book tooling (``claims verify --record``, the engine's
    ``train --out-dir``, ``gpu_check OUT``, ``bench --json``), against every book at or above the working
    directory and ``path`` itself (the working directory as the root when there is none): never a source folder
    or another build's records; with ``folder`` (a build folder) not a folder of a source tree other than its
    ``_build``; with ``suffix`` a file of that suffix (so that ``--json README.md`` is refused)."""
    for root in book_roots(Path.cwd(), path) or [Path.cwd()]:
        check_output(path, root, option, folder=folder, suffix=suffix)
    return Path(path)
