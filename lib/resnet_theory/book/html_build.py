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

from . import jupyter_prose, repository
from .partial_build import left_out_config

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


def staged_toc(root: Path, executed: Path) -> list[str]:
    """Write the TOC the HTML is built with into ``executed``: the book's ``_toc.yml`` less the pages that have no
    executed notebook there (a fresh build folder after ``execute --only``), and less any part left empty; return
    the pages it left out. Sphinx would otherwise fail on every entry of the TOC that names no document."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    left_out: list[str] = []

    def present(entry) -> bool:
        name = str(entry)
        name = name[:-3] if name.endswith(".md") else name
        if (executed / f"{name}.ipynb").is_file():
            return True
        left_out.append(name)
        return False

    def prune(node):
        if isinstance(node, list):
            return [kept for child in node if (kept := prune(child)) is not None]
        if not isinstance(node, dict):
            return node
        if "file" in node and not present(node["file"]):
            return None
        node = dict(node)
        for key in ("parts", "chapters", "sections"):
            if key in node:
                node[key] = prune(node[key] or [])
                if not node[key]:
                    del node[key]
                    if "file" not in node and "root" not in node:  # a part (or group) with nothing left
                        return None
        return node

    if isinstance(toc, dict) and "root" in toc:
        present(toc["root"])  # a missing root page is Sphinx's own error: it stays in the TOC
        toc = prune(toc)
    (executed / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    return left_out


def _configure_partial(config_path: Path, settings: dict) -> None:
    """Add a partial build's extension and settings (:mod:`resnet_theory.book.partial_build`) to the staged
    ``_config.yml``."""
    import yaml

    config = yaml.safe_load(config_path.read_text(encoding="utf-8")) or {}
    sphinx = config.setdefault("sphinx", {})
    sphinx["extra_extensions"] = [*(sphinx.get("extra_extensions") or []), *settings["sphinx"]["extra_extensions"]]
    sphinx["config"] = {**(sphinx.get("config") or {}), **settings["sphinx"]["config"]}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


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
    left_out = staged_toc(root, executed)
    if left_out:
        _configure_partial(executed / "_config.yml", left_out_config(root, left_out))
        print(
            f"[book] the HTML leaves out the pages never executed in this build folder (links to them are plain "
            f"text): {', '.join(left_out)}",
            flush=True,
        )
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
        jupyter_prose.rewrite_folder(target / "_sources")  # the downloads' prose shows its numbers in JupyterLab
    return proc.returncode, target / "index.html"
