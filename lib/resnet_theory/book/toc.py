"""The book's table of contents: where the book's root is, which pages ``_toc.yml`` lists, and their sources.

:class:`BookError` is every problem with the book or the request that the tooling finds before anything runs;
the command line (:mod:`resnet_theory.book.cli`) prints it as one ``error:`` line and exits 2.
"""

from __future__ import annotations

from pathlib import Path


class BookError(Exception):
    """A problem with the book or the request, found before anything runs."""


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            return folder
    raise BookError(f"no _toc.yml and _config.yml found at or above {here}; run from the book's root or pass --root")


def toc_files(root: Path) -> list[str]:
    """Every file named in ``_toc.yml`` (root first), as paths relative to ``root`` without suffix (the walk is
    :func:`resnet_theory.outputs.toc_entries`, which the output rule below the book tooling uses too)."""
    from ..outputs import toc_entries

    return toc_entries(root)


def chapter_source(root: Path, entry: str) -> Path:
    path = root / f"{entry}.md"
    if not path.is_file():
        raise BookError(f"{entry} is in _toc.yml but {path} does not exist")
    return path
