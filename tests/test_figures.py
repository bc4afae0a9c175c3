"""Figures a reader can read: every figure's smallest text, as the browser shows it, and every figure captioned.

What the legibility check measures. Every figure the chapters draw goes through the book's style
(:func:`resnet_theory.plotting.use_book_style`), whose PNG form records in the image itself the smallest font
size (points) of any visible text of the figure (tick labels, legend, titles, labels, annotations) and the dpi
it was drawn at. That text is ``points * dpi / 72`` pixels high in the PNG, em size as Matplotlib draws it. The
page then shows the PNG at some width; headless Chromium, with the page in a frame of a desktop width (1400
CSS pixels) and of a phone's width (390), reports each image's natural width and its displayed width in CSS
pixels.
The smallest text on screen is ``points * dpi / 72 * displayed / natural`` CSS pixels, and it must be at least
:data:`MIN_TEXT_CSS_PX` at both widths. This is the font's em size, not the height of a glyph's ink (an ``x``
is about half of it), the same measure as a CSS ``font-size``; body text on these pages is 16 px.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from resnet_theory import plotting  # noqa: E402
from resnet_theory.book.devtools import CHROMIUM_FLAGS  # noqa: E402

from conftest import ROOT  # noqa: E402

#: The smallest text a figure may show, in CSS pixels (a CSS font-size), at every window width checked.
MIN_TEXT_CSS_PX = 9.0
#: Window widths (CSS pixels): the desktop width the other browser checks use, and a phone's.
WINDOW_WIDTHS = (1400, 390)
REVIEWS = ("linear", "expressivity", "smooth_maps", "linear_predictors", "experiments")

#: Appended to a copy of the page: reports each image's natural and displayed width to the frame holding it.
PROBE = """
<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.querySelectorAll('article img, main img'));
  parent.postMessage(JSON.stringify({window: window.innerWidth, images: imgs.map(function (i) {
    return {src: i.getAttribute('src'), natural: i.naturalWidth,
            shown: i.getBoundingClientRect().width};
  })}), '*');
});
</script>
"""

#: The page is shown in a frame of the given width (headless Chromium will not make a window narrower than
#: 500 px, and a frame's width is the page's viewport, media queries included); the frame's report is written
#: into this page's DOM for ``--dump-dom``.
FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe src="{src}" style="width:{width}px;height:900px;border:0"></iframe>
<script>
window.addEventListener('message', function (e) {{
  var out = document.createElement('div');
  out.id = 'figure-probe-result';
  out.textContent = e.data;
  document.body.appendChild(out);
}});
</script></body></html>
"""


def text_css_px(points: float, dpi: float, natural: float, shown: float) -> float:
    """CSS pixels of text ``points`` high in a PNG drawn at ``dpi``, ``natural`` pixels wide, shown ``shown``
    CSS pixels wide."""
    if natural <= 0 or shown <= 0:
        raise ValueError(f"an image must have a positive width, got natural {natural}, shown {shown}")
    return points * dpi / 72.0 * shown / natural


def png_text_record(path: Path) -> tuple[float, float, str]:
    """``(smallest text in points, dpi, that text)`` recorded by :func:`plotting.figure_png` in a PNG."""
    info = Image.open(path).text
    if plotting.PNG_SMALLEST_TEXT_PT not in info:
        raise LookupError(f"{path.name} records no text size: it was not drawn through the book's style")
    return (
        float(info[plotting.PNG_SMALLEST_TEXT_PT]),
        float(info[plotting.PNG_DPI]),
        info.get(plotting.PNG_SMALLEST_TEXT, ""),
    )


def measure_images(chromium: str, page: Path, width: int) -> dict:
    """Natural and displayed widths of the page's images in Chromium, the page ``width`` CSS px wide."""
    source = page.read_text(encoding="utf-8")
    probe = page.with_name(page.stem + ".figure-probe.html")
    frame = page.with_name(page.stem + ".figure-frame.html")
    probe.write_text(source.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    frame.write_text(FRAME.format(src=probe.name, width=width), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile:
            proc = subprocess.run(
                [
                    chromium,
                    *CHROMIUM_FLAGS,
                    f"--user-data-dir={profile}",
                    "--virtual-time-budget=15000",
                    f"--window-size={max(width, 500) + 40},1000",
                    "--hide-scrollbars",
                    "--dump-dom",
                    frame.resolve().as_uri(),
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
    finally:
        probe.unlink(missing_ok=True)
        frame.unlink(missing_ok=True)
    match = re.search(r'<div id="figure-probe-result"[^>]*>(.*?)</div>', proc.stdout, re.S)
    if proc.returncode != 0 or not match:
        raise RuntimeError(f"chromium did not measure {page.name} (exit {proc.returncode}): {proc.stderr[-1500:]}")
    import html as html_lib

    return json.loads(html_lib.unescape(match.group(1)))


def illegible_figures(
    chromium: str, html_dir: Path, pages: list[str], widths=WINDOW_WIDTHS, minimum: float = MIN_TEXT_CSS_PX
) -> tuple[list[str], int]:
    """Figures whose smallest text shows below ``minimum`` CSS px at some window width (one line each), and
    how many figure measurements were made."""
    problems, measured = [], 0
    for name in pages:
        page = html_dir / "book" / f"{name}.html"
        for width in widths:
            result = measure_images(chromium, page, width)
            assert result["window"] == width, f"{name}: the window is {result['window']} px, not {width}"
            for image in result["images"]:
                path = (page.parent / image["src"]).resolve()
                try:
                    points, dpi, text = png_text_record(path)
                except LookupError as exc:
                    problems.append(f"{name}: {exc}")
                    continue
                measured += 1
                px = text_css_px(points, dpi, image["natural"], image["shown"])
                if px < minimum:
                    problems.append(
                        f"{name} at {width} px: {path.name} shows {text!r} ({points:g} pt at {dpi:g} "
                        f"dpi, {image['natural']} px shown at {image['shown']:.0f}) at {px:.1f} CSS px "
                        f"< {minimum:g}"
                    )
    return sorted(set(problems)), measured


def uncaptioned_figures(page: Path) -> list[str]:
    """Images in the page's article that are not in a ``<figure>`` with a non-empty caption."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    article = soup.select_one("article") or soup
    out = []
    for img in article.find_all("img"):
        figure = img.find_parent("figure")
        caption = figure.find("figcaption") if figure else None
        if caption is None or not caption.get_text(" ", strip=True):
            out.append(f"{page.name}: {img.get('src')} (alt {str(img.get('alt'))[:50]!r})")
    return out


# --- the style itself, without a book ------------------------------------------------------------------------
def test_the_book_style_never_sets_text_below_its_smallest_size():
    with matplotlib.rc_context():
        plotting.use_book_style()
        sizes = {
            key: matplotlib.rcParams[key]
            for key in (
                "font.size",
                "axes.titlesize",
                "axes.labelsize",
                "xtick.labelsize",
                "ytick.labelsize",
                "legend.fontsize",
                "legend.title_fontsize",
                "figure.titlesize",
            )
        }
        fig, ax = plt.subplots()
        ax.plot([1, 2], [1, 2], label="a line")
        ax.legend(title="legend")
        ax.set(title="title", xlabel="x")
        fig.suptitle("figure title")
        points, text = plotting.smallest_text(fig)
        plt.close(fig)
    from matplotlib.font_manager import FontProperties

    resolved = {k: FontProperties(size=v).get_size_in_points() for k, v in sizes.items()}
    assert min(resolved.values()) == plotting.SMALLEST_FONT_PT, resolved
    assert points == plotting.SMALLEST_FONT_PT
    # a default figure (its width plus the saved margins), scaled to a phone's column (342 CSS px at a
    # 390-px window): the smallest text stays at 9 px or more
    natural = (plotting.FIGURE_WIDTH_IN + 0.1) * plotting.FIGURE_DPI
    assert text_css_px(points, plotting.FIGURE_DPI, natural, 342) >= MIN_TEXT_CSS_PX


def test_the_png_records_the_smallest_text_and_a_tiny_legend_is_caught(tmp_path):
    with matplotlib.rc_context():
        plotting.use_book_style()
        fig, ax = plt.subplots()
        ax.plot([1, 2], [1, 2], label="tiny legend")
        ax.legend(fontsize=5)
        data = plotting.figure_png(fig)
        plt.close(fig)
    path = tmp_path / "tiny.png"
    path.write_bytes(data)
    points, dpi, text = png_text_record(path)
    assert (points, dpi, text) == (5.0, plotting.FIGURE_DPI, "tiny legend")
    natural = Image.open(io.BytesIO(data)).width
    # shown at its own width 5 pt at 120 dpi is 8.3 px, below the threshold; scaled to 350 px, smaller still
    assert text_css_px(points, dpi, natural, natural) == pytest.approx(5 * 120 / 72)
    assert text_css_px(points, dpi, natural, 350) < text_css_px(points, dpi, natural, natural) < MIN_TEXT_CSS_PX


def test_a_png_not_drawn_through_the_style_cannot_be_measured(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([1, 2])
    fig.savefig(tmp_path / "plain.png")
    plt.close(fig)
    with pytest.raises(LookupError, match="not drawn through the book's style"):
        png_text_record(tmp_path / "plain.png")


def test_a_figure_without_text_and_bad_widths_are_refused():
    fig = plt.figure()
    fig.add_artist(matplotlib.lines.Line2D([0, 1], [0, 1]))
    with pytest.raises(ValueError, match="no visible text"):
        plotting.smallest_text(fig)
    plt.close(fig)
    with pytest.raises(ValueError, match="positive width"):
        text_css_px(10, 100, 0, 300)


def test_an_image_outside_a_captioned_figure_is_reported(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        '<html><body><article><figure><img src="a.png" alt="a"><figcaption><p>A caption.</p>'
        '</figcaption></figure><img src="b.png" alt="b"><figure><img src="c.png" alt="c">'
        "<figcaption> </figcaption></figure></article></body></html>"
    )
    assert [line.split(" ")[1] for line in uncaptioned_figures(page)] == ["b.png", "c.png"]


# --- the built book ------------------------------------------------------------------------------------------
@pytest.mark.book
def test_every_figure_in_the_built_book_has_a_caption(built_book):
    assert built_book.returncode == 0, built_book.output[-3000:]
    missing = [line for name in REVIEWS for line in uncaptioned_figures(built_book.html / "book" / f"{name}.html")]
    assert not missing, "figures without a caption:\n" + "\n".join(missing)


@pytest.mark.book
def test_every_figure_is_legible_at_desktop_and_phone_width(built_book):
    from test_book import chromium_or_skip

    chromium = chromium_or_skip()
    assert built_book.returncode == 0, built_book.output[-3000:]
    problems, measured = illegible_figures(chromium, built_book.html, list(REVIEWS))
    assert measured >= 2 * len(REVIEWS), f"only {measured} figure measurements"
    assert not problems, "figures with text too small to read:\n" + "\n".join(problems)


if __name__ == "__main__":  # python tests/test_figures.py [_build/html]: the measurement on an existing build
    import shutil
    import sys

    html_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    found, count = illegible_figures(chromium, html_dir, list(REVIEWS))
    print(f"{count} figure measurements", *found, sep="\n")
    for name in REVIEWS:
        print(*uncaptioned_figures(html_dir / "book" / f"{name}.html"), sep="\n")
