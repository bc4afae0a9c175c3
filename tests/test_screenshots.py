"""Screenshots of built pages at 1400 and 390 px (headless Chromium over the DevTools pipe), on a tiny book: each
is a rendered page of the window's width, and the checks catch a page that scrolls sideways on a phone, a blank
picture and a page without text. The whole book's screenshots are taken in tests/test_book.py."""

from __future__ import annotations

import pytest
from PIL import Image, ImageStat

from resnet_theory.book.browser import PHONE_WIDTH, WINDOW_WIDTH, Browser, image_problems, take_screenshots
from resnet_theory.book.cli import main as book_main
from resnet_theory.book.toc import toc_files
from test_book import chromium_or_skip
from test_executor import chapter, make_book

pytestmark = pytest.mark.browser

PROSE = (
    "A residual layer computes x + g(x) rather than g(x): when g vanishes the layer is the identity. "
    "This paragraph is long enough to pass for a page of text in the screenshot's check. "
) * 2


def test_blank_and_wrong_width_pictures_are_caught(tmp_path):
    from PIL import Image, ImageDraw

    blank = tmp_path / "blank.png"
    Image.new("RGB", (390, 800), "white").save(blank)
    assert any("blank" in p for p in image_problems(blank, 390))
    text = tmp_path / "text.png"
    image = Image.new("RGB", (390, 800), "white")
    draw = ImageDraw.Draw(image)
    for row in range(40):
        draw.text((10, 10 + 19 * row), "A line of text, drawn in grey " * 2, fill=(row * 5, row * 5, row * 5))
    image.save(text)
    assert image_problems(text, 390) == []
    assert image_problems(text, 1400) == ["the screenshot is 390 px wide, not 1400"]


def test_screenshots_at_both_widths_are_rendered_pages_and_catch_sideways_scrolling(tmp_path):
    chromium = chromium_or_skip()
    wide = '<div style="width: 900px; background: #ddd">A box 900 pixels wide.</div>'
    root = make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n\n" + PROSE * 6 + "\n",
            "good": chapter(
                "Good",
                'profile = "quick"\nseed = 0',
                '---\nmystnb:\n  image:\n    alt: "A line falling from 1 to 0."\n---\n'
                "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()",
            ).replace("# Good\n", "# Good\n\n" + PROSE + "\n"),
            "wide": "# Wide\n\n" + PROSE + "\n\n" + wide + "\n",
            "empty": "# Empty\n",
        },
    )
    build = tmp_path / "build"
    assert book_main(["execute", "--root", str(root), "--build-dir", str(build)]) == 0
    entries = toc_files(root)
    shots = take_screenshots(chromium, build / "html", entries, tmp_path / "shots", themes=("light", "dark"))
    assert [(s.page, s.width, s.theme) for s in shots] == [
        (e, w, t) for e in entries for w in (WINDOW_WIDTH, PHONE_WIDTH) for t in ("light", "dark")
    ]
    darkness = {}  # the dark theme's pictures are dark: the mean brightness of each, 0 (black) to 255 (white)
    for shot in shots:
        with Image.open(shot.png) as image:
            darkness[shot.page, shot.width, shot.theme] = ImageStat.Stat(image.convert("L")).mean[0]
    for entry in entries:
        for width in (WINDOW_WIDTH, PHONE_WIDTH):
            assert darkness[entry, width, "light"] > 200 > 80 > darkness[entry, width, "dark"], darkness
    shots = [s for s in shots if s.theme == "light"]
    problems = {(s.page, s.width): s.problems for s in shots}
    for entry in ("book/intro", "book/good"):
        for width in (WINDOW_WIDTH, PHONE_WIDTH):
            assert problems[entry, width] == [], (entry, width, problems[entry, width])
    assert problems["book/wide", WINDOW_WIDTH] == []
    assert any(p.startswith(f"the page scrolls sideways at {PHONE_WIDTH} px") for p in problems["book/wide", 390])
    assert all(
        any(p.startswith("the page shows only") for p in problems["book/empty", w]) for w in (WINDOW_WIDTH, PHONE_WIDTH)
    )
    for shot in shots:
        assert shot.png == tmp_path / "shots" / f"{shot.page}-{shot.width}.png"
        assert shot.png.with_name(f"{shot.png.stem}-dark.png").is_file()
        with Image.open(shot.png) as image:
            assert image.size == (shot.width, shot.height)
        assert shot.height == shot.page_height  # short pages: nothing cut
    # the phone's page is laid out narrower, so it is taller than the wide window's
    assert (
        dict(((s.page, s.width), s.height) for s in shots)["book/intro", 390]
        > dict(((s.page, s.width), s.height) for s in shots)["book/intro", 1400]
    )


def test_the_browser_lays_pages_out_at_a_phones_width(tmp_path):
    """Headless Chromium's window is at least 500 px wide; the DevTools emulation gives a true 390 px layout."""
    chromium = chromium_or_skip()
    page = tmp_path / "page.html"
    page.write_text(
        '<html><head><meta name="viewport" content="width=device-width, initial-scale=1"></head>'
        "<body><p>text</p></body></html>"
    )
    with Browser(chromium) as browser:
        tab = browser.open(page.as_uri(), PHONE_WIDTH)
        assert browser.evaluate(tab, "window.innerWidth") == PHONE_WIDTH
        assert browser.evaluate(tab, "document.documentElement.scrollWidth") == PHONE_WIDTH
        browser.close(tab)
