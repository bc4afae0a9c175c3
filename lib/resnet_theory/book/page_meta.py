"""Sphinx extension: a meta description and Open Graph tags on every page, for search results and link previews.

Each page gets ``<meta name="description">`` and ``og:title``, ``og:description``, ``og:type``, ``og:site_name``;
where the address the book is served at is known (``html_baseurl``, set from ``BOOK_SITE_URL`` by
:mod:`resnet_theory.book.repository`) also ``og:url`` and, when the page has a figure, ``og:image`` (both must be
absolute). The description is the page's first paragraph of prose (math as plain text: ``\\mathbb{R}^d``
becomes ``R^d``, ``\\mapsto`` an arrow), cut at a sentence or word boundary to at most
:data:`DESCRIPTION_LENGTH` characters. Every value is HTML-escaped.
"""

from __future__ import annotations

import html
import re

from docutils import nodes

DESCRIPTION_LENGTH = 200
#: A paragraph shorter than this (a caption, "See below.") is not taken for the page's description.
MIN_PARAGRAPH = 60

_TEX_SYMBOLS = {
    r"\mapsto": "\u21a6",
    r"\to": "\u2192",
    r"\rightarrow": "\u2192",
    r"\in": "\u2208",
    r"\le": "\u2264",
    r"\leq": "\u2264",
    r"\ge": "\u2265",
    r"\geq": "\u2265",
    r"\ne": "\u2260",
    r"\neq": "\u2260",
    r"\cdots": "\u22ef",
    r"\ldots": "\u2026",
    r"\dots": "\u2026",
    r"\cdot": "\u00b7",
    r"\times": "\u00d7",
    r"\circ": "\u2218",
    r"\infty": "\u221e",
    r"\approx": "\u2248",
    r"\sim": "~",
    r"\|": "\u2016",
    r"\ell": "\u2113",
    r"\nabla": "\u2207",
    r"\partial": "\u2202",
    r"\sum": "\u2211",
    r"\prod": "\u220f",
    r"\sqrt": "\u221a",
    r"\log": "log",
    r"\exp": "exp",
    r"\det": "det",
    r"\min": "min",
    r"\max": "max",
    r"\top": "\u1d40",
    r"\pm": "\u00b1",
    r"\quad": " ",
    r"\qquad": " ",
    r"\,": " ",
    r"\;": " ",
    r"\ ": " ",
}
_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi pi rho sigma tau upsilon "
    "phi chi psi omega"
).split()
_SMALL = "αβγδεζηθικλμνξπρστυφχψω"
_CAPITAL = "ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΠΡΣΤΥΦΧΨΩ"
_TEX_SYMBOLS.update({"\\" + name: letter for name, letter in zip(_GREEK, _SMALL)})
_TEX_SYMBOLS.update({"\\" + name.capitalize(): letter for name, letter in zip(_GREEK, _CAPITAL)})
_TEX_SYMBOLS[r"\varepsilon"] = "\u03b5"
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+|\\.")


def plain_math(tex: str) -> str:
    """TeX as plain text for a description: symbols as Unicode, font commands and braces dropped."""
    text = _TEX_COMMAND.sub(lambda m: _TEX_SYMBOLS.get(m.group(0), ""), tex)
    text = text.replace("{", "").replace("}", "")
    return re.sub(r"\s+", " ", text).strip()


def paragraph_text(paragraph: nodes.Element) -> str:
    parts = []
    for node in paragraph.findall(nodes.Text):
        parent = node.parent
        if isinstance(parent, nodes.raw):  # inline HTML: its tags are no text
            continue
        if isinstance(parent, (nodes.math, nodes.math_block)):
            parts.append(plain_math(node.astext()))
        else:
            parts.append(node.astext())
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def shorten(text: str, limit: int = DESCRIPTION_LENGTH) -> str:
    """``text`` cut to at most ``limit`` characters: at the last sentence end that keeps half of it, else at a
    word boundary with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    if end >= limit // 2:
        return cut[: end + 1]
    return cut[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:") + "\u2026"


def _inside(node: nodes.Node, kinds: tuple) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, kinds):
            return True
        parent = parent.parent
    return False


def page_description(doctree: nodes.document) -> str | None:
    """The first paragraph of prose (not in an admonition, a table, a figure caption or a cell's output)."""
    skip = (
        nodes.Admonition,
        nodes.table,
        nodes.figure,
        nodes.caption,
        nodes.footnote,
        nodes.citation,
        nodes.container,
        nodes.sidebar,
        nodes.topic,
    )
    for paragraph in doctree.findall(nodes.paragraph):
        if _inside(paragraph, skip):
            continue
        text = paragraph_text(paragraph)
        if len(text) >= MIN_PARAGRAPH:
            return shorten(text)
    return None


def page_title(doctree: nodes.document) -> str | None:
    for title in doctree.findall(nodes.title):
        return paragraph_text(title)
    return None


def meta_tags(
    title: str | None, description: str | None, site_name: str | None, url: str | None = None, image: str | None = None
) -> str:
    """The tags, one a line, every value escaped."""
    pairs = [
        ("name", "description", description),
        ("property", "og:title", title),
        ("property", "og:description", description),
        ("property", "og:type", "website"),
        ("property", "og:site_name", site_name),
        ("property", "og:url", url),
        ("property", "og:image", image),
    ]
    return "".join(
        f'<meta {attr}="{key}" content="{html.escape(value, quote=True)}" />\n' for attr, key, value in pairs if value
    )


def _first_image(app, doctree: nodes.document) -> str | None:
    for image in doctree.findall(nodes.image):
        # by now the node's uri is relative to the page; its candidates still name the source
        name = app.builder.images.get((image.get("candidates") or {}).get("*", image.get("uri", "")))
        if name:
            return f"{app.builder.imagedir}/{name}"
    return None


def _add_tags(app, pagename, templatename, context, doctree):
    if doctree is None:
        return
    base = (app.config.html_baseurl or "").rstrip("/")
    url = image = None
    if base:
        url = f"{base}/{pagename}{app.builder.out_suffix}"
        found = _first_image(app, doctree)
        image = f"{base}/{found}" if found else None
    site = app.config.html_title or app.config.project
    context["metatags"] = context.get("metatags", "") + meta_tags(
        page_title(doctree) or context.get("title"), page_description(doctree), site, url, image
    )


def setup(app):
    app.connect("html-page-context", _add_tags)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
