"""The status page's table (``resnet_theory.book.status``): a column whose value is the same in every row (the
device, the profile, no parameters, no notes) is said once, in the table's caption above its rows, not repeated in
every row (issue 33: the device wrapped into four lines per row and pushed the notes column out of the 1400 px
column); a column that differs between rows stays; the table scrolls inside its own box on a phone, with no word
broken mid-word."""

from __future__ import annotations

import re
from pathlib import Path

from resnet_theory.book.status import status_html

CSS = Path(__file__).resolve().parents[1] / "_static" / "book.css"
DEVICE = "CPU: x86_64 (2 cores)"


def _report(**changes) -> dict:
    rows = [
        {"chapter": "book/intro", "status": "static", "run": "converted", "parameters": {}, "profile": "quick"},
        {"chapter": "book/a", "status": "ok", "run": "executed", "seconds": 4.0, "cpu_seconds": 3.0},
        {"chapter": "book/b", "status": "ok", "run": "reused", "executed_at": "2026-01-01 00:00:00 UTC"},
    ]
    for row in rows:
        row.setdefault("profile", "quick")
        row.setdefault("parameters", {"profile": "quick"})
        row.setdefault("device", DEVICE)
        row.update(changes.get(row["chapter"], {}))
    env = {"python": "3.11", "platform": "linux", "device": DEVICE, "packages": {"torch": "2"}}
    return {"profile": "quick", "environment": env, "chapters": rows}


def _header(page: str) -> list[str]:
    table = page.split('<table class="book-status">', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<th>(.*?)</th>", table.split("</tr>", 1)[0])


def test_columns_equal_in_every_row_are_said_once_above_the_table():
    page = status_html(_report())
    assert _header(page) == ["page", "status", "this build", "outputs computed", "seconds", "CPU seconds"]
    table = page.split('<table class="book-status">', 1)[1].split("</table>", 1)[0]
    said, rows = table.removeprefix("<caption>").split("</caption>", 1)
    assert DEVICE not in rows and "<td>quick</td>" not in rows
    assert said == f"Every page below: profile quick; no parameters besides the profile; device {DEVICE}."
    # every row still has a cell per column
    rows = [r for r in rows.split("<tr>")[1:] if r.startswith("<td>")]
    assert len(rows) == 3 and all(r.count("<td>") == 6 for r in rows)


def test_a_column_that_differs_between_rows_stays_in_the_table():
    page = status_html(
        _report(**{"book/a": {"device": "CUDA: H100", "parameters": {"seed": 3}, "error": {"evalue": "why"}}})
    )
    assert _header(page) == [
        "page",
        "status",
        "this build",
        "outputs computed",
        "seconds",
        "CPU seconds",
        "parameters",
        "device",
        "notes",
    ]
    assert "<td>CUDA: H100</td>" in page and f"<td>{DEVICE}</td>" in page and "<td>seed=3</td>" in page
    assert "<caption>Every page below: profile quick.</caption>" in page
    assert page.split("<table", 1)[0] == ""  # nothing before the table: the run note is empty for a run that held


def test_the_table_scrolls_in_its_own_box_and_never_breaks_a_word():
    page = status_html(_report())
    assert '<table class="book-status"><caption>' in page
    css = CSS.read_text()
    scroll = re.search(r"table\.book-status \{ display: block;([^}]*)\}", css)
    assert scroll and "overflow-x: auto" in scroll.group(1)
    cells = re.search(r"table\.book-status td, table\.book-status th \{([^}]*)\}", css)
    assert cells and "overflow-wrap: normal" in cells.group(1) and "word-break: normal" in cells.group(1)


def test_the_shared_values_are_escaped():
    evil = "<script>x</script>"
    page = status_html(_report(**{n: {"device": evil} for n in ("book/intro", "book/a", "book/b")}))
    assert "<script>" not in page and "device &lt;script&gt;x&lt;/script&gt;" in page


def test_the_status_colours_read_in_both_themes():
    """A page's status is coloured by a class the stylesheet gives a colour in each theme (a fixed grey inline style
    left "static" dark grey on the dark theme)."""
    page = status_html(_report(**{"book/b": {"status": "failed", "error": {"code_cell": 2, "evalue": "x"}}}))
    assert "style=" not in page.split("<table", 1)[1]
    classes = re.findall(r"<strong class='(book-status-\w+)'>(\w+)</strong>", page)
    assert classes == [("book-status-other", "static"), ("book-status-ok", "ok"), ("book-status-failed", "failed")]
    css = CSS.read_text()
    for name, _ in classes:
        assert f".{name} {{ color:" in css and f'html[data-theme="dark"] .{name} {{ color:' in css
