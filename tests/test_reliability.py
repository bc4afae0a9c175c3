"""Reproductions from the reliability issue (#14), one test each: the shared argument rule across modules, fast
refusal of sizes the machine cannot handle, and messages that say what is actually wrong."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import resnet_theory
from resnet_theory import expressivity, linear, shamir, smooth, validate
from resnet_theory.book import cli as executor
from resnet_theory.book import verdict_diff
from resnet_theory.book.cache import cache_record_path, load_cache_record, read_cache_record
from resnet_theory.book.claims_files import ClaimsFileError, load_claims
from resnet_theory.book.files import file_sha
from resnet_theory.book.plan import plan_chapters
from resnet_theory.book.report import load_report
from resnet_theory.book.toc import BookError
from resnet_theory.engine import data, train

from conftest import ROOT, one_line_error, run_execute


def _rotation(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


@pytest.mark.parametrize(
    "call",
    [
        lambda: linear.factorization_plan(_rotation(2.0), 10**8),
        lambda: linear.factorize_near_identity(_rotation(2.0), 10**9),
    ],
)
def test_huge_depths_are_refused_at_once_with_the_estimate(call):
    start = time.perf_counter()
    with pytest.raises(validate.BudgetError, match=r"depth=1000000000? needs about 1e\+0[89] loop iterations"):
        call()
    assert time.perf_counter() - start < 1.0


def test_ill_conditioned_matrix_is_not_called_singular():
    R = np.diag([1e300, 1.0])
    assert linear.gamma(R) == pytest.approx(np.log(1e300))  # gamma is perfectly finite
    with pytest.raises(ValueError) as info:
        linear.factorize_near_identity(R, 3)
    message = str(info.value)
    assert "singular (det R = 0)" not in message and "ill-conditioned" in message and "1e+300" in message
    with pytest.raises(ValueError, match=r"singular \(det R = 0\)"):
        linear.factorize_near_identity(np.diag([1.0, 0.0]), 3)  # a truly singular one still is


@pytest.mark.parametrize(
    "call",
    [
        lambda: linear.compose(np.ones((1, 2, 2)) * (1 + 1j)),
        lambda: linear.gamma(np.eye(2) * (1 + 0.5j)),
        lambda: shamir.linear_objective(np.ones((3, 2)) * 1j, np.ones(3), np.ones(2)),
        lambda: expressivity.separation(np.ones((3, 2)) * 1j),
    ],
)
def test_complex_input_is_refused_not_truncated(call):
    with pytest.raises(TypeError, match="must be real, got complex values"):
        call()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: linear.factorize_near_identity(np.eye(2), 2.0), "depth"),
        (lambda: smooth.ball_points(2.0, 2, 1.0), "n"),
        (lambda: shamir.critical_points(0.1, n_starts=8.0), "n_starts"),
        (lambda: expressivity.paper_k(10.0, 0.5), "n"),
    ],
)
def test_a_float_where_an_integer_is_meant_is_a_type_error_everywhere(call, name):
    with pytest.raises(TypeError, match=rf"{name} must be (a positive |an )integer"):
        call()


def test_numpy_scalars_and_numpy_bools_are_accepted_everywhere():
    assert linear.factorize_near_identity(np.eye(2), np.int64(3)).shape == (3, 2, 2)
    assert smooth.ball_points(np.int32(4), np.int64(2), np.float32(1.0)).shape == (4, 2)
    assert validate.boolean("flag", np.True_) is True


def test_labels_too_large_for_int64_are_named_with_their_value():
    X = np.random.default_rng(0).standard_normal((3, 2))
    with pytest.raises(ValueError, match=r"y holds 1e\+20 at index \(1,\)") as info:
        expressivity.build_interpolating_resnet(X, np.array([0.0, 1e20, 1.0]))
    assert "-9223372036854775808" not in str(info.value)


def test_inputs_scaled_by_1e200_get_a_message_about_scale_not_lemma_b_1():
    X = np.random.default_rng(1).standard_normal((6, 2)) * 1e200
    with pytest.raises(ValueError, match="squared norms overflow float64") as info:
        expressivity.build_interpolating_resnet(X, np.array([0, 1, 0, 1, 0, 1]))
    assert "Lemma B.1" not in str(info.value)


@pytest.mark.parametrize("tol", [float("nan"), -1.0, 0.0])
def test_critical_points_refuses_a_bad_tolerance(tol):
    with pytest.raises(ValueError, match="tol must be"):
        shamir.critical_points(0.1, tol=tol)


def test_one_divergence_exception():
    assert issubclass(smooth.NewtonConvergenceError, validate.DivergenceError)
    from resnet_theory.engine.train import TrainingDiverged

    assert issubclass(TrainingDiverged, validate.DivergenceError) and issubclass(TrainingDiverged, RuntimeError)
    with pytest.raises(validate.DivergenceError, match="diverged"):
        linear.identity_init_gd(np.eye(2) * 3, 4, 50, lr=50.0)


# ============================================================================================================
# Reliability II (#23): untrusted files, parameters and concurrent runs. Each test below fails on the code
# before the issue was fixed (commit 673df69).
# ============================================================================================================
#: The library these tests import, for the command lines they start.
LIB = str(Path(resnet_theory.__file__).resolve().parents[1])  # lib/, the folder that holds the package
TINY = dict(
    dataset="digits",
    stem_channels=4,
    widths=(4, 8),
    blocks_per_stage=1,
    batch_size=32,
    lr=0.05,
    lr_milestones=(1000,),
    eval_every=0,
    log_every=1,
    checkpoint_every=1,
    progress=False,
)


def tiny(**changes) -> train.TrainConfig:
    return train.TrainConfig(**{**TINY, **changes})


def cli(config: train.TrainConfig) -> list[str]:
    """The command-line form of a configuration (test_train's, shared)."""
    from test_train import cli_args

    return cli_args(config)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> train.TrainConfig:
    """A tiny run of 4 steps with a checkpoint after each (checkpoint.pt at 4, checkpoint.prev.pt at 3)."""
    config = tiny(steps=4, out_dir=str(tmp_path_factory.mktemp("finished-run")))
    train.train(config)
    return config


@pytest.fixture
def run_copy(finished_run, tmp_path) -> tuple[train.TrainConfig, Path]:
    out = tmp_path / "run"
    shutil.copytree(finished_run.out_dir, out)
    return replace(finished_run, out_dir=str(out)), out


def _checkpoint_bytes(body: bytes) -> bytes:
    """A file with this library's header, the body's true SHA-256 and length: it verifies."""
    return train._MAGIC + hashlib.sha256(body).digest() + len(body).to_bytes(8, "little") + body


class _Payload:
    """Unpickling this runs ``os.system``: the attack a checkpoint file can carry."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


# --- a crafted checkpoint must not run code ---------------------------------------------------------------
def test_a_crafted_checkpoint_that_verifies_is_refused_without_running_its_payload(run_copy, tmp_path, capsys):
    config, out = run_copy
    marker = tmp_path / "code-ran"
    buffer = io.BytesIO()
    torch.save({"step": 4, "config": {}, "x": _Payload(marker)}, buffer)
    body = buffer.getvalue()
    # the payload is real: torch's full unpickler runs it
    torch.load(io.BytesIO(body), weights_only=False)
    assert marker.exists()
    marker.unlink()
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        (out / name).write_bytes(_checkpoint_bytes(body))
    with pytest.raises(train.CheckpointDamaged, match="weights_only=True refused it"):
        train.read_checkpoint(out / "checkpoint.pt")
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=6)))
    assert f"{out / 'checkpoint.pt'} holds objects" in err and f"{out / 'checkpoint.prev.pt'} holds objects" in err
    assert not marker.exists(), "the checkpoint's pickle payload ran"


def test_a_checkpoint_holds_only_what_weights_only_loads_and_resumes_exactly(run_copy):
    config, out = run_copy
    payload = torch.load(io.BytesIO(train._verified_body(out / "checkpoint.pt")), weights_only=True)
    assert payload["step"] == 4 and isinstance(payload["random_states"]["numpy"]["keys"], torch.Tensor)
    result = train.train(replace(config, resume=True, steps=6))
    assert result.steps_done == 6 and [r["step"] for r in result.history if r["kind"] == "resume"] == [4]


def test_an_old_format_checkpoint_is_refused_in_one_line(run_copy, capsys):
    config, out = run_copy
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        path = out / name
        path.write_bytes(b"resnet-theory-ckpt-v2\n" + path.read_bytes()[len(train._MAGIC) :])
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=6)))
    assert "written by an older version" in err and "not loaded" in err


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda p: p.pop("optimizer"), "it has no 'optimizer' field"),
        (lambda p: p.update(step="4"), "its 'step' field is not a step number"),
        (lambda p: p.update(history={"kind": "x"}), "its 'history' field is not a list of metrics records"),
        (lambda p: p["history"][1].update(step="1"), "its 'history' field is not a list of metrics records"),
        (lambda p: p["data_stream"].pop("consumed"), "its 'data_stream' field is not a data-stream position"),
    ],
)
def test_a_checkpoint_that_verifies_but_lacks_a_field_or_has_a_wrong_type_is_refused_in_one_line(
    run_copy, capsys, change, words
):
    config, out = run_copy
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        payload = train.read_checkpoint(out / name)
        change(payload)
        (out / name).write_bytes(_checkpoint_bytes(_saved(payload)))
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=6)))
    assert f"{out / 'checkpoint.pt'} verifies but cannot be resumed from: {words}" in err, err


def test_a_checkpoint_whose_state_does_not_fit_the_model_is_refused_in_one_line(run_copy, capsys):
    config, out = run_copy
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        payload = train.read_checkpoint(out / name)
        first = next(iter(payload["model"]))
        payload["model"][first] = torch.zeros(1)
        (out / name).write_bytes(_checkpoint_bytes(_saved(payload)))
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=6)))
    assert f"cannot resume from {out / 'checkpoint.pt'}: its state does not fit this run" in err, err


def _saved(payload) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    return buffer.getvalue()


# --- run folders: never overwritten, never shared ------------------------------------------------------------
def test_a_new_run_into_a_folder_holding_a_run_is_refused_and_the_run_is_kept(run_copy, capsys):
    config, out = run_copy
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    err = one_line_error(capsys, train.main, cli(replace(config, steps=2)))
    assert f"{out} already holds a run" in err and "--resume" in err and "--out-dir" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_second_run_on_a_folder_in_use_is_refused_at_once(run_copy, capsys):
    config, out = run_copy
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": LIB}
    first = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "resnet_theory.engine.train",
            *cli(replace(config, resume=True, steps=100_000, log_every=1000, checkpoint_every=100_000)),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        metrics = out / "metrics.jsonl"
        deadline = time.monotonic() + 120
        while '"kind": "resume"' not in metrics.read_text() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read()
        before = metrics.read_bytes()
        err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=8)))
        assert f"another run is using {out}" in err, err
        assert metrics.read_bytes() == before
    finally:
        first.kill()
        first.wait(timeout=30)
    # the lock dies with its process: the folder can be resumed again
    assert train.train(replace(config, resume=True, steps=5)).steps_done == 5


def test_resuming_with_fewer_steps_than_the_checkpoint_is_refused(run_copy, capsys):
    config, out = run_copy
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=2)))
    assert f"the checkpoint {out / 'checkpoint.pt'} is at step 4, past steps=2" in err, err


def test_resuming_a_finished_run_reports_its_last_training_loss_not_nan(run_copy, capsys):
    config, _ = run_copy
    assert train.main(cli(replace(config, resume=True, steps=4))) == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert summary["steps"] == 4 and math.isfinite(summary["train_loss"]), summary


# --- metrics files that are not what a run wrote ---------------------------------------------------------------
@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda lines: lines[:2] + [b'{"kind": "train", "st'] + lines[2:], "line 3: it is not JSON"),
        (
            lambda lines: lines[:1] + [b'{"kind": "train", "step": 1, "note": "\xff\xfe"}'] + lines[1:],
            "line 2: it is not UTF-8 text",
        ),
        (
            lambda lines: lines[:3] + [b'{"step": 2, "loss": 1.0}'] + lines[3:],
            "line 4: it is not a record with a 'kind'",
        ),
        (lambda lines: lines[:1] + [b"[1, 2]"] + lines[1:], "line 2: it is not a record with a 'kind'"),
    ],
)
def test_a_damaged_metrics_file_is_named_with_its_line_and_the_way_on(run_copy, capsys, damage, words):
    config, out = run_copy
    metrics = out / "metrics.jsonl"
    metrics.write_bytes(b"\n".join(damage(metrics.read_bytes().splitlines())) + b"\n")
    err = one_line_error(capsys, train.main, cli(replace(config, resume=True, steps=6)))
    assert f"{metrics} {words}" in err and "move metrics.jsonl aside and resume again" in err, err
    # the way on that the message offers: the metrics are rewritten from the checkpoint's history
    metrics.rename(out / "metrics.damaged")
    result = train.train(replace(config, resume=True, steps=6))
    records = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "train"] == [1, 2, 3, 4, 5, 6]
    assert records == json.loads(json.dumps(result.history))


# --- run files replaced by folders, read-only file systems ------------------------------------------------------
def test_a_checkpoint_replaced_by_a_folder_is_named_and_never_called_kept(run_copy, capsys):
    config, out = run_copy
    (out / "checkpoint.pt").unlink()
    (out / "checkpoint.pt").mkdir()
    for resume in (True, False):
        err = one_line_error(capsys, train.main, cli(replace(config, resume=resume, steps=6)), code=1)
        assert f"{out / 'checkpoint.pt'} is not a file" in err and "is kept" not in err, err
    assert (out / "checkpoint.pt").is_dir() and train.read_checkpoint(out / "checkpoint.prev.pt")["step"] == 3


def test_a_failed_checkpoint_write_never_names_a_folder_as_the_kept_checkpoint(tmp_path):
    path = tmp_path / "checkpoint.pt"
    path.mkdir()
    with pytest.raises(train.OutputError) as info:
        train.save_checkpoint(path, {"step": 1})
    assert "no checkpoint that verifies is kept" in str(info.value) and f"{path} is kept" not in str(info.value)


def test_a_read_only_file_system_is_reported_in_one_line(tmp_path, capsys, monkeypatch):
    """On a read-only file system even removing a missing file fails with EROFS (Linux checks the mount before
    the name), so the clean-up of the probe file used to replace the one-line error by a traceback."""

    def read_only_write(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    real_unlink = Path.unlink

    def read_only_unlink(self, missing_ok=False):
        if str(self).startswith(str(tmp_path)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(train, "_write_file", read_only_write)
    monkeypatch.setattr(Path, "unlink", read_only_unlink)
    err = one_line_error(capsys, train.main, cli(tiny(steps=2, out_dir=str(tmp_path))), code=1)
    assert f"cannot write in the output folder {tmp_path}: the file system is read-only" in err, err
    with pytest.raises(train.OutputError, match="the file system is read-only"):
        train.save_checkpoint(tmp_path / "checkpoint.pt", {"step": 1})


# --- -p values: JSON-like only, of the type of the chapter's default, refused before anything runs -------------
@pytest.fixture
def params_book(tmp_path) -> Path:
    from test_executor import chapter, make_book

    return make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n",
            "good": chapter(
                "Good",
                'profile = "quick"\nseed = 0\nname = "x"\nsize = None\nrate = 0.5\nflag = False\nsizes = [1, 2]',
                "print(seed)",
            ),
        },
    )


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("seed", "b'x'", "bytes is not a parameter value"),
        ("size", 'b\'__import__("os").system("true")\'', "bytes is not a parameter value"),
        ("seed", "1j", "a complex number is not a parameter value"),
        ("size", "{1, 2}", "a set is not a parameter value"),
        ("size", "(1, 2)", "a tuple (write a list) is not a parameter value"),
        ("size", "NaN", "nan is not a finite number"),
        ("size", "1e999", "inf is not a finite number"),
        ("seed", "1.5", "must be an integer like its default 0, got a number"),
        ("seed", "True", "must be an integer like its default 0, got True or False"),
        ("seed", "'3'", "must be an integer like its default 0, got a string"),
        ("name", "3", "must be a string like its default 'x', got an integer"),
        ("rate", "'fast'", "must be a number like its default 0.5, got a string"),
        ("flag", "1", "must be True or False like its default False, got an integer"),
        ("sizes", "3", "must be a list like its default [1, 2], got an integer"),
        ("good:seed", "null", "must be an integer like its default 0"),
    ],
)
def test_a_parameter_value_that_is_not_json_like_or_of_another_type_is_refused_in_one_line(
    params_book, tmp_path, capsys, name, value, words
):
    build = tmp_path / "build"
    for command in (["execute", "--no-html"], ["run", "book/good.md"]):
        err = one_line_error(
            capsys, executor.main, [*command, "--root", str(params_book), "--build-dir", str(build), "-p", name, value]
        )
        assert f"-p {name}" in err and words in err, err
    assert not list(build.rglob("*.ipynb")), "nothing may run"


@pytest.fixture
def annotated_book(tmp_path) -> Path:
    from test_executor import chapter, make_book

    return make_book(
        tmp_path / "src",
        {
            "intro": "# Intro\n",
            "typed": chapter(
                "Typed",
                'profile: str = "quick"\nseed: int = 0\nsize: int = None  # n (None: profile)\n'
                "rates: list[float] = None\nmode: str = None",
                "print(seed)",
            ),
        },
    )


@pytest.mark.parametrize(
    "name, value, words",
    [
        ("size", "'many'", "the chapter declares size: int, got a string"),
        ("size", "2.5", "the chapter declares size: int, got a number"),
        ("size", "True", "the chapter declares size: int, got True or False"),
        ("rates", "0.1", "the chapter declares rates: list[float], got a number"),
        ("mode", "3", "the chapter declares mode: str, got an integer"),
    ],
)
def test_an_annotated_parameter_is_checked_against_its_annotation(annotated_book, tmp_path, capsys, name, value, words):
    """A parameter whose default is None (``size: int = None``) still has a type: the annotation that papermill
    shows in ``--help-notebook``; ``-p size many`` is refused before anything runs."""
    build = tmp_path / "build"
    err = one_line_error(
        capsys,
        executor.main,
        ["execute", "--no-html", "--root", str(annotated_book), "--build-dir", str(build), "-p", name, value],
    )
    assert f"-p {name}" in err and words in err, err
    assert not list(build.rglob("*.ipynb")), "nothing may run"
    (plan,) = plan_chapters(
        annotated_book, ["book/typed"], "quick", [("size", "7"), ("rates", "[0.1, 1]"), ("mode", "fast"), ("seed", "2")]
    )
    assert plan.parameters == {"profile": "quick", "size": 7, "rates": [0.1, 1], "mode": "fast", "seed": 2}
    (plan,) = plan_chapters(annotated_book, ["book/typed"], "quick", [("size", "None")])
    assert plan.parameters["size"] is None


def test_json_like_values_of_the_default_type_are_accepted(params_book):
    values = [
        ("seed", "3"),
        ("rate", "1"),
        ("name", "hello world"),
        ("size", '{"a": [1, 2.5]}'),
        ("flag", "true"),
        ("sizes", "[]"),
        ("good:size", "null"),
    ]
    (plan,) = plan_chapters(params_book, ["book/good"], "quick", values)
    assert plan.parameters == {
        "profile": "quick",
        "seed": 3,
        "rate": 1,
        "name": "hello world",
        "size": None,
        "flag": True,
        "sizes": [],
    }


# --- the ledger publishes only the claims files that their chapters' executions wrote --------------------------
ALPHA = textwrap.dedent("""\
    from resnet_theory.ledger import Check, Ledger
    ledger = Ledger("alpha")
    ledger.claim("hardt-ma/x", paper="hardt-ma", ref="Theorem 2.1", statement="a bound holds", section="alpha-x",
                 printed=Check.at_most([0.5], 1.0, what="value"),
                 control=Check.at_most([2.0], 1.0, what="a value the claim rules out"),
                 control_input="a value twice the bound, which the claim rules out")
    ledger.not_checkable("hardt-ma/y", paper="hardt-ma", ref="Section 4", statement="CIFAR accuracy",
                         section="alpha-y", reason="the archives are not bundled", needs="CIFAR-10 and a GPU")
    ledger.show()""")


@pytest.fixture(scope="module")
def ledger_book(tmp_path_factory) -> tuple[Path, Path]:
    """A book with one chapter that records two claims (executed once, with a kernel) and an in-process ledger."""
    from test_executor import chapter, make_book

    gather = chapter(
        "Ledger",
        'profile = "quick"\nseed = 0',
        "from resnet_theory.book.claims_files import load_claims\nfrom resnet_theory.ledger_html import render_ledger\n"
        "render_ledger(load_claims())",
    )
    gather = gather.replace("kernelspec:", "resnet_theory:\n  execution: in-process\nkernelspec:", 1)
    base = tmp_path_factory.mktemp("ledger-book")
    root = make_book(
        base / "src",
        {"intro": "# Intro\n", "alpha": chapter("Alpha", 'profile = "quick"\nseed = 0', ALPHA), "ledger": gather},
    )
    build = base / "build"
    assert run_execute(root, build) == 0
    return root, build


@pytest.fixture
def ledger_copy(ledger_book, tmp_path) -> tuple[Path, Path, Path]:
    root, build = (shutil.copytree(p, tmp_path / p.name) for p in ledger_book)
    return Path(root), Path(build), Path(build) / "executed" / "book" / "alpha.claims.json"


def _ledger_commands(root: Path, build: Path) -> list[list[str]]:
    return [
        ["execute", "--root", str(root), "--build-dir", str(build), "--no-html", "--only", "book/ledger"],
        ["run", "book/ledger.md", "--root", str(root), "--build-dir", str(build)],
    ]


def _publishes(root, build, capsys) -> list[str]:
    """Execute the ledger page both ways; the stderr of each run that failed (an empty list: both published)."""
    errors = []
    for command in _ledger_commands(root, build):
        code = executor.main(command)
        err = capsys.readouterr().err
        if code:
            errors.append(err)
    return errors


def test_the_ledger_publishes_what_the_chapter_executed(ledger_copy, capsys):
    root, build, _ = ledger_copy
    assert _publishes(root, build, capsys) == []


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _forge_confirmed(data):
    """Turn the not-checkable claim into a confirmed one, with evidence and a control copied from the other: a
    record self-consistent enough that its verdict follows from its evidence."""
    x, y = data["claims"]
    y.update(
        verdict="confirmed", check=x["check"], evidence=x["evidence"], control=x["control"], reason=None, needs=None
    )


def test_a_hand_edited_claims_file_is_refused_naming_it(ledger_copy, capsys):
    root, build, claims = ledger_copy
    _edit(claims, _forge_confirmed)
    errors = _publishes(root, build, capsys)
    assert len(errors) == 2, "published a claims file edited by hand"
    for err in errors:
        assert f"{claims}: not the file that executing book/alpha wrote" in err, err


def test_the_claims_of_a_chapter_no_longer_in_the_toc_are_refused_or_moved_aside(ledger_copy, capsys):
    """Rendering the ledger page alone (``run``) refuses the claims of a chapter that is no longer in the book;
    ``execute`` first moves them aside, to ``<build>/removed``, and the ledger then publishes without them."""
    root, build, claims = ledger_copy
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text().replace("  - file: book/alpha\n", ""))
    execute, run = _ledger_commands(root, build)
    assert executor.main(run) != 0, "published the claims of a chapter that is no longer in the book"
    err = capsys.readouterr().err
    assert f"{claims}: claims of book/alpha, which is not a chapter in" in err, err
    assert executor.main(execute) == 0, capsys.readouterr().err
    assert not claims.exists() and (build / "removed" / "book" / "alpha.claims.json").is_file()
    assert "book/alpha is no longer in _toc.yml: its claims file moved" in capsys.readouterr().out
    assert "hardt-ma/x" not in (build / "executed" / "book" / "ledger.ipynb").read_text()


def _record(build: Path, entry: str, claims: Path) -> None:
    """What the executor records when executing ``entry`` wrote ``claims`` (beside an executed notebook)."""
    from test_executor import record_execution

    record_execution(build, entry, claims)


def test_a_claim_id_recorded_in_two_files_is_refused_naming_both(ledger_copy, capsys):
    root, build, claims = ledger_copy
    (root / "book" / "beta.md").write_text("# Beta\n")
    toc = root / "_toc.yml"
    toc.write_text(toc.read_text() + "  - file: book/beta\n")
    beta = claims.with_name("beta.claims.json")
    shutil.copy(claims, beta)
    _edit(beta, lambda d: d["claims"].pop(1))
    _record(build, "book/beta", beta)
    errors = _publishes(root, build, capsys)
    assert len(errors) == 2, "published a claim recorded twice"
    for err in errors:
        assert "claim 'hardt-ma/x' is recorded twice" in err and str(claims) in err and str(beta) in err, err


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: d["claims"][0].update(extra=1), "claim 'hardt-ma/x' has unknown keys: extra"),
        (lambda d: d["claims"][0].update(evidence=[1]), "claim 'hardt-ma/x': evidence must be dict, got list"),
        (lambda d: d["claims"][0].update(statement=None), "claim 'hardt-ma/x': statement must be str, got NoneType"),
        (lambda d: d["claims"][0].pop("verdict"), "claim 'hardt-ma/x' lacks verdict"),
        (lambda d: d.update(claims={"a": 1}), "it must be an object with a list of 'claims'"),
        (lambda d: d["claims"].append(["not", "a", "record"]), "a claim record must be an object, got list"),
    ],
)
def test_a_malformed_claims_record_is_refused_naming_the_file(ledger_copy, capsys, change, words):
    root, build, claims = ledger_copy
    _edit(claims, change)
    _record(build, "book/alpha", claims)  # recorded as executed: only the record's form is at fault
    errors = _publishes(root, build, capsys)
    assert len(errors) == 2
    for err in errors:
        assert f"{claims}: malformed claims file: {words}" in err, err
    with pytest.raises(ClaimsFileError, match="malformed claims file"):
        load_claims(claims.parent)
    assert verdict_diff.main([str(build), str(build)]) == 2  # never 1, "the verdicts differ"
    assert f"verdict_diff: {claims}: malformed claims file: {words}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "content, words",
    [
        (b"{not json", "not a claims file (not JSON"),
        (b"\xff\xfe", "not a claims file (not JSON"),
        (b"null", "malformed claims file"),
        (b"[]", "malformed claims file"),
    ],
)
def test_verdict_diff_on_an_unreadable_claims_file_exits_2_naming_it(ledger_copy, capsys, content, words):
    _, build, claims = ledger_copy
    other = shutil.copytree(build, build.with_name("other"))
    claims.write_bytes(content)
    assert verdict_diff.main([str(build), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{claims}: {words}" in err, err


def test_a_claims_file_without_an_execution_record_is_refused(ledger_copy, capsys):
    root, build, claims = ledger_copy
    cache_record_path(build, "book/alpha").unlink()
    errors = _publishes(root, build, capsys)
    assert len(errors) == 2 and all(f"{claims}: no execution record" in err for err in errors), errors


# --- report.json and cache records that are not objects; --root and --build-dir -----------------------------
@pytest.mark.parametrize(
    "content", ["null", "[]", "[1, 2]", '{"chapters": null}', '{"chapters": [1, null]}', "3", '{"chapters": []}']
)
def test_a_report_or_cache_record_that_is_not_an_object_is_refused_not_a_traceback(ledger_copy, capsys, content):
    root, build, _ = ledger_copy
    report = build / "executed" / "report.json"
    for command in _ledger_commands(root, build):  # a damaged report is refused in one line, never trimmed (#32)
        report.write_text(content)
        err = one_line_error(capsys, executor.main, command)
        assert "is not an execution report" in err and report.read_text() == content, err
    report.write_text(content)
    with pytest.raises(BookError, match="is not an execution report"):
        load_report(build)
    if not content.startswith("{"):
        record = cache_record_path(build, "book/alpha")
        record.write_text(content)
        assert read_cache_record(build, "book/alpha") is None
        assert load_cache_record(build, "book/alpha", build / "executed" / "book" / "alpha.ipynb") is None


def test_a_cache_record_holding_a_list_makes_the_chapter_execute_again(ledger_copy, capsys):
    root, build, claims = ledger_copy
    cache_record_path(build, "book/alpha").write_text("[1, 2]")
    assert run_execute(root, build, "--only", "book/alpha", "book/ledger", jobs=None) == 0
    assert "book/alpha.md: executed" in capsys.readouterr().out
    assert read_cache_record(build, "book/alpha")["claims_sha"] == file_sha(claims)


def test_a_root_or_build_folder_that_is_a_file_or_missing_is_refused_in_one_line(ledger_copy, tmp_path, capsys):
    root, build, _ = ledger_copy
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    cases = [
        (["--root", str(tmp_path / "nowhere")], "no such folder"),
        (["--root", str(a_file)], "not a folder"),
        (["--root", str(tmp_path)], "no _toc.yml and _config.yml there"),
        (["--root", str(root), "--build-dir", str(a_file)], "not a folder"),
        (["--root", str(root), "--build-dir", str(a_file / "sub")], "cannot create it"),
    ]
    for options, words in cases:
        for command in (["execute", "--no-html"], ["run", "book/ledger.md"]):
            err = one_line_error(capsys, executor.main, [*command, *options])
            assert words in err, err
    for output, words in (
        (tmp_path, "not a regular file (a folder stands there)"),
        (a_file / "x.ipynb", "is not a folder"),
    ):
        err = one_line_error(capsys, executor.main, ["run", "book/ledger.md", "--root", str(root), "-o", str(output)])
        assert f"-o {output}: " in err and words in err, err
    # a build folder that does not exist yet is created
    assert (
        executor.main(
            [
                "execute",
                "--root",
                str(root),
                "--build-dir",
                str(tmp_path / "new" / "build"),
                "--no-html",
                "--only",
                "book/intro",
            ]
        )
        == 0
    )


# --- bench --json: an unwritable path is refused before the run ------------------------------------------------
def test_bench_json_to_an_unwritable_path_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    from resnet_theory.engine import bench

    def no_run(**kwargs):
        raise AssertionError("the benchmark ran although its results could not be written")

    monkeypatch.setattr(bench, "run_benchmark", no_run)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for path, words in (
        (tmp_path / "missing" / "out.json", f"the folder {tmp_path / 'missing'} does not exist"),
        (tmp_path, "is a folder"),
        (a_file / "out.json", f"{a_file} is not a folder"),
    ):
        err = one_line_error(capsys, bench.main, ["--json", str(path)])
        assert f"--json {path}: {words}" in err, err
    assert a_file.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_bench_json_never_replaces_a_source_nor_a_file_other_than_json(capsys, monkeypatch):
    from resnet_theory.engine import bench

    def no_run(**kwargs):
        raise AssertionError("the benchmark ran although --json names a source")

    monkeypatch.setattr(bench, "run_benchmark", no_run)
    monkeypatch.chdir(ROOT)
    before = {name: (ROOT / name).read_bytes() for name in ("book/linear.md", "README.md")}
    for path, words in (
        ("book/linear.md", "not a .json file"),
        ("book/linear.json", "inside the book's sources"),
        ("README.md", "not a .json file"),
        ("lib/resnet_theory/data/out.json", "inside the book's sources"),
    ):
        err = one_line_error(capsys, bench.main, ["--json", path])
        assert f"--json {path}: {words}" in err, err
    assert {name: (ROOT / name).read_bytes() for name in before} == before
    assert not (ROOT / "book/linear.json").exists() and not (ROOT / "lib/resnet_theory/data/out.json").exists()


# --- CIFAR members far larger than the format allows are refused before they are read ---------------------------
def test_a_cifar_archive_member_larger_than_the_format_allows_is_refused_before_it_is_read(tmp_path, monkeypatch):
    layout = data.CIFAR_LAYOUTS["cifar10"]
    record = bytes(1 + data.IMAGE_BYTES)  # zeros: label 0, black pixels, a valid record
    archive = tmp_path / layout.archive
    with tarfile.open(archive, "w:gz") as tar:
        for name in layout.train + layout.test:  # data_batch_1.bin holds 20,000 records, twice the format's
            payload = record * (20_000 if name == layout.train[0] else 2)
            info = tarfile.TarInfo(f"{layout.folder}/{name}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))

    def no_read(*args, **kwargs):
        raise AssertionError("a member was read")

    monkeypatch.setattr(tarfile.TarFile, "extractfile", no_read)
    with pytest.raises(
        data.DatasetError,
        match=rf"member {layout.folder}/data_batch_1.bin: 61,460,000 bytes, "
        rf"more than the 30,730,000 bytes",
    ):
        data.load_cifar(tmp_path, "cifar10", md5=data.file_md5(archive))


def test_a_cifar_batch_file_larger_than_the_format_allows_is_refused_before_it_is_read(tmp_path):
    layout = data.CIFAR_LAYOUTS["cifar100"]
    folder = tmp_path / layout.folder
    folder.mkdir()
    (folder / "test.bin").write_bytes(bytes(2 + data.IMAGE_BYTES))
    with open(folder / "train.bin", "wb") as fh:  # 50,001 whole records (sparse): one more than the format
        fh.truncate(50_001 * (2 + data.IMAGE_BYTES))
    with pytest.raises(data.DatasetError, match=r"train.bin: 153,703,074 bytes, more than the 153,700,000"):
        data.load_cifar(tmp_path, "cifar100")


# --- sizes the machine cannot handle fail fast, naming the argument; strings are not numbers ----------------------
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: linear.random_rotation(10**6), "d=1000000"),
        (lambda: linear.identity_init_gd(np.eye(2), 10**5, 10**6, 0.01), "steps=1000000"),
        (lambda: linear.identity_init_gd(np.eye(500), 10**5, 1, 0.01), "depth=100000"),
        (lambda: shamir.critical_points(0.1, n_starts=10**9), "n_starts=1000000000"),
        (lambda: shamir.survey_theorems(10**8), "n_instances=100000000"),
        (lambda: expressivity.separation(np.zeros((10**6, 30))), r"X=array of shape \(1000000, 30\) and dtype float64"),
    ],
)
def test_huge_sizes_fail_fast_with_the_budget_error_naming_the_argument(call, name):
    start = time.perf_counter()
    with pytest.raises(validate.BudgetError, match=rf"^{name} needs about"):
        call()
    assert time.perf_counter() - start < 2.0


BENCHMARK_CASES = [
    ("linear", ["--d", "1000000"], "d=1000000 needs about"),
    ("linear", ["--depth", "1000000000"], "depth=1000000000 needs about"),
    ("linear", ["--d", "-3"], "argument --d: must be an integer >= 1"),
    ("expressivity", ["--sizes", "100", "100000000"], "--sizes=100000000 needs about"),
    ("expressivity", ["--dim", "ten"], "argument --dim: expected an integer"),
    ("ensemble", ["--members", "100000000"], "--members=100000000 needs about"),
    ("ensemble", ["--blocks", "100000000"], "this model needs about"),
]

# Each case as ``python -m resnet_theory.benchmarks.MODULE ARGV`` runs it (runpy, run_name "__main__", sys.argv
# set), one after another in one process, so torch and the libraries are imported once, not once per case: the
# exit status, everything written to file descriptors 1 and 2 (Python's streams and anything below them) and the
# seconds each case took, as JSON on the process's own standard output.
RUN_BENCHMARK_CLIS = """import json, os, runpy, sys, tempfile, time
cases, results = json.loads(sys.argv[1]), []
saved = os.dup(1), os.dup(2)
for module, argv in cases:
    files = [tempfile.TemporaryFile(mode="w+b") for _ in range(2)]
    sys.stdout.flush(), sys.stderr.flush()
    os.dup2(files[0].fileno(), 1), os.dup2(files[1].fileno(), 2)
    sys.argv = [module] + argv
    start = time.perf_counter()
    try:
        runpy.run_module("resnet_theory.benchmarks." + module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    seconds = time.perf_counter() - start
    sys.stdout.flush(), sys.stderr.flush()
    os.dup2(saved[0], 1), os.dup2(saved[1], 2)
    out, err = [(f.seek(0), f.read().decode())[1] for f in files]
    results.append({"code": code, "stdout": out, "stderr": err, "seconds": seconds})
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def benchmark_cli_runs() -> list[dict]:
    """Every case of :data:`BENCHMARK_CASES`, run once by :data:`RUN_BENCHMARK_CLIS` in one subprocess."""
    cases = json.dumps([[module, argv] for module, argv, _ in BENCHMARK_CASES])
    proc = subprocess.run(
        [sys.executable, "-c", RUN_BENCHMARK_CLIS, cases],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": LIB},
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("case", range(len(BENCHMARK_CASES)), ids=[f"{m}-{' '.join(a)}" for m, a, _ in BENCHMARK_CASES])
def test_the_benchmarks_size_options_fail_fast_in_one_line(benchmark_cli_runs, case):
    module, argv, words = BENCHMARK_CASES[case]
    run = benchmark_cli_runs[case]
    assert run["code"] == 2 and run["stdout"] == "", (module, argv, run)
    assert run["stderr"].startswith("error: ") and run["stderr"].count("\n") == 1 and words in run["stderr"], run
    assert run["seconds"] < 60


@pytest.mark.parametrize(
    "call",
    [
        lambda: shamir.theorem_4_bound("10", 1.0, 1.0, 1.0, 0.1),
        lambda: shamir.theorem_4_bound(True, 1.0, 1.0, 1.0, 0.1),
        lambda: shamir.theorem_4_bound(["10", "20"], 1.0, 1.0, 1.0, 0.1),
        lambda: shamir.theorem_4_bound(10, "1", 1.0, 1.0, 0.1),
        # found by the second probe of this family: numeric strings went through np.asarray(..., dtype=float)
        lambda: shamir.landscape_value(1.0, 0.0, ["0.3"], [0.1]),
        lambda: shamir.rate_exponents(["8", "16", "32"], [[1.0, 0.5, 0.2]], 8),
        lambda: shamir.rate_exponents([8, 16, 32], [[1.0, 0.5, 0.2]], "8"),
        lambda: shamir.average_regret(np.ones((3, 2)), np.ones(3), ["1", "1", "1"], 1.0, [1]),
        lambda: shamir.average_regret(np.ones((3, 2)), np.ones(3), np.ones(3), 1.0, ["1"]),
        lambda: __import__("resnet_theory.smooth", fromlist=["x"]).svd_cancellation([["1", "0"], ["0", "1"]]),
    ],
)
def test_strings_and_booleans_where_numbers_belong_are_type_errors(call):
    with pytest.raises(TypeError):
        call()


def test_theorem_4_bound_still_takes_numbers_and_arrays():
    assert shamir.theorem_4_bound(np.int64(100), 1.0, 1.0, 1.0, 0.1) == pytest.approx(
        shamir.theorem_4_bound(100.0, 1.0, 1.0, 1.0, 0.1)
    )
    assert shamir.theorem_4_bound([10, 100], 1.0, 1.0, 1.0, 0.1).shape == (2,)


def test_the_experiments_benchmark_refuses_its_outputs_before_it_trains(tmp_path, capsys, monkeypatch):
    from resnet_theory.benchmarks import experiments as bench

    def no_run(*args, **kwargs):
        raise AssertionError("the benchmark trained although its output was refused")

    monkeypatch.setattr(bench, "run", no_run)
    monkeypatch.setattr(bench, "run_pilot", no_run)
    monkeypatch.chdir(ROOT)
    notes = tmp_path / "notes.json"
    notes.write_text('{"mine": true}')

    def refused(argv) -> str:
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1, err
        return err

    assert "not a .json file" in refused(["--json", "book/linear.md"])
    assert "inside the book's sources" in refused(["--pilot", "lib/resnet_theory/data/other.json"])
    assert "is not an experiments pilot" in refused(["--pilot", str(notes)])
    assert notes.read_text() == '{"mine": true}' and not (ROOT / "lib/resnet_theory/data/other.json").exists()
    # the shipped pilot is what --pilot is for; a new file outside the sources too
    assert bench.output_problem(str(ROOT / "lib/resnet_theory/data/experiments_pilot.json"), "--pilot") is None
    assert bench.output_problem(str(tmp_path / "pilot.json"), "--pilot") is None


def test_a_failed_attempt_is_never_shown_beside_an_earlier_runs_claims(tmp_path, capsys):
    """Found by an audit: with the executed notebook removed by hand, a failed run moved its attempt into place
    (there were no earlier outputs) and left the earlier run's claims file beside it, so the ledger and a reader of
    ``x.claims.json`` saw verdicts the page beside them did not compute. The orphaned claims file goes with the
    attempt; with an earlier notebook in place, both stay."""
    from test_executor import chapter, make_book

    body = (
        "import os\nif fail:\n    raise RuntimeError('the chapter failed')\n"
        "from resnet_theory.ledger import Ledger\nLedger('good').save()"
    )
    root = make_book(
        tmp_path / "src",
        {"intro": "# Intro\n", "good": chapter("Good", 'profile = "quick"\nseed = 0\nfail = False', body)},
    )
    build = tmp_path / "build"
    notebook = build / "executed" / "book" / "good.ipynb"
    claims = notebook.with_name("good.claims.json")
    for where, argv in (
        ("build", ["--build-dir", str(build)]),
        ("-o", ["-o", str(tmp_path / "out" / "good.ipynb")]),
    ):
        target = notebook if where == "build" else tmp_path / "out" / "good.ipynb"
        beside = target.with_name("good.claims.json")
        run = ["run", "book/good.md", "--root", str(root), *argv]
        assert executor.main(run) == 0 and json.loads(beside.read_text())["chapter"] == "good"
        capsys.readouterr()
        # an earlier notebook in place: the failed run keeps both
        assert executor.main([*run, "-p", "fail", "True"]) == 1
        assert json.loads(beside.read_text())["chapter"] == "good" and "keeps" in capsys.readouterr().err
        # the notebook removed by hand: the attempt is shown, and the orphaned claims are gone with a word
        target.unlink()
        assert executor.main([*run, "-p", "fail", "True"]) == 1
        err = capsys.readouterr().err
        assert target.is_file() and not beside.exists(), where
        assert "an earlier run's good.claims.json, left without its notebook, was removed" in err, err
    assert not claims.exists()


def test_a_notebook_cut_short_by_a_full_disk_is_not_moved_into_place(tmp_path, capsys, monkeypatch):
    """Found by a misuse audit: on a full disk with no earlier outputs, the half-written notebook was moved into
    place under its final name (200 KB that do not parse), and the failure was said to be 'before any cell ran'."""
    import papermill

    from test_executor import chapter, make_book

    root = make_book(tmp_path / "src", {"intro": "# Intro\n", "good": chapter("Good", 'profile = "quick"\nseed = 0')})

    def full_disk(nb, path, **kwargs):
        Path(path).write_text('{"cells": [{"cell_type": "code", "source": "x = ')  # cut short
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(papermill, "execute_notebook", full_disk)
    build = tmp_path / "build"
    assert run_execute(root, build, "--only", "book/good") == 1
    err = capsys.readouterr().err
    assert "failed while writing its executed notebook: OSError: [Errno 28] No space left on device" in err, err
    assert "before any cell ran" not in err
    executed = build / "executed" / "book"
    assert not (executed / "good.ipynb").exists() and not list(executed.glob(".good*"))
    page = {c["chapter"]: c for c in load_report(build)["chapters"]}["book/good"]
    assert page["outputs"].startswith("none (the failed attempt's notebook was incomplete")
    out = tmp_path / "x.ipynb"  # run -o: said as what it is, not "x.ipynb keeps none"
    assert executor.main(["run", "book/good.md", "--root", str(root), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"; nothing was written to {out} (the failed attempt's notebook was incomplete, and was removed)" in err
    assert not out.exists()
