"""What a chapter's figures print, in the words its cells give them, is typeset as the prose is (issue 33): every
string literal of a cell that draws (legends, titles, axis labels, the series' names), every figure caption and
the chapters' visible tables' row labels have no ASCII spelling of mathematics outside their ``$...$`` math.
Figure 4 of the linear chapter read "residual, A = 0" and "plain, small random W", its Figure 1
"near-pi rotation x stretch", the smooth-maps grid caption "the plain split h, h^-1, h, ...", the expressivity
width figure "smallest working k"; a legend and a table of the linear chapter showed Python's list repr
"[-3.0, 0.5, 1, 2]"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from resnet_theory.ledger_html import ASCII_MATH

BOOK = Path(__file__).resolve().parents[1] / "book"
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", re.S | re.M)
#: A string given to a figure as text: a keyword or call that names, titles or labels, or the name beside a series
#: in a tuple ("(res_curve, "residual, A = 0")", "(2, "smallest working k", "o-")").
LITERAL = re.compile(
    r"""(?:label=|title=|xlabel=|ylabel=|set_title\(|suptitle\(|set_xlabel\(|set_ylabel\(|\(\w+, )"""
    r"""(?:[rRfF]{1,2})?"((?:[^"\\\n]|\\.)*)\""""
)
CAPTION = re.compile(r"^\s+caption: \"(.*?)\"\s*$", re.S | re.M)
#: Beyond the ledger's scan: a single letter set equal to a number ("A = 0"), a letter alone after a word that
#: names it ("random W", "working k"), a negative power ("h^-1"), a Greek name or "x" as a symbol inside a word.
EXTRA = re.compile(
    r"\b[A-Za-z] = \d|\b(?:random|working|small|large|of|width) [A-Za-z]\b(?! [a-z])|\w\^-\w|-pi\b|\bx stretch"
)


def _shown(text: str) -> str:
    """``text`` without its math and its format fields (``{name}``, ``{x:g}``)."""
    text = re.sub(r"(?<!\\)\$[^$]*\$", " ", text)
    return re.sub(r"\{[^{}]*\}", "1", text)


def _found(text: str) -> list[str]:
    shown = _shown(text)
    return [m.group(0) for m in ASCII_MATH.finditer(shown)] + [m.group(0) for m in EXTRA.finditer(shown)]


def _drawing_cells(source: str) -> list[str]:
    return [cell for cell in CELL.findall(source) if re.search(r"\b(plt|ax|axes|fig)\.|\.set_(title|xlabel)", cell)]


@pytest.mark.parametrize("chapter", sorted(p.stem for p in BOOK.glob("*.md")))
def test_what_a_figure_prints_is_typeset(chapter):
    source = (BOOK / f"{chapter}.md").read_text(encoding="utf-8")
    found = {}
    for cell in _drawing_cells(source):
        for caption in CAPTION.findall(cell):
            found.update({caption[:50]: _found(re.sub(r"\s+", " ", caption))} if _found(caption) else {})
        body = re.sub(r"^---\n.*?\n---\n", "", cell, flags=re.S)
        for literal in LITERAL.findall(body):
            if _found(literal):
                found[literal] = _found(literal)
    assert not found, found


def test_no_cell_shows_a_python_list_as_a_label():
    """``str(spectrum)`` and ``f"{spectrum}"`` print a NumPy or Python list ("[-3.0, 0.5, 1, 2]")."""
    for path in BOOK.glob("*.md"):
        for cell in CELL.findall(path.read_text(encoding="utf-8")):
            assert not re.search(r"\"target\": str\(|label=f\"\{spectrum\}", cell), (path.name, cell[:80])


def test_the_scan_sees_what_it_must():
    for text in (
        "residual, A = 0",
        "plain, small random W",
        "near-pi rotation x stretch",
        "plain split h, h^-1, h",
        "smallest working k (all draws fit)",
    ):
        assert _found(text), text
    for text in (
        "residual, $A = 0$",
        "plain, small random $W$",
        r"near-$\pi$ rotation $\times$ stretch",
        r"smallest working $k$ (all draws fit)",
        "polar split, {kind}",
        "o-",
        "training loss (mini-batch mean)",
        "step",
        "learning rate {plan.lr} (the paper's), one line per seed",
        "JL width, per-unit thresholds",
    ):
        assert not _found(text), (text, _found(text))
