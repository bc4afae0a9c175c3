"""The whole book, executed with the quick profile and built with warnings as errors, then read in Chromium."""

from __future__ import annotations

import html
import json
import os
import re
import unicodedata

import pytest

from resnet_theory.book.browser import book_pages, check_page, find_chromium, html_problems, serve
from resnet_theory.book.claims_files import load_claims
from resnet_theory.book.toc import toc_files
from resnet_theory.record import claim_defects
from resnet_theory.verdicts import VERDICTS

from conftest import ROOT

pytestmark = pytest.mark.book

REVIEWS = ("linear", "expressivity", "smooth_maps", "linear_predictors", "experiments")


def chromium_or_skip() -> str:
    """The Chromium binary; a skip with the reason where there is none, a failure in CI."""
    chromium = find_chromium()
    if chromium is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is required in CI (.ci/run installs Debian's chromium)")
        pytest.skip("no Chromium on this machine (apt-get install chromium); the browser check did not run")
    return chromium


def test_every_chapter_executes_and_the_html_builds_with_warnings_as_errors(built_book):
    assert built_book.returncode == 0, built_book.output[-6000:]
    report = json.loads((built_book.build_dir / "executed" / "report.json").read_text())
    status = {c["chapter"]: c for c in report["chapters"]}
    assert set(status) == set(toc_files(ROOT))
    for name, entry in status.items():
        assert entry["status"] in ("ok", "static"), f"{name}: {entry}"
        assert entry["profile"] == "quick"
    assert (built_book.html / "index.html").is_file()
    for chapter in REVIEWS:  # figures survive execution and land in the page as images
        page = (built_book.html / "book" / f"{chapter}.html").read_text()
        assert page.count("<img") >= 1, f"{chapter}.html has no figure"
    print("\nchapter times (s): " + ", ".join(f"{k}: {v['seconds']}" for k, v in status.items()))


def test_every_chapter_recorded_its_claims_and_the_ledger_page_shows_them(built_book):
    claims = load_claims(built_book.build_dir / "executed")
    chapters = {c.chapter for c in claims}
    assert set(REVIEWS) <= chapters
    assert all(c.verdict in VERDICTS for c in claims)
    page = (built_book.html / "book" / "ledger.html").read_text()
    for claim in claims:
        assert claim.id in page
        assert f'href="{claim.chapter}.html#{claim.section}"' in page
        target = (built_book.html / "book" / f"{claim.chapter}.html").read_text()
        assert f'id="{claim.section}"' in target, f"{claim.id}: no section {claim.section} in {claim.chapter}.html"


def test_the_quick_verdicts_are_the_expected_ones_and_every_declared_claim_is_in_the_build(built_book):
    """The quick profile's verdicts at seed 0, checked on the one book build the suite makes: every claim the
    library declares is recorded, with the verdict of ``tests/golden/verdicts_quick_seed0.json`` (the verdicts
    the book publishes; a change there is a change of a published verdict, made on purpose and said in the
    changelog)."""
    from resnet_theory.claims.registry import all_claims

    recorded = {c.id: c.verdict for c in load_claims(built_book.build_dir / "executed")}
    declared = [d.id for d in all_claims()]
    assert sorted(recorded) == sorted(declared), "the build's claims differ from the declared ones"
    expected = json.loads((ROOT / "tests" / "golden" / "verdicts_quick_seed0.json").read_text())
    differ = {cid: (expected.get(cid), v) for cid, v in recorded.items() if expected.get(cid) != v}
    assert not differ, f"verdicts (expected, built) that differ: {differ}"


def test_every_checkable_claim_has_a_negative_control_that_fails(built_book):
    """Every checked claim has a control that failed and says what its input is (control.input); a claim that is
    not checkable here names what it needs and gives no statistical reason (that would be 'undecided')."""
    claims = load_claims(built_book.build_dir / "executed")
    assert claims
    missing, holding, no_input = [], [], []
    for c in claims:
        if c.verdict == "not-checkable-here" and not c.evidence:
            assert c.reason and c.needs, f"{c.id}: not checkable here without a reason and what it needs"
            continue
        if c.control is None:
            missing.append(c.id)
        elif c.control["holds"] is not False or not c.control["summary"]:
            holding.append(f"{c.id}: {c.control}")
        elif len(str(c.control.get("input", "")).split()) < 4:
            no_input.append(c.id)
    assert not missing, f"checkable claims without a negative control: {missing}"
    assert not holding, "negative controls that hold:\n" + "\n".join(holding)
    assert not no_input, f"controls that do not say what their input is (control.input): {no_input}"
    assert claim_defects(claims) == []


def test_errata_are_proof_gaps_or_corrections_with_their_evidence(built_book):
    claims = load_claims(built_book.build_dir / "executed")
    page = (built_book.html / "book" / "ledger.html").read_text()
    # the errata of the printed papers, then the corrections of an abstract's, a review's or our reconstruction's
    # statement (each its own list); the book's own questions are findings, never errata (issue 31)
    errata = "".join(part.split("</ul>", 1)[0] for part in page.split('class="claims-errata')[1:])
    for c in claims:
        if c.verdict == "corrected":
            assert c.corrected_statement and not c.evidence["printed"]["holds"] and c.evidence["corrected"]["holds"]
        if c.verdict == "proof-gap":  # some declared step fails; every failing one has its wording and its repair
            assert c.evidence["printed"]["holds"] and c.failing_steps and c.proof_step and c.repair
            for s in c.failing_steps:
                assert not c.evidence[s.keys[0]]["holds"] and c.evidence[s.keys[1]]["holds"] and s.step and s.repair
        if c.verdict in ("corrected", "proof-gap") and c.source != "question":
            assert f">{c.id}</a>" in errata, f"{c.id} missing from the errata list"
        if c.source == "question":
            assert f">{c.id}</a>" not in errata, f"{c.id}: the book's own question is a finding, not an erratum"


def test_mathjax_is_served_from_the_build_not_a_cdn(built_book):
    assert (built_book.html / "_static" / "mathjax" / "tex-chtml.js").is_file()
    for page in (built_book.html / "book").glob("*.html"):
        text = page.read_text()
        assert "cdn.jsdelivr.net" not in text and "mathjax@3" not in text, page.name


def test_every_page_renders_in_headless_chromium(built_book):
    chromium = chromium_or_skip()
    problems = []
    for page in book_pages(built_book.html, toc_files(ROOT)):
        report = check_page(chromium, page)
        if not report.ok:
            problems.append(f"{page.name}: {report.problems}")
        if page.stem in REVIEWS or page.stem == "intro":
            assert report.has_math and report.mathjax_elements > 0, f"{page.name}: no rendered math"
        if page.stem in REVIEWS:
            assert report.images > 0, f"{page.name}: no figure in the browser"
    assert not problems, "\n".join(problems)


def test_every_figure_has_alt_text_and_no_box_is_numbered_by_sphinx(built_book):
    problems = []
    for page in book_pages(built_book.html, toc_files(ROOT)):
        problems += [f"{page.name}: {p}" for p in html_problems(page.read_text())]
    assert not problems, "\n".join(problems)


def test_the_book_works_served_under_a_url_prefix(built_book):
    """As on GitHub Pages (https://USER.github.io/REPO/): every page, served over HTTP under a sub-path,
    passes the browser check (MathJax, images, no error output, no code scrolling sideways and no table
    past the article column at 1400 px)."""
    chromium = chromium_or_skip()
    problems = []
    with serve(built_book.html, "/some/prefix/") as url:
        for page in book_pages(built_book.html, toc_files(ROOT)):
            report = check_page(chromium, page, url, built_book.html)
            if not report.ok:
                problems.append(f"{page.name}: {report.problems}")
            if page.stem in REVIEWS:
                assert report.images > 0 and report.mathjax_elements > 0, f"{page.name} under the prefix"
    assert not problems, "\n".join(problems)


def test_the_pdf_keeps_every_page_every_table_and_the_typeset_math(built_book, tmp_path):
    """``make pdf``: the built pages printed by Chromium and joined; every HTML table of every page is in the
    PDF (its first header cell's text on that page's PDF pages; a chapter's claim evidence, closed in print, is
    checked on the ledger's pages, which print every claim's), math is typeset (no raw TeX) and the
    document has the book's title and one bookmark per page."""
    from pypdf import PdfReader

    from resnet_theory.book.pdf import TITLE, build_pdf
    from resnet_theory.book.toc import toc_files

    chromium = chromium_or_skip()
    entries = toc_files(ROOT)
    printed = build_pdf(built_book.html, entries, tmp_path / "book.pdf", chromium)
    reader = PdfReader(tmp_path / "book.pdf")
    assert reader.metadata.title == TITLE
    assert [item.title for item in reader.outline] == [p.title for p in printed]
    assert len(reader.pages) == sum(p.pages for p in printed) and all(p.pages >= 1 for p in printed)
    tables = 0
    for page in printed:
        text = " ".join(reader.pages[i].extract_text() for i in range(page.first_page, page.first_page + page.pages))
        # ligatures (fi, fl) come out of the PDF as one character: compare the text as NFKC normalises it
        flat = re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))
        assert "\\(" not in text and "$$" not in text, f"{page.entry}: raw TeX in the PDF"
        source = (built_book.html / f"{page.entry}.html").read_text()
        if page.entry != "book/ledger":  # a chapter's claim evidence stays closed in print: the ledger prints it
            source = re.sub(r'<details class="claim-details">.*?</details>', "", source, flags=re.S)
        for table in re.findall(r"<table\b.*?</table>", source, re.S):
            # the table's first cell whose text is not TeX (a typeset header prints as glyphs, not as its source)
            cells = [
                re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]+>", "", c)))
                for c in re.findall(r"<t[hd]\b[^>]*>(.*?)</t[hd]>", table, re.S)
            ]
            label = next((c for c in cells if c and "\\(" not in c and "\\[" not in c), "")
            assert label and label in flat, f"{page.entry}: a table with the cell {label!r} is missing from the PDF"
            tables += 1
    assert tables >= 10, f"only {tables} tables in the whole book?"


def test_no_page_has_a_header_bar_with_a_second_search_field(built_book):
    """The theme's header bar held only a search field, a second one above the sidebar's (``_config.yml``,
    ``navbar_persistent``): every page has the sidebar's search field, and the header is left empty (the theme
    still writes the element; empty, it takes no height)."""
    for page in book_pages(built_book.html, toc_files(ROOT)):
        source = page.read_text()
        assert re.search(r'<header id="pst-header"[^>]*>\s*</header>', source), page.name
        sidebar = source.split('class="bd-sidebar-primary', 1)[1].split("</nav>", 1)[0]
        assert source.count("search-button-field") == 1 and "search-button-field" in sidebar, page.name


def test_every_page_has_a_description_and_open_graph_tags_and_no_install_cell(built_book):
    """Search results and link previews get each page's first paragraph (escaped, at most 200 characters); the
    chapters' install cell (for Colab) is in the downloadable notebook but not on the page."""
    from resnet_theory.book.repository import INSTALL_CELL, INSTALL_TAG

    for page in book_pages(built_book.html, toc_files(ROOT)):
        source = page.read_text()
        description = re.search(r'<meta name="description" content="([^"]*)" />', source)
        assert description and 60 <= len(html.unescape(description.group(1))) <= 200, page.name
        assert f'<meta property="og:description" content="{description.group(1)}" />' in source, page.name
        assert re.search(r'<meta property="og:title" content="[^"]+" />', source), page.name
        assert "\\(" not in description.group(1) and "$" not in description.group(1), page.name
    for chapter in REVIEWS:
        assert "PACKAGE_SOURCE" not in (built_book.html / "book" / f"{chapter}.html").read_text()
        import nbformat

        download = nbformat.read(built_book.html / "_sources" / "book" / f"{chapter}.ipynb", as_version=4)
        cells = [c for c in download.cells if INSTALL_TAG in c.metadata.get("tags", [])]
        assert len(cells) == 1 and cells[0].source.splitlines()[:4] == INSTALL_CELL.splitlines()[:4], chapter


def test_a_screenshot_of_every_page_at_1400_and_390_px_is_a_rendered_page(built_book, tmp_path):
    """``make screenshots``: every page at both widths in both themes, each a picture of the window's width that
    is not blank, of a page that does not scroll sideways, with its math typeset and its images loaded."""
    from resnet_theory.book.browser import SCREENSHOT_WIDTHS, THEMES, take_screenshots

    chromium = chromium_or_skip()
    entries = toc_files(ROOT)
    shots = take_screenshots(chromium, built_book.html, entries, tmp_path / "screenshots", themes=THEMES)
    assert [(s.page, s.width, s.theme) for s in shots] == [
        (e, w, t) for e in entries for w in SCREENSHOT_WIDTHS for t in THEMES
    ]
    problems = [f"{s.page} at {s.width} px, {s.theme}: {s.problems}" for s in shots if not s.ok]
    assert not problems, "\n".join(problems)
    assert all(s.png.stat().st_size > 10_000 for s in shots)
