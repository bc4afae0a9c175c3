"""Comparing the claims ledgers of several builds (seed stability of verdicts and claim ids)."""

import pytest

from resnet_theory.book.verdict_diff import compare_builds, compare_claims, main
from resnet_theory.ledger import Ledger
from resnet_theory.verdicts import Check


def ledger(chapter: str, values: dict[str, float], bound: float = 1.0) -> Ledger:
    """One claim per entry: ``value <= bound``, with the control ``value <= value / 10``."""
    led = Ledger(chapter)
    for cid, value in values.items():
        led.claim(
            cid,
            paper="hardt-ma",
            ref="Theorem 2.1",
            statement="value at most the bound",
            section=f"{chapter}-sec",
            printed=Check.at_most([value], bound, what="value"),
            control_input="a value ten times over the bound, which the claim rules out",
            control=Check.at_most([value], value / 10, what="value, bound cut tenfold"),
        )
    return led


def build(tmp_path, name: str, chapters: dict[str, dict[str, float]]):
    folder = tmp_path / name / "executed" / "book"
    for chapter, values in chapters.items():
        ledger(chapter, values).save(folder / f"{chapter}.claims.json")
    return tmp_path / name


def test_identical_builds_agree(tmp_path, capsys):
    a = build(tmp_path, "a", {"linear": {"x": 0.5, "y": 0.9}, "smooth": {"z": 0.1}})
    b = build(tmp_path, "b", {"linear": {"x": 0.6, "y": 0.8}, "smooth": {"z": 0.2}})
    diff = compare_builds([a, b])
    assert diff.agree and not diff.changed and not diff.missing
    assert main([str(a), str(b)]) == 0
    assert "same verdicts: 3 confirmed" in capsys.readouterr().out


def test_a_changed_verdict_is_reported(tmp_path, capsys):
    a = build(tmp_path, "a", {"linear": {"x": 0.5, "y": 0.9}})
    b = build(tmp_path, "b", {"linear": {"x": 0.5, "y": 1.1}})  # y now breaks its bound: refuted
    diff = compare_builds([a, b])
    assert not diff.agree and diff.changed == {"y": ["confirmed", "refuted"]}
    assert main([str(a), str(b)]) == 1
    assert "VERDICT DIFFERS  y" in capsys.readouterr().out


def test_a_missing_or_renamed_claim_id_is_reported(tmp_path):
    a = build(tmp_path, "a", {"linear": {"x": 0.5, "y": 0.9}})
    b = build(tmp_path, "b", {"linear": {"x": 0.5, "y2": 0.9}})
    c = build(tmp_path, "c", {"linear": {"x": 0.5, "y": 0.9}})
    diff = compare_builds([a, b, c])
    assert not diff.agree
    assert diff.missing == {"y": [str(b)], "y2": [str(a), str(c)]}
    assert not diff.changed


def test_a_retired_id_missing_from_a_newer_build_says_where_it_moved(tmp_path):
    """A build from before a claim was merged into another (its id in resnet_theory.claims.registry.RETIRED) still
    differs from a newer one (the ids differ), and the report says which claim the old id moved into."""
    old = "hardt-ma/thm-3.2-proof-conditions"
    a = build(tmp_path, "a", {"expressivity": {"hardt-ma/thm-3.2": 0.5, old: 0.5}})
    b = build(tmp_path, "b", {"expressivity": {"hardt-ma/thm-3.2": 0.5}})
    diff = compare_builds([a, b])
    assert not diff.agree and diff.missing == {old: [str(b)]}
    line = next(x for x in diff.report().splitlines() if x.startswith("ID MISSING"))
    assert line.endswith("(a retired id: merged into hardt-ma/thm-3.2, its proof step 2, conditions)")
    assert "a retired id" not in compare_builds([build(tmp_path, "c", {"linear": {"x": 0.5}}), b]).report()


def test_a_control_that_holds_in_one_build_is_reported():
    good = ledger("linear", {"x": 0.5}).claims
    bad = ledger("linear", {"x": 0.0}).claims  # 0 <= 0 / 10: the control holds
    diff = compare_claims([good, bad], ["seed 0", "seed 1"])
    assert diff.controls_holding == {"x": ["seed 1"]} and not diff.agree


def test_bad_arguments_are_refused(tmp_path, capsys):
    a = build(tmp_path, "a", {"linear": {"x": 0.5}})
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(a), str(empty)]) == 2
    assert "no *.claims.json" in capsys.readouterr().err
    assert main([str(a), str(tmp_path / "nowhere")]) == 2
    with pytest.raises(SystemExit):
        main([str(a)])
    with pytest.raises(ValueError, match="at least two"):
        compare_claims([[]], ["only"])
    twice = ledger("linear", {"x": 0.5}).claims * 2
    with pytest.raises(ValueError, match="more than once"):
        compare_claims([twice, twice], ["a", "b"])


def test_two_claims_files_are_compared_directly(tmp_path, capsys):
    """The claims file ``run -o x.ipynb`` writes (``x.claims.json``) is compared as a build folder is."""
    seed0 = ledger("linear", {"x": 0.5, "y": 0.9}).save(tmp_path / "seed0.claims.json")
    seed3 = ledger("linear", {"x": 0.5, "y": 1.1}).save(tmp_path / "seed3.claims.json")
    same = ledger("linear", {"x": 0.4, "y": 0.8}).save(tmp_path / "same.claims.json")
    assert main([str(seed0), str(seed3)]) == 1
    assert "VERDICT DIFFERS  y: " + f"{seed0}=confirmed, {seed3}=refuted" in capsys.readouterr().out
    assert main([str(seed0), str(same)]) == 0
    assert "same verdicts: 2 confirmed" in capsys.readouterr().out
    # a claims file against a build folder
    folder = build(tmp_path, "b", {"linear": {"x": 0.5, "y": 1.1}})
    assert compare_builds([seed0, folder]).changed == {"y": ["confirmed", "refuted"]}
    # a file that is not a claims file, or one that is damaged, is refused in one line
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    assert main([str(seed0), str(other)]) == 2
    assert "is a file but not a claims file" in capsys.readouterr().err
    broken = tmp_path / "broken.claims.json"
    broken.write_text("{")
    assert main([str(seed0), str(broken)]) == 2
    assert "not a claims file (not JSON" in capsys.readouterr().err
