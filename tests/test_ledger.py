"""The claims ledger: verdicts follow from computed checks; JSON round trip; aggregation."""

import json
import math

import numpy as np
import pytest

from resnet_theory.ledger import (VERDICTS, Check, Ledger, claims_table_html, derive_verdict, load_claims,
                                  render_ledger, verdict_counts)


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


def _ledger():
    ledger = Ledger("linear")
    ledger.claim("hardt-ma/thm-2.1", paper="hardt-ma", ref="Theorem 2.1", statement="s1", section="linear-a",
                 printed=Check.at_most([0.5], 1.0, what="norm"))
    ledger.claim("hardt-ma/eq-2.3", paper="hardt-ma", ref="(2.3)", statement="s2", section="linear-b",
                 printed=Check.at_least([1.0], 2.0, what="printed"),
                 corrected=Check.at_least([1.0], 1.0, what="corrected"), corrected_statement="fixed")
    ledger.claim("shamir/thm-1", paper="shamir", ref="Theorem 1", statement="s3", section="linear-c",
                 printed=Check.equal(0, 1, what="refuted"))
    ledger.not_checkable("hardt-ma/cifar", paper="hardt-ma", ref="Table 1", statement="s4", section="linear-d",
                         reason="needs CIFAR-10 and a GPU")
    return ledger


def test_ledger_records_derived_verdicts():
    ledger = _ledger()
    assert [c.verdict for c in ledger.claims] == ["confirmed", "corrected", "refuted", "not-checkable-here"]


def test_ledger_rejects_hand_written_verdicts_and_bad_input():
    ledger = Ledger("x")
    with pytest.raises(TypeError):
        ledger.claim("a", paper="shamir", ref="r", statement="s", section="x-a", printed=True)
    with pytest.raises(TypeError):
        ledger.claim("a", paper="shamir", ref="r", statement="s", section="x-a", printed="confirmed")
    with pytest.raises(ValueError, match="unknown paper"):
        ledger.claim("a", paper="nobody", ref="r", statement="s", section="x-a", printed=Check.equal(1, 1, what="w"))
    with pytest.raises(ValueError, match="corrected statement"):
        ledger.claim("a", paper="shamir", ref="r", statement="s", section="x-a", printed=Check.equal(1, 2, what="w"),
                     corrected=Check.equal(1, 1, what="w"))
    with pytest.raises(ValueError, match="reason"):
        ledger.not_checkable("b", paper="shamir", ref="r", statement="s", section="x-b", reason="")
    ledger.claim("a", paper="shamir", ref="r", statement="s", section="x-a", printed=Check.equal(1, 1, what="w"))
    with pytest.raises(ValueError, match="twice"):
        ledger.claim("a", paper="shamir", ref="r", statement="s", section="x-a", printed=Check.equal(1, 1, what="w"))


def test_json_round_trip_and_aggregation(tmp_path, monkeypatch):
    ledger = _ledger()
    monkeypatch.setenv("RESNET_THEORY_CLAIMS_FILE", str(tmp_path / "executed" / "book" / "linear.claims.json"))
    ledger.show()
    other = Ledger("linear_predictors")
    other.claim("shamir/ex-1", paper="shamir", ref="Example 1", statement="s", section="shamir-ex",
                printed=Check.close([0.5], [0.5], what="F"))
    other.save(tmp_path / "executed" / "book" / "linear_predictors.claims.json")
    loaded = load_claims(tmp_path / "executed")
    assert {c.id for c in loaded} == {c.id for c in ledger.claims} | {"shamir/ex-1"}
    by_id = {c.id: c for c in loaded}
    assert by_id["hardt-ma/eq-2.3"].verdict == "corrected"
    assert by_id["hardt-ma/eq-2.3"].corrected_statement == "fixed"
    json.loads((tmp_path / "executed" / "book" / "linear.claims.json").read_text())  # valid JSON
    counts = verdict_counts(loaded)
    assert counts["total"] == {"confirmed": 2, "corrected": 1, "refuted": 1, "not-checkable-here": 1}
    assert counts["Shamir (2018)"]["refuted"] == 1 and counts["Shamir (2018)"]["confirmed"] == 1
    assert set(counts["total"]) == set(VERDICTS)


def test_load_claims_rejects_unknown_verdict(tmp_path):
    bad = {"chapter": "x", "claims": [{"id": "a", "paper": "shamir", "ref": "r", "statement": "s", "chapter": "x",
                                       "section": "x-a", "verdict": "probably", "check": "", "evidence": {}}]}
    (tmp_path / "x.claims.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="unknown verdict"):
        load_claims(tmp_path)


def test_rendered_ledger_links_to_sections():
    ledger = _ledger()
    html = claims_table_html(ledger.claims, link=True)
    assert 'href="linear.html#linear-b"' in html
    assert "needs CIFAR-10 and a GPU" in html
    page = render_ledger(ledger.claims).data
    assert "claims-counts" in page and "claims-ledger" in page
    assert "No claims" in render_ledger([]).data
