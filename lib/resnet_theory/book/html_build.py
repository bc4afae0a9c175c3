"""The HTML: Jupyter Book over the executed notebooks (``execute_notebooks: off``, ``-W -n --keep-going``).

The book's configuration and assets are staged beside the executed notebooks, so Jupyter Book itself never
executes anything; the HTML lands in ``<build>/html``. Its math is served from the book itself
(:mod:`resnet_theory.book.offline_mathjax`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from . import repository

BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib")

BOOK_FOLDERS = ("_static",)


def stage_book(root: Path, executed: Path) -> None:
    """Copy the configuration and any non-chapter assets of ``book/`` next to the executed notebooks."""
    for name in BOOK_FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, executed / name)
    for name in BOOK_FOLDERS:
        if (root / name).is_dir():
            shutil.copytree(root / name, executed / name, dirs_exist_ok=True)
    book = root / "book"
    if book.is_dir():
        for path in book.rglob("*"):
            if path.is_file() and path.suffix not in (".md", ".ipynb", ".py") and "__pycache__" not in path.parts:
                target = executed / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def html_dir(build_dir: Path) -> Path:
    """Where the HTML goes: ``<build>/html`` (Jupyter Book always writes into ``<path-output>/_build/html``)."""
    return build_dir / "html"


def build_html(root: Path, build_dir: Path) -> tuple[int, Path]:
    """Jupyter Book over the executed notebooks, warnings as errors; returns (exit code, index.html)."""
    executed = build_dir / "executed"
    stage_book(root, executed)
    # Repository, issue, edit and launch buttons where the repository's address is known (see repository.py).
    repo, site = repository.from_environment(root)
    print(f"[book] {repository.configure(executed / '_config.yml', repo, site)}", flush=True)
    # Jupyter Book writes to <path-output>/_build/html; build in a scratch folder and move the result.
    scratch = build_dir / "jb"
    cmd = [
        sys.executable,
        "-c",
        "from jupyter_book.cli.main import main; main()",
        "build",
        str(executed),
        "--path-output",
        str(scratch),
        "-W",
        "-n",
        "--keep-going",
        "--all",
    ]
    proc = subprocess.run(cmd)
    target = html_dir(build_dir)
    if (scratch / "_build" / "html").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(scratch / "_build" / "html"), str(target))
        repository.fill_install_cells(target / "_sources", repo)  # the downloads' install cells
    return proc.returncode, target / "index.html"
