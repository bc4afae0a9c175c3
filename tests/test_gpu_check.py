"""resnet_theory.engine.gpu_check: refuses cleanly without CUDA, runs where nothing can be installed (make gpu-check),
keeps its JSON complete when a step is killed, and its steps run (rehearsed on the CPU, small sizes);
resnet_theory.engine.gpu_figures reads committed measurements back and refuses malformed ones."""

from __future__ import annotations

import html
import json
import os
import re
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

from resnet_theory.engine import data, gpu_check, gpu_figures

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^gpu-check: (PASS|FAIL|SKIP) ([a-z0-9 -]+): (.+) \((\d+\.\d) s\)$")
MODULE = [sys.executable, "-m", "resnet_theory.engine.gpu_check"]


def context(tmp_path, sizes=gpu_check.CPU_SIZES) -> gpu_check.Context:
    ctx = gpu_check.Context(sizes, tmp_path, time.monotonic() + sizes.budget)
    (tmp_path / "logs").mkdir(parents=True, exist_ok=True)
    ctx.data_dir = gpu_check.write_synthetic_cifar10(tmp_path / "data", sizes.train_images, sizes.test_images)
    return ctx


# --- without CUDA -------------------------------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA")
@pytest.mark.parametrize("args", [[], ["OUT"]])
def test_without_cuda_it_says_so_in_one_line_and_exits_2(tmp_path, args):
    args = [str(tmp_path / a) for a in args]
    proc = subprocess.run([*MODULE, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and proc.stderr == ""
    assert lines[0].startswith("gpu-check: no CUDA GPU on this machine (torch ")
    assert lines[0].endswith("); nothing was checked")
    assert gpu_check.no_cuda_reason() is not None
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "args, words",
    [
        (["--only", "train eager,warp drive"], "unknown step 'warp drive'; the steps: device, train eager"),
        (["--only", ","], "unknown step (none given)"),
        (["--budget", "-5"], "--budget must be a positive number of seconds, got -5"),
        (["--budget", "nan"], "--budget must be a positive number of seconds, got nan"),
        (["--compile"], "--compile goes with --cpu-rehearsal (on a GPU the steps that compile always run)"),
    ],
)
def test_bad_options_are_one_line_errors(args, words, capsys):
    assert gpu_check.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err


def test_plan_keeps_the_checks_order_and_the_device_step_first():
    assert gpu_check.plan(None) == list(gpu_check.STEP_NAMES)
    assert gpu_check.plan("expressivity, train eager") == ["device", "train eager", "expressivity"]
    assert set(gpu_check.CHECKS) == set(gpu_check.STEP_NAMES)


# --- make gpu-check: nothing installed where a python imports torch ----------------------------------------------
STUB = """#!/bin/sh
echo "$0 PYTHONPATH=$PYTHONPATH $*" >> "{calls}"
case "$*" in *"import torch"*) exit {torch_exit};; esac
exit 0
"""


def make_copy(tmp_path) -> Path:
    """The Makefile with the files it reads, in a folder of its own (no .venv)."""
    folder = tmp_path / "clone"
    folder.mkdir()
    for name in ("Makefile", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, folder / name)
    return folder


def stub(folder: Path, name: str, imports_torch: bool) -> Path:
    path = folder / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(STUB.format(calls=folder / "calls", torch_exit=0 if imports_torch else 1))
    path.chmod(0o755)
    return path


def make(folder: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path or os.environ["PATH"]}
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "-C", str(folder), *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_check_with_a_python_that_imports_torch_installs_nothing(tmp_path):
    folder = make_copy(tmp_path)
    py = stub(folder, "python3", imports_torch=True)
    proc = make(folder, "gpu-check", f"PY={py}", "GPU_OUT=/tmp/figures", "ARGS=--only torchrun")
    assert proc.returncode == 0, proc.stderr
    assert not (folder / ".venv").exists()
    calls = (folder / "calls").read_text().splitlines()
    assert calls[-1] == f"{py} PYTHONPATH=lib -m resnet_theory.engine.gpu_check /tmp/figures --only torchrun"
    # not given: a python3 on PATH that imports torch is found and used the same way
    (folder / "calls").unlink()
    proc = make(folder, "gpu-check", path=f"{py.parent}:{os.environ['PATH']}")
    assert proc.returncode == 0, proc.stderr
    assert not (folder / ".venv").exists()
    last = (folder / "calls").read_text().splitlines()[-1]
    assert last.endswith("PYTHONPATH=lib -m resnet_theory.engine.gpu_check _build/gpu-check")


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_check_refuses_a_given_python_without_torch_and_creates_no_venv(tmp_path):
    folder = make_copy(tmp_path)
    py = stub(folder, "python3", imports_torch=False)
    proc = make(folder, "gpu-check", f"PY={py}")
    assert proc.returncode == 2
    assert f"make gpu-check: PY={py} cannot import torch; give PY=<a python that imports torch>" in proc.stderr
    assert not (folder / ".venv").exists()
    assert "-m resnet_theory.engine.gpu_check" not in (folder / "calls").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_check_installs_only_when_no_python_imports_torch(tmp_path):
    folder = make_copy(tmp_path)
    py = stub(folder, "python3", imports_torch=False)
    proc = make(folder, "-n", "gpu-check", f"PYTHON={py}")  # -n: print what it would do
    assert proc.returncode == 0, proc.stderr
    assert f"{py} -m venv .venv" in proc.stdout and "pip install" in proc.stdout
    assert "PYTHONPATH=lib .venv/bin/python -m resnet_theory.engine.gpu_check" in proc.stdout
    assert not (folder / ".venv").exists()


def test_readme_says_how_to_run_it_where_nothing_can_be_installed():
    readme = (ROOT / "README.md").read_text()
    assert "make gpu-check PY=python3" in readme
    assert "PYTHONPATH=lib python3 -m resnet_theory.engine.gpu_check" in readme


# What the GPU machine has: Python, torch (and what torch itself imports), NumPy, SciPy, tqdm; nothing else.
ONLY_THE_GPU_MACHINES_PACKAGES = """
import importlib.abc, sys
THERE = set(sys.stdlib_module_names) | {
    "torch", "torchgen", "functorch", "numpy", "scipy", "tqdm", "resnet_theory",
    "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "filelock", "fsspec", "typing_extensions", "triton",
    "setuptools", "pkg_resources", "sitecustomize",
}
class OnlyWhatTheGpuMachineHas(importlib.abc.MetaPathFinder):
    # each finder, wrapped: a package the GPU machine lacks is not found (find_spec None, as when missing)
    def __init__(self, inner):
        self.inner = inner
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in THERE and not top.startswith("_"):
            return None
        return self.inner.find_spec(name, path, target)
    def invalidate_caches(self):
        getattr(self.inner, "invalidate_caches", lambda: None)()
sys.meta_path[:] = [OnlyWhatTheGpuMachineHas(finder) for finder in sys.meta_path]
"""


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    """The whole CPU rehearsal, run once for the tests below (one subprocess: every step's own subprocesses start
    from it), with every package the GPU machine lacks made unimportable (threadpoolctl, scikit-learn, matplotlib,
    hypothesis, Jupyter...) by a sitecustomize on PYTHONPATH: ``(folder, the probe's output, the run)``."""
    tmp_path = tmp_path_factory.mktemp("rehearsal")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ONLY_THE_GPU_MACHINES_PACKAGES)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "lib")]), "OMP_NUM_THREADS": "1"}
    probe = "import importlib.util as u; print([u.find_spec(n) is None for n in ('threadpoolctl', 'sklearn', 'scipy')])"
    probe = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    proc = subprocess.run(
        [*MODULE, str(tmp_path / "out"), "--cpu-rehearsal", "--keep", str(tmp_path / "work")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return tmp_path, probe, proc


def test_the_check_needs_only_torch_numpy_scipy_and_tqdm(rehearsal):
    """Every step (its subprocesses too) with every other package made unimportable, as on the GPU machine."""
    tmp_path, probe, proc = rehearsal
    assert probe.stdout.strip() == "[True, True, False]", probe.stderr  # the block works (both are installed here)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    saved = json.loads((tmp_path / "out" / gpu_check.RESULT_NAME).read_text())
    ran = {s["name"]: s["status"] for s in saved["steps"]}
    assert list(ran) == list(gpu_check.STEP_NAMES) and set(ran.values()) <= {"PASS", "SKIP"}, ran
    assert {n for n, status in ran.items() if status == "SKIP"} == COMPILED  # only torch.compile is left out


# --- the steps, rehearsed on the CPU -----------------------------------------------------------------------------
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


COMPILED = {"train compiled", "speed compiled", "speed cuda graphs", "speed max-autotune"}


def test_the_cpu_rehearsal_runs_every_step_and_writes_the_json_and_small_logs(rehearsal):
    """Every step of the check, on the CPU with a small network (compilation left out), through main()."""
    tmp_path, _, proc = rehearsal
    out = tmp_path / "out"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    steps = [LINE.match(line) for line in lines[1:-1]]
    assert [m.group(2) for m in steps] == list(gpu_check.STEP_NAMES), lines
    assert {m.group(2): m.group(1) for m in steps} == {
        name: "SKIP" if name in COMPILED else "PASS" for name in gpu_check.STEP_NAMES
    }, lines
    assert re.fullmatch(r"gpu-check: 10 of 14 steps passed, 4 skipped, in \d+ s", lines[-1])
    saved = json.loads((out / gpu_check.RESULT_NAME).read_text())
    assert saved["schema"] == gpu_figures.SCHEMA and saved["complete"] is True and saved["running"] is None
    assert saved["plan"] == list(gpu_check.STEP_NAMES) and saved["summary"] == {"PASS": 10, "FAIL": 0, "SKIP": 4}
    assert saved["versions"]["torch"] == torch.__version__ and saved["device"]["type"] == "cpu"
    figures = {s["name"]: s["figures"] for s in saved["steps"]}
    assert figures["device"]["precision"] == "float32" and figures["device"]["ddp_backend"] == "gloo"
    assert figures["train eager"]["losses"][-1] < figures["train eager"]["losses"][0]
    assert figures["train eager"]["channels_last_weights"] is False and figures["train eager"]["fused_sgd"] is False
    assert figures["train fp16"]["precision"] == "fp16" and figures["train fp16"]["grad_scale"] > 0
    assert figures["paper learning rate"]["lr"] == 0.05 and figures["train float32"]["lr"] == 0.01
    resume = figures["kill and resume"]
    assert 0 < resume["killed_after_checkpoint_of_step"] < gpu_check.CPU_SIZES.resume_steps
    assert resume["tensors_differing"] == 0 and resume["momentum_buffers_differing"] == 0
    assert figures["torchrun"]["backend"] == "gloo" and figures["torchrun"]["world_size"] == 1
    loader = figures["dataloader workers"]
    assert loader["batches"] == gpu_check.CPU_SIZES.loader_batches and loader["workers"] >= 1
    speed = figures["speed eager"]
    assert speed["mode"] == "eager" and len(speed["rounds_images_per_second"]) == 3 and speed["images_per_second"] > 0
    assert speed["schedule_minutes"] == pytest.approx(64_000 * 128 / speed["images_per_second"] / 60)
    assert figures["expressivity"]["n"] == gpu_check.CPU_SIZES.expressivity_n
    # small: the logs' tails and the metrics only (the checkpoints stay in the work folder)
    kept = sorted(p.name for p in (out / "logs").iterdir())
    assert "eager.metrics.jsonl" in kept and "speed-eager.log" in kept and "torchrun.log" in kept
    assert sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) < 200_000
    assert not list(out.rglob("*.pt")) and list((tmp_path / "work").rglob("checkpoint.pt"))
    with pytest.raises(gpu_figures.MeasurementError, match="device.type must be 'cuda'"):
        gpu_figures.read_measurement(out / gpu_check.RESULT_NAME)  # a rehearsal is no measurement


def wait_for(path: Path, condition, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            saved = json.loads(path.read_text())
            if condition(saved):
                return saved
        except (OSError, ValueError):
            pass  # not written yet (each write is atomic: a file that exists is whole)
        time.sleep(0.05)
    raise AssertionError(f"{path} never satisfied the condition")


def start_rehearsal(tmp_path, only: str) -> tuple[subprocess.Popen, Path]:
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [*MODULE, str(out), "--cpu-rehearsal", "--only", only, "--keep", str(tmp_path / "work")]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )
    return proc, out / gpu_check.RESULT_NAME


def test_the_json_is_complete_after_the_run_is_killed_mid_step(tmp_path):
    proc, result = start_rehearsal(tmp_path, "train eager,kill and resume")
    try:
        wait_for(result, lambda d: d["running"] == "kill and resume")
        os.killpg(proc.pid, signal.SIGKILL)  # the check and every process it started, mid-step
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    saved = json.loads(result.read_text())
    assert [(s["name"], s["status"]) for s in saved["steps"]] == [("device", "PASS"), ("train eager", "PASS")]
    assert saved["running"] == "kill and resume" and saved["complete"] is False
    assert saved["summary"] == {"PASS": 2, "FAIL": 0, "SKIP": 0} and saved["plan"][-1] == "kill and resume"
    assert saved["steps"][1]["figures"]["losses"] and saved["versions"]["torch"] == torch.__version__
    assert (result.parent / "logs" / "eager.metrics.jsonl").is_file()


def processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_sigterm_during_a_step_is_recorded_and_ends_its_subprocesses(tmp_path):
    proc, result = start_rehearsal(tmp_path, "kill and resume")
    try:
        wait_for(result, lambda d: d["running"] == "kill and resume")
        deadline = time.monotonic() + 60
        while not processes_mentioning(str(tmp_path / "work" / "whole")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the training subprocesses have started
        proc.send_signal(signal.SIGTERM)  # the check only, as a time limit would
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert output.splitlines()[-1].startswith("gpu-check: interrupted (SIGTERM during step kill and resume); ")
    saved = json.loads(result.read_text())
    assert saved["interrupted"] == "SIGTERM during step kill and resume" and saved["complete"] is False
    assert [s["name"] for s in saved["steps"]] == ["device"]
    time.sleep(0.5)
    assert processes_mentioning(str(tmp_path / "work" / "whole")) == []  # no training process left behind


def test_a_failing_step_is_reported_and_the_others_still_run(tmp_path, monkeypatch):
    def broken(ctx):
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore detail")

    monkeypatch.setitem(gpu_check.CHECKS, "speed eager", broken)
    lines = []
    sizes = replace(gpu_check.CPU_SIZES, expressivity_n=100, separation_n=50)
    steps = gpu_check.run_checks(sizes, report=lines.append, work_dir=tmp_path, only="speed eager,expressivity")
    expected = [("device", "PASS"), ("speed eager", "FAIL"), ("expressivity", "PASS")]
    assert [(s.name, s.status) for s in steps] == expected
    assert steps[1].text == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert [LINE.match(line).group(1, 2) for line in lines] == [(s.status, s.name) for s in steps]


def test_a_training_run_that_fails_is_a_failed_step_naming_why(tmp_path):
    sizes = replace(
        gpu_check.CPU_SIZES,
        steps=10,
        log_every=5,
        model=gpu_check.CPU_SIZES.model + (("lr", 1e6), ("init", "standard")),
    )
    step = gpu_check.check_train_eager(context(tmp_path, sizes))
    assert step.status == "FAIL"
    assert step.text.startswith("python -m resnet_theory.engine.train exited 3: error: training diverged at step")


def test_the_budget_skips_steps_and_no_subprocess_outlives_it(tmp_path, monkeypatch):
    # a step that cannot start: less than least_for_a_step left
    sizes = replace(gpu_check.CPU_SIZES, budget=0.5, least_for_a_step=30.0)
    steps = gpu_check.run_checks(sizes, report=lambda line: None, work_dir=tmp_path / "a", only="torchrun")
    assert steps[0].status == "PASS"  # the device step always runs
    assert steps[1].status == "SKIP" and re.fullmatch(
        r"not started: \d+ s of the 0 s budget left, at least 30 s needed", steps[1].text
    )
    # a step whose subprocesses outlive the budget: killed with their process group; the step is SKIP, cut by the
    # end of the budget (its code did not fail: it was not given the time)
    sizes = replace(gpu_check.CPU_SIZES, budget=2.0, least_for_a_step=0.0, resume_steps=200)  # runs that outlive it
    start = time.monotonic()
    step = gpu_check.run_checks(sizes, report=lambda line: None, work_dir=tmp_path / "b", only="kill and resume")[1]
    assert time.monotonic() - start < 30
    assert step.status == "SKIP"
    assert re.fullmatch(
        r"cut by the end of the budget: the uninterrupted run did not finish within \d+ s \(what was left of the "
        r"budget\)",
        step.text,
    )
    assert processes_mentioning(str(tmp_path / "b")) == []

    # a subprocess that outruns its own limit, with budget to spare, hung: that is a FAIL (what _wait raises then)
    def out_of_time(what: str, seconds: float, budget: bool):
        def check(ctx):
            raise gpu_check.OutOfTime(what, seconds, budget=budget)

        return check

    ctx = gpu_check.Context(gpu_check.CPU_SIZES, tmp_path / "d", time.monotonic() + 600)
    monkeypatch.setitem(gpu_check.CHECKS, "torchrun", out_of_time("the uninterrupted run", 240.0, budget=False))
    hung = gpu_check._one_step(ctx, "torchrun")
    assert hung.status == "FAIL" and hung.text == "the uninterrupted run did not finish within 240 s"
    monkeypatch.setitem(gpu_check.CHECKS, "torchrun", out_of_time("the resume", 3.0, budget=True))
    cut = gpu_check._one_step(ctx, "torchrun")
    assert cut.status == "SKIP" and cut.text == (
        "cut by the end of the budget: the resume did not finish within 3 s (what was left of the budget)"
    )
    # max-autotune gets what is left and is skipped, with the command to measure it alone, when that is not enough
    sizes = replace(gpu_check.CPU_SIZES, compile=True, budget=1.5, least_for_a_step=0.0)
    ctx = context(tmp_path / "c", sizes)
    step = gpu_check.check_speed(ctx, "speed max-autotune")
    alone = "python -m resnet_theory.engine.bench --pipelines device --compile --compile-mode max-autotune"
    assert step.status == "SKIP" and step.text.endswith(f"measure it alone: {alone}")
    with pytest.raises(gpu_check.OutOfTime, match="the benchmark did not finish within"):
        gpu_check.check_speed(ctx, "speed compiled")  # the others: run_checks decides (budget: SKIP; else FAIL)
    # max-autotune cut by its own limit too: it tunes for minutes, so it was not given the time (SKIP, not FAIL)
    ctx = context(tmp_path / "e", replace(sizes, budget=600.0, timeout=1.0))
    assert gpu_check.check_speed(ctx, "speed max-autotune").status == "SKIP"


def test_a_step_that_compiles_needs_more_of_the_budget_and_a_toolchain(tmp_path, monkeypatch):
    """A compile takes minutes cold: with less than ``least_for_a_compile`` left it is not started; where Inductor
    cannot build (no Triton on a GPU, no compiler) the steps that compile are SKIP at once, saying why, and the
    device step says so."""
    sizes = replace(gpu_check.CPU_SIZES, compile=True, budget=30.0, least_for_a_step=0.0, least_for_a_compile=60.0)
    ctx = context(tmp_path, sizes)
    for name in gpu_check.COMPILING:
        step = gpu_check._one_step(ctx, name)
        assert step.status == "SKIP" and step.text.endswith("at least 60 s needed for a step that compiles"), step
    assert gpu_check._one_step(ctx, "dataloader workers").status == "PASS"
    found = gpu_check.compile_toolchain(gpu_check.CPU_SIZES)
    assert found["compiler"] and isinstance(found["python_headers"], bool)
    for name in ("CC", "CXX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(gpu_check.shutil, "which", lambda name: None)
    sizes = replace(sizes, least_for_a_compile=0.0)
    assert gpu_check.compile_toolchain_problem(sizes) == "no C++ compiler (CXX, g++, c++, clang++) on the PATH"
    step = gpu_check._one_step(context(tmp_path / "b", sizes), "speed compiled")
    assert step.status == "SKIP" and step.text == (
        "not started: torch.compile cannot work here (no C++ compiler (CXX, g++, c++, clang++) on the PATH)"
    )
    assert gpu_check.compile_toolchain_problem(replace(sizes, compile=False)) is None  # the steps say it themselves
    import importlib.util

    gpu, real, triton = replace(gpu_check.GPU_SIZES, compile=True), importlib.util.find_spec, {"there": True}

    def find_spec(name, *args):
        if name == "triton":
            return object() if triton["there"] else None
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert gpu_check.compile_toolchain_problem(gpu) == "no C compiler (CC, gcc, clang) on the PATH"
    monkeypatch.setenv("CC", "/opt/cc")
    assert gpu_check.compile_toolchain_problem(gpu) is None
    triton["there"] = False
    assert gpu_check.compile_toolchain_problem(gpu).startswith("Triton is not installed")


def test_the_compiled_step_compiles_once_and_compares_with_the_eager_run(tmp_path, rehearsal, monkeypatch):
    # torch.compile on the CPU (inductor, about a minute here): the code path the GPU check takes with --compile;
    # TORCH_LOGS=recompiles in the run's log counts recompilations (the final evaluation used to be one)
    sizes = replace(gpu_check.CPU_SIZES, compile=True, timeout=900.0)  # a loaded 2-core CPU compiles slowly
    # the eager run to compare with is the rehearsal's (same sizes, on the same synthetic data it wrote), not a
    # second one; inductor compiles in the training process (no pool of compile workers, each importing torch)
    rehearsed, _, _ = rehearsal
    saved = json.loads((rehearsed / "out" / gpu_check.RESULT_NAME).read_text())
    step = next(s for s in saved["steps"] if s["name"] == "train eager")
    eager = gpu_check.Step(step["name"], step["status"], step["text"], step["figures"])
    assert (eager.figures["steps"], eager.figures["batch_size"]) == (sizes.steps, sizes.batch_size)
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "1")
    ctx = gpu_check.Context(sizes, tmp_path, time.monotonic() + sizes.budget)
    (tmp_path / "logs").mkdir()
    ctx.data_dir = rehearsed / "work" / "data"
    ctx.done["train eager"] = eager
    compiled = gpu_check.check_train_compiled(ctx)
    assert eager.status == compiled.status == "PASS", (eager.text, compiled.text)
    assert compiled.figures["recompilations"] == 0 and "; 0 recompilations (TORCH_LOGS=recompiles)" in compiled.text
    assert compiled.figures["largest_relative_loss_difference"] <= 0.05
    assert "of the eager run's at every logged step" in compiled.text and compiled.figures["speedup_over_eager"] > 0


def test_main_on_a_gpu_machine_prints_a_summary_and_exits_1_on_a_failure(tmp_path, monkeypatch, capsys):
    # main() as it runs on a GPU machine (the steps themselves replaced: they are rehearsed above)
    def fake_run_checks(sizes, report, work_dir=None, only=None, recorder=None):
        steps = [
            gpu_check.Step("device", "PASS", "cuda:0 NVIDIA H100", {"name": "NVIDIA H100"}),
            gpu_check.Step("speed eager", "FAIL", "RuntimeError: out of memory"),
        ]
        for s in steps:
            report(s.line())
        return steps

    monkeypatch.setattr(gpu_check, "no_cuda_reason", lambda: None)
    monkeypatch.setattr(gpu_check, "run_checks", fake_run_checks)
    assert gpu_check.main([]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gpu-check: 14 steps within 400 s on cuda, sizes ")
    assert lines[1:3] == [
        "gpu-check: PASS device: cuda:0 NVIDIA H100 (0.0 s)",
        "gpu-check: FAIL speed eager: RuntimeError: out of memory (0.0 s)",
    ]
    assert re.fullmatch(r"gpu-check: 1 of 2 steps passed, 0 skipped, in \d+ s; failed: speed eager", lines[3])
    monkeypatch.setattr(gpu_check, "run_checks", lambda sizes, report, **kw: [gpu_check.Step("device", "PASS", "-")])
    assert gpu_check.main(["--budget", "300"]) == 0


@pytest.mark.parametrize("args, compiles", [([], False), (["--compile"], True)])
def test_the_cpu_rehearsal_compiles_only_when_asked(args, compiles, monkeypatch, capsys):
    # which sizes main() hands to the steps (the compiled steps themselves: the compile test above, and the
    # rehearsal with --compile that the README's GPU section gives for a new torch)
    handed = []
    monkeypatch.setattr(gpu_check, "run_checks", lambda sizes, report, **kw: handed.append(sizes) or [])
    assert gpu_check.main(["--cpu-rehearsal", *args]) == 0
    assert handed == [replace(gpu_check.CPU_SIZES, compile=compiles)]
    assert f"'compile': {compiles}" in capsys.readouterr().out


# --- the committed measurements ----------------------------------------------------------------------------------
def measurement() -> dict:
    """A gpu_check JSON as a GPU run writes it (figures made up for the reader's tests only)."""
    speed = {
        "mode": "default",
        "precision": "bf16 autocast",
        "batch_size": 128,
        "trainable_parameters": 13_546_816,
        "images_per_second": 20_000.0,
        "rounds_images_per_second": [19_800.0, 20_000.0, 20_300.0],
        "spread": {"median": 20_000.0, "min": 19_800.0, "max": 20_300.0, "relative": 0.025},
        "schedule_minutes": 64_000 * 128 / 20_000 / 60,
    }
    return {
        "schema": gpu_figures.SCHEMA,
        "complete": True,
        "started_utc": "2026-11-27T12:00:00+00:00",
        "device": {"type": "cuda", "name": "NVIDIA H100 80GB HBM3"},
        "versions": {"python": "3.12.3", "torch": "2.11.0+cu128", "cuda": "12.8"},
        "steps": [
            {"name": "device", "status": "PASS", "text": "-", "figures": {}},
            {"name": "speed eager", "status": "PASS", "text": "-", "figures": {**speed, "mode": "eager"}},
            {"name": "speed compiled", "status": "PASS", "text": "-", "figures": speed},
            {"name": "speed max-autotune", "status": "SKIP", "text": "not started", "figures": {}},
        ],
    }


def test_measurement_rows_read_the_committed_files(tmp_path):
    assert gpu_figures.measurement_rows(tmp_path / "none yet") == []
    assert gpu_figures.DEFAULT_FOLDER == ROOT / "book" / "data" / "gpu"
    (tmp_path / "h100.json").write_text(json.dumps(measurement()))
    rows = gpu_figures.measurement_rows(tmp_path)
    assert [r["mode"] for r in rows] == ["eager", "default"]
    row = rows[1]
    assert row["device"] == "NVIDIA H100 80GB HBM3" and row["torch"] == "2.11.0+cu128" and row["cuda"] == "12.8"
    assert row["images_per_second"] == 20_000.0 and row["images_per_second_min"] == 19_800.0 and row["rounds"] == 3
    assert row["schedule_minutes"] == pytest.approx(6.827, abs=1e-3) and row["goal_met"] is True
    assert row["steps_passed"] == "3 of 4" and row["file"] == "h100.json"
    steps = gpu_figures.measurement_steps(tmp_path)
    assert [(r["step"], r["status"]) for r in steps] == [(s["name"], s["status"]) for s in measurement()["steps"]]
    assert steps[-1]["text"] == "not started" and steps[0]["device"] == "NVIDIA H100 80GB HBM3"
    assert gpu_figures.measurement_steps(tmp_path / "none yet") == []


def _commit(folder: Path, name: str, change=None) -> dict:
    d = measurement()
    if change:
        change(d)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(d))
    return d


def test_the_summary_names_the_device_and_says_what_the_newest_run_measured(tmp_path):
    def faster_compiled(d):
        d["steps"][2]["figures"].update(
            images_per_second=25_600.0,
            rounds_images_per_second=[25_400.0, 25_600.0, 25_900.0],
            spread={"median": 25_600.0, "min": 25_400.0, "max": 25_900.0, "relative": 500 / 25_600},
            schedule_minutes=64_000 * 128 / 25_600 / 60,
        )

    def older_and_failing(d):
        d["started_utc"] = "2026-11-01T09:00:00+00:00"
        d["device"]["name"] = "NVIDIA H200"
        d["steps"][1]["status"] = "FAIL"

    _commit(tmp_path, "a-h200.json", older_and_failing)
    _commit(tmp_path, "b-h100.json", faster_compiled)
    rows, steps = gpu_figures.measurement_rows(tmp_path), gpu_figures.measurement_steps(tmp_path)
    text = gpu_figures.summary(rows, steps)
    assert text.startswith("On one NVIDIA H100 80GB HBM3 (torch 2.11.0+cu128, CUDA 12.8, Python 3.12.3; run of ")
    assert "2026-11-27, file b-h100.json), the paper's network (13,546,816 trainable parameters) trained" in text
    assert "fastest with torch.compile: 25,600 images per second at batch 128 in bf16 autocast (median of 3 " in text
    assert (
        "rounds, 25,400 to 25,900), so the 64,000 steps of the book's whole CIFAR run (the end of He et al.'s "
        "schedule) would take 5.3 minutes, within the book's " in text
    )
    assert "goal of 10 minutes. Eager, it trained 20,000 images per second (6.8 minutes for the schedule)." in text
    assert text.endswith("The check's steps: 3 of its 4 steps passed, 1 was skipped (speed max-autotune).")
    # the older file is in the table, not the summary; a failed step is named
    table = gpu_figures.table_rows(rows)
    assert [(r["device"], r["mode"]) for r in table] == [
        ("NVIDIA H200", "torch.compile"),
        ("NVIDIA H100 80GB HBM3", "eager"),
        ("NVIDIA H100 80GB HBM3", "torch.compile"),
    ]
    assert table[2]["images/s (median)"] == 25_600.0 and table[2]["goal of 10 min"] == "met"
    only_older = [s for s in steps if s["file"] == "a-h200.json"]
    assert gpu_figures.summary(rows, only_older).endswith(
        "2 of its 4 steps passed, 1 failed (speed eager), 1 was skipped (speed max-autotune)."
    )


def test_the_summary_is_of_the_newest_whole_run_not_a_later_run_of_some_steps(tmp_path):
    _commit(tmp_path, "a-whole.json")

    def later_and_partial(d):
        d["started_utc"] = "2026-11-27T13:00:00+00:00"
        d["steps"] = [d["steps"][0], d["steps"][3]]  # --only "speed max-autotune": the device step and that one

    _commit(tmp_path, "b-again.json", later_and_partial)
    text = gpu_figures.summary(gpu_figures.measurement_rows(tmp_path), gpu_figures.measurement_steps(tmp_path))
    assert "file a-whole.json)" in text and text.endswith(
        "3 of its 4 steps passed, 1 was skipped (speed max-autotune)."
    )


def test_the_summary_does_not_call_a_smaller_network_the_papers(tmp_path):
    _commit(tmp_path, "small.json", lambda d: [st["figures"].update(model="small") for st in d["steps"][1:3]])
    text = gpu_figures.summary(gpu_figures.measurement_rows(tmp_path), gpu_figures.measurement_steps(tmp_path))
    assert "file small.json), a smaller network than the paper's (13,546,816 trainable parameters) trained" in text


def test_without_a_measurement_the_summary_says_no_gpu_has_run_the_check(tmp_path):
    none = gpu_figures.summary(gpu_figures.measurement_rows(tmp_path), gpu_figures.measurement_steps(tmp_path))
    assert none.startswith("No GPU has run the check yet: the folder book/data/gpu/ holds no measurement")
    assert gpu_figures.table_rows([]) == []


def test_the_status_page_shows_every_step_of_every_measurement_or_says_there_is_none(tmp_path):
    from resnet_theory.book.status import gpu_html

    assert gpu_html(tmp_path / "none yet") == (
        "<p><strong>GPU check.</strong> " + html.escape(gpu_figures.summary([], [])) + "</p>"
    )
    _commit(tmp_path, "h100.json", lambda d: d["steps"][0].update(text="<b>cuda:0</b> & more"))
    page = gpu_html(tmp_path)
    assert "On one NVIDIA H100 80GB HBM3" in page and page.count("<tr><td>h100.json</td>") == 4
    assert "<td>&lt;b&gt;cuda:0&lt;/b&gt; &amp; more</td>" in page and "<b>cuda:0</b>" not in page
    (tmp_path / "broken.json").write_text("{")
    page = gpu_html(tmp_path)
    assert page.startswith("<p><strong>GPU check.</strong> A committed measurement is refused: ")
    assert "broken.json: not valid JSON" in page


def broken(change):
    d = measurement()
    change(d)
    return json.dumps(d)


@pytest.mark.parametrize(
    "text, words",
    [
        ("{not json", "not valid JSON"),
        ("[]", "the top level must be an object"),
        (broken(lambda d: d.update(schema="other/1")), "schema must be 'resnet-theory-gpu-check/1', got 'other/1'"),
        (broken(lambda d: d["device"].update(type="cpu")), "device.type must be 'cuda' (a real GPU), got 'cpu'"),
        (broken(lambda d: d["device"].pop("name")), "device.name must be a non-empty string"),
        (broken(lambda d: d["versions"].update(cuda=None)), "versions.cuda must be a non-empty string"),
        (broken(lambda d: d.pop("versions")), "versions.python must be a non-empty string"),
        (broken(lambda d: d.update(complete="yes")), "complete must be true or false"),
        (broken(lambda d: d.update(steps=[])), "steps must be a non-empty list"),
        (broken(lambda d: d["steps"][0].update(status="OK")), "steps[0].status must be one of PASS, FAIL, SKIP"),
        (
            broken(lambda d: d["steps"][2]["figures"].pop("images_per_second")),
            "steps[2].figures.images_per_second must be a finite positive number",
        ),
        (
            broken(lambda d: d["steps"][2]["figures"].update(schedule_minutes=float("nan"))),
            "steps[2].figures.schedule_minutes must be a finite positive number",
        ),
        (
            broken(lambda d: d["steps"][1]["figures"]["spread"].update(min=0)),
            "steps[1].figures.spread.min must be a finite positive number",
        ),
        (
            broken(lambda d: d["steps"][1]["figures"].update(rounds_images_per_second=[])),
            "steps[1].figures.rounds_images_per_second must be a non-empty list of finite positive numbers",
        ),
        (
            broken(lambda d: d["steps"][1]["figures"].update(rounds_images_per_second=[float("inf")])),
            "steps[1].figures.rounds_images_per_second must be a non-empty list of finite positive numbers",
        ),
        (broken(lambda d: d["steps"][0].update(seconds=float("nan"))), "steps[0].seconds must be a finite number"),
        (broken(lambda d: d["steps"][2]["figures"].update(batch_size=10**400)), "batch_size must be a finite"),
        ("[" * 100_000, "not valid JSON (nested too deeply)"),
        # what a page shows is plain text: no math, no markup, from a file made on another machine
        (
            broken(lambda d: d["device"].update(name="H100 $\\href{x}{y}$")),
            "device.name must be plain text (letters, digits, spaces and .,:;()+-/=_@#), got 'H100 $\\\\href{x}{y}$'",
        ),
        (broken(lambda d: d["versions"].update(torch="<script>")), "versions.torch must be plain text"),
        (
            broken(lambda d: d["steps"][3].update(name="<script>x</script> $\\unicode{x}$")),
            "steps[3].name must be plain text",  # a failed or skipped step is named in the chapter's prose
        ),
        (broken(lambda d: d.update(started_utc="2026`")), ": started_utc must be plain text"),
        (broken(lambda d: d["steps"][2]["figures"].update(precision="bf16 &amp;")), "precision must be plain text"),
        (
            broken(lambda d: d["steps"][2]["figures"].update(mode="warp")),
            "steps[2].figures.mode must be one of eager, default, reduce-overhead, max-autotune, got 'warp'",
        ),
    ],
)
def test_a_malformed_measurement_is_refused_naming_the_file(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text)
    for read in (gpu_figures.measurement_rows, gpu_figures.measurement_steps):
        with pytest.raises(gpu_figures.MeasurementError) as info:
            read(tmp_path)
        message = str(info.value)
        assert message.startswith(f"{path}: ") and words in message and "\n" not in message


def test_add_validates_and_copies_a_run_unchanged_and_never_over_another(tmp_path, capsys):
    run = tmp_path / "gpu-out" / "gpu-check.json"
    run.parent.mkdir()
    run.write_text(json.dumps(measurement(), indent=1))
    book = tmp_path / "book" / "data" / "gpu"
    assert gpu_figures.main(["add", str(run), "--to", str(book)]) == 0
    target = book / "nvidia-h100-80gb-hbm3-2026-11-27-1200.json"
    assert target.read_bytes() == run.read_bytes() and sorted(p.name for p in book.iterdir()) == [target.name]
    assert capsys.readouterr().out == f"{target}: NVIDIA H100 80GB HBM3, 3 of 4 steps passed\n"
    assert gpu_figures.main(["add", str(run), "--to", str(book)]) == 0  # the same bytes: nothing to do
    # another run that day gets its own file; a different file of the same run's name is refused, the one there kept
    other = tmp_path / "other.json"
    other.write_text(broken(lambda d: d.update(started_utc="2026-11-27T14:05:09+00:00")))
    assert gpu_figures.main(["add", str(other), "--to", str(book)]) == 0
    assert (book / "nvidia-h100-80gb-hbm3-2026-11-27-1405.json").read_bytes() == other.read_bytes()
    capsys.readouterr()
    other.write_text(broken(lambda d: d["steps"][1].update(status="FAIL")))
    assert gpu_figures.main(["add", str(other), "--to", str(book)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {target}: a different measurement is already there; nothing was written\n"
    assert target.read_bytes() == run.read_bytes() and len(list(book.iterdir())) == 2
    # a rehearsal (device cpu) or a malformed file: refused in one line, nothing written
    for bad, words in ((broken(lambda d: d["device"].update(type="cpu")), "device.type must be 'cuda'"), ("{", "JSON")):
        other.write_text(bad)
        assert gpu_figures.main(["add", str(other), "--to", str(tmp_path / "fresh")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {other}: ") and words in err and err.count("\n") == 1
        assert not (tmp_path / "fresh").exists()


def test_add_names_a_file_by_ascii_letters_only_and_writes_into_no_source_folder(tmp_path, capsys, monkeypatch):
    """Found by a misuse audit: a device name in full-width letters made the hidden-looking name
    ``-2026-11-27-1200.json``; ``--to`` took a folder of the sources (``lib/``)."""
    run = tmp_path / "run.json"
    run.write_text(broken(lambda d: d["device"].update(name="ＮＶＩＤＩＡ")))
    assert gpu_figures.add(run, tmp_path / "gpu").name == "gpu-2026-11-27-1200.json"
    monkeypatch.chdir(ROOT)
    assert gpu_figures.main(["add", str(run), "--to", "lib/resnet_theory/data"]) == 2
    assert "--to lib/resnet_theory/data: inside the book's sources" in capsys.readouterr().err
    assert not list((ROOT / "lib" / "resnet_theory" / "data").glob("gpu-*.json"))


def test_a_folder_that_is_a_file_is_refused(tmp_path):
    path = tmp_path / "gpu"
    path.write_text("")
    with pytest.raises(gpu_figures.MeasurementError, match="not a folder"):
        gpu_figures.measurement_rows(path)
    with pytest.raises(gpu_figures.MeasurementError, match="not a folder"):
        gpu_figures.measurement_steps(path)
