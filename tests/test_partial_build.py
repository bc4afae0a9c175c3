"""One chapter on its own: ``execute --only`` in a fresh build folder, the status page of a run whose HTML build
failed, the verdicts ``run`` prints, and the claims file ``run -o`` writes beside its notebook."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import yaml

from resnet_theory.book.cli import main

from conftest import MYST_HEADER, run_execute

IN_PROCESS = MYST_HEADER.replace("kernelspec:", "resnet_theory:\n  execution: in-process\nkernelspec:", 1)

PARAMS = '```{code-cell} ipython3\n:tags: [parameters]\nprofile = "quick"\nseed = 0\n```\n'

STATUS = (
    IN_PROCESS
    + "\n# Status\n\n```{code-cell} ipython3\n:tags: [parameters, remove-cell]\n"
    + 'profile: str = "quick"\nseed: int = 0\n```\n\n'
    + "```{code-cell} ipython3\nfrom resnet_theory.book.status import render_status\n\nrender_status()\n```\n"
)

CLAIMS_CELL = """```{code-cell} ipython3
from resnet_theory.ledger import Ledger
from resnet_theory.verdicts import Check

ledger = Ledger("claimy")
for cid, value in (("t/holds", 0.5), ("t/fails", 1.5)):
    ledger.claim(
        cid,
        paper="hardt-ma",
        ref="Theorem 2.1",
        statement="value at most the bound",
        section="claimy-sec",
        printed=Check.at_most([value], 1.0, what="value"),
        control_input="a value ten times over the bound, which the claim rules out",
        control=Check.at_most([value], value / 10, what="value, bound cut tenfold"),
    )
ledger.save()
```
"""


def write_book(root: Path, pages: dict[str, str]) -> Path:
    """A book whose first page is its root and whose last part, "Record", holds the status page."""
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text(
        "title: test book\nexecute:\n  execute_notebooks: 'off'\nsphinx:\n  config:\n    exclude_patterns: [_build]\n"
    )
    entries = list(pages)
    toc = {
        "format": "jb-book",
        "root": f"book/{entries[0]}",
        "parts": [
            {"caption": "Reviews", "chapters": [{"file": f"book/{e}"} for e in entries[1:] if e != "status"]},
            {"caption": "Record", "chapters": [{"file": "book/status"}]},
        ],
    }
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    for name, text in pages.items():
        (root / "book" / f"{name}.md").write_text(text)
    return root


def intro(*chapters: str) -> str:
    return "# Intro\n\nThe chapters: " + ", ".join(f"{{doc}}`{c.title()} <{c}>`" for c in chapters) + ".\n"


@pytest.fixture
def linked_book(tmp_path):
    """Two chapters that link to each other (``{doc}`` and ``{ref}``), a root page linking to both, a status page."""
    good = (
        MYST_HEADER + "\n# Good\n\nSee {doc}`the other chapter <other>` and its {ref}`section <other-sec>`.\n\n"
        f"{PARAMS}\n```{{code-cell}} ipython3\nprint('seed is', seed)\n```\n"
    )
    other = (
        MYST_HEADER + "\n# Other\n\n(other-sec)=\n## A section\n\n"
        f"{PARAMS}\n```{{code-cell}} ipython3\nprint('other')\n```\n"
    )
    return write_book(
        tmp_path / "src", {"intro": intro("good", "other"), "good": good, "other": other, "status": STATUS}
    )


def test_one_chapter_at_a_new_seed_renders_on_its_own_in_a_fresh_build_folder(linked_book, tmp_path, capfd):
    """``execute --only book/good -p seed 3`` into an empty build folder: the root and status pages are built
    with it, the TOC lists what exists, links to the chapter left out are plain text, and the status page shows
    no injected parameters block (its own parameters cell is hidden)."""
    build = tmp_path / "NEW"
    code = run_execute(linked_book, build, "--only", "book/good", "-p", "seed", "3", html=True)
    out = capfd.readouterr()
    assert code == 0, out.err[-3000:]
    assert "WARNING" not in out.out + out.err
    html = build / "html"
    assert (html / "index.html").is_file() and (html / "book" / "good.html").is_file()
    assert (html / "book" / "status.html").is_file() and not (html / "book" / "other.html").exists()
    staged = yaml.safe_load((build / "executed" / "_toc.yml").read_text())
    assert [c["file"] for p in staged["parts"] for c in p["chapters"]] == ["book/good", "book/status"]
    assert "leaves out the pages never executed in this build folder (links to them are plain text): book/other" in (
        out.out
    )
    page = (html / "book" / "good.html").read_text()
    assert "seed is 3" in page and "the other chapter" in page and "other.html" not in page
    assert "Other" in (html / "book" / "intro.html").read_text()
    status = (html / "book" / "status.html").read_text()
    assert "injected-parameters" not in status and "seed=3" in status
    # The chapter keeps its injected cell: it ran with a value other than its default.
    assert "injected-parameters" in page


def test_the_status_page_says_the_run_failed_when_its_html_build_failed(tmp_path, capfd):
    """A chapter whose page has a broken link: every page executes, the HTML build fails, the command exits 1; the
    status page says the run failed (it was rendered before the HTML build, from a run that had not failed) and
    the report says why. A partial build does not excuse a reference to a page that does not exist."""
    broken = MYST_HEADER + f"\n# Broken\n\nSee {{doc}}`nowhere`.\n\n{PARAMS}\n```{{code-cell}} ipython3\nx = 1\n```\n"
    root = write_book(
        tmp_path / "src",
        {"intro": intro("broken"), "broken": broken, "later": MYST_HEADER + "# Later\n\nNo code.\n", "status": STATUS},
    )
    build = tmp_path / "NEW"
    code = run_execute(root, build, "--only", "book/broken", html=True)
    out = capfd.readouterr()
    assert code == 1
    assert "unknown document: 'nowhere'" in out.out + out.err
    assert "[book] FAILED: the HTML build (exit 1); the status page says so" in out.err
    report = json.loads((build / "executed" / "report.json").read_text())
    assert report["state"] == "failed" and report["attempt"]["html_exit"] == 1
    assert all(c["status"] in ("ok", "static") for c in report["chapters"])
    nb = nbformat.read(build / "executed" / "book" / "status.ipynb", as_version=4)
    shown = json.dumps([o for c in nb.cells for o in c.get("outputs", [])])
    assert "The last run failed." in shown and "Its HTML build failed (exit 1" in shown
    assert "Its HTML build failed (exit 1" in (build / "html" / "book" / "status.html").read_text()


def claims_book(tmp_path: Path, in_process: bool = False) -> Path:
    header = IN_PROCESS if in_process else MYST_HEADER
    claimy = header + f"\n# Claimy\n\n(claimy-sec)=\n## Claims\n\n{PARAMS}\n{CLAIMS_CELL}"
    return write_book(tmp_path / "src", {"intro": intro("claimy"), "claimy": claimy, "status": STATUS})


def run(root: Path, out: Path, build: Path) -> int:
    return main(
        ["run", str(root / "book" / "claimy.md"), "--root", str(root), "-o", str(out), "--build-dir", str(build)]
    )


def test_run_prints_the_verdicts_it_recorded(tmp_path, capsys):
    root = claims_book(tmp_path)
    out = tmp_path / "out" / "x.ipynb"
    assert run(root, out, tmp_path / "b") == 0
    lines = capsys.readouterr().out.splitlines()
    claims = out.with_name("x.claims.json")
    assert f"[book] verdicts recorded in {claims} (2 claims):" in lines
    assert [line.split() for line in lines if line.startswith("  t/")] == [
        ["t/holds", "confirmed"],
        ["t/fails", "refuted"],
    ]


def test_run_o_refuses_a_claims_file_beside_it_that_it_did_not_write(tmp_path, capsys):
    """``run -o DIR/x.ipynb`` writes (or removes) ``DIR/x.claims.json``: a file of that name that an earlier run
    of the chapter did not write is refused before anything runs, and left as it was."""
    root = claims_book(tmp_path, in_process=True)
    out = tmp_path / "out" / "x.ipynb"
    claims = out.with_name("x.claims.json")
    claims.parent.mkdir()
    for text, why in (
        ("my own notes\n", "it is not a claims file"),
        ('{"chapter": "linear", "claims": []}', "it is a claims file of chapter 'linear', not of 'claimy'"),
    ):
        claims.write_text(text)
        assert run(root, out, tmp_path / "b") == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: -o: the run writes its claims to ") and why in err
        assert claims.read_text() == text and not out.exists()
    claims.unlink()
    assert run(root, out, tmp_path / "b") == 0
    first = json.loads(claims.read_text())
    assert first["chapter"] == "claimy" and len(first["claims"]) == 2
    # The file an earlier run wrote is the executor's: the next run replaces it.
    assert run(root, out, tmp_path / "b") == 0
    assert json.loads(claims.read_text()) == first
