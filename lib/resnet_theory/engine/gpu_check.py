"""Check a CUDA machine in one command, where nothing can be installed:
``PYTHONPATH=lib python3 -m resnet_theory.engine.gpu_check OUTDIR`` (``make gpu-check PY=python3 GPU_OUT=OUTDIR``).

Meant as the first thing to run on a lent GPU machine (Python, torch, numpy, scipy and tqdm are all it imports),
sized to take under seven minutes on one H100, compilations included (not yet timed on one: no GPU has run it so
far): the steps share a time budget (``--budget``, 400 s), a step is not started when less than a minute of it is
left (two for a step that compiles), a step the end of the budget cuts short is SKIP (not given the time; a
subprocess that outruns its own limit with budget to spare is a FAIL: it hung), and no subprocess outlives it.
Each step prints one line, ``gpu-check: PASS|FAIL|SKIP <step>: <figures> (<seconds> s)``, and the command ends
with a summary line; the exit status is 0 when no step failed, 1 when one did, and 2, after one line saying so, on
a machine without CUDA (nothing is checked there; ``--cpu-rehearsal`` runs the steps on the CPU at the small sizes
of :data:`CPU_SIZES` instead, without the four that compile; with ``--compile`` as well, those four too, which
takes a minute or two more of compiling).

``OUTDIR/gpu-check.json`` is rewritten (atomically: a temporary file, then ``os.replace``) before the first step
and after every step, so a run stopped by a time limit, SIGTERM or SIGKILL leaves every finished step's figures
and the name of the step it was in; ``OUTDIR/logs/`` holds the last lines of every subprocess's output and the
metrics of every training run (a few kB each; checkpoints and data stay in a temporary folder, or ``--keep``).
The file records the device (name, compute capability, memory), the versions (Python, torch, CUDA, cuDNN, NumPy,
SciPy, Triton, the NVIDIA driver), the sizes, the plan and every step's figures;
:mod:`resnet_theory.engine.gpu_figures` reads such files back for the book.

The steps (:data:`STEP_NAMES`), in this order, the quick ones first, so that a run cut short keeps the most:

- ``device``: the GPU and the decisions of :mod:`resnet_theory.engine.devices` for it (precision, channels_last,
  fused SGD, cuDNN autotuning, DDP backend);
- ``train eager``: the paper's full CIFAR network (13.5M trainable parameters) trained for a few dozen steps by
  ``python -m resnet_theory.engine.train`` in the engine's default precision (bf16 autocast on an H100) on
  synthetic CIFAR-shaped data written as the official binary files (colour and texture depend on the class, so
  the loss must go down), at learning rate 0.01; passes if the losses are finite and fall and the final
  checkpoint shows the layout and optimiser the engine decided on (channels_last weights, fused SGD);
- ``speed eager``: :mod:`resnet_theory.engine.bench` on the device pipeline, the full network at batch 128 on
  synthetic CIFAR-shaped data in bf16 with cuDNN autotuning: images/s as the median of several rounds with its
  range, the projected time of the book's 64,000-step CIFAR schedule (the end of He et al.'s; the paper prints
  its rate drops at 30,000 and 50,000, not the run's end) against the goal of 10 minutes;
- ``kill and resume``: two runs with ``--deterministic`` (deterministic cuDNN, in bf16), one killed with SIGKILL
  after its first checkpoint and resumed; passes if the final weights and momentum buffers are bitwise the same
  (the count of torch's warnings that an operation has no deterministic kernel is recorded: the likely cause of a
  difference);
- ``torchrun``: one process under ``torchrun --standalone --nproc_per_node=1 --local-addr=127.0.0.1``:
  DistributedDataParallel over NCCL (``NCCL_DEBUG=WARN``, so that its log says why if it fails);
- ``dataloader workers``: a ``DataLoader`` with worker processes (shared memory in ``/dev/shm``, pinned memory)
  feeding CIFAR-shaped batches to the GPU; reports the size of ``/dev/shm`` and the sharing strategy;
- ``train fp16``, ``train float32``: the other precisions of the engine (fp16 with its gradient scaler);
- ``paper learning rate``: the paper's 0.05 instead of 0.01 (0.05 made the loss NaN within 30 steps on these data
  in a CPU run at batch 32); passes if its losses are finite and fall at batch 128;
- ``expressivity``: Hardt & Ma's Theorem 3.2 network built and verified with the torch backend on the GPU at
  n = 100,000 (float64), and the separation at n = 20,000 compared with NumPy's;
- ``speed compiled``, ``speed cuda graphs``: ``speed eager`` with ``torch.compile`` and with
  ``torch.compile(mode="reduce-overhead")`` (CUDA graphs), each with its compile time and speed-up over eager
  (the speed figures first: they are what the book reports);
- ``train compiled``: ``train eager`` with ``--compile``; passes if every logged mean loss is within 5% of the
  eager run's and nothing is compiled twice (``TORCH_LOGS=recompiles`` prints no recompilation: the evaluation
  uses the eager module);
- ``speed max-autotune``: ``torch.compile(mode="max-autotune")``, which tunes kernels for minutes; it gets what is
  left of the budget and is SKIP, with the command that measures it alone, when that is not enough.

The steps that compile are SKIP at once, saying why, where Inductor cannot build (no Triton on a GPU, no C
compiler; :func:`compile_toolchain`, which the device step records). ``--only NAME,NAME`` runs some of the steps
(the device step always runs first).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from resnet_theory.engine import data as _data
from resnet_theory.engine import devices
from resnet_theory.engine.gpu_figures import GOAL_MINUTES, SCHEMA
from resnet_theory.outputs import check_command_output

#: The steps in the order they run: the quick ones first, then those that compile (minutes each, cold).
STEP_NAMES = (
    "device",
    "train eager",
    "speed eager",
    "kill and resume",
    "torchrun",
    "dataloader workers",
    "train fp16",
    "train float32",
    "paper learning rate",
    "expressivity",
    "speed compiled",
    "speed cuda graphs",
    "train compiled",
    "speed max-autotune",
)
#: The steps that compile (minutes each, cold): they need :attr:`Sizes.least_for_a_compile` of the budget to start.
COMPILING = ("speed compiled", "speed cuda graphs", "train compiled", "speed max-autotune")
#: torch.compile mode of each speed step ("eager": not compiled).
SPEED_MODES = {
    "speed eager": "eager",
    "speed compiled": "default",
    "speed cuda graphs": "reduce-overhead",
    "speed max-autotune": "max-autotune",
}
RESULT_NAME = "gpu-check.json"
LOG_LINES = 60  # last lines of a subprocess's output kept in OUTDIR/logs


@dataclass(frozen=True)
class Sizes:
    """How much each step does. :data:`GPU_SIZES` is the check; :data:`CPU_SIZES` its rehearsal on the CPU."""

    device: str = "cuda"
    steps: int = 40  # training steps of the training runs
    batch_size: int = 128
    lr: float = 0.01  # the paper's 0.05 diverged within 30 steps on these data (CPU rehearsal, batch 32)
    paper_lr: float = 0.05
    log_every: int = 10
    train_images: int = 2560  # synthetic CIFAR-shaped images, written as the five training batches
    test_images: int = 1000
    model: tuple = ()  # TrainConfig overrides of the network (none: the paper's CIFAR network)
    compile: bool = True
    resume_steps: int = 120  # the kill-and-resume runs (long enough to be killed mid-run)
    checkpoint_every: int = 20
    torchrun_steps: int = 20
    speed: tuple = (("steps", 100), ("rounds", 5))  # bench options of the speed steps
    loader_batches: int = 200
    loader_workers: int = 8  # at most the machine's cores
    expressivity_n: int = 100_000
    separation_n: int = 20_000
    dim: int = 256
    timeout: float = 240.0  # seconds for each subprocess (less when the budget has less left)
    budget: float = 400.0  # seconds for all the steps
    least_for_a_step: float = 60.0  # a step is not started with less of the budget left
    least_for_a_compile: float = 120.0  # nor a step that compiles with less than this


GPU_SIZES = Sizes()
CPU_SIZES = Sizes(
    device="cpu",
    steps=10,  # two logged losses: enough to see the loss fall (fp16 autocast on a CPU: about 0.4 s a step)
    batch_size=32,
    log_every=5,
    train_images=640,
    test_images=200,
    model=(("stem_channels", 4), ("widths", (4, 8)), ("blocks_per_stage", 1)),
    compile=False,
    resume_steps=60,  # killed after its checkpoint of step 10, with 50 steps (seconds) left to run
    checkpoint_every=10,
    torchrun_steps=10,
    speed=(
        ("steps", 2),
        ("rounds", 3),
        ("model", "small"),
        ("data", "cifar"),
        ("images", 64),
        ("batch-size", 16),
        ("ceiling-size", 128),
        ("threads", 1),
    ),
    loader_batches=10,
    loader_workers=2,
    expressivity_n=400,
    separation_n=300,
    dim=32,
    timeout=180.0,
    budget=1200.0,
    least_for_a_step=5.0,
    least_for_a_compile=5.0,
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


class Interrupted(BaseException):
    """SIGTERM (a time limit) arrived during a step: not a failure of the step, the end of the run."""


@dataclass
class Context:
    """What the steps share: the sizes, the work folder (data, runs, logs), the deadline and the steps done."""

    sizes: Sizes
    work: Path
    deadline: float  # time.monotonic() by which every step must have ended
    data_dir: Path | None = None
    done: dict = field(default_factory=dict)  # name -> Step

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def timeout(self) -> float:
        """A subprocess's time limit: the sizes' limit, or what is left of the budget when that is less."""
        return max(1.0, min(self.sizes.timeout, self.left()))


class OutOfTime(Exception):
    """A subprocess did not end within its limit (killed with its process group)."""

    def __init__(self, what: str, seconds: float, budget: bool):
        why = " (what was left of the budget)" if budget else ""
        super().__init__(f"{what} did not finish within {seconds:.0f} s{why}")
        self.seconds, self.budget = seconds, budget


# --- subprocesses -------------------------------------------------------------------------------------------------
def _env(sizes: Sizes, **extra: str) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **extra}
    if sizes.device == "cpu":
        env.setdefault("OMP_NUM_THREADS", "1")  # CPU rehearsal: one thread per process on a small machine
    return env


#: SIGTERM while a subprocess is being started is held until it has started (and is then stopped with it).
_SIGNALS = {"starting": False, "pending": None}


def _start(ctx: Context, command: list[str], log: Path, **env: str) -> subprocess.Popen:
    """Start ``command`` in its own process group (torchrun's workers included), its output into ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    _SIGNALS["starting"] = True
    try:
        with open(log, "w") as out:
            proc = subprocess.Popen(
                command, env=_env(ctx.sizes, **env), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
    finally:
        _SIGNALS["starting"] = False
    if _SIGNALS["pending"] is not None:
        _stop(proc)
        raise Interrupted(_SIGNALS["pending"])
    return proc


def _stop(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s whole process group (no-op when it has ended) and reap it."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # pragma: no cover - ended in between
            pass
    proc.wait()


def _wait(ctx: Context, proc: subprocess.Popen, what: str) -> int:
    """Wait for ``proc`` within :meth:`Context.timeout`; kill its group and raise :class:`OutOfTime` after it."""
    limit = ctx.timeout()
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise OutOfTime(what, limit, budget=limit < ctx.sizes.timeout) from None
    except BaseException:
        _stop(proc)
        raise


def _run(ctx: Context, command: list[str], log: Path, what: str, **env: str) -> int:
    return _wait(ctx, _start(ctx, command, log, **env), what)


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()] if log.exists() else []
    return lines[-1].strip()[:300] if lines else "no output"


def _records(out_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]


def _checkpoint(path: Path) -> dict:
    from resnet_theory.engine import train

    return train.read_checkpoint(path)


def _device_facts(sizes: Sizes) -> devices.DeviceFacts:
    count = devices.cuda_device_count()
    current = torch.cuda.current_device() if count else 0
    return devices.describe(devices.resolve_device(sizes.device, cuda_devices=count, current=current))


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


# --- training runs ----------------------------------------------------------------------------------------------
def _train_args(ctx: Context, out_dir: Path, steps: int, *extra: str, lr: float | None = None) -> list[str]:
    s = ctx.sizes
    args = [
        *("--dataset", "cifar10", "--data-dir", str(ctx.data_dir), "--out-dir", str(out_dir)),
        *("--steps", str(steps), "--batch-size", str(s.batch_size), "--lr", str(s.lr if lr is None else lr)),
        *("--eval-every", "0", "--log-every", str(s.log_every), "--checkpoint-every", "0"),
        *("--device", s.device, "--no-progress"),
    ]
    for key, value in s.model:
        args += ["--" + key.replace("_", "-"), ",".join(map(str, value)) if isinstance(value, tuple) else str(value)]
    return args + list(extra)


TRAIN = [sys.executable, "-m", "resnet_theory.engine.train"]


def _trained(ctx: Context, folder: str, *extra: str, lr: float | None = None, **env: str):
    """A training run of ``sizes.steps`` steps into ``work/folder``: ``(records, losses, log)``, or the failure in
    one line (``python -m resnet_theory.engine.train exited N: its last line``)."""
    out, log = ctx.work / folder, ctx.work / "logs" / f"{folder}.log"
    command = TRAIN + _train_args(ctx, out, ctx.sizes.steps, *extra, lr=lr)
    code = _run(ctx, command, log, "python -m resnet_theory.engine.train", **env)
    if code != 0:
        return f"python -m resnet_theory.engine.train exited {code}: {_last_line(log)}"
    records = _records(out)
    return records, [r["loss"] for r in records if r["kind"] == "train"], log


def _falls(losses: list[float]) -> list[str]:
    if not losses or not all(math.isfinite(x) for x in losses):
        return ["a loss is not finite"]
    if not losses[-1] < losses[0]:
        return [f"the loss did not fall ({losses[0]:.4f} -> {losses[-1]:.4f})"]
    return []


def _training_figures(ctx: Context, records: list[dict], losses: list[float]) -> tuple[dict, str]:
    """The figures of a training run and their sentence."""
    s, start = ctx.sizes, records[0]
    trains = [r for r in records if r["kind"] == "train"]
    end = next(r for r in records if r["kind"] == "end")
    figures = {
        "steps": s.steps,
        "batch_size": s.batch_size,
        "lr": start["config"]["lr"],
        "precision": start["precision"],
        "device": start["device"],
        "device_name": start.get("device_name"),
        "losses": losses,
        "images_per_second_last_interval": trains[-1]["images_per_s"],
        "first_interval_seconds": trains[0]["seconds"],  # compilation and cuDNN autotuning included
        "seconds": end["seconds"],
        "trainable_parameters": start["trainable_parameters"],
    }
    text = (
        f"{start['trainable_parameters']:,} trainable parameters, {s.steps} steps of {s.batch_size} at lr "
        f"{figures['lr']:g} in {start['precision']} on {start['device']}: loss {losses[0]:.3f} -> {losses[-1]:.3f}, "
        f"{figures['images_per_second_last_interval']:,.0f} images/s over the last {s.log_every} steps, "
        f"{end['seconds']:.1f} s in all ({figures['first_interval_seconds']:.1f} s for the first {s.log_every})"
    )
    return figures, text


def _finish(name: str, figures: dict, text: str, problems: list[str]) -> Step:
    return Step(name, "FAIL" if problems else "PASS", text + "".join("; " + p for p in problems), figures)


# --- what torch.compile needs ----------------------------------------------------------------------------------
def compile_toolchain(sizes: Sizes) -> dict:
    """What Inductor builds with, found without compiling anything: on a GPU Triton and the C compiler it builds its
    launchers with (``CC``, else ``gcc``, else ``clang``, as Triton looks), on a CPU the C++ compiler of Inductor's
    CPU kernels (``CXX``, else ``g++``, ``c++``, ``clang++``); and whether Python's headers are there."""
    import importlib.util
    import sysconfig

    if sizes.device == "cpu":
        compiler = os.environ.get("CXX") or next(filter(None, map(shutil.which, ("g++", "c++", "clang++"))), None)
    else:
        compiler = os.environ.get("CC") or next(filter(None, map(shutil.which, ("gcc", "clang"))), None)
    include = sysconfig.get_paths().get("include")
    return {
        "compiler": compiler,
        "triton": importlib.util.find_spec("triton") is not None,
        "python_headers": bool(include) and (Path(include) / "Python.h").is_file(),
    }


def compile_toolchain_problem(sizes: Sizes) -> str | None:
    """Why the steps that compile would fail at once here (no Triton on a GPU, no compiler), or None: they are
    then SKIP with the reason instead of spending the budget on a compile that cannot succeed."""
    if not sizes.compile:
        return None  # the steps say so themselves (a rehearsal without --compile)
    found = compile_toolchain(sizes)
    if sizes.device != "cpu" and not found["triton"]:
        return "Triton is not installed, and Inductor generates GPU kernels with it"
    if found["compiler"] is None:
        which = "C++ compiler (CXX, g++, c++, clang++)" if sizes.device == "cpu" else "C compiler (CC, gcc, clang)"
        return f"no {which} on the PATH"
    return None


# --- the steps --------------------------------------------------------------------------------------------------
def check_device(ctx: Context) -> Step:
    facts = _device_facts(ctx.sizes)
    precision = devices.choose_precision("auto", facts)
    memory = f", {facts.memory_bytes / 2**30:.0f} GiB" if facts.memory_bytes else ""
    capability = f", compute capability {facts.capability[0]}.{facts.capability[1]}" if facts.capability else ""
    figures = {
        "device": f"{facts.type}:{facts.index}" if facts.cuda else "cpu",
        "name": facts.name,
        "capability": facts.capability,
        "memory_bytes": facts.memory_bytes,
        "visible_gpus": devices.cuda_device_count(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "precision": precision.name,
        "channels_last": devices.use_channels_last(facts, precision),
        "fused_sgd": devices.fused_sgd(facts),
        "cudnn_benchmark": devices.cudnn_benchmark(facts, deterministic=False),
        "nccl": facts.nccl,
        "ddp_backend": devices.ddp_backend(facts),
        "compile_toolchain": compile_toolchain(ctx.sizes),
    }
    on = {True: "on", False: "off"}
    text = (
        f"{figures['device']} {facts.name}{capability}{memory}; torch {torch.__version__}, CUDA {torch.version.cuda}; "
        f"precision {precision.description} ({precision.reason}); channels_last {on[figures['channels_last']]}; "
        f"fused SGD {on[figures['fused_sgd']]}; cuDNN autotuning {on[figures['cudnn_benchmark']]}; "
        f"DDP backend {figures['ddp_backend']}"
    )
    problem = compile_toolchain_problem(ctx.sizes)
    if problem is not None:
        text += f"; the steps that compile are skipped: {problem}"
    ok = facts.type == torch.device(ctx.sizes.device).type and (not facts.cuda or facts.index is not None)
    return Step("device", "PASS" if ok else "FAIL", text, figures)


def check_train_eager(ctx: Context) -> Step:
    """The engine's default run; its final checkpoint shows the layout and optimiser it trained with."""
    trained = _trained(ctx, "eager")
    if isinstance(trained, str):
        return Step("train eager", "FAIL", trained)
    records, losses, _ = trained
    figures, text = _training_figures(ctx, records, losses)
    facts = _device_facts(ctx.sizes)
    want_layout = devices.use_channels_last(facts, devices.choose_precision("auto", facts))
    want_fused = devices.fused_sgd(facts)
    ckpt = _checkpoint(ctx.work / "eager" / "checkpoint.pt")
    convs = [t for t in ckpt["model"].values() if t.dim() == 4]
    layout = bool(convs) and all(t.is_contiguous(memory_format=torch.channels_last) for t in convs)
    fused = bool(ckpt["optimizer"]["param_groups"][0].get("fused"))
    figures.update(channels_last_weights=layout, fused_sgd=fused)
    text += f"; conv weights {'channels_last' if layout else 'contiguous'}, SGD {'fused' if fused else 'not fused'}"
    problems = _falls(losses)
    if layout != want_layout or fused != want_fused:
        problems.append(f"the engine decided channels_last {want_layout} and fused SGD {want_fused}")
    return _finish("train eager", figures, text, problems)


def check_train_compiled(ctx: Context) -> Step:
    """``--compile``: the same losses as the eager run, and no recompilation (the final evaluation included)."""
    name = "train compiled"
    if not ctx.sizes.compile:
        return Step(name, "SKIP", "torch.compile is not part of this rehearsal (add --compile)")
    trained = _trained(ctx, "compiled", "--compile", TORCH_LOGS="recompiles")
    if isinstance(trained, str):
        return Step(name, "FAIL", trained)
    records, losses, log = trained
    figures, text = _training_figures(ctx, records, losses)
    recompiles = log.read_text(errors="replace").count("Recompiling function")
    figures["recompilations"] = recompiles
    text += f"; {recompiles} recompilations (TORCH_LOGS=recompiles)"
    problems = _falls(losses) + ([f"{recompiles} recompilations"] if recompiles else [])
    eager = ctx.done.get("train eager")
    if eager is not None and eager.status == "PASS":
        reference = eager.figures["losses"]
        worst = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
        speedup = figures["images_per_second_last_interval"] / eager.figures["images_per_second_last_interval"]
        figures.update(largest_relative_loss_difference=worst, speedup_over_eager=speedup)
        text += (
            f"; mean losses within {100 * worst:.2f}% of the eager run's at every logged step (last "
            f"{losses[-1]:.4f} vs {reference[-1]:.4f}); {speedup:.2f}x the eager images/s"
        )
        if not worst <= 0.05:
            problems.append("a mean loss differs from the eager run's by more than 5%")
    return _finish(name, figures, text, problems)


def check_precision(ctx: Context, name: str, precision: str) -> Step:
    """``--precision fp16`` (autocast and the gradient scaler) or ``float32``: trains, the loss falls."""
    trained = _trained(ctx, precision, "--precision", precision)
    if isinstance(trained, str):
        return Step(name, "FAIL", trained)
    records, losses, _ = trained
    figures, text = _training_figures(ctx, records, losses)
    problems = _falls(losses)
    if figures["precision"] != precision:
        problems.append(f"the run trained in {figures['precision']}")
    if precision == "fp16":
        scaler = _checkpoint(ctx.work / precision / "checkpoint.pt").get("grad_scaler") or {}
        scale = float(scaler.get("scale", float("nan")))
        figures["grad_scale"] = scale
        text += f"; gradient scale at the end {scale:g}"
        if not (math.isfinite(scale) and scale > 0):
            problems.append("no finite gradient scale in the checkpoint")
    return _finish(name, figures, text, problems)


def check_paper_lr(ctx: Context) -> Step:
    """The paper's learning rate, 0.05, on these data (the other steps train at ``sizes.lr``)."""
    name = "paper learning rate"
    trained = _trained(ctx, "paper-lr", lr=ctx.sizes.paper_lr)
    if isinstance(trained, str):
        return Step(
            name, "FAIL", trained + f" (the paper's lr {ctx.sizes.paper_lr:g}; the check trains at {ctx.sizes.lr:g})"
        )
    records, losses, _ = trained
    figures, text = _training_figures(ctx, records, losses)
    return _finish(name, figures, text, _falls(losses))


def _bench_command(ctx: Context, mode: str, out: Path) -> list[str]:
    options = []
    for key, value in ctx.sizes.speed:
        options += [f"--{key}", str(value)]
    compiled = ["--compile", "--compile-mode", mode] if mode != "eager" else []
    return [
        *(sys.executable, "-m", "resnet_theory.engine.bench", "--device", ctx.sizes.device),
        *("--pipelines", "device", "--json", str(out), *options, *compiled),
    ]


def _speed_figures(r: dict, mode: str) -> dict:
    p = r["pipelines"]["device"]
    minutes = p["schedule_minutes"]
    keep = ("device_name", "precision", "channels_last", "cudnn_benchmark", "compile", "model")
    return {
        "mode": mode,
        **{key: r[key] for key in keep},
        "torch": r["torch_version"],
        "cuda": r["cuda_version"],
        "cudnn": r["cudnn_version"],
        "trainable_parameters": r["trainable_parameters"],
        "batch_size": r["batch_size"],
        "warmup_steps": r["warmup"],
        "warmup_seconds": r["warmup_seconds"]["device"],
        "steps_per_round": r["steps"],
        "rounds": r["rounds"],
        "images_per_second": p["images_per_second"],
        "rounds_images_per_second": p["rounds_images_per_second"],
        "spread": p["spread"],
        "ms_per_step": p["ms_per_step"],
        "tflops": p["tflops"],
        "fraction_of_ceiling": p["fraction_of_ceiling"],
        "ceiling_tflops": r["ceiling_tflops"],
        "schedule_minutes": minutes,
        "goal_minutes": GOAL_MINUTES,
        "goal_met": minutes <= GOAL_MINUTES,
        "last_loss": p["last_loss"],
    }


def check_speed(ctx: Context, name: str) -> Step:
    """Images/s of the full network at batch 128 on the device pipeline (:mod:`resnet_theory.engine.bench`, one
    process per mode), and the 64,000-step schedule at that rate."""
    mode = SPEED_MODES[name]
    if mode != "eager" and not ctx.sizes.compile:
        return Step(name, "SKIP", "torch.compile is not part of this rehearsal (add --compile)")
    out, log = ctx.work / "speed" / f"{mode}.json", ctx.work / "logs" / f"speed-{mode}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = _bench_command(ctx, mode, out)
    try:
        code = _run(ctx, command, log, "the benchmark")
    except OutOfTime as exc:  # max-autotune tunes for minutes: cut by either limit, it was not given the time
        if mode != "max-autotune":
            raise
        alone = "python -m resnet_theory.engine.bench --pipelines device --compile --compile-mode max-autotune"
        return Step(name, "SKIP", f"{exc}; measure it alone: {alone}")
    if code != 0:
        return Step(name, "FAIL", f"the benchmark exited {code}: {_last_line(log)}")
    r = json.loads(out.read_text())
    from resnet_theory.engine.train import TrainConfig  # the schedule bench projects (bench.SCHEDULE_STEPS)

    figures = _speed_figures(r, mode)
    f, spread = figures, figures["spread"]
    compiled = "eager" if f["compile"] == "off" else f["compile"]
    text = (
        f"{f['model']} network ({f['trainable_parameters']:,} parameters), batch {f['batch_size']}, {f['precision']}, "
        f"{compiled}, cuDNN autotuning {'on' if f['cudnn_benchmark'] else 'off'}: {f['images_per_second']:,.0f} "
        f"images/s (median of {f['rounds']} rounds of {f['steps_per_round']} steps, {spread['min']:,.0f} to "
        f"{spread['max']:,.0f}, spread {100 * spread['relative']:.1f}%), {f['tflops']:.3g} TFLOP/s; the "
        f"{TrainConfig.steps:,}-step schedule in {f['schedule_minutes']:.1f} min (goal {GOAL_MINUTES:g} min: "
        f"{'met' if f['goal_met'] else 'not met'}); warm-up {f['warmup_seconds']:.1f} s"
    )
    eager = ctx.done.get("speed eager")
    if mode != "eager" and eager is not None and eager.status == "PASS":
        figures["speedup_over_eager"] = f["images_per_second"] / eager.figures["images_per_second"]
        text += f"; {figures['speedup_over_eager']:.2f}x eager"
    if r.get("notes"):  # what the benchmark said of its run (e.g. no CUDA graphs on a CPU)
        figures["notes"] = list(r["notes"])
        text += "; " + "; ".join(r["notes"])
    problems = []
    if not (math.isfinite(f["images_per_second"]) and f["images_per_second"] > 0 and math.isfinite(f["last_loss"])):
        problems.append("a figure is not finite")
    facts = _device_facts(ctx.sizes)
    if f["cudnn_benchmark"] != devices.cudnn_benchmark(facts, deterministic=False):
        problems.append("cuDNN autotuning is not as when the engine trains")
    if facts.cuda and (f["model"] != "full" or f["batch_size"] != 128):
        problems.append("not the paper's network at batch 128")
    return _finish(name, figures, text, problems)


def check_kill_and_resume(ctx: Context) -> Step:
    name, steps = "kill and resume", ctx.sizes.resume_steps
    extra = ("--deterministic", "--checkpoint-every", str(ctx.sizes.checkpoint_every))
    whole_dir, killed_dir = ctx.work / "whole", ctx.work / "killed"
    logs = {k: ctx.work / "logs" / f"{k}.log" for k in ("whole", "killed", "resumed")}
    checkpoint, started = killed_dir / "checkpoint.pt", []
    # cuBLAS's reproducible workspace, before cuBLAS starts (only these runs: it can slow the others' matmuls)
    cublas = {"CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG", devices.CUBLAS_DETERMINISTIC)}
    try:
        whole = _start(ctx, TRAIN + _train_args(ctx, whole_dir, steps, *extra), logs["whole"], **cublas)
        started.append(whole)
        victim = _start(ctx, TRAIN + _train_args(ctx, killed_dir, steps, *extra), logs["killed"], **cublas)
        started.append(victim)
        deadline = time.monotonic() + ctx.timeout()
        while not checkpoint.exists() and victim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        alive = victim.poll() is None
        _stop(victim)
        whole_code = _wait(ctx, whole, "the uninterrupted run")
    finally:
        for proc in started:
            _stop(proc)
    if not alive:
        return Step(
            name,
            "FAIL",
            f"the run to be killed ended first (status {victim.returncode}: {_last_line(logs['killed'])}); "
            "raise Sizes.resume_steps",
        )
    if not checkpoint.exists():
        return Step(name, "FAIL", "the run to be killed wrote no checkpoint in time")
    if whole_code != 0:
        return Step(name, "FAIL", f"the uninterrupted run exited {whole_code}: {_last_line(logs['whole'])}")
    killed_at = _checkpoint(checkpoint)["step"]
    resume = TRAIN + _train_args(ctx, killed_dir, steps, *extra, "--resume")
    code = _run(ctx, resume, logs["resumed"], "the resume", **cublas)
    if code != 0:
        return Step(name, "FAIL", f"the resumed run exited {code}: {_last_line(logs['resumed'])}")
    step = _compare_runs(
        name,
        _checkpoint(whole_dir / "checkpoint.pt"),
        _checkpoint(checkpoint),
        steps,
        killed_at,
        _records(whole_dir)[0]["precision"],
    )
    # --deterministic warns (warn_only) where an operation has no deterministic kernel: the likely cause of a FAIL
    warned = sum(log.read_text(errors="replace").count(NONDETERMINISTIC) for log in logs.values() if log.exists())
    step.figures["nondeterministic_warnings"] = warned
    if warned:
        step.text += f"; {warned} warnings that an operation has no deterministic implementation (logs/whole.log)"
    return step


#: What torch warns, under ``torch.use_deterministic_algorithms(True, warn_only=True)``, of an operation without a
#: deterministic implementation.
NONDETERMINISTIC = "does not have a deterministic implementation"


def _compare_runs(name: str, a: dict, b: dict, steps: int, killed_at: int, precision: str) -> Step:
    differ = [k for k in a["model"] if not torch.equal(a["model"][k], b["model"][k])]
    state_a, state_b = a["optimizer"]["state"], b["optimizer"]["state"]
    momentum = [k for k in state_a if not torch.equal(state_a[k]["momentum_buffer"], state_b[k]["momentum_buffer"])]
    worst = max((float((a["model"][k].double() - b["model"][k].double()).abs().max()) for k in a["model"]), default=0.0)
    figures = {
        "steps": steps,
        "killed_after_checkpoint_of_step": killed_at,
        "tensors_differing": len(differ),
        "momentum_buffers_differing": len(momentum),
        "max_abs_weight_difference": worst,
        "precision": precision,
    }
    text = (
        f"{steps} steps with --deterministic in {precision}, one run killed (SIGKILL) after its checkpoint of "
        f"step {killed_at} and resumed: "
    )
    if a["step"] == b["step"] == steps and not differ and not momentum:
        text += (
            f"all {len(a['model'])} weight tensors and the momentum buffers bitwise equal to the uninterrupted run's"
        )
        return Step(name, "PASS", text, figures)
    text += (
        f"{len(differ)} weight tensors and {len(momentum)} momentum buffers differ (largest weight difference "
        f"{worst:.3g}; steps {a['step']}, {b['step']})"
    )
    return Step(name, "FAIL", text, figures)


def check_torchrun(ctx: Context) -> Step:
    name, out, log = "torchrun", ctx.work / "torchrun", ctx.work / "logs" / "torchrun.log"
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1"),
        "--local-addr=127.0.0.1",  # the workers' MASTER_ADDR: the loopback, not a host name that may not resolve
        *("-m", "resnet_theory.engine.train", *_train_args(ctx, out, ctx.sizes.torchrun_steps)),
    ]
    code = _run(ctx, command, log, "torchrun", NCCL_DEBUG=os.environ.get("NCCL_DEBUG", "WARN"))
    if code != 0:
        return Step(name, "FAIL", f"torchrun exited {code}: {_last_line(log)}")
    records = _records(out)
    start, losses = records[0], [r["loss"] for r in records if r["kind"] == "train"]
    facts = _device_facts(ctx.sizes)
    expected = devices.ddp_backend(facts)
    figures = {
        "world_size": start["world_size"],
        "backend": start["distributed"],
        "expected_backend": expected,
        "nccl_available": facts.nccl,
        "device": start["device"],
        "losses": losses,
    }
    text = (
        f"1 process, DistributedDataParallel over {start['distributed']} on {start['device']}, "
        f"{ctx.sizes.torchrun_steps} steps, last loss {losses[-1]:.3f}"
    )
    ok = start["distributed"] == expected and start["world_size"] == 1 and all(map(math.isfinite, losses))
    return Step(name, "PASS" if ok else "FAIL", text + ("" if ok else f" (expected backend {expected})"), figures)


def check_dataloader(ctx: Context) -> Step:
    """A ``DataLoader`` with worker processes (tensors passed through shared memory, ``/dev/shm``) and pinned memory
    feeding CIFAR-shaped batches to the device, as the benchmark's conventional pipeline does."""
    from resnet_theory.engine.bench import PerImageAugmentedDataset

    s, facts = ctx.sizes, _device_facts(ctx.sizes)
    device = torch.device("cuda", facts.index) if facts.cuda else torch.device("cpu")
    workers = max(1, min(s.loader_workers, os.cpu_count() or 1))
    n = s.batch_size * s.loader_batches
    images = torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    labels = torch.randint(0, 10, (n,), generator=torch.Generator().manual_seed(1)).numpy()
    dataset = PerImageAugmentedDataset(images.numpy(), labels, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25), pad=4, flip=True)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=s.batch_size,
        shuffle=True,
        drop_last=True,
        num_workers=workers,
        pin_memory=facts.cuda,
        generator=torch.Generator().manual_seed(0),
    )
    shm = shutil.disk_usage("/dev/shm") if os.path.isdir("/dev/shm") else None
    finite, shapes, batches = torch.ones((), dtype=torch.bool, device=device), True, 0
    start = time.perf_counter()
    for x, y in loader:  # one epoch: every worker starts once
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        finite &= torch.isfinite(x).all()
        shapes = shapes and x.shape == (s.batch_size, 3, 32, 32) and y.shape == (s.batch_size,)
        batches += 1
    ok = bool(finite) and shapes  # one host synchronisation, at the end
    seconds = time.perf_counter() - start
    figures = {
        "workers": workers,
        "batches": batches,
        "batch_size": s.batch_size,
        "pin_memory": facts.cuda,
        "start_method": torch.multiprocessing.get_start_method(),
        "sharing_strategy": torch.multiprocessing.get_sharing_strategy(),
        "dev_shm_total_bytes": shm.total if shm else None,
        "dev_shm_free_bytes": shm.free if shm else None,
        "images_per_second": batches * s.batch_size / seconds,
    }
    room = f"/dev/shm {shm.total / 2**30:.1f} GiB ({shm.free / 2**30:.1f} GiB free)" if shm else "no /dev/shm"
    text = (
        f"{batches} batches of {s.batch_size} CIFAR-shaped images from {workers} worker processes "
        f"({figures['start_method']}, sharing by {figures['sharing_strategy']}; {room}), pinned memory "
        f"{'on' if facts.cuda else 'off'}, to {device}: {figures['images_per_second']:,.0f} images/s"
    )
    problems = [] if batches == s.loader_batches else [f"{batches} batches arrived, {s.loader_batches} expected"]
    problems += [] if ok else ["a batch had the wrong shape or a value that is not finite"]
    return _finish("dataloader workers", figures, text, problems)


def check_expressivity(ctx: Context) -> Step:
    from resnet_theory import expressivity as ex
    from resnet_theory.benchmarks.expressivity import time_builds

    s, facts = ctx.sizes, _device_facts(ctx.sizes)
    device = f"cuda:{facts.index}" if facts.cuda else "cpu"
    if facts.cuda:
        torch.cuda.reset_peak_memory_stats(device)
    row = time_builds([s.expressivity_n], dim=s.dim, backend="torch", device=device)[0]
    peak = torch.cuda.max_memory_allocated(device) if facts.cuda else None
    rng = np.random.default_rng(7)
    X = rng.standard_normal((s.separation_n, s.dim))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    start = time.perf_counter()
    rho_torch = ex.separation(X, backend="torch", device=device)
    t_torch = time.perf_counter() - start
    start = time.perf_counter()
    rho_numpy = ex.separation(X)
    t_numpy = time.perf_counter() - start
    figures = {
        **row,
        "peak_device_bytes": peak,
        "separation_n": s.separation_n,
        "separation_torch": rho_torch,
        "separation_numpy": rho_numpy,
        "separation_torch_seconds": t_torch,
        "separation_numpy_seconds": t_numpy,
    }
    text = (
        f"n = {row['n']:,} points in R^{s.dim} on {device}: rho {row['rho']:.4f}, width k {row['k']}, depth "
        f"{row['depth']:,}, {row['parameters']:,} weights, built and verified in {row['seconds']:.1f} s "
        f"(max |f - one-hot| {row['max_fit_error']:.1e})"
        + (f", peak GPU memory {peak / 2**30:.2f} GiB" if peak is not None else "")
        + f"; separation at n = {s.separation_n:,}: {rho_torch:.12g} in {t_torch:.2f} s vs NumPy "
        f"{rho_numpy:.12g} in {t_numpy:.2f} s"
    )
    problems = [] if row["max_fit_error"] <= ex.FIT_TOLERANCE else ["the network does not fit"]
    problems += [] if abs(rho_torch - rho_numpy) <= 1e-12 * rho_numpy else ["the separations differ by more than 1e-12"]
    return _finish("expressivity", figures, text, problems)


CHECKS = {
    "device": check_device,
    "train eager": check_train_eager,
    "train compiled": check_train_compiled,
    **{name: (lambda ctx, name=name: check_speed(ctx, name)) for name in SPEED_MODES},
    "kill and resume": check_kill_and_resume,
    "torchrun": check_torchrun,
    "dataloader workers": check_dataloader,
    "train fp16": lambda ctx: check_precision(ctx, "train fp16", "fp16"),
    "train float32": lambda ctx: check_precision(ctx, "train float32", "float32"),
    "paper learning rate": check_paper_lr,
    "expressivity": check_expressivity,
}


# --- the run and its record ------------------------------------------------------------------------------------------
def versions() -> dict:
    """Python, torch, CUDA, cuDNN, NumPy, SciPy, Triton and the NVIDIA driver (None where absent)."""

    def package(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    driver = None
    if shutil.which("nvidia-smi"):
        try:
            query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            driver = subprocess.run(query, capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            driver = None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "numpy": np.__version__,
        "scipy": package("scipy"),
        "triton": package("triton"),
        "nvidia_driver": driver,
        "platform": platform.platform(),
    }


def device_summary(sizes: Sizes) -> dict:
    facts = _device_facts(sizes)
    return {
        "type": facts.type,
        "index": facts.index,
        "name": facts.name if facts.cuda else f"CPU: {platform.machine()}, {os.cpu_count()} cores",
        "capability": list(facts.capability) if facts.capability else None,
        "memory_bytes": facts.memory_bytes,
        "visible_gpus": devices.cuda_device_count(),
        "cpu_cores": os.cpu_count(),
    }


def _utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _tail_file(source: Path, target: Path, lines: int, limit: int) -> None:
    text = source.read_text(errors="replace").splitlines()[-lines:]
    target.write_text("".join(line[:500] + "\n" for line in text)[-limit:])


class Recorder:
    """``OUTDIR/gpu-check.json``, rewritten atomically at the start, when a step starts, after every step and at the
    end, and ``OUTDIR/logs/``: the last lines of every subprocess's output and every run's metrics."""

    def __init__(self, out_dir, sizes: Sizes, plan: list[str], argv: list[str]):
        self.out = Path(out_dir)
        (self.out / "logs").mkdir(parents=True, exist_ok=True)
        self.started = time.perf_counter()
        self.data = {
            "schema": SCHEMA,
            "complete": False,
            "running": None,
            "interrupted": None,
            "started_utc": _utc(),
            "updated_utc": _utc(),
            "seconds": 0.0,
            "command": argv,
            "device": device_summary(sizes),
            "versions": versions(),
            "sizes": asdict(sizes),
            "plan": list(plan),
            "summary": {},
            "steps": [],
        }
        self.write()

    def running(self, name: str) -> None:
        self.data["running"] = name
        self.write()

    def add(self, step: Step, work: Path) -> None:
        self.data["steps"].append(asdict(step))
        self.data["running"] = None
        for log in sorted((work / "logs").glob("*.log")):
            _tail_file(log, self.out / "logs" / log.name, LOG_LINES, 32_000)
        for metrics in sorted(work.glob("*/metrics.jsonl")):
            _tail_file(metrics, self.out / "logs" / f"{metrics.parent.name}.metrics.jsonl", 200, 64_000)
        self.write()

    def finish(self, interrupted: str | None = None) -> None:
        self.data["interrupted"] = interrupted
        self.data["complete"] = interrupted is None and len(self.data["steps"]) == len(self.data["plan"])
        self.write()

    def write(self) -> None:
        steps = self.data["steps"]
        self.data["seconds"] = round(time.perf_counter() - self.started, 1)
        self.data["updated_utc"] = _utc()
        self.data["summary"] = {
            status: sum(s["status"] == status for s in steps) for status in ("PASS", "FAIL", "SKIP")
        }
        target = self.out / RESULT_NAME
        temporary = self.out / f".{RESULT_NAME}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            json.dump(self.data, f, indent=1, default=str)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)


def plan(only: str | list | None) -> list[str]:
    """The steps to run: all of :data:`STEP_NAMES`, or those of ``only`` (names, or one comma-separated string) in
    the check's order, the device step first. Raises ValueError naming an unknown step."""
    if only is None:
        return list(STEP_NAMES)
    names = [n.strip() for n in (only.split(",") if isinstance(only, str) else only) if n.strip()]
    unknown = [n for n in names if n not in STEP_NAMES]
    if unknown or not names:
        raise ValueError(
            f"unknown step {', '.join(map(repr, unknown)) or '(none given)'}; the steps: {', '.join(STEP_NAMES)}"
        )
    return [n for n in STEP_NAMES if n == "device" or n in names]


def _one_step(ctx: Context, name: str) -> Step:
    """One step, never raising (but :class:`Interrupted`): SKIP when too little of the budget is left to start it
    (:attr:`Sizes.least_for_a_step`; :attr:`Sizes.least_for_a_compile` for the steps that compile) or when the end
    of the budget cut it (its code did not fail: it was not given the time), FAIL when its subprocess outran its own
    limit (:attr:`Sizes.timeout`: something hung) or it failed."""
    start = time.perf_counter()
    left = ctx.left()
    least = ctx.sizes.least_for_a_compile if name in COMPILING else ctx.sizes.least_for_a_step
    toolchain = compile_toolchain_problem(ctx.sizes) if name in COMPILING else None
    if name != "device" and left < least:
        step = Step(
            name,
            "SKIP",
            f"not started: {max(left, 0):.0f} s of the {ctx.sizes.budget:.0f} s budget left, at least "
            f"{least:.0f} s needed" + (" for a step that compiles" if name in COMPILING else ""),
        )
    elif toolchain is not None:
        step = Step(name, "SKIP", f"not started: torch.compile cannot work here ({toolchain})")
    else:
        try:
            step = CHECKS[name](ctx)
        except OutOfTime as exc:
            step = (
                Step(name, "SKIP", f"cut by the end of the budget: {exc}")
                if exc.budget
                else Step(name, "FAIL", str(exc))
            )
        except Exception as exc:  # one failing step must not hide the others
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            step = Step(name, "FAIL", f"{type(exc).__name__}: {first}")
    step.seconds = time.perf_counter() - start
    return step


def run_checks(
    sizes: Sizes = GPU_SIZES,
    report=print,
    work_dir: str | os.PathLike | None = None,
    only=None,
    recorder: Recorder | None = None,
) -> list[Step]:
    """Run the steps of ``plan(only)`` within ``sizes.budget`` seconds (a failing step does not stop the others);
    ``report`` gets each step's line, ``recorder`` each step as it starts and ends."""
    names = plan(only)
    own = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="gpu-check-") if own else work_dir)
    ctx = Context(sizes, work, time.monotonic() + sizes.budget)
    steps: list[Step] = []
    try:
        (work / "logs").mkdir(parents=True, exist_ok=True)
        ctx.data_dir = write_synthetic_cifar10(work / "data", sizes.train_images, sizes.test_images)
        for name in names:
            if recorder is not None:
                recorder.running(name)
            step = _one_step(ctx, name)
            ctx.done[name] = step
            steps.append(step)
            report(step.line())
            if recorder is not None:
                recorder.add(step, work)
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


def _parser():
    from resnet_theory import validate

    parser = validate.OneLineParser(
        prog="python -m resnet_theory.engine.gpu_check", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("out_dir", nargs="?", help=f"write {RESULT_NAME} (after every step) and logs/ here")
    parser.add_argument(
        "--only", help=f"comma-separated steps to run (the device step always runs): {', '.join(STEP_NAMES)}"
    )
    parser.add_argument("--budget", type=float, help=f"seconds for all the steps (default {GPU_SIZES.budget:.0f})")
    parser.add_argument("--keep", help="keep the synthetic data, runs and checkpoints in this folder")
    parser.add_argument("--cpu-rehearsal", action="store_true", help="run the steps on the CPU at small sizes")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="with --cpu-rehearsal: rehearse the steps that compile too (on a GPU they always run)",
    )
    return parser


def _check_folder(path: Path, option: str) -> None:
    """A folder the check fills must be one, or not exist yet under folders: a ValueError naming the file in the way."""
    blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        where = "" if blocking == path else f" ({blocking} is a file)"
        raise ValueError(f"{option} {path}: not a folder{where}")


def _interrupt(signum, frame):
    if _SIGNALS["starting"]:  # raised by _start once the subprocess exists, so that it is stopped too
        _SIGNALS["pending"] = signal.Signals(signum).name
        return
    raise Interrupted(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return int(exc.code or 0)
    sizes = CPU_SIZES if args.cpu_rehearsal else GPU_SIZES
    try:
        if args.compile and not args.cpu_rehearsal:
            raise ValueError("--compile goes with --cpu-rehearsal (on a GPU the steps that compile always run)")
        if args.compile:
            sizes = replace(sizes, compile=True)
        for option, folder in (("OUT", args.out_dir), ("--keep", args.keep)):
            if folder:  # a folder it fills: never a file, never the book's sources or a build's records
                _check_folder(Path(folder), option)
                check_command_output(Path(folder), option)
        names = plan(args.only)
        if args.budget is not None:
            if not (math.isfinite(args.budget) and args.budget > 0):
                raise ValueError(f"--budget must be a positive number of seconds, got {args.budget:g}")
            sizes = replace(sizes, budget=args.budget)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    reason = None if args.cpu_rehearsal else no_cuda_reason()
    if reason is not None:
        print(f"gpu-check: no CUDA GPU on this machine ({reason}); nothing was checked", flush=True)
        return 2
    try:
        recorder = (
            Recorder(
                args.out_dir,
                sizes,
                names,
                ["python -m resnet_theory.engine.gpu_check", *(argv if argv is not None else sys.argv[1:])],
            )
            if args.out_dir
            else None
        )
    except OSError as exc:  # no permission, a full disk: before any step runs
        print(f"error: OUT {args.out_dir}: cannot write there ({exc.strerror or exc})", file=sys.stderr)
        return 2
    print(
        f"gpu-check: {len(names)} steps within {sizes.budget:.0f} s on {sizes.device}, sizes {asdict(sizes)}",
        flush=True,
    )
    started = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        steps = run_checks(
            sizes, report=lambda line: print(line, flush=True), work_dir=args.keep, only=names, recorder=recorder
        )
    except (Interrupted, KeyboardInterrupt) as exc:
        during = recorder.data["running"] if recorder is not None else None
        what = f"{type(exc).__name__ if isinstance(exc, KeyboardInterrupt) else exc} during step {during or '?'}"
        if recorder is not None:
            recorder.finish(interrupted=what)
        print(f"gpu-check: interrupted ({what}); the steps before it are in {args.out_dir or 'no file'}", flush=True)
        return 130 if isinstance(exc, KeyboardInterrupt) else 128 + signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, previous)
    if recorder is not None:
        recorder.finish()
    failed = [s.name for s in steps if s.status == "FAIL"]
    counts = {status: sum(s.status == status for s in steps) for status in ("PASS", "FAIL", "SKIP")}
    print(
        f"gpu-check: {counts['PASS']} of {len(steps)} steps passed, {counts['SKIP']} skipped, in "
        f"{time.perf_counter() - started:.0f} s" + (f"; failed: {', '.join(failed)}" if failed else ""),
        flush=True,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
