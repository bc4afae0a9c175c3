"""Check the rendered book in headless Chromium, as a reader would see it, with no network.

For each page it loads a copy of the page (beside the original, so relative links hold) with a small script
appended that waits for MathJax to finish and records what the browser sees: how many MathJax elements
exist, and which images failed to load (natural width 0). Chromium's ``--dump-dom`` returns the DOM after the
scripts ran; the text outside code blocks must hold no raw TeX (``\\(`` or ``$$``) and no error output.

Usage: ``python -m resnet_theory.browser [_build/html]`` (exit 1 on any problem).
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

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")

PROBE = """
<script>
(function () {
  function report() {
    var imgs = Array.prototype.slice.call(document.images);
    var broken = imgs.filter(function (i) { return !(i.complete && i.naturalWidth > 0); })
                     .map(function (i) { return i.getAttribute('src'); });
    var out = document.createElement('div');
    out.id = 'browser-check-result';
    out.textContent = JSON.stringify({
      images: imgs.length, broken: broken,
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
    mathjax_elements: int = 0
    images: int = 0
    broken_images: list = field(default_factory=list)
    raw_tex: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def dump_dom(chromium: str, page: Path, timeout: float = 60.0) -> str:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--allow-file-access-from-files", f"--user-data-dir={profile}", "--virtual-time-budget=15000",
               "--dump-dom", page.resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"chromium failed on {page} (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def _visible_text(dom: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(dom, "html.parser")
    for tag in soup.select("script, style, pre, code, div.highlight, mjx-container, mjx-assistive-mml, "
                           "#browser-check-result, .cell_input, nav, .bd-search, textarea"):
        tag.decompose()
    return soup.get_text(" ")


def check_page(chromium: str, page: Path) -> PageReport:
    source = page.read_text(encoding="utf-8")
    has_math = 'class="math' in source or "\\(" in source or "$$" in source
    probe_page = page.with_name(page.stem + ".browser-check.html")
    probe_page.write_text(source.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        dom = dump_dom(chromium, probe_page)
    finally:
        probe_page.unlink(missing_ok=True)
    report = PageReport(str(page), has_math)
    match = re.search(r'<div id="browser-check-result"[^>]*>(.*?)</div>', dom, re.S)
    if not match:
        report.problems.append("the page's scripts did not finish (no probe result in the DOM)")
        return report
    import html as html_lib

    result = json.loads(html_lib.unescape(match.group(1)))
    report.mathjax_elements = result["mathjax_elements"]
    report.images = result["images"]
    report.broken_images = result["broken"]
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
    return report


def book_pages(html_dir: Path, entries: list[str]) -> list[Path]:
    pages = [html_dir / f"{entry}.html" for entry in entries]
    missing = [str(p) for p in pages if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"pages in the TOC with no HTML: {missing}")
    return pages


def main(argv: list[str] | None = None) -> int:
    from .book import find_root, toc_files

    args = sys.argv[1:] if argv is None else argv
    root = find_root()
    html_dir = Path(args[0]) if args else root / "_build" / "html"
    chromium = find_chromium()
    if chromium is None:
        print("error: no Chromium found (on Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    failed = 0
    for page in book_pages(html_dir, toc_files(root)):
        r = check_page(chromium, page)
        state = "ok" if r.ok else "PROBLEM"
        print(f"{state:8s} {os.path.relpath(page, html_dir)}: {r.mathjax_elements} math, {r.images} images"
              + ("" if r.ok else " -- " + "; ".join(r.problems)))
        failed += not r.ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
