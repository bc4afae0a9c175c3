"""The quick-book benchmark runs on small fake chapters and prints what it says it prints (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

from resnet_theory.benchmarks import quick_book
from test_executor import chapter, make_book


def small_book(root):
    cell = "import time\nt0 = time.process_time()\nwhile time.process_time() - t0 < 0.3:\n    pass"
    return make_book(
        root,
        {
            "intro": "# Intro\n",
            "one": chapter("One", 'profile = "quick"\nseed = 0', cell, "print('second cell')"),
            "two": chapter("Two", 'profile = "quick"\nseed = 0', cell),
        },
    )


def test_both_ways_side_by_side_then_from_the_report(tmp_path, capsys):
    root = small_book(tmp_path / "src")
    result = quick_book.main(
        ["--execute", "book/one", "book/two", "--build-dir", str(tmp_path / "b"), "--root", str(root), "--cells", "1"]
    )
    out = capsys.readouterr().out
    assert set(result["walls"]) == {1, 2} and all(len(w) == 1 for w in result["walls"].values())
    for jobs in (1, 2):
        rows = {r["chapter"]: r for r in result["rows"][jobs]}
        assert set(rows) == {"book/one", "book/two"}
        for r in rows.values():
            assert r["cpu"] >= 0.3 and 0.3 <= r["cells"] <= r["wall"]
            assert "while time.process_time()" not in r["slowest"][0][1]  # first line of the cell
            assert r["slowest"][0][1].startswith("import time")
    assert "ratio: 2 jobs / 1 job wall = " in out and "ratio: 2 jobs / 1 job chapter CPU seconds" in out
    report = tmp_path / "b" / "side-by-side" / "executed" / "report.json"
    assert json.loads(report.read_text())["state"] == "complete"
    again = quick_book.main(["--report", str(report), "--cells", "0"])
    assert [r["chapter"] for r in again["rows"]] == ["book/one", "book/two"]
    assert "book/one" in capsys.readouterr().out


def test_bad_options_fail_in_one_line(tmp_path):
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "list.json").write_text('{"chapters": [1]}')
    bad = (
        ["--report", str(tmp_path / "none.json")],
        ["--report", str(tmp_path / "text.json")],
        ["--report", str(tmp_path / "list.json")],
        ["--execute", "book/one"],
        ["--report", "x", "--jobs", "1"],
    )
    for argv in bad:
        done = subprocess.run(
            [sys.executable, "-m", "resnet_theory.benchmarks.quick_book", *argv], capture_output=True, text=True
        )
        assert done.returncode == 2 and done.stderr.startswith("error:") and len(done.stderr.splitlines()) == 1, argv
        assert done.stdout == "", argv
