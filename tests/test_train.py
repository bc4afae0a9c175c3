"""Tests of the training engine (resnet_theory.engine.train): the paper's recipe as the default, exact resumption after
SIGKILL, the NaN/divergence guard, two-process DistributedDataParallel, and clear errors for bad configurations.

Every run here is a tiny network on the real 8x8 digits, on the CPU with one thread per process.
"""

from __future__ import annotations

import errno
import json
import math
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory.engine import allconv, data, train
from resnet_theory.engine.train import ConfigError, TrainConfig, TrainingDiverged

from conftest import bad_int_options, one_line_error

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(
    dataset="digits",
    stem_channels=4,
    widths=(4, 8),
    blocks_per_stage=1,
    batch_size=32,
    lr=0.05,
    lr_milestones=(1000,),
    eval_every=0,
    log_every=5,
    checkpoint_every=0,
    progress=False,
)


def tiny(**changes) -> TrainConfig:
    return TrainConfig(**{**TINY, **changes})


def cli_args(config: TrainConfig) -> list[str]:
    """The command-line form of a configuration (the inverse of the CLI's parser)."""
    args = []
    for key, value in config.to_dict().items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else "--no-" + key.replace("_", "-"))
        elif isinstance(value, list):
            args += [flag, ",".join(map(str, value))]
        else:
            args += [flag, str(value)]
    return args


def one_thread_env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def load_ckpt(path) -> dict:
    return train.read_checkpoint(path)


def assert_bitwise_equal(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), f"{k} differs (max |diff| {(a[k] - b[k]).abs().max().item():.3g})"


# --- the paper's recipe ---------------------------------------------------------------------------------
def test_defaults_are_the_papers_recipe():
    c = TrainConfig()
    assert (c.dataset, c.batch_size, c.lr, c.momentum, c.weight_decay) == ("cifar10", 128, 0.05, 0.9, 1e-4)
    assert c.lr_milestones == (30_000, 50_000) and c.lr_gamma == 0.1
    assert (c.widths, c.blocks_per_stage, c.stem_channels, c.init, c.skip, c.trainable_head) == (
        (64, 128, 256),
        9,
        16,
        "small",
        True,
        False,
    )
    assert c.augmentation == (True, 4, True)
    assert c.compile is False  # torch.compile only when asked
    expected = {0: 0.05, 29_999: 0.05, 30_000: 0.005, 49_999: 0.005, 50_000: 0.0005, 63_999: 0.0005}
    for step, lr in expected.items():
        assert math.isclose(train.learning_rate(c, step), lr, rel_tol=1e-12)


@given(
    milestones=st.lists(st.integers(1, 500), min_size=0, max_size=4, unique=True).map(sorted),
    gamma=st.floats(0.01, 0.99),
    step=st.integers(0, 600),
)
def test_learning_rate_is_piecewise_constant(milestones, gamma, step):
    c = TrainConfig(lr=0.3, lr_milestones=tuple(milestones), lr_gamma=gamma)
    passed = sum(step >= m for m in milestones)
    assert math.isclose(train.learning_rate(c, step), 0.3 * gamma**passed, rel_tol=1e-12)
    assert train.learning_rate(c, step + 1) <= train.learning_rate(c, step)


@pytest.mark.parametrize("trainable_head", [False, True])
def test_weight_decay_only_on_conv_weights(trainable_head):
    model = allconv.AllConvResNet(
        in_channels=1, stem_channels=4, widths=(4, 8), blocks_per_stage=2, trainable_head=trainable_head
    )
    decay, *rest = train.parameter_groups(model, 1e-4)
    conv_weights = {id(p) for p in allconv.conv_weight_parameters(model)}
    assert {id(p) for p in decay["params"]} == conv_weights and decay["weight_decay"] == 1e-4
    others = {id(p) for g in rest for p in g["params"]}
    assert all(g["weight_decay"] == 0.0 for g in rest)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert conv_weights | others == trainable and not conv_weights & others
    assert (id(model.head.weight) in others) == trainable_head  # a fixed head is not optimised at all


# --- bad configurations ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(dataset="mnist"), "dataset must be one of 'cifar10', 'cifar100', 'digits', got 'mnist'"),
        (dict(steps=0), "steps must be a positive integer (at least 1), got 0"),
        (dict(batch_size=0), "batch_size must be a positive integer (at least 1), got 0"),
        (dict(lr=-0.1), "lr must be > 0.0, got -0.1"),
        (dict(lr=float("nan")), "lr must be a finite number, got nan"),
        (dict(momentum=1.0), "momentum must be < 1.0, got 1.0"),
        (dict(momentum=-0.1), "momentum must be >= 0.0, got -0.1"),
        (dict(weight_decay=-1.0), "weight_decay must be >= 0.0, got -1.0"),
        (dict(lr_milestones=(50, 10)), "lr_milestones must be increasing; found 50 then 10"),
        (dict(lr_milestones=(10, 10)), "lr_milestones must be increasing; found 10 then 10"),
        (dict(lr_milestones=(0,)), "lr_milestones[0] must be a positive integer (at least 1), got 0"),
        (dict(init="xavier"), "init must be one of 'small', 'standard', 'printed-standard', got 'xavier'"),
        (dict(widths=()), "widths must be one or more positive integers"),
        (dict(widths=(4, 0)), "widths[1] must be a positive integer (at least 1), got 0"),
        (dict(kernel_size=4), "kernel_size must be odd"),
        (dict(eval_every=-1), "eval_every must be a non-negative integer (at least 0), got -1"),
        (dict(augment_pad=-1), "augment_pad must be a non-negative integer (at least 0), got -1"),
        (dict(max_loss=0.0), "max_loss must be > 0.0, got 0.0"),
        (dict(on_divergence="ignore"), "on_divergence must be one of 'raise', 'stop', got 'ignore'"),
        (dict(resume=True), "resume=True needs out_dir"),
        (dict(device="tpu"), "device must be 'auto', 'cpu' or a CUDA device"),
        (dict(batch_size=5000), "smaller than one batch of 5000"),
        (dict(precision="fp8"), "precision must be one of 'auto', 'bf16', 'fp16', 'float32', got 'fp8'"),
        (dict(device="cuda:x"), "device must be 'auto', 'cpu' or a CUDA device"),
        (dict(head_rank=0), "head_rank must be a positive integer (at least 1), got 0"),
        (dict(head_rank=11), "head_rank must be at most min(classes, last width) = "),
    ],
)
def test_bad_configurations_fail_clearly(changes, words):
    with pytest.raises(ConfigError) as info:
        train.train(tiny(**changes))
    assert words in str(info.value)


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(steps=2.5), "steps must be a positive integer, got 2.5 (float)"),
        (dict(seed=1.0), "seed must be a non-negative integer, got 1.0"),
        (dict(augment_pad=True), "augment_pad must be a non-negative integer, got True"),
        (dict(widths=(4, 8.0)), "widths[1] must be a positive integer, got 8.0"),
        (dict(widths=8), "widths must be a tuple of positive integers, got 8"),
        (dict(lr="0.1"), "lr must be a real number, got '0.1'"),
        (dict(lr=0.1 + 0j), "lr must be a real number, not complex"),
        (dict(augment_flip="False"), "augment_flip must be True or False, got 'False'"),
        (dict(init=3), "init must be one of 'small', 'standard', 'printed-standard', got 3"),
        (dict(out_dir=5), "out_dir must be a path"),
        (dict(precision=16), "precision must be one of 'auto', 'bf16', 'fp16', 'float32', got 16"),
        (dict(deterministic="yes"), "deterministic must be True or False"),
        (dict(head_rank=1.5), "head_rank must be a positive integer, got 1.5"),
    ],
)
def test_wrong_types_are_type_errors_and_config_errors(changes, words):
    # the one rule: a wrong type is a TypeError (it was a ValueError), still a ConfigError for the CLI
    with pytest.raises(TypeError) as info:
        tiny(**changes).validate()
    assert isinstance(info.value, ConfigError) and words in str(info.value), info.value


def test_numpy_scalars_are_accepted_and_stored_as_python_numbers():
    config = tiny(
        steps=np.int64(3),
        lr=np.float32(0.25),
        widths=[np.int64(4), 8],
        lr_milestones=[np.int32(2)],
        momentum=np.float64(0.5),
        augment=np.True_,
        seed=np.uint8(1),
    )
    config.validate()
    assert (type(config.steps), type(config.lr), type(config.augment), type(config.seed)) == (int, float, bool, int)
    assert config.widths == (4, 8) and type(config.widths[0]) is int and config.lr_milestones == (2,)
    json.dumps(config.to_dict())  # the configuration goes to the metrics file and the checkpoint


def test_uneven_split_between_processes_is_refused():
    with pytest.raises(ConfigError, match="does not split evenly between 3 processes"):
        tiny(batch_size=32).validate(world_size=3)


def test_cifar_without_data_says_where_to_put_it(tmp_path):
    with pytest.raises(ConfigError) as info:
        train.train(tiny(dataset="cifar10"))
    assert "cifar-10-binary.tar.gz" in str(info.value) and "data_dir" in str(info.value)
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    with pytest.raises(ConfigError) as info:
        train.train(tiny(dataset="cifar100", data_dir=str(empty)))
    assert str(empty) in str(info.value) and "cifar-100-binary.tar.gz" in str(info.value)


def test_damaged_cifar_file_is_reported_by_the_cli(tmp_path, capsys):
    folder = tmp_path / "cifar-10-batches-bin"
    folder.mkdir()
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        (folder / name).write_bytes(bytes(3073 * 2 + 100))  # not a whole number of records
    assert train.main(["--dataset", "cifar10", "--data-dir", str(tmp_path), "--steps", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "data_batch_1.bin" in err


def test_cli_reports_bad_configuration_and_exits_2(capsys):
    assert train.main(["--dataset", "mnist", "--steps", "3"]) == 2
    assert "error: dataset must be one of 'cifar10', 'cifar100', 'digits', got 'mnist'" in capsys.readouterr().err
    assert train.main(["--dataset", "digits", "--steps", "0"]) == 2
    assert "argument --steps: must be an integer >= 1" in capsys.readouterr().err


def test_resume_without_checkpoint_or_with_another_config_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no checkpoint at"):
        train.train(tiny(out_dir=str(tmp_path), resume=True, steps=4))
    train.train(tiny(out_dir=str(tmp_path), steps=4))
    with pytest.raises(ConfigError, match=r"different configuration \(lr: checkpoint 0.05, now 0.1"):
        train.train(tiny(out_dir=str(tmp_path), resume=True, steps=8, lr=0.1))


# --- training, metrics, checkpoints -------------------------------------------------------------------
def test_training_learns_and_records_everything(tmp_path):
    config = tiny(steps=120, init="standard", eval_every=40, checkpoint_every=40, out_dir=str(tmp_path))
    result = train.train(config)
    steps, losses = result.curve("train", "loss")
    assert steps[-1] == 120 and result.steps_done == 120
    assert losses[-1] < 0.5 * losses[0], losses
    _, accuracy = result.curve("eval", "test_accuracy")
    assert accuracy[0] < 0.3 and result.final_test_accuracy == accuracy[-1] > 0.6, accuracy
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert records == json.loads(json.dumps(result.history))
    assert records[0]["kind"] == "start" and records[-1]["kind"] == "end"
    assert all(r["images_per_s"] > 0 for r in records if r["kind"] == "train")
    ckpt = load_ckpt(result.checkpoint_path)
    assert ckpt["step"] == 120 and set(ckpt["random_states"]) >= {"torch_cpu", "numpy", "python"}
    assert set(ckpt["data_stream"]) == {"epoch", "consumed", "epoch_start_state", "generator_state"}
    assert ckpt["optimizer"]["state"], "momentum buffers are saved"
    assert_bitwise_equal(ckpt["model"], result.model.state_dict())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.prev.pt", "checkpoint.pt", "metrics.jsonl"]
    assert load_ckpt(tmp_path / "checkpoint.prev.pt")["step"] == 80  # the one before is kept


def test_save_checkpoint_is_atomic(tmp_path):
    path = tmp_path / "checkpoint.pt"
    train.save_checkpoint(path, {"step": 1, "w": torch.ones(3)})
    # pickle's error for a lambda is PicklingError on Python 3.11, AttributeError or TypeError on others
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        train.save_checkpoint(path, {"step": 2, "bad": lambda: None})  # cannot be pickled: the write fails
    assert load_ckpt(path)["step"] == 1  # the previous checkpoint is intact
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint.pt"]  # and no temporary file is left


def test_ctrl_c_between_the_renames_of_a_save_waits_for_both(tmp_path, monkeypatch):
    """A signal that lands after the current checkpoint became the previous one and before the new one took its
    place left no current checkpoint (a race seen in the Ctrl-C test); it is now delivered after both renames."""
    path = tmp_path / "checkpoint.pt"
    train.save_checkpoint(path, {"step": 1})
    real_replace, renames = os.replace, []

    def replace_then_interrupt(src, dst):
        real_replace(src, dst)
        renames.append(Path(dst).name)
        if len(renames) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after the first rename

    monkeypatch.setattr(train.os, "replace", replace_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a pytest-xdist worker ignores SIGINT
    try:
        with pytest.raises(KeyboardInterrupt):
            train.save_checkpoint(path, {"step": 2})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert renames == [train.PREVIOUS_CHECKPOINT_NAME, "checkpoint.pt"]
    assert load_ckpt(path)["step"] == 2 and load_ckpt(tmp_path / train.PREVIOUS_CHECKPOINT_NAME)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["checkpoint.pt", train.PREVIOUS_CHECKPOINT_NAME])


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(4, 40),
    batch=st.integers(1, 6),
    augment=st.booleans(),
    taken=st.integers(0, 30),
    seed=st.integers(0, 2**31),
)
def test_batch_stream_resumes_where_it_stopped(n, batch, augment, taken, seed):
    if n < batch:
        return
    rng = np.random.default_rng(seed)
    split = data.DeviceData(rng.integers(0, 256, (n, 1, 5, 5), dtype=np.uint8), rng.integers(0, 3, n), "cpu")
    stream = train.BatchStream(split, batch, torch.Generator().manual_seed(seed), augment, 1, True)
    for _ in range(taken):
        next(stream)
    state = stream.state()
    expected = [next(stream) for _ in range(7)]
    other = train.BatchStream(split, batch, torch.Generator().manual_seed(seed + 1), augment, 1, True)
    other.restore(state)
    for (x, y), (x2, y2) in zip(expected, (next(other) for _ in range(7))):
        assert torch.equal(x, x2) and torch.equal(y, y2)


def test_resume_in_process_matches_uninterrupted_run_bitwise(tmp_path):
    # 1,437 training digits, batches of 32: 44 per epoch, so the interruption at step 25 is mid-epoch and the
    # runs cross an epoch boundary; augmentation is on so that its draws must be replayed too.
    base = tiny(steps=60, augment=True, checkpoint_every=25)
    whole = train.train(replace(base, out_dir=str(tmp_path / "whole")))
    train.train(replace(base, steps=35, out_dir=str(tmp_path / "split")))  # checkpoints at 25 and 35
    resumed = train.train(replace(base, out_dir=str(tmp_path / "split"), resume=True))
    assert [r["step"] for r in resumed.history if r["kind"] == "resume"] == [35]
    assert_bitwise_equal(whole.model.state_dict(), resumed.model.state_dict())
    assert whole.curve("train", "loss")[1].tolist() == resumed.curve("train", "loss")[1].tolist()


def test_sigkill_mid_run_then_resume_gives_bitwise_the_same_weights(tmp_path):
    """Real processes: one runs through; one is killed with SIGKILL after its first checkpoint, then resumed.
    120 steps of 32 of the 1,437 training digits (44 per epoch): the killed run resumes mid-epoch, from step 10 or
    so, and both cross two epoch boundaries; the 110 steps after the first checkpoint take about a second, a
    hundred times the 10 ms in which the victim is found and killed."""
    config = tiny(steps=120, checkpoint_every=10, log_every=10, augment=True)
    command = [sys.executable, "-m", "resnet_theory.engine.train"]
    whole_dir, killed_dir = tmp_path / "whole", tmp_path / "killed"
    whole = subprocess.Popen(
        command + cli_args(replace(config, out_dir=str(whole_dir))),
        env=one_thread_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    victim = subprocess.Popen(
        command + cli_args(replace(config, out_dir=str(killed_dir))),
        env=one_thread_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    checkpoint = killed_dir / "checkpoint.pt"
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert victim.poll() is None, f"the run ended (status {victim.returncode}) before it could be killed"
    os.kill(victim.pid, signal.SIGKILL)
    assert victim.wait(timeout=30) == -signal.SIGKILL
    killed_at = load_ckpt(checkpoint)["step"]
    assert 0 < killed_at < config.steps
    out, err = whole.communicate(timeout=300)
    assert whole.returncode == 0, err
    resume = subprocess.run(
        command + cli_args(replace(config, out_dir=str(killed_dir), resume=True)),
        env=one_thread_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resume.returncode == 0, resume.stderr
    a, b = load_ckpt(whole_dir / "checkpoint.pt"), load_ckpt(checkpoint)
    assert a["step"] == b["step"] == config.steps
    assert_bitwise_equal(a["model"], b["model"])
    for pa, pb in zip(a["optimizer"]["state"].values(), b["optimizer"]["state"].values()):
        assert torch.equal(pa["momentum_buffer"], pb["momentum_buffer"])
    assert (
        json.loads(out.splitlines()[-1])["test_accuracy"] == json.loads(resume.stdout.splitlines()[-1])["test_accuracy"]
    )
    steps = [
        json.loads(line)["step"]
        for line in (killed_dir / "metrics.jsonl").read_text().splitlines()
        if json.loads(line)["kind"] == "train"
    ]
    assert steps == sorted(set(steps)), "records after the checkpoint were dropped on resume, not duplicated"


# --- the divergence guard ------------------------------------------------------------------------------
def test_diverging_run_stops_and_keeps_last_good_checkpoint(tmp_path):
    # The learning rate jumps from 0.05 to 5e7 at step 20: the loss blows up right after.
    config = tiny(
        steps=60,
        lr_milestones=(20,),
        lr_gamma=1e9,
        checkpoint_every=10,
        log_every=5,
        init="standard",
        out_dir=str(tmp_path),
    )
    with pytest.raises(TrainingDiverged) as info:
        train.train(config)
    message = str(info.value)
    assert "training diverged at step" in message and "last good checkpoint" in message
    stopped_at = info.value.result.steps_done
    assert 20 < stopped_at <= 30 and info.value.result.diverged
    ckpt = load_ckpt(tmp_path / "checkpoint.pt")
    assert ckpt["step"] == 20
    assert all(torch.isfinite(t).all() for t in ckpt["model"].values())
    assert json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])["kind"] == "diverged"
    # on_divergence="stop" returns instead of raising; the CLI exits with status 3 and the message
    result = train.train(replace(config, on_divergence="stop", out_dir=str(tmp_path / "stop")))
    assert result.diverged and math.isnan(result.final_test_accuracy) and result.steps_done == stopped_at


def test_cli_exits_3_on_divergence(tmp_path, capsys):
    args = cli_args(tiny(steps=30, lr_milestones=(5,), lr_gamma=1e9, init="standard", out_dir=str(tmp_path)))
    assert train.main(args) == 3
    assert "error: training diverged at step" in capsys.readouterr().err


def test_nan_loss_is_caught(tmp_path):
    # A NaN in one weight turns every loss after it into NaN: the guard must name it and stop.
    config = tiny(steps=40, max_loss=1e30, checkpoint_every=10, out_dir=str(tmp_path))
    train.train(replace(config, steps=10))
    ckpt = load_ckpt(tmp_path / "checkpoint.pt")
    next(iter(ckpt["model"].values())).view(-1)[0] = float("nan")
    train.save_checkpoint(tmp_path / "checkpoint.pt", ckpt)
    with pytest.raises(TrainingDiverged, match=r"mean training loss nan over steps 11-15"):
        train.train(replace(config, resume=True))


# --- several processes ------------------------------------------------------------------------------------
def test_two_processes_with_torchrun_match_one_process(tmp_path):
    config = tiny(steps=24, batch_size=32, augment=True, eval_every=12, checkpoint_every=12)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "-m",
        "resnet_theory.engine.train",
    ] + cli_args(replace(config, out_dir=str(tmp_path / "ddp")))
    proc = subprocess.run(command, env=one_thread_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    torch.set_num_threads(1)
    try:
        single = train.train(replace(config, out_dir=str(tmp_path / "single")))
    finally:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    records = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["world_size"] == 2 and records[0]["local_batch_size"] == 16
    ddp = load_ckpt(tmp_path / "ddp" / "checkpoint.pt")
    assert ddp["step"] == 24
    for name, value in single.model.state_dict().items():
        torch.testing.assert_close(ddp["model"][name], value, rtol=1e-4, atol=1e-5, msg=name)
    ddp_loss = [r["loss"] for r in records if r["kind"] == "train"]
    assert np.allclose(ddp_loss, single.curve("train", "loss")[1], rtol=1e-4)
    ddp_eval = [r["test_accuracy"] for r in records if r["kind"] == "eval"]
    assert np.allclose(ddp_eval, single.curve("eval", "test_accuracy")[1], atol=1 / 360 + 1e-9)


# --- helpers for the chapter's ablations ---------------------------------------------------------------------
def test_seed_runs_and_their_summary():
    runs = train.train_seeds(tiny(steps=10, init="standard"), [3, 4])
    assert [r.config.seed for r in runs] == [3, 4] and not any(r.diverged for r in runs)
    assert runs[0].final_test_accuracy != runs[1].final_test_accuracy or not torch.equal(
        runs[0].model.stem.weight, runs[1].model.stem.weight
    )
    blown = train.train_seeds(tiny(steps=20, lr_milestones=(5,), lr_gamma=1e9, init="standard"), [0])
    assert blown[0].diverged and train.scored_accuracy(blown[0]) == 0.1  # chance for ten classes
    summary = train.summarise_runs(runs + blown)
    acc = [runs[0].final_test_accuracy, runs[1].final_test_accuracy, 0.1]
    assert summary["runs"] == 3 and summary["diverged"] == 1
    assert math.isclose(summary["mean"], np.mean(acc)) and math.isclose(summary["median"], np.median(acc))
    assert math.isclose(summary["std"], np.std(acc, ddof=1)) and summary["min"] == min(acc)
    with pytest.raises(ValueError, match="at least one"):
        train.summarise_runs([])
    with pytest.raises(ValueError, match="at least one seed"):
        train.train_seeds(tiny(), [])


# --- the command line: every option with its real type, one line and status 2 for a bad value -----------------
@pytest.mark.parametrize(
    "argv, words",
    bad_int_options(
        {
            "--steps": 1,
            "--batch-size": 1,
            "--stem-channels": 1,
            "--blocks-per-stage": 1,
            "--kernel-size": 1,
            "--eval-batch-size": 1,
            "--log-every": 1,
            "--augment-pad": 0,
            "--seed": 0,
            "--eval-every": 0,
            "--checkpoint-every": 0,
        }
    )
    + [
        (["--widths", "16,8"], "widths must not decrease from stem_channels (16)"),
        (["--widths", "20000"], "needs about"),
        (["--widths", "a,b"], "argument --widths: expected an integer, got 'a'"),
        (["--widths", ","], "argument --widths: expected comma-separated integers"),
        (["--out-dir", "README.md"], "out_dir README.md exists and is not a folder"),
        (["--augment-flip", "False"], "unrecognized arguments: False"),
        (["--steps", "ten"], "argument --steps: expected an integer, got 'ten'"),
        (["--batch-size", "2.5"], "argument --batch-size: expected an integer"),
        (["--lr", "nan"], "argument --lr: expected a finite number"),
        (["--lr", "-1"], "lr must be > 0.0, got -1.0"),
        (["--momentum", "x"], "argument --momentum: expected a number"),
        (["--max-loss", "inf"], "argument --max-loss: expected a finite number"),
        (["--lr-milestones", "50,10"], "lr_milestones must be increasing"),
        (["--eval-every", "-5"], "argument --eval-every: must be an integer >= 0"),
        (["--checkpoint-every", "x"], "argument --checkpoint-every: expected an integer"),
        (["--init", "xavier"], "init must be one of 'small', 'standard', 'printed-standard', got 'xavier'"),
        (["--on-divergence", "ignore"], "on_divergence must be one of 'raise', 'stop', got 'ignore'"),
        (["--device", "tpu"], "device must be 'auto', 'cpu' or a CUDA device"),
        (["--dataset", "mnist"], "dataset must be one of 'cifar10', 'cifar100', 'digits', got 'mnist'"),
        (["--kernel-size", "4"], "kernel_size must be odd"),
        (["--skip", "yes"], "unrecognized arguments: yes"),
        (["--resume"], "resume=True needs out_dir"),
    ],
)
def test_cli_refuses_every_bad_value_in_one_line_with_status_2(capsys, argv, words):
    err = one_line_error(capsys, train.main, ["--dataset", "digits", "--no-progress", *argv])
    assert words in err, err


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], (False, 1, False)),
        (["--augment"], (True, 1, False)),
        (["--augment", "--augment-pad", "1"], (True, 1, False)),
        (["--augment", "--augment-pad", "2", "--augment-flip"], (True, 2, True)),
        (["--augment", "--no-augment-flip"], (True, 1, False)),
    ],
)
def test_cli_parses_augmentation_with_real_types(argv, expected):
    args = train._parser().parse_args(["--dataset", "digits", *argv])
    config = TrainConfig(**vars(args))
    assert config.augmentation == expected
    config.validate()


def test_cli_parses_every_typed_option():
    args = train._parser().parse_args(
        [
            "--widths",
            "4,8",
            "--lr-milestones",
            "",
            "--seed",
            "3",
            "--lr",
            "0.1",
            "--max-loss",
            "5",
            "--no-skip",
            "--trainable-head",
            "--steps",
            "7",
        ]
    )
    assert args.widths == (4, 8) and args.lr_milestones == () and args.seed == 3 and args.lr == 0.1
    assert args.max_loss == 5.0 and args.skip is False and args.trainable_head is True and args.steps == 7
    assert train._parser().parse_args([]).augment_flip is None


def test_cli_accepts_augment_pad_1_and_trains(tmp_path, capsys):
    code = train.main(
        [
            "--dataset",
            "digits",
            "--stem-channels",
            "4",
            "--widths",
            "4",
            "--blocks-per-stage",
            "1",
            "--steps",
            "2",
            "--log-every",
            "1",
            "--eval-every",
            "0",
            "--augment",
            "--augment-pad",
            "1",
            "--no-augment-flip",
            "--no-progress",
            "--eval-batch-size",
            "500",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out.splitlines()[-1])["steps"] == 2


# --- checkpoints: two kept, each verified; damaged ones named; temporaries cleaned; full or read-only folders ----
@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory) -> TrainConfig:
    """One tiny run of two steps with a checkpoint after each: checkpoint.pt at step 2, checkpoint.prev.pt at 1."""
    base = tiny(steps=2, checkpoint_every=1, log_every=1, out_dir=str(tmp_path_factory.mktemp("two-checkpoints")))
    train.train(base)
    assert load_ckpt(Path(base.out_dir) / "checkpoint.pt")["step"] == 2
    assert load_ckpt(Path(base.out_dir) / "checkpoint.prev.pt")["step"] == 1
    return base


@pytest.fixture
def run_copy(two_checkpoints, tmp_path) -> tuple[TrainConfig, Path]:
    """A copy of that run's folder for one test to damage, and the configuration pointing at it."""
    out = tmp_path / "run"
    shutil.copytree(two_checkpoints.out_dir, out)
    return replace(two_checkpoints, out_dir=str(out)), out


DAMAGE = {
    "truncate": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "random": lambda data: os.urandom(len(data)),
    "flip": lambda data: data[:-10] + bytes(b ^ 1 for b in data[-10:]),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_checkpoint_is_named_and_the_previous_one_used(run_copy, capsys, damage):
    base, out = run_copy
    path = out / "checkpoint.pt"
    path.write_bytes(DAMAGE[damage](path.read_bytes()))
    with pytest.raises(train.CheckpointDamaged):
        train.read_checkpoint(path)
    result = train.train(replace(base, resume=True))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: {path} is "), err
    assert f"resuming from {out / 'checkpoint.prev.pt'} (step 1)" in err, err
    assert [r["step"] for r in result.history if r["kind"] == "resume"] == [1] and result.steps_done == 2
    # the damaged file did not push the good one out: both kept checkpoints verify
    assert load_ckpt(path)["step"] == 2 and load_ckpt(out / "checkpoint.prev.pt")["step"] == 1


def test_a_damaged_current_checkpoint_is_overwritten_not_kept_as_the_previous_one(tmp_path):
    path = tmp_path / "checkpoint.pt"
    for step in (1, 2):
        train.save_checkpoint(path, {"step": step})
    path.write_bytes(path.read_bytes()[:-5])  # step 2 damaged
    train.save_checkpoint(path, {"step": 3})
    assert load_ckpt(path)["step"] == 3
    assert load_ckpt(tmp_path / "checkpoint.prev.pt")["step"] == 1  # the good one stays the fallback
    train.save_checkpoint(path, {"step": 4})  # and an intact one rotates as before
    assert load_ckpt(tmp_path / "checkpoint.prev.pt")["step"] == 3


def test_both_checkpoints_damaged_refuses_naming_both(run_copy, capsys):
    base, out = run_copy
    (out / "checkpoint.pt").write_bytes(b"")
    prev = out / "checkpoint.prev.pt"
    prev.write_bytes(prev.read_bytes()[:100])
    err = one_line_error(capsys, train.main, cli_args(replace(base, resume=True)))
    assert f"{out / 'checkpoint.pt'} is empty" in err and f"{prev} is truncated" in err, err


def test_leftovers_of_a_killed_run_are_cleaned_on_the_next_start(run_copy):
    base, out = run_copy
    leftovers = [out / ".checkpoint.pt.tmp99999", out / "metrics.jsonl.tmp", out / ".write-probe99999"]
    for p in leftovers:
        p.write_bytes(b"half a file")
    with open(out / "metrics.jsonl", "a") as fh:
        fh.write('{"kind": "train", "step": 3, "lo')  # a record cut short by the kill
    result = train.train(replace(base, resume=True))
    assert not [p for p in leftovers if p.exists()]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    # the metrics are the checkpoint's history: the evaluation written after the last checkpoint is made again,
    # once (#32: no duplicate evaluation record)
    assert [r["kind"] for r in records] == ["start", "train", "train", "resume", "eval", "end"]
    assert all(r["step"] <= 2 for r in records) and result.steps_done == 2  # the cut record is gone


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_at_start_is_reported_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(train, "_write_file", _enospc)
    code = train.main(cli_args(tiny(steps=5, out_dir=str(tmp_path / "out"))))
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert str(tmp_path / "out") in err and "no space left" in err


@pytest.mark.parametrize(
    "code,text,words",
    [
        (errno.EROFS, "Read-only file system", "the file system is read-only"),
        (errno.EACCES, "Permission denied", "permission denied"),
    ],
)
def test_read_only_output_folder_is_reported_in_one_line(tmp_path, capsys, monkeypatch, code, text, words):
    def read_only(*args, **kwargs):
        raise OSError(code, text)

    monkeypatch.setattr(train, "_write_file", read_only)
    exit_code = train.main(cli_args(tiny(steps=5, out_dir=str(tmp_path))))
    err = capsys.readouterr().err
    assert exit_code == 1 and err.count("\n") == 1, err
    assert f"cannot write in the output folder {tmp_path}: {words}" in err, err


def test_full_disk_during_a_run_names_the_folder_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    config = tiny(steps=4, checkpoint_every=1, log_every=1, out_dir=str(tmp_path))
    real_write = train._write_file
    writes = []

    def fill_up(path, data):
        writes.append(path.name)
        if len([w for w in writes if w.startswith(".checkpoint")]) > 2:  # the third checkpoint hits a full disk
            _enospc()
        real_write(path, data)

    monkeypatch.setattr(train, "_write_file", fill_up)
    with pytest.raises(train.OutputError) as info:
        train.train(config)
    message = str(info.value)
    assert f"cannot write a checkpoint in {tmp_path}: no space left on the device" in message
    assert f"the last good checkpoint {tmp_path / 'checkpoint.pt'} is kept" in message
    assert load_ckpt(tmp_path / "checkpoint.pt")["step"] == 2
    assert load_ckpt(tmp_path / "checkpoint.prev.pt")["step"] == 1
    assert not list(tmp_path.glob(".checkpoint.pt.tmp*"))


def test_full_disk_while_writing_the_metrics_names_the_folder_and_keeps_the_last_good_checkpoint(
    tmp_path, monkeypatch, capsys
):
    config = tiny(steps=3, checkpoint_every=1, log_every=1, out_dir=str(tmp_path))
    real_append = train._append_file

    def fill_up(path, text):
        if '"kind": "train", "step": 3' in text:  # the disk fills up in the middle of step 3's record
            real_append(path, text[: len(text) // 2])
            _enospc()
        real_append(path, text)

    monkeypatch.setattr(train, "_append_file", fill_up)
    err = one_line_error(capsys, train.main, cli_args(config), code=1)
    assert f"cannot write the metrics in {tmp_path}: no space left on the device" in err, err
    assert f"the last good checkpoint {tmp_path / 'checkpoint.pt'} is kept" in err, err
    assert load_ckpt(tmp_path / "checkpoint.pt")["step"] == 2
    assert load_ckpt(tmp_path / "checkpoint.prev.pt")["step"] == 1
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]  # no half record
    assert [r["step"] for r in records if r["kind"] == "train"] == [1, 2]
    monkeypatch.undo()  # room again: resume from the kept checkpoint and finish
    result = train.train(replace(config, resume=True))
    assert [r["step"] for r in result.history if r["kind"] == "resume"] == [2] and result.steps_done == 3
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records if r["kind"] == "train"] == [1, 2, 3]


def test_a_checkpoint_written_before_a_field_existed_resumes_with_the_old_behaviour(run_copy):
    # Checkpoints from before TrainConfig.standardize hold no such field; the code then standardised per
    # channel, so they resume under standardize="channel" and are refused (naming the field) under "image".
    base, out = run_copy
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        payload = load_ckpt(out / name)
        del payload["config"]["standardize"]
        (out / name).unlink()
        train.save_checkpoint(out / name, payload)
    assert "standardize" not in load_ckpt(out / "checkpoint.pt")["config"]
    assert train.load_checkpoint(out / "checkpoint.pt", replace(base, resume=True))["step"] == 2
    with pytest.raises(train.ConfigError, match="standardize: checkpoint 'channel', now 'image'"):
        train.load_checkpoint(out / "checkpoint.pt", replace(base, resume=True, standardize="image"))
    result = train.train(replace(base, resume=True, steps=3))
    assert result.steps_done == 3


# --- devices and precisions (the CUDA decisions themselves: tests/test_devices.py) ------------------------------
def test_one_gpu_gets_an_explicit_index(monkeypatch):
    # The crash of issue 26: with one GPU, "auto" and "cuda" gave torch.device("cuda") without an index, which
    # torch.cuda.set_device refuses. The engine's device now always carries one (here a machine with one GPU is
    # described to the engine; nothing runs on it).
    monkeypatch.setattr(train._devices, "cuda_device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    for requested in ("auto", "cuda", "cuda:0"):
        assert train._device(tiny(device=requested), 0, 1) == torch.device("cuda", 0)
    assert train._device(tiny(device="cpu"), 0, 1) == torch.device("cpu")
    with pytest.raises(ConfigError, match=r"device 'cuda:1': only 1 CUDA device is visible"):
        train._device(tiny(device="cuda:1"), 0, 1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_cuda_asked_for_without_cuda_is_a_clear_error(capsys):
    with pytest.raises(ConfigError, match="device 'cuda' asked for but CUDA is not available here"):
        train.train(tiny(device="cuda", steps=1))
    assert train.main(["--dataset", "digits", "--device", "cuda", "--steps", "1", "--no-progress"]) == 2
    assert "error: device 'cuda' asked for but CUDA is not available here" in capsys.readouterr().err


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_autocast_precisions_train_and_are_recorded(precision):
    # The GPU precisions' code path (autocast, and fp16's gradient scaler) on the CPU, where they can be asked for.
    result = train.train(tiny(steps=30, init="standard", precision=precision, eval_every=30))
    assert result.history[0]["precision"] == precision and result.history[0]["distributed"] is None
    steps, losses = result.curve("train", "loss")
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses
    assert result.final_test_accuracy > 0.2


def test_fp16_resume_is_bitwise_and_keeps_the_gradient_scaler(tmp_path):
    base = tiny(steps=16, augment=True, checkpoint_every=8, precision="fp16")
    whole = train.train(replace(base, out_dir=str(tmp_path / "whole")))
    train.train(replace(base, steps=8, out_dir=str(tmp_path / "split")))
    saved = load_ckpt(tmp_path / "split" / "checkpoint.pt")["grad_scaler"]
    assert saved is not None and saved["scale"] > 0
    resumed = train.train(replace(base, out_dir=str(tmp_path / "split"), resume=True))
    assert [r["precision"] for r in resumed.history if r["kind"] == "resume"] == ["fp16"]
    assert_bitwise_equal(whole.model.state_dict(), resumed.model.state_dict())
    assert (
        load_ckpt(tmp_path / "whole" / "checkpoint.pt")["grad_scaler"]
        == load_ckpt(tmp_path / "split" / "checkpoint.pt")["grad_scaler"]
    )
    assert load_ckpt(tmp_path / "whole" / "checkpoint.pt")["config"]["precision"] == "fp16"


def test_a_float32_run_cannot_be_resumed_in_another_precision(tmp_path):
    train.train(tiny(steps=2, out_dir=str(tmp_path)))
    with pytest.raises(ConfigError, match="precision: checkpoint 'auto', now 'fp16'"):
        train.train(tiny(steps=4, out_dir=str(tmp_path), resume=True, precision="fp16"))


def test_one_process_under_torchrun_uses_ddp_and_matches_a_plain_run(tmp_path):
    config = tiny(steps=12, augment=True, eval_every=6, checkpoint_every=6)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=1",
        "-m",
        "resnet_theory.engine.train",
    ] + cli_args(replace(config, out_dir=str(tmp_path / "ddp")))
    proc = subprocess.run(command, env=one_thread_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "ddp" / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["world_size"] == 1 and records[0]["distributed"] == "gloo"
    torch.set_num_threads(1)  # the plain run in this process, on one thread as the torchrun worker
    try:
        plain = train.train(replace(config, out_dir=str(tmp_path / "plain")))
    finally:
        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 1)))
    assert plain.history[0]["distributed"] is None and plain.history[0]["world_size"] == 1  # no DDP here
    a, b = load_ckpt(tmp_path / "ddp" / "checkpoint.pt"), load_ckpt(tmp_path / "plain" / "checkpoint.pt")
    assert a["step"] == b["step"] == 12
    for name, value in b["model"].items():  # one process: the all-reduce is an identity, up to rounding
        torch.testing.assert_close(a["model"][name], value, rtol=1e-6, atol=1e-9, msg=name)


def test_evaluation_does_not_recompile_the_compiled_model(monkeypatch):
    """With compile=True the loop calls the compiled module; the evaluations (under no_grad, batch 1000 instead of
    32) use the eager module that shares its weights, so nothing compiles a second time. torch.compile with a
    backend that counts dynamo's compilations (a recompilation is one more frame), read as each evaluation starts
    and after the run."""
    from torch._dynamo.testing import CompileCounter

    real_compile, real_evaluate = torch.compile, train.evaluate
    counters, at_evaluations = [], []

    def counting_compile(model, **kwargs):
        counters.append(CompileCounter())
        return real_compile(model, backend=counters[-1], **kwargs)

    def watched_evaluate(*args, **kwargs):
        at_evaluations.append(counters[-1].frame_count)
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(torch, "compile", counting_compile)
    monkeypatch.setattr(train, "evaluate", watched_evaluate)
    base = dict(steps=12, compile=True, eval_batch_size=1000, seed=3)
    torch._dynamo.reset()
    plain = train.train(tiny(**base, eval_every=0))  # one evaluation, at the end
    training_frames = counters[0].frame_count
    assert len(counters) == 1 and training_frames >= 1 and at_evaluations == [training_frames]
    torch._dynamo.reset()
    at_evaluations.clear()
    result = train.train(tiny(**base, eval_every=4))  # evaluations at steps 0 (before training), 4, 8 and 12
    assert [r["step"] for r in result.history if r["kind"] == "eval"] == [0, 4, 8, 12]
    assert at_evaluations == [0] + 3 * [training_frames] and counters[1].frame_count == training_frames
    assert math.isfinite(plain.final_test_loss) and result.final_test_loss == pytest.approx(plain.final_test_loss)
