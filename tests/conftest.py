"""Shared fixtures: the whole book executed and built once per test session (quick profile)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The jupytext header of a MyST-markdown notebook, for the small books and chapters tests write.
MYST_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


@dataclass
class BuiltBook:
    returncode: int
    output: str
    build_dir: Path
    seconds: float

    @property
    def html(self) -> Path:
        return self.build_dir / "html"


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BuiltBook:
    """``python -m resnet_theory.book execute`` over the real book, into a fresh build folder."""
    build_dir = tmp_path_factory.mktemp("book-build")
    env = dict(os.environ)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "resnet_theory.book", "execute", "--build-dir", str(build_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=40 * 60,
    )
    seconds = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    (build_dir / "execute.log").write_text(output)
    print(f"\n[book] executed and built in {seconds:.0f} s (exit {proc.returncode})")
    return BuiltBook(proc.returncode, output, build_dir, seconds)


def pytest_collection_modifyitems(config, items):
    """A test that uses the built book is a ``book`` test, whatever its file says: ``make check`` leaves every
    one of them out (``-m "not book and not browser"``), so the fast tier never executes the book."""
    for item in items:
        if "built_book" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.book)


@pytest.fixture(autouse=True)
def interpreter_hooks_left_as_found():
    """Each test leaves the interpreter's tracing as it found it: memory tracing (``tracemalloc``), the trace and
    the profile function. Found in CI: one test left ``tracemalloc`` on (a refused benchmark build), and every
    later test on that pytest worker ran many times slower; the Shamir claims' fixture took 9 minutes, not one."""
    import tracemalloc

    def hooks():
        return {"tracemalloc": tracemalloc.is_tracing(), "trace": sys.gettrace(), "profile": sys.getprofile()}

    before = hooks()
    yield
    after = hooks()
    assert after == before, f"the test changed the interpreter's tracing and left it so: {before} -> {after}"


@pytest.fixture
def one_thread():
    """One torch thread for the test (small training runs on a busy 2-core machine), restored afterwards."""
    import torch  # here, not at the top: pytest's main process (xdist's controller) loads this file, runs no test

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def one_thread_for_the_module():
    """One torch and one BLAS thread while a module's claims run, as in their chapter (the claims test files use
    it for every test): on a busy 2-core machine a second thread spins, and the tiny claims took about 2.5 times
    the CPU seconds (measured)."""
    import torch  # here, not at the top (see one_thread)
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    torch.set_num_threads(before)


# --- math in what a page shows (issue 33): one scan, run by each claims test file on the runs it already has ----
def assert_no_ascii_math_shown(chapter: str, runs) -> None:
    """Every claim of ``chapter`` (``runs``: one run of each, in declaration order, at the tiny profile), rendered
    as its chapter shows it (the evidence table) and as the ledger does (the evidence parts and the erratum
    sentence), has no ASCII spelling of mathematics outside its ``$...$`` math (``tests/test_ledger_math.py``)."""
    from resnet_theory.claims.chapter import evidence_html
    from resnet_theory.claims.registry import chapter_claims
    from resnet_theory.ledger_html import ascii_math, erratum_sentence, evidence_table_html

    runs = list(runs)
    assert [run.record.id for run in runs] == list(chapter_claims(chapter).claims), "not every claim was scanned"
    found = {}
    for run in runs:
        shown = evidence_html(run) + evidence_table_html(run.record) + erratum_sentence(run.record)
        if ascii_math(shown):
            found[run.record.id] = ascii_math(shown)
    assert not found, found


# --- command lines: every bad value ends in one line "error: ..." and a status ---------------------------------
def bad_int_options(minimums: dict[str, int]) -> list[tuple[list[str], str]]:
    """``(argv, words)`` cases for integer options (``{"--steps": 1, ...}``, each with its smallest value): one
    value below the minimum and one that is not an integer, with the one-line message each must give."""
    cases = []
    for flag, low in minimums.items():
        cases.append(([flag, str(low - 1)], f"argument {flag}: must be an integer >= {low}, got '{low - 1}'"))
        cases.append(([flag, "1.5"], f"argument {flag}: expected an integer, got '1.5'"))
    return cases


def one_line_error(capsys, main, argv, code: int = 2) -> str:
    """Run a command line's ``main(argv)``; check that it returns ``code`` having printed exactly one line,
    ``error: ...``, on stderr; return that line."""
    status = main(list(argv))
    err = capsys.readouterr().err
    assert status == code, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


# --- the executor on a small book, in this process --------------------------------------------------------------
def run_execute(root: Path, build: Path, *extra: str, jobs: int | str | None = 1, html: bool = False) -> int:
    """``execute`` (``resnet_theory.book.cli.main``, in this process) over the book at ``root`` into ``build``, then
    ``extra`` (``--only``, ``-p``, ``--force``...): one job (the chapters in this process's kernels, no worker
    process each) unless ``jobs`` says otherwise (None: the executor's own default), no HTML unless ``html``. Its
    exit status."""
    from resnet_theory.book.cli import main  # here, not at the top (see one_thread)

    argv = ["execute", "--root", str(root), "--build-dir", str(build)]
    argv += [] if jobs is None else ["--jobs", str(jobs)]
    argv += [] if html else ["--no-html"]
    return main([*argv, *extra])


@pytest.fixture(scope="session")
def reader_html(tmp_path_factory) -> Path:
    """The small book of ``tests/reader_book.py`` (tables, a ledger, a theorem box, a hidden input), built once for
    the dark-mode and PDF tests; its HTML folder."""
    from reader_book import build_reader_book

    return build_reader_book(tmp_path_factory.mktemp("reader-book"))


def sphinx_page(tmp_path: Path, extension: str, body: str) -> str:
    """``body`` (reStructuredText) built by Sphinx with the one ``extension`` (a module name); the page's HTML.
    The book's Sphinx extensions are tested this way, without executing a notebook."""
    (tmp_path / "conf.py").write_text(f"extensions = [{extension!r}]\n")
    (tmp_path / "index.rst").write_text(f"Test\n====\n\n{body}\n")
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-q", "-b", "html", str(tmp_path), str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return (tmp_path / "out" / "index.html").read_text()
