"""Math in the check summaries a page shows is typeset (issue 33): every claim of every chapter, run at the tiny
profile, rendered as its chapter shows it (the evidence table), as the ledger shows it (the evidence parts and the
erratum sentence), has no ASCII spelling of mathematics outside its ``$...$`` math: no ``^(``, ``x^2``, ``sqrt(``,
``**``, ``*`` between names, ``!=``, ``<=`` or ``>=`` (the ledger once quoted ``(O^(1/l))^l vs O`` and SymPy's
``ell*(-sqrt(3)*sqrt(gamma) + 2*sqrt(pi))/... != 0``). That scan runs in each ``tests/test_claims_<chapter>.py``, on
the tiny runs the file already makes (``conftest.assert_no_ascii_math_shown``); this file checks that each does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sympy as sp

from resnet_theory.claims.registry import CHAPTER_MODULES, chapter_claims
from resnet_theory.ledger_html import ascii_math, text_html
from resnet_theory.tables import ResultsTable
from resnet_theory.verdicts import Check


@pytest.mark.parametrize(
    "text",
    [
        "(O^(1/l))^l vs O",
        "ell*(-sqrt(3)*sqrt(gamma) + 2*sqrt(pi)) != 0",
        "x ** 2",
        "loss <= eps",
        "p >= 3 gamma",
        "E[x x^T]",
        "||E Sigma^1/2||_F^2",
        "sup ||h''|| on the ball",
        "exact values at (0, -1/eps)",
        "F = 1/2",
        "the constant (4 pi + 3 gamma)/l",
        "(d, l, tau) of the critical-point search",
        "points of the tau-ball",
        "swirl, d=2",
        "sigma_max(A) in place of sigma_min(A)",
        "P(fail) < exp(-k I(d)), case 0",
        "the bracket's largest value is 4/(4 - d)",
    ],
)
def test_ascii_math_is_found_outside_math(text):
    assert ascii_math(text_html(text)), text


@pytest.mark.parametrize(
    "text",
    [
        r"$(O^{1/\ell})^\ell$ vs $O$",
        r"measured $\max \|A_i\|$ vs $2(\sqrt{\pi}+\sqrt{3\gamma})^2/\ell$, $\ell \ge 3\gamma$",
        "every case holds: 3 of 3, tolerance atol=0, rtol=1e-09 (a - b)",
        r"$E[x x^T]$ as printed",
        r"swirl, $d = 2$: exact values at $(0, -1/\epsilon)$, $F = 1/2$, 3 of 4 cases, book/linear",
    ],
)
def test_typeset_math_and_plain_words_pass(text):
    assert not ascii_math(text_html(text)), text


def test_the_checks_write_their_relations_and_sympy_values_typeset():
    gamma, ell = sp.symbols("gamma ell", positive=True)
    printed = ell * (2 * sp.sqrt(sp.pi) - sp.sqrt(3) * sp.sqrt(gamma)) / (sp.sqrt(sp.pi) + sp.sqrt(3 * gamma))
    checks = [
        Check.equal(printed, 0, what="2q + p - l"),
        Check.equal([0, -2 * gamma], [0, 0], what="entries"),
        Check.at_most([1.0, 2.0], 1.5, what="values", rtol=1e-9),
        Check.at_least([1.0, 2.0], 1.5, what="values"),
        Check.statistical(0.3, 0.1, 0.5, what="rate", test="fraction", n=4, above=False),
    ]
    for check in checks:
        assert not ascii_math(text_html(check.summary)), check.summary
    assert r"\sqrt{\pi}" in checks[0].summary and r"$\ne$" in checks[0].summary


@pytest.mark.parametrize("chapter", list(CHAPTER_MODULES))
def test_every_chapters_claims_file_scans_what_its_claims_show(chapter):
    """The scan of every claim's summaries runs in ``tests/test_claims_<chapter>.py``, on the tiny runs that file
    already makes (``conftest.assert_no_ascii_math_shown``, which checks that every claim of the chapter is
    there): running every claim again here cost about 30 CPU seconds of ``make check``."""
    path = Path(__file__).with_name(f"test_claims_{chapter}.py")
    assert path.exists(), f"{path.name} is missing: every chapter's claims run at the tiny profile there"
    source = path.read_text(encoding="utf-8")
    test = re.search(r"\ndef test_no_summary_a_page_shows_has_ascii_math\(.*?(?=\n\n\n|\Z)", source, re.S)
    assert test, f"{path.name} has no test_no_summary_a_page_shows_has_ascii_math"
    assert f'assert_no_ascii_math_shown("{chapter}", ' in test.group(0), test.group(0)


@pytest.mark.parametrize("chapter", list(CHAPTER_MODULES))
def test_the_profile_tables_knobs_are_typeset(chapter):
    """What a knob sizes is shown typeset in the chapter's profile table ("(d, l, tau)" was ASCII)."""
    rows = chapter_claims(chapter).profile.rows("quick")
    shown = ResultsTable(rows)._repr_html_()
    assert not ascii_math(shown), ascii_math(shown)


def test_the_bibliography_has_no_raw_latex_accents_or_ascii_math():
    """sphinxcontrib-bibtex showed ``G{\\"u}ley`` as ``G\\"uley``: names are UTF-8; notes write formulas in Unicode."""
    bib = (Path(__file__).resolve().parents[1] / "references.bib").read_text(encoding="utf-8")
    assert not re.findall(r"\\[\"'`^~=.uvHcdbkr]\{?[A-Za-z]", bib), re.findall(r".{20}\\[\"'`^~].{10}", bib)
    notes = " ".join(re.findall(r"note\s*=\s*\{(.*)\}", bib))
    assert not ascii_math(text_html(notes)), ascii_math(text_html(notes))
