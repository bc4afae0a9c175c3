"""resnet_theory.engine.gpu_check: refuses cleanly without CUDA, and its steps run (rehearsed on the CPU, small
sizes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from resnet_theory.engine import data, gpu_check

LINE = re.compile(r"^gpu-check: (PASS|FAIL|SKIP) ([a-z ]+): (.+) \((\d+\.\d) s\)$")


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
def test_without_cuda_it_says_so_in_one_line_and_exits_2():
    proc = subprocess.run(
        [sys.executable, "-m", "resnet_theory.engine.gpu_check"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and proc.stderr == ""
    assert lines[0].startswith("gpu-check: no CUDA GPU on this machine (torch ")
    assert lines[0].endswith("); nothing was checked")
    assert gpu_check.no_cuda_reason() is not None


def test_make_gpu_check_runs_the_module():
    from pathlib import Path

    makefile = (Path(__file__).resolve().parents[1] / "Makefile").read_text()
    recipe = makefile.split("\ngpu-check:", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) -m resnet_theory.engine.gpu_check" in recipe


def test_synthetic_cifar_is_read_by_the_real_reader_and_learnable(tmp_path):
    root = gpu_check.write_synthetic_cifar10(tmp_path, train_images=50, test_images=20)
    split = data.load_cifar(root, "cifar10")  # the engine's reader, with its record and label checks
    images, labels = split["train"]
    assert images.shape == (50, 3, 32, 32) and images.dtype == np.uint8 and labels.shape == (50,)
    assert split["test"][0].shape == (20, 3, 32, 32)
    # the classes differ in colour: the nearest class-mean colour labels most test images correctly
    means = np.stack([images[labels == c].mean(axis=(0, 2, 3)) for c in np.unique(labels)])
    test_images, test_labels = split["test"]
    known = np.isin(test_labels, np.unique(labels))
    guess = np.unique(labels)[np.argmin(((test_images.mean(axis=(2, 3))[:, None, :] - means[None]) ** 2).sum(-1), 1)]
    assert (guess[known] == test_labels[known]).mean() > 0.8


def test_the_check_runs_every_step_on_the_cpu(tmp_path):
    """The rehearsal: every step of the GPU check, on the CPU with a small network (compilation left out)."""
    lines = []
    steps = gpu_check.run_checks(gpu_check.CPU_SIZES, report=lines.append, work_dir=tmp_path)
    assert [s.name for s in steps] == list(gpu_check.STEP_NAMES)
    assert [LINE.match(line).group(1, 2) for line in lines] == [(s.status, s.name) for s in steps]
    status = {s.name: s.status for s in steps}
    assert status == {**{name: "PASS" for name in gpu_check.STEP_NAMES}, "train compiled": "SKIP"}, lines
    figures = {s.name: s.figures for s in steps}
    assert figures["device"]["precision"] == "float32" and figures["device"]["ddp_backend"] == "gloo"
    assert figures["train eager"]["losses"][-1] < figures["train eager"]["losses"][0]
    resume = figures["kill and resume"]
    assert 0 < resume["killed_after_checkpoint_of_step"] < gpu_check.CPU_SIZES.resume_steps
    assert resume["tensors_differing"] == 0 and resume["momentum_buffers_differing"] == 0
    assert figures["torchrun"]["backend"] == "gloo" and figures["torchrun"]["world_size"] == 1
    assert figures["bench"]["ranking"]["text"] in lines[5]
    assert figures["expressivity"]["n"] == gpu_check.CPU_SIZES.expressivity_n
    json.dumps([s.figures for s in steps], default=str)  # what --json writes


def test_a_failing_step_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    def broken(sizes):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore detail")

    monkeypatch.setattr(gpu_check, "check_bench", broken)
    monkeypatch.setattr(gpu_check, "check_kill_and_resume", lambda *a: gpu_check.Step("kill and resume", "SKIP", "-"))
    monkeypatch.setattr(gpu_check, "check_torchrun", lambda *a: gpu_check.Step("torchrun", "SKIP", "-"))
    lines = []
    sizes = replace(gpu_check.CPU_SIZES, steps=10, expressivity_n=100, separation_n=50)
    steps = gpu_check.run_checks(sizes, report=lines.append, work_dir=tmp_path)
    bench = next(s for s in steps if s.name == "bench")
    assert bench.status == "FAIL" and bench.text == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert steps[-1].name == "expressivity" and steps[-1].status == "PASS"


def test_a_training_run_that_fails_is_a_failed_step_naming_why(tmp_path):
    sizes = replace(
        gpu_check.CPU_SIZES,
        steps=10,
        log_every=5,
        model=gpu_check.CPU_SIZES.model + (("lr", 1e6), ("init", "standard")),
    )
    root = gpu_check.write_synthetic_cifar10(tmp_path / "data", sizes.train_images, sizes.test_images)
    step = gpu_check.check_training(sizes, root, tmp_path, compiled=False)
    assert step.status == "FAIL"
    assert step.text.startswith("python -m resnet_theory.engine.train exited 3: error: training diverged at step")


def test_the_compiled_step_compiles_and_compares_with_the_eager_run(tmp_path):
    # torch.compile on the CPU (inductor, about a minute here): the code path the GPU check takes with --compile
    sizes = replace(gpu_check.CPU_SIZES, compile=True, steps=20)
    root = gpu_check.write_synthetic_cifar10(tmp_path / "data", sizes.train_images, sizes.test_images)
    eager = gpu_check.check_training(sizes, root, tmp_path, compiled=False)
    compiled = gpu_check.check_training(sizes, root, tmp_path, compiled=True, eager=eager)
    assert eager.status == compiled.status == "PASS", (eager.text, compiled.text)
    assert compiled.figures["largest_relative_loss_difference"] <= 0.05
    assert "of the eager run's at every logged step" in compiled.text and compiled.figures["speedup_over_eager"] > 0


def test_main_on_a_gpu_machine_prints_a_summary_writes_json_and_exits_1_on_a_failure(tmp_path, monkeypatch, capsys):
    # main() as it runs on a GPU machine (the steps themselves replaced: they are rehearsed above)
    def fake_run_checks(sizes, report, work_dir=None):
        steps = [
            gpu_check.Step("device", "PASS", "cuda:0 NVIDIA H100", {"name": "NVIDIA H100"}),
            gpu_check.Step("bench", "FAIL", "RuntimeError: out of memory"),
        ]
        for s in steps:
            report(s.line())
        return steps

    monkeypatch.setattr(gpu_check, "no_cuda_reason", lambda: None)
    monkeypatch.setattr(gpu_check, "run_checks", fake_run_checks)
    out_json = tmp_path / "figures" / "gpu-check.json"
    assert gpu_check.main(["--json", str(out_json)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gpu-check: 7 steps, sizes ")
    assert lines[1:3] == [
        "gpu-check: PASS device: cuda:0 NVIDIA H100 (0.0 s)",
        "gpu-check: FAIL bench: RuntimeError: out of memory (0.0 s)",
    ]
    assert re.fullmatch(r"gpu-check: 1 of 2 steps passed in \d+ s; failed: bench", lines[3])
    saved = json.loads(out_json.read_text())
    assert [s["name"] for s in saved["steps"]] == ["device", "bench"] and saved["sizes"]["device"] == "cuda"
    monkeypatch.setattr(
        gpu_check, "run_checks", lambda sizes, report, work_dir=None: [gpu_check.Step("device", "PASS", "-")]
    )
    assert gpu_check.main([]) == 0
