"""Punctuation after inline math stays on the math's line in the HTML (resnet_theory.book.math_punctuation)."""

from __future__ import annotations

import re

import yaml

from conftest import ROOT, sphinx_page

NOWRAP = '<span class="math-nowrap" style="white-space: nowrap">'


def test_the_book_loads_the_extension():
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert "resnet_theory.book.math_punctuation" in sphinx["extra_extensions"]


def built_page(tmp_path, body: str) -> str:
    """``body`` (reStructuredText) built by Sphinx with the extension alone; the page's HTML."""
    return sphinx_page(tmp_path, "resnet_theory.book.math_punctuation", body)


def test_math_and_the_punctuation_after_it_are_kept_together(tmp_path):
    page = built_page(
        tmp_path, "The bound is :math:`\\gamma/m`. Then :math:`x`, and :math:`y` alone and :math:`z`), end."
    )
    math = '<span class="math notranslate nohighlight">'
    assert (
        f"The bound is {NOWRAP}{math}\\(\\gamma/m\\)</span>.</span> Then {NOWRAP}{math}\\(x\\)</span>,</span> and"
        in page
    )
    assert f"and {math}\\(y\\)</span> alone and {NOWRAP}{math}\\(z\\)</span>),</span> end." in page


def test_a_later_math_takes_its_own_punctuation_not_an_equal_earlier_one(tmp_path):
    """Text nodes compare as strings: a "." after one math must not be taken from another math's wrapper."""
    page = built_page(
        tmp_path, "The same number, :math:`d`. The control with :math:`M`: rules, and moves with :math:`A`."
    )
    math = '<span class="math notranslate nohighlight">'
    assert f"number, {NOWRAP}{math}\\(d\\)</span>.</span> The control" in page
    assert f"moves with {NOWRAP}{math}\\(A\\)</span>.</span></p>" in page
    paragraph = re.search(r"<p>The same number.*?</p>", page, re.S).group(0)
    text = re.sub(r"<[^>]+>", "", paragraph)
    assert text == "The same number, \\(d\\). The control with \\(M\\): rules, and moves with \\(A\\)."


def test_long_inline_math_is_marked_and_every_display_scrolls_in_its_own_box(tmp_path):
    """MathJax 3 does not break lines: a wide display or long inline formula must scroll, never be cut."""
    long_tex = r"\langle a, h\rangle = \tfrac12(\|a\|^2 + \|h\|^2 - \|a - h\|^2) \le \tfrac12(\|a\|^2 + 1)"
    page = built_page(tmp_path, f"Short :math:`x` and long :math:`{long_tex}`, end.")
    assert 'Short <span class="math notranslate nohighlight">\\(x\\)</span>' in page
    assert f'{NOWRAP}<span class="math-long math notranslate nohighlight">\\({long_tex}\\)</span>,</span>' in page
    css = (ROOT / "_static" / "book.css").read_text()
    # the display rule stands on its own (not only inside theorem boxes or a media query)
    display = re.search(r'^mjx-container\[jax="CHTML"\]\[display="true"\] \{([^}]*)\}', css, re.M)
    assert display and "overflow-x: auto" in display.group(1) and "max-width: 100%" in display.group(1)
    phone = css[css.index("@media (max-width: 600px) {\n  span.math.math-long") :]
    rule = phone[: phone.index("}")]
    assert "display: inline-block" in rule and "overflow-x: auto" in rule and "max-width: 100%" in rule
    # MathJax's clipped screen-reader copy must not widen the scroll box (a scrollbar on a formula that fits)
    hidden = re.search(r"mjx-assistive-mml \{([^}]*)\}", css)
    assert hidden and "width: 1px !important" in hidden.group(1)
