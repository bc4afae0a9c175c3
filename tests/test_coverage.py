"""The walk of Hardt & Ma (``resnet_theory.claims.coverage``, issue 31 item 5): its rows are well formed and in the
paper's order, they cover every heading of the printed text, every Hardt & Ma claim the registry declares has a
row, and every claim id or skip line a row names is declared, except those of the chapter whose claims have not
moved into a claims module yet."""

from __future__ import annotations

import pytest

from resnet_theory.claims import coverage
from resnet_theory.claims.coverage import NO_STATEMENT, ROWS, SECTIONS, Row
from resnet_theory.claims.registry import all_claims, chapter_claims

#: The headings of the printed ICLR text (../shared/papers/SOURCES.md), in order.
PRINTED_HEADINGS = ["1", "1.1", "1.2", "2", "3", "4", "4.1", "4.2", "5", "A", "A.1", "A.2", "B", "C"]

#: Rows whose claim ids and skip lines live in the experiments chapter (Section 4), not yet in a claims module.
PENDING_CHAPTER = "experiments"


def test_rows_are_in_the_papers_order():
    keys = [coverage.order_key(r.location) for r in ROWS]
    assert keys == sorted(keys)
    assert coverage.validate()["out of order"] == []


def test_validate_finds_rows_out_of_order():
    swapped = (ROWS[-1], *ROWS[1:-1], ROWS[0])
    assert coverage.validate(swapped)["out of order"] == [ROWS[1].location, ROWS[0].location]


def test_every_row_gives_exactly_one_of_claim_skip_finding_or_a_skip_line():
    for r in ROWS:
        under_line = bool(r.line) and r.line != NO_STATEMENT
        assert sum(bool(x) for x in (r.claim, r.skip, r.finding, under_line)) == 1, r.location
        assert not (r.claim and r.skip), r.location
        assert r.what.strip() and not r.what.endswith(" "), r.location
        assert r.line != NO_STATEMENT or r.skip, r.location


def test_rows_under_a_skip_line_read_its_reason_from_the_declaration():
    """Issue 31 item 5: the reason for not checking lives once, in the chapter's claims module."""
    reasons = coverage.skip_reasons()
    under = [r for r in ROWS if r.line and r.line != NO_STATEMENT]
    assert under and all(not r.skip for r in under)
    for r in under:
        assert r.status() == f"not checked: {reasons[r.line]}", r.location
    assert set(reasons) <= {r.line for r in under}, "a declared Hardt & Ma skip line that no row names"
    missing = Row("Section 2, paragraph 3", "the statement in our words", line="no such ref")
    assert "which no claims module declares" in missing.status()


def test_every_finding_has_become_a_claim_or_a_record():
    """The walk's findings (statements neither checked nor skipped) are all checked now: none is left as a
    sentence in the table."""
    assert not any(r.finding for r in ROWS)
    for claim_id in ("hardt-ma/sec1-no-bad-critical", "hardt-ma/thm-2.1-proof", "hardt-ma/sec3-unit-norm"):
        assert claim_id in coverage.declared_claims()
    # the scaling finding is the printed proof's step 4 now (once hardt-ma/thm-2.1-proof-scaling): still checked
    from resnet_theory.claims.registry import find

    scaling = find("hardt-ma/thm-2.1-proof").proof_steps[3]
    assert r"p \ge \gamma" in scaling.step and r"when $p \ge \gamma$" in scaling.where


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(claim="hardt-ma/thm-2.1", skip="a remark with nothing to compute"), "exactly one"),
        (dict(), "exactly one"),
        (dict(claim="hardt-ma/thm-2.1", finding="should become a claim, checked by x"), "exactly one"),
        (dict(claim="shamir/thm-1"), "not a Hardt & Ma claim id"),
        (dict(claim="hardt-ma/thm-2.1", line=NO_STATEMENT), "'line' names the skip line"),
        (dict(skip="why"), "in a sentence"),
        (dict(skip="a reason of several words", line="Section 2, after eq. (2.1)"), "takes its reason from it"),
        (dict(line=NO_STATEMENT), "must say why"),
    ],
)
def test_a_malformed_row_is_refused_with_one_line(kwargs, message):
    with pytest.raises(ValueError, match=message) as err:
        Row("Section 2, paragraph 6, Theorem 2.1", "the statement in our words", **kwargs)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "location",
    [
        "Section 6, paragraph 1",  # no such section
        "Appendix 2, paragraph 1",  # appendices are lettered
        "Section A.1, paragraph 1",  # and named "Appendix"
        "Section 4.2, Table 1",  # Table 1 is in Section 4.1
        "Section 2, paragraph 0",
        "Section 2, paragraphs 5-3",
        "Section 2, Theorem 2.1",  # no paragraph
        "",
    ],
)
def test_a_malformed_location_is_refused(location):
    with pytest.raises(ValueError, match="location"):
        coverage.parse_location(location)
    with pytest.raises(ValueError, match="location"):
        Row(location, "the statement in our words", claim="hardt-ma/thm-2.1")


def test_tables_sit_between_their_paragraphs():
    assert coverage.order_key("Section 4.1, paragraph 3") < coverage.order_key("Section 4.1, Table 1")
    assert coverage.order_key("Section 4.1, Table 1") < coverage.order_key("Section 4.1, paragraph 4")
    assert coverage.order_key("Section 4.1, Table 2") < coverage.order_key("Section 4.2, paragraph 1")


def test_the_rows_cover_every_heading_of_the_printed_text():
    assert [key for key, _ in SECTIONS] == PRINTED_HEADINGS
    assert {r.section for r in ROWS} == set(PRINTED_HEADINGS)
    counts = coverage.counts_by_section()
    assert list(counts) == PRINTED_HEADINGS
    assert sum(c["rows"] for c in counts.values()) == len(ROWS)
    for key, c in counts.items():
        assert c["rows"] == c["claim"] + c["skip line"] + c["nothing"] + c["new"], key


def test_every_declared_hardt_ma_claim_has_a_row():
    declared = coverage.declared_claims()
    assert declared, "the registry declares no Hardt & Ma claim: the comparison would be empty"
    assert coverage.unwalked_claims() == []
    assert declared <= {r.claim for r in ROWS}


def test_unwalked_claims_are_reported():
    assert coverage.unwalked_claims(ROWS, declared={"hardt-ma/thm-2.1", "hardt-ma/not-walked"}) == [
        "hardt-ma/not-walked"
    ]


def _pending_has_moved() -> bool:
    claims = chapter_claims(PENDING_CHAPTER)
    return any(d.paper == "hardt-ma" for d in claims) or any(s.paper == "hardt-ma" for s in claims.skipped)


def test_claim_ids_not_declared_are_only_the_unmoved_chapters():
    unknown = coverage.unknown_claims()
    assert unknown == coverage.unknown_claims(ROWS, coverage.declared_claims())
    if _pending_has_moved():
        assert unknown == [], "the experiments chapter has moved: the table must name its declared ids"
    assert all(c.startswith("hardt-ma/sec4-") for c in unknown), unknown
    assert coverage.unknown_claims(ROWS, declared=set()) == list(dict.fromkeys(r.claim for r in ROWS if r.claim))


def test_skip_lines_not_declared_are_only_the_unmoved_chapters():
    unknown = coverage.unknown_skip_lines()
    if _pending_has_moved():
        assert unknown == [], "the experiments chapter has moved: the table must name its declared skip lines"
    assert all(line.startswith("Section 4.") for line in unknown), unknown
    declared = coverage.declared_skip_lines()
    for r in ROWS:
        if r.line and r.line != NO_STATEMENT and not r.line.startswith("Section 4."):
            assert r.line in declared, (r.location, r.line)


def test_the_lemma_b2_inner_product_step_is_checked_by_its_record():
    """The audit's example (issue 31): the printed bound on the surrogate inner products in the proof of Lemma
    B.2 was a finding in a skip line; it is now the proof step of the ``hardt-ma/lemma-b.2`` record."""
    rows = [r for r in ROWS if r.location.startswith("Appendix B, paragraph 13")]
    assert rows and all(r.claim == "hardt-ma/lemma-b.2" and not r.is_new for r in rows)
    assert "hardt-ma/lemma-b.2" in {d.id for d in all_claims()}


def test_new_rows_are_findings_or_skips_without_a_line():
    new = coverage.new_rows()
    assert new == [r for r in ROWS if r.finding or (r.skip and not r.line)]
    assert not any(r.is_new for r in ROWS if r.line)


def test_ledger_rows_say_what_the_book_does():
    rows = coverage.ledger_rows()
    assert len(rows) == len(ROWS) and len(coverage.LEDGER_HEADERS) == 3
    for (location, statement, status), r in zip(rows, ROWS):
        assert (location, statement) == (r.location, r.what)
        if r.claim:
            assert status == f"checked by {r.claim}"
        elif r.finding:
            assert status == f"not yet checked: {r.finding}"
        elif r.line == NO_STATEMENT:
            assert status == f"nothing to check: {r.skip}"
        elif r.line:
            assert status == f"not checked: {coverage.skip_reasons()[r.line]}"
        else:
            assert status == f"not checked (no skip line yet): {r.skip}"
