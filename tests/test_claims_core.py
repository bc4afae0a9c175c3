"""The claims core (issue 30): declarations that cannot be written wrong, evidence matched to its declaration,
profile tables, contexts, the chapter API and ``python -m resnet_theory.claims``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from resnet_theory.claims import (
    Check,
    ClaimSet,
    Context,
    Control,
    Correction,
    Evidence,
    Knob,
    ProfileTable,
    ProofStep,
    Source,
    StepEvidence,
)
from resnet_theory.claims import cli as claims_cli
from resnet_theory.claims.registry import CHAPTER_MODULES, all_claims, chapter_claims
from resnet_theory.claims.run import EvidenceMismatch, run_claim
from resnet_theory.claims.spec import Checked, NotCheckable
from resnet_theory.ledger import LedgerDefect

ROOT = Path(__file__).resolve().parents[1]
CONTROL = Control("An input the claim rules out: a depth below the theorem's bound.")
TABLE = ProfileTable(n=Knob(10, 100, "how many", tiny=2), rates=Knob([0.1], [0.1, 0.2], "rates"))


def holds(what="x"):
    return Check.at_most(1.0, 2.0, what=what)


def fails(what="x"):
    return Check.at_most(3.0, 2.0, what=what)


def claim_set(**decl):
    cs = ClaimSet("linear", TABLE)
    base = dict(paper="hardt-ma", ref="Theorem 9", statement="A statement.", source=Source.printed(), section="s-1")
    base.update(decl)
    return cs, base


# --- declarations: illegal combinations cannot be written ------------------------------------------------------
def test_a_checked_claim_cannot_be_declared_without_its_control():
    cs, base = claim_set()
    with pytest.raises(TypeError):
        cs.checked("hardt-ma/t", **base)(lambda ctx: None)  # no control= : a missing keyword argument
    with pytest.raises(TypeError, match="Control"):
        cs.checked("hardt-ma/t", **base, control="a depth below the bound")(lambda ctx: None)


def test_a_proof_step_needs_its_repair_and_a_correction_its_statement():
    with pytest.raises(TypeError):
        ProofStep(step="the printed step fails here")  # the repair is a required field
    with pytest.raises(TypeError):
        Correction()
    with pytest.raises(ValueError, match="sentence"):
        ProofStep(step="x", repair="the repaired step holds")
    with pytest.raises(ValueError, match="sentence"):
        Control("too short")


def test_sources_say_which_review_and_refuse_unknown_kinds():
    with pytest.raises(ValueError, match="which review"):
        Source.review("")
    with pytest.raises(ValueError, match="unknown source kind"):
        Source("hearsay")
    assert Source.printed().ledger_key == "paper" and Source.abstract().ledger_key == "abstract"


def test_the_books_analogue_is_a_field_of_a_printed_source_that_says_what_the_analogue_is():
    digits = Source.printed("the scaled-down network on the digits", on_analogue=True)
    assert digits.on_analogue and digits.ledger_key == "paper" and not Source.printed("as printed").on_analogue
    with pytest.raises(ValueError, match="what the analogue is"):
        Source.printed(on_analogue=True)
    with pytest.raises(ValueError, match="only a printed statement"):
        Source("abstract", "the digits", on_analogue=True)
    with pytest.raises(TypeError, match="True or False"):
        Source("printed", "the digits", on_analogue="yes")
    cs, base = claim_set(source=digits)
    decl = cs.checked("hardt-ma/digits", **base, control=CONTROL)(
        lambda ctx: Evidence(statement=holds(), control=fails())
    )
    rec = run_claim(decl, Context.for_table(TABLE, "tiny", 0)).record  # the record carries it as its own field
    assert rec.on_analogue and rec.source_detail == "the scaled-down network on the digits"
    assert rec.label == "confirmed, as printed, on the book's analogue"


def test_not_checkable_needs_what_it_needs_and_a_reason():
    cs, base = claim_set()
    with pytest.raises(TypeError):
        cs.not_checkable("hardt-ma/n", **base, reason="the data set is not shipped with the book")
    with pytest.raises(ValueError, match="needs"):
        cs.not_checkable("hardt-ma/n", **base, reason="the data set is not shipped with the book", needs=" ")


def test_bad_ids_papers_labels_and_duplicates_are_refused():
    cs, base = claim_set()
    for bad in ("Hardt/x", "hardt-ma", "hardt-ma/X Y"):
        with pytest.raises(ValueError, match="claim id"):
            cs.checked(bad, **base, control=CONTROL)(lambda ctx: None)
    with pytest.raises(ValueError, match="unknown paper"):
        cs.checked("nobody/x", **{**base, "paper": "nobody"}, control=CONTROL)(lambda ctx: None)
    with pytest.raises(ValueError, match="MyST label"):
        cs.checked("hardt-ma/x", **{**base, "section": "Not A Label"}, control=CONTROL)(lambda ctx: None)
    cs.checked("hardt-ma/x", **base, control=CONTROL)(lambda ctx: None)
    with pytest.raises(ValueError, match="declared twice"):
        cs.checked("hardt-ma/x", **base, control=CONTROL)(lambda ctx: None)


def test_evidence_needs_a_control_check_and_plain_glue():
    with pytest.raises(TypeError):
        Evidence(statement=holds())  # no control: a missing keyword argument
    with pytest.raises(TypeError, match="control"):
        Evidence(statement=holds(), control=())
    with pytest.raises(TypeError, match="glue"):
        Evidence(statement=holds(), control=fails(), glue={"x": [1, 2]})
    with pytest.raises(TypeError):
        StepEvidence(step=fails())


# --- running a claim: evidence matched to its declaration, verdict derived -----------------------------------------
def test_evidence_must_match_the_declaration():
    cs, base = claim_set()
    gap = cs.checked(
        "hardt-ma/gap", **base, control=CONTROL, proof_step=ProofStep("the printed step", "the repaired step")
    )(lambda ctx: Evidence(statement=holds(), control=fails()))
    plain = cs.checked("hardt-ma/plain", **base, control=CONTROL)(
        lambda ctx: Evidence(statement=holds(), control=fails(), corrected=holds())
    )
    ctx = Context.for_table(TABLE, "tiny", 0)
    with pytest.raises(EvidenceMismatch, match="declares a proof step"):
        run_claim(gap, ctx)
    with pytest.raises(EvidenceMismatch, match="no correction"):
        run_claim(plain, ctx)


def test_verdicts_follow_from_the_checks():
    cs, base = claim_set()
    step = ProofStep("the printed step", "the repaired step")
    gap = cs.checked("hardt-ma/gap", **base, control=CONTROL, proof_step=step)(
        lambda ctx: Evidence(statement=holds(), control=fails(), proof=StepEvidence(step=fails(), repair=holds()))
    )
    corr = cs.checked("hardt-ma/corr", **base, control=CONTROL, correction=Correction("What holds instead."))(
        lambda ctx: Evidence(statement=fails(), control=fails(), corrected=holds())
    )
    ok = cs.checked("hardt-ma/ok", **base, control=CONTROL, rests_on=("hardt-ma/corr",))(
        lambda ctx: Evidence(statement=holds(), control=fails(), data={"rows": [1]}, glue={"k": 1.5})
    )
    nc = cs.not_checkable("hardt-ma/nc", **base, reason="needs the CIFAR archives and a GPU", needs="CIFAR, a GPU")
    ctx = Context.for_table(TABLE, "tiny", 0)
    runs = {d.id: run_claim(d, ctx) for d in (gap, corr, ok, nc)}
    assert {k: r.verdict for k, r in runs.items()} == {
        "hardt-ma/gap": "proof-gap",
        "hardt-ma/corr": "corrected",
        "hardt-ma/ok": "confirmed",
        "hardt-ma/nc": "not-checkable-here",
    }
    rec = runs["hardt-ma/ok"].record
    assert rec.rests_on == ["hardt-ma/corr"] and rec.function.endswith("<lambda>")
    assert rec.source_file.endswith("test_claims_core.py") and rec.source_line > 0
    assert runs["hardt-ma/ok"].data == {"rows": [1]}
    assert runs["hardt-ma/gap"].record.proof_step == "the printed step"


def test_a_control_that_holds_is_refused_when_the_chapter_is_shown(monkeypatch):
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set()
    cs.checked("hardt-ma/weak", **base, control=CONTROL)(lambda ctx: Evidence(statement=holds(), control=holds()))
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    ch = chapter_mod.Chapter("linear", profile="tiny")
    shown = ch.check("hardt-ma/weak")
    page = shown._repr_html_()
    assert "re-check alone" in page and "python -m resnet_theory.claims verify" in page
    assert "href='ledger.html#claim-hardt-ma-weak'" in page and "id='evidence-claim-hardt-ma-weak'" in page
    with pytest.raises(LedgerDefect, match="control"):
        ch.show()


def test_a_chapter_that_skips_a_declared_claim_is_refused(monkeypatch):
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set()
    cs.checked("hardt-ma/a", **base, control=CONTROL)(lambda ctx: Evidence(statement=holds(), control=fails()))
    cs.checked("hardt-ma/b", **base, control=CONTROL)(lambda ctx: Evidence(statement=holds(), control=fails()))
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    ch = chapter_mod.Chapter("linear", profile="tiny")
    ch.check("hardt-ma/a")
    with pytest.raises(ValueError, match="already checked"):
        ch.check("hardt-ma/a")
    with pytest.raises(KeyError, match="not declared"):
        ch.check("hardt-ma/zzz")
    with pytest.raises(RuntimeError, match="did not check hardt-ma/b"):
        ch.show()


# --- profile tables and contexts --------------------------------------------------------------------------------
def test_profile_tables_resolve_and_refuse():
    assert TABLE.resolve("quick").n == 10 and TABLE.resolve("full").n == 100 and TABLE.resolve("tiny").n == 2
    assert TABLE.resolve("tiny").rates == [0.1]  # no tiny value: the quick one
    assert TABLE.resolve("quick", {"n": 3}).n == 3
    with pytest.raises(ValueError, match="unknown knob 'm'"):
        TABLE.resolve("quick", {"m": 1})
    with pytest.raises(TypeError, match="knob 'n'"):
        TABLE.resolve("quick", {"n": 1.5})
    with pytest.raises(TypeError, match="knob 'n'"):
        TABLE.resolve("quick", {"n": True})
    with pytest.raises(ValueError, match="unknown profile"):
        TABLE.resolve("Quick")
    assert [r["knob"] for r in TABLE.rows("quick", {"n": 4})] == ["n", "rates"]
    # a knob with choices (a method's name) refuses any other value before anything runs, and its own values
    # must be among them
    methods = ProfileTable(how=Knob("a", "b", "method", choices=("a", "b", "c")))
    assert methods.resolve("quick", {"how": "c"}).how == "c"
    with pytest.raises(ValueError, match="knob 'how': 'd' is not one of 'a', 'b', 'c'"):
        methods.resolve("quick", {"how": "d"})
    with pytest.raises(ValueError, match="among its choices"):
        ProfileTable(how=Knob("a", "z", "method", choices=("a", "b")))
    assert TABLE.rows("quick", {"n": 4})[0]["this run"] == 4


def test_a_size_or_count_knob_refuses_numbers_outside_its_range_before_anything_runs():
    """A knob whose profiles are all positive (a size, a count, a rate) takes only positive finite numbers and
    non-empty lists; one whose profiles are all non-negative, only non-negative numbers; a knob with a negative
    value or a name among its profiles is not bounded."""
    sizes = ProfileTable(
        n=Knob(10, 100, "points"),
        rates=Knob([0.1, 0.2], [0.1], "rates"),
        configs=Knob([[2, 3, 0.5]], [[2, 3, 0.5], [3, 3, 0.7]], "configurations"),
        warmup=Knob(0, 5, "warm-up steps"),
        shift=Knob(-1.0, 1.0, "an offset of either sign"),
        empty=Knob([], [1], "extra depths, none by default"),
    )
    ok = sizes.resolve("quick", {"n": 1, "rates": [1e-9], "warmup": 0, "shift": -7.0, "empty": []})
    assert (ok.n, ok.rates, ok.warmup, ok.shift, ok.empty) == (1, [1e-9], 0, -7.0, [])
    refused = {
        "n": (-5, "knob 'n': -5 is not positive"),
        "rates": ([0.1, 0.0], "knob 'rates': 0.0 is not positive"),
        "configs": ([[2, -3, 0.5]], "knob 'configs': -3 is not positive"),
        "warmup": (-1, "knob 'warmup': -1 is negative"),
    }
    for name, (value, message) in refused.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            sizes.resolve("quick", {name: value})
    for name, value in (("n", 0), ("rates", []), ("configs", [[]]), ("rates", [float("nan")])):
        with pytest.raises(ValueError, match=f"knob '{name}'"):
            sizes.resolve("quick", {name: value})
    with pytest.raises(ValueError, match="inf is not a finite number"):
        sizes.resolve("quick", {"shift": float("inf")})
    # the profiles of every chapter's knobs lie inside their own ranges
    for chapter in CHAPTER_MODULES:
        table = chapter_claims(chapter).profile
        for profile in ("tiny", "quick", "full"):
            table.resolve(profile, {name: knob.value(profile) for name, knob in table.knobs.items()})


def test_context_random_numbers_do_not_depend_on_order_and_shared_results_are_computed_once():
    a, b = Context.for_table(TABLE, "tiny", 3), Context.for_table(TABLE, "tiny", 3)
    a.rng("first").random(5)
    assert a.rng("second").random() == b.rng("second").random()
    assert a.rng("k").random() != Context.for_table(TABLE, "tiny", 4).rng("k").random()
    calls = []
    assert a.shared("grid", lambda: calls.append(1) or 7) == 7 and a.shared("grid", lambda: calls.append(1)) == 7
    assert calls == [1]
    with pytest.raises(ValueError, match="seed"):
        Context.for_table(TABLE, "tiny", -1)


# --- the book's registry --------------------------------------------------------------------------------------
def test_every_chapter_module_declares_its_chapter_and_ids_are_unique():
    decls = all_claims()
    assert len({d.id for d in decls}) == len(decls)
    for chapter in CHAPTER_MODULES:
        assert chapter_claims(chapter).chapter == chapter
        assert (ROOT / "book" / f"{chapter}.md").is_file()


@pytest.mark.parametrize("chapter", list(CHAPTER_MODULES))
def test_each_chapter_checks_every_declared_claim_under_its_label(chapter):
    text = (ROOT / "book" / f"{chapter}.md").read_text()
    labels = set(re.findall(r"^\(([a-z0-9-]+)\)=$", text, flags=re.M))
    for decl in chapter_claims(chapter):
        assert decl.section in labels, f"{decl.id}: no label ({decl.section})= in book/{chapter}.md"
        assert f'chapter.check("{decl.id}")' in text, f"book/{chapter}.md never runs {decl.id}"
    for d in all_claims():
        for other in d.rests_on:
            assert other in {x.id for x in all_claims()}, f"{d.id} rests on an unknown claim {other}"


def test_declarations_are_the_two_kinds():
    assert all(isinstance(d, Checked | NotCheckable) for d in all_claims())


# --- the command line ---------------------------------------------------------------------------------------------
def _build_with(tmp_path, verdict):
    executed = tmp_path / "build" / "executed" / "book"
    executed.mkdir(parents=True)
    ctx = Context.for_table(chapter_claims("linear").profile, "quick", 0)
    rec = run_claim(chapter_claims("linear").claims["hardt-ma/claim-2.3"], ctx).record
    from dataclasses import asdict, replace

    rec = replace(rec, verdict=verdict)
    (executed / "linear.claims.json").write_text(json.dumps({"chapter": "linear", "claims": [asdict(rec)]}))
    return tmp_path / "build"


def test_list_shows_every_declared_id_and_the_recorded_verdict(tmp_path, capsys):
    build = _build_with(tmp_path, "confirmed")
    assert claims_cli.main(["list", "--json", "--build-dir", str(build)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [d.id for d in all_claims()]
    assert {r["id"]: r["recorded"] for r in rows}["hardt-ma/claim-2.3"] == "confirmed"
    # as text, one line per claim, its verdict in one column whatever the longest id
    assert claims_cli.main(["list", "--build-dir", str(build)]) == 0
    lines = capsys.readouterr().out.splitlines()[:-1]
    assert len(lines) == len(rows)
    columns = {len(line) - len(line[len(r["id"]) :].lstrip()) for line, r in zip(lines, rows, strict=True)}
    assert len(columns) == 1, columns


def test_verify_exits_0_as_recorded_1_when_it_differs(tmp_path, capsys):
    build = _build_with(tmp_path, "proof-gap")  # Claim 2.3: its printed proof names a matrix as the constant
    assert claims_cli.main(["verify", "hardt-ma/claim-2.3", "--build-dir", str(build)]) == 0
    out = capsys.readouterr().out
    assert (
        "stated in: Claim 2.3" in out
        and "statement as printed: holds" in out
        and "control (fails, as it must)" in out
        and "(as recorded)" in out
    )
    # the verdict says what it was checked against (issue 31)
    assert "verdict: proof-gap, as printed  (as recorded)" in out and "checked against: the paper's printed text" in out
    other = tmp_path / "other"
    other.mkdir()
    assert claims_cli.main(["verify", "hardt-ma/claim-2.3", "--build-dir", str(_build_with(other, "refuted"))]) == 1
    assert "recorded: refuted" in capsys.readouterr().out
    assert claims_cli.main(["verify", "hardt-ma/claim-2.3", "--build-dir", str(tmp_path / "none")]) == 0


def test_verify_json_and_seeds(tmp_path, capsys):
    args = ["verify", "hardt-ma/claim-2.3", "--seeds", "0", "1", "--json", "--build-dir", str(tmp_path)]
    assert claims_cli.main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["claims"][0]["seeds_agreeing"] == 2 and out["claims"][0]["verdicts"] == ["proof-gap"] * 2
    assert {r["label"] for r in out["runs"]} == {"proof-gap, as printed"}


@pytest.mark.parametrize(
    "argv, words",
    [
        (["verify", "hardt-ma/nope"], "no claim 'hardt-ma/nope'"),
        (["verify"], "needs claim ids"),
        (["verify", "hardt-ma/claim-2.3", "--profile", "Quick"], "invalid choice"),
        (["verify", "hardt-ma/claim-2.3", "--seed", "-1"], "integer >= 0"),
        (["verify", "hardt-ma/claim-2.3", "--knob", "nope=1"], "unknown knob 'nope'"),
        (["verify", "hardt-ma/claim-2.3", "--knob", "max_depth"], "NAME=VALUE"),
        (["verify", "hardt-ma/claim-2.3", "--knob", "max_depth=1.5"], "knob 'max_depth'"),
        (["verify", "hardt-ma/claim-2.3", "--knob", "max_depth=" + "[" * 100_000], "the value must be JSON"),
        (["verify", "hardt-ma/claim-2.3", "--jobs", "0"], "--jobs"),
        (
            ["verify", "bartlett-evans-long/representation-rate", "--knob", 'linear_method="Polar"'],
            "knob 'linear_method': 'Polar' is not one of 'hardt-ma', 'polar', 'logarithm'",
        ),
        (
            ["verify", "bartlett-evans-long/representation-rate", "--knob", "rate_points=-5"],
            "knob 'rate_points': -5 is not positive",
        ),
        (["verify", "hardt-ma/claim-2.3", "--knob", "mc_samples=0"], "knob 'mc_samples': 0 is not positive"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, words, capsys, tmp_path):
    assert claims_cli.main([*argv, *(["--build-dir", str(tmp_path)] if argv[0] == "verify" else [])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and words in err, err


def test_record_writes_what_the_seeds_found(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(claims_cli, "all_claims", lambda: [chapter_claims("linear").claims["hardt-ma/claim-2.3"]])
    argv = ["verify", "--all", "--seeds", "0", "1", "--record", "--jobs", "1", "--build-dir", str(tmp_path)]
    assert claims_cli.main(argv) == 0
    record = json.loads((tmp_path / claims_cli.SEEDS_FILE).read_text())
    assert record["seeds"] == [0, 1] and record["claims"]["hardt-ma/claim-2.3"]["seeds_agreeing"] == 2
    capsys.readouterr()
    assert claims_cli.main(["verify", "hardt-ma/claim-2.3", "--record", "--build-dir", str(tmp_path)]) == 2
    assert "--record" in capsys.readouterr().err


def test_a_checked_claim_may_say_what_this_run_lacks():
    from resnet_theory.claims import NotAvailable

    cs, base = claim_set()
    decl = cs.checked("hardt-ma/gpu", **base, control=CONTROL)(
        lambda ctx: (
            NotAvailable(needs="a CUDA GPU", reason="no GPU in this run; the check trains for hours")
            if ctx.cfg.n < 5
            else Evidence(statement=holds(), control=fails())
        )
    )
    assert run_claim(decl, Context.for_table(TABLE, "tiny", 0)).record.needs == "a CUDA GPU"
    assert run_claim(decl, Context.for_table(TABLE, "tiny", 0)).verdict == "not-checkable-here"
    assert run_claim(decl, Context.for_table(TABLE, "quick", 0)).verdict == "confirmed"
    with pytest.raises(ValueError, match="needs"):
        NotAvailable(needs="", reason="no GPU in this run at all")


def test_a_claims_evidence_table_typesets_its_statement(monkeypatch):
    """The chapters' pages ignore raw output for MathJax: the statement's ``$...$`` is marked for it."""
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set(statement=r"$\|A_i\| \le \gamma / m$ for every layer")
    cs.checked("hardt-ma/tex", **base, control=CONTROL)(lambda ctx: Evidence(statement=holds(), control=fails()))
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    page = chapter_mod.Chapter("linear", profile="tiny").check("hardt-ma/tex")._repr_html_()
    assert r'<td><span class="mathjax_process">\(\|A_i\| \le\) \(\gamma / m\) for every layer</span>' in page
    assert "$" not in page


def test_verify_says_when_a_claim_has_no_usable_control(capsys):
    control = {"holds": True, "decisive": False, "usable": False, "input": "an input", "summary": "+0.64 se"}
    result = {
        "id": "x/y", "chapter": "c", "seed": 0, "ref": "r", "statement": "s", "checks": {}, "control": control,
        "needs": None, "verdict": "undecided", "seconds": 0.1, "source_text": "stated in the paper",
        "label": "undecided, as printed",
    }  # fmt: skip
    claims_cli._print_result(result, None)
    out = capsys.readouterr().out
    assert "control (does not decide: no usable control)" in out and "a defect" not in out


# --- several proof steps --------------------------------------------------------------------------------------------
STEP_1 = ProofStep("the projection keeps every distance", "widen the projection")
STEP_2 = ProofStep("the chain gives the conditions of the lemma", "keep squared lengths")


def test_a_claim_declares_one_proof_step_or_a_tuple_of_them_and_holds_them_as_a_tuple():
    cs, base = claim_set()
    one = cs.checked("hardt-ma/one", **base, control=CONTROL, proof_step=STEP_1)(lambda ctx: None)
    two = cs.checked("hardt-ma/two", **base, control=CONTROL, proof_step=(STEP_1, STEP_2))(lambda ctx: None)
    none = cs.checked("hardt-ma/none", **base, control=CONTROL)(lambda ctx: None)
    assert one.proof_steps == (STEP_1,) and two.proof_steps == (STEP_1, STEP_2) and none.proof_steps == ()
    with pytest.raises(ValueError, match="declares no step"):
        cs.checked("hardt-ma/empty", **base, control=CONTROL, proof_step=())(lambda ctx: None)
    with pytest.raises(TypeError, match="a tuple of them"):
        cs.checked("hardt-ma/list", **base, control=CONTROL, proof_step=[STEP_1, STEP_2])(lambda ctx: None)
    with pytest.raises(TypeError, match="a tuple of them"):
        cs.checked("hardt-ma/text", **base, control=CONTROL, proof_step=(STEP_1, "a step in words"))(lambda ctx: None)
    with pytest.raises(ValueError, match="declared twice"):
        cs.checked("hardt-ma/twice", **base, control=CONTROL, proof_step=(STEP_1, STEP_1))(lambda ctx: None)
    pair = (StepEvidence(step=fails(), repair=holds()), StepEvidence(step=holds(), repair=holds()))
    assert Evidence(statement=holds(), control=fails(), proof=pair).proof_steps == pair
    assert Evidence(statement=holds(), control=fails(), proof=pair[0]).proof_steps == pair[:1]
    assert Evidence(statement=holds(), control=fails()).proof_steps == ()
    for bad in ((), (pair[0], fails()), [pair[0]]):
        with pytest.raises(TypeError, match="one per declared proof step"):
            Evidence(statement=holds(), control=fails(), proof=bad)


def test_the_evidence_must_have_one_step_evidence_per_declared_step():
    cs, base = claim_set()
    gap = StepEvidence(step=fails(), repair=holds())
    short = cs.checked("hardt-ma/short", **base, control=CONTROL, proof_step=(STEP_1, STEP_2))(
        lambda ctx: Evidence(statement=holds(), control=fails(), proof=gap)
    )
    long = cs.checked("hardt-ma/long", **base, control=CONTROL, proof_step=STEP_1)(
        lambda ctx: Evidence(statement=holds(), control=fails(), proof=(gap, gap))
    )
    missing = cs.checked("hardt-ma/missing", **base, control=CONTROL, proof_step=(STEP_1, STEP_2))(
        lambda ctx: Evidence(statement=holds(), control=fails())
    )
    ctx = Context.for_table(TABLE, "tiny", 0)
    with pytest.raises(EvidenceMismatch, match="declares 2 proof steps but the evidence has 1 StepEvidence"):
        run_claim(short, ctx)
    with pytest.raises(EvidenceMismatch, match="declares 1 proof steps but the evidence has 2 StepEvidence"):
        run_claim(long, ctx)
    with pytest.raises(EvidenceMismatch, match="declares 2 proof steps but the evidence has no StepEvidence for them"):
        run_claim(missing, ctx)


def _two_steps(cs, base, name, first, second):
    return cs.checked(f"hardt-ma/{name}", **base, control=CONTROL, proof_step=(STEP_1, STEP_2))(
        lambda ctx: Evidence(statement=holds(), control=fails(), proof=(first, second))
    )


def test_the_verdict_of_a_claim_with_two_steps_follows_from_every_step():
    cs, base = claim_set()
    noisy = Check.statistical(0.51, 0.05, 0.5, what="rate", test="binomial", n=100, above=False)
    decls = {
        "gap": _two_steps(cs, base, "gap", StepEvidence(holds(), holds()), StepEvidence(fails(), holds())),
        "sound": _two_steps(cs, base, "sound", StepEvidence(holds(), fails()), StepEvidence(holds(), holds())),
        "noisy": _two_steps(cs, base, "noisy", StepEvidence(fails(), holds()), StepEvidence(noisy, holds())),
    }
    ctx = Context.for_table(TABLE, "tiny", 0)
    runs = {name: run_claim(d, ctx) for name, d in decls.items()}
    assert {name: r.verdict for name, r in runs.items()} == {
        "gap": "proof-gap",
        "sound": "confirmed",
        "noisy": "undecided",
    }
    gap = runs["gap"].record
    assert [(s.number, s.holds) for s in gap.proof_steps] == [(1, True), (2, False)]  # the holding step: recorded so
    assert (gap.proof_step, gap.repair) == (STEP_1.step, STEP_1.repair)
    assert gap.further_proof_steps == [{"step": STEP_2.step, "repair": STEP_2.repair}]
    assert "the check of proof step 2 is within its noise" in runs["noisy"].record.reason
    broken = _two_steps(cs, base, "broken", StepEvidence(holds(), holds()), StepEvidence(fails(), fails()))
    with pytest.raises(ValueError, match="the repair of the failing proof step 2 does not hold"):
        run_claim(broken, ctx)


def test_a_chapter_shows_one_step_of_a_claim_where_its_narration_is(monkeypatch):
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set()
    _two_steps(cs, base, "gap", StepEvidence(holds("first"), holds()), StepEvidence(fails("chain"), holds("slack")))
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    shown = chapter_mod.Chapter("linear", profile="tiny").check("hardt-ma/gap")
    page = shown.proof_step(2)._repr_html_()
    assert "proof step 2 of 2, as printed: fails" in page and STEP_2.step in page and STEP_2.repair in page
    assert "chain" in page and "slack" in page and "its repair: holds" in page and STEP_1.step not in page
    assert "proof-gap" in page and "ledger.html#claim-hardt-ma-gap" in page
    rows = re.findall(r"<tr><th>([^<]*)</th>", page)  # print keeps the first row and the last two (book.css)
    assert rows[0].startswith("proof step 2 of 2") and rows[-2:] == ["verdict of the claim", "re-check alone"]
    assert "python -m resnet_theory.claims verify hardt-ma/gap" in page
    assert repr(shown.proof_step(1)) == "hardt-ma/gap: proof step 1"
    for bad in (0, 3, True):
        with pytest.raises(ValueError, match="declares 2 proof step"):
            shown.proof_step(bad)
    table = shown._repr_html_()  # the claim's evidence names each step's part
    assert "proof step 1 as printed: holds" in table and "repair of step 2: holds" in table


def test_a_retired_claim_id_says_which_claim_it_moved_into():
    from resnet_theory.claims import registry
    from resnet_theory.claims.chapter import Chapter

    old = "hardt-ma/thm-3.2-proof-conditions"
    into, key = registry.RETIRED[old]
    assert (into, key) == ("hardt-ma/thm-3.2", "conditions") and into in {d.id for d in all_claims()}
    assert not set(registry.RETIRED) & {d.id for d in all_claims()}  # a retired id is declared nowhere
    for gone, (into, key) in registry.RETIRED.items():  # every retired id names a declared step of its claim
        assert registry.retired_into(gone) == (into, f"its proof step {registry.find(into).step_number(key)}, {key}")
    with pytest.raises(KeyError, match=r"merged into hardt-ma/thm-3\.2 \(its proof step 2, conditions\)"):
        registry.find(old)
    with pytest.raises(KeyError, match="merged into hardt-ma/thm-3.2"):
        Chapter("expressivity", profile="tiny").check(old)
    with pytest.raises(KeyError, match="no claim 'hardt-ma/never'"):
        registry.find("hardt-ma/never")
    assert registry.retired_message("hardt-ma/thm-3.2") is None
    message = registry.unknown_claim_message(old)
    assert "\n" not in message and message.endswith("python -m resnet_theory.claims verify hardt-ma/thm-3.2")


def test_verify_with_a_retired_id_names_the_claim_it_moved_into_in_one_line(capsys):
    assert claims_cli.main(["verify", "hardt-ma/thm-3.2-proof-conditions"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: claim 'hardt-ma/thm-3.2-proof-conditions' was merged into")
    assert "hardt-ma/thm-3.2 (its proof step 2, conditions)" in err and "verify hardt-ma/thm-3.2\n" in err
    assert claims_cli.main(["verify", "hardt-ma/never"]) == 2
    assert "no claim 'hardt-ma/never'" in capsys.readouterr().err


# --- where a proof step is printed ----------------------------------------------------------------------------------
WHERE = r"Appendix A.1, proof of Theorem 2.1: $B_1 = \dots = B_q = \mathrm{Id} - S W S^{-1}$"
PLACED = ProofStep("the chain gives the conditions of the lemma", "keep squared lengths", where=WHERE)


def test_a_proof_step_may_name_its_place_in_the_printed_proof_checked_as_its_other_text_is():
    assert STEP_1.where == "" and PLACED.where == WHERE
    assert ProofStep("a step as printed", "its repair holds", "Appendix B, paragraph 16").where
    for bad, error, words in (
        (3, TypeError, "ProofStep.where must be text"),
        ("   ", ValueError, "ProofStep.where"),
        ("Appendix B", ValueError, "at least 3 words"),
    ):
        with pytest.raises(error, match=words):
            ProofStep("a step as printed", "its repair holds", where=bad)
    assert PLACED != ProofStep(PLACED.step, PLACED.repair)  # the place is part of the declaration


# --- a proof step's key: its number, asked for by name ---------------------------------------------------------------
KEYED_1 = ProofStep("the projection keeps every distance", "widen the projection", key="projection")
KEYED_2 = ProofStep("the chain gives the conditions of the lemma", "keep squared lengths", key="conditions")


def test_a_proof_steps_key_is_a_short_name_unique_within_its_claim_and_gives_its_number():
    assert STEP_1.key == "" and KEYED_1 != ProofStep(KEYED_1.step, KEYED_1.repair)  # the key is declared
    for bad in ("Projection", "two words", "-x", "layer_count", 3):
        with pytest.raises(ValueError, match="ProofStep.key must be a short name"):
            ProofStep("a step as printed", "its repair holds", key=bad)
    cs, base = claim_set()
    two = cs.checked("hardt-ma/keyed", **base, control=CONTROL, proof_step=(KEYED_1, KEYED_2))(lambda ctx: None)
    assert two.step_keys == ("projection", "conditions")
    assert (two.step_number("projection"), two.step_number("conditions")) == (1, 2)
    swapped = cs.checked("hardt-ma/swapped", **base, control=CONTROL, proof_step=(KEYED_2, KEYED_1))(lambda ctx: None)
    assert swapped.step_number("conditions") == 1  # the number follows the declaration's order
    with pytest.raises(KeyError, match="has no proof step 'condition'; its step keys: projection, conditions"):
        two.step_number("condition")
    mixed = cs.checked("hardt-ma/mixed", **base, control=CONTROL, proof_step=(STEP_1, KEYED_2))(lambda ctx: None)
    assert mixed.step_keys == ("", "conditions") and mixed.step_number("conditions") == 2
    with pytest.raises(KeyError, match="has no proof step ''"):
        mixed.step_number("")  # a step without a key is not found by the empty name
    bare = cs.checked("hardt-ma/bare", **base, control=CONTROL, proof_step=STEP_1)(lambda ctx: None)
    with pytest.raises(KeyError, match="it declares no step keys"):
        bare.step_number("projection")
    same = ProofStep("another step as printed", "another repair holds", key="projection")
    with pytest.raises(ValueError, match="proof step key.s. projection declared twice"):
        cs.checked("hardt-ma/same", **base, control=CONTROL, proof_step=(KEYED_1, same))(lambda ctx: None)


def test_a_chapter_asks_for_a_step_by_its_key_for_its_table_and_its_number(monkeypatch):
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set()
    cs.checked("hardt-ma/keyed", **base, control=CONTROL, proof_step=(KEYED_1, KEYED_2))(
        lambda ctx: Evidence(
            statement=holds(), control=fails(), proof=(StepEvidence(holds(), holds()), StepEvidence(fails(), holds()))
        )
    )
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    chapter = chapter_mod.Chapter("linear", profile="tiny")
    assert chapter.step_number("hardt-ma/keyed", "conditions") == 2  # before the claim runs: prose glues it first
    shown = chapter.check("hardt-ma/keyed")
    by_key, by_number = shown.proof_step("conditions"), shown.proof_step(2)
    assert by_key.number == 2 and by_key._repr_html_() == by_number._repr_html_()
    assert "proof step 2 of 2, as printed: fails" in by_key._repr_html_()
    with pytest.raises(KeyError, match="has no proof step 'condition'"):
        shown.proof_step("condition")
    with pytest.raises(KeyError, match="not declared in chapter"):
        chapter.step_number("hardt-ma/other", "conditions")


def test_every_declared_claim_with_several_proof_steps_names_each_step_by_a_key():
    """Prose that says "step n" of a claim with several steps glues n from the step's key: every such step has one."""
    several = [d for d in all_claims() if isinstance(d, Checked) and len(d.proof_steps) > 1]
    assert several, "the book declares claims with several proof steps"
    for decl in several:
        assert all(decl.step_keys), f"{decl.id}: a proof step without a key"
        assert [decl.step_number(k) for k in decl.step_keys] == list(range(1, len(decl.proof_steps) + 1))


def _placed(cs, base, name):
    return cs.checked(f"hardt-ma/{name}", **base, control=CONTROL, proof_step=(STEP_1, PLACED))(
        lambda ctx: Evidence(
            statement=holds(), control=fails(), proof=(StepEvidence(holds(), holds()), StepEvidence(fails(), holds()))
        )
    )


def test_a_steps_place_goes_into_the_record_the_chapters_step_table_and_claims_verify(monkeypatch, capsys):
    from resnet_theory.claims import chapter as chapter_mod

    cs, base = claim_set()
    _placed(cs, base, "placed")
    rec = run_claim(cs.claims["hardt-ma/placed"], Context.for_table(TABLE, "tiny", 0)).record
    assert rec.proof_step_where is None and rec.further_proof_steps[0]["where"] == WHERE  # step 1 names none
    assert [s.where for s in rec.proof_steps] == ["", WHERE]
    monkeypatch.setattr(chapter_mod, "chapter_claims", lambda name: cs)
    shown = chapter_mod.Chapter("linear", profile="tiny").check("hardt-ma/placed")
    page = shown.proof_step(2)._repr_html_()
    rows = re.findall(r"<tr><th>([^<]*)</th>", page)
    assert rows[:2] == ["proof step 2 of 2, as printed: fails", "printed at"] and r"\(B_q =\)" in page
    assert rows[-2:] == ["verdict of the claim", "re-check alone"]  # what a printed chapter keeps, still last
    assert "printed at" not in re.findall(r"<tr><th>([^<]*)</th>", shown.proof_step(1)._repr_html_())
    table = re.findall(r"<tr><th>([^<]*)</th>", shown._repr_html_())  # the claim's evidence: the place after the step
    at = table.index("proof step 2 as printed: fails")
    assert table[at + 1] == "where step 2 is printed" and sum(row.startswith("where") for row in table) == 1
    cs.checked("hardt-ma/one-placed", **base, control=CONTROL, proof_step=PLACED)(
        lambda ctx: Evidence(statement=holds(), control=fails(), proof=StepEvidence(fails(), holds()))
    )
    one = re.findall(
        r"<tr><th>([^<]*)</th>",
        chapter_mod.Chapter("linear", profile="tiny").check("hardt-ma/one-placed")._repr_html_(),
    )
    assert one[[r.startswith("proof step") for r in one].index(True) + 1] == "where the step is printed", one
    monkeypatch.setattr(claims_cli, "chapter_claims", lambda name: cs)
    [result] = claims_cli._chapter_job("linear", ["hardt-ma/placed"], "tiny", 0, {})
    assert result["checks"]["proof_step_2"]["where"] == WHERE and "where" not in result["checks"]["proof_step"]
    assert all("where" not in result["checks"][k] for k in ("printed", "repair", "repair_2"))
    claims_cli._print_result(result, None)
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  proof step 2 as printed: fails"))
    assert lines[at + 1] == f"    printed at: {WHERE}" and lines[at + 2].startswith("  repair of step 2: holds")
    assert sum("printed at:" in line for line in lines) == 1


def test_a_steps_key_goes_into_the_record_and_claims_verify_names_the_step_by_it(monkeypatch, capsys):
    cs, base = claim_set()
    keyed = ProofStep(PLACED.step, PLACED.repair, where=WHERE, key="conditions")
    decl = cs.checked("hardt-ma/keyed", **base, control=CONTROL, proof_step=(KEYED_1, keyed))(
        lambda ctx: Evidence(
            statement=holds(), control=fails(), proof=(StepEvidence(holds(), holds()), StepEvidence(fails(), holds()))
        )
    )
    rec = run_claim(decl, Context.for_table(TABLE, "tiny", 0)).record
    assert rec.proof_step_key == "projection" and rec.further_proof_steps[0]["key"] == "conditions"
    assert [s.key for s in rec.proof_steps] == list(decl.step_keys)  # the step a key numbers is the recorded one
    assert all(rec.proof_steps[decl.step_number(k) - 1].key == k for k in decl.step_keys)
    monkeypatch.setattr(claims_cli, "chapter_claims", lambda name: cs)
    [result] = claims_cli._chapter_job("linear", ["hardt-ma/keyed"], "tiny", 0, {})
    checks = result["checks"]
    assert (checks["proof_step"]["key"], checks["proof_step_2"]["key"]) == ("projection", "conditions")
    assert all("key" not in checks[k] for k in ("printed", "repair", "repair_2"))
    claims_cli._print_result(result, None)
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("  proof step 1 (projection) as printed: holds") for line in lines)
    at = next(i for i, line in enumerate(lines) if line.startswith("  proof step 2 (conditions) as printed: fails"))
    assert lines[at + 1] == f"    printed at: {WHERE}" and lines[at + 2].startswith("  repair of step 2: holds")


def test_a_retired_ids_step_number_is_the_one_its_merged_claims_record_gives_that_key():
    """registry.retired_into numbers a retired id's step from the declaration; the record of the claim it moved
    into carries each step's key in the same order, so both name the same step (no claim is run: its evidence is
    made up, one failing step with a repair that holds per declared step)."""
    from resnet_theory.claims import registry
    from resnet_theory.claims.run import _record

    for old, (into, key) in registry.RETIRED.items():
        decl = registry.find(into)
        proof = tuple(StepEvidence(fails(), holds()) for _ in decl.proof_steps)
        rec = _record(decl, Evidence(statement=holds(), control=fails(), corrected=None, proof=proof))
        [step] = [s for s in rec.proof_steps if s.key == key]
        assert registry.retired_into(old) == (into, f"its proof step {step.number}, {key}")


def test_theorem_2_1s_six_retired_proof_claims_say_which_step_of_the_merged_claim_they_became():
    from resnet_theory.claims import registry

    merged = registry.find("hardt-ma/thm-2.1-proof")
    retired = {k: v for k, v in registry.RETIRED.items() if k.startswith("hardt-ma/thm-2.1-proof-")}
    assert sorted(key for _, key in retired.values()) == sorted(merged.step_keys)  # each step, once
    assert all(old == f"{merged.id}-{key}" for old, (_, key) in retired.items())  # each old id named its step
    assert len(merged.proof_steps) == 6 and all(into == merged.id for into, _ in retired.values())
    assert all(s.where.startswith("Appendix A.1, proof of Theorem 2.1: ") for s in merged.proof_steps)
    assert merged.step_number("sign") == 2  # the printed proof's order: blocks, then the sign of the rotation layer
    with pytest.raises(KeyError, match=r"merged into hardt-ma/thm-2\.1-proof \(its proof step 2, sign\)"):
        registry.find("hardt-ma/thm-2.1-proof-sign")
    assert registry.unknown_claim_message("hardt-ma/thm-2.1-proof-rounding").endswith(
        "python -m resnet_theory.claims verify hardt-ma/thm-2.1-proof"
    )
