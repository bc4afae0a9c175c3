"""The claims ledger: verdicts follow from computed checks; JSON round trip; aggregation."""

import dataclasses
import html
import json
import math
import re

import numpy as np
import pytest

from resnet_theory.book.claims_files import load_claims
from resnet_theory.ledger import Ledger, verdict_key
from resnet_theory.ledger_html import claims_table_html, errata_html, render_ledger, text_html, verdict_counts
from resnet_theory.record import LedgerDefect, claim_defects
from resnet_theory.verdicts import VERDICTS, Check, NoUsableControl, derive_verdict

#: A control input sentence for the tests' claims.
CI = "an input the claim rules out, for the test"


def test_check_at_most_and_at_least_compute_holds():
    assert Check.at_most([1.0, 2.0], [1.0, 3.0], what="x").holds
    c = Check.at_most([1.0, 2.5], 2.0, what="x")
    assert not c.holds and c.numbers["violations"] == 1 and c.numbers["worst_value"] == 2.5
    assert Check.at_least([3.0, 4.0], 3.0, what="y").holds
    assert not Check.at_least([2.999], 3.0, what="y").holds
    assert Check.at_least([2.999], 3.0, what="y", rtol=1e-3).holds


def test_nan_never_holds():
    assert not Check.at_most([math.nan], 1.0, what="nan").holds
    assert not Check.at_least([1.0], math.nan, what="nan").holds
    assert not Check.close([math.nan], [1.0], what="nan", atol=1.0).holds


def test_close_reports_largest_error_and_shape_mismatch():
    c = Check.close([1.0, 2.0 + 1e-3], [1.0, 2.0], what="v", atol=1e-2, rtol=0)
    assert c.holds and c.numbers["max_abs_error"] == pytest.approx(1e-3)
    assert not Check.close([1.0, 2.1], [1.0, 2.0], what="v", atol=1e-2, rtol=0).holds
    assert not Check.close(np.zeros(2), np.zeros(3), what="shape").holds
    assert "over 2 entries," in c.summary and "over 1 entry," in Check.close([1.0], [1.0], what="one").summary


def test_all_of_equal_combine():
    assert Check.all_of([True, True], what="a").holds
    assert Check.all_of([True, False], what="a").numbers["violations"] == 1
    assert Check.equal(2, 2, what="e").holds and not Check.equal(2, 3, what="e").holds
    assert not Check.combine([Check.equal(1, 1, what="a"), Check.equal(1, 2, what="b")], what="both").holds
    with pytest.raises(ValueError):
        Check.all_of([], what="empty")
    with pytest.raises(ValueError):
        Check.at_most([], 1.0, what="empty")


def test_verdict_table():
    ok, bad = Check.equal(1, 1, what="ok"), Check.equal(1, 2, what="bad")
    assert derive_verdict(ok) == "confirmed"
    assert derive_verdict(ok, bad) == "confirmed"
    assert derive_verdict(bad, ok) == "corrected"
    assert derive_verdict(bad, bad) == "refuted"
    assert derive_verdict(bad) == "refuted"
    assert derive_verdict(None) == "not-checkable-here"
    assert derive_verdict(ok, proof_step=bad) == "proof-gap"
    assert derive_verdict(ok, proof_step=ok) == "confirmed"
    assert derive_verdict(bad, ok, proof_step=bad) == "corrected"  # a counterexample to the statement wins


def test_statistical_checks_decide_only_outside_two_standard_errors():
    c = Check.statistical(0.93, 0.01, 0.90, what="accuracy", test="median of 10 seeds", n=10)
    assert c.holds and c.decisive and c.numbers["margin_standard_errors"] == pytest.approx(3.0)
    assert "+3.00 standard errors" in c.summary
    close = Check.statistical(0.911, 0.01, 0.90, what="accuracy", test="median of 3 seeds", n=3)
    assert close.holds and not close.decisive and "not decisive" in close.summary
    below = Check.statistical(0.5, 0.01, 0.9, what="loss", test="mean", n=10, above=False)
    assert below.holds and below.decisive
    assert derive_verdict(close) == "undecided"
    assert not Check.combine([c, close], what="both").decisive
    with pytest.raises(ValueError):
        Check.statistical(1.0, math.nan, 0.0, what="x", test="t", n=1)
    # a control's margin can run to thousands of standard errors: written with its thousands separated, as the
    # tables write theirs (the experiments page read "margin -3918.45" beside a table's "-3,920")
    far = Check.statistical(-2.299, 5.866e-4, 0.0, what="loss", test="Welch", n=4)
    assert "margin -3,919.20 standard errors" in far.summary


def test_undecided_statistical_claim_gets_no_verdict():
    ledger = Ledger("x")
    claim = ledger.claim(
        "a",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-a",
        printed=Check.statistical(0.911, 0.01, 0.90, what="acc", test="median", n=3),
        control_input=CI,
        control=Check.statistical(0.911, 0.01, 0.95, what="acc vs a higher bar", test="median", n=3),
    )
    assert claim.verdict == "undecided" and "the statement's check is within its noise" in claim.reason
    assert "+1.10 standard errors" in claim.reason


def test_proof_gap_records_step_and_repair_and_shows_in_errata():
    ledger = Ledger("linear")
    claim = ledger.claim(
        "hardt-ma/thm",
        paper="hardt-ma",
        ref="Theorem 2.1",
        statement="bound holds",
        section="linear-a",
        printed=Check.at_most([0.5], 1.0, what="best construction"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="bound scaled to 0.4"),
        proof_step=Check.at_most([1.1], 1.0, what="proof's construction"),
        proof_step_statement="integer layer counts meet the constant",
        repair=Check.at_most([0.9], 1.0, what="polar split"),
        repair_statement="use a polar split",
    )
    assert claim.verdict == "proof-gap"
    page = errata_html(ledger.claims)
    assert "integer layer counts" in page and "polar split" in page and "proof-gap" in page
    with pytest.raises(ValueError, match="repair"):
        ledger.claim(
            "hardt-ma/thm2",
            paper="hardt-ma",
            ref="r",
            statement="s",
            section="linear-a",
            printed=Check.at_most([0.5], 1.0, what="x"),
            control_input=CI,
            control=NO,
            proof_step=Check.at_most([1.1], 1.0, what="step"),
            proof_step_statement="step",
            repair=Check.at_most([1.1], 1.0, what="repair"),
            repair_statement="repair",
        )


def test_a_control_that_holds_is_a_defect_that_stops_the_chapter(tmp_path, monkeypatch):
    monkeypatch.setenv("RESNET_THEORY_CLAIMS_FILE", str(tmp_path / "x.claims.json"))
    ledger = Ledger("x")
    ledger.claim(
        "a",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-a",
        printed=Check.equal(1, 1, what="w"),
        control_input=CI,
        control=Check.equal(1, 1, what="a control that cannot fail"),
    )
    assert ledger.defects() and "a control that cannot fail" in ledger.defects()[0]
    with pytest.raises(LedgerDefect, match="negative control"):
        ledger.show()
    several = Ledger("y")
    several.claim(
        "b",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-b",
        printed=Check.equal(1, 1, what="w"),
        control_input=CI,
        control=[NO, Check.equal(2, 2, what="second control holds")],
    )
    assert several.claims[0].control["holds"]


def test_summary_sentence_and_verdict_keys():
    ledger = _ledger()
    assert ledger.summary_sentence() == "4 claims: 1 confirmed, 1 corrected, 1 refuted, 1 not checkable here"
    assert verdict_key("hardt-ma/thm-2.1") == "verdict_hardt_ma_thm_2_1"


def _ledger():
    ledger = Ledger("linear")
    ledger.claim(
        "hardt-ma/thm-2.1",
        paper="hardt-ma",
        ref="Theorem 2.1",
        statement="s1",
        section="linear-a",
        printed=Check.at_most([0.5], 1.0, what="norm"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="norm vs the bound scaled below the worst case"),
    )
    ledger.claim(
        "hardt-ma/eq-2.3",
        paper="hardt-ma",
        ref="(2.3)",
        statement="s2",
        section="linear-b",
        printed=Check.at_least([1.0], 2.0, what="printed"),
        corrected=Check.at_least([1.0], 1.0, what="corrected"),
        corrected_statement="fixed",
        control_input=CI,
        control=Check.at_least([1.0], 1.5, what="corrected bound scaled up"),
    )
    ledger.claim(
        "shamir/thm-1",
        paper="shamir",
        ref="Theorem 1",
        statement="s3",
        section="linear-c",
        printed=Check.equal(0, 1, what="refuted"),
        control_input=CI,
        control=Check.equal(0, 2, what="control"),
    )
    ledger.not_checkable(
        "hardt-ma/cifar",
        paper="hardt-ma",
        ref="Table 1",
        statement="s4",
        section="linear-d",
        reason="the paper's Table 1 is a CIFAR-10 result",
        needs="CIFAR-10 and a GPU",
    )
    return ledger


def test_ledger_records_derived_verdicts():
    ledger = _ledger()
    assert [c.verdict for c in ledger.claims] == ["confirmed", "corrected", "refuted", "not-checkable-here"]
    assert ledger.claims[0].control == {
        "holds": False,
        "decisive": True,
        "usable": True,
        "summary": ledger.claims[0].control["summary"],
        "input": CI,
    }
    assert ledger.claims[3].control is None


NO = Check.equal(1, 2, what="a control that fails")


def test_ledger_rejects_hand_written_verdicts_and_bad_input():
    ledger = Ledger("x")
    with pytest.raises(TypeError):
        ledger.claim(
            "a", paper="shamir", ref="r", statement="s", section="x-a", printed=True, control=NO, control_input=CI
        )
    with pytest.raises(TypeError):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed="confirmed",
            control=NO,
            control_input=CI,
        )
    with pytest.raises(TypeError, match="control"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=[],
        )
    with pytest.raises(TypeError, match="control"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=False,
        )
    with pytest.raises(ValueError, match="unknown paper"):
        ledger.claim(
            "a",
            paper="nobody",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=NO,
        )
    with pytest.raises(ValueError, match="unknown source"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=NO,
            source="notes",
        )
    with pytest.raises(ValueError, match="corrected statement"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 2, what="w"),
            corrected=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=NO,
        )
    with pytest.raises(ValueError, match="repair"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            proof_step=Check.equal(1, 2, what="step"),
            proof_step_statement="step",
            control_input=CI,
            control=NO,
        )
    with pytest.raises(ValueError, match="reason"):
        ledger.not_checkable("b", paper="shamir", ref="r", statement="s", section="x-b", reason="", needs="a GPU")
    with pytest.raises(ValueError, match="needs"):
        ledger.not_checkable("b", paper="shamir", ref="r", statement="s", section="x-b", reason="why", needs=" ")
    ledger.claim(
        "a",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-a",
        printed=Check.equal(1, 1, what="w"),
        control_input=CI,
        control=NO,
    )
    with pytest.raises(ValueError, match="twice"):
        ledger.claim(
            "a",
            paper="shamir",
            ref="r",
            statement="s",
            section="x-a",
            printed=Check.equal(1, 1, what="w"),
            control_input=CI,
            control=NO,
        )


def test_json_round_trip_and_aggregation(tmp_path, monkeypatch):
    ledger = _ledger()
    monkeypatch.setenv("RESNET_THEORY_CLAIMS_FILE", str(tmp_path / "executed" / "book" / "linear.claims.json"))
    ledger.show()
    other = Ledger("linear_predictors")
    other.claim(
        "shamir/ex-1",
        paper="shamir",
        ref="Example 1",
        statement="s",
        section="shamir-ex",
        printed=Check.close([0.5], [0.5], what="F"),
        control_input=CI,
        control=Check.close([0.6], [0.5], what="F perturbed"),
    )
    other.save(tmp_path / "executed" / "book" / "linear_predictors.claims.json")
    loaded = load_claims(tmp_path / "executed")
    assert {c.id for c in loaded} == {c.id for c in ledger.claims} | {"shamir/ex-1"}
    by_id = {c.id: c for c in loaded}
    assert by_id["hardt-ma/eq-2.3"].verdict == "corrected"
    assert by_id["hardt-ma/eq-2.3"].corrected_statement == "fixed"
    json.loads((tmp_path / "executed" / "book" / "linear.claims.json").read_text())  # valid JSON
    counts = verdict_counts(loaded)
    assert counts["total"] == {
        "confirmed": 2,
        "proof-gap": 0,
        "corrected": 1,
        "refuted": 1,
        "undecided": 0,
        "not-checkable-here": 1,
    }
    assert counts["Shamir (2018)"]["refuted"] == 1 and counts["Shamir (2018)"]["confirmed"] == 1
    assert set(counts["total"]) == set(VERDICTS)


def test_load_claims_rejects_unknown_verdict(tmp_path):
    bad = {
        "chapter": "x",
        "claims": [
            {
                "id": "a",
                "paper": "shamir",
                "ref": "r",
                "statement": "s",
                "chapter": "x",
                "section": "x-a",
                "verdict": "probably",
                "check": "",
                "evidence": {},
            }
        ],
    }
    (tmp_path / "x.claims.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="unknown verdict"):
        load_claims(tmp_path)


def test_the_books_analogue_is_a_field_of_the_record_and_records_from_before_it_read_as_they_said(tmp_path):
    from resnet_theory.record import claim_from_dict, source_line

    ledger = _ledger()
    ledger.claims[0] = dataclasses.replace(ledger.claims[0], source_detail="the digits", on_analogue=True)
    path = ledger.save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    assert [r["on_analogue"] for r in data["claims"]] == [True, False, False, False]  # every record carries it
    first = load_claims(tmp_path)[0]
    assert first.on_analogue and first.label == "confirmed, as printed, on the book's analogue"
    assert source_line(first) == "the paper's printed text, tested on the book's analogue: the digits"
    # a record written before the field: its detail said so, and it reads as it said; any other reads as printed
    old = {k: v for k, v in data["claims"][0].items() if k != "on_analogue"}
    said = "the printed statement, tested on the book's analogue (the digits), not on the paper's CIFAR runs"
    assert claim_from_dict({**old, "source_detail": said}).label == "confirmed, as printed, on the book's analogue"
    assert claim_from_dict({**old, "source_detail": "the digits"}).label == "confirmed, as printed"
    assert not claim_from_dict({**data["claims"][0], "on_analogue": False, "source_detail": said}).on_analogue
    # the field is strict: a boolean, and only on a printed statement
    for bad, words in (
        ({"on_analogue": 1}, "on_analogue must be bool, got int"),
        ({"on_analogue": "yes"}, "on_analogue must be bool, got str"),
        ({"source": "abstract"}, "only a printed statement is tested on the book's analogue, not a 'abstract' one"),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            claim_from_dict({**data["claims"][0], **bad})
    stray = dataclasses.replace(first, source="review", source_detail="the PaperWhy review of Hardt & Ma")
    assert any("only a printed statement" in d for d in claim_defects([stray]))


def test_rendered_ledger_links_to_sections():
    ledger = _ledger()
    html = claims_table_html(ledger.claims, link=True)
    assert 'href="linear.html#linear-b"' in html
    assert "CIFAR-10 and a GPU" in html and CI in html
    page = render_ledger(ledger.claims).data
    assert "claims-counts" in page and "claims-ledger" in page
    assert "No claims" in render_ledger([]).data
    assert "Control input" in html and "fails, as it must" in html
    # one row per claim, each with an anchor a reader can link to; the verdict is one unbreakable word
    assert html.count('<tr id="claim-') == len(ledger.claims) and 'id="claim-hardt-ma-thm-2-1"' in html
    assert 'href="#claim-hardt-ma-eq-2-3"' in html and 'class="claim-verdict"' in html
    assert "Errata" in page and "fixed" in errata_html(ledger.claims)


def test_the_ledger_page_refuses_a_recorded_claim_whose_control_holds(tmp_path):
    """A claims file no chapter could have published (its control holds: edited by hand, or left by an older
    check) stops the ledger page as the chapter would have been stopped."""
    ledger = _ledger()
    path = ledger.save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    data["claims"][0]["control"]["holds"] = True
    path.write_text(json.dumps(data))
    claims = load_claims(tmp_path)
    with pytest.raises(LedgerDefect, match="hardt-ma/thm-2.1: the negative control holds"):
        render_ledger(claims)
    rest = render_ledger([c for c in claims if c.id != "hardt-ma/thm-2.1"]).data
    assert "hardt-ma/eq-2.3" in rest and "hardt-ma/thm-2.1" not in rest


def test_load_claims_skips_the_executors_temporaries(tmp_path):
    """A chapter still executing (or killed) leaves ``.NAME.partial-PID.claims.json`` beside the published file;
    the ledger must not count its claims twice."""
    from resnet_theory.book.execute import partial_paths

    ledger = _ledger()
    published = ledger.save(tmp_path / "book" / "linear.claims.json")
    partial = partial_paths(tmp_path / "book" / "linear.ipynb", pid=12345)[1]
    partial.write_text(published.read_text())
    assert sorted(c.id for c in load_claims(tmp_path)) == sorted(c.id for c in ledger.claims)


def test_a_for_all_is_decisively_false_on_one_decisive_counterexample():
    far_below = Check.statistical(0.0, 0.05, 0.25, what="a", test="t", n=30)  # -5 standard errors
    near_below = Check.statistical(0.2, 0.05, 0.25, what="b", test="t", n=30)
    far_above = Check.statistical(0.9, 0.05, 0.25, what="c", test="t", n=30)
    assert not far_below.holds and far_below.decisive and not near_below.decisive
    both = Check.combine([far_above, near_below, far_below], what="all")
    assert not both.holds and both.decisive  # one decisive counterexample settles it
    undecided = Check.combine([far_above, near_below], what="all")
    assert not undecided.holds and not undecided.decisive
    ok = Check.equal(1, 1, what="x")
    assert derive_verdict(ok, proof_step=both) == "proof-gap"
    assert derive_verdict(ok, proof_step=undecided) == "undecided"
    ledger = Ledger("x")
    claim = ledger.claim(
        "a",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-a",
        printed=ok,
        control_input=CI,
        control=Check.equal(1, 2, what="control"),
        proof_step=undecided,
        proof_step_statement="step",
        repair=ok,
        repair_statement="repair",
    )
    assert claim.verdict == "undecided" and "proof step" in claim.reason and "b: t" in claim.reason


def test_a_failing_part_picked_among_many_must_clear_a_corrected_margin():
    # -2.5 standard errors decides alone, but not as the worst of 8 parts at their threshold (Bonferroni
    # level 2.77); -3.2 does.
    def part(margin):
        return Check.statistical(0.25 + 0.05 * margin, 0.05, 0.25, what="p", test="t", n=30)

    assert not part(-2.5).holds and part(-2.5).decisive
    assert Check.combine([part(-2.5)], what="one").decisive
    many = Check.combine([part(-2.5)] + [part(0.3)] * 7, what="eight")
    assert not many.holds and not many.decisive and "2.77 standard errors, 8 parts" in many.summary
    assert Check.combine([part(-3.2)] + [part(0.3)] * 7, what="eight").decisive
    # a deterministic counterexample needs no correction
    assert Check.combine([Check.equal(1, 2, what="x")] + [part(0.3)] * 7, what="eight").decisive


def test_a_combined_check_of_many_parts_is_summarised_by_its_tightest_part():
    def part(margin, name):
        return Check.statistical(0.5 + 0.1 * margin, 0.1, 0.5, what=name, test="t", n=30)

    few = Check.combine([part(3, "a"), part(5, "b")], what="few")
    assert "a: t" in few.summary and "b: t" in few.summary
    many = Check.combine([part(m, f"set {m}") for m in (5, 3.5, 9, 4, 6)], what="many")
    assert many.holds and many.summary.startswith("many: all 5 parts hold; tightest: set 3.5: t")
    bad = Check.combine([part(m, f"set {m}") for m in (5, -3.5, 9, -4, 6)], what="many")
    assert not bad.holds and bad.summary.startswith("many: 2 of 5 parts fail; worst: set -4: t")
    assert len(bad.numbers["parts"]) == 5  # every part's numbers are kept
    det = Check.combine([Check.equal(1, 1, what=f"e{i}") for i in range(5)] + [Check.equal(1, 2, what="x")], what="d")
    assert det.summary.startswith("d: 1 of 6 parts fail; failing: x: 1 $\\ne$ 2")
    # without margins no part is "tightest" or "worst": the first is shown and named as the first
    ok = Check.combine([Check.equal(1, 1, what=f"e{i}") for i in range(6)], what="d")
    assert ok.summary.startswith("d: all 6 parts hold; first: e0: ")
    two = Check.combine([Check.equal(1, 1, what="e")] * 4 + [Check.equal(1, 2, what=f"x{i}") for i in (1, 2)], what="d")
    assert two.summary.startswith("d: 2 of 6 parts fail; first failing: x1: ")


def test_a_checkable_claim_without_a_control_input_is_refused_and_not_published(tmp_path):
    """control.input is what makes a control reviewable: the ledger refuses a claim without it, and a claims
    file that lacks it (written by hand, or by an older chapter) stops the ledger page."""
    ledger = Ledger("x")
    kw = dict(paper="shamir", ref="r", statement="s", section="x-a", printed=Check.equal(1, 1, what="w"), control=NO)
    with pytest.raises(TypeError):
        ledger.claim("a", **kw)  # no control_input at all
    for empty in ("", "   ", "scaled"):
        with pytest.raises(ValueError, match="control_input"):
            ledger.claim("a", control_input=empty, **kw)
    path = _ledger().save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    del data["claims"][0]["control"]["input"]
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match=r"hardt-ma/thm-2.1: the negative control does not say .*control.input"):
        render_ledger(load_claims(tmp_path))


def test_a_statistical_reason_is_undecided_never_not_checkable_here(tmp_path):
    ledger = Ledger("x")
    with pytest.raises(ValueError, match="undecided"):
        ledger.not_checkable(
            "a",
            paper="hardt-ma",
            ref="Section 4",
            statement="s",
            section="x-a",
            reason="the second half is within noise (1.2 standard errors)",
            needs="more seeds",
        )
    # a claims file that files a statistic under not-checkable-here, or names nothing it needs, is refused
    path = _ledger().save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    record = data["claims"][3]
    assert record["verdict"] == "not-checkable-here"
    record["reason"] = "the margin is +1.1 standard errors: not decisive"
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match="statistical reason"):
        render_ledger(load_claims(tmp_path))
    record["reason"], record["needs"] = "a GPU run", None
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match="what hardware or data it needs"):
        render_ledger(load_claims(tmp_path))


def test_a_verdict_that_does_not_follow_from_its_evidence_is_not_published(tmp_path):
    path = _ledger().save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    data["claims"][2]["verdict"] = "confirmed"  # refuted by its own evidence
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match="shamir/thm-1: verdict 'confirmed' does not follow from its evidence"):
        render_ledger(load_claims(tmp_path))
    data["claims"][2]["verdict"] = "refuted"
    data["claims"][3]["verdict"] = "confirmed"  # not checkable, with no evidence at all
    path.write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match="without evidence"):
        render_ledger(load_claims(tmp_path))


def test_skipped_statements_reach_the_ledger_page(tmp_path):
    from resnet_theory.book.claims_files import load_skipped

    ledger = _ledger()
    ledger.skip(
        paper="hardt-ma",
        ref="Section 4.2",
        statement="ImageNet top-1 error 35.29%",
        why="needs ImageNet and weeks of GPU time",
    )
    with pytest.raises(ValueError, match="why"):
        ledger.skip(paper="hardt-ma", ref="Section 4.2", statement="x", why="")
    ledger.save(tmp_path / "linear.claims.json")
    skipped = load_skipped(tmp_path)
    assert skipped == ledger.skipped
    page = render_ledger(load_claims(tmp_path), skipped).data
    assert "Not checked, and why" in page and "ImageNet top-1 error 35.29%" in page


def test_undecided_corrected_statement_is_not_an_erratum():
    bad, ok = Check.equal(1, 2, what="bad"), Check.equal(1, 1, what="ok")
    shaky = Check.statistical(0.911, 0.01, 0.90, what="acc", test="median", n=3)
    assert derive_verdict(bad, shaky) == "undecided"
    assert derive_verdict(bad, ok) == "corrected"


def test_the_ledger_page_parts_render_under_their_own_headings(tmp_path):
    from resnet_theory.book.claims_files import published_claims
    from resnet_theory.ledger_html import ledger_section

    ledger = _ledger()
    ledger.save(tmp_path / "linear.claims.json")
    claims = published_claims(tmp_path)
    assert 'class="claims-errata"' in ledger_section("errata", claims).data
    assert 'class="claims-counts"' in ledger_section("counts", claims).data
    assert 'class="claims-ledger"' in ledger_section("claims", claims).data
    assert "checked above" in ledger_section("skipped", claims, []).data
    assert "No claims" in ledger_section("claims", []).data
    with pytest.raises(ValueError, match="unknown ledger part"):
        ledger_section("everything", claims)
    errata = ledger_section("errata", claims).data
    # one sentence per erratum, the computation one click away
    assert "what holds instead is \u201cfixed\u201d." in errata and "<details" in errata
    data = json.loads((tmp_path / "linear.claims.json").read_text())
    data["claims"][0]["control"]["holds"] = True
    (tmp_path / "linear.claims.json").write_text(json.dumps(data))
    with pytest.raises(LedgerDefect, match="negative control holds"):
        published_claims(tmp_path)


def test_long_formulas_are_cut_after_relations_outside_groups_so_lines_can_break():
    from resnet_theory.ledger_html import math_pieces

    assert math_pieces(r"\max_i \|A_i\| \le 2 (\sqrt{\pi} + \sqrt{3\gamma})^2 / \ell") == [
        r"\max_i \|A_i\| \le",
        r"2 (\sqrt{\pi} + \sqrt{3\gamma})^2 / \ell",
    ]
    assert math_pieces(r"f = g = h") == ["f =", "g =", "h"]
    # never inside braces, \left...\right or an environment, and \leq, \infty, \left are not relations here
    assert math_pieces(r"\left( a = b \right) \min_{x = 1} y") == [r"\left( a = b \right) \min_{x = 1} y"]
    assert math_pieces(r"\begin{pmatrix} a = 0 \\\\ b \end{pmatrix}") == [r"\begin{pmatrix} a = 0 \\\\ b \end{pmatrix}"]
    assert math_pieces(r"\infty \leftarrow x = y \rightarrow z") == [r"\infty \leftarrow x =", r"y \rightarrow z"]
    assert math_pieces("x") == ["x"] and math_pieces("= x") == ["= x"] and math_pieces("x =") == ["x ="]


def test_statements_typeset_their_math_and_escape_the_rest():

    out = text_html(r"a bound $\|A_i\| \le 2/\ell$ for <every> i")
    assert out == (r'<span class="mathjax_process">a bound \(\|A_i\| \le\) \(2/\ell\) for &lt;every&gt; i</span>')
    assert text_html("no math < here, $5 only") == "no math &lt; here, $5 only"
    claim = _ledger().claims[0]
    row = claims_table_html([claim], link=True)
    # a plain statement stays plain (its evidence's summaries typeset their relations, $\le$)
    assert "$" not in claim.statement and f"<br>{html.escape(claim.statement)}<" in row


# --- checks that would hold on nothing (issue 32) -----------------------------------------------------------------
@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Check.close([], [], what="e"), "needs at least one value"),
        (lambda: Check.close(np.zeros((0, 3)), np.zeros((0, 3)), what="e"), "needs at least one value"),
        (lambda: Check.at_most([], [], what="e"), "needs at least one value"),
        (lambda: Check.at_least(np.array([]), 1.0, what="e"), "needs at least one value"),
        (lambda: Check.all_of([], what="e"), "needs at least one condition"),
        (lambda: Check.equal([], [], what="e"), "an empty value holds on nothing"),
        (lambda: Check.equal("", "", what="e"), "an empty value holds on nothing"),
        (lambda: Check.close([1 + 1j], [1], what="c"), "complex values are not compared"),
        (lambda: Check.close([1.0], np.array([1 + 0j]), what="c"), "complex values are not compared"),
        (lambda: Check.at_most([1 + 5j], 2.0, what="c"), "complex values are not compared"),
        (lambda: Check.at_least(3.0, 2 + 9j, what="c"), "complex values are not compared"),
        (lambda: Check.at_most(np.array([1j], dtype=object), 2.0, what="c"), "complex values are not compared"),
        (lambda: Check.all_of([True, math.nan], what="n"), "every condition must be a boolean, got nan"),
        (lambda: Check.all_of([True, None], what="n"), "every condition must be a boolean, got None"),
        (lambda: Check.all_of(np.array([1.0, 2.0]), what="n"), "every condition must be a boolean"),
        (lambda: Check.all_of(["yes"], what="n"), "every condition must be a boolean"),
        (lambda: Check.at_most(["1"], 2.0, what="s"), "expected real numbers, got text"),
        (lambda: Check.at_most([{}], 2.0, what="s"), "expected real numbers, got object values"),
        (lambda: Check.at_most([1.0, 2.0, 3.0], [1.0, 2.0], what="s"), "a bound of shape (2,)"),
        # the issue 32 probe: tolerances that hold on anything, NaN equal to itself, statistics on nothing
        (lambda: Check.close([1.0], [5.0], rtol=math.inf, what="t"), "rtol must be a finite number >= 0"),
        (lambda: Check.at_most([9.0], 1.0, atol=math.inf, what="t"), "atol must be a finite number >= 0"),
        (lambda: Check.at_least([1.0], 2.0, rtol=math.nan, what="t"), "rtol must be a finite number >= 0"),
        (lambda: Check.close([1.0], [2.0], atol=-1.0, what="t"), "atol must be a finite number >= 0"),
        (lambda: Check.equal([math.nan], [math.nan], what="q"), "is NaN or complex"),
        (lambda: Check.equal(1, 1 + 0j, what="q"), "is NaN or complex"),
        (lambda: Check.equal(np.array([np.nan]).tolist(), [math.nan], what="q"), None),
        (lambda: Check.statistical(5.0, 1.0, 0.0, what="m", test="t", n=0), "n must be a whole number >= 1"),
        (lambda: Check.statistical(5.0, 1.0, 0.0, what="m", test="t", n=2.5), "n must be a whole number >= 1"),
        (lambda: Check.statistical(5 + 0j, 1.0, 0.0, what="m", test="t", n=3), "complex values are not compared"),
        (lambda: Check.statistical([5.0, -9.0], 1.0, 0.0, what="m", test="t", n=3), "estimate must be one number"),
        (lambda: Check.at_most([[1.0], [1.0, 2.0]], 3.0, what="r"), "got a ragged nesting"),
    ],
)
def test_checks_refuse_what_would_hold_on_nothing(make, words):
    """Each of these held before (an empty close, imaginary parts dropped, ``NaN`` truthy in ``all_of``): now a
    one-line refusal naming the check and its ``what``."""
    if words is None:  # NaN objects that are not one object: not equal, the check fails without a refusal
        assert not make().holds
        return
    with pytest.raises(ValueError) as info:
        make()
    assert words in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith("Check.")


def test_the_refusals_leave_real_checks_alone():
    assert Check.all_of(np.array([True, True]), what="a").holds
    assert Check.all_of([np.True_, True], what="a").holds and not Check.all_of([np.False_], what="a").holds
    assert Check.close(np.array(2.0), 2.0, what="0-d").holds
    assert Check.at_most([1.0 + 0.0], [1.0], what="real").holds and not Check.at_most([math.nan], 1, what="n").holds
    assert Check.equal(0, 0, what="zero").holds and Check.equal("a", "a", what="s").holds
    assert not Check.equal([math.nan, 1.0], [2.0, 1.0], what="a NaN that makes it fail").holds
    assert Check.statistical(5.0, 1.0, 0.0, what="m", test="t", n=np.int64(3)).holds
    assert Check.statistical(5.0, 1.0, 0.0, what="m", test="t", n=3.0).holds
    assert Check.close([1.0], [1.5], rtol=0.5, atol=0, what="finite tolerances").holds
    import sympy

    x = sympy.Symbol("x")
    assert Check.equal(sympy.simplify(x - x), 0, what="sympy").holds
    assert Check.at_most([sympy.Rational(1, 2)], 1, what="sympy numbers").holds


def test_each_verdict_is_glued_as_its_plain_word_and_as_its_label(monkeypatch):
    """Prose uses ``verdict_<id>`` mid-sentence (the plain word); ``verdict_<id>_label`` says what it was checked
    against ("confirmed, as the abstract states it")."""
    import myst_nb

    from resnet_theory.ledger import verdict_label_key

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda name, value, display=True: glued.__setitem__(name, str(value)))
    ledger = Ledger("linear")
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    ledger.claim("bartlett-helmbold-long/a", paper="bartlett-helmbold-long", ref="abstract", statement="A.",
                 section="linear-a", printed=ok, control=bad, control_input=CI, source="abstract")  # fmt: skip
    ledger.glue()
    assert verdict_label_key("bartlett-helmbold-long/a") == "verdict_bartlett_helmbold_long_a_label"
    assert glued["verdict_bartlett_helmbold_long_a"] == "confirmed"
    assert glued["verdict_bartlett_helmbold_long_a_label"] == "confirmed, as the abstract states it"


def test_the_chapter_summary_counts_the_books_own_questions_apart():
    ledger = _ledger()
    bad = Check.equal(1, 2, what="fails")
    ledger.claim("hardt-ma/q", paper="hardt-ma", ref="Section 4", statement="Q.", section="linear-q", printed=bad,
                 control=bad, control_input=CI, source="question")  # fmt: skip
    assert ledger.summary_sentence() == (
        "4 claims: 1 confirmed, 1 corrected, 1 refuted, 1 not checkable here; "
        "and 1 finding of the book's own question: refuted"
    )


# --- issue 31: controls with power ------------------------------------------------------------------------------
def _claim_with_control(ledger, control, printed=None):
    return ledger.claim(
        "a",
        paper="shamir",
        ref="r",
        statement="s",
        section="x-a",
        printed=printed or Check.statistical(0.95, 0.01, 0.90, what="acc", test="mean", n=10),
        control_input=CI,
        control=control,
    )


def test_a_statistical_control_inside_its_noise_is_refused():
    # "fails" at -1.54 standard errors: it would fail on any input, so it shows nothing about the check
    weak = Check.statistical(-0.0154, 0.01, 0.0, what="control: fixed head fits better", test="mean", n=10)
    assert not weak.holds and not weak.decisive
    with pytest.raises(ValueError, match=r"must decide against the claim.*-1\.54 standard errors"):
        _claim_with_control(Ledger("x"), weak)
    with pytest.raises(ValueError, match="must decide"):  # one weak control among decisive ones is refused too
        _claim_with_control(Ledger("x"), [NO, weak])
    # a hand-built check that calls itself decisive at -1.5 standard errors is refused by its margin
    forged = Check(False, "forged", {"margin_standard_errors": -1.5}, True)
    with pytest.raises(ValueError, match="within 2 of its threshold"):
        _claim_with_control(Ledger("x"), forged)


def test_a_decisive_statistical_control_is_accepted():
    strong = Check.statistical(-0.05, 0.01, 0.0, what="control", test="mean", n=10)
    claim = _claim_with_control(Ledger("x"), strong)
    assert claim.verdict == "confirmed" and claim.control["decisive"] and claim.control["usable"]
    assert not Ledger("x").defects()


def test_a_claim_without_a_usable_control_is_undecided_with_the_reason():
    weak = Check.statistical(-0.0154, 0.01, 0.0, what="control", test="mean", n=10)
    ledger = Ledger("x")
    claim = _claim_with_control(ledger, NoUsableControl(weak))
    assert claim.verdict == "undecided" and claim.reason.startswith("no usable negative control")
    assert "-1.54 standard errors" in claim.reason and claim.control["usable"] is False
    assert ledger.defects() == []  # recorded as it is: undecided, nothing to hide
    with pytest.raises(ValueError, match="the control decides"):
        NoUsableControl(Check.statistical(-0.05, 0.01, 0.0, what="c", test="mean", n=10))
    assert NoUsableControl.unless_decisive(weak) == NoUsableControl(weak)


def test_a_recorded_control_that_does_not_decide_is_not_published():
    ledger = Ledger("x")
    claim = _claim_with_control(ledger, Check.statistical(-0.05, 0.01, 0.0, what="c", test="mean", n=10))
    forged = dataclasses.replace(claim, control={**claim.control, "decisive": False})
    assert any("does not decide" in d for d in claim_defects([forged]))
    # and a verdict other than undecided does not follow from an unusable control
    unusable = dataclasses.replace(claim, control={**claim.control, "usable": False})
    assert any("does not follow from its evidence" in d for d in claim_defects([unusable]))


def test_a_printed_figure_is_compared_at_its_printed_precision():
    # 13.59 million carries four significant digits: 13,546,816 is 13.55M there, 0.32% off, and fails
    off = Check.at_printed_precision(13_546_816, 13.59e6, digits=4, what="count")
    assert not off.holds and "differs by -43,184 (-0.32%)" in off.summary
    assert Check.at_printed_precision(13_589_248, 13.59e6, digits=4, what="count").holds
    with pytest.raises(ValueError, match="at most 4 significant digits"):
        Check.at_printed_precision(1, 13.591e6, digits=4, what="count")
    with pytest.raises(ValueError, match="digits must be a positive int"):
        Check.at_printed_precision(1, 13.59e6, digits=0, what="count")
    assert not Check.at_printed_precision(math.nan, 13.59e6, digits=4, what="count").holds


def test_text_glues_without_quotes():
    """``ledger.Text``: the one string type chapters glue words with (issue 31); its repr is the text itself."""
    from resnet_theory.ledger import Text

    assert repr(Text("above 12")) == "above 12" and Text("a") == "a" and isinstance(Text("a"), str)


def test_check_equal_writes_large_whole_numbers_with_thousands_separators():
    assert Check.equal(13_546_816, 13_546_816, what="count").summary == "count: 13,546,816 $=$ 13,546,816"
    assert Check.equal(np.int64(20_000), 19_999, what="n").summary == r"n: 20,000 $\ne$ 19,999"
    assert Check.equal(2024 - 24, 2000, what="small").summary == "small: 2000 $=$ 2000"  # four digits stay whole
    assert Check.equal(True, True, what="flag").summary == "flag: True $=$ True"  # a bool is not a number here
    assert Check.equal(13_546_816, 13_546_816, what="count").numbers == {"actual": "13546816", "expected": "13546816"}


def test_a_long_formula_is_also_cut_after_its_binary_operators():
    """The ledger's "stated in" column ran 11 px past the claims table at 1400 px on "(Id + B_q) ... (Id + B_1)",
    and an evidence table 30 px past its cell on a product of five factors (issue 33 review): a piece with more
    than ``LONG_PIECE`` shown characters is cut after each ``+`` and ``-`` between operands outside groups too,
    keeping the operator's spacing; short pieces, signs and superscripts stay whole."""
    from resnet_theory.ledger_html import math_pieces

    assert math_pieces(r"U = (\mathrm{Id} + B_q) \cdots (\mathrm{Id} + B_1)") == [
        "U =",
        r"(\mathrm{Id} +{}",
        r"B_q) \cdots (\mathrm{Id} +{}",
        "B_1)",
    ]
    assert math_pieces(r"2\prod_{j \ne i} \sigma_{\min}(I + A_j) \sigma_{\min}(\Sigma) \|E\|_F") == [
        r"2\prod_{j \ne i} \sigma_{\min}(I +{}",
        r"A_j) \sigma_{\min}(\Sigma) \|E\|_F",
    ]
    for short in (r"\mathrm{Id} - S W S^{-1}", r"e^{\gamma/\ell} - 1", r"x^{-1} - 10^-6 + (-1)", r"a \pm b"):
        assert math_pieces(short) == [short]
    assert math_pieces(r"\left( a + b + c + d + e + f + g + h \right)") == [
        r"\left( a + b + c + d + e + f + g + h \right)"
    ]


def test_a_check_of_one_value_reads_as_one_comparison_not_a_count_of_cases():
    """One value against one bound reads "value <= bound? yes" (with value/bound where the bound is not 1), one
    condition "holds" or "fails": "0 of 1 cases violate value <= bound; tightest case ..." was a count of one."""
    assert Check.at_most(0.5, 1.0, what="r").summary == r"r: 0.5 $\le$ 1? yes"
    assert Check.at_least(0.25, 0.5, what="r").summary == r"r: 0.25 $\ge$ 0.5? no (value/bound 0.5)"
    assert Check.at_most([3.0], 2.0, what="r", rtol=0.6).summary.startswith(
        r"r: 3 $\le$ 2? yes (value/bound 1.5); slack"
    )
    assert (
        Check.all_of([True], what="c").summary == "c: holds" and Check.all_of([False], what="c").summary == "c: fails"
    )
    many = Check.at_most([0.5, 2.0], 1.0, what="r")
    assert many.summary.startswith(r"r: 1 of 2 cases violate value $\le$ bound; tightest case 2 vs 1")
    assert Check.all_of([True, False], what="c").summary == "c: 1 of 2 cases hold"


# --- several proof steps ---------------------------------------------------------------------------------------------
def _one_step_claim(ledger, **more):
    """Claim 2.3 with one proof step and its repair; ``more`` adds arguments (a step's key)."""
    return ledger.claim(
        "hardt-ma/claim-2.3",
        paper="hardt-ma",
        ref="Claim 2.3",
        statement="the loss is the weighted norm",
        section="linear-e",
        printed=Check.at_most([0.5], 1.0, what="loss identity"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="noise that depends on the input"),
        proof_step=Check.at_most([1.1], 1.0, what="the constant is a number"),
        proof_step_statement="the constant C is a number",
        repair=Check.at_most([0.9], 1.0, what="C depends on the noise"),
        repair_statement="C is the noise's second moment",
        **more,
    )


def _two_step_claim(ledger, first: Check, second: Check, *, repairs=None, id="hardt-ma/thm-3.2"):
    ok = Check.at_most([0.5], 1.0, what="repair holds")
    return ledger.claim(
        id,
        paper="hardt-ma",
        ref="Theorem 3.2",
        statement="the networks fit",
        section="expressivity-a",
        printed=Check.at_most([0.5], 1.0, what="fit error"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="twin point"),
        proof_step=[first, second],
        proof_step_statement=["the projection keeps every distance", "the chain gives Lemma B.2's conditions"],
        repair=list(repairs or (ok, ok)),
        repair_statement=["widen the projection", "keep squared lengths"],
    )


def test_several_proof_steps_one_failing_make_a_proof_gap_and_each_is_recorded_with_its_own_check():
    from resnet_theory.verdicts import recorded_step_count, step_keys, undecided_reason, verdict_from_evidence

    ok, bad = Check.equal(1, 1, what="ok"), Check.equal(1, 2, what="bad")
    assert step_keys(1) == ("proof_step", "repair") and step_keys(2) == ("proof_step_2", "repair_2")
    assert derive_verdict(ok, proof_step=[ok, bad]) == derive_verdict(ok, proof_step=(bad, ok)) == "proof-gap"
    assert derive_verdict(ok, proof_step=[ok, ok]) == "confirmed"
    assert derive_verdict(bad, ok, proof_step=[bad, bad]) == "corrected"  # a counterexample to the statement wins
    noisy = Check.statistical(0.51, 0.05, 0.5, what="rate", test="binomial", n=100, above=False)  # fails, +0.2 se
    assert not noisy.holds and not noisy.decisive
    assert derive_verdict(ok, proof_step=[bad, noisy]) == "undecided"  # a failing step within its noise decides
    assert "proof step 2" in undecided_reason(ok, None, [bad, noisy])
    claim = _two_step_claim(Ledger("expressivity"), ok, bad)
    assert claim.verdict == "proof-gap" and claim.reason is None
    assert list(claim.evidence) == ["printed", "proof_step", "repair", "proof_step_2", "repair_2"]
    assert claim.evidence["proof_step"]["holds"] and not claim.evidence["proof_step_2"]["holds"]  # holds: recorded so
    assert claim.proof_step == "the projection keeps every distance" and claim.repair == "widen the projection"
    assert claim.further_proof_steps == [
        {"step": "the chain gives Lemma B.2's conditions", "repair": "keep squared lengths"}
    ]
    assert "| proof step 1: " in claim.check and "| repair 2: " in claim.check
    assert [s.number for s in claim.failing_steps] == [2] and recorded_step_count(claim.evidence) == 2
    assert verdict_from_evidence(claim.evidence, claim.control) == "proof-gap" and not claim_defects([claim])
    assert "Lemma B.2's conditions" in claim.erratum and "projection keeps" not in claim.erratum
    both = _two_step_claim(Ledger("expressivity"), bad, bad)
    assert both.verdict == "proof-gap" and [s.number for s in both.failing_steps] == [1, 2]
    assert "2 of the proof's steps fail" in both.erratum and "keep squared lengths" in both.erratum
    assert _two_step_claim(Ledger("expressivity"), ok, ok).verdict == "confirmed"
    undecided = _two_step_claim(Ledger("expressivity"), ok, noisy)
    assert undecided.verdict == "undecided" and "the check of proof step 2 is within its noise" in undecided.reason
    with pytest.raises(ValueError, match="the repair of the failing proof step 2 does not hold"):
        _two_step_claim(Ledger("expressivity"), ok, bad, repairs=(Check.at_most([0.5], 1.0, what="r"), bad))
    with pytest.raises(ValueError, match="1 repair check"):  # one repair for two steps
        Ledger("expressivity").claim(
            "hardt-ma/x", paper="hardt-ma", ref="r", statement="s", section="expressivity-a", printed=ok,
            control_input=CI, control=Check.at_most([0.5], 0.4, what="c"), proof_step=[ok, bad],
            proof_step_statement=["a step", "another step"], repair=[ok], repair_statement=["a repair", "another"],
        )  # fmt: skip


def test_a_claim_with_several_steps_round_trips_and_a_one_step_record_is_written_as_before(tmp_path):
    from resnet_theory.record import claim_from_dict

    ok, bad = Check.equal(1, 1, what="ok"), Check.equal(1, 2, what="bad")
    ledger = _ledger()
    two = _two_step_claim(ledger, ok, bad)
    _one_step_claim(ledger)
    path = ledger.save(tmp_path / "linear.claims.json")
    data = json.loads(path.read_text())
    records = {r["id"]: r for r in data["claims"]}
    assert all("further_proof_steps" not in r for i, r in records.items() if i != two.id)  # one step or none: as before
    assert records[two.id]["further_proof_steps"] == two.further_proof_steps
    loaded = {c.id: c for c in load_claims(tmp_path)}
    assert loaded[two.id] == two and loaded[two.id].proof_steps == two.proof_steps
    gap = loaded["hardt-ma/claim-2.3"]  # a one-step record: read as one written before several could be declared
    old = {k: v for k, v in dataclasses.asdict(gap).items() if k != "further_proof_steps"}
    assert claim_from_dict(old) == gap and [s.number for s in gap.proof_steps] == [1]
    record = records[two.id]
    for bad_steps, words in (
        ([], "non-empty list"),
        ([{"step": "a step"}], "non-empty list"),
        ([{"step": "a step", "repair": 3}], "non-empty list"),
        ("step two", "further_proof_steps must be list or null"),
    ):
        with pytest.raises(ValueError, match=words):
            claim_from_dict({**record, "further_proof_steps": bad_steps})
    # wording and evidence must agree: a step worded but not checked (or checked but not worded) is a defect
    unworded = claim_from_dict({**record, "further_proof_steps": None})
    assert any("1 proof step(s) worded but 2 checked" in d for d in claim_defects([unworded]))
    extra = [*record["further_proof_steps"], {"step": "a third step", "repair": "a third repair"}]
    assert any(
        "3 proof step(s) worded but 2 checked" in d
        for d in claim_defects([claim_from_dict({**record, "further_proof_steps": extra})])
    )
    stray = {**record["evidence"], "repair_3": record["evidence"]["repair"]}
    assert any("out of order" in d for d in claim_defects([claim_from_dict({**record, "evidence": stray})]))
    unsafe = [{"step": r"a step $\href{x}{y}$", "repair": "a repair"}]
    assert any(
        "further_proof_steps (step 2).step uses \\href" in d
        for d in claim_defects([claim_from_dict({**record, "further_proof_steps": unsafe})])
    )


def test_the_card_and_the_errata_show_every_step_with_its_own_check_and_repair():
    from resnet_theory.ledger_html import evidence_part_name, evidence_table_html

    ok, bad = Check.equal(1, 1, what="ok"), Check.at_most([2.0], 1.0, what="chain at the witness")
    ledger = _ledger()
    two = _two_step_claim(ledger, bad, bad)
    row = claims_table_html([two], link=True)  # the claim's row of the ledger, its card inside
    assert 'id="claim-hardt-ma-thm-3-2"' in row
    for words in ("Proof step 1 that fails", "Repair of step 1", "Proof step 2 that fails", "Repair of step 2"):
        assert f"<dt>{words}</dt>" in row, words
    assert "the projection keeps every distance" in row and "keep squared lengths" in row
    table = evidence_table_html(two)
    names = re.findall(r"<tr><th>([^<]*)</th><td>", table)
    assert names == [
        "statement as printed", "proof step 1 as printed", "repair of step 1", "proof step 2 as printed",
        "repair of step 2", "control",
    ]  # fmt: skip
    assert evidence_part_name(two, "repair_2") == "repair of step 2"
    errata = errata_html(ledger.claims, link=False)
    sentence = errata.split("hardt-ma/thm-3.2", 1)[0].rsplit("<li>", 1)[1]
    assert "2 steps of the printed proof fail as written" in sentence
    assert sentence.count("chain at the witness") == 2 and "widen the projection" in sentence
    assert "keep squared lengths" in sentence
    # a step that holds is shown as holding; the gap names only the failing one
    one = _two_step_claim(Ledger("expressivity"), ok, bad)
    card = claims_table_html([one], link=False)
    assert "<dt>Proof step 1, holds as printed</dt>" in card and "<dt>Proof step 2 that fails</dt>" in card
    errata = errata_html([one], link=False)
    assert "the printed proof&#x27;s step" in errata and "Lemma B.2" in errata
    assert "projection keeps" not in errata
    # a claim with one step keeps its rows' names
    lone = _one_step_claim(ledger)
    lone_card = claims_table_html([lone], link=False)
    assert "<dt>Proof step that fails</dt>" in lone_card and "<dt>Repair</dt>" in lone_card
    assert "step 1" not in lone_card and evidence_part_name(lone, "proof_step") == "proof step as printed"


# --- where each proof step is printed ---------------------------------------------------------------------------------
WHERE_1 = r"Appendix A.1, proof of Theorem 2.1: $B_1 = \dots = B_q$"
WHERE_2 = "Appendix B, proof of Theorem 3.2: the chain after the projection"


def _located_claim(ledger, first: Check, second: Check, wheres=(WHERE_1, WHERE_2), keys=None):
    """Theorem 3.2's two proof steps, each placed in the printed proof (``wheres``, None: no place) and keyed
    (``keys``, None: no key)."""
    ok = Check.at_most([0.5], 1.0, what="repair holds")
    return ledger.claim(
        "hardt-ma/thm-3.2",
        paper="hardt-ma",
        ref="Theorem 3.2",
        statement="the networks fit",
        section="expressivity-a",
        printed=Check.at_most([0.5], 1.0, what="fit error"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="twin point"),
        proof_step=[first, second],
        proof_step_statement=["the projection keeps every distance", "the chain gives Lemma B.2's conditions"],
        repair=[ok, ok],
        repair_statement=["widen the projection", "keep squared lengths"],
        proof_step_where=None if wheres is None else list(wheres),
        proof_step_key=None if keys is None else list(keys),
    )


def test_a_proof_steps_printed_place_is_recorded_and_a_record_without_one_is_written_as_before(tmp_path):
    from resnet_theory.record import claim_from_dict, claim_to_dict

    ok, bad = Check.equal(1, 1, what="ok"), Check.equal(1, 2, what="bad")
    ledger = _ledger()
    located = _located_claim(ledger, bad, bad)
    assert located.proof_step_where == WHERE_1
    assert located.further_proof_steps == [
        {"step": "the chain gives Lemma B.2's conditions", "repair": "keep squared lengths", "where": WHERE_2}
    ]
    assert [s.where for s in located.proof_steps] == [WHERE_1, WHERE_2]
    half = _located_claim(Ledger("expressivity"), ok, bad, wheres=("", WHERE_2))  # only step 2 names its place
    assert half.proof_step_where is None and half.further_proof_steps[0]["where"] == WHERE_2
    assert "proof_step_where" not in claim_to_dict(half)
    lone, two = _one_step_claim(ledger), _two_step_claim(Ledger("expressivity"), ok, bad)
    for unplaced in (lone, two):  # a claim whose steps name no place: its record is written as before
        assert "proof_step_where" not in claim_to_dict(unplaced) and unplaced.proof_step_where is None
        assert all("where" not in d for d in unplaced.further_proof_steps or [])
        assert all(s.where == "" for s in unplaced.proof_steps)
    path = ledger.save(tmp_path / "linear.claims.json")
    records = {r["id"]: r for r in json.loads(path.read_text())["claims"]}
    assert records[located.id]["proof_step_where"] == WHERE_1 and "proof_step_where" not in records[lone.id]
    loaded = {c.id: c for c in load_claims(tmp_path)}
    assert loaded[located.id] == located and loaded[located.id].proof_steps == located.proof_steps
    record = records[located.id]
    for bad_record, words in (
        ({**record, "proof_step_where": 3}, "proof_step_where must be str or null"),
        ({**record, "proof_step_where": "  "}, "the first proof_step's printed place"),
        ({**record, "proof_step": None, "further_proof_steps": None}, "the first proof_step's printed place"),
        ({**record, "further_proof_steps": [{**record["further_proof_steps"][0], "where": ""}]}, "'where': text"),
        ({**record, "further_proof_steps": [{**record["further_proof_steps"][0], "at": "x"}]}, "'where': text"),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            claim_from_dict(bad_record)
    unsafe = {**record, "proof_step_where": r"Appendix $\href{x}{y}$"}
    assert any("proof_step_where uses \\href" in d for d in claim_defects([claim_from_dict(unsafe)]))
    unsafe_2 = {**record, "further_proof_steps": [{**record["further_proof_steps"][0], "where": r"$\href{x}{y}$"}]}
    assert any(
        "further_proof_steps (step 2).where uses \\href" in d for d in claim_defects([claim_from_dict(unsafe_2)])
    )
    for wheres, words in (((WHERE_1,), "one text per step"), ((WHERE_1, 3), "one text per step"), (("", " "), "blank")):
        with pytest.raises(ValueError, match=words):
            _located_claim(Ledger("expressivity"), ok, bad, wheres=wheres)


def test_the_card_and_the_errata_say_where_each_step_is_printed():
    ok, bad = Check.equal(1, 1, what="ok"), Check.at_most([2.0], 1.0, what="chain at the witness")
    both = _located_claim(Ledger("expressivity"), bad, bad)
    card = claims_table_html([both], link=False)
    names = re.findall(r"<dt>([^<]*)</dt>", card)
    at = names.index("Proof step 2 that fails")
    assert names[at : at + 3] == ["Proof step 2 that fails", "Where step 2 is printed", "Repair of step 2"]
    assert "Where step 1 is printed" in names and "the chain after the projection" in card
    assert text_html(WHERE_1) in card and r"\(B_q\)" in card  # the place's math typeset, as a ref's is
    errata = errata_html([both], link=False)
    assert f"step 1 (printed at {text_html(WHERE_1)})" in errata
    assert "step 2 (printed at Appendix B, proof of Theorem 3.2: the chain after the projection)" in errata
    assert "(printed at Appendix B, proof of Theorem 3.2: the chain after the projection)" in both.erratum
    one = _located_claim(Ledger("expressivity"), ok, bad)  # one failing step: the erratum names its place
    errata = errata_html([one], link=False)
    assert "the printed proof&#x27;s step (printed at Appendix B, proof of Theorem 3.2: the chain" in errata
    assert "Appendix A.1" not in errata  # the holding step is not the erratum's
    assert "the proof's step (printed at Appendix B, proof of Theorem 3.2:" in one.erratum
    assert "Where step 1 is printed" in claims_table_html([one], link=False)  # the card shows every step's place
    unplaced = _two_step_claim(Ledger("expressivity"), ok, bad)
    assert "printed" not in re.sub(r"as printed|printed proof", "", errata_html([unplaced], link=False))
    assert "is printed</dt>" not in claims_table_html([unplaced], link=False)
    assert "printed at" not in unplaced.erratum


# --- each proof step's key --------------------------------------------------------------------------------------------
KEYS = ("projection", "conditions")


def _keyed_claim(ledger, first: Check, second: Check, keys=KEYS, wheres=None):
    return _located_claim(ledger, first, second, wheres=wheres, keys=keys)


def test_a_proof_steps_key_is_recorded_and_a_record_without_one_loads_as_before(tmp_path):
    from resnet_theory.record import claim_from_dict, claim_to_dict

    ok, bad = Check.equal(1, 1, what="ok"), Check.equal(1, 2, what="bad")
    ledger = _ledger()
    keyed = _keyed_claim(ledger, bad, bad, wheres=(WHERE_1, ""))
    assert keyed.proof_step_key == "projection" and keyed.proof_step_where == WHERE_1
    assert keyed.further_proof_steps == [
        {"step": "the chain gives Lemma B.2's conditions", "repair": "keep squared lengths", "key": "conditions"}
    ]
    assert [(s.number, s.key) for s in keyed.proof_steps] == [(1, "projection"), (2, "conditions")]
    half = _keyed_claim(Ledger("expressivity"), ok, bad, keys=("", "conditions"))  # only step 2 has a key
    assert half.proof_step_key is None and "proof_step_key" not in claim_to_dict(half)
    assert [s.key for s in half.proof_steps] == ["", "conditions"]
    lone = _one_step_claim(Ledger("linear"), proof_step_key="constant")  # one step, keyed: step 1's
    assert lone.proof_step_key == "constant" and lone.further_proof_steps is None
    assert [s.key for s in lone.proof_steps] == ["constant"]
    for unkeyed in (_one_step_claim(Ledger("linear")), _two_step_claim(Ledger("expressivity"), ok, bad)):
        record = claim_to_dict(unkeyed)  # a claim whose steps have no key: its record is written as before
        assert "proof_step_key" not in record and all("key" not in d for d in record.get("further_proof_steps") or [])
        assert all(s.key == "" for s in unkeyed.proof_steps)
    path = ledger.save(tmp_path / "linear.claims.json")
    records = {r["id"]: r for r in json.loads(path.read_text())["claims"]}
    record = records[keyed.id]
    assert record["proof_step_key"] == "projection" and record["further_proof_steps"][0]["key"] == "conditions"
    assert all("proof_step_key" not in r for i, r in records.items() if i != keyed.id)
    loaded = {c.id: c for c in load_claims(tmp_path)}
    assert loaded[keyed.id] == keyed and loaded[keyed.id].proof_steps == keyed.proof_steps
    older = {k: v for k, v in record.items() if k != "proof_step_key"}  # as written before records carried keys
    older["further_proof_steps"] = [{k: v for k, v in d.items() if k != "key"} for d in record["further_proof_steps"]]
    old = claim_from_dict(older)
    assert [s.key for s in old.proof_steps] == ["", ""] and not claim_defects([old])
    assert claim_to_dict(old) == older  # and it is written back unchanged
    further = record["further_proof_steps"][0]
    for bad_record, words in (
        ({**record, "proof_step_key": 3}, "proof_step_key must be str or null"),
        ({**record, "proof_step_key": "Projection"}, "the key of proof step 1 must be a short name in lower case"),
        ({**record, "proof_step_key": "a b"}, "got 'a b'"),
        ({**record, "proof_step_key": ""}, "proof_step_key must be the first proof_step's key"),
        ({**record, "proof_step": None, "further_proof_steps": None, "proof_step_where": None}, "first proof_step"),
        ({**record, "further_proof_steps": [{**further, "key": "<b>"}]}, "the key of proof step 2 must be"),
        ({**record, "further_proof_steps": [{**further, "key": ""}]}, "'key': the step's key"),
        ({**record, "further_proof_steps": [{**further, "key": "projection"}]}, "'projection' given to two steps"),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            claim_from_dict(bad_record)
    for keys, words in (
        (("projection",), "one text per step"),
        (("projection", 3), "one text per step"),
        (("projection", "Conditions"), "the key of proof step 2 must be a short name"),
        (("same", "same"), "proof_step_key: proof step key(s) 'same' given to two steps"),
    ):
        with pytest.raises(ValueError, match=re.escape(words)):
            _keyed_claim(Ledger("expressivity"), ok, bad, keys=keys)


def test_the_card_and_the_errata_name_each_step_by_its_key():
    import dataclasses

    from resnet_theory.ledger_html import evidence_part_name

    ok, bad = Check.equal(1, 1, what="ok"), Check.at_most([2.0], 1.0, what="chain at the witness")
    both = _keyed_claim(Ledger("expressivity"), bad, bad, wheres=(WHERE_1, ""))
    card = claims_table_html([both], link=False)
    names = re.findall(r"<dt>([^<]*)</dt>", card)
    at = names.index("Proof step 1 (projection) that fails")
    assert names[at : at + 3] == ["Proof step 1 (projection) that fails", "Where step 1 is printed", "Repair of step 1"]
    at = names.index("Proof step 2 (conditions) that fails")
    assert names[at : at + 2] == ["Proof step 2 (conditions) that fails", "Repair of step 2"]
    errata = errata_html([both], link=False)
    assert f"step 1 (projection; printed at {text_html(WHERE_1)}) \u201c" in errata  # key first, then the place
    assert "step 2 (conditions) \u201cthe chain gives Lemma B.2&#x27;s conditions\u201d" in errata
    assert (
        "step 1 (projection; printed at Appendix A.1" in both.erratum and "step 2 (conditions) \u201c" in both.erratum
    )
    one = _keyed_claim(Ledger("expressivity"), ok, bad)  # one failing step: the erratum names it by its key
    assert "the printed proof&#x27;s step (conditions) \u201c" in errata_html([one], link=False)
    assert "the proof's step (conditions) \u201c" in one.erratum and "projection)" not in one.erratum
    assert "<dt>Proof step 1 (projection), holds as printed</dt>" in claims_table_html([one], link=False)
    lone = _one_step_claim(Ledger("linear"), proof_step_key="constant")
    assert "<dt>Proof step (constant) that fails</dt>" in claims_table_html([lone], link=False)
    assert "step (constant) \u201c" in errata_html([lone], link=False)
    # the evidence table keeps its names; claims verify names the step's check with its key
    assert evidence_part_name(both, "proof_step_2") == "proof step 2 as printed"
    assert evidence_part_name(both, "proof_step_2", with_step_key=True) == "proof step 2 (conditions) as printed"
    assert evidence_part_name(both, "repair_2", with_step_key=True) == "repair of step 2"
    assert evidence_part_name(lone, "proof_step", with_step_key=True) == "proof step (constant) as printed"
    unkeyed = _two_step_claim(Ledger("expressivity"), ok, bad)
    assert evidence_part_name(unkeyed, "proof_step_2", with_step_key=True) == "proof step 2 as printed"
    assert "(conditions)" not in errata_html([unkeyed], link=False) + claims_table_html([unkeyed], link=False)
    # a key is a slug where it is recorded or loaded, but the card and the errata escape it all the same
    hostile = dataclasses.replace(both, proof_step_key='<img src=x onerror="alert(1)">')
    page = claims_table_html([hostile], link=False) + errata_html([hostile], link=False)
    assert "<img" not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
