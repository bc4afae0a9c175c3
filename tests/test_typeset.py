"""Math the reader sees typeset, not TeX errors: MathJax's output of every page, the claims ledger included.

MathJax does not leave raw TeX behind when a formula is wrong: it typesets an error box (``mjx-merror``, a
parse error such as an unbalanced brace) or, for a macro it does not know, the macro's name in red
(``noundefined``), and a formula whose braces do not balance is left as raw text. This check looks in the DOM
after MathJax ran for all three, on every page of the built book.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from resnet_theory.book.devtools import CHROMIUM_FLAGS

from conftest import ROOT

#: Appended to a copy of the page: after MathJax has typeset, mark the body so that ``--dump-dom`` waits for it.
DONE = """
<script>
window.addEventListener('load', function () {
  function done() { document.body.setAttribute('data-typeset', 'done'); }
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { MathJax.startup.promise.then(done, done); }
  else { done(); }
});
</script>
"""


def mathjax_errors(dom: str) -> list[str]:
    """TeX errors in a page's DOM after MathJax ran (one line each): error boxes, undefined macros (read from
    the MathML MathJax keeps beside its output, since the visible glyphs are CSS content), and ``\\(`` left
    untypeset in a span the ledger marks for MathJax (an unbalanced brace swallows the closing delimiter)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(dom, "html.parser")
    out = []
    for error in soup.find_all(["mjx-merror", "merror"]):
        out.append(f"TeX error: {error.get('data-mjx-error') or error.get_text(' ', strip=True)}")
    for text in soup.find_all("mtext"):
        if (text.get("mathcolor") or "").lower() == "red":
            out.append(f"undefined macro: {text.get_text('', strip=True)}")
    for span in soup.select(".mathjax_process"):
        for tag in span.find_all("mjx-container"):
            tag.decompose()
        if "\\(" in span.get_text(""):
            out.append(f"not typeset: {span.get_text('', strip=True)[:80]}")
    return out


def typeset_dom(chromium: str, page: Path) -> str:
    probe = page.with_name(page.stem + ".typeset-probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", DONE + "</body>"), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            proc = subprocess.run(
                [
                    chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    "--virtual-time-budget=20000",
                    "--window-size=1400,1000",
                    "--dump-dom",
                    probe.resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=180,
            )
    finally:
        probe.unlink(missing_ok=True)
    if proc.returncode != 0 or 'data-typeset="done"' not in proc.stdout:
        raise RuntimeError(f"MathJax did not finish on {page.name} (exit {proc.returncode}): {proc.stderr[-1500:]}")
    return proc.stdout


def test_error_boxes_undefined_macros_and_untypeset_spans_are_found():
    dom = (
        '<html><body><mjx-container><mjx-merror data-mjx-error="Missing close brace"></mjx-merror>'
        '<mjx-assistive-mml><math><mtext mathcolor="red">\\foo</mtext><mtext>\\bar</mtext></math>'
        '</mjx-assistive-mml></mjx-container><span class="mathjax_process">\\(\\frac{1\\) and '
        "<mjx-container><mjx-mi>x</mjx-mi></mjx-container></span></body></html>"
    )
    assert mathjax_errors(dom) == [
        "TeX error: Missing close brace",
        "undefined macro: \\foo",
        "not typeset: \\(\\frac{1\\) and",
    ]
    assert (
        mathjax_errors(
            '<html><body><span class="mathjax_process"><mjx-container><mjx-mi>x</mjx-mi>'
            "</mjx-container></span></body></html>"
        )
        == []
    )


@pytest.mark.book
def test_every_formula_of_every_page_typesets_without_errors(built_book):
    from resnet_theory.book.toc import toc_files
    from test_book import chromium_or_skip

    chromium = chromium_or_skip()
    assert built_book.returncode == 0, built_book.output[-3000:]
    problems = []
    for entry in toc_files(ROOT):
        page = built_book.html / f"{entry}.html"
        problems += [f"{entry}: {line}" for line in mathjax_errors(typeset_dom(chromium, page))]
    assert not problems, "\n".join(problems)


if __name__ == "__main__":  # python tests/test_typeset.py [_build/html]: the check on an existing build
    import shutil
    import sys

    html_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    for entry in (
        "book/ledger",
        "book/linear",
        "book/expressivity",
        "book/smooth_maps",
        "book/linear_predictors",
        "book/experiments",
    ):
        dom = typeset_dom(shutil.which("chromium"), html_dir / f"{entry}.html")
        print(entry, len(re.findall("<mjx-container", dom)), "formulas", mathjax_errors(dom))
