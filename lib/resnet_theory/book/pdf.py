"""The book as one PDF, printed as a reader would print it: every page of the TOC printed by headless Chromium from
the built HTML, then joined.

Jupyter Book's LaTeX builder drops every HTML table (the claims ledger, the status page and the chapters'
tables are HTML) and needs a TeX installation; its ``pdfhtml`` builder downloads a browser. This prints the
pages the reader sees instead: each page of ``_build/html`` is loaded in headless Chromium (over the DevTools
protocol: :class:`resnet_theory.book.devtools.Browser`), MathJax typesets it, the ledger's evidence (its
``<details>``, which a PDF reader cannot click open) is opened, and the page is printed with the book's print
styles (``_static/book.css``: no sidebars, no filters; hidden cell inputs stay hidden, their toggles left out;
wide tables wrap within the page; a code cell is not split across pages where it fits on one, and an empty
output box is not printed; the type is 10 pt; the ledger is set compactly, 8.5 pt cards with their evidence as
tight tables). A claim's evidence in a chapter stays closed: the ledger prints it for every claim. The pages are
joined in TOC order with one bookmark per page.

**Length.** Printed from the quick profile's build of 28 November 2026 (A4): 184 pages, the five reviews 132 of them
(linear 38, expressivity 26, smooth maps 21, linear predictors 21, experiments 26), the ledger 43, the intro,
references and status page 9. Issue 33's passes cut what a reader would not print: each claim's evidence is printed
once, in the ledger (a chapter prints its evidence table's statement, verdict and re-check command, and an erratum no
longer repeats its claim's evidence); a chapter's closing table of its claims, whose rows the ledger prints whole,
is one sentence pointing there (about nine pages over the five); the ledger's table flows on from its heading's page and
a figure taller than a page is scaled to fit one (each had cost a blank page). A formula wider than the page (the
linear chapter's SymPy count, printed as a string) had made Chromium shrink that whole chapter to fit: its 30 pages
were in smaller type than the rest; at the book's 10 pt it takes 38. It is not under 120 pages because the reviews
themselves take 132 at 10 pt: of their printed height (print styles, A4 text width, measured in Chromium) prose and
displayed math are 47%, tables of computed results 17%, visible code 16%, figures 11% and the claims' evidence
boxes 7%; and the ledger's 43 are three quarters the evidence of every claim, printed nowhere else. Shortening it
further would mean smaller type than a printed page should have or leaving out the checks the book exists to show.

**Paper.** A4 (210 x 297 mm) by default; ``--paper letter`` prints on US Letter (8.5 x 11 in), with margins of
15 mm either way. ``make pdf`` takes ``PAPER=letter``.

Usage: ``python -m resnet_theory.book.pdf [_build/html] [-o _build/pdf/residual-networks-executed.pdf]
[--paper a4|letter]``. It prints the book already built: ``make pdf`` builds it first only when ``_build/html``
is missing, and never executes a built book again. Exit 2 when there is no built book or no Chromium.
"""

from __future__ import annotations

import base64
import html as html_lib
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..outputs import file_in_the_way
from ..validate import OneLineParser
from .browser import book_pages, find_chromium
from .devtools import Browser

#: The PDF's file name and its document title.
PDF_NAME = "residual-networks-executed.pdf"
TITLE = "Residual Networks, Executed"
#: Paper sizes, in inches (width, height), as Chromium's ``Page.printToPDF`` takes them.
PAPERS = {"a4": (8.27, 11.69), "letter": (8.5, 11.0)}
#: Page margins, in inches (15 mm).
MARGIN_IN = 0.59

#: Opens the ledger's evidence (and any other ``<details>`` a reader would open to read it), never a hidden cell's
#: toggle (myst-nb's ``details.hide``): hidden inputs and outputs stay hidden in print, as on the page. A claim's
#: evidence in a chapter (``details.claim-details`` outside the ledger's claims and errata) stays closed: the ledger
#: prints the same evidence of every claim, and the print styles say so beside the closed toggle (opened in every
#: chapter as well, it doubled the book, to 383 A4 pages).
LEDGER_EVIDENCE = ".claims-browser, .claims-errata"
OPEN_DETAILS = (
    "document.querySelectorAll('details:not(.hide)').forEach(function (d) {"
    f" if (!d.matches('details.claim-details') || d.closest('{LEDGER_EVIDENCE}')) {{ d.open = true; }} }}); true"
)
#: Waits until MathJax has typeset what opening the details showed, and the fonts are loaded.
SETTLE = (
    "(window.MathJax && MathJax.startup && MathJax.startup.promise ? MathJax.startup.promise : Promise.resolve())"
    ".then(function () { return document.fonts.ready; }).then(function () { return true; })"
)


@dataclass(frozen=True)
class PrintedPage:
    """One page of the book in the PDF: its TOC entry, title, first page (0-based) and number of pages."""

    entry: str
    title: str
    first_page: int
    pages: int


def page_title(source: str) -> str:
    """The page's title as the theme writes it (``<title>Claims ledger &#8212; Book</title>`` -> ``Claims ledger``)."""
    match = re.search(r"<title>(.*?)</title>", source, re.S)
    title = html_lib.unescape(match.group(1)) if match else ""
    return re.split(r"\s+[\u2014-]\s+", title.strip())[0] or "page"


def paper_size(paper: str) -> tuple[float, float]:
    """(width, height) in inches of ``paper`` (``"a4"`` or ``"letter"``); anything else is a one-line error."""
    try:
        return PAPERS[paper.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown paper {paper!r}; choose one of {', '.join(PAPERS)}") from None


def print_page(browser: Browser, page: Path, output: Path, paper: str = "a4") -> None:
    """Print one built page to ``output`` on ``paper``, after MathJax has typeset it and the ledger's ``<details>``
    are open (hidden cells' toggles stay closed, and the print styles leave them out)."""
    width, height = paper_size(paper)
    tab = browser.open(page.resolve().as_uri(), 1000)
    try:
        browser.send("Emulation.clearDeviceMetricsOverride", session=tab)
        browser.evaluate(tab, OPEN_DETAILS)
        browser.evaluate(tab, SETTLE)
        result = browser.send(
            "Page.printToPDF",
            {
                "paperWidth": width,
                "paperHeight": height,
                **{f"margin{side}": MARGIN_IN for side in ("Top", "Bottom", "Left", "Right")},
                "printBackground": True,
                "preferCSSPageSize": False,
                "displayHeaderFooter": False,
            },
            tab,
        )
    finally:
        browser.close(tab)
    data = base64.b64decode(result.get("data", ""))
    if not data.startswith(b"%PDF"):
        raise RuntimeError(f"Chromium could not print {page}: it returned no PDF")
    output.write_bytes(data)


def build_pdf(
    html_dir: Path, entries: list[str], output: Path, chromium: str | None = None, paper: str = "a4"
) -> list[PrintedPage]:
    """Print every page of ``entries`` (TOC order) from ``html_dir`` on ``paper`` (A4 or Letter) and join them into
    ``output``, with one bookmark per page and the book's title in the document's metadata. Returns where each
    page landed."""
    from pypdf import PdfReader, PdfWriter

    paper_size(paper)
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found (on Debian: apt-get install chromium)")
    pages = book_pages(Path(html_dir), entries)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    writer = PdfWriter()
    printed: list[PrintedPage] = []
    with tempfile.TemporaryDirectory() as scratch, Browser(chromium, timeout=180.0) as browser:
        for i, (entry, page) in enumerate(zip(entries, pages)):
            part = Path(scratch) / f"{i:03d}.pdf"
            print_page(browser, page, part, paper)
            reader = PdfReader(part)
            first = len(writer.pages)
            for p in reader.pages:
                writer.add_page(p)
            title = page_title(page.read_text(encoding="utf-8"))
            writer.add_outline_item(title=title, page_number=first)
            printed.append(PrintedPage(entry, title, first, len(reader.pages)))
    writer.add_metadata({"/Title": TITLE, "/Subject": "Executable reviews of the theory of deep residual networks"})
    tmp = output.with_name(output.name + ".partial")
    with open(tmp, "wb") as f:
        writer.write(f)
    tmp.replace(output)
    return printed


def main(argv: list[str] | None = None) -> int:
    from .safety import check_output
    from .toc import BookError, find_root, toc_files

    parser = OneLineParser(
        prog="python -m resnet_theory.book.pdf", description="Print the built book to one PDF with headless Chromium."
    )
    parser.add_argument("html_dir", nargs="?", type=Path, help="the built HTML (default: _build/html)")
    parser.add_argument("-o", "--output", type=Path, help=f"the PDF (default: _build/pdf/{PDF_NAME})")
    parser.add_argument("--paper", default="a4", help="a4 (the default) or letter")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.paper.lower() not in PAPERS:
        print(f"error: unknown paper {args.paper!r}; choose one of {', '.join(PAPERS)}", file=sys.stderr)
        return 2
    root = find_root()
    html_dir = args.html_dir or root / "_build" / "html"
    output = args.output or root / "_build" / "pdf" / PDF_NAME
    try:  # never over a source, a chapter's outputs, or anything but a PDF
        output = check_output(output, root, "-o", suffix=".pdf")
    except BookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if blocked := file_in_the_way(output):
        print(f"error: -o {args.output or output}: {blocked}", file=sys.stderr)
        return 2
    if not html_dir.is_dir():
        print(f"error: no built book at {html_dir} (run `make book` first)", file=sys.stderr)
        return 2
    if find_chromium() is None:
        print("error: no Chromium found (on Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        printed = build_pdf(html_dir, toc_files(root), output, paper=args.paper.lower())
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, no permission
        print(f"error: -o {output}: cannot be written ({exc.strerror or exc})", file=sys.stderr)
        return 1
    total = sum(p.pages for p in printed)
    print(f"{output}: {total} pages on {args.paper.upper()} ({', '.join(f'{p.title}: {p.pages}' for p in printed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
