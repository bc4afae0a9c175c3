"""Where commands may write (issue 32 item 1), the rule shared by the book tooling and the claims command line
(:mod:`resnet_theory.outputs`): ``claims verify --record`` refuses the folders ``book run -o`` refuses."""

from __future__ import annotations

import json

import pytest

from resnet_theory import outputs
from resnet_theory.book.safety import check_output as book_check_output
from resnet_theory.book.toc import BookError
from resnet_theory.claims import cli as claims_cli
from test_executor import chapter, make_book

from conftest import one_line_error


@pytest.fixture
def fake_book(tmp_path):
    root = make_book(
        tmp_path / "src", {"intro": "# Intro\n", "good": chapter("Good", 'profile = "quick"\nseed = 0', "1")}
    )
    for name in ("lib", "tests"):
        (root / name).mkdir()
    (root / "_build" / "executed" / "book").mkdir(parents=True)
    (root / "_build" / "cache").mkdir()
    return root


def _no_runs(monkeypatch):
    """Claims that run instantly: every run gives nothing, so only the output check is exercised."""
    monkeypatch.setattr(claims_cli, "_run_all", lambda *a, **k: [])


@pytest.mark.parametrize(
    "build_dir", ["book", "lib", "tests", ".", "book/../book", "_build/executed", "_build/cache/x", "link"]
)
def test_claims_verify_record_refuses_source_folders_and_build_records(fake_book, build_dir, monkeypatch, capsys):
    (fake_book / "link").symlink_to(fake_book / "book")
    monkeypatch.chdir(fake_book)
    _no_runs(monkeypatch)
    before = sorted(p.relative_to(fake_book) for p in fake_book.rglob("*"))
    err = one_line_error(
        capsys, claims_cli.main, ["verify", "--all", "--seeds", "0", "--record", "--build-dir", build_dir]
    )
    assert "--build-dir" in err and build_dir in err
    assert sorted(p.relative_to(fake_book) for p in fake_book.rglob("*")) == before
    assert not list(fake_book.rglob(claims_cli.SEEDS_FILE))


def test_claims_verify_record_refuses_a_book_folder_from_outside_the_book(fake_book, tmp_path, monkeypatch, capsys):
    """The book is found above the folder too, not only above the working directory."""
    monkeypatch.chdir(tmp_path)
    _no_runs(monkeypatch)
    err = one_line_error(
        capsys, claims_cli.main, ["verify", "--all", "--seeds", "0", "--record", "--build-dir", str(fake_book / "book")]
    )
    assert "inside the book's sources" in err
    assert not (fake_book / "book" / claims_cli.SEEDS_FILE).exists()


def test_write_seeds_file_refuses_a_source_folder(fake_book, monkeypatch):
    monkeypatch.chdir(fake_book)
    with pytest.raises(ValueError, match="inside the book's sources"):
        claims_cli.write_seeds_file(fake_book / "book", "quick", [0], [])
    assert not (fake_book / "book" / claims_cli.SEEDS_FILE).exists()


@pytest.mark.parametrize("build_dir", ["_build", "_build/seed-1", "OUTSIDE"])
def test_claims_verify_record_writes_into_a_build_folder(fake_book, tmp_path, build_dir, monkeypatch):
    monkeypatch.chdir(fake_book)
    _no_runs(monkeypatch)
    target = tmp_path / "elsewhere" if build_dir == "OUTSIDE" else fake_book / build_dir
    assert claims_cli.main(["verify", "--all", "--seeds", "0", "--record", "--build-dir", str(target), "--json"]) in (
        0,
        1,
    )
    assert json.loads((target / claims_cli.SEEDS_FILE).read_text())["seeds"] == [0]


def test_book_safety_keeps_its_api_and_raises_book_errors(fake_book):
    """``book.safety.check_output`` is the shared rule, raising the book tooling's one-line BookError."""
    with pytest.raises(BookError, match="inside the book's sources"):
        book_check_output(fake_book / "book" / ".." / "book" / "good.md", fake_book, "-o")
    with pytest.raises(BookError, match="inside the book's sources"):
        book_check_output(fake_book / "book" / "x.ipynb", fake_book, "-o")
    with pytest.raises(outputs.OutputRefused, match="executed/"):
        outputs.check_output(fake_book / "_build" / "executed" / "book" / "other.ipynb", fake_book, "-o")
    assert outputs.check_output(fake_book / "_build" / "x.ipynb", fake_book, "-o") == (fake_book / "_build" / "x.ipynb")
    assert outputs.book_roots(fake_book / "book" / "nothing" / "here") == [fake_book]


@pytest.mark.parametrize("out_dir", ["book/run", "lib", "tests/x", "_build/executed/run", "_build/cache"])
def test_train_cli_refuses_an_out_dir_among_the_sources(fake_book, out_dir, monkeypatch, capsys):
    """``python -m resnet_theory.engine.train --out-dir`` wrote checkpoints into book/, lib/ and a build's
    executed/ folder; it refuses them before anything runs, with one line."""
    from resnet_theory.engine import train as train_module

    monkeypatch.chdir(fake_book)
    monkeypatch.setattr(train_module, "train", lambda config: pytest.fail("training ran"))
    err = one_line_error(capsys, train_module.main, ["--dataset", "digits", "--steps", "1", "--out-dir", out_dir])
    assert "--out-dir" in err
    assert not (fake_book / out_dir / "checkpoint.pt").exists()


def test_train_cli_accepts_a_run_folder_in_the_tree_or_outside(fake_book, tmp_path, monkeypatch):
    from resnet_theory.engine import train as train_module

    monkeypatch.chdir(fake_book)
    seen = []
    monkeypatch.setattr(train_module, "train", lambda config: seen.append(config.out_dir) or 1 / 0)
    for out_dir in ("runs/digits", "_build/runs", str(tmp_path / "elsewhere")):
        with pytest.raises(ZeroDivisionError):
            train_module.main(["--dataset", "digits", "--steps", "1", "--out-dir", out_dir])
    assert seen == ["runs/digits", "_build/runs", str(tmp_path / "elsewhere")]


def test_gpu_check_refuses_an_out_folder_among_the_sources(fake_book, monkeypatch, capsys):
    from resnet_theory.engine import gpu_check

    monkeypatch.chdir(fake_book)
    err = one_line_error(capsys, gpu_check.main, ["book/gpu", "--cpu-rehearsal", "--only", "device"])
    assert "OUT book/gpu" in err
    assert not (fake_book / "book" / "gpu").exists()


def test_claims_verify_says_which_claims_failed_and_records_no_agreement_for_them(fake_book, monkeypatch, capsys):
    """Found by the issue 32 probe: a claim whose function failed (a BudgetError from a huge knob) ended with
    'as recorded', and --record wrote that 1 of 1 seeds agreed on its missing verdict."""
    monkeypatch.chdir(fake_book)
    cid = claims_cli.all_claims()[0].id
    failed = {"id": cid, "chapter": "x", "error": "BudgetError: depth=10 needs about ...", "seed": 0}
    monkeypatch.setattr(claims_cli, "_run_all", lambda *a, **k: [dict(failed, seed=s) for s in (0, 1)])
    argv = ["verify", cid, "--seeds", "0", "1", "--build-dir", str(fake_book / "_build")]
    assert claims_cli.main(argv) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].endswith(f"seeds [0, 1]: 1 failed to run: {cid}"), "not 'as recorded' after it"
    assert "0 of 2 give the same verdict" in out
    assert claims_cli.main(["verify", "--all", "--seeds", "0", "1", "--record", "--build-dir", "_build"]) == 1
    recorded = json.loads((fake_book / "_build" / claims_cli.SEEDS_FILE).read_text())["claims"][cid]
    assert recorded == {"verdicts": [None, None], "seeds_agreeing": 0}


def test_run_o_names_a_device_as_a_device_not_a_folder(fake_book, capsys):
    """Found by the issue 32 probe: ``run -o /dev/null`` was refused as 'a folder stands there'."""
    from resnet_theory.book.cli import main as book_main

    argv = ["run", str(fake_book / "book" / "good.md"), "--root", str(fake_book), "-o", "/dev/null"]
    err = one_line_error(capsys, book_main, argv)
    assert "a device or other special file stands there" in err
    err = one_line_error(capsys, book_main, [*argv[:-1], str(fake_book / "_build")])
    assert "a folder stands there" in err


def test_another_checkouts_sources_are_sources_too(fake_book, tmp_path, capsys):
    """Found by a misuse audit: the book tooling checked an output only against the book it runs, so
    ``execute --build-dir OTHER/book/out`` and ``pdf -o OTHER/book/x.pdf`` wrote into another checkout's sources.
    A refused run leaves no new folder behind, and a folder made before a later refusal (a bad ``-p``) is
    removed again."""
    from resnet_theory.book.cli import main as book_main

    other = make_book(tmp_path / "other", {"intro": "# Intro\n"})
    (other / "lib").mkdir()
    base = ["execute", "--root", str(fake_book), "--no-html", "--only", "book/good"]
    for target in ("book/out", "lib", "tests/x", "."):
        err = one_line_error(capsys, book_main, [*base, "--build-dir", str(other / target)])
        assert "--build-dir" in err and ("inside the book's sources" in err or "source tree" in err), err
    assert not (other / "book" / "out").exists() and not (other / "tests").exists()
    with pytest.raises(outputs.OutputRefused, match="inside the book's sources"):
        outputs.check_output(other / "book" / "x.pdf", fake_book, "-o", suffix=".pdf")
    fresh = tmp_path / "fresh" / "build"
    err = one_line_error(capsys, book_main, [*base, "--build-dir", str(fresh), "-p", "nosuch", "1"])
    assert "nosuch" in err and not fresh.exists()
