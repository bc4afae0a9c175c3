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
from resnet_theory.ledger_html import ASCII_MATH, ascii_math, text_html
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
        "growth of m eps(m)",
        "a finite certificate C / m exists",
        "a finite certificate C' log m / m exists",
        "module count == Table 1's layers counted by hand",
        "In the table, eps(4) is the largest deviation",
        "the rate sigma(A) of the map",
        "the objective is then a convex quadratic in A_1",
        "its gradient at 0 is -2 R Sigma, not zero",
        "One layer (l = 1): not a deep network",
        "The projected inputs h_0 = A_0 x of the digits",
        "sphere networks: max |output - e_j|",
        "the surrogate labels q_1..q_r",
        "same, Gaussian (non-normal) matrices, d = 3..9",
        "repaired p vs gamma",
        "Assumption 3.1 fails at the rho the width was chosen for",
        "bound with s_+",
        "F at each verified minimum vs inf F_lin",
        "on the 2 x 2 maps of the last stage",
        "W = 0 is a bad critical point",
        "average excess risk vs our explicit bound, b = 2",
        "every invertible R: relative Frobenius error",
        "positive definite roots approach I, singular ones",
        "random targets far from I",
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
        r"growth of $m\,\varepsilon(m)$, the beta (test) version",
        "n_instances, max_depth, k_draws and jl_draws: knobs by name",
        "proved in Appendix A.1, from A.2 and Section 3; every A4 page",
        r"the surrogate labels $q_1, \dots, q_r$ and $F_{\mathrm{lin}}$",
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


def _prose(markdown: str) -> str:
    """What a reader sees of a chapter's source as untypeset text: no code cells, fences, math, inline code, roles,
    directive options, link targets, emphasis markers, or quotations of what a program prints ("1/k2c")."""
    text = re.sub(r"^---\n.*?\n---\n", "", markdown, count=1, flags=re.S)
    text = re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.S | re.M)
    for pattern in (r"\$\$.*?\$\$", r"(?<![\\$])\$[^$]+?\$", r"\{[\w:-]+\}`[^`]*`", r"`[^`]*`", r'"[^"\n]*"'):
        text = re.sub(pattern, " ", text, flags=re.S)
    text = re.sub(r"^:[\w-]+:.*$", "", text, flags=re.M)
    return re.sub(r"\*+", "", re.sub(r"\]\([^)]*\)", "]", text))


@pytest.mark.parametrize("chapter", sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "book").glob("*.md")))
def test_no_chapter_prose_spells_math_in_ascii(chapter):
    """The smooth-maps chapter's prose said "eps(m)" and "growth of m eps(m)" where its tables typeset
    $\\varepsilon(m)$ (issue 33): the prose of every page passes the same scan as the ledger's summaries."""
    source = (Path(__file__).resolve().parents[1] / "book" / f"{chapter}.md").read_text(encoding="utf-8")
    text = _prose(source)
    found = [text[max(0, m.start() - 30) : m.end() + 30] for m in ASCII_MATH.finditer(text)]
    assert not found, found


def test_the_prose_scan_sees_what_it_must():
    assert (
        _prose("In the table, eps($m$) is\n*growth of m eps(m)* is") == "In the table, eps( ) is\ngrowth of m eps(m) is"
    )
    assert ASCII_MATH.search(_prose("*growth of m eps(m)* is")) and ASCII_MATH.search(_prose("eps($m$) is"))
    assert not ASCII_MATH.search(_prose('prints "1/k2c" and `x**2` and $a^2$ and\n```{code-cell}\nx = a*b\n```\n'))


def test_the_architecture_claim_reads_as_prose():
    """Its corrected check printed "module count == Table 1's layers", and its four controls' summaries were glued
    into one sentence of the chapter as a paragraph-long run of numbers (issue 33): the control's numbers now read
    as one clause, and nothing the claim shows spells math in ASCII."""
    from resnet_theory.claims.chapter import Chapter

    run = Chapter("experiments", profile="tiny", seed=0).check("hardt-ma/sec4-architecture")
    clause = run.evidence.glue["arch_control_summary"]
    assert len(clause) < 120 and ";" not in clause and "control:" not in clause, clause
    assert re.fullmatch(
        r"8 blocks in the first stage give [\d,]+ \(\d+\.\d\d million\) and 10 blocks [\d,]+ \(\d+\.\d\d million\)",
        clause,
    )
    assert not ascii_math(run._repr_html_()), ascii_math(run._repr_html_())


def test_the_smooth_maps_tables_typeset_their_map_labels():
    """The rate and Jacobian tables showed "swirl, d=2" where the certificate table typeset $d = 2$."""
    from resnet_theory.claims.smooth_maps import typeset_label
    from resnet_theory.tables import html_table

    assert ascii_math(html_table(["map"], [["swirl, d=2"]]))
    assert typeset_label("swirl, d=2") == "swirl, $d = 2$" and typeset_label("holder") == "holder"
    assert not ascii_math(html_table(["map"], [[typeset_label("sine-shear, d=3")]]))


def test_the_layer_count_shows_sympys_results_typeset():
    """The linear chapter displayed ``ell*(-sqrt(3)*sqrt(gamma) + 2*sqrt(pi))/...`` in typewriter type inside its
    math: the claim kept SymPy's results as ``str`` and the chapter's ``sp.latex`` of a string quotes it. The claim
    now keeps their TeX, which the chapter shows as it is."""
    from resnet_theory.claims.chapter import Chapter

    data = Chapter("linear", profile="tiny", seed=0).check("hardt-ma/thm-2.1-proof").data["layer-count"]
    for key in ("count printed", "count fixed", "slack fixed"):
        assert not ASCII_MATH.search(data[key]) and "sqrt(" not in data[key], data[key]
    assert r"\sqrt{\gamma}" in data["count printed"] and data["count fixed"] == "0"


def test_punctuation_after_typeset_math_stays_on_its_line():
    """A claim's statement ended "... \\le \\pi/q" with its full stop alone on the next line (the linear chapter's
    rotation-norm evidence at 1400 px): the last piece of the math and the punctuation after it are kept together,
    as the page's own math is (resnet_theory.book.math_punctuation); the other pieces may still break."""
    nowrap = '<span class="math-nowrap" style="white-space: nowrap">'
    out = text_html(r"bounded by $\|B\| = \max_i |s_i| \le \pi/q$. Then $x$, and $y$ alone")
    assert (
        rf"\(\|B\| =\) \(\max_i |s_i| \le\) {nowrap}\(\pi/q\).</span> Then {nowrap}\(x\),</span> and \(y\) alone" in out
    )
    assert not ascii_math(out)


def test_the_positive_definite_sweep_names_its_series_typeset():
    """The series of the Bartlett-Helmbold-Long sweep were "[1/kappa, 1]", "[kappa^-1/2, kappa^1/2]", "kappa 8,
    around one" in the fits table (issue 33 review): they are TeX now, and the table shows no ASCII math."""
    from resnet_theory.claims.chapter import Chapter

    fits = Chapter("linear", profile="tiny", seed=0).check("bartlett-helmbold-long/spd").data["fits"]
    shown = ResultsTable(fits)._repr_html_()
    assert not ascii_math(shown), ascii_math(shown)
    assert r"\kappa^{-1/2}" in shown and "kappa^" not in shown.replace(r"\kappa^", "")


def test_what_the_declarations_show_is_typeset():
    """Every claim's printed location (the ledger's "stated in" column), its control's input, the statement and
    reason of every statement not checked, the paper rows of the ledger's list of printed statements and what
    each knob sizes have no ASCII mathematics: the ledger printed "the surrogate labels q_1..q_r" and
    "paragraph 8 (n > r^2 in practice)", a control read "convex quadratic in A_1 ... -2 R Sigma" (issue 33)."""
    from resnet_theory.claims import coverage

    texts = []
    for chapter in CHAPTER_MODULES:
        claims = chapter_claims(chapter)
        for claim in claims.claims.values():
            texts += [("ref", claim.id, claim.ref)]
            control = getattr(claim, "control", None)
            if control is not None:
                texts += [("control", claim.id, control.input)]
        for skip in claims.skipped:
            texts += [("skip", skip.ref, skip.ref), ("skip", skip.ref, skip.statement), ("skip", skip.ref, skip.why)]
        for row in claims.profile.rows("quick"):
            texts += [("knob", row["knob"], row["what it sizes"])]
    for row in coverage.ROWS:
        texts += [("printed statement", row.location, row.location), ("printed statement", row.location, row.what)]
    found = {(kind, where): ascii_math(text_html(text)) for kind, where, text in texts if ascii_math(text_html(text))}
    assert not found, found


def test_example_1_shows_no_python_list_beside_its_typeset_one():
    """Example 1's derivative check read "SymPy minus printed formulas: $[0, 0, 0, 0, 0, 0]$ = [0, 0, 0, 0, 0, 0]"
    (issue 33 review): the expected zeros are SymPy's, so both sides are typeset."""
    from resnet_theory.claims.chapter import Chapter

    run = Chapter("linear_predictors", profile="tiny", seed=0).check("shamir/example-1-derivatives")
    statement, control = run.evidence.statement, run.evidence.control
    for summary in (statement.summary, control.summary if hasattr(control, "summary") else control[0].summary):
        shown = re.sub(r"\$[^$]*\$", " ", summary)
        assert not re.search(r"\[\d", shown), summary


def test_a_statement_not_checked_typesets_its_printed_location():
    """The ledger's list of statements not checked escaped its locations while the claims' locations were
    typeset: "Section 3, paragraph 8 ($n > r^2$ in practice)" showed its dollars (issue 33 review)."""
    from resnet_theory.ledger_html import skipped_html

    shown = skipped_html(
        [
            {
                "paper": "hardt-ma",
                "ref": "Section 3, paragraph 8 ($n > r^2$ in practice)",
                "statement": "In practice.",
                "why": "a remark",
                "chapter": "expressivity",
            }
        ]
    )
    assert r"\(n &gt;\)" in shown and "$" not in shown, shown
