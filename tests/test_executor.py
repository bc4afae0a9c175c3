"""The book executor on small temporary books: failures named, parameters injected, report written."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import nbformat
import pytest

from resnet_theory.book.cache import cache_components, cache_key, cache_record_path
from resnet_theory.book.cli import main
from resnet_theory.book.environment import environment
from resnet_theory.book.execute import kernel_manager_class, partial_paths, remove_stale_partials
from resnet_theory.book.files import file_sha, write_atomic
from resnet_theory.book.imports import ModuleIndex
from resnet_theory.book.plan import plan_chapters, select_entries
from resnet_theory.book.report import ChapterResult, write_report
from resnet_theory.book.status import status_html
from resnet_theory.book.toc import BookError, toc_files

from conftest import MYST_HEADER, ROOT, run_execute

HEADER = MYST_HEADER

# The chapters of this file's books execute one at a time, in this process's kernels (run_execute's default, one
# job): what is tested here is what one chapter's execution does (its failures, parameters, cache, records, pages),
# not chapters running side by side in worker processes (``--jobs 2``, the default on two cores), which
# tests/test_side_by_side.py covers and test_cache_reruns_exactly_what_changed and the interrupted-run tests here
# still take. A worker process per chapter would cost a Python start and the executor's imports each time.


def chapter(title: str, params: str, *cells: str) -> str:
    body = [HEADER, f"# {title}\n", "```{code-cell} ipython3\n:tags: [parameters]\n" + params + "\n```\n"]
    body += [f"```{{code-cell}} ipython3\n{c}\n```\n" for c in cells]
    return "\n".join(body)


def make_book(root: Path, chapters: dict[str, str]) -> Path:
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text(
        "title: test book\nexecute:\n  execute_notebooks: 'off'\nsphinx:\n  config:\n    exclude_patterns: [_build]\n"
    )
    entries = list(chapters)
    toc = (
        "format: jb-book\nroot: book/"
        + entries[0]
        + "\nchapters:\n"
        + "".join(f"  - file: book/{e}\n" for e in entries[1:])
    )
    (root / "_toc.yml").write_text(toc)
    for name, text in chapters.items():
        (root / "book" / f"{name}.md").write_text(text)
    return root


@pytest.fixture
def small_book(tmp_path):
    return make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n\nNo code here.\n",
            "good": chapter("Good", 'profile = "quick"\nseed = 0\nn = 1', "print('n times two =', n * 2)"),
            "bad": chapter(
                "Bad",
                'profile = "quick"\nseed = 0',
                "x = 1",
                "raise RuntimeError('deliberate failure')",
                "print('never reached')",
            ),
            "after": chapter("After", 'profile = "quick"\nseed = 0', "print('still executed')"),
        },
    )


def outputs(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_failing_chapter_is_named_with_its_cell_and_others_still_run(small_book, tmp_path, capsys):
    build = tmp_path / "build"
    code = run_execute(small_book, build)
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
    code = main(
        [
            "run",
            str(small_book / "book" / "good.md"),
            "--root",
            str(small_book),
            "-p",
            "n",
            "21",
            "-o",
            str(out),
            "--build-dir",
            str(tmp_path / "b"),
        ]
    )
    assert code == 0
    assert "n times two = 42" in outputs(out)
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "n = 21" in injected[0].source
    # A value other than the default stays visible on the rendered page ...
    assert "remove-cell" not in injected[0].metadata["tags"]
    # ... while a run with the defaults hides the cell that only restates them.
    default_out = tmp_path / "default.ipynb"
    assert (
        main(
            [
                "run",
                str(small_book / "book" / "good.md"),
                "--root",
                str(small_book),
                "-o",
                str(default_out),
                "--build-dir",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    nb = nbformat.read(default_out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert "remove-cell" in injected[0].metadata["tags"]


def test_scoped_parameter_and_profile_reach_only_their_chapter(small_book, tmp_path):
    plans = plan_chapters(small_book, ["book/good", "book/after"], "full", [("good:n", "3")])
    assert plans[0].parameters == {"profile": "full", "n": 3}
    assert plans[1].parameters == {"profile": "full"}


@pytest.mark.parametrize(
    "argv, message",
    [
        (["execute", "--profile", "huge"], "unknown profile 'huge'"),
        (["execute", "-p", "nonexistent", "1"], "no chapter in this run defines 'nonexistent'"),
        (["execute", "-p", "good:seedz", "1"], "does not define 'seedz'"),
        (["execute", "-p", "nochapter:n", "1"], "no chapter 'nochapter'"),
        (["run", "book/missing.md"], "is not a chapter"),
        (["run", "book/good.md", "-p", "m", "2"], "does not define 'm'"),
    ],
)
def test_bad_requests_fail_before_anything_runs(small_book, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(small_book)
    build = tmp_path / "build"
    code = main(argv + ["--build-dir", str(build)])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (build / "executed").exists()


def test_chapter_without_required_parameters_is_rejected(tmp_path, capsys):
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "noseed": chapter("No seed", 'profile = "quick"', "1")})
    code = run_execute(root, tmp_path / "b")
    assert code == 2
    assert "missing seed" in capsys.readouterr().err


def test_figures_survive_an_agg_backend_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    root = make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n",
            "plot": chapter(
                "Plot",
                'profile = "quick"\nseed = 0',
                "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()",
            ),
        },
    )
    out = tmp_path / "plot.ipynb"
    assert (
        main(
            [
                "run",
                str(root / "book" / "plot.md"),
                "--root",
                str(root),
                "-o",
                str(out),
                "--build-dir",
                str(tmp_path / "b"),
            ]
        )
        == 0
    )
    nb = nbformat.read(out, as_version=4)
    assert any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_html_is_built_from_executed_notebooks_with_warnings_as_errors(small_book, tmp_path):
    (small_book / "book" / "bad.md").unlink()
    (small_book / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - file: book/good\n")
    build = tmp_path / "build"
    assert run_execute(small_book, build, html=True) == 0
    page = (build / "html" / "book" / "good.html").read_text()
    assert "n times two = 2" in page
    # A reference to a missing target is a warning; -W turns it into a failed build.
    (small_book / "book" / "intro.md").write_text("# Intro\n\nSee {ref}`no-such-label`.\n")
    assert run_execute(small_book, build, html=True) == 1


# --- the execution cache ------------------------------------------------------------------------------
def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def logging_cell(log: Path, name: str) -> str:
    """A code cell that appends the chapter's name to ``log`` each time it is executed."""
    return f"with open({str(log)!r}, 'a') as f:\n    f.write({name!r} + '\\n')"


@pytest.fixture
def cached_book(tmp_path, monkeypatch):
    """A book whose chapters import a throwaway library, each logging every execution to a file."""
    root = tmp_path / "src"
    log = tmp_path / "executions.log"
    lib = root / "lib" / "tinylib"
    _write(lib / "__init__.py", '"""A throwaway library."""\n')
    _write(lib / "alpha.py", "from .gamma import G\n\nA = G + 1\n")
    _write(lib / "gamma.py", "G = 1\n")
    _write(lib / "beta.py", "B = 2\n")
    _write(lib / "unused.py", "U = 3\n")
    (root / "requirements.lock").parent.mkdir(parents=True, exist_ok=True)
    (root / "requirements.lock").write_text("numpy==1\n")

    make_book(
        root,
        {
            "intro": "# Intro\n\nNo code here.\n",
            "uses_alpha": chapter(
                "Alpha",
                'profile = "quick"\nseed = 0',
                logging_cell(log, "uses_alpha"),
                "from tinylib import alpha\nprint('A is', alpha.A)",
            ),
            "uses_beta": chapter(
                "Beta",
                'profile = "quick"\nseed = 0\nn = 1',
                logging_cell(log, "uses_beta"),
                "import tinylib.beta as b\nprint('B times n is', b.B * n)",
            ),
            "plain": chapter("Plain", 'profile = "quick"\nseed = 0', logging_cell(log, "plain"), "print('plain')"),
        },
    )
    monkeypatch.syspath_prepend(str(root / "lib"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(root / "lib"), os.environ.get("PYTHONPATH")])))
    return root, log


def _execute(root: Path, build: Path, *extra: str, jobs: int = 1) -> tuple[list[str], dict]:
    """Run ``execute`` and return (chapters executed according to the log, the report's pages by name).

    One job unless told otherwise: the chapters execute one after another in this process's kernels, without a
    worker process each (half the CPU seconds of a chapter this small); what is reused or executed, and why, is
    decided before either way (``reuse_or_execute``). test_cache_reruns_exactly_what_changed runs side by side
    too, and test_side_by_side covers the workers."""
    log = root.parent / "executions.log"
    before = log.read_text().splitlines() if log.exists() else []
    assert run_execute(root, build, *extra, jobs=jobs) == 0
    after = log.read_text().splitlines()
    report = json.loads((build / "executed" / "report.json").read_text())
    return sorted(after[len(before) :]), {c["chapter"]: c for c in report["chapters"]}


def _runs(pages: dict) -> dict[str, str]:
    return {name.split("/")[1]: page["run"] for name, page in pages.items() if page["run"] != "converted"}


def test_cache_reruns_exactly_what_changed(cached_book, tmp_path):
    root, _ = cached_book
    build = tmp_path / "build"
    # side by side (two workers) first, then one job: the records either way are the same cache
    ran, pages = _execute(root, build, jobs=2)
    assert ran == ["plain", "uses_alpha", "uses_beta"]
    assert _runs(pages) == {"uses_alpha": "executed", "uses_beta": "executed", "plain": "executed"}
    assert pages["book/plain"]["reason"] == "no cached outputs" and pages["book/plain"]["executed_at"]
    first_executed_at = pages["book/uses_alpha"]["executed_at"]

    # Nothing changed: nothing executes, every page is reused with the time of its execution.
    ran, pages = _execute(root, build)
    assert ran == []
    assert set(_runs(pages).values()) == {"reused"}
    assert pages["book/uses_alpha"]["executed_at"] == first_executed_at

    # A prose edit re-renders from the cached outputs without executing.
    source = root / "book" / "uses_alpha.md"
    source.write_text(source.read_text().replace("# Alpha\n", "# Alpha\n\nA new sentence of prose.\n"))
    ran, pages = _execute(root, build)
    assert ran == [] and pages["book/uses_alpha"]["run"] == "reused"
    nb = nbformat.read(build / "executed" / "book" / "uses_alpha.ipynb", as_version=4)
    assert any("A new sentence of prose." in c.source for c in nb.cells if c.cell_type == "markdown")
    assert "A is 2" in outputs(build / "executed" / "book" / "uses_alpha.ipynb")

    # A code cell: only that chapter.
    plain = root / "book" / "plain.md"
    plain.write_text(plain.read_text().replace("print('plain')", "print('plain, edited')"))
    ran, pages = _execute(root, build)
    assert ran == ["plain"] and pages["book/plain"]["reason"] == "code cells changed"
    assert "plain, edited" in outputs(build / "executed" / "book" / "plain.ipynb")

    # A library module imported indirectly (alpha imports gamma): only the chapter that imports alpha.
    (root / "lib" / "tinylib" / "gamma.py").write_text("G = 10\n")
    ran, pages = _execute(root, build)
    assert ran == ["uses_alpha"]
    assert pages["book/uses_alpha"]["reason"] == "modules changed: tinylib.gamma"
    assert "A is 11" in outputs(build / "executed" / "book" / "uses_alpha.ipynb")
    # ... a module nobody imports: nothing.
    (root / "lib" / "tinylib" / "unused.py").write_text("U = 4\n")
    assert _execute(root, build)[0] == []
    (root / "lib" / "tinylib" / "beta.py").write_text("B = 3\n")
    assert _execute(root, build)[0] == ["uses_beta"]

    # A parameter: only the chapter that gets it, and again when it returns to its default.
    ran, pages = _execute(root, build, "-p", "uses_beta:n", "5")
    assert ran == ["uses_beta"] and pages["book/uses_beta"]["reason"] == "parameters changed"
    assert "B times n is 15" in outputs(build / "executed" / "book" / "uses_beta.ipynb")
    assert _execute(root, build, "-p", "uses_beta:n", "5")[0] == []
    assert _execute(root, build)[0] == ["uses_beta"]
    # The profile is a parameter of every chapter's key.
    quick, full = (plan_chapters(root, ["book/plain"], p, [])[0] for p in ("quick", "full"))
    assert cache_key(cache_components(root, quick.notebook, quick.parameters, "cpu")) != cache_key(
        cache_components(root, full.notebook, full.parameters, "cpu")
    )

    # Data. A folder named in a page's front matter (resnet_theory: data): naming it changes no key (front matter is
    # no code), nor does a hidden file in it; a file appearing in it executes that page only.
    plain.write_text(
        plain.read_text().replace("kernelspec:", "resnet_theory:\n  data: [book/data/plain]\nkernelspec:", 1)
    )
    measured = root / "book" / "data" / "plain" / "run.json"
    measured.parent.mkdir(parents=True)
    (measured.parent / ".run.json.swp").write_text("an editor's")
    assert _execute(root, build)[0] == []
    measured.write_text('{"images_per_second": 1}')
    ran, pages = _execute(root, build)
    assert ran == ["plain"] and pages["book/plain"]["reason"] == "data changed: book/data/plain/run.json"
    # ... and in the same run, that file changing, and a package's own data (a file in it that is not Python source,
    # read by its modules) appearing: every page that imports the package, whichever module reads it
    measured.write_text('{"images_per_second": 2}')
    table = root / "lib" / "tinylib" / "data" / "table.json"
    table.parent.mkdir()
    table.write_text("[1, 2]")
    ran, pages = _execute(root, build)
    assert ran == ["plain", "uses_alpha", "uses_beta"]
    assert pages["book/plain"]["reason"] == "data changed: book/data/plain/run.json"
    assert pages["book/uses_beta"]["reason"] == "data changed: tinylib/data/table.json"

    # The pinned environment: every chapter. --force: every chapter.
    (root / "requirements.lock").write_text("numpy==2\n")
    ran, pages = _execute(root, build)
    assert ran == ["plain", "uses_alpha", "uses_beta"]
    assert pages["book/plain"]["reason"] == "environment changed: requirements.lock"
    ran, pages = _execute(root, build, "--force")
    assert ran == ["plain", "uses_alpha", "uses_beta"] and pages["book/plain"]["reason"] == "forced (--force)"

    # Outputs changed behind the cache's back are not trusted.
    executed_nb = build / "executed" / "book" / "plain.ipynb"
    executed_nb.write_text(executed_nb.read_text().replace("plain, edited", "tampered"))
    assert _execute(root, build)[0] == ["plain"]


@pytest.mark.parametrize(
    "data, words",
    [
        (
            "[../elsewhere]",
            "data path '../elsewhere' in the front matter (resnet_theory: data) is not inside the book's",
        ),
        ("[/etc]", "data path '/etc' in the front matter (resnet_theory: data) is not inside the book's root"),
        ("5", "the front matter's resnet_theory: data must be a list of paths relative to the book's root"),
        ("['']", "the front matter's resnet_theory: data must be a list of paths relative to the book's root"),
    ],
)
def test_a_data_path_outside_the_book_is_refused_before_anything_runs(cached_book, data, words):
    root, _ = cached_book
    plain = root / "book" / "plain.md"
    plain.write_text(plain.read_text().replace("kernelspec:", f"resnet_theory:\n  data: {data}\nkernelspec:", 1))
    with pytest.raises(BookError, match=re.escape(words)):
        plan_chapters(root, ["book/plain"], "quick", [])


def test_module_closure_is_found_statically(cached_book):
    root, _ = cached_book
    index = ModuleIndex(root, tracked=())
    found = index.closure(["from tinylib import alpha, missing_name\nimport numpy\n"])
    assert sorted(found) == ["tinylib", "tinylib.alpha", "tinylib.gamma"]
    assert sorted(index.closure(["def f():\n    import tinylib.beta\n"])) == ["tinylib", "tinylib.beta"]
    # A cell that does not parse depends on every tracked module.
    unparsable = ModuleIndex(root, tracked=("tinylib",)).closure(["this is not python("])
    assert {"tinylib.alpha", "tinylib.beta", "tinylib.gamma", "tinylib.unused"} <= set(unparsable)
    # The real book: the ledger module and its own imports, not the whole library, and nothing of the book tooling.
    real = ModuleIndex(ROOT).closure(["from resnet_theory.ledger import Ledger"])
    assert "resnet_theory.ledger" in real and "resnet_theory.engine.train" not in real
    assert not any(name.startswith("resnet_theory.book") for name in real), sorted(real)
    # A module of a subpackage brings the subpackage's __init__ and what the module imports, relative imports
    # included (engine/train.py: "from . import data", "from .. import validate").
    engine = ModuleIndex(ROOT).closure(["from resnet_theory.engine import train as engine"])
    assert {
        "resnet_theory",
        "resnet_theory.engine",
        "resnet_theory.engine.train",
        "resnet_theory.engine.data",
        "resnet_theory.engine.allconv",
        "resnet_theory.engine.devices",
        "resnet_theory.engine.interval",
        "resnet_theory.validate",
    } <= set(engine)
    assert engine["resnet_theory.engine.train"].name == "train.py" and "resnet_theory.engine.bench" not in engine
    # The ledger page reads the TOC and the execution records of the book package, not its executor: editing how
    # chapters are executed or reported changes no page's key.
    page = ModuleIndex(ROOT).closure(["from resnet_theory.book.ledger_page import LedgerPage"])
    assert {"resnet_theory.book", "resnet_theory.book.toc", "resnet_theory.book.cache"} <= set(page)
    assert not {"resnet_theory.book.execute", "resnet_theory.book.build", "resnet_theory.book.report"} & set(page)


def test_module_closure_follows_imports_into_subpackages(cached_book, tmp_path):
    """``from tinylib.engine import train`` (as chapters import ``resnet_theory.engine``) depends on the
    subpackage's ``__init__``, the module, and what it imports from the package above (``from .. import
    validate``); editing a module of the subpackage executes exactly the chapters that import it."""
    root, log = cached_book
    lib = root / "lib" / "tinylib"
    _write(lib / "validate.py", "def positive(n):\n    return n > 0\n")
    _write(lib / "engine" / "__init__.py", '"""A subpackage, as resnet_theory.engine."""\n')
    _write(lib / "engine" / "train.py", "from .. import validate\n\nSTEPS = 3 if validate.positive(3) else 0\n")
    _write(lib / "engine" / "bench.py", "from .train import STEPS\n\nROUNDS = 5\n")
    _write(lib / "engine" / "timing.py", "SECONDS = 1\n")
    index = ModuleIndex(root, tracked=())
    assert sorted(index.closure(["from tinylib.engine import train"])) == [
        "tinylib",
        "tinylib.engine",
        "tinylib.engine.train",
        "tinylib.validate",
    ]
    assert sorted(index.closure(["import tinylib.engine.bench as b"])) == [
        "tinylib",
        "tinylib.engine",
        "tinylib.engine.bench",
        "tinylib.engine.train",
        "tinylib.validate",
    ]
    assert sorted(index.closure(["from tinylib.engine.timing import SECONDS"])) == [
        "tinylib",
        "tinylib.engine",
        "tinylib.engine.timing",
    ]

    for name, code in (
        ("uses_train", "from tinylib.engine import train\nprint('steps', train.STEPS)"),
        ("uses_timing", "from tinylib.engine.timing import SECONDS\nprint('seconds', SECONDS)"),
    ):
        (root / "book" / f"{name}.md").write_text(
            chapter(name, 'profile = "quick"\nseed = 0', logging_cell(log, name), code)
        )
        with open(root / "_toc.yml", "a") as f:
            f.write(f"  - file: book/{name}\n")
    build = tmp_path / "build"
    assert _execute(root, build)[0] == ["plain", "uses_alpha", "uses_beta", "uses_timing", "uses_train"]
    # a module of the subpackage: the chapter that imports it, no other
    (lib / "engine" / "train.py").write_text("from .. import validate\n\nSTEPS = 30 if validate.positive(3) else 0\n")
    ran, pages = _execute(root, build)
    assert ran == ["uses_train"] and pages["book/uses_train"]["reason"] == "modules changed: tinylib.engine.train"
    assert "steps 30" in outputs(build / "executed" / "book" / "uses_train.ipynb")
    # the package above, reached through ``from .. import validate``
    (lib / "validate.py").write_text("def positive(n):\n    return n >= 1\n")
    ran, pages = _execute(root, build)
    assert ran == ["uses_train"] and pages["book/uses_train"]["reason"] == "modules changed: tinylib.validate"
    (lib / "engine" / "timing.py").write_text("SECONDS = 12\n")
    assert _execute(root, build)[0] == ["uses_timing"]
    assert "seconds 12" in outputs(build / "executed" / "book" / "uses_timing.ipynb")
    # the subpackage's __init__ runs for both
    (lib / "engine" / "__init__.py").write_text('"""A subpackage, edited."""\n')
    assert _execute(root, build)[0] == ["uses_timing", "uses_train"]


def test_the_claims_of_a_chapter_removed_from_the_toc_are_moved_aside(cached_book, tmp_path, capsys):
    """A chapter taken out of ``_toc.yml`` leaves its claims in the build, which the ledger refuses (they are
    not the book's): ``execute`` moves them to ``<build>/removed``, saying so, and leaves every other file."""
    from resnet_theory.book.claims_files import ClaimsFileError, verify_claims_files
    from resnet_theory.ledger import CLAIMS_FILE_ENV

    root, _ = cached_book
    for name in ("keeps", "retires"):
        (root / "book" / f"{name}.md").write_text(
            chapter(
                name,
                'profile = "quick"\nseed = 0',
                f"import os\nwith open(os.environ[{CLAIMS_FILE_ENV!r}], 'w') as f:\n    f.write('{name}')",
            )
        )
        with open(root / "_toc.yml", "a") as f:
            f.write(f"  - file: book/{name}\n")
    build = tmp_path / "build"
    executed = build / "executed"
    _execute(root, build)
    keeps, retires = executed / "book" / "keeps.claims.json", executed / "book" / "retires.claims.json"
    partial = executed / "book" / ".retires.partial-1.claims.json"  # a temporary of a live process (pid 1)
    partial.write_text("partial")
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace("  - file: book/retires\n", ""))
    with pytest.raises(ClaimsFileError, match="book/retires, which is not a chapter in"):
        verify_claims_files(executed, [keeps, retires], root)
    capsys.readouterr()

    _execute(root, build, "--only", "book/plain")
    moved = build / "removed" / "book" / "retires.claims.json"
    assert not retires.exists() and moved.read_text() == "retires"
    assert (
        f"[book] book/retires is no longer in _toc.yml: its claims file moved from {retires} to {moved}"
        in capsys.readouterr().out
    )
    assert keeps.read_text() == "keeps" and partial.read_text() == "partial"
    verify_claims_files(executed, [keeps], root)  # what is left is the book's
    # A chapter that comes back is executed again: its claims are no longer the ones its record describes.
    with open(toc, "a") as f:
        f.write("  - file: book/retires\n")
    pages = _execute(root, build)[1]
    assert pages["book/retires"]["run"] == "executed" and retires.read_text() == "retires"
    assert pages["book/retires"]["reason"] == "cached outputs were changed or removed since they were recorded"


def test_pages_that_gather_results_always_execute_and_status_says_what_was_reused(cached_book, tmp_path):
    root, log = cached_book
    summary = chapter(
        "Summary",
        'profile = "quick"\nseed = 0',
        textwrap.indent(f"with open({str(log)!r}, 'a') as f:\n    f.write('summary\\n')", ""),
    )
    summary = summary.replace("kernelspec:", "resnet_theory:\n  execution: always\nkernelspec:", 1)
    (root / "book" / "summary.md").write_text(summary)
    with open(root / "_toc.yml", "a") as f:
        f.write("  - file: book/summary\n")
    build = tmp_path / "build"
    assert "summary" in _execute(root, build)[0]
    ran, pages = _execute(root, build)
    assert ran == ["summary"]
    report = json.loads((build / "executed" / "report.json").read_text())
    page = status_html(report)
    assert page.count("<td>reused</td>") == 3 and page.count("<td>executed</td>") == 1
    # the status page's own row, carried over from the previous build, is never shown
    stale = dict(report["chapters"][0], chapter="book/status", run="executed")
    assert status_html(dict(report, chapters=report["chapters"] + [stale])) == page
    assert pages["book/uses_alpha"]["executed_at"] in page


# --- pages that gather results: executed in the executor's process, without a kernel -------------------
def _html_output(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return "".join(
        o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )


#: A control input sentence for the test claims.
CI = "an input the claim rules out, for the test"


def _record_claims(build: Path, control_holds: bool = False):
    """Claims as a chapter executed by the book records them: a confirmed claim, a correction, a proof gap."""
    from resnet_theory.ledger import Check, Ledger

    ledger = Ledger("linear")
    ledger.claim(
        "hardt-ma/thm-2.1",
        paper="hardt-ma",
        ref="Theorem 2.1",
        statement="a bound",
        section="linear-thm-2-1",
        printed=Check.at_most([0.5], 1.0, what="norm"),
        control_input=CI,
        control=Check.at_most([0.5], 0.4, what="norm vs the bound scaled below the worst case"),
    )
    ledger.claim(
        "hardt-ma/eq-2.3",
        paper="hardt-ma",
        ref="(2.3)",
        statement="an identity",
        section="linear-eq-2-3",
        printed=Check.at_least([1.0], 2.0, what="printed"),
        corrected=Check.at_least([1.0], 1.0, what="corrected"),
        corrected_statement="the fixed identity",
        control_input=CI,
        control=Check.at_least([1.0], 1.5, what="corrected bound scaled up"),
    )
    ledger.claim(
        "shamir/lemma-3",
        paper="shamir",
        ref="Lemma 3",
        statement="a lemma",
        section="linear-lemma-3",
        printed=Check.equal(1, 1, what="statement"),
        proof_step=Check.at_most([1.1], 1.0, what="step"),
        proof_step_statement="the printed step",
        repair=Check.at_most([0.9], 1.0, what="repair"),
        repair_statement="the repaired step",
        control_input=CI,
        control=Check.equal(1, 2, what="a perturbed closed form"),
    )
    path = ledger.save(build / "executed" / "book" / "linear.claims.json")
    if control_holds:  # a claims file no chapter could have published: an older check
        data = json.loads(path.read_text())
        data["claims"][0]["control"]["holds"] = True
        path.write_text(json.dumps(data))
    record_execution(build, "book/linear", path)
    return ledger


def record_execution(build: Path, entry: str, claims: Path) -> None:
    """The executor's record of a chapter's execution: the SHA-256 of the claims file it wrote, bound to the
    executed notebook beside it (an empty one is written when there is none) and the parameters it ran with."""
    notebook = claims.with_name(claims.name[: -len(".claims.json")] + ".ipynb")
    if not notebook.is_file():
        nbformat.write(nbformat.v4.new_notebook(), notebook)
    record = {"claims_sha": file_sha(claims), "notebook_sha": file_sha(notebook), "profile": "quick"}
    write_atomic(cache_record_path(build, entry), json.dumps({**record, "parameters": {"profile": "quick"}}))


def test_the_ledger_and_status_pages_render_without_a_kernel(tmp_path, monkeypatch):
    """The book's own ledger and status pages, from recorded claims and a report, with no kernel started."""
    import papermill

    build = tmp_path / "build"
    ledger = _record_claims(build)
    reused = ChapterResult(
        "book/linear",
        "book/linear.md",
        "ok",
        0.0,
        "quick",
        {"profile": "quick"},
        "CPU: test",
        "x",
        run="reused",
        executed_at="2026-01-01 00:00:00 UTC",
    )
    write_report(build / "executed" / "report.json", [reused], "quick", environment(), order=toc_files(ROOT))

    def no_kernel(*args, **kwargs):
        raise AssertionError("a kernel was started for a page that only gathers results")

    monkeypatch.setattr(papermill, "execute_notebook", no_kernel)
    assert run_execute(ROOT, build, "--only", "book/ledger", "book/status") == 0
    report = json.loads((build / "executed" / "report.json").read_text())
    pages = {c["chapter"]: c for c in report["chapters"]}
    for name in ("book/ledger", "book/status"):
        assert pages[name]["status"] == "ok" and pages[name]["run"] == "executed"
        assert "without a kernel" in pages[name]["reason"] and pages[name]["executed_at"]

    # The ledger: the errata first, then the counts, then every claim linked to its section, with its control.
    nb_path = build / "executed" / "book" / "ledger.ipynb"
    page = _html_output(nb_path)
    assert (
        page.index('class="claims-errata"') < page.index('class="claims-counts"') < page.index('class="claims-ledger"')
    )
    headings = [
        c.source
        for c in nbformat.read(nb_path, as_version=4).cells
        if c.cell_type == "markdown" and c.source.startswith("## ")
    ]
    headings = [h.splitlines()[0] for h in headings]
    assert headings == [
        "## Errata",
        "## Counts",
        "## Every claim",
        "## The book's findings",
        "## Not checked, and why",
        "## Hardt & Ma, paragraph by paragraph",
    ]
    errata = page.split('class="claims-errata"', 1)[1].split("</ul>", 1)[0]
    assert ">hardt-ma/eq-2.3</a>" in errata and ">shamir/lemma-3</a>" in errata
    assert "hardt-ma/thm-2.1" not in errata and "the fixed identity" in errata and "the repaired step" in errata
    counts = page.split('class="claims-counts"', 1)[1].split("</table>", 1)[0]
    total = "<td>total</td><td>every source</td><td>1</td><td>1</td><td>1</td><td>0</td><td>0</td><td>0</td><td>3</td>"
    assert total in counts
    table = page.split('class="claims-ledger"', 1)[1]
    assert table.count("Control input") == 3 and table.count("fails, as it must") == 3
    for claim in ledger.claims:
        assert f'href="{claim.chapter}.html#{claim.section}"' in table
    assert "norm vs the bound scaled below the worst case" in table
    # The prose and the hidden parameters cells come from the page's source, as for a kernel's execution.
    nb = nbformat.read(nb_path, as_version=4)
    assert any("The errata come first" in c.source for c in nb.cells if c.cell_type == "markdown")
    assert all(
        "remove-cell" in c.metadata["tags"]
        for c in nb.cells
        if {"parameters", "injected-parameters"} & set(c.metadata.get("tags", []))
    )

    # The status page: the chapter an earlier build reused, which this (--only) build did not run, said so
    # with the time of its execution; and the ledger page, executed by this build.
    status = _html_output(build / "executed" / "book" / "status.ipynb")
    rows = _status_rows(status)
    assert rows["book/linear"].split("</td>")[1] == "<td>not run in this build (last executed 2026-01-01 00:00:00 UTC)"
    assert "<td>reused</td>" not in status
    assert rows["book/ledger"].split("</td>")[1] == "<td>executed"


def test_a_claim_whose_control_holds_fails_the_ledger_page_and_the_build(tmp_path, capsys):
    build = tmp_path / "build"
    _record_claims(build, control_holds=True)
    assert run_execute(ROOT, build, "--only", "book/ledger", "book/status") == 1
    err = capsys.readouterr().err
    assert "FAILED" in err and "LedgerDefect" in err and "hardt-ma/thm-2.1: the negative control holds" in err
    pages = {c["chapter"]: c for c in json.loads((build / "executed" / "report.json").read_text())["chapters"]}
    assert pages["book/ledger"]["status"] == "failed" and pages["book/ledger"]["error"]["ename"] == "LedgerDefect"
    # With no earlier ledger page, the page shows the failed attempt (its error), and the status page says so.
    nb = nbformat.read(build / "executed" / "book" / "ledger.ipynb", as_version=4)
    assert any(
        o.output_type == "error" and o.ename == "LedgerDefect"
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )
    status = _html_output(build / "executed" / "book" / "status.ipynb")
    assert "LedgerDefect" in status and "failed" in status


def test_a_chapter_whose_control_holds_fails_and_the_ledger_page_runs_in_the_executor(tmp_path, capsys):
    """The chapter (with a kernel) stops at ``ledger.show()`` and publishes no claims; the gathering page,
    in-process, runs in this very process (its cell returns the process id)."""
    defect = chapter(
        "Defect",
        'profile = "quick"\nseed = 0',
        textwrap.dedent("""\
        from resnet_theory.ledger import Check, Ledger
        ledger = Ledger("defect")
        ledger.claim("shamir/x", paper="shamir", ref="r", statement="s", section="defect-x",
                     printed=Check.equal(1, 1, what="w"), control=Check.equal(1, 1, what="cannot fail"),
                     control_input="the same statement, which the claim does not rule out")
        ledger.show()"""),
    )
    gather = chapter(
        "Ledger",
        'profile = "quick"\nseed = 0',
        "import os\nos.getpid()",
        "from resnet_theory.book.claims_files import load_claims\nfrom resnet_theory.ledger_html import render_ledger\n"
        "render_ledger(load_claims())",
    )
    gather = gather.replace("kernelspec:", "resnet_theory:\n  execution: in-process\nkernelspec:", 1)
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "defect": defect, "ledger": gather})
    build = tmp_path / "build"
    assert run_execute(root, build) == 1
    assert "LedgerDefect" in capsys.readouterr().err
    pages = {c["chapter"]: c for c in json.loads((build / "executed" / "report.json").read_text())["chapters"]}
    assert pages["book/defect"]["status"] == "failed" and pages["book/defect"]["error"]["ename"] == "LedgerDefect"
    assert not list((build / "executed").rglob("*.claims.json"))
    assert pages["book/ledger"]["status"] == "ok"
    nb = nbformat.read(build / "executed" / "book" / "ledger.ipynb", as_version=4)
    results = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "execute_result"]
    assert results[0].data["text/plain"] == str(os.getpid())
    assert "No claims were found" in results[1].data["text/html"]


def test_an_unknown_execution_mode_is_refused_before_anything_runs(tmp_path, capsys):
    page = chapter("Odd", 'profile = "quick"\nseed = 0', "1")
    page = page.replace("kernelspec:", "resnet_theory:\n  execution: sometimes\nkernelspec:", 1)
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "odd": page})
    assert run_execute(root, tmp_path / "b") == 2
    assert "unknown execution mode 'sometimes'" in capsys.readouterr().err


# --- interrupted and failed runs keep the previous good outputs -------------------------------------------
@pytest.fixture
def slow_book(tmp_path):
    """A chapter that records a claim, and with seed 5 signals that it started, then sleeps; seed 7 fails."""
    marker = tmp_path / "started"
    cells = [
        "import json, os\nwith open(os.environ['RESNET_THEORY_CLAIMS_FILE'], 'w') as f:\n"
        "    json.dump([{'id': 'claim', 'seed': seed}], f)\nprint('seed is', seed)",
        f"import time\nif seed == 5:\n    open({str(marker)!r}, 'w').close()\n    time.sleep(120)\n"
        "if seed == 7:\n    raise ValueError('seed 7 fails')",
    ]
    root = make_book(
        tmp_path / "src", {"intro": "# Intro\n", "slow": chapter("Slow", 'profile = "quick"\nseed = 0', *cells)}
    )
    return root, marker


def _good_outputs(build: Path) -> tuple[bytes, bytes]:
    folder = build / "executed" / "book"
    return (folder / "slow.ipynb").read_bytes(), (folder / "slow.claims.json").read_bytes()


@pytest.mark.parametrize("command", ["execute", "run"])
@pytest.mark.parametrize("signal_name, whole_group, exit_code", [("SIGINT", True, 130), ("SIGTERM", False, 143)])
def test_an_interrupted_run_keeps_the_previous_outputs_and_says_so(
    slow_book, tmp_path, command, signal_name, whole_group, exit_code
):
    import signal
    import subprocess
    import sys
    import time

    root, marker = slow_book
    build = tmp_path / "build"
    assert run_execute(root, build) == 0
    good = _good_outputs(build)
    assert b'"seed": 0' in good[1]
    argv = (
        ["execute", "--no-html", "-p", "seed", "5"]
        if command == "execute"
        else ["run", "book/slow.md", "-p", "seed", "5"]
    )
    # A terminal's Ctrl-C reaches a process whose SIGINT is not ignored. pytest itself may inherit an ignored
    # SIGINT (a background job of a non-interactive shell, an xdist worker), and an ignored signal stays ignored
    # across exec, so the executor starts with the default disposition, as from a terminal.
    proc = subprocess.Popen(
        [sys.executable, "-m", "resnet_theory.book", *argv, "--root", str(root), "--build-dir", str(build)],
        cwd=root,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the chapter never reached its slow cell"
            time.sleep(0.2)
        sig = getattr(signal, signal_name)
        # Ctrl-C in a terminal reaches the whole process group (the kernel too); `kill` the executor only.
        os.killpg(proc.pid, sig) if whole_group else proc.send_signal(sig)
        output, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == exit_code, output
    assert "interrupted" in output
    assert "Traceback" not in output and "ZMQError" not in output, output  # the kernel's shutdown kept quiet
    assert _good_outputs(build) == good, "the interrupted run replaced the previous outputs"
    assert not list((build / "executed").rglob(".*partial*")), "temporary files left behind"
    report = json.loads((build / "executed" / "report.json").read_text())
    assert report["state"] == "interrupted"
    assert report["attempt"]["signal"] == signal_name and report["attempt"]["interrupted_chapter"] == "book/slow"
    assert report["attempt"]["parameters"]["book/slow"]["seed"] == 5
    page = {c["chapter"]: c for c in report["chapters"]}["book/slow"]
    assert page["status"] == "interrupted" and page["parameters"]["seed"] == 5
    assert page["outputs"].startswith("the previous outputs (executed ")
    assert "was interrupted" in status_html(report) and "seed=5" in status_html(report)
    # The cache still knows the kept outputs: the next plain run reuses them.
    assert run_execute(root, build) == 0
    report = json.loads((build / "executed" / "report.json").read_text())
    assert {c["chapter"]: c for c in report["chapters"]}["book/slow"]["run"] == "reused"
    assert report["state"] == "complete"


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            found.append(int(name))
    return found


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def test_ctrl_c_during_a_run_prints_one_line_and_leaves_no_kernel(tmp_path):
    """Ctrl-C in a terminal (SIGINT to the whole process group) while a cell runs: the user sees the executor's
    one line, not ipykernel's complaint (a ZMQError traceback) about being shut down mid-reply; exit 130; the
    kernel is gone. What the kernel writes to its standard error before that still reaches the terminal."""
    import select
    import signal
    import subprocess
    import sys
    import time

    if not os.path.isdir("/proc"):
        pytest.skip("finds the kernel through /proc")
    cell = "import time\nget_ipython().kernel.log.warning('the kernel speaks')\ntime.sleep(120)"
    slow = chapter("Slow", 'profile = "quick"\nseed = 0', cell)
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "slow": slow})
    proc = subprocess.Popen(
        [sys.executable, "-m", "resnet_theory.book", "run", "book/slow.md", "--root", str(root)]
        + ["--build-dir", str(tmp_path / "build")],
        cwd=root,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as from a terminal (see above)
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        err, deadline = b"", time.monotonic() + 60
        while b"the kernel speaks" not in err:  # the kernel's own line arrived: its cell is running
            assert proc.poll() is None, err.decode()
            assert time.monotonic() < deadline, "the chapter never reached its slow cell"
            if select.select([proc.stderr], [], [], 0.2)[0]:
                err += os.read(proc.stderr.fileno(), 65536)
        kernels = _children(proc.pid)
        assert kernels, "no kernel found"
        os.killpg(proc.pid, signal.SIGINT)
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = (err + rest).decode()
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "ZMQError" not in text, text
    lines = [line for line in text.splitlines() if "the kernel speaks" not in line]
    assert len(lines) == 1 and lines[0].startswith("[book] book/slow.md: interrupted (SIGINT); "), text
    assert not [pid for pid in kernels if _running(pid)], "the kernel outlived the run"


def test_a_failed_run_keeps_the_previous_outputs_and_says_so(slow_book, tmp_path, capsys):
    root, _ = slow_book
    build = tmp_path / "build"
    assert run_execute(root, build) == 0
    good = _good_outputs(build)
    assert run_execute(root, build, "-p", "seed", "7") == 1
    assert _good_outputs(build) == good
    assert "the page shows the previous outputs" in capsys.readouterr().err
    report = json.loads((build / "executed" / "report.json").read_text())
    page = {c["chapter"]: c for c in report["chapters"]}["book/slow"]
    assert report["state"] == "failed" and page["status"] == "failed" and page["parameters"]["seed"] == 7
    assert page["error"]["ename"] == "ValueError" and page["outputs"].startswith("the previous outputs")
    assert not list((build / "executed").rglob(".*partial*"))


def _status_page_book(tmp_path: Path) -> tuple[Path, Path]:
    """A failing chapter, then the real status page (in-process), then a chapter that, while it runs, copies
    the status page as rendered so far (what a reader would see had the run stopped there)."""
    snapshot = tmp_path / "status-mid-run.ipynb"
    status = chapter(
        "Status", 'profile = "quick"\nseed = 0', "from resnet_theory.book.status import render_status\nrender_status()"
    )
    status = status.replace("kernelspec:", "resnet_theory:\n  execution: in-process\nkernelspec:", 1)
    after = chapter(
        "After",
        'profile = "quick"\nseed = 0',
        textwrap.dedent(f"""\
        import os, shutil
        shutil.copy(os.path.join(os.environ["RESNET_THEORY_BUILD_DIR"], "executed", "book", "status.ipynb"),
                    {str(snapshot)!r})"""),
    )
    root = make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n\nNo code here.\n",
            "good": chapter("Good", 'profile = "quick"\nseed = 0', "print('good')"),
            "bad": chapter(
                "Bad",
                'profile = "quick"\nseed = 0\nfail = True',
                "if fail:\n    raise RuntimeError('deliberate failure')",
            ),
            "status": status,
            "after": after,
        },
    )
    return root, snapshot


def test_the_status_page_of_a_failed_run_says_the_run_failed(tmp_path, capsys):
    """The status page is rendered during the run (the report then says "running"); it says which pages had
    failed and which were not yet executed, and is rendered again once the run has failed."""
    root, snapshot = _status_page_book(tmp_path)
    build = tmp_path / "build"
    assert run_execute(root, build) == 1
    assert "book/status.md: ok, rendered again at the end of the run" in capsys.readouterr().out

    # As rendered during the run: in progress, book/bad already failed, book/after not yet finished.
    mid = _html_output(snapshot)
    note = mid.split("<table", 1)[0]
    assert "still in progress" in note and "The last run" not in note
    assert "the run had failed: book/bad (code cell 2: RuntimeError: deliberate failure) failed" in note
    assert "Not yet executed or not yet finished: book/after;" in note
    assert "book/good" not in note and "<td>book/after</td>" not in mid

    # As the build shows it: rendered again from the final report, the run named as failed, every row there.
    page = _html_output(build / "executed" / "book" / "status.ipynb")
    note = page.split("<table", 1)[0]
    assert "<strong>The last run failed.</strong>" in note
    assert "Failed: book/bad (code cell 2: RuntimeError: deliberate failure). It was started" in note
    assert "in progress" not in note and "Not reached" not in note
    assert "<td>book/after</td>" in page
    report = json.loads((build / "executed" / "report.json").read_text())
    assert report["state"] == "failed"
    assert report["attempt"]["finished"] == ["book/intro", "book/good", "book/bad", "book/status", "book/after"]
    pages = {c["chapter"]: c for c in report["chapters"]}
    assert pages["book/status"]["status"] == "ok" and "rendered again" in pages["book/status"]["reason"]

    # Rendering the status page again on its own (`run book/status.md`) reports on that run: the report keeps
    # its state and attempt, and the page still says the run failed.
    assert main(["run", "book/status.md", "--root", str(root), "--build-dir", str(build)]) == 0
    again = json.loads((build / "executed" / "report.json").read_text())
    assert again["state"] == "failed" and again["attempt"] == report["attempt"]
    assert {c["chapter"]: c["status"] for c in again["chapters"]}["book/bad"] == "failed"
    page = _html_output(build / "executed" / "book" / "status.ipynb")
    assert "<strong>The last run failed.</strong>" in page.split("<table", 1)[0]

    # The same book once the chapter is fixed: the run completes, and the page says nothing about failure.
    assert run_execute(root, build, "-p", "bad:fail", "False") == 0
    page = _html_output(build / "executed" / "book" / "status.ipynb")
    assert "book-run-note" not in page and "failed" not in page and "<td>book/after</td>" in page


def test_an_in_process_page_that_fails_when_rendered_again_makes_the_status_page_say_so(tmp_path):
    """An in-process page that passed mid-run but fails when rendered again at the end (a page after it changed
    what it reads) fails the run; the status page after it, which had nothing to say mid-run, must then be
    rendered again too and say the run failed, never show that page as ok."""
    marker = tmp_path / "written-by-a-later-page"
    in_process = "resnet_theory:\n  execution: in-process\nkernelspec:"
    check = chapter(
        "Check",
        'profile = "quick"\nseed = 0',
        f"import os\nassert not os.path.exists({str(marker)!r}), 'a later page changed this'",
    )
    status = chapter(
        "Status", 'profile = "quick"\nseed = 0', "from resnet_theory.book.status import render_status\nrender_status()"
    )
    after = chapter("After", 'profile = "quick"\nseed = 0', f"open({str(marker)!r}, 'w').write('x')")
    root = make_book(
        tmp_path / "src",
        {
            "check": check.replace("kernelspec:", in_process, 1),
            "after": after,
            "status": status.replace("kernelspec:", in_process, 1),
        },
    )
    build = tmp_path / "build"
    assert run_execute(root, build) == 1
    report = json.loads((build / "executed" / "report.json").read_text())
    assert report["state"] == "failed"
    assert {c["chapter"]: c["status"] for c in report["chapters"]} == {
        "book/check": "failed",
        "book/after": "ok",
        "book/status": "ok",
    }
    page = _html_output(build / "executed" / "book" / "status.ipynb")
    assert (
        "<strong>The last run failed.</strong> Failed: book/check (code cell 3: AssertionError: a later page "
        "changed this)." in page.split("<table", 1)[0]
    )
    assert "failed" in _status_rows(page)["book/check"]


def _status_rows(page: str) -> dict[str, str]:
    """The status table's rows by page: the HTML of each row after its page cell."""
    table = page.split('<table class="book-status">', 1)[1].split("</table>", 1)[0]
    return {
        row.split("</td>", 1)[0].removeprefix("<td>"): row.split("</td>", 1)[1]
        for row in table.split("<tr>")[1:]
        if row.startswith("<td>")
    }


def test_the_status_page_of_an_only_run_does_not_claim_the_pages_it_left_out(tmp_path):
    """After a whole build, ``execute --only`` of one chapter and the status page: the other pages' rows are
    kept from the earlier build, and the status page says this build did not run them (with when they last
    were executed, and with which parameters), never that this build executed them."""
    root, _ = _status_page_book(tmp_path)
    build = tmp_path / "build"
    assert run_execute(root, build, "-p", "bad:fail", "False") == 0
    first = {c["chapter"]: c for c in json.loads((build / "executed" / "report.json").read_text())["chapters"]}
    rows = _status_rows(_html_output(build / "executed" / "book" / "status.ipynb"))
    assert [rows[p].split("</td>")[1] for p in ("book/good", "book/bad", "book/after")] == ["<td>executed"] * 3

    assert run_execute(root, build, "--force", "--only", "book/good", "book/status") == 0
    report = json.loads((build / "executed" / "report.json").read_text())
    assert report["attempt"]["finished"] == ["book/good", "book/status"]
    rows = _status_rows(_html_output(build / "executed" / "book" / "status.ipynb"))
    assert set(rows) == {"book/intro", "book/good", "book/bad", "book/after"}
    # The page this build executed says so, with this build's time.
    good = {c["chapter"]: c for c in report["chapters"]}["book/good"]
    assert rows["book/good"].split("</td>")[1] == "<td>executed"
    assert good["executed_at"] in rows["book/good"]
    # The pages it left out: not run in this build, with the time and parameters of their last execution.
    for name in ("book/bad", "book/after"):
        this_build = rows[name].split("</td>")[1]
        expected = f"<td>not run in this build (last executed {first[name]['executed_at']})"
        assert this_build == expected, rows[name]
        assert "<td>executed</td>" not in rows[name] and "<td>reused</td>" not in rows[name]
        assert "<td>n/a</td>" in rows[name]  # no wall time of this build
    assert "fail=False" in rows["book/bad"]
    assert rows["book/intro"].split("</td>")[1] == "<td>not run in this build (no code)"
    # Rendered mid-run (a report that says running), a page of the run not yet finished is said so.
    running = dict(
        report,
        state="running",
        attempt=dict(report["attempt"], chapters=["book/good", "book/bad"], finished=["book/good"]),
    )
    rows = _status_rows(status_html(running))
    assert rows["book/bad"].split("</td>")[1].startswith("<td>not yet run in this build (last executed")
    assert rows["book/after"].split("</td>")[1].startswith("<td>not run in this build (last executed")

    # Without --force the chapter is reused: said as such, and the left-out pages still not claimed.
    assert run_execute(root, build, "--only", "book/good", "book/status") == 0
    rows = _status_rows(_html_output(build / "executed" / "book" / "status.ipynb"))
    assert rows["book/good"].split("</td>")[1] == "<td>reused"
    assert all(
        rows[n].split("</td>")[1].startswith("<td>not run in this build")
        for n in ("book/intro", "book/bad", "book/after")
    )


def test_the_status_note_never_calls_an_unfinished_or_failed_run_a_success():
    rows = [
        {
            "chapter": name,
            "status": status,
            "error": error,
            "parameters": {},
            "profile": "quick",
            "device": "cpu",
            "seconds": 1.0,
            "run": "executed",
        }
        for name, status, error in [
            ("book/a", "ok", None),
            ("book/b", "failed", {"code_cell": 4, "ename": "E", "evalue": "v"}),
            ("book/c", "ok", None),
        ]
    ]
    env = {"python": "3", "platform": "p", "device": "cpu", "packages": {}}
    attempt = {
        "command": "execute",
        "started": "then",
        "chapters": ["book/a", "book/b", "book/c", "book/status"],
        "parameters": {"book/b": {"seed": 3}},
    }

    def note(state, chapters=rows, **extra):
        page = status_html(
            {
                "profile": "quick",
                "environment": env,
                "state": state,
                "chapters": chapters,
                "attempt": {**attempt, **extra},
            }
        )
        return page.split("<table", 1)[0]

    # Running, with every other page finished and none failed: nothing to add to the rows.
    all_ok = [dict(r, status="ok", error=None) for r in rows]
    assert note("running", all_ok, finished=["book/a", "book/b", "book/c"]) == ""
    assert "still in progress" in note("running", all_ok, finished=["book/a", "book/b"])
    # Running: book/c's row is an earlier execution's, so it is named as not yet executed.
    running = note("running", finished=["book/a", "book/b"])
    assert "still in progress" in running and "book/b (code cell 4: E: v) failed" in running
    assert "Not yet executed or not yet finished: book/c;" in running
    # Running, from a report that does not say what was finished: no page named pending, but the doubt said.
    assert "is not recorded" in note("running")
    # Failed, and interrupted before book/c: both said, with the pages.
    failed = note("failed", finished=["book/a", "book/b", "book/c", "book/status"])
    assert "The last run failed." in failed and "Failed: book/b (code cell 4: E: v)." in failed
    assert "seed=3" in failed and "Not reached" not in failed
    stopped = note("interrupted", finished=["book/a", "book/b"], signal="SIGTERM", interrupted_chapter="book/b")
    assert "was interrupted (SIGTERM) while executing book/b" in stopped and "Not reached: book/c." in stopped
    # A report that says complete while a page of the run failed is not taken at its word.
    contradictory = note("complete", finished=["book/a", "book/b", "book/c"])
    assert "<strong>The last run failed.</strong> Failed: book/b (code cell 4: E: v). It was" in contradictory


def test_stale_temporaries_of_dead_runs_are_removed(tmp_path):
    folder = tmp_path / "executed" / "book"
    folder.mkdir(parents=True)
    dead, alive = (
        partial_paths(folder / "x.ipynb", pid=2**22 + 12345)[0],
        partial_paths(folder / "y.ipynb", pid=os.getppid())[0],
    )
    dead.write_text("{}")
    alive.write_text("{}")
    assert remove_stale_partials(folder / "y.ipynb") == []  # only the temporaries of the output named
    assert remove_stale_partials(folder / "x.ipynb") == [dead]
    assert remove_stale_partials(folder / "y.ipynb") == []
    assert alive.exists() and not dead.exists()


# --- the reading conventions, on a tiny built book ------------------------------------------------------
def test_reading_conventions_render_as_intended(tmp_path):
    """Alt text from cell metadata, theorem boxes without Sphinx numbers, 88-character code lines fitting
    the page; the checks catch the opposite (no alt text, a numbered box, a 110-character line)."""
    from resnet_theory.book.browser import check_page, find_chromium, html_problems, serve

    def theorem(title, nonumber):
        label = f":label: thm-{'good' if nonumber else 'bad'}\n"
        return f"```{{prf:theorem}} {title}\n{label}" + (":nonumber:\n" if nonumber else "") + "\nA statement.\n```\n"

    def figure(alt):
        header = f'---\nmystnb:\n  image:\n    alt: "{alt}"\ntags: [hide-input]\n---\n' if alt else ""
        return header + "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()"

    good = chapter(
        "Good", 'profile = "quick"\nseed = 0', figure("A line falling from 1 to 0."), "x88 = '" + "a" * 80 + "'"
    ).replace("# Good\n", "# Good\n\n" + theorem("Paper, Theorem 2.1", True))
    wide_table = (
        "from IPython.display import HTML, display\n"  # 3 x 60 unbreakable letters
        "cells = ''.join('<td>' + c * 60 + '</td>' for c in 'wvu')\n"
        "display(HTML('<table class=\"wide\"><tr>' + cells + '</tr></table>'))"
    )
    bad = chapter("Bad", 'profile = "quick"\nseed = 0', figure(""), "x110 = '" + "b" * 101 + "'", wide_table).replace(
        "# Bad\n", "# Bad\n\n" + theorem("Paper, Theorem 2.1", False)
    )
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "good": good, "bad": bad})
    (root / "_config.yml").write_text(
        (root / "_config.yml").read_text().replace("sphinx:\n", "sphinx:\n  extra_extensions: [sphinx_proof]\n")
    )
    build = tmp_path / "build"
    assert run_execute(root, build, html=True) == 0
    html = build / "html"
    good_page, bad_page = html / "book" / "good.html", html / "book" / "bad.html"
    assert 'alt="A line falling from 1 to 0."' in good_page.read_text()
    assert html_problems(good_page.read_text()) == []
    problems = html_problems(bad_page.read_text())
    assert any(p.startswith("image without alternative text") for p in problems), problems
    assert any(p.startswith("numbered by Sphinx: 'Theorem 1") for p in problems), problems
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on this machine: the in-browser part did not run")
    assert check_page(chromium, good_page).ok, check_page(chromium, good_page).problems
    with serve(html, "/some/prefix/") as url:
        served = check_page(chromium, good_page, url, html)
        bad_report = check_page(chromium, bad_page, url, html)
    assert served.ok and served.images == 1 and not served.broken_images, served.problems
    assert len(bad_report.wide_code) == 1 and "x110" in bad_report.wide_code[0]
    assert not served.wide_tables
    assert len(bad_report.wide_tables) == 1 and bad_report.wide_tables[0].split("px: ")[1].startswith("wide: www")


def test_an_only_run_that_builds_html_renders_the_in_process_pages_too(tmp_path):
    """With HTML, ``--only`` also runs the status page (in-process): the built page reports on this build, not
    on an earlier one that may have shown the selected chapter as ok; and the pages without code (the root page
    here), which the HTML needs and which are only converted."""
    root, _ = _status_page_book(tmp_path)
    toc = toc_files(root)
    assert select_entries(root, toc, ["book/good"], html=True) == ["book/intro", "book/good", "book/status"]
    assert select_entries(root, toc, ["book/good.md"], html=False) == ["book/good"]
    assert select_entries(root, toc, None, html=True) == toc
    with pytest.raises(BookError, match="not in _toc.yml: book/nope"):
        select_entries(root, toc, ["book/good", "book/nope"], html=True)


def test_chapters_run_in_a_kernel_reached_over_unix_sockets_not_tcp(tmp_path, capfd):
    """The kernel listens on Unix sockets in the user's runtime folder, not on TCP ports on localhost (which any
    local user could reach): no "running over TCP without encryption" warning, no socket file left anywhere."""
    root = make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n",
            "sock": chapter("Sock", 'profile = "quick"\nseed = 0', "import json, os\nprint('pid', os.getpid())"),
        },
    )
    build = tmp_path / "build"
    assert run_execute(root, build) == 0
    err = capfd.readouterr().err
    assert "without encryption" not in err
    assert "pid" in outputs(build / "executed" / "book" / "sock.ipynb")
    assert not [p for p in (root / "book").iterdir() if "ipc" in p.name], "socket files left beside the chapter"
    assert kernel_manager_class()().transport == ("ipc" if os.name == "posix" else "tcp")


def test_the_executed_notebook_carries_no_copy_of_its_source_and_no_machine_path(small_book, tmp_path):
    build = tmp_path / "build"
    run_execute(small_book, build, "--only", "book/good")
    path = build / "executed" / "book" / "good.ipynb"
    record = nbformat.read(path, as_version=4).metadata["papermill"]
    assert record["input_path"] == "book/good.md" and record["output_path"] == "good.ipynb"
    text = path.read_text()
    assert str(tmp_path) not in text and "cell_type" not in json.dumps(record)
