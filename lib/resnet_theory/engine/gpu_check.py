"""Check a CUDA machine in one command: ``python -m resnet_theory.engine.gpu_check`` (``make gpu-check``).

Meant as the first thing to run on a GPU machine, sized to take under five minutes on one GPU (not yet timed on
one: no GPU has run it so far). Each step prints one line,
``gpu-check: PASS|FAIL|SKIP <step>: <figures>``, and the command ends with a summary line; the exit status is
0 when every step passed, 1 when one failed, and 2, after one line saying so, on a machine without CUDA (nothing
is checked there). The steps:

1. ``device``: the GPU (name, compute capability, memory), torch and its CUDA version, and the decisions of
   :mod:`resnet_theory.engine.devices` for it (device index, precision, channels_last, fused SGD, DDP backend);
2. ``train eager``: the full CIFAR network (the paper's, 13.6M trainable parameters) trained for a few dozen
   steps by ``python -m resnet_theory.engine.train``, in the engine's default precision, on synthetic CIFAR-shaped
   data written as the official binary files (colour and texture depend on the class, so the loss must go
   down), at learning rate 0.01 (the paper's 0.05 made the loss NaN within 30 steps on these data, in a CPU
   run of the full network at batch 32); passes if the run ends normally with finite losses that fall;
3. ``train compiled``: the same with ``--compile``; passes if it trains too and every logged mean loss is
   within 5% of the eager run's (the same steps computed by other kernels: they differ by rounding only; on the
   CPU a float32 and a bf16 run of the small network differed by under 1e-4 in loss after 12 steps);
4. ``kill and resume``: two runs with ``--deterministic``, one killed with SIGKILL after its first checkpoint
   and resumed; passes if the final weights and momentum buffers are bitwise the same;
5. ``torchrun``: one process under ``torchrun --standalone --nproc_per_node=1`` (DistributedDataParallel with
   the backend of :func:`resnet_theory.engine.devices.ddp_backend`, NCCL on a Linux GPU machine);
6. ``bench``: :mod:`resnet_theory.engine.bench` with the pipelines interleaved over rounds: images/s, TFLOP/s, the
   projected time of the paper's 64,000-step schedule against the book's goal of 10 minutes, the ranking;
7. ``expressivity``: the interpolating network of Hardt & Ma's Theorem 3.2 built and verified with the torch
   backend on the GPU at n = 100,000 random points (float64), and the separation at n = 20,000 compared with
   the NumPy backend on the CPU.

``--json PATH`` writes every step's figures with the device's description (the files under ``book/data/gpu/``
come from it). The sizes are those of :data:`GPU_SIZES`; the tests run the same steps on a CPU with
:data:`CPU_SIZES` (a small network, no compilation), so that the code of this check has run before its first
GPU run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from resnet_theory.engine import data as _data
from resnet_theory.engine import devices

#: The book's goal for the paper's whole CIFAR schedule (64,000 steps of 128 images) on one H100/H200.
GOAL_MINUTES = 10.0


@dataclass(frozen=True)
class Sizes:
    """How much each step does. :data:`GPU_SIZES` is the check; :data:`CPU_SIZES` its rehearsal in the tests."""

    device: str = "cuda"
    steps: int = 40  # training steps of the eager and compiled runs
    batch_size: int = 128
    lr: float = 0.01  # the paper's 0.05 diverged within 30 steps on these data (CPU rehearsal)
    log_every: int = 10
    train_images: int = 2560  # synthetic CIFAR-shaped images, written as the five training batches
    test_images: int = 1000
    model: tuple = ()  # TrainConfig overrides of the network (none: the paper's CIFAR network)
    compile: bool = True
    resume_steps: int = 120  # the kill-and-resume runs (long enough to be killed mid-run)
    checkpoint_every: int = 20
    torchrun_steps: int = 20
    bench: tuple = (("steps", 20), ("rounds", 3))
    expressivity_n: int = 100_000
    separation_n: int = 20_000
    dim: int = 256
    timeout: float = 240.0  # seconds for each training process


GPU_SIZES = Sizes()
CPU_SIZES = Sizes(
    device="cpu",
    steps=30,
    batch_size=32,
    log_every=10,
    train_images=640,
    test_images=200,
    model=(("stem_channels", 4), ("widths", (4, 8)), ("blocks_per_stage", 1)),
    compile=False,
    resume_steps=200,
    checkpoint_every=20,
    torchrun_steps=10,
    bench=(
        ("steps", 2),
        ("rounds", 3),
        ("model", "small"),
        ("data", "cifar"),
        ("images", 64),
        ("batch_size", 16),
        ("ceiling_size", 128),
        ("threads", 1),
    ),
    expressivity_n=400,
    separation_n=300,
    dim=32,
    timeout=120.0,
)


@dataclass
class Step:
    name: str
    status: str  # "PASS", "FAIL" or "SKIP"
    text: str  # the figures, or what failed
    figures: dict = field(default_factory=dict)
    seconds: float = 0.0

    def line(self) -> str:
        return f"gpu-check: {self.status} {self.name}: {self.text} ({self.seconds:.1f} s)"


# --- synthetic CIFAR-shaped data ------------------------------------------------------------------------------
def synthetic_cifar(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 images (3x32x32) and labels in 0..9 that a network can learn quickly: each class has its own
    mean colour and a faint class pattern, under per-pixel noise."""
    rng = np.random.default_rng(seed)
    classes = np.random.default_rng(12345)  # the same classes in the training and test files
    colours = classes.uniform(60, 196, (10, 3, 1, 1))
    patterns = classes.normal(0, 25, (10, 3, 32, 32))
    labels = rng.integers(0, 10, n)
    images = colours[labels] + patterns[labels] + rng.normal(0, 30, (n, 3, 32, 32))
    return np.clip(np.rint(images), 0, 255).astype(np.uint8), labels.astype(np.int64)


def write_synthetic_cifar10(root: Path, train_images: int, test_images: int) -> Path:
    """The extracted CIFAR-10 binary folder (``cifar-10-batches-bin/``: five training batches and the test
    batch; each record a label byte and 3,072 pixel bytes) under ``root``, filled with :func:`synthetic_cifar`."""
    folder = Path(root) / "cifar-10-batches-bin"
    folder.mkdir(parents=True, exist_ok=True)

    def write(name: str, images: np.ndarray, labels: np.ndarray) -> None:
        records = np.concatenate([labels.astype(np.uint8)[:, None], images.reshape(len(images), -1)], axis=1)
        (folder / name).write_bytes(records.tobytes())

    images, labels = synthetic_cifar(train_images, seed=1)
    for i, part in enumerate(np.array_split(np.arange(train_images), 5), start=1):
        write(f"data_batch_{i}.bin", images[part], labels[part])
    write("test_batch.bin", *synthetic_cifar(test_images, seed=2))
    _data.record_checksums(folder, "cifar10")  # written here, so recorded here: load_cifar checks them
    return Path(root)


# --- helpers ------------------------------------------------------------------------------------------------
def _train_args(sizes: Sizes, data_dir: Path, out_dir: Path, steps: int, *extra: str) -> list[str]:
    args = [
        "--dataset",
        "cifar10",
        "--data-dir",
        str(data_dir),
        "--out-dir",
        str(out_dir),
        "--steps",
        str(steps),
        "--batch-size",
        str(sizes.batch_size),
        "--lr",
        str(sizes.lr),
        "--eval-every",
        "0",
        "--log-every",
        str(sizes.log_every),
        "--checkpoint-every",
        "0",
        "--device",
        sizes.device,
        "--no-progress",
    ]
    for key, value in sizes.model:
        args += ["--" + key.replace("_", "-"), ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    return args + list(extra)


def _env(sizes: Sizes) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", devices.CUBLAS_DETERMINISTIC)  # before cuBLAS starts (--deterministic)
    if sizes.device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")  # CPU rehearsal: one thread per process on a small machine
    return env


def _run(sizes: Sizes, command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, env=_env(sizes), capture_output=True, text=True, timeout=sizes.timeout)


def _tail(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in (proc.stderr or proc.stdout or "").strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else f"exit status {proc.returncode}, no output"


def _records(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


def _trained(sizes: Sizes, command: list[str], out: Path, what: str) -> tuple[list[dict], list[float]] | str:
    """Run a training command writing its metrics to ``out``: the metrics records and the logged training
    losses, or, when the command fails, the failure in one line (``WHAT exited N: its last line``)."""
    proc = _run(sizes, command)
    if proc.returncode != 0:
        return f"{what} exited {proc.returncode}: {_tail(proc)}"
    records = _records(out)
    return records, [r["loss"] for r in records if r["kind"] == "train"]


def _checkpoint(path: Path) -> dict:
    from resnet_theory.engine import train

    return train.read_checkpoint(path)


# --- the steps --------------------------------------------------------------------------------------------------
def check_device(sizes: Sizes) -> Step:
    count = devices.cuda_device_count()
    device = devices.resolve_device(
        sizes.device, cuda_devices=count, current=torch.cuda.current_device() if count else 0
    )
    facts = devices.describe(device)
    precision = devices.choose_precision("auto", facts)
    memory = f", {facts.memory_bytes / 2**30:.0f} GiB" if facts.memory_bytes else ""
    capability = f", compute capability {facts.capability[0]}.{facts.capability[1]}" if facts.capability else ""
    figures = {
        "device": str(device),
        "name": facts.name,
        "capability": facts.capability,
        "memory_bytes": facts.memory_bytes,
        "visible_gpus": count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "precision": precision.name,
        "channels_last": devices.use_channels_last(facts, precision),
        "fused_sgd": devices.fused_sgd(facts),
        "ddp_backend": devices.ddp_backend(facts),
    }
    text = (
        f"{device} {facts.name}{capability}{memory}; torch {torch.__version__}, CUDA {torch.version.cuda}; "
        f"precision {precision.description} ({precision.reason}); channels_last "
        f"{'on' if figures['channels_last'] else 'off'}; fused SGD {'on' if figures['fused_sgd'] else 'off'}; "
        f"DDP backend {figures['ddp_backend']}"
    )
    ok = device.type == torch.device(sizes.device).type and (device.type == "cpu" or device.index is not None)
    return Step("device", "PASS" if ok else "FAIL", text, figures)


def check_training(sizes: Sizes, data_dir: Path, work: Path, compiled: bool, eager: Step | None = None) -> Step:
    name = "train compiled" if compiled else "train eager"
    if compiled and not sizes.compile:
        return Step(name, "SKIP", "torch.compile is not part of this rehearsal")
    out = work / ("compiled" if compiled else "eager")
    command = [
        sys.executable,
        "-m",
        "resnet_theory.engine.train",
        *_train_args(sizes, data_dir, out, sizes.steps, *(["--compile"] if compiled else [])),
    ]
    trained = _trained(sizes, command, out, "python -m resnet_theory.engine.train")
    if isinstance(trained, str):
        return Step(name, "FAIL", trained)
    records, losses = trained
    start = records[0]
    rates = [r["images_per_s"] for r in records if r["kind"] == "train"]
    end = next(r for r in records if r["kind"] == "end")
    figures = {
        "steps": sizes.steps,
        "precision": start["precision"],
        "device": start["device"],
        "losses": losses,
        "images_per_second_last_interval": rates[-1],
        "seconds": end["seconds"],
        "trainable_parameters": start["trainable_parameters"],
    }
    text = (
        f"{start['trainable_parameters']:,} trainable parameters, {sizes.steps} steps of {sizes.batch_size} "
        f"in {start['precision']} on {start['device']}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
        f"{rates[-1]:,.0f} images/s over the last {sizes.log_every} steps, {end['seconds']:.1f} s in all"
    )
    problems = []
    if not all(math.isfinite(x) for x in losses):
        problems.append("a loss is not finite")
    elif not losses[-1] < losses[0]:
        problems.append(f"the loss did not fall ({losses[0]:.4f} -> {losses[-1]:.4f})")
    if compiled and eager is not None and eager.status == "PASS":
        reference = eager.figures["losses"]
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
        figures["largest_relative_loss_difference"] = worst
        text += (
            f"; mean losses within {100 * worst:.2f}% of the eager run's at every logged step (last "
            f"{losses[-1]:.4f} vs {reference[-1]:.4f})"
        )
        speedup = rates[-1] / eager.figures["images_per_second_last_interval"]
        figures["speedup_over_eager"] = speedup
        text += f"; {speedup:.2f}x the eager images/s"
        if not worst <= 0.05:
            problems.append("a mean loss differs from the eager run's by more than 5%")
    return Step(name, "FAIL" if problems else "PASS", text + ("; " + "; ".join(problems) if problems else ""), figures)


def check_kill_and_resume(sizes: Sizes, data_dir: Path, work: Path) -> Step:
    name = "kill and resume"
    steps = sizes.resume_steps
    extra = ("--deterministic", "--checkpoint-every", str(sizes.checkpoint_every))
    whole_dir, killed_dir = work / "whole", work / "killed"
    base = [sys.executable, "-m", "resnet_theory.engine.train"]
    logs = {"whole": work / "whole.log", "victim": work / "killed.log"}  # files, not pipes: nothing can block
    with open(logs["whole"], "w") as whole_log, open(logs["victim"], "w") as victim_log:
        whole = subprocess.Popen(
            base + _train_args(sizes, data_dir, whole_dir, steps, *extra),
            env=_env(sizes),
            stdout=whole_log,
            stderr=subprocess.STDOUT,
        )
        victim = subprocess.Popen(
            base + _train_args(sizes, data_dir, killed_dir, steps, *extra),
            env=_env(sizes),
            stdout=victim_log,
            stderr=subprocess.STDOUT,
        )
        checkpoint = killed_dir / "checkpoint.pt"
        deadline = time.monotonic() + sizes.timeout
        while not checkpoint.exists() and victim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        alive = victim.poll() is None
        if alive:
            os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=60)
        try:
            whole.wait(timeout=sizes.timeout)
        finally:
            if whole.poll() is None:
                whole.kill()
                whole.wait()

    def last_line(path: Path) -> str:
        lines = [line for line in path.read_text().splitlines() if line.strip()]
        return lines[-1][:300] if lines else "no output"

    if not alive:
        return Step(
            name,
            "FAIL",
            f"the run to be killed ended first (status {victim.returncode}: "
            f"{last_line(logs['victim'])}); raise Sizes.resume_steps",
        )
    if not checkpoint.exists():
        return Step(name, "FAIL", f"the run to be killed wrote no checkpoint in {sizes.timeout:.0f} s")
    if whole.returncode != 0:
        return Step(name, "FAIL", f"the uninterrupted run exited {whole.returncode}: {last_line(logs['whole'])}")
    killed_at = _checkpoint(checkpoint)["step"]
    resumed = _run(sizes, base + _train_args(sizes, data_dir, killed_dir, steps, *extra, "--resume"))
    if resumed.returncode != 0:
        return Step(name, "FAIL", f"the resumed run exited {resumed.returncode}: {_tail(resumed)}")
    a, b = _checkpoint(whole_dir / "checkpoint.pt"), _checkpoint(checkpoint)
    differ = [k for k in a["model"] if not torch.equal(a["model"][k], b["model"][k])]
    momentum = [
        k
        for k in a["optimizer"]["state"]
        if not torch.equal(a["optimizer"]["state"][k]["momentum_buffer"], b["optimizer"]["state"][k]["momentum_buffer"])
    ]
    worst = max((float((a["model"][k].double() - b["model"][k].double()).abs().max()) for k in a["model"]), default=0.0)
    figures = {
        "steps": steps,
        "killed_after_checkpoint_of_step": killed_at,
        "tensors_differing": len(differ),
        "momentum_buffers_differing": len(momentum),
        "max_abs_weight_difference": worst,
        "precision": _records(whole_dir)[0]["precision"],
    }
    text = (
        f"{steps} steps with --deterministic in {figures['precision']}, one run killed (SIGKILL) after its "
        f"checkpoint of step {killed_at} and resumed: "
    )
    if a["step"] == b["step"] == steps and not differ and not momentum:
        return Step(
            name,
            "PASS",
            text + f"all {len(a['model'])} weight tensors and the momentum buffers bitwise "
            "equal to the uninterrupted run's",
            figures,
        )
    return Step(
        name,
        "FAIL",
        text + f"{len(differ)} weight tensors and {len(momentum)} momentum buffers differ "
        f"(largest weight difference {worst:.3g}; steps {a['step']}, {b['step']})",
        figures,
    )


def check_torchrun(sizes: Sizes, data_dir: Path, work: Path) -> Step:
    name = "torchrun"
    out = work / "torchrun"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=1",
        "-m",
        "resnet_theory.engine.train",
        *_train_args(sizes, data_dir, out, sizes.torchrun_steps),
    ]
    trained = _trained(sizes, command, out, "torchrun")
    if isinstance(trained, str):
        return Step(name, "FAIL", trained)
    records, losses = trained
    start = records[0]
    count = devices.cuda_device_count()
    device = devices.resolve_device(sizes.device, cuda_devices=count)
    expected = devices.ddp_backend(devices.describe(device))
    figures = {
        "world_size": start["world_size"],
        "backend": start["distributed"],
        "device": start["device"],
        "losses": losses,
    }
    text = (
        f"1 process, DistributedDataParallel over {start['distributed']} on {start['device']}, "
        f"{sizes.torchrun_steps} steps, last loss {losses[-1]:.3f}"
    )
    ok = start["distributed"] == expected and start["world_size"] == 1 and all(map(math.isfinite, losses))
    return Step(name, "PASS" if ok else "FAIL", text + ("" if ok else f" (expected backend {expected})"), figures)


def check_bench(sizes: Sizes) -> Step:
    from resnet_theory.engine import bench

    result = bench.run_benchmark(device=sizes.device, **dict(sizes.bench))
    device, loader = result.pipelines["device"], result.pipelines["dataloader"]
    minutes = device["schedule_minutes"]
    figures = asdict(result)
    text = (
        f"{result.model} network, {result.precision}, {result.rounds} rounds of {result.steps} steps: device "
        f"pipeline {device['images_per_second']:,.0f} images/s (spread {100 * device['spread']['relative']:.0f}%), "
        f"{device['tflops']:.3g} TFLOP/s = {100 * device['fraction_of_ceiling']:.0f}% of a "
        f"{result.ceiling_tflops:.3g} TFLOP/s matmul; DataLoader {loader['images_per_second']:,.0f} images/s; "
        f"{result.ranking['text']}; the paper's 64,000 steps would take {minutes:.1f} min "
        f"(goal {GOAL_MINUTES:g} min{', met' if minutes <= GOAL_MINUTES else ', not met'})"
    )
    ok = all(
        math.isfinite(p["images_per_second"]) and p["images_per_second"] > 0 and math.isfinite(p["last_loss"])
        for p in result.pipelines.values()
    )
    return Step("bench", "PASS" if ok else "FAIL", text, figures)


def check_expressivity(sizes: Sizes) -> Step:
    from resnet_theory import expressivity as ex
    from resnet_theory.benchmarks.expressivity import time_builds

    count = devices.cuda_device_count()
    device = str(devices.resolve_device(sizes.device, cuda_devices=count))
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
    row = time_builds([sizes.expressivity_n], dim=sizes.dim, backend="torch", device=device)[0]
    peak = torch.cuda.max_memory_allocated(device) if device.startswith("cuda") else None
    rng = np.random.default_rng(7)
    X = rng.standard_normal((sizes.separation_n, sizes.dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    start = time.perf_counter()
    rho_torch = ex.separation(X, backend="torch", device=device)
    t_torch = time.perf_counter() - start
    start = time.perf_counter()
    rho_numpy = ex.separation(X)
    t_numpy = time.perf_counter() - start
    agree = abs(rho_torch - rho_numpy) <= 1e-12 * rho_numpy
    figures = {
        **row,
        "peak_device_bytes": peak,
        "separation_n": sizes.separation_n,
        "separation_torch": rho_torch,
        "separation_numpy": rho_numpy,
        "separation_torch_seconds": t_torch,
        "separation_numpy_seconds": t_numpy,
    }
    fits = row["max_fit_error"] <= ex.FIT_TOLERANCE
    text = (
        f"n = {row['n']:,} points in R^{sizes.dim} on {device}: rho {row['rho']:.4f}, width k {row['k']}, depth "
        f"{row['depth']:,}, {row['parameters']:,} weights, built and verified in {row['seconds']:.1f} s "
        f"(max |f - one-hot| {row['max_fit_error']:.1e})"
        + (f", peak GPU memory {peak / 2**30:.2f} GiB" if peak is not None else "")
        + f"; separation at n = {sizes.separation_n:,}: {rho_torch:.12g} in {t_torch:.2f} s vs NumPy "
        f"{rho_numpy:.12g} in {t_numpy:.2f} s"
    )
    problems = ([] if fits else ["the network does not fit"]) + (
        [] if agree else ["the separations differ by more than 1e-12"]
    )
    return Step("expressivity", "FAIL" if problems else "PASS", text + "".join("; " + p for p in problems), figures)


def run_checks(sizes: Sizes = GPU_SIZES, report=print, work_dir: str | os.PathLike | None = None) -> list[Step]:
    """Run every step (a failing step does not stop the others); ``report`` gets each step's line."""
    steps: list[Step] = []
    own = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="gpu-check-") if own else work_dir)
    try:
        data_dir = write_synthetic_cifar10(work / "data", sizes.train_images, sizes.test_images)

        def run(name, function, *args):
            start = time.perf_counter()
            try:
                step = function(*args)
            except subprocess.TimeoutExpired as exc:
                step = Step(name, "FAIL", f"did not finish within {exc.timeout:.0f} s")
            except Exception as exc:  # one failing step must not hide the others
                first = (str(exc).strip().splitlines() or [""])[0][:300]
                step = Step(name, "FAIL", f"{type(exc).__name__}: {first}")
            step.seconds = time.perf_counter() - start
            steps.append(step)
            report(step.line())
            return step

        run("device", check_device, sizes)
        eager = run("train eager", check_training, sizes, data_dir, work, False)
        run("train compiled", check_training, sizes, data_dir, work, True, eager)
        run("kill and resume", check_kill_and_resume, sizes, data_dir, work)
        run("torchrun", check_torchrun, sizes, data_dir, work)
        run("bench", check_bench, sizes)
        run("expressivity", check_expressivity, sizes)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return steps


def no_cuda_reason() -> str | None:
    """Why this machine cannot be checked (one line), or None when it has a CUDA GPU."""
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA GPU"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m resnet_theory.engine.gpu_check", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--json", help="write every step's figures and the device's description here")
    parser.add_argument("--keep", help="keep the synthetic data, runs and checkpoints in this folder")
    args = parser.parse_args(argv)
    reason = no_cuda_reason()
    if reason is not None:
        print(f"gpu-check: no CUDA GPU on this machine ({reason}); nothing was checked", flush=True)
        return 2
    started = time.perf_counter()
    print(f"gpu-check: {len(STEP_NAMES)} steps, sizes {asdict(GPU_SIZES)}", flush=True)
    steps = run_checks(GPU_SIZES, report=lambda line: print(line, flush=True), work_dir=args.keep)
    seconds = time.perf_counter() - started
    failed = [s.name for s in steps if s.status == "FAIL"]
    passed = sum(s.status == "PASS" for s in steps)
    print(
        f"gpu-check: {passed} of {len(steps)} steps passed in {seconds:.0f} s"
        + (f"; failed: {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {"seconds": seconds, "sizes": asdict(GPU_SIZES), "steps": [asdict(s) for s in steps]},
                indent=1,
                default=str,
            )
        )
    return 1 if failed else 0


STEP_NAMES = ("device", "train eager", "train compiled", "kill and resume", "torchrun", "bench", "expressivity")

if __name__ == "__main__":
    sys.exit(main())
