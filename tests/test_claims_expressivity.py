"""The expressivity chapter's claims (``resnet_theory.claims.expressivity``) run at the tiny profile: each claim
alone, in a context of its own, gives a well-formed record (a verdict, a control that fails, the data and glue
the chapter uses), and its numbers do not depend on which claims ran before it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from resnet_theory.claims.context import Context
from resnet_theory.claims.expressivity import CLAIMS, IMAGENET_CLASSES, PROFILE, TWIN_D2, sphere_points
from resnet_theory.claims.registry import chapter_claims
from resnet_theory.claims.run import run_claim
from resnet_theory.claims.spec import Checked
from resnet_theory.ledger import VERDICTS
from resnet_theory.tables import ResultsTable

from conftest import ROOT, assert_no_ascii_math_shown

CHAPTER = ROOT / "book" / "expressivity.md"

#: The verdicts at the tiny profile, seed 0: the same as the book's at the quick profile.
TINY_VERDICTS = {
    "hardt-ma/sec3-unit-norm": "confirmed",
    "hardt-ma/lemma-b.1": "corrected",
    "hardt-ma/thm-3.2": "proof-gap",
    "hardt-ma/sec3-parameter-count": "corrected",
    "hardt-ma/surrogates": "corrected",
    "hardt-ma/output-block": "corrected",
    "hardt-ma/lemma-b.2": "proof-gap",
    "hardt-ma/claim-c.1": "confirmed",
    "hardt-ma/claim-c.2": "confirmed",
}

#: The keys of ``evidence.data`` the chapter reads, per claim.
DATA_KEYS = {
    "hardt-ma/sec3-unit-norm": {"plain gap", "lifted gap", "fit error", "control gap"},
    "hardt-ma/sec3-parameter-count": {"rows"},
    "hardt-ma/lemma-b.1": {"hull"},
    "hardt-ma/thm-3.2": {
        "fits",
        "X_all",
        "y_all",
        "rho_all",
        "sphere_nets",
        "weights",
        "orthonormal",
        "digits",
        "twin",
        "projection_step",
        "chernoff",
        "pair_failure",
        "equidistant",
        "equidistant_cases",
        "conditions",
    },
    "hardt-ma/surrogates": {"rows"},
    "hardt-ma/output-block": {"skip_message", "skip_defined"},
    "hardt-ma/lemma-b.2": {"draws"},
    "hardt-ma/claim-c.1": set(),
    "hardt-ma/claim-c.2": set(),
}

#: The data entries the chapter shows as a table (rows of dicts with one set of keys).
TABLES = {
    "hardt-ma/lemma-b.1": ["hull"],
    "hardt-ma/thm-3.2": ["fits", "projection_step", "pair_failure", "equidistant"],
    "hardt-ma/surrogates": ["rows"],
    "hardt-ma/lemma-b.2": ["draws"],
    "hardt-ma/sec3-parameter-count": ["rows"],
}


pytestmark = pytest.mark.usefixtures("one_thread_for_the_module")


def tiny_context() -> Context:
    return Context.for_table(CLAIMS.profile, "tiny", 0)


@pytest.fixture(scope="module")
def runs():
    """Every claim run alone, each in a fresh tiny context (as ``verify ID`` runs it)."""
    return {decl.id: run_claim(decl, tiny_context()) for decl in CLAIMS}


def test_the_registry_finds_this_module_and_its_nine_claims_in_chapter_order():
    assert chapter_claims("expressivity") is CLAIMS
    assert list(CLAIMS.claims) == list(TINY_VERDICTS)
    checked = re.findall(r'chapter\.check\("([^"]+)"\)', CHAPTER.read_text())
    assert checked == list(CLAIMS.claims), "book/expressivity.md must run every claim once, in the module's order"
    assert [s.ref for s in CLAIMS.skipped] == [
        "Section 3, paragraph after Theorem 3.2 (parameter count)",
        "Section 1.1, paragraph 5 (parameters of CIFAR-10 networks)",
        "Section 1.1, paragraph 5 (the simpler residual layer)",
        "Section 3, paragraph 2 (two batch normalisations removed)",
        "Section 3, paragraph 5 (images perturbed imperceptibly)",
        "Section 3, paragraph 8 ($n > r^2$ in practice)",
        "Appendix C, proof of Claim C.1",
        "Appendix C, proof of Claim C.2",
    ]
    assert all(isinstance(d, Checked) and d.source.kind == "printed" for d in CLAIMS)


def test_what_rests_on_what_follows_the_printed_proofs():
    rests = {d.id: d.rests_on for d in CLAIMS}
    assert rests["hardt-ma/thm-3.2"] == ("hardt-ma/lemma-b.1", "hardt-ma/lemma-b.2")
    assert rests["hardt-ma/output-block"] == ("hardt-ma/lemma-b.1",)
    assert rests["hardt-ma/lemma-b.1"] == () and rests["hardt-ma/claim-c.2"] == ()


@pytest.mark.parametrize("claim_id", list(TINY_VERDICTS))
def test_each_claim_gives_a_well_formed_record_at_the_tiny_profile(runs, claim_id):
    run = runs[claim_id]
    rec = run.record
    assert rec.verdict in VERDICTS
    assert rec.verdict == TINY_VERDICTS[claim_id], rec.reason
    assert rec.control is not None and rec.control["holds"] is False, rec.control
    assert rec.control["input"] == CLAIMS.claims[claim_id].control.input
    assert rec.function == f"resnet_theory.claims.expressivity:{run.decl.evidence.__name__}"
    assert DATA_KEYS[claim_id] <= set(run.data), sorted(DATA_KEYS[claim_id] - set(run.data))
    for key in TABLES.get(claim_id, []):
        assert ResultsTable(run.data[key]).rows  # the table the chapter shows


def test_the_declared_corrections_and_proof_steps_come_with_their_checks(runs):
    for claim_id, run in runs.items():
        decl, ev = run.decl, run.evidence
        assert (decl.correction is None) == (ev.corrected is None), claim_id
        assert len(decl.proof_steps) == len(ev.proof_steps), claim_id
    lemma = runs["hardt-ma/lemma-b.1"].evidence
    assert not lemma.statement.holds and lemma.corrected.holds
    assert not lemma.proof.step.holds and lemma.proof.repair.holds
    theorem = runs["hardt-ma/thm-3.2"].evidence
    projection, conditions = theorem.proof_steps  # two steps of the printed proof, in its order
    assert theorem.statement.holds and not projection.step.holds and projection.repair.holds
    ev = runs["hardt-ma/sec3-parameter-count"].evidence
    assert not ev.statement.holds and ev.corrected.holds
    norm = runs["hardt-ma/sec3-unit-norm"].evidence  # the lift holds; plain division (no printed step) is data only
    assert norm.statement.holds and norm.proof is None and norm.corrected is None
    # the passage from the projected z_i to Lemma B.2's conditions (it was the claim thm-3.2-proof-conditions)
    assert not conditions.step.holds and conditions.step.decisive and conditions.repair.holds
    assert "the printed chain at exact witnesses" in conditions.step.summary and "SymPy" in conditions.repair.summary
    assert "repair slack" in runs["hardt-ma/thm-3.2"].data["conditions"]


def test_the_printed_count_misses_exactly_the_biases(runs):
    """The torch modules' count exceeds the printed dk + 2 l k^2 + kr + r^2 by l k + r, the biases of eq. (3.1)."""
    for row in runs["hardt-ma/sec3-parameter-count"].data["rows"]:
        assert row["l"] == -(-row["n"] // row["k"]) == row["blocks (module)"]  # the printed l = ceil(n/k)
        assert row["module, all"] - row["printed"] == row["l"] * row["k"] + PROFILE.resolve("tiny").classes
        assert row["module, all"] == row["corrected"]


def test_plain_normalisation_merges_x_and_2x_and_the_lift_keeps_them_apart(runs):
    data = runs["hardt-ma/sec3-unit-norm"].data
    assert data["plain gap"] <= 1e-12 < 1e-3 < data["lifted gap"]
    assert data["control gap"] == 0.0 and data["fit error"] <= 1e-6


def test_the_midpoint_counterexample_leaves_no_firing_margin(runs):
    rows = runs["hardt-ma/lemma-b.1"].data["hull"]
    assert [r[r"$\rho'$"] for r in rows] == [0.05, 0.1, 0.2]
    assert all(r[r"firing margin on $\alpha^{(1)}$"] <= 1e-9 for r in rows)
    assert all(r[r"$\min \|\alpha^{(i)} - \alpha^{(j)}\|$"] >= r[r"$3\rho'$"] for r in rows)


def test_lemma_b_1s_correction_and_repair_are_separate_checks_on_separate_inputs(runs, monkeypatch):
    """The corrected statement's check (per-unit block on random and ring instances) and the repair's (per-unit
    block on the equal-norm vectors where the printed threshold is tested) share no instance: breaking the block
    on the equal-norm vectors alone fails the repair and the step, never the correction."""
    from resnet_theory import expressivity as ex

    ev = runs["hardt-ma/lemma-b.1"].evidence
    assert ev.corrected.summary != ev.proof.repair.summary
    assert "equal-norm" in ev.proof.repair.summary and "equal-norm" not in ev.corrected.summary
    cases = ev.corrected.numbers["cases"], ev.proof.repair.numbers["cases"], ev.proof.step.numbers["cases"]
    n_rho = len(runs["hardt-ma/lemma-b.1"].data["hull"])
    count = PROFILE.resolve("tiny").lemma_instances
    assert cases == ((count + 1) * n_rho, n_rho, n_rho)  # random + ring; equal norms; equal norms
    block = ex.lemma_b_1_block
    is_equal_norm = lambda A: np.allclose(A[:, 0], A[0, 0]) and A.shape[1] == A.shape[0] + 1  # noqa: E731

    def broken(A, B, O=None, **kwargs):
        U, V, s, c = block(A, B, O, **kwargs)
        return (U, 2 * V, s, c) if is_equal_norm(np.asarray(A)) else (U, V, s, c)

    monkeypatch.setattr(ex, "lemma_b_1_block", broken)
    again = CLAIMS.claims["hardt-ma/lemma-b.1"].evidence(tiny_context())
    assert again.corrected.holds and not again.proof.repair.holds


def test_the_texts_state_the_constants_the_checks_run():
    """Lemma B.1's control and the surrogates' control write the module's constants into their texts, and the
    control instances lie where the text says: squared distances to S from CLOSE_MIN rho' up to (below)
    CLOSE_MIN CLOSE_SPREAD^2 rho', below the 3 rho' of the squared reading."""
    from resnet_theory.claims.expressivity import (
        CLOSE_MIN,
        CLOSE_RANGE,
        CLOSE_SPREAD,
        LEMMA_K,
        LEMMA_OUTSIDE,
        LEMMA_RHOS,
        NARROW,
        _instances,
    )

    assert CLOSE_RANGE == "$\\rho'/8$ and $2\\rho'$"  # what CLOSE_MIN = 1/8, CLOSE_SPREAD = 4 give
    assert CLOSE_RANGE in CLAIMS.claims["hardt-ma/lemma-b.1"].control.input
    assert f"\\lceil k_q / {NARROW} \\rceil" in CLAIMS.claims["hardt-ma/surrogates"].control.input
    g = np.random.default_rng(0)
    for rho_p in LEMMA_RHOS:
        for A, _, O in _instances(5, rho_p, rho_p * CLOSE_MIN, True, g, CLOSE_SPREAD):
            assert A.shape == (LEMMA_K, LEMMA_K) and O.shape == (LEMMA_OUTSIDE, LEMMA_K)
            nearest = ((O[:, None, :] - A[None]) ** 2).sum(-1).min(1) / rho_p
            assert nearest.min() >= float(CLOSE_MIN) * (1 - 1e-9)
            assert nearest.max() < float(CLOSE_MIN * CLOSE_SPREAD**2) < 3


def test_the_digits_glue_describes_the_data_fitted(runs):
    from sklearn.datasets import load_digits

    glue = runs["hardt-ma/thm-3.2"].evidence.glue
    digits = load_digits()
    assert glue["expr_dig_side"] == " \u00d7 ".join(map(str, digits.images.shape[1:]))
    assert glue["expr_dig_pixels"] == digits.data.shape[1] and glue["expr_dig_classes"] == len(set(digits.target))


def test_the_theorem_data_hold_what_the_chapter_draws(runs):
    data = runs["hardt-ma/thm-3.2"].data
    sizes = PROFILE.resolve("tiny").sizes
    assert [r["n"] for r in data["fits"]] == sizes and sorted(data["sphere_nets"]) == sizes
    assert data["X_all"].shape == (max(sizes), PROFILE.resolve("tiny").sphere_dim)
    assert len(data["weights"]["n"]) == len(data["weights"]["seconds"]) == len(sizes)
    assert data["chernoff"]["gap"] == 0
    assert "twin" in data and data["twin"]  # the builder's refusal, or the fit's error
    assert data["digits"]["err"] <= 1e-6


def test_the_twin_control_misfits_whatever_the_twins_label(runs):
    # the control's misfit is the pair's geometry (no threshold of the first block separates the twins),
    # not the clashing label: the same twin with the first point's own label misfits too
    twin = runs["hardt-ma/thm-3.2"].data["twin"]
    assert twin["d2"] == pytest.approx(TWIN_D2, rel=1e-6)
    assert twin["pair margin"] < 0
    assert twin["err"] > 1e-6 and twin["err same label"] > 1e-6
    assert "is not what breaks the fit" in twin["label"] and "no threshold" in twin["cause"]


def test_without_a_network_the_twin_control_says_so_and_is_no_usable_control(monkeypatch):
    """Where the recipe is undefined (no network on either twin), the pair has no margin (NaN) and the words
    say that no network was built, not that the first block separates the pair; the claim's control is then
    no usable control (a refusal to build measures nothing), as for the other controls of this module."""
    from resnet_theory import expressivity as ex
    from resnet_theory.claims import expressivity as claims_module
    from resnet_theory.verdicts import NoUsableControl

    def undefined(*args, **kwargs):
        raise ex.ConstructionError("two surrogates coincide: no output threshold below 1", "forced")

    monkeypatch.setattr(ex, "build_unchecked_resnet", undefined)
    ctx = tiny_context()
    twin = claims_module._twin_control(ctx, claims_module._sphere_fits(ctx))
    assert twin["err"] is None and twin["err same label"] is None and np.isnan(twin["pair margin"])
    assert twin["d2"] == pytest.approx(TWIN_D2, rel=1e-6)  # the data set is made, only the network is not
    for words in (twin["message"], twin["label"], twin["cause"]):
        assert "separates" not in words and "misfit arises" not in words and "breaks the fit" not in words
    assert twin["message"].startswith("no network") and twin["cause"].startswith("No network was built")
    evidence = CLAIMS.claims["hardt-ma/thm-3.2"].evidence(tiny_context())
    assert isinstance(evidence.control, NoUsableControl), evidence.control


def test_the_twin_words_follow_the_pairs_margin_and_the_other_labels_outcome():
    from resnet_theory.claims.expressivity import _twin_words

    apart = _twin_words(0.3, 2e-7, 0.01)  # the first block separates the pair; the own label fits
    assert apart["cause"].startswith("The first block separates the pair") and "no threshold" not in apart["cause"]
    assert "is what breaks the fit" in apart["label"]
    close = _twin_words(0.3, 0.2, -0.01)
    assert close["cause"].startswith("The cause is the pair's geometry") and "no threshold" in close["cause"]
    assert "is not what breaks the fit" in close["label"]
    assert "undefined" in _twin_words(0.3, None, -0.01)["label"]


def test_the_twin_control_input_quotes_the_distance_the_control_uses():
    from resnet_theory.claims.expressivity import TWIN_CONTROL
    from resnet_theory.tables import tex_number

    assert f"squared distance ${tex_number(TWIN_D2)}$" in TWIN_CONTROL
    assert CLAIMS.claims["hardt-ma/thm-3.2"].control.input == TWIN_CONTROL


def _chapter_glue_names(text: str) -> tuple[set[str], set[str]]:
    """The names the chapter's prose quotes, and those (or their prefixes, for f-strings) its cells glue."""
    quoted = set(re.findall(r"\{glue:(?:text)?\}`([A-Za-z0-9_]+)", text))
    glued = set(re.findall(r'glue\(f?"([A-Za-z0-9_]+)', text))
    return quoted, glued


def test_every_number_the_prose_quotes_is_glued_by_a_claim_or_by_the_chapter(runs):
    quoted, glued = _chapter_glue_names(CHAPTER.read_text())
    from_claims = {name for run in runs.values() for name in run.evidence.glue}
    missing = [
        name
        for name in sorted(quoted)
        if name not in from_claims
        and not any(name.startswith(g) for g in glued)
        and not name.startswith("verdict_")
        and name != "ledger_summary"
    ]
    assert not missing, f"quoted in book/expressivity.md but glued nowhere: {missing}"
    assert not (from_claims & glued), "a number glued twice, by a claim and by the chapter"


def test_every_number_a_claim_or_the_chapter_glues_is_quoted_by_the_chapter(runs):
    """No glue that no page quotes: every key a claim glues and every key a chapter cell glues (for an f-string
    key, some key with its prefix) is quoted by book/expressivity.md."""
    text = CHAPTER.read_text()
    quoted, glued = _chapter_glue_names(text)
    for claim_id, run in runs.items():
        unquoted = set(run.evidence.glue) - quoted
        assert not unquoted, f"{claim_id} glues what book/expressivity.md never quotes: {sorted(unquoted)}"
    literal = set(re.findall(r'glue\("([A-Za-z0-9_]+)"', text))
    assert not literal - quoted, f"glued by a chapter cell, never quoted: {sorted(literal - quoted)}"
    prefixes = set(re.findall(r'glue\(f"([A-Za-z0-9_]+)\{', text))
    assert prefixes and all(any(q.startswith(prefix) for q in quoted) for prefix in prefixes), prefixes


def test_no_summary_a_page_shows_has_ascii_math(runs):
    """The issue-33 scan (``tests/test_ledger_math.py``) on this file's tiny runs: not a second run of the claims."""
    assert_no_ascii_math_shown("expressivity", runs.values())


def test_glue_values_are_plain_numbers_and_strings(runs):
    for run in runs.values():
        for name, value in run.evidence.glue.items():
            assert type(value) in (bool, int, float, str), (name, type(value))


#: Glued wall-clock times, which differ from run to run.
TIMINGS = {"expr_rho_seconds", "expr_slope_time", "expr_time_last"}


def test_run_together_in_chapter_order_each_claim_gives_its_numbers_alone_and_shares_the_networks(runs):
    ctx = tiny_context()
    together = {decl.id: run_claim(decl, ctx) for decl in CLAIMS}
    for claim_id, run in together.items():
        alone = {k: v for k, v in runs[claim_id].evidence.glue.items() if k not in TIMINGS}
        assert {k: v for k, v in run.evidence.glue.items() if k not in TIMINGS} == alone, claim_id
        assert run.verdict == runs[claim_id].verdict
    shared = ctx._shared["sphere-fits"]["nets"]
    assert together["hardt-ma/thm-3.2"].data["sphere_nets"] is shared
    assert together["hardt-ma/thm-3.2"].data["digits"] is ctx._shared["digits-fit"]


def test_sphere_points_are_unit_vectors_and_a_prefix_of_a_larger_sample():
    X, y = sphere_points(50, 8, 3, 7)
    assert X.shape == (50, 8) and np.allclose(np.linalg.norm(X, axis=1), 1.0)
    assert set(np.unique(y)) <= {0, 1, 2}
    assert np.array_equal(sphere_points(20, 8, 3, 7)[0], X[:20])
    g = np.random.default_rng(7)
    assert np.array_equal(sphere_points(50, 8, 3, g)[0], X)


def test_the_profile_table_keeps_the_chapters_sizes():
    quick, full = PROFILE.resolve("quick"), PROFILE.resolve("full")
    assert quick.sizes == [300, 1000, 3000, 10000, 20000] and full.sizes[-1] == 100000
    assert (quick.jl_draws, full.jl_draws) == (24, 60) and (quick.equi_draws, full.equi_draws) == (30, 40)
    assert quick.mc_samples == full.mc_samples == 200_000
    with pytest.raises(ValueError, match="unknown knob 'size'"):
        PROFILE.resolve("quick", {"size": [10]})


def test_the_output_block_as_printed_is_ill_typed_and_its_correction_holds(runs):
    """The printed y = h + T(h) (k-vector plus r-vector) fails on every network, k != r; the layer without the
    skip maps every surrogate to its label; the control (the projected inputs) fails."""
    run = runs["hardt-ma/output-block"]
    decl, ev = run.decl, run.evidence
    assert decl.correction is not None and decl.proof_steps == ()
    assert "h_\\ell + T(h_\\ell)" in decl.statement  # the statement is the printed one, with the skip
    assert not ev.statement.holds and ev.corrected.holds and not ev.controls[0].holds
    assert run.data["skip_defined"] and not any(run.data["skip_defined"])
    assert "broadcast" in run.data["skip_message"]
    assert ev.glue["expr_skip_k"] != ev.glue["expr_skip_r"] and ev.glue["expr_skip_defined"] == 0
    assert run.record.corrected_statement == decl.correction.statement


def test_lemma_b_2_is_a_record_the_statement_holds_the_printed_bound_fails_the_repair_holds(runs):
    """Lemma B.2 is a claim (no longer a skip line): on instances of (a) and (b) (norms across window (a), inner
    triples) the induction maps every z to its surrogate (torch), the proof's <q_s, z_i> <= 1 - rho' fails on
    most draws, the per-unit condition holds in the repair's order (decreasing norm) and fails in data order,
    and a duplicated point of another label (b fails) defeats the induction; Theorem 3.2 rests on it."""
    from resnet_theory.claims.expressivity import (
        LEMMA_B2,
        lemma_b_2_induction,
        lemma_b_2_instance,
        per_unit_excess,
    )

    run = runs["hardt-ma/lemma-b.2"]
    ev, glue = run.evidence, run.evidence.glue
    assert run.verdict == "proof-gap" and len(run.decl.proof_steps) == 1
    assert ev.statement.holds and ev.statement.decisive
    assert not ev.proof.step.holds and ev.proof.step.decisive and ev.proof.repair.holds
    assert not ev.controls[0].holds and ev.controls[0].decisive
    assert glue["expr_b2_sep_min"] >= LEMMA_B2["rho_p"]  # the instances satisfy (b)
    rho_p = LEMMA_B2["rho_p"]  # and (a), reaching both ends of the window (the triples' points)
    assert glue["expr_b2_sq_lo"] == pytest.approx(1 - rho_p) and glue["expr_b2_sq_hi"] == pytest.approx(1 + rho_p)
    assert 1 - rho_p - 1e-12 <= min(r["norm_sq_min"] for r in run.data["draws"])
    assert max(r["norm_sq_max"] for r in run.data["draws"]) <= 1 + rho_p + 1e-12
    qz = np.array([r["qz"] for r in run.data["draws"]])
    assert glue["expr_b2_step"] == ev.proof.step.numbers["estimate"] == np.mean(qz <= glue["expr_b2_bound"]) < 0.5
    assert glue["expr_b2_in_order"] == 0.0 < glue["expr_b2_repair"]  # the order is what the repair needs
    # the glued fractions are the checks' own estimates, over the draws the data keep
    from resnet_theory.expressivity import FIT_TOLERANCE

    draws = run.data["draws"]
    built = [r["twin"] for r in draws if r["twin"] is not None]
    assert glue["expr_b2_twin"] == ev.controls[0].numbers["estimate"] == np.mean(np.array(built) <= FIT_TOLERANCE)
    fits = [r["err"] <= FIT_TOLERANCE for r in draws]
    assert glue["expr_b2_fit"] == ev.statement.numbers["estimate"] == np.mean(fits)
    assert "hardt-ma/lemma-b.2" in CLAIMS.claims["hardt-ma/thm-3.2"].rests_on
    assert not any("Lemma B.2" in s.ref for s in CLAIMS.skipped)
    g = np.random.default_rng(3)
    Z = lemma_b_2_instance(g, 40, 8, 0.2, triples=2)
    sq = (Z**2).sum(1)
    assert np.all((0.8 - 1e-12 <= sq) & (sq <= 1.2 + 1e-12)) and np.allclose(sq[:6], [0.8, 1.2, 1.2] * 2)
    G = Z @ Z.T  # each triple's inner point is beaten in its own direction by both neighbours, by rho'/4
    assert np.allclose([G[0, 1] - G[0, 0], G[0, 2] - G[0, 0], G[3, 4] - G[3, 3]], 0.05)
    assert ((Z[0] - Z[1:3]) ** 2).sum(1) == pytest.approx([0.3, 0.3])  # 3 rho'/2: hypothesis (b) holds
    Q = g.standard_normal((3, 8))
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    y = np.arange(40) % 3
    err = lemma_b_2_induction(Z, Q[y])
    # the repair's condition (every unit beats every surrogate and unmoved input) is sufficient, and holds here
    assert per_unit_excess(Z, Q, np.argsort(-sq, kind="stable")) < 0 and err <= 1e-6
    assert per_unit_excess(Z, Q, np.arange(40)) >= 0.05 - 1e-12  # data order: a triple in one group fails
    assert lemma_b_2_induction(np.vstack([Z, Z[:1]]), Q[np.append(y, (y[0] + 1) % 3)]) == np.inf
    with pytest.raises(RuntimeError, match="squared distance below"):
        lemma_b_2_instance(g, 200, 2, 0.5)
    for rho_p, triples in ((0.0, 0), (0.96, 0), (0.2, 14), (0.2, -1)):  # 14 triples need 42 > 40 points
        with pytest.raises(ValueError, match="0 < rho' < 0.96 and 3 triples <= n"):
            lemma_b_2_instance(g, 40, 8, rho_p, triples)


def test_the_projection_step_shows_both_readings_of_log(runs):
    """The paper's log has no base: the projection step's data give both readings (ln, log2), the printed step
    fails in both, and the chapter's prose says which reading its sentence on the rescaled step needs."""
    run = runs["hardt-ma/thm-3.2"]
    glue = run.evidence.glue
    assert {"expr_jl_printed2", "expr_jl_scaled2_min", "expr_jl_scaled2_max"} <= set(glue)
    assert glue["expr_jl_printed2"] == 0.0
    row = run.data["projection_step"][0]
    assert row["paper's k, log2"] > row["paper's k"]
    assert {"printed, log2: kept", "1/k scale, log2: kept"} <= set(row)
    assert "log2" in run.evidence.proof_steps[0].step.summary
    text = CHAPTER.read_text()
    assert "expr_jl_scaled2_min" in text and "what the book's reading shows depends on the base" in text


def test_the_printed_step_is_checked_on_the_printed_step_only_and_the_rescaled_reading_is_shown_beside_it(runs):
    """Theorem 3.2's proof-step check has exactly the printed parts (standard normal entries, log read as ln and
    as log2); the book's rescaled reading (entries of variance 1/k) is the same test kept in the data, its outcome
    glued in words, and the chapter says it is not part of the verdict."""
    from resnet_theory.claims.expressivity import _outcome_words

    run = runs["hardt-ma/thm-3.2"]
    step = run.evidence.proof_steps[0].step
    parts = step.numbers["parts"]
    assert len(parts) == 2 and not step.holds and step.decisive  # the printed parts alone decide
    assert "N(0, 1/k)" not in step.summary and "reading, an addition" not in step.summary
    assert step.summary.count("standard normal entries (printed)") == 2
    rescaled = run.data["rescaled_reading"]
    assert "the book's reading" in rescaled.summary and "N(0, 1/k)" in rescaled.summary
    assert rescaled.numbers["parts"][0]["estimate"] == run.data["projection_step"][0]["1/k scale: kept"]
    assert run.evidence.glue["expr_jl_scaled_outcome"] == _outcome_words(rescaled)
    text = " ".join(CHAPTER.read_text().split())  # the prose, its line breaks aside
    assert "shown beside the verdict and do not enter it" in text and "expr_jl_scaled_outcome" in text


@pytest.mark.parametrize("claim_id", ["hardt-ma/thm-3.2", "hardt-ma/lemma-b.1", "hardt-ma/lemma-b.2"])
def test_a_fit_measurement_that_always_gives_0_makes_the_control_hold(monkeypatch, claim_id):
    """Mutation test: with the torch measurement of the fit replaced by ``return 0.0`` (the module's error and the
    blocks' error), these controls no longer fail, so the claim no longer passes its control. The controls fail
    because a network built on the control input misfits, not because the builder refused to build one."""
    from resnet_theory import expressivity as ex
    from resnet_theory.claims import expressivity as claims_module

    monkeypatch.setattr(ex, "module_fit_error", lambda *args, **kwargs: 0.0)
    monkeypatch.setattr(claims_module, "_misfit", lambda *args, **kwargs: 0.0)
    evidence = CLAIMS.claims[claim_id].evidence(tiny_context())
    assert all(c.holds for c in evidence.controls), [c.summary for c in evidence.controls]


def test_the_surrogates_run_each_number_of_classes_once_even_when_the_knob_is_imagenets():
    ctx = Context.for_table(CLAIMS.profile, "tiny", 0, {"classes": IMAGENET_CLASSES})
    rows = run_claim(CLAIMS.claims["hardt-ma/surrogates"], ctx).data["rows"]
    assert [row["$r$"] for row in rows] == [IMAGENET_CLASSES]


def test_a_block_error_counts_only_a_missing_block_as_infinite():
    """inf (no block) only where a point of S is in the hull or the recipe's condition fails; a construction
    that fails for another reason (nearly dependent activations) is raised, not counted as a counterexample."""
    from resnet_theory import expressivity as ex
    from resnet_theory.claims.expressivity import _block_error

    def refuse(condition):
        def make_block(A, B, O):
            raise ex.ConstructionError("refused", condition)

        return make_block

    A, O = np.eye(2), np.zeros((0, 2))
    assert _block_error(refuse("hull"), A, A, O) == _block_error(refuse("lemma-b1"), A, A, O) == np.inf
    with pytest.raises(ex.ConstructionError, match="refused"):
        _block_error(refuse("activations"), A, A, O)
    assert _block_error(ex.lemma_b_1_block, A, 2 * A, O) <= 1e-12  # a block that exists: its torch error


def test_the_lemma_b_1_checks_stay_where_the_prose_says_the_printed_lemma_fails():
    """The chapter says the printed (unsquared) Lemma B.1 fails for rho' <= 2/9, where the midpoint configuration
    lives, and that "the checks stay at rho' <= 2/9": every rho' of LEMMA_RHOS is at most 2/9 (exactly, as a
    fraction), and at each one the midpoint's distance sqrt(2 rho') reaches the printed 3 rho' (hypothesis (b)).
    A LEMMA_RHOS grown past 2/9 fails here before the prose goes stale."""
    from fractions import Fraction

    import sympy as sp

    from resnet_theory.claims.expressivity import LEMMA_RHOS

    text = " ".join(CHAPTER.read_text().split())
    assert "the checks stay at $\\rho' \\le 2/9$" in text and "the lemma is false for $\\rho' \\le 2/9$" in text
    r = sp.symbols("r", positive=True)
    assert sp.solve(sp.Eq(9 * r**2, 2 * r), r) == [sp.Rational(2, 9)]  # 9 rho'^2 = 2 rho' at 2/9, as the prose says
    assert LEMMA_RHOS and all(Fraction(str(rho_p)) <= Fraction(2, 9) for rho_p in LEMMA_RHOS), LEMMA_RHOS
    assert all(np.sqrt(2 * rho_p) >= 3 * rho_p for rho_p in LEMMA_RHOS)


def test_theorem_3_2s_prose_takes_its_step_numbers_from_the_declaration():
    """The chapter names the steps of Theorem 3.2's printed proof by numbers glued from the claim's step keys and
    asks for a step's table by its key, so a reordered or extended declaration cannot leave the prose pointing at
    the wrong step; no step number or count of steps is typed anywhere in the chapter's prose."""
    from test_claims_linear import TYPED_STEP

    text = (Path(__file__).resolve().parents[1] / "book" / "expressivity.md").read_text()
    prose = re.sub(r"^```\{code-cell\}.*?^```$", "", text, flags=re.M | re.S)
    typed = TYPED_STEP.findall(prose)
    assert not typed, f"book/expressivity.md types step numbers by hand: {typed}"
    assert not re.findall(r"\.proof_step\(\s*\d", text), "a step table asked for by a typed number"
    decl = CLAIMS.claims["hardt-ma/thm-3.2"]
    keys = re.search(r'for key in \(([^)]*)\):\n    number = chapter\.step_number\("hardt-ma/thm-3\.2", key\)', text)
    assert keys and 'glue(f"thm32_step_{key}", number' in text, "the step numbers are glued from the declaration"
    glued = re.findall(r'"([a-z]+)"', keys.group(1))
    assert sorted(glued) == sorted(decl.step_keys)  # a key with a hyphen would need another glue name
    assert set(re.findall(r"\{glue:text\}`thm32_step_([a-z_]+)`", prose)) == set(glued)
    assert re.findall(r'c32\.proof_step\("([a-z-]+)"\)', text) == ["conditions"]
