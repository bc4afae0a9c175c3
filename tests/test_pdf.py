"""The PDF builder: its small parts, and a small book printed as a reader would print it (tests/reader_book.py:
paper size, hidden inputs, a wide table). The whole book printed to PDF is tested in test_book.py."""

from __future__ import annotations

import inspect
import re

import pytest

from reader_book import HIDDEN_MARKER, WIDE_MARKER
from resnet_theory.book.pdf import MARGIN_IN, PAPERS, build_pdf, main, page_title, paper_size
from test_book import chromium_or_skip

from conftest import one_line_error


def test_page_titles_drop_the_book_name():
    assert page_title("<html><title>Claims ledger &#8212; Residual Networks, Executed</title>") == "Claims ledger"
    assert page_title("<title>A: b - c</title>") == "A: b"
    assert page_title("<html></html>") == "page"


def test_no_built_book_is_one_line_and_exit_2(tmp_path, capsys):
    err = one_line_error(capsys, main, [str(tmp_path / "nowhere")], code=2)
    assert "no built book" in err and "make book" in err


def test_an_unknown_paper_is_one_line_and_exit_2(tmp_path, capsys):
    err = one_line_error(capsys, main, [str(tmp_path), "--paper", "a5"], code=2)
    assert "unknown paper 'a5'" in err and "a4, letter" in err
    with pytest.raises(ValueError, match="unknown paper"):
        paper_size("legal")
    assert paper_size("A4") == PAPERS["a4"] and paper_size("letter") == (8.5, 11.0)


# --- printed from a small built book (tests/reader_book.py), as a reader would print it ---------------------------
def _printed(reader_html, tmp_path, paper: str):
    from pypdf import PdfReader

    chromium = chromium_or_skip()
    out = tmp_path / f"book-{paper}.pdf"
    printed = build_pdf(reader_html, ["book/intro", "book/reader"], out, chromium, paper=paper)
    return printed, PdfReader(out)


@pytest.mark.browser
@pytest.mark.parametrize("paper, points", [("a4", (595.9, 841.9)), ("letter", (612.0, 792.0))])
def test_the_pdf_is_a4_by_default_or_letter_as_chosen(reader_html, tmp_path, paper, points):
    printed, reader = _printed(reader_html, tmp_path, paper)
    assert [p.entry for p in printed] == ["book/intro", "book/reader"]
    assert len(reader.pages) == sum(p.pages for p in printed)
    for page in reader.pages:
        assert (float(page.mediabox.width), float(page.mediabox.height)) == pytest.approx(points, abs=0.5)
    assert inspect.signature(build_pdf).parameters["paper"].default == "a4"


@pytest.mark.browser
def test_hidden_inputs_stay_hidden_and_wide_tables_fit_the_page(reader_html, tmp_path):
    """The hidden cell's code and its "Show code cell source" toggle are not printed (its output is); the ledger's
    evidence is opened out; every row of a table of twelve long columns is printed, its last column included, with
    no text starting past the right margin."""
    _, reader = _printed(reader_html, tmp_path, "a4")
    text = "\n".join(page.extract_text() for page in reader.pages)
    flat = re.sub(r"\s+", "", text)
    assert HIDDEN_MARKER not in flat and "Showcodecellsource" not in flat
    assert "the output of a cell whose input is hidden" in " ".join(text.split())
    # the ledger's <details>, opened (the erratum's evidence is its claim's, printed once, in the claim's card)
    assert "Whatwaschecked" in flat and "Controlinput" in flat
    assert flat.count(WIDE_MARKER) == 3, "a row of the wide table lost its last column"
    assert "statedin" in flat  # the card's location label (the ledger column's header)
    # a claim's evidence is printed once, in its card: not again under its erratum (the part "corrected statement")
    assert flat.count("correctedstatement") == 1
    right = float(reader.pages[0].mediabox.width) - MARGIN_IN * 72 + 2
    for number, page in enumerate(reader.pages):
        starts = []

        def visit(piece, cm, tm, font, size, starts=starts):
            if piece.strip():
                starts.append((tm[4] * cm[0] + tm[5] * cm[2] + cm[4], piece.strip()[:30]))

        page.extract_text(visitor_text=visit)
        past = [s for s in starts if s[0] > right]
        assert not past, f"page {number + 1}: text past the right margin: {past[:5]}"


@pytest.mark.browser
def test_the_ledger_prints_compactly_with_all_its_evidence(reader_html, tmp_path):
    """A ledger of 20 claims with their evidence (the small book's page book/printed, tests/reader_book.py): with the
    print layout (cards in 8.5 pt, the evidence as tight tables) it prints on at most 6 A4 pages, where the screen's
    layout printed 11; every claim and its evidence is still printed, with where it is stated."""
    from pypdf import PdfReader

    printed = build_pdf(reader_html, ["book/printed"], tmp_path / "ledger.pdf", chromium_or_skip(), paper="a4")
    assert printed[0].pages <= 6, f"the 20-claim ledger printed on {printed[0].pages} A4 pages"
    reader = PdfReader(tmp_path / "ledger.pdf")
    flat = re.sub(r"\s+", "", "\n".join(page.extract_text() for page in reader.pages))
    missing = [i for i in range(20) if f"shamir/lemma-{i}" not in flat or f"Lemma{i},Section3" not in flat]
    assert not missing, f"claims not printed whole: {missing}"
    assert flat.count("Controlinput") == 20 and flat.count("statedin") == 20, "a claim's evidence was not printed"


@pytest.mark.browser
def test_print_opens_the_ledgers_evidence_not_a_chapters_nor_a_hidden_cell(tmp_path):
    """OPEN_DETAILS: the ledger's claims and errata open; a chapter's claim evidence (printed in the ledger) and a
    hidden cell's toggle stay closed; any other ``<details>`` opens."""
    from resnet_theory.book.devtools import Browser
    from resnet_theory.book.pdf import OPEN_DETAILS

    page = tmp_path / "page.html"
    page.write_text(
        "<div class='claims-browser'><details id='ledger' class='claim-details'><summary>s</summary>x</details></div>"
        "<ul class='claims-errata'><li><details id='erratum' class='claim-details'><summary>s</summary>x</details>"
        "</li></ul><details id='chapter' class='claim-details'><summary>s</summary>x</details>"
        "<details id='hidden' class='hide above-input'><summary>s</summary>x</details>"
        "<details id='other'><summary>s</summary>x</details>"
    )
    with Browser(chromium_or_skip()) as browser:
        tab = browser.open(page.as_uri(), 800)
        browser.evaluate(tab, OPEN_DETAILS)
        opened = browser.evaluate(tab, "Array.from(document.querySelectorAll('details[open]')).map(d => d.id)")
    assert opened == ["ledger", "erratum", "other"]
