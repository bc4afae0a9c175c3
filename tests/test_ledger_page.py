"""The ledger page (issues 30 and 32): claims bound to the executed pages they came from, each with its evidence
function's source and re-check command, the seeds that agree, what rests on each erratum, and no statement that
can act on the page through its math."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import textwrap
from pathlib import Path

import nbformat
import pytest

from resnet_theory.book import cli as executor
from resnet_theory.book.cache import cache_record_path
from resnet_theory.book.claims_files import ClaimsFileError, claims_files, load_claims, published, verify_claims_files
from resnet_theory.book.ledger_page import LedgerPage, source_links
from resnet_theory.book.repository import Repository
from resnet_theory.ledger import Ledger
from resnet_theory.ledger_html import (
    ClaimLinks,
    UnsafeText,
    claim_anchor,
    claims_table_html,
    errata_html,
    render_ledger,
    skipped_html,
    text_html,
)
from resnet_theory.record import UNSAFE_TEX, LedgerDefect, claim_defects, dependents, rests_on_defects
from resnet_theory.verdicts import Check
from test_executor import chapter, make_book

from conftest import run_execute

CI = "an input the claim rules out, for the test"

#: A chapter whose first claim holds at seeds 0 and 1 and fails at seed 2 (its verdict hinges on the seed).
ALPHA = textwrap.dedent("""\
    from resnet_theory.ledger import Ledger
    from resnet_theory.verdicts import Check
    ledger = Ledger("alpha")
    ledger.claim("hardt-ma/x", paper="hardt-ma", ref="Theorem 2.1", statement="a bound holds", section="alpha-x",
                 printed=Check.at_most([float(seed)], 1.5, what="the seed against the bound"),
                 control=Check.at_most([3.0], 1.5, what="a value the claim rules out"),
                 control_input="a value twice the bound, which the claim rules out")
    ledger.not_checkable("hardt-ma/y", paper="hardt-ma", ref="Section 4", statement="CIFAR accuracy",
                         section="alpha-y", reason="the archives are not bundled", needs="CIFAR-10 and a GPU")
    ledger.show()""")

GATHER = "from resnet_theory.book.ledger_page import LedgerPage\nLedgerPage.from_build().section('claims')"


def _execute(root: Path, build: Path, *extra: str) -> None:
    assert run_execute(root, build, *extra) == 0


@pytest.fixture(scope="module")
def seed_book(tmp_path_factory) -> tuple[Path, Path]:
    """A book executed at seed 0 in ``build`` and at seed 2 in ``other`` beside it (two kernel executions of one
    small chapter)."""
    gather = chapter("Ledger", 'profile = "quick"\nseed = 0', GATHER)
    gather = gather.replace("kernelspec:", "resnet_theory:\n  execution: in-process\nkernelspec:", 1)
    base = tmp_path_factory.mktemp("seed-book")
    root = make_book(
        base / "src",
        {"intro": "# Intro\n", "alpha": chapter("Alpha", 'profile = "quick"\nseed = 0', ALPHA), "ledger": gather},
    )
    build = base / "build"
    _execute(root, base / "other", "-p", "seed", "2")
    _execute(root, build)
    return root, build


@pytest.fixture
def book_copy(seed_book, tmp_path) -> tuple[Path, Path]:
    root, build = (Path(shutil.copytree(p, tmp_path / p.name)) for p in seed_book)
    shutil.copytree(seed_book[1].with_name("other"), tmp_path / "other")
    return root, build


def _ledger_page_fails(root: Path, build: Path, capsys) -> str:
    """Render the ledger page alone (``run``); the error it fails with (it must fail)."""
    code = executor.main(["run", "book/ledger.md", "--root", str(root), "--build-dir", str(build)])
    err = capsys.readouterr().err
    assert code == 1, "the ledger page was published"
    return err


def _page_html(build: Path) -> str:
    nb = nbformat.read(build / "executed" / "book" / "ledger.ipynb", as_version=4)
    return "".join(o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", []))


# --- one truth per build: the claims file is bound to the executed page beside it -------------------------------
def test_a_claims_file_copied_with_its_execution_record_from_another_build_is_refused(book_copy, capsys):
    """The build at seed 2 refutes hardt-ma/x, this build's page confirms it: copying the other build's claims file
    together with its execution record used to publish "refuted" on the ledger beside a page saying "confirmed"."""
    root, build = book_copy
    other = build.with_name("other")
    for rel in ("executed/book/alpha.claims.json", "cache/book/alpha.json"):
        shutil.copy(other / rel, build / rel)
    assert [c.verdict for c in load_claims(build / "executed") if c.id == "hardt-ma/x"] == ["refuted"]
    assert "confirmed" in (build / "executed" / "book" / "alpha.ipynb").read_text()
    err = _ledger_page_fails(root, build, capsys)
    assert "alpha.ipynb is not the notebook that the execution which wrote these claims recorded" in err, err
    executed = build / "executed"
    with pytest.raises(ClaimsFileError, match="another build"):
        verify_claims_files(executed, claims_files(executed), root)


def test_a_missing_claims_file_that_its_execution_wrote_fails_the_page(book_copy, capsys):
    root, build = book_copy
    claims = build / "executed" / "book" / "alpha.claims.json"
    claims.unlink()
    err = _ledger_page_fails(root, build, capsys)
    assert f"{claims}: missing, but executing book/alpha wrote it" in err, err


def test_an_execution_record_that_disagrees_with_its_page_is_refused(book_copy, capsys):
    root, build = book_copy
    record_path = cache_record_path(build, "book/alpha")
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "parameters": {"profile": "quick", "seed": 7}}))
    assert "ran with parameters {'profile': 'quick'}" in _ledger_page_fails(root, build, capsys)
    record_path.write_text(json.dumps({**record, "profile": "full"}))
    assert "does not say one profile and its parameters" in _ledger_page_fails(root, build, capsys)
    (build / "executed" / "book" / "alpha.ipynb").unlink()
    record_path.write_text(json.dumps(record))
    assert "alpha.ipynb is missing" in _ledger_page_fails(root, build, capsys)


# --- the page: re-check command, seeds -----------------------------------------------------------------------
def _record_seeds(build: Path, profile: str = "quick") -> None:
    """What ``python -m resnet_theory.claims verify --all --seeds 0 1 2 --record`` writes (its own writer)."""
    from resnet_theory.claims.cli import write_seeds_file

    summary = [
        {"id": "hardt-ma/x", "verdicts": ["confirmed", "confirmed", "refuted"], "seeds_agreeing": 2},
        {"id": "hardt-ma/y", "verdicts": ["not-checkable-here"] * 3, "seeds_agreeing": 3},
    ]
    write_seeds_file(build, profile, [0, 1, 2], summary)


def test_the_ledger_page_shows_the_recheck_command_and_how_many_seeds_agree(book_copy, capsys):
    root, build = book_copy
    _record_seeds(build)
    assert executor.main(["run", "book/ledger.md", "--root", str(root), "--build-dir", str(build)]) == 0
    page = _page_html(build)
    assert "python -m resnet_theory.claims verify hardt-ma/x" in page
    assert "seeds: 2 of 3 agree" in page and "seeds: 3 of 3 agree" in page and "Seeds not shown" not in page
    ledger = LedgerPage.from_build(build / "executed", root)
    x = ledger.links["hardt-ma/x"].seeds
    assert x.runs == (("seed 0", "confirmed"), ("seed 1", "confirmed"), ("seed 2", "refuted")) and x.agree == 2
    assert ledger.notes == []


def test_seeds_checked_at_another_profile_or_a_damaged_seeds_file_are_not_shown_and_the_page_says_so(book_copy):
    from resnet_theory.claims.cli import SEEDS_FILE

    root, build = book_copy
    _record_seeds(build, profile="full")
    page = LedgerPage.from_build(build / "executed", root)
    assert page.links["hardt-ma/x"].seeds is None
    assert page.notes == ["book/alpha: executed at profile quick, the seeds were checked at full"]
    assert "Seeds not shown" in page.section("claims").data
    for damaged in (
        "[]",
        "{}",
        '{"profile": "quick", "seeds": [0, 1], "claims": {"hardt-ma/x": {"verdicts": ["confirmed"]}}}',
    ):
        (build / SEEDS_FILE).write_text(damaged)
        page = LedgerPage.from_build(build / "executed", root)
        assert page.links["hardt-ma/x"].seeds is None and "is damaged" in page.notes[0], page.notes


def test_each_claim_links_to_its_evidence_function_at_the_built_commit():
    """A claim declared in resnet_theory.claims, run at the unit tests' size: its record names its function's
    file and line; the page links them into the repository (at the commit when the build knows it)."""
    from resnet_theory.claims.context import Context
    from resnet_theory.claims.registry import chapter_claims, find
    from resnet_theory.claims.run import run_claim, verify_command

    decl = find("hardt-ma/claim-2.3")
    record = run_claim(decl, Context.for_table(chapter_claims(decl.chapter).profile, "tiny")).record
    assert record.source_file == "resnet_theory/claims/linear.py" and record.source_line > 1
    commit = "0123456789abcdef0123456789abcdef01234567"
    label, url = source_links([record], Repository("owner", "repo", "main", commit), "lib")[record.id]
    assert label == f"resnet_theory/claims/linear.py:{record.source_line}"
    assert (
        url == f"https://github.com/owner/repo/blob/{commit}/lib/resnet_theory/claims/linear.py#L{record.source_line}"
    )
    assert source_links([record], Repository("owner", "repo", "dev"), "lib")[record.id][1].startswith(
        "https://github.com/owner/repo/blob/dev/lib/"
    )
    assert source_links([record], None, None)[record.id] == (label, None)
    links = {record.id: ClaimLinks(command=verify_command(record.id), source_label=label, source_url=url)}
    table = claims_table_html([record], links=links)
    assert f'<a class="claim-source" href="{url}"><code>{label}</code></a>' in table
    assert "python -m resnet_theory.claims verify hardt-ma/claim-2.3" in table
    assert "<code>" + label + "</code>" in claims_table_html(
        [record], links={record.id: ClaimLinks(source_label=label)}
    )
    with pytest.raises(ValueError, match="https address"):
        ClaimLinks(source_url="javascript:alert(1)")


# --- what rests on what ------------------------------------------------------------------------------------------
def _claims() -> list:
    """A corrected lemma A, a theorem B whose printed proof uses A, a proof-gap corollary C that uses B, and D."""
    ledger = Ledger("linear")
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    common = dict(paper="hardt-ma", control=bad, control_input=CI)
    ledger.claim(
        "hardt-ma/lemma-a",
        ref="Lemma A",
        statement="A",
        section="linear-a",
        printed=bad,
        corrected=ok,
        corrected_statement="A fixed",
        **common,
    )
    ledger.claim("hardt-ma/thm-b", ref="Theorem B", statement="B", section="linear-b", printed=ok, **common)
    ledger.claim(
        "hardt-ma/cor-c",
        ref="Corollary C",
        statement="C",
        section="linear-c",
        printed=ok,
        proof_step=bad,
        proof_step_statement="step",
        repair=ok,
        repair_statement="repaired",
        **common,
    )
    ledger.claim("hardt-ma/d", ref="D", statement="D", section="linear-d", printed=ok, **common)
    a, b, c, d = ledger.claims
    return [a, dataclasses.replace(b, rests_on=[a.id]), dataclasses.replace(c, rests_on=[b.id]), d]


def test_each_erratum_lists_the_results_whose_printed_proofs_rest_on_it_with_their_verdicts():
    claims = _claims()
    assert dependents(claims)["hardt-ma/lemma-a"] == [("hardt-ma/thm-b", None), ("hardt-ma/cor-c", "hardt-ma/thm-b")]
    assert dependents(claims)["hardt-ma/cor-c"] == [] and rests_on_defects(claims) == []
    errata = errata_html(claims)
    assert errata.count("<ul") == 1 and errata.count("<li>") == 2  # one flat list: a page splits it at </ul>
    lemma, corollary = errata.split("Corollary C</strong>: the statement")
    assert "2 results rest on it" in lemma and "Printed proofs that rest on it" in lemma
    assert '<a href="#claim-hardt-ma-thm-b"><code class="claim-id">hardt-ma/thm-b</code></a>' in lemma
    assert ">confirmed</span>" in lemma.split("hardt-ma/thm-b</code>")[1].split("</li>")[0]
    assert ">proof-gap</span>, as printed</span>)" in lemma and "through hardt-ma/thm-b" in lemma
    assert "hardt-ma/d" not in lemma
    assert "0 results rest on it" in corollary and "No printed proof of another result" in corollary
    # the forward edges, in the claim's details
    from bs4 import BeautifulSoup

    table = BeautifulSoup(claims_table_html(claims), "html.parser")
    assert "Its printed proof uses" in table.find("tr", id="claim-hardt-ma-thm-b").get_text()


def test_an_unknown_or_circular_rests_on_is_a_defect_the_page_refuses(tmp_path):
    a, b, c, d = _claims()
    unknown = [a, b, dataclasses.replace(c, rests_on=["hardt-ma/nowhere"]), d]
    assert rests_on_defects(unknown) == [
        "hardt-ma/cor-c: rests_on names 'hardt-ma/nowhere', which is no claim of the book"
    ]
    with pytest.raises(LedgerDefect, match="which is no claim of the book"):
        render_ledger(unknown)
    circular = [dataclasses.replace(a, rests_on=[c.id]), b, c, d]
    assert any("rest on each other" in line for line in rests_on_defects(circular))
    assert rests_on_defects([dataclasses.replace(d, rests_on=[d.id])]) == [
        "hardt-ma/d: rests_on names the claim itself"
    ]
    # and from a claims file
    ledger = Ledger("linear")
    ledger.claims = unknown
    ledger.save(tmp_path / "linear.claims.json")
    with pytest.raises(LedgerDefect, match="hardt-ma/nowhere"):
        published(tmp_path)


# --- safe math, every field escaped ---------------------------------------------------------------------------
ACTIVE = [
    r"$\href{javascript:alert(1)}{x}$",
    r"$\style{position:fixed;top:0;left:0;width:100%;height:100%}{x}$",
    r"$\class{x}{y}$",
    r"$\cssId{x}{y}$",
    r"$\data{onclick=alert(1)}{y}$",
    r"$\unicode{x41}$",
    r"$\require{html} x$",
    r"$\bbox[position:fixed]{x}$",
    r"$\def\h{\hre}\h f{x}{y}$",
    r"$x \url{javascript:alert(1)}$",
    r"$\mmlToken{mi}[onclick=alert(1)]{x}$",
    r"$\texttip{x}{y}$",
    r"$\enclose{circle}[style=\"position:fixed\"]{x}$",
]


@pytest.mark.parametrize("statement", ACTIVE)
def test_a_statement_cannot_make_a_link_a_style_or_a_script_through_its_math(statement, tmp_path):
    ledger = Ledger("linear")
    ledger.claim(
        "hardt-ma/x",
        paper="hardt-ma",
        ref="Theorem 1",
        statement=statement,
        section="linear-x",
        printed=Check.equal(1, 1, what="x"),
        control=Check.equal(1, 2, what="y"),
        control_input=CI,
    )
    assert any("would act on the page" in d for d in claim_defects(ledger.claims))
    with pytest.raises(UnsafeText, match="acts on the page"):
        text_html(statement)
    with pytest.raises(LedgerDefect):
        render_ledger(ledger.claims)
    with pytest.raises(LedgerDefect):
        ledger.show()  # the chapter stops before its table is shown
    ledger.save(tmp_path / "linear.claims.json")
    with pytest.raises(LedgerDefect, match="would act on the page"):
        published(tmp_path)
    skipped = [{"paper": "shamir", "ref": "r", "statement": statement, "why": "w", "chapter": "linear"}]
    with pytest.raises(UnsafeText):
        skipped_html(skipped)


def test_the_macros_of_mathjaxs_html_extension_are_all_refused():
    assert {"href", "style", "class", "cssId", "data", "unicode", "require"} <= UNSAFE_TEX
    assert text_html(r"$\hat\theta \le \frac{a}{b}$ and $\mathrm{se}$").count(r"\(") == 3


@pytest.mark.parametrize(
    "text",
    [
        r"$\Newextarrow{\xa}{5,5}{0x2192}\xa{x}$",  # extpfeil: defines a macro, like \def
        r"$\rule{200em}{200em}$",  # a black box of any size over the page, like \style
        r"$\kern-200em x$",  # math moved over the page's other text (left open by the issue 32 probe)
        r"$\mkern-900mu x$",
        r"$\hspace{-50em} x$",
        r"$\llap{fake text} x$",
    ],
)
def test_a_macro_that_defines_or_covers_the_page_is_refused(text):
    """Found by the issue 32 probe: these passed text_html and went to MathJax."""
    with pytest.raises(UnsafeText, match="acts on the page"):
        text_html(text)


def test_every_field_of_a_record_is_escaped_on_the_page():
    from bs4 import BeautifulSoup

    hostile = '"><script>alert(1)</script><a href="javascript:alert(2)" onmouseover="x">'
    ledger = Ledger("linear")
    ledger.claim(
        "hardt-ma/x" + hostile,
        paper="hardt-ma",
        ref="Theorem 1" + hostile,
        statement="s $a < b$" + hostile,
        section="linear-x",
        printed=Check.equal(1, 2, what="w" + hostile),
        corrected=Check.equal(1, 1, what="c" + hostile),
        corrected_statement="fixed" + hostile,
        control=Check.equal(1, 2, what="y" + hostile),
        control_input=CI + hostile,
    )
    claims = [dataclasses.replace(ledger.claims[0], source_detail=hostile, rests_on=None)]
    links = {claims[0].id: ClaimLinks(command="verify" + hostile, source_label="f.py" + hostile)}
    skipped = [{"paper": "shamir", "ref": hostile, "statement": hostile, "why": hostile, "chapter": "linear"}]
    page = errata_html(claims) + claims_table_html(claims, links=links) + skipped_html(skipped)
    soup = BeautifulSoup(page, "html.parser")
    assert not soup.find_all("script")
    assert not [a for tag in soup.find_all(True) for a in tag.attrs if a.lower().startswith("on")]
    assert all(a["href"].endswith(".html") or ".html#" in a["href"] or a["href"].startswith("#") for a in soup("a"))
    # a chapter or section that is not a plain name never becomes a link
    bad = dataclasses.replace(claims[0], chapter="javascript:alert(1)//")
    assert any("must be plain names" in d for d in claim_defects([bad]))
    with pytest.raises(LedgerDefect, match="must be plain names"):
        render_ledger([bad])
    for field, value in (("source_file", "../../etc/passwd.py"), ("source_line", 0), ("function", "x y")):
        assert claim_defects([dataclasses.replace(ledger.claims[0], chapter="linear", **{field: value})])


def test_a_chapter_run_at_its_own_profile_records_that_profile_and_is_published(book_copy, capsys):
    """``--profile full -p alpha:profile quick`` runs alpha at quick: its execution record says quick (not the
    run's full), so the record agrees with the parameters its page ran with and the ledger publishes it."""
    root, build = book_copy
    _execute(root, build, "--profile", "full", "-p", "alpha:profile", "quick", "--force")
    record = json.loads(cache_record_path(build, "book/alpha").read_text())
    assert record["profile"] == "quick" and record["parameters"]["profile"] == "quick"
    assert "hardt-ma/x" in _page_html(build)


# --- a ledger to navigate (issue 33): book order, grouped by paper, filters, errata, evidence, two-way links ------
def _mixed_claims() -> list:
    """Hand-made records of two chapters and three papers, in the order their claims files list them: a shamir
    claim of chapter "smooth" first, then chapter "linear" (a corrected Hardt-Ma theorem whose statement ends in
    a full stop, a Bartlett claim from a review, a Hardt-Ma proof gap)."""
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    smooth, linear = Ledger("smooth"), Ledger("linear")
    smooth.claim("shamir/thm-1", paper="shamir", ref="Theorem 1", statement="Every local minimum is good.",
                 section="smooth-a", printed=ok, control=bad, control_input=CI)  # fmt: skip
    linear.claim(
        "hardt-ma/thm-2.1",
        paper="hardt-ma",
        ref="Theorem 2.1, Section 2.",
        statement=r"For $\ell \ge 3\gamma$ the bound $\|A_i\| \le 2/\ell$ holds.",
        section="linear-a",
        printed=Check.at_most([3.0], 2.0, what=r"a target with $\det R < 0$: the norm $\|A_i\|$ against the bound"),
        corrected=ok,
        corrected_statement=r"With $\det R > 0$ added, the bound holds.",
        control=bad,
        control_input=CI,
    )
    linear.claim("bartlett-helmbold-long/lemma-1", paper="bartlett-helmbold-long", ref="Lemma 1", statement="A lemma.",
                 section="linear-b", printed=ok, control=bad, control_input=CI)  # fmt: skip
    linear.claim(
        "hardt-ma/cor-c",
        paper="hardt-ma",
        ref="Corollary C",
        statement="C holds.",
        section="linear-c",
        printed=ok,
        proof_step=bad,
        proof_step_statement="the printed step;",
        repair=ok,
        repair_statement="the polar split.",
        control=bad,
        control_input=CI,
    )
    review = dataclasses.replace(linear.claims[1], source="review", source_detail="a review")
    return [*smooth.claims, linear.claims[0], review, linear.claims[2]]


def test_the_ledger_lists_the_claims_in_book_order_chapters_as_the_toc_orders_them():
    from resnet_theory.book.ledger_page import book_order

    claims = _mixed_claims()
    ordered = book_order(claims, ["book/intro", "book/linear", "book/smooth", "book/ledger"])
    assert [c.id for c in ordered] == [
        "hardt-ma/thm-2.1",
        "bartlett-helmbold-long/lemma-1",
        "hardt-ma/cor-c",
        "shamir/thm-1",
    ]
    # a chapter the TOC does not name comes last; within a chapter, the chapter's own order
    assert [c.chapter for c in book_order(claims, ["book/smooth"])] == ["smooth", "linear", "linear", "linear"]


def test_the_claims_are_grouped_by_paper_in_book_order_with_filters_that_need_no_script():
    from bs4 import BeautifulSoup

    from resnet_theory.book.ledger_page import book_order

    claims = book_order(_mixed_claims(), ["book/linear", "book/smooth"])
    soup = BeautifulSoup(claims_table_html(claims), "html.parser")
    assert not soup.find_all("script") and "http" not in str(soup.find("style"))
    groups = soup.select("tbody.claims-paper")
    assert [g["data-paper"] for g in groups] == ["hardt-ma", "bartlett-helmbold-long", "shamir"]
    assert [[r["id"] for r in g.select("tr.claim-row")] for g in groups] == [
        ["claim-hardt-ma-thm-2-1", "claim-hardt-ma-cor-c"],
        ["claim-bartlett-helmbold-long-lemma-1"],
        ["claim-shamir-thm-1"],
    ]
    assert groups[0].find("th").get_text(" ", strip=True) == "Hardt & Ma (2017) (2 claims)"
    rows = {r["id"]: r for r in soup.select("tr.claim-row")}
    assert rows["claim-bartlett-helmbold-long-lemma-1"]["data-source"] == "review"
    assert rows["claim-hardt-ma-cor-c"]["data-verdict"] == "proof-gap"
    # one radio button per value present (and "all"), each with a label, each with a rule in the page's style
    radios = {(r["name"], r["id"]) for r in soup.select("input.claims-filter-input")}
    assert ("claims-filter-verdict", "claims-filter-verdict-refuted") not in radios
    style = soup.find("style").get_text()
    for _name, rid in radios:
        assert soup.find("label", attrs={"for": rid}), rid
        if not rid.endswith("-all"):
            assert f"#{rid}:checked~table tr.claim-row:not(" in style, rid
    assert {r for _, r in radios} >= {
        "claims-filter-paper-shamir",
        "claims-filter-verdict-corrected",
        "claims-filter-source-review",
        "claims-filter-source-all",
    }
    assert [r["id"] for r in soup.select("input[checked]")] == [
        "claims-filter-paper-all",
        "claims-filter-verdict-all",
        "claims-filter-source-all",
    ]
    assert "of 4 claims shown" in soup.select_one("p.claims-shown").get_text()


def _sentence_text(fragment: str) -> str:
    from bs4 import BeautifulSoup

    return " ".join(BeautifulSoup(fragment, "html.parser").get_text().split())


def test_each_erratum_is_one_sentence_with_the_printed_statement_and_the_counterexample_typeset():
    from bs4 import BeautifulSoup

    claims = _mixed_claims()
    soup = BeautifulSoup(errata_html(claims), "html.parser")
    sentences = [p.decode_contents() for p in soup.select("p.claims-erratum")]
    assert len(sentences) == 2
    corrected, gap = (_sentence_text(s) for s in sentences)
    assert corrected.startswith("Hardt & Ma (2017), Theorem 2.1, Section 2: the printed statement \u201cFor ")
    assert "fails on a counterexample the book computed (a target with" in corrected
    assert corrected.endswith(
        "what holds instead is \u201cWith \\(\\det R &gt; 0\\) added, the bound holds\u201d."
    ) or (corrected.endswith("added, the bound holds\u201d."))
    # the statement, the counterexample and the correction are typeset
    typeset = r'\\\(\\det R &lt;\\\) (<span class="math-nowrap"[^>]*>)?\\\(0\\\)'  # punctuation kept with its math
    assert sentences[0].count('class="mathjax_process"') >= 3 and re.search(typeset, sentences[0])
    assert gap.startswith("Hardt & Ma (2017), Corollary C: the statement \u201cC holds\u201d holds, but the printed")
    assert "\u201cthe printed step\u201d fails as written" in gap and "the repair \u201cthe polar split\u201d" in gap
    for text in (corrected, gap):
        assert not re.search(r"[.;:,]\s*[\u201d)]?\s*[.;:,]", text), f"doubled punctuation: {text}"
        outside = re.sub(r"\u201c[^\u201d]*\u201d|\([^()]*\)", "", text)
        assert len(re.findall(r"\.(\s|$)", outside)) == 1 and outside.endswith("."), f"not one sentence: {outside}"


def test_the_evidence_is_a_small_table_not_a_wall_of_numbers():
    from bs4 import BeautifulSoup

    from resnet_theory.ledger_html import evidence_table_html

    claims = _mixed_claims()
    table = BeautifulSoup(evidence_table_html(claims[1]), "html.parser")
    rows = [[cell.get_text(" ", strip=True) for cell in tr.find_all(["th", "td"])] for tr in table.select("tbody tr")]
    assert [r[:2] for r in rows] == [
        ["statement as printed", "fails"],
        ["corrected statement", "holds"],
        ["control", "fails, as it must"],
    ]
    gap = BeautifulSoup(evidence_table_html(claims[3]), "html.parser")
    assert [tr.th.get_text() for tr in gap.select("tbody tr")] == [
        "statement as printed",
        "proof step as printed",
        "repair",
        "control",
    ]
    row = claims_table_html(claims[1:2])
    assert "claim-evidence-parts" in row and " | " not in BeautifulSoup(row, "html.parser").get_text()
    # a combined check's parts on lines of their own, never inside parentheses
    from resnet_theory.ledger_html import _lines

    assert _lines("all: a (b; c); d") == "all: a (b; c)<br>d"


def test_each_claim_links_to_its_chapter_section_and_the_chapter_table_back_to_its_ledger_row():
    from bs4 import BeautifulSoup

    claims = _mixed_claims()
    ledger = BeautifulSoup(claims_table_html(claims), "html.parser")
    chapter = BeautifulSoup(claims_table_html(claims, link=False), "html.parser")
    for c in claims:
        row = ledger.find("tr", id=claim_anchor(c.id))
        assert row.find("a", href=f"{c.chapter}.html#{c.section}"), c.id
        back = chapter.find("a", href=f"ledger.html#{claim_anchor(c.id)}")
        assert back and back.get_text() == "ledger", c.id
    assert not chapter.find("tr", id=True) and not chapter.find("input")  # the chapter's table has no filters


# --- issue 31, item 1: every verdict says what it was checked against -------------------------------------------
PAPERWHY = "the PaperWhy review of Hardt & Ma"


def _sourced_claims() -> list:
    """Hand-made records, one per source: a printed correction of Hardt & Ma, a correction of the PaperWhy
    review's statement of Hardt & Ma, an abstract confirmation of Bartlett-Helmbold-Long, a reconstruction of He
    et al., a refuted question of the book's own on Hardt & Ma's setting, and a text the build lacks."""
    ledger = Ledger("linear")
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    common = dict(control=bad, control_input=CI, printed=ok)
    fixed = dict(printed=bad, corrected=ok, corrected_statement="the fixed statement")
    ledger.claim("hardt-ma/p", paper="hardt-ma", ref="Theorem P", statement="P holds", section="s-p",
                 **{**common, **fixed})  # fmt: skip
    ledger.claim("hardt-ma/r", paper="hardt-ma", ref="Theorem R as the review states it", statement="R holds",
                 section="s-r", source="review", **{**common, **fixed})  # fmt: skip
    ledger.claim("bartlett-helmbold-long/a", paper="bartlett-helmbold-long", ref="abstract", statement="A holds",
                 section="s-a", source="abstract", **common)  # fmt: skip
    ledger.claim("he-et-al/c", paper="he-et-al", ref="Section 4.1", statement="C holds", section="s-c",
                 source="reconstruction", **common)  # fmt: skip
    ledger.claim("hardt-ma/q", paper="hardt-ma", ref="Section 4 (the book's question)", statement="Q holds",
                 section="s-q", source="question", **{**common, "printed": bad})  # fmt: skip
    ledger.not_checkable("bartlett-evans-long/t", paper="bartlett-evans-long", ref="Main theorem",
                         statement="its constants", section="s-t", reason="the build lacks the paper's text",
                         needs="the paper's full text")  # fmt: skip
    p, r, a, c, q, t = ledger.claims
    return [p, dataclasses.replace(r, source_detail=PAPERWHY), a, c, q, t]


def test_a_verdict_label_says_whose_statement_it_was_checked_against():
    from resnet_theory.record import verdict_label

    assert verdict_label("confirmed", "paper") == "confirmed, as printed"
    # evidence from the book's scaled-down analogue of an experiment: the label says so, not only "checked against",
    # read from the record's own field, never from the detail's wording
    from resnet_theory.claims.registry import find

    on_digits = verdict_label("confirmed", "paper", "the digits", on_analogue=True)
    assert on_digits == "confirmed, as printed, on the book's analogue"
    worded = "the printed statement, tested on the book's analogue (digits)"
    assert verdict_label("confirmed", "paper", worded) == "confirmed, as printed"
    with pytest.raises(ValueError, match="only a printed statement"):
        verdict_label("confirmed", "abstract", "the digits", on_analogue=True)
    for cid in ("hardt-ma/sec4-small-init", "hardt-ma/sec4-identity-trains-without-bn", "hardt-ma/sec4-fixed-head"):
        assert find(cid).source.on_analogue and find(cid).source.kind == "printed", cid
    assert verdict_label("confirmed", "abstract") == "confirmed, as the abstract states it"
    assert verdict_label("corrected", "review", PAPERWHY) == "corrected, as the PaperWhy review states it"
    # an abstract's or a review's statement made precise by a review its detail names says so (Arora et al.'s radius)
    near = find("bartlett-helmbold-long/near-identity").source
    assert verdict_label("confirmed", near.ledger_key, near.detail) == (
        "confirmed, as the abstract states it, made precise by the restatement by Arora et al."
    )
    talk = "the notes on Bartlett's 2017 talk (review 002)"
    assert verdict_label("confirmed", "review", talk) == "confirmed, as the review of Bartlett's talk states it"
    assert verdict_label("confirmed", "review", f"{talk}; hypotheses from MathOverflow question 310744") == (
        "confirmed, as the review of Bartlett's talk states it, made precise by the MathOverflow quotation"
    )
    for cid in ("bartlett-evans-long/representation-rate-inverse-m", "bartlett-evans-long/representation-rate"):
        source = find(cid).source  # both rest on MathOverflow's quotation of Theorem 1's hypotheses
        assert verdict_label("confirmed", source.ledger_key, source.detail).endswith(
            ", made precise by the MathOverflow quotation"
        ), cid
    assert verdict_label("confirmed", "reconstruction") == "confirmed (our reconstruction)"
    assert verdict_label("refuted", "question") == "the book's finding: refuted"
    with pytest.raises(ValueError, match="unknown source 'blog'"):
        verdict_label("confirmed", "blog")
    p, r, a, c, q, t = _sourced_claims()
    assert [x.label for x in (p, r, a, c, q, t)] == [
        "corrected, as printed",
        "corrected, as the PaperWhy review states it",
        "confirmed, as the abstract states it",
        "confirmed (our reconstruction)",
        "the book's finding: refuted",
        "not-checkable-here, as printed",
    ]


def test_the_label_is_shown_in_the_ledger_the_chapter_table_and_the_evidence_table():
    from bs4 import BeautifulSoup

    from resnet_theory.claims.chapter import evidence_html
    from resnet_theory.claims.run import ClaimRun

    claims = _sourced_claims()
    for table in (claims_table_html(claims, link=True), claims_table_html(claims, link=False)):
        labels = [td.get_text() for td in BeautifulSoup(table, "html.parser").select("td > .claim-verdict-label")]
        assert "corrected, as the PaperWhy review states it" in labels
        assert "confirmed, as the abstract states it" in labels and "confirmed (our reconstruction)" in labels
    chapter_table = BeautifulSoup(claims_table_html(claims, link=False), "html.parser").get_text()
    assert "the book's finding: refuted" in chapter_table  # a chapter's table shows its own questions as findings
    shown = BeautifulSoup(evidence_html(ClaimRun(None, claims[1], None)), "html.parser").get_text()
    assert "corrected, as the PaperWhy review states it" in shown
    assert "references.bib: paperwhy2017identity" in shown and PAPERWHY in shown


def test_the_counts_cover_only_what_each_paper_prints_each_source_on_its_own_row():
    from resnet_theory.ledger_html import counts_table_html, verdict_counts

    claims = _sourced_claims()
    counts = verdict_counts(claims)
    # the review's correction is counted under the review, never charged to Hardt & Ma's printed text
    assert counts["Hardt & Ma (2017)"]["corrected"] == 1
    assert counts["Hardt & Ma (2017), as the PaperWhy review states it"]["corrected"] == 1
    assert counts["Bartlett, Helmbold & Long (2018), as the abstract states it"]["confirmed"] == 1
    assert "Bartlett, Helmbold & Long (2018)" not in counts  # it prints nothing the book checked
    assert counts["He, Zhang, Ren & Sun (2016), our reconstruction"]["confirmed"] == 1
    # the book's own question is in no paper's counts, nor in the total
    assert counts["total"]["refuted"] == 0 and sum(counts["total"].values()) == 5
    assert not any(row["refuted"] for row in counts.values())
    page = counts_table_html(claims)
    assert 'data-source="review"' in page and 'data-bibkey="paperwhy2017identity"' in page
    assert "Not counted: 1 finding of the book's own questions" in page


def test_the_books_own_questions_are_findings_in_their_own_part_never_a_verdict_on_the_paper():
    from bs4 import BeautifulSoup

    from resnet_theory.ledger_html import findings_html

    claims = _sourced_claims()
    errata = errata_html(claims)
    assert "hardt-ma/q" not in errata and "Q holds" not in errata
    table = claims_table_html(claims, link=True)
    assert 'id="claim-hardt-ma-q"' not in table and table.count('<tr id="claim-') == len(claims) - 1
    found = findings_html(claims)
    text = BeautifulSoup(found, "html.parser").get_text()
    assert 'id="claim-hardt-ma-q"' in found and "the book's finding: refuted" in text and "Q holds" in text
    page = render_ledger(claims).data
    assert page.count('id="claim-hardt-ma-q"') == 1 and "The book's findings" in page
    assert "No finding of the book" in findings_html(claims[:2])


def test_an_erratum_of_a_review_says_so_cites_it_and_stands_apart_from_the_papers_errata():
    from bs4 import BeautifulSoup

    claims = _sourced_claims()
    soup = BeautifulSoup(errata_html(claims), "html.parser")
    papers, others = soup.select("ul.claims-errata:not(.claims-errata-others)"), soup.select("ul.claims-errata-others")
    assert len(papers) == 1 and len(others) == 1
    assert "the printed statement" in papers[0].get_text() and "P holds" in papers[0].get_text()
    review = others[0].get_text()
    assert "the statement as the PaperWhy review states it" in review and "printed statement" not in review
    assert others[0].select_one('cite[data-bibkey="paperwhy2017identity"] a[href="references.html"]')


def test_every_review_a_claim_rests_on_is_in_the_references_and_cited_where_the_ledger_names_it():
    import re

    from resnet_theory.claims.registry import all_claims
    from resnet_theory.record import REVIEWS, review_name

    bib = (Path(__file__).resolve().parents[1] / "references.bib").read_text()
    entries = {m.group(1): m.group(0) for m in re.finditer(r"@\w+\{([^,]+),[^@]+", bib)}
    for name, review in REVIEWS.items():
        assert review.bibkey in entries, f"{name}: no {review.bibkey} in references.bib"
        assert "http" not in entries[review.bibkey], "no address the book has not verified"
    for decl in all_claims():  # every review the chapters name is one of them (its name, then "; " and more)
        if decl.source.kind == "review":
            assert review_name(decl.source.detail) in REVIEWS, decl.id
    # the ledger's details cite it, linked to the References page
    details = claims_table_html(_sourced_claims(), link=True)
    assert 'data-bibkey="paperwhy2017identity"><a href="references.html"' in details
    # a review the References do not cite cannot be published
    stray = dataclasses.replace(_sourced_claims()[1], source_detail="a blog post")
    assert any("a review the References do not cite" in d for d in claim_defects([stray]))
    with pytest.raises(LedgerDefect, match="References do not cite"):
        render_ledger([stray])


def test_a_review_that_makes_a_statement_precise_is_cited_named_in_the_label_and_counted_under_its_source():
    from bs4 import BeautifulSoup

    from resnet_theory.claims.registry import find
    from resnet_theory.ledger_html import count_rows, source_html

    p, r, a, *_ = _sourced_claims()
    talk = "the notes on Bartlett's 2017 talk (review 002)"
    on_abstract = find("bartlett-evans-long/representation-rate-inverse-m").source.detail
    on_talk = find("bartlett-evans-long/representation-rate").source.detail
    assert on_talk.startswith(talk + "; ")  # both rest on MathOverflow's quotation of Theorem 1's hypotheses
    abstract = dataclasses.replace(a, paper="bartlett-evans-long", source_detail=on_abstract)
    made_precise = dataclasses.replace(
        r, id="bartlett-evans-long/r1", paper="bartlett-evans-long", source_detail=on_talk
    )
    plain = dataclasses.replace(r, id="bartlett-evans-long/r2", paper="bartlett-evans-long", source_detail=talk)
    for c in (abstract, made_precise):
        assert c.label.endswith(", made precise by the MathOverflow quotation"), c.id
        cited = BeautifulSoup(source_html(c), "html.parser").select('cite[data-bibkey="mathoverflow310744"]')
        assert len(cited) == 1 and cited[0].a["href"] == "references.html", c.id
        assert not claim_defects([c]), c.id
    # the talk's review is cited beside MathOverflow, and both claims resting on the talk are counted on its row
    assert BeautifulSoup(source_html(made_precise), "html.parser").select('cite[data-bibkey="debenito2017talk"]')
    rows = [(paper, source, detail) for paper, source, detail, _ in count_rows([p, abstract, made_precise, plain])]
    assert rows == [("hardt-ma", "paper", None), ("bartlett-evans-long", "abstract", None),
                    ("bartlett-evans-long", "review", talk)]  # fmt: skip
    # a detail that names a review only in passing is no review source
    stray = dataclasses.replace(plain, source_detail=f"a blog post; {talk}")
    assert any("a review the References do not cite" in d for d in claim_defects([stray]))


def test_not_checkable_here_covers_hardware_data_and_a_text_as_the_page_defines_it():
    import re

    from resnet_theory.claims.registry import all_claims
    from resnet_theory.claims.spec import NotCheckable

    page = (Path(__file__).resolve().parents[1] / "book" / "ledger.md").read_text()
    definition = re.search(r"^not-checkable-here\n: (.+?)\n\n", page, re.M | re.S).group(1)
    kinds = {"hardware": ("GPU", "hardware"), "data": ("data", "archives", "ImageNet"), "text": ("text",)}
    for kind, words in kinds.items():
        assert kind in definition and any(w in definition for w in words), kind
    needs = {d.id: d.needs for d in all_claims() if isinstance(d, NotCheckable)}
    assert "the paper's full text" in needs["bartlett-evans-long/constants"]
    for cid, need in needs.items():
        assert any(w.lower() in need.lower() for ws in kinds.values() for w in ws) or "printed" in need, cid


def test_the_evidence_table_names_the_statement_by_its_source():
    from bs4 import BeautifulSoup

    from resnet_theory.ledger_html import evidence_table_html

    def parts(c):
        return [th.get_text() for th in BeautifulSoup(evidence_table_html(c), "html.parser").select("tbody th")]

    p, r, a, c, q, _ = _sourced_claims()
    assert parts(p)[0] == "statement as printed"
    assert parts(r)[0] == "statement, as the PaperWhy review states it"
    assert parts(a)[0] == "statement, as the abstract states it"
    assert parts(c)[0] == "statement (our reconstruction)"
    assert parts(q)[0] == "the book's question"


def test_the_chapters_evidence_card_names_the_statement_by_its_source_as_the_ledger_does():
    """The card a chapter shows under each claim's call once said "printed: holds" for a statement the abstract, a
    review or the book gives: it names each part as the ledger's evidence table does."""
    from bs4 import BeautifulSoup

    from resnet_theory.claims.chapter import evidence_html
    from resnet_theory.claims.run import ClaimRun

    def parts(c):
        shown = BeautifulSoup(evidence_html(ClaimRun(None, c, None)), "html.parser")
        return [th.get_text() for th in shown.select("th")][2:-2]  # after statement, checked against

    p, r, a, c, q, _ = _sourced_claims()
    assert parts(p)[0].startswith("statement as printed: ")
    assert parts(r)[0].startswith("statement, as the PaperWhy review states it: ")
    assert parts(a)[0].startswith("statement, as the abstract states it: ")
    assert parts(c)[0].startswith("statement (our reconstruction): ")
    assert parts(q)[0].startswith("the book's question: ")
    assert not any(name.startswith("printed") for x in (r, a, c, q) for name in parts(x))


def test_a_partial_build_leaves_out_what_its_claims_rest_on_elsewhere_but_not_unknown_ids():
    """``execute --only book/linear``: linear's claims rest on Claims C.1 and C.2 of the expressivity chapter,
    which this build did not execute; the page leaves those ids out instead of refusing the build. An id no
    claims module declares is kept, and the page refuses it."""
    from dataclasses import replace as _replace

    from resnet_theory.book.ledger_page import within_build
    from resnet_theory.record import rests_on_defects

    base = _mixed_claims()[0]
    elsewhere = _replace(base, id="hardt-ma/thm-2.1", rests_on=["hardt-ma/claim-c.1", "hardt-ma/claim-2.3"])
    assert within_build([elsewhere])[0].rests_on is None
    unknown = _replace(base, id="hardt-ma/thm-2.1", rests_on=["hardt-ma/no-such-claim"])
    kept = within_build([unknown])
    assert kept[0].rests_on == ["hardt-ma/no-such-claim"] and rests_on_defects(kept)
