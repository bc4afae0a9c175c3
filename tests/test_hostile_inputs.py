"""Hostile input to the command lines (the book executor, the claims, the engine's and the benchmarks' tools): each
found by an adversarial audit, each refused in one line before anything runs or written where the reader meant."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from resnet_theory.book.build import check_html_folder
from resnet_theory.book.cli import main
from resnet_theory.book.plan import plan_chapters
from resnet_theory.book.toc import BookError
from test_executor import chapter, make_book

from conftest import ROOT

WRITES_RUNS = (
    "import pathlib\n"
    "pathlib.Path(runs_dir).mkdir(parents=True, exist_ok=True)\n"
    "(pathlib.Path(runs_dir) / 'run.txt').write_text((pathlib.Path(data_dir) / 'in.txt').read_text())"
)


# --- folder parameters: relative to where the command runs, never into the sources --------------------------------
def test_a_relative_folder_parameter_names_the_folder_where_the_command_runs(tmp_path, monkeypatch):
    """Found by an audit: the experiments chapter's own command, ``run book/experiments.md -p data_dir DATA -p runs_dir
    runs`` from the repository's root, looked for the data in ``book/DATA`` and kept its CIFAR checkpoints in
    ``book/runs`` (inside the sources, and hidden by .gitignore's ``runs/``): the kernel runs in the chapter's
    folder, and the executor passed the relative paths on unchanged."""
    params = 'profile = "quick"\nseed = 0\nruns_dir = None\ndata_dir = None'
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "writes": chapter("Writes", params, WRITES_RUNS)})
    work = tmp_path / "work"
    (work / "DATA").mkdir(parents=True)
    (work / "DATA" / "in.txt").write_text("measured")
    monkeypatch.chdir(work)
    argv = ["run", str(root / "book" / "writes.md"), "--root", str(root), "--build-dir", str(tmp_path / "build")]
    assert main([*argv, "-p", "data_dir", "DATA", "-p", "runs_dir", "runs"]) == 0
    assert (work / "runs" / "run.txt").read_text() == "measured"
    assert sorted(p.name for p in (root / "book").iterdir()) == ["intro.md", "writes.md"]
    # inside the book's root, the chapter is given the folder relative to its own (no path of this machine)
    (plan,) = plan_chapters(root, ["book/writes"], "quick", [("runs_dir", "runs"), ("data_dir", str(work / "DATA"))])
    assert plan.parameters["data_dir"] == str(work / "DATA")  # an absolute path is kept as given
    monkeypatch.chdir(root)
    (plan,) = plan_chapters(root, ["book/writes"], "quick", [("writes:runs_dir", "runs"), ("data_dir", "")])
    assert plan.parameters == {"profile": "quick", "runs_dir": "../runs", "data_dir": ""}


@pytest.mark.parametrize(
    "value, words",
    [
        ("book/runs", "-p runs_dir book/runs: inside the book's sources"),
        ("lib", "-p runs_dir lib: inside the book's sources"),
        ("tests/runs", "-p runs_dir tests/runs: inside the book's sources"),
        ("_build/executed/runs", "inside the build folder"),
        ("README.md", "-p runs_dir README.md: not a folder (a file stands there)"),
    ],
)
def test_a_folder_the_experiments_chapter_writes_into_is_refused_in_the_sources(monkeypatch, value, words):
    monkeypatch.chdir(ROOT)
    with pytest.raises(BookError) as info:
        plan_chapters(ROOT, ["book/experiments"], "quick", [("experiments:runs_dir", value)])
    assert words in str(info.value) and "\n" not in str(info.value), info.value
    # the folder it reads is not an output: a data folder under the book is the reader's to give
    (plan,) = plan_chapters(ROOT, ["book/experiments"], "quick", [("data_dir", "book/data")])
    assert plan.parameters["data_dir"] == "data"


# --- the book command's options: one line, and a help that says what each does ------------------------------------
@pytest.mark.parametrize(
    "argv",
    [[], ["run"], ["bogus"], ["execute", "--jobs"], ["run", "book/linear.md", "-p", "seed"], ["execute", "--bogus"]],
)
def test_a_bad_option_of_the_book_command_is_one_line(argv, capsys):
    """Found by an audit: argparse's usage (four lines for ``run``) came before the error, where every other
    command of the project prints one ``error:`` line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err


def test_the_book_commands_help_says_what_each_command_and_parameter_does(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "execute the book's chapters" in out and "execute one chapter (always)" in out
    assert main(["run", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "its claims beside it (FILE.claims.json)" in out and "CHAPTER:NAME" in out and "data_dir" in out


# --- gpu_figures add: a folder it cannot write is one line, and leaves nothing behind ------------------------------
def test_gpu_figures_add_into_a_folder_it_cannot_write_is_one_line(tmp_path, capsys, monkeypatch):
    """Found by an audit: ``add FILE --to X/sub`` with X a file, or a disk that fills while it copies, ended in a
    traceback (NotADirectoryError, OSError) instead of one line."""
    import errno
    import json

    from resnet_theory.engine import gpu_figures
    from test_gpu_check import measurement

    run = tmp_path / "gpu-check.json"
    run.write_text(json.dumps(measurement()))
    (tmp_path / "a-file").write_text("")
    assert gpu_figures.main(["add", str(run), "--to", str(tmp_path / "a-file" / "gpu")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'a-file' / 'gpu'}/") and "cannot be written (Not a directory)" in err
    assert err.count("\n") == 1
    folder = tmp_path / "gpu"

    def full_disk(self, data):
        self.open("wb").write(data[:10])  # a part written, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    assert gpu_figures.main(["add", str(run), "--to", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "cannot be written (No space left on device); nothing was written" in err and err.count("\n") == 1
    assert list(folder.iterdir()) == []  # neither the measurement nor its temporary


# --- the quick-book benchmark: a run of the executor that fails is one line -----------------------------------------
def test_quick_book_says_in_one_line_why_an_execution_failed(tmp_path, capsys):
    """Found by an audit: ``--execute book/nonexistent`` (or a --build-dir the executor refuses, or a chapter that
    fails) ended in a RuntimeError traceback holding the executor's whole output; and --help's description stopped
    mid-sentence ("... where a chapter's seconds go, and")."""
    from resnet_theory.benchmarks import quick_book

    root = make_book(
        tmp_path / "src",
        {"intro": "# Intro\n", "bad": chapter("Bad", 'profile = "quick"\nseed = 0', "raise ValueError('on purpose')")},
    )
    base = ["--build-dir", str(tmp_path / "b"), "--root", str(root)]
    for entries, code, words in (
        (["book/nonexistent"], 2, "failed (exit 2): not in _toc.yml: book/nonexistent"),
        (["book/bad"], 1, "failed (exit 1): [book] FAILED: chapter "),
    ):
        with pytest.raises(SystemExit) as stop:
            quick_book.main(["--execute", *entries, *base])
        err = capsys.readouterr().err
        assert stop.value.code == code and err.startswith("error: executing with --jobs") and words in err, err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert "ValueError: on purpose" in err
    with pytest.raises(SystemExit):
        quick_book.main(["--help"])
    assert "one after another." in " ".join(capsys.readouterr().out.split())


# --- the experiments benchmark's pilot: a knob of another type, or one the training refuses, is one line ------------
def test_the_experiments_pilot_refuses_a_bad_knob_in_one_line(tmp_path, capsys, monkeypatch):
    """Found by an audit: ``--pilot P --knob n_seeds=1.5`` (or steps=NaN) ended in a TypeError traceback from the
    profile table, and ``--knob steps=-1`` in a ConfigError traceback from a worker process."""
    from resnet_theory.benchmarks import experiments
    from resnet_theory.engine.train import ConfigError

    pilot = str(tmp_path / "pilot.json")
    ran = []
    monkeypatch.setattr(experiments, "run_workload", lambda *a: ran.append(a))
    for knob, words in (
        ("n_seeds=1.5", "knob 'n_seeds': expected a value like"),
        ("steps=NaN", "got nan"),
        ("steps=-1", "knob 'steps': -1 is not positive"),  # refused by the profile table, before any worker
    ):
        with pytest.raises(SystemExit) as stop:
            experiments.main(["--pilot", pilot, "--knob", knob])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.startswith("error: --knob: ") and words in err and err.count("\n") == 1
    assert ran == []

    def refused(*args):  # what the engine refuses that the table lets through: one line, exit 2
        raise ConfigError("steps must be a positive integer (at least 1), got 3 (int)")

    monkeypatch.setattr(experiments, "run_workload", refused)
    assert experiments.main(["--pilot", pilot, "--knob", "steps=3"]) == 2
    assert capsys.readouterr().err == "error: --pilot: steps must be a positive integer (at least 1), got 3 (int)\n"
    assert not (tmp_path / "pilot.json").exists()


# --- claims verify --knob: JSON, so no NaN and no infinity -----------------------------------------------------------
@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e999", "[1.0, -Infinity]", '{"a": NaN}'])
def test_verify_refuses_a_knob_that_is_not_a_finite_number(value, capsys, monkeypatch):
    """Found by an audit: Python's json reads ``NaN``, ``Infinity`` and ``1e999`` (inf), so ``verify ID --knob
    figure_eps=NaN`` ran and exited 0 where the book's ``-p knobs`` refuses a value that is not finite."""
    from resnet_theory.claims import cli

    monkeypatch.setattr(cli, "_run_all", lambda *a: pytest.fail("a claim ran"))
    assert cli.main(["verify", "shamir/figure-penalty", "--knob", f"figure_eps={value}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --knob figure_eps: ") and "is not a finite number" in err and err.count("\n") == 1


# --- jupyter_prose: an -o it cannot write is one line, and a notebook there is never left cut short -----------------
def test_jupyter_prose_reports_an_unwritable_output_in_one_line_and_keeps_the_notebook_there(tmp_path, capsys):
    """Found by an audit: ``-o X/sub`` with X a file ended in a NotADirectoryError traceback, a missing ``-o`` in
    argparse's usage, and the notebook was written in place (a full disk left it cut short)."""
    import errno
    from unittest import mock

    from resnet_theory.book import jupyter_prose

    source = tmp_path / "c.md"
    source.write_text(chapter("C", 'profile = "quick"\nseed = 0', "x = 1"))
    (tmp_path / "a-file").write_text("")
    for argv, words in (
        ([str(source), "-o", str(tmp_path / "a-file" / "sub")], f"not a folder ({tmp_path / 'a-file'} is a file)"),
        ([str(source)], "the following arguments are required: -o/--output"),
    ):
        assert jupyter_prose.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and err.count("\n") == 1, err
    out = tmp_path / "out"
    assert jupyter_prose.main([str(source), "-o", str(out)]) == 0
    written = (out / "c.ipynb").read_bytes()
    real_write = Path.write_text

    def full_disk(self, text, *args, **kwargs):
        real_write(self, text[:100], *args, **kwargs)
        raise OSError(errno.ENOSPC, "No space left on device")

    with mock.patch.object(Path, "write_text", full_disk):
        assert jupyter_prose.main([str(source), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err == f"error: {out / 'c.ipynb'}: cannot be written (No space left on device)\n"
    assert (out / "c.ipynb").read_bytes() == written and [p.name for p in out.iterdir()] == ["c.ipynb"]


@pytest.mark.parametrize("module", ["pdf", "browser", "verdict_diff"])
def test_the_other_book_commands_refuse_a_bad_option_in_one_line(module, capsys):
    """Found by an audit: pdf, browser and verdict_diff printed argparse's usage before the error."""
    import importlib

    command = importlib.import_module(f"resnet_theory.book.{module}")
    with pytest.raises(SystemExit) as stop:
        command.main(["--bogus"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err


# --- Ctrl-C or SIGTERM outside a page's execution: one line, and the report says where -----------------------------
@pytest.mark.parametrize("signal_name, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_an_interruption_while_the_request_is_checked_is_one_line(signal_name, code, tmp_path, capsys, monkeypatch):
    """Found by an audit: Ctrl-C or SIGTERM in a run's first seconds (reading the chapter, importing its claims
    module for -p knobs) printed a 70-line traceback of whatever was being imported, and exited 1 for SIGTERM."""
    from resnet_theory.book import run_command
    from resnet_theory.book.execute import BookInterrupted

    def stopped(*args):
        raise BookInterrupted(signal_name) if signal_name == "SIGTERM" else KeyboardInterrupt()

    monkeypatch.setattr(run_command, "plan_chapters", stopped)
    build = tmp_path / "build"
    assert main(["run", str(ROOT / "book" / "smooth_maps.md"), "--build-dir", str(build)]) == code
    err = capsys.readouterr().err
    assert err == f"[book] interrupted ({signal_name}) before any page was executed; nothing was written\n"
    assert not build.exists()  # the folder it made for the run is gone again


def test_an_interruption_while_the_html_is_built_is_reported_where_it_came(tmp_path, capsys, monkeypatch):
    """Found by an audit: Ctrl-C while Jupyter Book built the HTML (a minute or more) ended in a traceback, with the
    report saying the run was complete; and the status page of a run stopped between pages said it was
    "interrupted (SIGINT) while executing None"."""
    from resnet_theory.book import build as build_module
    from resnet_theory.book.report import load_report
    from resnet_theory.book.status import status_html

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "_build_html", interrupted)
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "one": chapter("One", 'profile = "quick"\nseed = 0')})
    build = tmp_path / "build"
    argv = ["execute", "--root", str(root), "--build-dir", str(build), "--jobs", "1"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err == "[book] interrupted (SIGINT) while the HTML was built; no HTML built\n"
    report = load_report(build)
    assert report["state"] == "interrupted" and report["attempt"]["interrupted_during"] == "while the HTML was built"
    assert "The last run was interrupted (SIGINT) while the HTML was built." in status_html(report)
    report["attempt"].pop("interrupted_during")
    assert "The last run was interrupted (SIGINT) between pages." in status_html(report)
    assert "None" not in status_html(report)


# --- claims verify --all: Ctrl-C and SIGTERM stop its worker processes too ---------------------------------------
def _dies(*args):
    """A chapter's job that kills its worker process (as the out-of-memory killer would)."""
    import os

    os._exit(3)


@pytest.mark.parametrize(
    "signal_name, code, settle", [("SIGINT", 130, 3.0), ("SIGINT", 130, 0.0), ("SIGTERM", 143, 3.0)]
)
def test_verify_all_stops_with_its_workers_when_interrupted(signal_name, code, settle):
    """Found by an audit: Ctrl-C during ``verify --all`` hung for minutes (ProcessPoolExecutor's workers survive a
    KeyboardInterrupt and run their chapters to the end while the shutdown waits for them), and SIGTERM killed the
    command but left its two workers running alone. ``settle``: seconds after the workers appear, so that they run
    claims (3) or are still starting, importing torch (0: a Ctrl-C there aborted a worker inside torch's C++
    initialisation with "terminate called ..." lines, until the workers started with SIGINT blocked)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "resnet_theory.claims", "verify", "--all", "--jobs", "2"],
        cwd=ROOT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    workers = []
    try:
        parent = psutil.Process(proc.pid)
        deadline = time.monotonic() + 120
        while len([c for c in parent.children() if "spawn_main" in " ".join(c.cmdline())]) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, "no two workers started"
            time.sleep(0.2)
        workers = [c for c in parent.children() if "spawn_main" in " ".join(c.cmdline())]
        time.sleep(settle)  # 3: the workers are running claims; 0: they are still starting
        sig = getattr(signal, signal_name)
        # Ctrl-C in a terminal reaches the whole process group (the workers too); `kill` the command only
        os.killpg(proc.pid, sig) if signal_name == "SIGINT" else proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    _, alive = psutil.wait_procs(workers, timeout=5)
    for worker in alive:  # a failing run leaves none behind either
        worker.kill()
    assert proc.returncode == code and err == f"error: interrupted ({signal_name})\n", err
    assert alive == [], "worker processes outlived the command"


def test_verify_says_in_one_line_that_a_worker_process_died(capsys, monkeypatch):
    from resnet_theory.claims import cli

    monkeypatch.setattr(cli, "_chapter_job", _dies)
    assert cli.main(["verify", "hardt-ma/thm-2.1", "shamir/thm-1", "--jobs", "2"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: a worker process died while it ran claims") and err.count("\n") == 1


def test_a_chapters_own_parameter_wins_over_the_books_whatever_their_order():
    """Found by an audit: ``-p smooth_maps:seed 3 -p seed 1`` ran smooth_maps at seed 1 (the later, general value
    replaced the chapter's own), and ``-p seed 1 -p smooth_maps:seed 3`` at seed 3."""
    for overrides in ([("smooth_maps:seed", "3"), ("seed", "1")], [("seed", "1"), ("smooth_maps:seed", "3")]):
        plans = plan_chapters(ROOT, ["book/smooth_maps", "book/linear_predictors"], "quick", overrides)
        assert [p.parameters["seed"] for p in plans] == [3, 1], overrides


def test_verify_record_refuses_a_file_for_a_folder_before_it_runs_and_loses_nothing_when_it_cannot_write(
    tmp_path, capsys, monkeypatch
):
    """Found by an audit: ``verify --all --seeds 0 1 --record --build-dir FILE`` ran every claim at every seed (many
    minutes), then ended in a FileExistsError traceback, and a write that failed (a full disk) lost what was found:
    the record was written before the results were printed."""
    import errno
    import json

    from resnet_theory.claims import cli

    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(cli, "_run_all", lambda *a: pytest.fail("the claims ran"))
    for folder, words in ((tmp_path / "a-file", "not a folder"), (tmp_path / "a-file" / "b", "a-file is a file)")):
        argv = ["verify", "--all", "--seeds", "0", "1", "--record", "--build-dir", str(folder)]
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --build-dir {folder}: not a folder") and words in err and err.count("\n") == 1
    monkeypatch.setattr(cli, "_run_all", lambda *a: [])

    def full_disk(self, text, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    build = tmp_path / "build"
    assert cli.main(["verify", "--all", "--seeds", "0", "1", "--record", "--build-dir", str(build), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["claims"] and "cannot write" in err and "No space left on device" in err
    assert err.count("\n") == 1 and list(build.iterdir()) == []


# --- gpu_check: OUT and --keep are folders outside the sources ---------------------------------------------------
def test_gpu_check_refuses_a_file_for_its_folders_and_keeps_out_of_the_sources(tmp_path, capsys, monkeypatch):
    """Found by an audit: ``gpu_check OUT`` with OUT a file (or under one) ended in a NotADirectoryError traceback,
    and ``--keep book/x`` wrote the synthetic CIFAR batches and checkpoints into the book's sources."""
    from resnet_theory.engine import gpu_check

    monkeypatch.setattr(gpu_check, "run_checks", lambda *a, **k: pytest.fail("a step ran"))
    monkeypatch.chdir(ROOT)
    (tmp_path / "a-file").write_text("")
    cases = (
        ([str(tmp_path / "a-file")], f"OUT {tmp_path / 'a-file'}: not a folder"),
        ([str(tmp_path / "a-file" / "out")], "not a folder (" + str(tmp_path / "a-file") + " is a file)"),
        (["--keep", str(tmp_path / "a-file")], f"--keep {tmp_path / 'a-file'}: not a folder"),
        (["--keep", "book/gpu-keep"], "--keep book/gpu-keep: inside the book's sources"),
    )
    for args, words in cases:
        assert gpu_check.main(["--cpu-rehearsal", "--only", "device", *args]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and err.count("\n") == 1, err
    assert not (ROOT / "book" / "gpu-keep").exists()


# --- the engine's benchmark: sizes, processes and threads a machine cannot give are refused at once ----------------
@pytest.mark.parametrize(
    "args, words",
    [
        (["--batch-size", "100000000000"], "batch_size=100000000000 needs about"),
        (["--images", "10000000000000"], "images=10000000000000 needs about"),
        (["--workers", "100000"], "workers must be at most"),
        (["--threads", "100000"], "threads must be at most"),
    ],
)
def test_bench_refuses_what_the_machine_cannot_give_in_one_line(args, words, capsys, monkeypatch):
    """Found by an audit: ``bench --batch-size 1e11`` (or ``--images 1e13``) ended in the allocator's RuntimeError
    traceback, ``--workers 100000`` started forking a hundred thousand DataLoader processes on a 2-core machine, and
    ``--threads 100000`` crashed the process (a segmentation fault in torch.set_num_threads)."""
    from resnet_theory.engine import bench

    monkeypatch.setattr(bench, "_measure", lambda s: pytest.fail("the benchmark ran"))
    assert bench.main(["--device", "cpu", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_train_refuses_a_pad_larger_than_the_image_before_it_trains(capsys, monkeypatch):
    """Found by an audit: ``train --dataset digits --augment --augment-pad 100000000`` passed every check and ended
    in a BudgetError traceback from the first batch's crop."""
    from resnet_theory.engine import train
    from resnet_theory.validate import BudgetError

    argv = ["--dataset", "digits", "--steps", "1", "--augment", "--augment-pad", "100000000"]
    monkeypatch.setattr(train, "_train", lambda *a, **k: pytest.fail("it trained"))
    assert train.main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: augment_pad must be at most 8 (the side of a digits image: a larger pad crops padding alone), "
        "got 100000000\n"
    )

    def too_large(*args, **kwargs):  # any size found too large once a run has begun: one line too
        raise BudgetError("pad=9 needs about 1 PB of memory, more than this machine allows (1 GB)")

    monkeypatch.setattr(train, "_train", too_large)
    assert train.main([*argv[:-1], "8"]) == 2
    assert capsys.readouterr().err == "error: pad=9 needs about 1 PB of memory, more than this machine allows (1 GB)\n"


@pytest.mark.parametrize(
    "args, words",
    [
        (["--backend", "torch", "--device", "bogus"], "--device must be 'cpu' or a CUDA device"),
        (["--device", "cpu"], "--device goes with --backend torch"),
        (["--classes", "1000000"], "is refused: the network would have"),
    ],
)
def test_the_expressivity_benchmark_refuses_a_device_or_size_in_one_line(args, words, capsys):
    """Found by an audit: ``--device bogus`` (or cuda where there is none) and ``--classes 1000000`` ended in
    ValueError tracebacks, and ``--device cpu`` without ``--backend torch`` was silently ignored."""
    from resnet_theory.benchmarks import expressivity

    with pytest.raises(SystemExit) as stop:
        expressivity.main(["--sizes", "100", *args])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_gpu_figures_add_reads_no_device_and_no_file_larger_than_a_measurement(tmp_path, capsys):
    """Found by an audit: ``add /dev/zero`` read without end (a MemoryError traceback, or the machine's memory),
    and a file of any size was read whole before it was found not to be JSON."""
    import os

    from resnet_theory.engine import gpu_figures

    large = tmp_path / "large.json"
    with open(large, "wb") as f:  # sparse: no disk used
        f.truncate(gpu_figures.MAX_BYTES + 1)
    if os.path.exists("/dev/zero"):  # in a process of its own, with its memory capped (a regression reads on)
        import resource
        import subprocess
        import sys

        def capped():
            resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

        command = [sys.executable, "-m", "resnet_theory.engine.gpu_figures", "add", "/dev/zero", "--to", "x"]
        done = subprocess.run(command, cwd=tmp_path, preexec_fn=capped, capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stderr) == (
            2,
            "error: /dev/zero: not a regular file (a folder, a device or a pipe)\n",
        )
    for path, words in ((str(tmp_path), "not a regular file"), (str(large), "larger than a gpu_check JSON can be")):
        assert gpu_figures.main(["add", path, "--to", str(tmp_path / "gpu")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {path}: ") and words in err and err.count("\n") == 1, err
        with pytest.raises(gpu_figures.MeasurementError, match="not a regular file|larger than"):
            gpu_figures.read_measurement(path)
    assert not (tmp_path / "gpu").exists()


# --- a ~ the shell did not expand: the path checked is the path written ------------------------------------------
def test_an_unexpanded_tilde_is_checked_where_the_command_writes(tmp_path, capsys, monkeypatch):
    """Found by an audit: the output rule expanded ``~`` (to check ``$HOME/../book/x.ipynb``) while the commands
    wrote the path as given, relative to the working folder, so ``run -o '~/../book/x.ipynb'`` from a book's root
    passed the check and wrote the notebook, its claims and its lock into the book's sources."""
    from resnet_theory.engine import train
    from resnet_theory.outputs import OutputRefused, check_command_output

    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "one": chapter("One", 'profile = "quick"\nseed = 0')})
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~/.. is tmp_path: no book's sources there
    monkeypatch.chdir(root)
    argv = ["run", "book/one.md", "-o", "~/../book/x.ipynb", "--root", str(root), "--build-dir", str(tmp_path / "b")]
    assert main(argv) == 2
    assert "-o ~/../book/x.ipynb: inside the book's sources" in capsys.readouterr().err
    with pytest.raises(OutputRefused, match="inside the book's sources"):
        check_command_output(Path("~/../lib/x"), "--out-dir")
    assert train.main(["--dataset", "digits", "--steps", "1", "--out-dir", "~/../tests/run"]) == 2
    assert "--out-dir ~/../tests/run: inside the book's sources" in capsys.readouterr().err
    assert sorted(p.name for p in (root / "book").iterdir()) == ["intro.md", "one.md"]
    assert not (root / "~").exists() and not (root / "tests").exists()


def test_a_claims_file_whose_claim_id_holds_terminal_control_characters_is_refused(tmp_path, capsys):
    """Found by an audit: ``verdict_diff`` (which compares other builds' claims files) and ``run`` printed claim
    ids as the file gave them: an id holding ESC sequences cleared or recoloured the reader's terminal."""
    import json

    from resnet_theory.book import verdict_diff
    from test_verdict_diff import build

    a = build(tmp_path, "a", {"linear": {"x": 0.5}})
    path = a / "executed" / "book" / "linear.claims.json"
    data = json.loads(path.read_text())
    data["claims"][0]["id"] = "x\x1b[2J\x1b[31mred"
    path.write_text(json.dumps(data))
    assert verdict_diff.main([str(path), str(path)]) == 2
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "holds control characters" in err and err.count("\n") == 1


def test_an_output_inside_a_builds_html_or_scratch_folder_is_refused(tmp_path, capsys):
    """Found by an audit: ``run -o _build/html/_sources/book/linear.ipynb`` replaced the notebook the built book
    offers for download with a run of other parameters (unverified, and published by the next deploy of html/),
    and anything written under html/ or jb/ was deleted by the next HTML build."""
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "one": chapter("One", 'profile = "quick"\nseed = 0')})
    build = root / "_build"
    (build / "html" / "_sources" / "book").mkdir(parents=True)
    for output in (build / "html" / "_sources" / "book" / "one.ipynb", build / "jb" / "one.ipynb"):
        argv = ["run", str(root / "book" / "one.md"), "-o", str(output), "--root", str(root), "--build-dir", str(build)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"'s {output.parent.name if output.parent.name == 'jb' else 'html'}/, which each HTML build" in err
        assert not output.exists()


def test_quick_book_refuses_a_report_whose_cpu_seconds_are_not_a_number(tmp_path, capsys):
    """Found by an audit: a report whose ``cpu_seconds`` is a string passed the report's check and ended in a
    format error's traceback while the table was printed."""
    import json

    from resnet_theory.benchmarks import quick_book

    report = tmp_path / "report.json"
    page = {"chapter": "book/x", "run": "executed", "seconds": 1, "cpu_seconds": "abc"}
    report.write_text(json.dumps({"chapters": [page]}))
    with pytest.raises(SystemExit) as stop:
        quick_book.main(["--report", str(report)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "not an execution report" in err and err.count("\n") == 1


def test_verify_runs_a_seed_given_twice_once(capsys, monkeypatch):
    """Found by an audit: ``verify ID --seeds 0 0 0`` ran seed 0 three times and said "3 of 3 give the same
    verdict", an agreement across seeds that no second seed was asked for (``make verdicts-across-seeds`` passes
    ``--seeds 0 $(SEEDS)``, so SEEDS='0 1' repeats seed 0)."""
    from resnet_theory.claims import cli

    ran = []
    monkeypatch.setattr(cli, "_run_all", lambda jobs, profile, seeds, knobs, processes: ran.append(seeds) or [])
    cli.main(["verify", "shamir/thm-1", "--seeds", "0", "1", "0"])
    assert ran == [[0, 1]] and "seeds [0, 1]:" in capsys.readouterr().out


def test_verify_help_says_what_each_option_does_and_the_exit_status(capsys):
    """Found by an audit: ``verify --help`` listed ID, --profile, --seed and --json without a word, and did not
    give the exit status a script needs (the module's docstring did)."""
    from resnet_theory.claims import cli

    with pytest.raises(SystemExit):
        cli.parser().parse_args(["verify", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("Exit 0 when every verdict", "2 on bad input", "claim ids, e.g.", "the seed (default 0)",
                  "print what was found as JSON"):  # fmt: skip
        assert words in text, words


def test_pdf_and_screenshots_refuse_a_file_where_a_folder_must_be(tmp_path, capsys, monkeypatch):
    """Found by an audit: ``pdf -o FILE/x.pdf`` ended in a FileExistsError traceback and ``browser --screenshots
    FILE/shots`` in a NotADirectoryError one, after Chromium had started."""
    from resnet_theory.book import browser, pdf

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(pdf, "build_pdf", lambda *a, **k: pytest.fail("it printed"))
    monkeypatch.setattr(browser, "take_screenshots", lambda *a, **k: pytest.fail("it took screenshots"))
    (tmp_path / "a-file").write_text("")
    for command, argv, words in (
        (
            pdf.main,
            ["-o", str(tmp_path / "a-file" / "x.pdf")],
            f"{tmp_path / 'a-file'} is not a folder (a file stands there)",
        ),
        (
            browser.main,
            ["--screenshots", str(tmp_path / "a-file" / "s")],
            "a-file is not a folder (a file stands there)",
        ),
        (browser.main, ["--screenshots", str(tmp_path / "a-file")], "a-file: not a folder"),
    ):
        assert command(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and err.count("\n") == 1, err


def test_run_refuses_an_output_below_a_file_in_one_line(tmp_path, capsys):
    """Found by an audit: ``run -o FILE/sub/x.ipynb`` (a file two folders up) passed the check of the folder above
    the notebook and ended in a NotADirectoryError traceback when the lock beside it was made."""
    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "one": chapter("One", 'profile = "quick"\nseed = 0')})
    (tmp_path / "a-file").write_text("")
    output = tmp_path / "a-file" / "sub" / "x.ipynb"
    assert main(["run", str(root / "book" / "one.md"), "-o", str(output), "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: -o {output}: {tmp_path / 'a-file'} is not a folder (a file stands there)\n"


def test_execute_refuses_a_build_dir_that_holds_other_files(tmp_path, capsys):
    """Found by an audit: ``execute --build-dir SITE`` on an existing folder of the reader's (a site with its own
    html/) replaced SITE/html with the book's HTML: the reader's files there were deleted."""
    root = make_book(tmp_path / "src", {"intro": "# Intro\n\nNo code here.\n"})
    site = tmp_path / "site"
    (site / "html").mkdir(parents=True)
    (site / "html" / "index.html").write_text("<p>mine</p>")
    assert main(["execute", "--root", str(root), "--build-dir", str(site), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --build-dir {site}: a folder holding other files (html), not a build")
    assert (site / "html" / "index.html").read_text() == "<p>mine</p>" and os.listdir(site) == ["html"]
    # a new or empty folder, a build folder, and one that holds only what claims verify --record writes, are builds
    (tmp_path / "empty").mkdir()
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "claims-across-seeds.json").write_text("{}")
    for folder in (tmp_path / "new", tmp_path / "empty", tmp_path / "seeds"):
        check_html_folder(root, folder)  # no error
    assert main(["execute", "--root", str(root), "--build-dir", str(site / "b"), "--jobs", "1", "--no-html"]) == 0
    (site / "b" / "extra.txt").write_text("a note beside the build")
    check_html_folder(root, site / "b")  # a build folder, whatever else it holds


def test_ctrl_c_while_the_claims_command_imports_is_one_line():
    """Found by an audit: Ctrl-C in the first half-second of ``python -m resnet_theory.claims`` (numpy being
    imported by the package) printed a traceback. The package now imports its API on first use, so the import
    happens inside ``__main__``, which says so in one line (exit 130); here the interrupt is raised by an import
    hook at the moment the command's module is imported."""
    import subprocess
    import sys

    hook = (
        "import sys, runpy\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'resnet_theory.claims.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Stop())\n"
        "sys.argv = ['resnet_theory.claims', 'list']\n"
        "runpy.run_module('resnet_theory.claims', run_name='__main__', alter_sys=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", hook], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130 and done.stderr == "error: interrupted (SIGINT)\n", done.stderr
    # importing the package imports nothing heavy: the interrupt can only come inside __main__'s guard
    light = subprocess.run(
        [sys.executable, "-c", "import sys, resnet_theory.claims; print('numpy' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert light.stdout == "False\n", light.stderr
