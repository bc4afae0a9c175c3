"""Sphinx extension: serve MathJax from the built book itself, so math renders with no network.

MathJax 3.2.2 comes from the pinned PyPI package ``sphinx-mathjax-offline`` (installed by ``make install``;
its files are never committed here). We only use its files: they are copied into ``_static/mathjax`` of the
HTML output after each build, and ``mathjax_path`` points there instead of at a CDN.

**Safe math.** Page text (claim statements, captions) reaches MathJax, whose TeX ``html`` extension would turn
``\\href{javascript:...}`` into a live link and let ``\\style``/``\\class``/``\\cssId`` restyle the page. Every
page's MathJax configuration (:func:`safe_mathjax_config`) therefore removes that extension (not loaded, not
autoloaded, not loadable with ``\\require``) and loads MathJax's ``ui/safe`` extension as a second line (only
http, https and file links; a short list of styles; no classes or ids but MathJax's own).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from sphinx.util.fileutil import copy_asset

MATHJAX_PATH = "mathjax/tex-chtml.js"


def mathjax_source() -> Path:
    """The folder holding MathJax's ``es5`` build inside the installed package."""
    try:
        dist = metadata.distribution("sphinx-mathjax-offline")
    except metadata.PackageNotFoundError as exc:
        raise RuntimeError(
            "MathJax for offline pages comes from the package sphinx-mathjax-offline; run `make install`"
        ) from exc
    folder = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    if not (folder / "tex-chtml.js").is_file():
        raise RuntimeError(f"MathJax's tex-chtml.js not found under {folder}; reinstall sphinx-mathjax-offline")
    return folder


def safe_mathjax_config(config: dict | None) -> dict:
    """``config`` (a ``mathjax3_config``, possibly None) with the TeX ``html`` extension disabled and MathJax's
    safe mode on; every other setting kept."""
    import copy

    merged = copy.deepcopy(config) if isinstance(config, dict) else {}
    loader = merged.setdefault("loader", {})
    loader["load"] = [*[x for x in loader.get("load", []) if x != "[tex]/html"], "ui/safe"]
    tex = merged.setdefault("tex", {})
    packages = tex.get("packages")
    if isinstance(packages, list):
        tex["packages"] = [p for p in packages if p != "html"]
    else:
        tex["packages"] = {**(packages or {}), "[-]": ["html"]}
    tex["autoload"] = {**tex.get("autoload", {}), "html": []}
    require = tex.setdefault("require", {})
    require["allow"] = {**require.get("allow", {}), "html": False}
    return merged


def _set_path(app, config):
    config.mathjax_path = MATHJAX_PATH
    config.mathjax3_config = safe_mathjax_config(config.mathjax3_config)


def _copy(app, exc):
    if exc is None and app.builder.format == "html":
        copy_asset(str(mathjax_source()), str(Path(app.outdir) / "_static" / "mathjax"))


def setup(app):
    mathjax_source()  # fail early, with the fix, if the files are missing
    app.connect("config-inited", _set_path, priority=900)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
