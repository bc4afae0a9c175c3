"""A partial build's HTML: links to the pages it left out are plain text, not warnings.

After ``execute --only book/X`` in a fresh build folder, the other chapters have no executed notebook, so the
staged TOC leaves them out (:func:`resnet_theory.book.html_build.staged_toc`). The pages that are built still
link to them (the root page lists every chapter with ``{doc}``; a chapter cites another's section with
``{ref}``), and the build treats every unresolved reference as an error. This Sphinx extension is added to the
staged configuration of such a build only, with the left-out pages and their labels
(:func:`left_out_config`): a reference to one of those pages, or to a label defined in one, is rendered as its
text without a link and without a warning. Every other unresolved reference still fails the build, and a full
build never loads this extension.
"""

from __future__ import annotations

import re
from pathlib import Path

#: A MyST target line, ``(label)=``, as the chapters put before their sections.
_TARGET = re.compile(r"^\(([^()\s]+)\)=\s*$", re.MULTILINE)

CONFIG_PAGES = "resnet_theory_left_out_pages"
CONFIG_LABELS = "resnet_theory_left_out_labels"


def left_out_config(root: Path, pages: list[str]) -> dict:
    """The staged ``_config.yml`` settings of a build that leaves out ``pages`` (TOC entries): this extension,
    the pages and the labels their sources define."""
    labels: set[str] = set()
    for page in pages:
        source = root / f"{page}.md"
        if source.is_file():
            labels.update(label.lower() for label in _TARGET.findall(source.read_text(encoding="utf-8")))
    return {
        "sphinx": {
            "extra_extensions": [__name__],
            "config": {CONFIG_PAGES: sorted(pages), CONFIG_LABELS: sorted(labels)},
        }
    }


def _left_out_target(app, env, node, contnode):
    """``missing-reference``: the reference's own text, unlinked, for a reference to a left-out page or to one of
    its labels (so it is no longer missing, and no handler warns); None otherwise, so that Sphinx warns as it
    does in a full build."""
    from sphinx.util import docname_join

    target = str(node.get("reftarget", ""))
    if node.get("reftype") == "doc" and docname_join(node.get("refdoc", ""), target) in app.config[CONFIG_PAGES]:
        return contnode
    if node.get("reftype") in ("ref", "numref") and target.lower() in app.config[CONFIG_LABELS]:
        return contnode
    return None


def setup(app):
    app.add_config_value(CONFIG_PAGES, [], "env")
    app.add_config_value(CONFIG_LABELS, [], "env")
    app.connect("missing-reference", _left_out_target)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
