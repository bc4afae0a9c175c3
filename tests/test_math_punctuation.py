"""Punctuation after inline math stays on the math's line in the HTML (resnet_theory.book.math_punctuation)."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from conftest import ROOT

NOWRAP = '<span class="math-nowrap" style="white-space: nowrap">'


def test_the_book_loads_the_extension():
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    assert "resnet_theory.book.math_punctuation" in sphinx["extra_extensions"]


def test_math_and_the_punctuation_after_it_are_kept_together(tmp_path):
    (tmp_path / "conf.py").write_text('extensions = ["resnet_theory.book.math_punctuation"]\n')
    (tmp_path / "index.rst").write_text(
        "Test\n====\n\nThe bound is :math:`\\gamma/m`. Then :math:`x`, and :math:`y` alone and :math:`z`), end.\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    math = '<span class="math notranslate nohighlight">'
    assert (
        f"The bound is {NOWRAP}{math}\\(\\gamma/m\\)</span>.</span> Then {NOWRAP}{math}\\(x\\)</span>,</span> and"
        in page
    )
    assert f"and {math}\\(y\\)</span> alone and {NOWRAP}{math}\\(z\\)</span>),</span> end." in page


def test_a_later_math_takes_its_own_punctuation_not_an_equal_earlier_one(tmp_path):
    """Text nodes compare as strings: a "." after one math must not be taken from another math's wrapper."""
    (tmp_path / "conf.py").write_text('extensions = ["resnet_theory.book.math_punctuation"]\n')
    (tmp_path / "index.rst").write_text(
        "Test\n====\n\nThe same number, :math:`d`. The control with :math:`M`: rules, and moves with :math:`A`.\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    page = (tmp_path / "out" / "index.html").read_text()
    math = '<span class="math notranslate nohighlight">'
    assert f"number, {NOWRAP}{math}\\(d\\)</span>.</span> The control" in page
    assert f"moves with {NOWRAP}{math}\\(A\\)</span>.</span></p>" in page
    paragraph = re.search(r"<p>The same number.*?</p>", page, re.S).group(0)
    text = re.sub(r"<[^>]+>", "", paragraph)
    assert text == "The same number, \\(d\\). The control with \\(M\\): rules, and moves with \\(A\\)."
