"""The book executor on small temporary books: failures named, parameters injected, report written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest

from resnet_theory import book
from resnet_theory.status import status_html

HEADER = textwrap.dedent("""\
    ---
    jupytext:
      text_representation:
        extension: .md
        format_name: myst
    kernelspec:
      display_name: Python 3
      language: python
      name: python3
    ---
    """)


def chapter(title: str, params: str, *cells: str) -> str:
    body = [HEADER, f"# {title}\n", "```{code-cell} ipython3\n:tags: [parameters]\n" + params + "\n```\n"]
    body += [f"```{{code-cell}} ipython3\n{c}\n```\n" for c in cells]
    return "\n".join(body)


def make_book(root: Path, chapters: dict[str, str]) -> Path:
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text("title: test book\nexecute:\n  execute_notebooks: 'off'\n"
                                      "sphinx:\n  config:\n    exclude_patterns: [_build]\n")
    entries = list(chapters)
    toc = "format: jb-book\nroot: book/" + entries[0] + "\nchapters:\n" + "".join(f"  - file: book/{e}\n" for e in entries[1:])
    (root / "_toc.yml").write_text(toc)
    for name, text in chapters.items():
        (root / "book" / f"{name}.md").write_text(text)
    return root


@pytest.fixture
def small_book(tmp_path):
    return make_book(tmp_path / "src", {
        "intro": "# Intro\n\nNo code here.\n",
        "good": chapter("Good", 'profile = "quick"\nseed = 0\nn = 1', "print('n times two =', n * 2)"),
        "bad": chapter("Bad", 'profile = "quick"\nseed = 0', "x = 1", "raise RuntimeError('deliberate failure')",
                       "print('never reached')"),
        "after": chapter("After", 'profile = "quick"\nseed = 0', "print('still executed')"),
    })


def outputs(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_failing_chapter_is_named_with_its_cell_and_others_still_run(small_book, tmp_path, capsys):
    build = tmp_path / "build"
    code = book.main(["execute", "--root", str(small_book), "--build-dir", str(build), "--no-html"])
    assert code == 1
    captured = capsys.readouterr()
    err = captured.err
    summary = [line.split() for line in captured.out.splitlines()]
    assert ["book/good", "ok"] == summary[[row[:1] for row in summary].index(["book/good"])][:2]
    assert ["book/bad", "failed"] == summary[[row[:1] for row in summary].index(["book/bad"])][:2]
    assert any(row[:1] == ["total"] for row in summary)
    assert "book/bad.md failed in code cell 3" in err and "RuntimeError: deliberate failure" in err
    report = json.loads((build / "executed" / "report.json").read_text())
    status = {c["chapter"]: c for c in report["chapters"]}
    assert status["book/intro"]["status"] == "static"
    assert status["book/good"]["status"] == "ok"
    assert status["book/after"]["status"] == "ok"
    bad = status["book/bad"]
    assert bad["status"] == "failed"
    assert bad["error"]["ename"] == "RuntimeError"
    assert "raise RuntimeError" in bad["error"]["cell_source"]
    # The failing cell is named by its place among the chapter's own code cells (parameters cell = 1).
    assert bad["error"]["code_cell"] == 3
    assert "still executed" in outputs(build / "executed" / "book" / "after.ipynb")
    for entry in status.values():
        assert entry["profile"] == "quick" and entry["device"]
        assert entry["seconds"] >= 0
    page = status_html(report)
    assert "book/bad" in page and "failed" in page and "code cell 3: RuntimeError: deliberate failure" in page
    assert report["environment"]["python"] and "torch" in report["environment"]["packages"]


def test_parameters_reach_the_notebook(small_book, tmp_path):
    out = tmp_path / "good.ipynb"
    code = book.main(["run", str(small_book / "book" / "good.md"), "--root", str(small_book), "-p", "n", "21",
                      "-o", str(out), "--build-dir", str(tmp_path / "b")])
    assert code == 0
    assert "n times two = 42" in outputs(out)
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 21" in injected[0].source
    # A value other than the default stays visible on the rendered page ...
    assert "remove-cell" not in injected[0].metadata["tags"]
    # ... while a run with the defaults hides the cell that only restates them.
    default_out = tmp_path / "default.ipynb"
    assert book.main(["run", str(small_book / "book" / "good.md"), "--root", str(small_book), "-o", str(default_out),
                      "--build-dir", str(tmp_path / "b")]) == 0
    nb = nbformat.read(default_out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert "remove-cell" in injected[0].metadata["tags"]


def test_scoped_parameter_and_profile_reach_only_their_chapter(small_book, tmp_path):
    plans = book.plan_chapters(small_book, ["book/good", "book/after"], "full", [("good:n", "3")])
    assert plans[0].parameters == {"profile": "full", "n": 3}
    assert plans[1].parameters == {"profile": "full"}


@pytest.mark.parametrize("argv, message", [
    (["execute", "--profile", "huge"], "unknown profile 'huge'"),
    (["execute", "-p", "nonexistent", "1"], "no chapter in this run defines 'nonexistent'"),
    (["execute", "-p", "good:seedz", "1"], "does not define 'seedz'"),
    (["execute", "-p", "nochapter:n", "1"], "no chapter 'nochapter'"),
    (["run", "book/missing.md"], "is not a chapter"),
    (["run", "book/good.md", "-p", "m", "2"], "does not define 'm'"),
])
def test_bad_requests_fail_before_anything_runs(small_book, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(small_book)
    build = tmp_path / "build"
    code = book.main(argv + ["--build-dir", str(build)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (build / "executed").exists()


def test_chapter_without_required_parameters_is_rejected(tmp_path, capsys):
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "noseed": chapter("No seed", 'profile = "quick"', "1")})
    code = book.main(["execute", "--root", str(root), "--build-dir", str(tmp_path / "b"), "--no-html"])
    assert code == 2
    assert "missing seed" in capsys.readouterr().err


def test_figures_survive_an_agg_backend_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "plot": chapter(
        "Plot", 'profile = "quick"\nseed = 0', "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()")})
    out = tmp_path / "plot.ipynb"
    assert book.main(["run", str(root / "book" / "plot.md"), "--root", str(root), "-o", str(out),
                      "--build-dir", str(tmp_path / "b")]) == 0
    nb = nbformat.read(out, as_version=4)
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_html_is_built_from_executed_notebooks_with_warnings_as_errors(small_book, tmp_path):
    (small_book / "book" / "bad.md").unlink()
    (small_book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/good\n")
    build = tmp_path / "build"
    assert book.main(["execute", "--root", str(small_book), "--build-dir", str(build)]) == 0
    page = (build / "html" / "book" / "good.html").read_text()
    assert "n times two = 2" in page
    # A reference to a missing target is a warning; -W turns it into a failed build.
    (small_book / "book" / "intro.md").write_text("# Intro\n\nSee {ref}`no-such-label`.\n")
    assert book.main(["execute", "--root", str(small_book), "--build-dir", str(build)]) == 1
