"""The screenshot tooling's probe (resnet_theory.book.browser.PROBE) reports through the DOM without showing
itself: its JSON was printed at the foot of every page's screenshot (issue 33 review), where a reader of the
screenshots took it for part of the page. Browser-free: the script's text and the report read from a DOM."""

import json

from resnet_theory.book.browser import PROBE, read_probe


def test_the_probe_result_is_hidden_and_still_read(tmp_path):
    assert "out.hidden = true;" in PROBE
    assert PROBE.index("out.hidden = true;") < PROBE.index("document.body.appendChild(out)")
    page = tmp_path / "page.html"
    page.write_text("<p>words</p>", encoding="utf-8")
    result = {
        "scroll_width": 390, "page_height": 900, "text_length": 500, "images": 0, "broken": [], "wide_code": [],
        "wide_tables": [], "width": 390, "mathjax_elements": 0, "mathjax_loaded": True,
    }  # fmt: skip
    dom = f'<body><p>words</p><div id="browser-check-result" hidden="">{json.dumps(result)}</div></body>'
    report = read_probe(page, dom, 390)
    assert report.problems == [] and report.scroll_width == 390 and report.text_length == 500
