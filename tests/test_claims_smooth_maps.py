"""Every claim of ``resnet_theory.claims.smooth_maps`` (book/smooth_maps.md) runs at the tiny profile and gives a
well-formed record: a verdict, a control that fails, and the data and glue the chapter uses."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from resnet_theory import smooth
from resnet_theory.claims import smooth_maps
from resnet_theory.claims.context import Context
from resnet_theory.claims.run import run_claim
from resnet_theory.claims.spec import Checked, NotCheckable
from resnet_theory.ledger import VERDICTS
from resnet_theory.tables import in_words

from conftest import assert_no_ascii_math_shown

CHAPTER = Path(__file__).resolve().parents[1] / "book" / "smooth_maps.md"
CLAIMS = smooth_maps.CLAIMS

#: claim id -> the keys of ``evidence.data`` the chapter reads.
DATA_KEYS = {
    "bartlett-evans-long/representation-rate-inverse-m": {"certificates", "rates", "control_rows"},
    "bartlett-evans-long/representation-rate": {"rates", "control_rows"},
    "bartlett-evans-long/functional-gradient": {"witnesses", "ratios", "control_ratios", "aligned"},
    "bartlett-evans-long/parameter-space": {"saddle_rows", "local_rows", "hessian_witnesses", "function_space"},
}


pytestmark = pytest.mark.usefixtures("one_thread_for_the_module")


@pytest.fixture(scope="module")
def runs():
    """Every claim run once at the tiny profile, in one context (as the chapter runs them)."""
    ctx = Context.for_table(CLAIMS.profile, "tiny", 0)
    return {decl.id: run_claim(decl, ctx) for decl in CLAIMS}


def test_the_module_declares_the_chapters_five_claims():
    assert list(CLAIMS.claims) == [
        "bartlett-evans-long/representation-rate-inverse-m",
        "bartlett-evans-long/representation-rate",
        "bartlett-evans-long/functional-gradient",
        "bartlett-evans-long/parameter-space",
        "bartlett-evans-long/constants",
    ]
    assert set(DATA_KEYS) == {d.id for d in CLAIMS if isinstance(d, Checked)}
    assert isinstance(CLAIMS.claims["bartlett-evans-long/constants"], NotCheckable)


def test_sources_say_what_each_statement_was_checked_against():
    kinds = {d.id: d.source.kind for d in CLAIMS}
    assert kinds["bartlett-evans-long/representation-rate-inverse-m"] == "abstract"
    assert kinds["bartlett-evans-long/parameter-space"] == "abstract"
    assert kinds["bartlett-evans-long/representation-rate"] == "review"
    assert kinds["bartlett-evans-long/functional-gradient"] == "review"
    assert "review 002" in CLAIMS.claims["bartlett-evans-long/functional-gradient"].source.detail
    # the paper's printed text is not available (SOURCES.md): no claim, checkable or not, is labelled "as printed"
    assert kinds["bartlett-evans-long/constants"] == "abstract"
    assert "printed" not in kinds.values()


@pytest.mark.parametrize("claim_id", list(DATA_KEYS))
def test_each_checked_claim_gives_a_verdict_a_failing_control_and_its_data(runs, claim_id):
    run = runs[claim_id]
    assert run.verdict in VERDICTS and run.verdict != "not-checkable-here"
    assert run.evidence.controls and not any(c.holds for c in run.evidence.controls)
    assert run.record.control is not None and run.record.control["holds"] is False
    assert DATA_KEYS[claim_id] <= set(run.data)
    for key, value in run.evidence.glue.items():
        assert key.startswith("smooth_") and (isinstance(value, str) or math.isfinite(value)), key


def test_no_summary_a_page_shows_has_ascii_math(runs):
    """The issue-33 scan (``tests/test_ledger_math.py``) on this file's tiny runs: not a second run of the claims."""
    assert_no_ascii_math_shown("smooth_maps", runs.values())


def test_not_checkable_says_what_it_needs(runs):
    run = runs["bartlett-evans-long/constants"]
    assert run.verdict == "not-checkable-here" and "full text" in run.record.needs and run.evidence is None


def test_every_glue_key_the_chapter_quotes_is_computed(runs):
    """The prose's ``{glue:text}`smooth_...``` keys come from a claim's glue or from one of the chapter's own
    illustration cells (the warm-up, the SVD table, the equidistributed scales)."""
    text = CHAPTER.read_text()
    quoted = set(re.findall(r"\{glue:text\}`(smooth_[a-z0-9_]+)", text))
    from_claims = {k for r in runs.values() if r.evidence for k in r.evidence.glue}
    in_chapter = {k for k in quoted if re.search(rf"\b{k}\s*=|\"{k}\"", text)}
    assert quoted - from_claims - in_chapter == set()
    assert not from_claims & in_chapter, "a number glued twice"


def test_every_glue_key_a_claim_or_the_chapter_computes_is_quoted(runs):
    """The converse: no number is glued that the chapter never quotes, whether a claim glues it or a chapter
    cell (``glue("smooth_...", ...)`` or ``glue_numbers(smooth_...=...)``) does."""
    text = CHAPTER.read_text()
    quoted = set(re.findall(r"\{glue:text\}`(smooth_[a-z0-9_]+)", text))
    for claim_id, run in runs.items():
        unquoted = set(run.evidence.glue if run.evidence else ()) - quoted
        assert not unquoted, f"{claim_id} glues what the chapter never quotes: {sorted(unquoted)}"
    in_chapter = set(re.findall(r"\b(smooth_[a-z0-9_]+)\s*=|glue\(\"(smooth_[a-z0-9_]+)\"", text))
    in_chapter = {name for pair in in_chapter for name in pair if name}
    assert in_chapter and not in_chapter - quoted, sorted(in_chapter - quoted)


def test_the_chapter_types_none_of_the_numbers_its_module_chooses():
    """The sizes and tolerances the claims module chooses reach the prose by glue, and its texts are written from
    them: the ruled-out maps' strength, the exactness tolerance and depths, the examples' deviation and shift."""
    text = CHAPTER.read_text()
    for typed in ("0.6\\,|x|", "t/0.6", "(0.6, 0)", "$10^{-9}$", "1, 3 and 12", "$10^{-3}$", "is $0.1$", "goes to 256"):
        assert typed not in text, typed
    control = CLAIMS.claims["bartlett-evans-long/representation-rate-inverse-m"].control.input
    assert f"{smooth_maps.RULED_OUT_STRENGTH:g} |x|" in control
    parameter = CLAIMS.claims["bartlett-evans-long/parameter-space"].control.input
    assert f"{smooth_maps.FUNCTION_SPACE_LAYERS}-layer" in parameter


def test_the_functional_gradient_bound_is_the_talks_not_printed(runs):
    """The bound is the talk notes' (a review), not a printed text: no summary or control text calls it printed."""
    decl = CLAIMS.claims["bartlett-evans-long/functional-gradient"]
    run = runs["bartlett-evans-long/functional-gradient"]
    assert "printed" not in decl.control.input
    assert "printed" not in run.evidence.statement.summary and "printed" not in run.evidence.controls[0].summary
    assert not [key for key in run.evidence.glue if "printed" in key]  # the glue keys name it the talk's too


def test_the_representation_claims_share_one_computation_and_tiny_still_certifies(runs):
    inv, log = (runs[f"bartlett-evans-long/{k}"] for k in ("representation-rate-inverse-m", "representation-rate"))
    assert [r.spacing for r in inv.data["rates"]] == ["uniform"] * len(smooth_maps.CASES)
    assert [r.spacing for r in log.data["rates"]] == ["geometric"] * len(smooth_maps.CASES)
    # at the tiny sizes every covered map still has a finite certificate: the claim is decided, not starved
    assert all(math.isfinite(row["$C$ (uniform)"]) for row in inv.data["certificates"][: len(smooth_maps.CASES)])
    assert inv.verdict == log.verdict == "confirmed"


def test_claim_random_numbers_do_not_depend_on_what_ran_before():
    decl = CLAIMS.claims["bartlett-evans-long/functional-gradient"]
    alone = run_claim(decl, Context.for_table(CLAIMS.profile, "tiny", 0, {"n_instances": 20}))
    again = run_claim(decl, Context.for_table(CLAIMS.profile, "tiny", 0, {"n_instances": 20}))
    other_seed = run_claim(decl, Context.for_table(CLAIMS.profile, "tiny", 1, {"n_instances": 20}))
    assert np.array_equal(alone.data["ratios"], again.data["ratios"])
    assert not np.array_equal(alone.data["ratios"], other_seed.data["ratios"])


def test_the_written_out_adam_step_is_torch_adam():
    """The representation claims' lower estimates ascend with ``smooth._adam_step`` (no ``torch.optim``, whose
    first use imports ``torch._dynamo``): the same numbers as ``torch.optim.Adam``, bit for bit."""
    from resnet_theory import smooth

    g = torch.Generator().manual_seed(1)
    start = torch.randn(20, 3, generator=g, dtype=torch.float64)
    W = torch.randn(3, 3, generator=g, dtype=torch.float64)

    def objective(x):
        return torch.sin(x @ W).sum() + (x**3).sum()

    ours, theirs = start.clone().requires_grad_(True), start.clone().requires_grad_(True)
    moments = (torch.zeros_like(ours), torch.zeros_like(ours))
    opt = torch.optim.Adam([theirs], lr=0.05)
    for step in range(1, 30):
        ours.grad = None
        opt.zero_grad()
        objective(ours).backward()
        objective(theirs).backward()
        with torch.no_grad():
            smooth._adam_step(ours, ours.grad, *moments, step, 0.05)
        opt.step()
        assert torch.equal(ours, theirs), step
    assert not torch.equal(ours, start)


def test_the_control_draws_outside_the_theorem_at_odd_depths_as_its_text_says():
    """The chapter and the control's text read the range and the depths from CONTROL_EPS and CONTROL_DEPTHS and
    say the depths are odd (so the talk's factor stays positive) and eps is outside eps < 1: both must hold."""
    low, high = smooth_maps.CONTROL_EPS
    assert 1 <= low < high and all(m % 2 == 1 for m in smooth_maps.CONTROL_DEPTHS)
    text = CLAIMS.claims["bartlett-evans-long/functional-gradient"].control.input
    assert f"${low:g} < \\epsilon < {high:g}$" in text and in_words(smooth_maps.CONTROL_DEPTHS) in text


@pytest.mark.parametrize(
    "claim_id", ["bartlett-evans-long/representation-rate-inverse-m", "bartlett-evans-long/representation-rate"]
)
def test_each_ruled_out_map_is_a_control_of_its_own(runs, claim_id):
    """One control per ruled-out map, each failing: the cusp map's failure (no certificate: the grid cannot keep
    g' invertible) is not masked by the Hölder map's, which its infinite sup ||h''|| decides by derivation."""
    controls = runs[claim_id].evidence.controls
    assert len(controls) == len(smooth.RULED_OUT_MAPS) == 2
    assert not any(c.holds for c in controls)
    holder, cusp = controls
    assert "holder" in holder.summary and "cusp" not in holder.summary
    assert "cusp" in cusp.summary and "holder" not in cusp.summary
    assert "invertible" in cusp.summary  # the computed reason, not the Hölder map's declared one


def test_the_exactness_quoted_beside_the_certificates_is_the_covered_maps(runs):
    """The overview quotes ``smooth_exact_err`` for the maps the certificates cover: the largest relative error of
    their compositions, not of the ruled-out maps'."""
    claims = ("representation-rate-inverse-m", "representation-rate")  # uniform and geometric scales
    covered = [r.exact_errors.max() for c in claims for r in runs[f"bartlett-evans-long/{c}"].evidence.data["rates"]]
    glued = runs["bartlett-evans-long/representation-rate-inverse-m"].evidence.glue["smooth_exact_err"]
    assert glued == max(covered)
