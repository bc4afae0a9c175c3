"""Check the rendered book in headless Chromium, as a reader would see it, with no network.

For each page it loads a copy of the page (beside the original, so relative links hold) with a small script
appended that waits for MathJax to finish and records what the browser sees: how many MathJax elements
exist, and which images failed to load (natural width 0). Chromium's ``--dump-dom`` returns the DOM after the
scripts ran; the text outside code blocks must hold no raw TeX (``\\(`` or ``$$``) and no error output.

It also loads each page at a 1400-pixel-wide window and reports every code block (``div.highlight pre``)
wider than its box (horizontal scrolling) and every table reaching past the article column, and, read from
the HTML itself, every image without
alternative text (or with a file name for one) and every theorem-like box numbered by Sphinx
("Theorem 1 (...)"). At any window width, a page wider than the window (one that scrolls sideways) is a
problem; at a phone's width (:data:`PHONE_WIDTH`) code blocks and wide tables may scroll inside their own box.
:func:`serve` serves a built book over HTTP under a URL prefix, as GitHub Pages
does (``https://USER.github.io/REPO/``), so the same check can run on the served pages.

:func:`take_screenshots` takes a screenshot of every page at each of :data:`SCREENSHOT_WIDTHS`, as tall as the
page (up to :data:`MAX_SCREENSHOT_HEIGHT`), after the same check at that width, and adds what the picture
shows: its width, and whether it is blank (:func:`image_problems`).

Usage: ``python -m resnet_theory.book.browser [_build/html] [--prefix /some/prefix/] [--screenshots DIR]``
(exit 1 on any problem; ``make screenshots`` writes them to ``_build/screenshots``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..outputs import file_in_the_way
from ..validate import OneLineParser
from .devtools import CHROMIUM_FLAGS, Browser

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")

PROBE = """
<script>
(function () {
  function report() {
    var imgs = Array.prototype.slice.call(document.images);
    var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                     .map(function (i) { return i.getAttribute('src'); });
    var wide = Array.prototype.slice.call(document.querySelectorAll('div.highlight pre'))
                    .filter(function (p) { return p.scrollWidth > p.clientWidth + 1; })
                    .map(function (p) {
                      return p.scrollWidth + '>' + p.clientWidth + 'px: ' + p.textContent.trim().slice(0, 60);
                    });
    // tables wider than the article column (cut off, or scrolled sideways, at this window width)
    var article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
    var edge = article.getBoundingClientRect().right;
    var wideTables = Array.prototype.slice.call(document.querySelectorAll('table'))
                    .filter(function (t) { return t.getBoundingClientRect().right > edge + 1; })
                    .map(function (t) {
                      return Math.round(t.getBoundingClientRect().right) + '>' + Math.round(edge) + 'px: ' +
                             (t.className ? t.className + ': ' : '') + t.textContent.trim().slice(0, 60);
                    });
    var main = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
    var out = document.createElement('div');
    out.id = 'browser-check-result';
    out.hidden = true;  // read from the DOM, never shown: it was printed at the foot of every screenshot
    out.textContent = JSON.stringify({
      scroll_width: document.documentElement.scrollWidth, page_height: document.documentElement.scrollHeight,
      text_length: (main.innerText || '').trim().length,
      images: imgs.length, broken: broken, wide_code: wide, wide_tables: wideTables, width: window.innerWidth,
      mathjax_elements: document.querySelectorAll('mjx-container').length,
      mathjax_loaded: !!(window.MathJax && window.MathJax.startup && window.MathJax.startup.document)
    });
    document.body.appendChild(out);
  }
  window.addEventListener('load', function () {
    if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
      window.MathJax.startup.promise.then(report, report);
    } else { report(); }
  });
})();
</script>
"""

#: The window width at which code must fit without horizontal scrolling.
WINDOW_WIDTH = 1400
#: A phone's window width: the page must not scroll sideways (code and wide tables may, in their own box).
PHONE_WIDTH = 390
SCREENSHOT_WIDTHS = (WINDOW_WIDTH, PHONE_WIDTH)
#: The pydata theme's two modes, as its switch sets them.
THEMES = ("light", "dark")
#: Taller pages are cut there (the tallest page, linear at 390 px, is about 56,000 px).
MAX_SCREENSHOT_HEIGHT = 100_000
#: A page's article shorter than this many characters of text did not render (or is empty).
MIN_TEXT = 200
PROOF_NUMBERING = re.compile(
    r"^\s*(?:Theorem|Lemma|Claim|Corollary|Proposition|Definition|Example|Remark|"
    r"Conjecture|Axiom|Property|Observation|Algorithm|Assumption|Criterion)\s+\d+\b"
)
ERROR_MARKERS = ("Traceback (most recent call last)", "output traceback", "Error in callback")


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageReport:
    page: str
    has_math: bool
    width: int = WINDOW_WIDTH
    scroll_width: int = 0
    page_height: int = 0
    text_length: int = 0
    mathjax_elements: int = 0
    images: int = 0
    broken_images: list = field(default_factory=list)
    wide_code: list = field(default_factory=list)
    wide_tables: list = field(default_factory=list)
    raw_tex: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def dump_dom(chromium: str, page: Path | str, timeout: float = 60.0) -> str:
    """The DOM after the page's scripts ran; ``page`` is a file or a URL."""
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            chromium,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=15000",
            f"--window-size={WINDOW_WIDTH},1000",
            "--hide-scrollbars",
            "--dump-dom",
            page if isinstance(page, str) else page.resolve().as_uri(),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"chromium failed on {page} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def _visible_text(dom: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(dom, "html.parser")
    for tag in soup.select(
        "script, style, pre, code, div.highlight, mjx-container, mjx-assistive-mml, "
        "#browser-check-result, .cell_input, nav, .bd-search, textarea"
    ):
        tag.decompose()
    return soup.get_text(" ")


def html_problems(source: str) -> list[str]:
    """Problems visible in a page's HTML: images without alternative text, Sphinx-numbered proof boxes."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(source, "html.parser")
    problems = []
    for img in soup.find_all("img"):
        alt = (img.get("alt") or "").strip()
        if not alt or re.fullmatch(r"\S+\.(png|jpe?g|svg|gif|webp)|_images/\S*|\S*/\S*", alt):
            problems.append(f"image without alternative text: {img.get('src')} (alt={alt!r})")
    for title in soup.select(
        ".proof .admonition-title, .admonition.theorem .admonition-title, div[class*='proof'] > p.admonition-title"
    ):
        text = title.get_text(" ", strip=True)
        if PROOF_NUMBERING.match(text):
            problems.append(f"numbered by Sphinx: {text[:80]!r}")
    return sorted(set(problems))


def _target(page: Path, base_url: str | None, html_root: Path | None) -> Path | str:
    if base_url is None:
        return page
    return base_url.rstrip("/") + "/" + page.relative_to(html_root or page.parent).as_posix()


def _probe_copy(page: Path) -> Path:
    """A copy of the page beside it (so relative links hold) with :data:`PROBE` appended; the caller removes it."""
    probe_page = page.with_name(page.stem + ".browser-check.html")
    probe_page.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    return probe_page


def check_page(chromium: str, page: Path, base_url: str | None = None, html_root: Path | None = None) -> PageReport:
    """Check one built page at :data:`WINDOW_WIDTH`; with ``base_url`` (and ``html_root``), load it from that
    server instead."""
    probe_page = _probe_copy(page)
    try:
        dom = dump_dom(chromium, _target(probe_page, base_url, html_root))
    finally:
        probe_page.unlink(missing_ok=True)
    return read_probe(page, dom, WINDOW_WIDTH)


def read_probe(page: Path, dom: str, width: int) -> PageReport:
    """The report on a page from its DOM after :data:`PROBE` ran in a ``width``-pixel window."""
    source = page.read_text(encoding="utf-8")
    has_math = 'class="math' in source or "\\(" in source or "$$" in source
    report = PageReport(str(page), has_math, width)
    match = re.search(r'<div id="browser-check-result"[^>]*>(.*?)</div>', dom, re.S)
    if not match:
        report.problems.append("the page's scripts did not finish (no probe result in the DOM)")
        return report
    import html as html_lib

    result = json.loads(html_lib.unescape(match.group(1)))
    report.mathjax_elements = result["mathjax_elements"]
    report.images = result["images"]
    report.broken_images = result["broken"]
    report.wide_code = result.get("wide_code", [])
    report.wide_tables = result.get("wide_tables", [])
    report.scroll_width, report.page_height = result["scroll_width"], result["page_height"]
    report.text_length = result["text_length"]
    text = _visible_text(dom)
    report.raw_tex = sorted({m for m in re.findall(r"\\\(|\\\[|\$\$", text)})
    report.errors = [m for m in ERROR_MARKERS if m in dom]
    if has_math and not result["mathjax_loaded"]:
        report.problems.append("the page has math but MathJax did not load")
    if has_math and report.mathjax_elements == 0:
        report.problems.append("the page has math but MathJax rendered none of it")
    if report.raw_tex:
        report.problems.append(f"raw TeX left in the text: {report.raw_tex}")
    if report.broken_images:
        report.problems.append(f"images that did not load: {report.broken_images}")
    if report.errors:
        report.problems.append(f"error output on the page: {report.errors}")
    if report.scroll_width > width + 1:
        report.problems.append(f"the page scrolls sideways at {width} px (it is {report.scroll_width} px wide)")
    if report.wide_code and width >= WINDOW_WIDTH:
        report.problems.append(f"code blocks that scroll sideways at {width} px: {report.wide_code}")
    if report.wide_tables and width >= WINDOW_WIDTH:
        report.problems.append(f"tables wider than the article column at {width} px: {report.wide_tables}")
    report.problems.extend(html_problems(source))
    return report


class serve:
    """Serve ``html_dir`` on 127.0.0.1 under ``prefix`` (anything outside it is a 404), as a context manager
    giving the base URL: ``with serve(html, "/some/prefix/") as url: check_page(..., url, html)``."""

    def __init__(self, html_dir: Path, prefix: str = "/some/prefix/"):
        self.html_dir, self.prefix = Path(html_dir), "/" + prefix.strip("/") + "/"

    def __enter__(self) -> str:
        import functools
        import http.server
        import threading

        prefix = self.prefix

        class Handler(http.server.SimpleHTTPRequestHandler):
            def translate_path(self, path):
                if not path.startswith(prefix):
                    return str(Path(self.directory) / "__outside_the_prefix__")
                return super().translate_path("/" + path[len(prefix) :])

            def log_message(self, *args):
                pass

        handler = functools.partial(Handler, directory=str(self.html_dir))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_port}{prefix}"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Screenshot:
    """One page at one width: the PNG, the check of the page at that width, and what the picture shows."""

    page: str
    width: int
    png: Path
    height: int
    page_height: int
    problems: list = field(default_factory=list)
    theme: str = "light"

    @property
    def ok(self) -> bool:
        return not self.problems


def image_problems(png: Path, width: int) -> list[str]:
    """What is wrong with a screenshot: another width than the window's, or a blank picture (under 1% of its
    pixels differ from its commonest colour, or fewer than 16 colours: a page of text has hundreds of greys)."""
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
    problems = []
    if rgb.width != width:
        problems.append(f"the screenshot is {rgb.width} px wide, not {width}")
    colours = rgb.getcolors(maxcolors=1 << 16)  # None: more than 65536 colours, certainly not blank
    if colours is not None:
        commonest = max(count for count, _ in colours)
        other = 1 - commonest / (rgb.width * rgb.height)
        if other < 0.01 or len(colours) < 16:
            problems.append(
                f"the screenshot is blank ({other:.2%} of pixels off the background, {len(colours)} colours)"
            )
    return problems


def screenshot_name(entry: str, width: int, theme: str = "light") -> str:
    """``book/linear`` at 390 px -> ``book/linear-390.png``; in the dark theme ``book/linear-390-dark.png``."""
    return f"{entry}-{width}.png" if theme == "light" else f"{entry}-{width}-{theme}.png"


def set_theme(browser: Browser, tab: str, theme: str) -> None:
    """The pydata theme's mode as its switch sets it: ``data-mode`` and ``data-theme`` on <html>, remembered."""
    if theme not in THEMES:
        raise ValueError(f"theme {theme!r}: one of {', '.join(THEMES)}")
    browser.evaluate(
        tab,
        f"localStorage.setItem('mode', '{theme}'); document.documentElement.dataset.mode = '{theme}';"
        f" document.documentElement.dataset.theme = '{theme}'; true",
    )


def take_screenshots(
    chromium: str,
    html_dir: Path,
    entries: list[str],
    out_dir: Path,
    widths: tuple[int, ...] = SCREENSHOT_WIDTHS,
    themes: tuple[str, ...] = ("light",),
) -> list[Screenshot]:
    """Load every page at every width in one Chromium, check it there (:data:`PROBE`, as :func:`check_page`
    does, with this width), and screenshot it as tall as it is (up to :data:`MAX_SCREENSHOT_HEIGHT`), once in
    each of ``themes``."""
    for theme in themes:
        if theme not in THEMES:
            raise ValueError(f"theme {theme!r}: one of {', '.join(THEMES)}")
    wait = (
        "new Promise(function (done) { (function poll() {"
        " if (document.getElementById('browser-check-result')) { done(true); }"
        " else { setTimeout(poll, 50); } })(); })"
    )
    shots = []
    with Browser(chromium) as browser:
        for page, entry in zip(book_pages(html_dir, entries), entries):
            probe_page = _probe_copy(page)
            try:
                for width in widths:
                    for theme in themes:
                        shots.append(_one_screenshot(browser, page, probe_page, entry, width, theme, out_dir, wait))
            finally:
                probe_page.unlink(missing_ok=True)
    return shots


def _one_screenshot(
    browser: Browser, page: Path, probe_page: Path, entry: str, width: int, theme: str, out_dir: Path, wait: str
) -> Screenshot:
    tab = browser.open(probe_page.resolve().as_uri(), width)
    browser.evaluate(tab, wait)
    set_theme(browser, tab, theme)
    report = read_probe(page, browser.evaluate(tab, "document.documentElement.outerHTML"), width)
    png = out_dir / screenshot_name(entry, width, theme)
    height, page_height = browser.screenshot(tab, png, width, MAX_SCREENSHOT_HEIGHT)
    browser.close(tab)
    shot = Screenshot(entry, width, png, height, page_height, list(report.problems), theme)
    if report.text_length < MIN_TEXT:
        shot.problems.append(f"the page shows only {report.text_length} characters of text")
    shot.problems += image_problems(png, width)
    return shot


def book_pages(html_dir: Path, entries: list[str]) -> list[Path]:
    pages = [html_dir / f"{entry}.html" for entry in entries]
    missing = [str(p) for p in pages if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"pages in the TOC with no HTML: {missing}")
    return pages


def main(argv: list[str] | None = None) -> int:
    import contextlib

    from .safety import check_output
    from .toc import BookError, find_root, toc_files

    parser = OneLineParser(
        prog="python -m resnet_theory.book.browser",
        description="Check the built book's pages in headless Chromium (math typeset, images loaded), or take "
        "screenshots of them.",
    )
    parser.add_argument("html_dir", nargs="?", type=Path)
    parser.add_argument("--prefix", help="serve the pages over HTTP under this URL prefix, e.g. /some/prefix/")
    parser.add_argument(
        "--screenshots",
        type=Path,
        metavar="DIR",
        help=f"screenshot every page at {' and '.join(map(str, SCREENSHOT_WIDTHS))} px into DIR",
    )
    parser.add_argument(
        "--themes",
        nargs="+",
        choices=THEMES,
        default=list(THEMES),
        help="with --screenshots: the theme modes to take each page in (default: both; dark ones end in -dark.png)",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    root = find_root()
    html_dir = args.html_dir or root / "_build" / "html"
    if args.screenshots:
        try:  # a folder of screenshots is never among the sources or a build's records
            check_output(args.screenshots, root, "--screenshots", folder=True)
        except BookError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if blocked := file_in_the_way(args.screenshots, folder=True):
            print(f"error: --screenshots {args.screenshots}: {blocked}", file=sys.stderr)
            return 2
    chromium = find_chromium()
    if chromium is None:
        print("error: no Chromium found (on Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    failed = 0
    if args.screenshots:
        for shot in take_screenshots(
            chromium, html_dir, toc_files(root), args.screenshots, themes=tuple(dict.fromkeys(args.themes))
        ):
            cut = f" (cut from {shot.page_height} px)" if shot.page_height > shot.height else ""
            print(
                f"{'ok' if shot.ok else 'PROBLEM':8s} {os.path.relpath(shot.png)}: {shot.width} x {shot.height} px"
                + cut
                + ("" if shot.ok else " -- " + "; ".join(shot.problems))
            )
            failed += not shot.ok
        return 1 if failed else 0
    with serve(html_dir, args.prefix) if args.prefix else contextlib.nullcontext() as base_url:
        pages = book_pages(html_dir, toc_files(root))
        reports = [check_page(chromium, page, base_url, html_dir) for page in pages]
    for page, r in zip(pages, reports):
        state = "ok" if r.ok else "PROBLEM"
        print(
            f"{state:8s} {os.path.relpath(page, html_dir)}: {r.mathjax_elements} math, {r.images} images"
            + ("" if r.ok else " -- " + "; ".join(r.problems))
        )
        failed += not r.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
