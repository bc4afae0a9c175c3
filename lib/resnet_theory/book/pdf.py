"""The book as one PDF: every page of the TOC printed by headless Chromium from the built HTML, then joined.

Jupyter Book's LaTeX builder drops every HTML table (the claims ledger, the status page and the chapters'
tables are HTML) and needs a TeX installation; its ``pdfhtml`` builder downloads a browser. This prints the
pages the reader sees instead: each page of ``_build/html`` is loaded (from a copy beside it, so relative links
and MathJax's files resolve) with a small script that opens every ``<details>`` (the ledger's evidence, which a
PDF reader cannot click open) and waits for MathJax to typeset; Chromium prints it with the theme's print
styles (no sidebars), and the pages are joined in TOC order with one bookmark per page.

Usage: ``python -m resnet_theory.book.pdf [_build/html] [-o _build/pdf/residual-networks-executed.pdf]``
(``make pdf`` builds the book first). Exit 2 when there is no Chromium.
"""

from __future__ import annotations

import argparse
import html as html_lib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .browser import book_pages, find_chromium
from .devtools import CHROMIUM_FLAGS

#: The PDF's file name and its document title.
PDF_NAME = "residual-networks-executed.pdf"
TITLE = "Residual Networks, Executed"

OPEN_DETAILS = """
<script>
document.querySelectorAll('details').forEach(function (d) { d.open = true; });
</script>
"""


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


def print_page(chromium: str, page: Path, output: Path, timeout: float = 120.0) -> None:
    """Print one built page to ``output`` (A4), after MathJax has typeset it and every ``<details>`` is open."""
    source = page.read_text(encoding="utf-8")
    copy = page.with_name(f".print-{page.name}")
    copy.write_text(source.replace("</body>", OPEN_DETAILS + "</body>", 1), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            cmd = [
                chromium,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=20000",
                "--no-pdf-header-footer",
                f"--print-to-pdf={output}",
                copy.resolve().as_uri(),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        copy.unlink(missing_ok=True)
    if proc.returncode != 0 or not output.is_file() or output.stat().st_size == 0:
        raise RuntimeError(f"Chromium could not print {page} (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")


def build_pdf(html_dir: Path, entries: list[str], output: Path, chromium: str | None = None) -> list[PrintedPage]:
    """Print every page of ``entries`` (TOC order) from ``html_dir`` and join them into ``output``, with one
    bookmark per page and the book's title in the document's metadata. Returns where each page landed."""
    from pypdf import PdfReader, PdfWriter

    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("no Chromium found (on Debian: apt-get install chromium)")
    pages = book_pages(Path(html_dir), entries)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    writer = PdfWriter()
    printed: list[PrintedPage] = []
    with tempfile.TemporaryDirectory() as scratch:
        for i, (entry, page) in enumerate(zip(entries, pages)):
            part = Path(scratch) / f"{i:03d}.pdf"
            print_page(chromium, page, part)
            reader = PdfReader(part)
            first = len(writer.pages)
            for p in reader.pages:
                writer.add_page(p)
            title = page_title(page.read_text(encoding="utf-8"))
            writer.add_outline_item(title, first)
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

    parser = argparse.ArgumentParser(
        prog="python -m resnet_theory.book.pdf", description="Print the built book to one PDF with headless Chromium."
    )
    parser.add_argument("html_dir", nargs="?", type=Path, help="the built HTML (default: _build/html)")
    parser.add_argument("-o", "--output", type=Path, help=f"the PDF (default: _build/pdf/{PDF_NAME})")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = find_root()
    html_dir = args.html_dir or root / "_build" / "html"
    output = args.output or root / "_build" / "pdf" / PDF_NAME
    try:  # never over a source, a chapter's outputs, or anything but a PDF
        output = check_output(output, root, "-o", suffix=".pdf")
    except BookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not html_dir.is_dir():
        print(f"error: no built book at {html_dir} (run `make book` first)", file=sys.stderr)
        return 2
    if find_chromium() is None:
        print("error: no Chromium found (on Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    try:
        printed = build_pdf(html_dir, toc_files(root), output)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    total = sum(p.pages for p in printed)
    print(f"{output}: {total} pages ({', '.join(f'{p.title}: {p.pages}' for p in printed)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
