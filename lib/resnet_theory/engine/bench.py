"""Training throughput of Hardt & Ma's all-convolutional ResNet (ICLR 2017, Section 4): device-resident
data against a conventional DataLoader, in one run.

    python -m resnet_theory.engine.bench [--model small|full] [--data digits|cifar] [--steps N] [--warmup N]
                                  [--batch-size 128] [--device cpu|cuda] [--compile] [--compile-mode MODE]
                                  [--workers N] [--images N] [--pipelines device,dataloader] [--threads N]
                                  [--ceiling-size N] [--seed N] [--profile-steps N] [--json PATH]
                                  [--rounds N] [--precision auto|bf16|fp16|float32]

Two input pipelines feed the same training step (forward, cross-entropy, backward, SGD with momentum 0.9,
lr 0.05, weight decay 1e-4 on conv weights; a fresh network with the same seed for each):

- ``device``: the whole split on the device as normalised floats (:class:`resnet_theory.engine.data.DeviceData`);
  batches drawn and augmented there with batched tensor operations (random crop after zero padding, flip).
- ``dataloader``: the conventional pipeline, a ``torch.utils.data.DataLoader`` over a ``Dataset`` that
  normalises, pads, crops and flips one image at a time on the CPU (``--workers`` processes; pinned memory
  and non-blocking copies on CUDA).

The data are synthetic (random uint8 images and labels, no dataset needed) with the shape of the real data:
``digits`` is 1x8x8 (1,437 images, as the digits training split; pad 1, no flip, since a mirrored digit is
another symbol), ``cifar`` is 3x32x32 (50,000 images on CUDA, 2,048 on CPU; pad 4, flip). Defaults: on CUDA
the full CIFAR network on CIFAR-shaped data at batch 128 in the engine's precision (``--precision auto``: bf16
autocast on GPUs that have it, fp16 autocast with a gradient scaler on older ones with fp16 tensor cores,
float32 otherwise; :mod:`resnet_theory.engine.devices`) with channels_last; on CPU the small network
(:data:`resnet_theory.engine.allconv.SMALL_CONFIG`) on digits-shaped data in float32, few steps.

Timing on a noisy machine: the two pipelines are built and warmed up first, then timed in ``--rounds``
rounds (default 5) of ``--steps`` steps each, taking turns, in reversed order every other round (device,
dataloader; dataloader, device; ...), so that a change in the machine's load during the run weighs on both.
Each figure is the median over the rounds, with its range and relative spread; the ratio is the median of
the per-round ratios. The pipelines are ranked only when every round puts the same one ahead (at least
three rounds; :func:`rank_pipelines`); otherwise the report says that the spread is too wide to rank them.
(A single back-to-back run on the 2-core CPU printed ratios of 0.15x, 0.17x and 1.13x within minutes.)

FLOPs come from :func:`resnet_theory.engine.allconv.flops_per_image` (2 FLOPs per multiply-add, convolutions and
head only); a training step is counted as 3x the forward pass. The ceiling is a measured dense matrix
product in the run's precision (the autocast dtype, or float32). ``--compile`` runs the network through
``torch.compile`` with ``--compile-mode``, on either device, as the engine's ``--compile`` does; on CUDA
``reduce-overhead`` and ``max-autotune`` add CUDA graphs, which the CPU has not (there the mode compiles without
them, and the report says so). Fused SGD is used on CUDA only. Without ``--compile`` the network runs eagerly.
Warm-up steps (compilation included) are not timed, but their time is reported; a timed round has no host
synchronisation inside it. cuDNN autotuning (``torch.backends.cudnn.benchmark``) is on during a CUDA run, as when
the engine trains (:func:`resnet_theory.engine.devices.backend_settings`, not deterministic), so the projected
schedule uses the kernels that training uses.

Output format
-------------
One ``key: value`` line per fact, then one line per pipeline, then the ratio and the ranking. An example,
measured with ``python -m resnet_theory.engine.bench --threads 1`` on a shared 2-core CPU (other jobs running; load
average 4.8)::

    resnet_theory.engine.bench: training throughput, device-resident data vs DataLoader
    device: cpu (CPU: x86_64, 2 cores, torch threads 1) | torch 2.13.0+cpu | CUDA none | precision float32 | channels_last off | compile off | cuDNN autotuning off
    model: small AllConvResNet: widths 16-32-64, 3 blocks per stage, 268,096 trainable parameters
    data: synthetic digits-shaped uint8 images (1x8x8), 1,437 held; augmentation pad 1, flip off
    flops: 5,033,216 forward per image; 15,099,648 per training image (3x forward)
    run: batch 128, 2 warm-up steps, then 5 rounds of 10 timed steps per pipeline, the pipelines taking turns (order reversed every other round); figures are medians over rounds
    warm-up: device 0.1 s, dataloader 0.1 s
    ceiling: 0.105 TFLOP/s (float32 matmul, measured: 1024x1024 by 1024x1024, best of 3 rounds of 5)
    note: subnormal floats flushed to zero on the CPU during the run, as in the training engine
    pipeline device: 7,792.2 images/s | 16.43 ms/step | 0.118 TFLOP/s | 112.2% of ceiling | 64k-step schedule 17.5 min | last loss 2.31 | rounds 7,661.4 to 7,926.8 images/s (spread 3.4% of the median)
    pipeline dataloader: 6,948.6 images/s | 18.42 ms/step | 0.105 TFLOP/s | 100.0% of ceiling | 64k-step schedule 19.6 min | last loss 2.3 | rounds 6,860.1 to 7,059.4 images/s (spread 2.9% of the median)
    ratio: device / dataloader = 1.11x images per second (median of 5 rounds; 1.09x to 1.14x, spread 5.1% of the median)
    ranking: device faster in every one of 5 rounds (ratio 1.09x to 1.14x)

``images/s`` counts training images (after augmentation) per second of the timed loop, data loading
included; ``TFLOP/s`` = images/s x training FLOPs per image; ``of ceiling`` = that over the measured matmul
rate (small convolutions on a busy CPU can come close to, or pass, a noisy ceiling); ``64k-step schedule``
= the time 64,000 steps of 128 images (the book's CIFAR schedule, the training engine's defaults: the paper's
batch, the end of He et al.'s schedule, since the paper prints its rate drops at 30,000 and 50,000 steps but not
its end) would take at this rate, for the model and data of the run; ``last loss`` is the loss of the last timed step (random labels: about ln(classes)); ``rounds``
gives the range over the rounds and ``spread`` = (max - min) / median (ms/step, TFLOP/s, the fraction of the
ceiling and the schedule are images/s rescaled, so their relative spread is the same; ``--json`` keeps every
round's images/s and ratio).
``--json PATH`` writes the same figures as JSON. ``--profile-steps N`` appends a ``profile (device pipeline):``
section: N more steps under ``torch.profiler``, the top operations by self device time (CUDA) or self CPU
time, to see where a step's time goes (convolution kernels, other kernels, launch overhead).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from resnet_theory import validate
from resnet_theory.engine import devices
from resnet_theory.engine.allconv import (
    SMALL_CONFIG,
    AllConvResNet,
    conv_weight_parameters,
    count_parameters,
    flops_per_image,
)
from resnet_theory.engine.data import DeviceData
from resnet_theory.engine.train import TrainConfig

#: The book's CIFAR schedule, as the training engine has it by default: 64,000 steps (the end of He et al.'s CIFAR
#: schedule: the paper prints only the rate drops at 30,000 and 50,000 steps, not the run's end) of 128 images.
SCHEDULE_STEPS, PAPER_BATCH = TrainConfig.steps, TrainConfig.batch_size
DATA_SHAPES = {"digits": (1, 8, 8), "cifar": (3, 32, 32)}
AUGMENTATION = {"digits": dict(pad=1, flip=False), "cifar": dict(pad=4, flip=True)}
PIPELINES = ("device", "dataloader")
#: Fewest rounds from which the ratio of the two pipelines is ranked (all rounds on one side of 1: with three,
#: a chance of 1 in 4 that two equally fast pipelines look ranked, 1 in 16 with five, the default).
MIN_ROUNDS_TO_RANK = 3
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: The modes that add CUDA graphs on CUDA.
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


# --- the conventional pipeline ----------------------------------------------------------------------------
class PerImageAugmentedDataset(torch.utils.data.Dataset):
    """A conventional ``Dataset``: one image at a time on the CPU, normalised, zero-padded, randomly
    cropped and flipped (PyTorch's global generator, reseeded per worker by the DataLoader)."""

    def __init__(self, images_uint8: np.ndarray, labels: np.ndarray, mean, std, pad: int, flip: bool):
        self.images, self.labels = images_uint8, torch.as_tensor(labels, dtype=torch.int64)
        self.mean = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
        self.std = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)
        self.pad, self.flip = pad, flip

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        image = (torch.from_numpy(self.images[i]).float() / 255.0 - self.mean) / self.std
        _, h, w = image.shape
        if self.pad:
            image = F.pad(image, (self.pad,) * 4)
            top, left = torch.randint(0, 2 * self.pad + 1, (2,)).tolist()
            image = image[:, top : top + h, left : left + w]
        if self.flip and torch.rand(()) < 0.5:
            image = image.flip(-1)
        return image, self.labels[i]


# --- the training step ---------------------------------------------------------------------------------------
def make_optimizer(
    model: torch.nn.Module, device: torch.device, lr: float = 0.05, momentum: float = 0.9, weight_decay: float = 1e-4
) -> torch.optim.Optimizer:
    """SGD with momentum; weight decay on conv weights only (as in the paper); fused on CUDA when available."""
    decay = {id(p) for p in conv_weight_parameters(model)}
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if id(p) in decay], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) not in decay], "weight_decay": 0.0},
    ]
    groups = [g for g in groups if g["params"]]
    if devices.fused_sgd(devices.DeviceFacts(device.type)):
        try:
            return torch.optim.SGD(groups, lr=lr, momentum=momentum, fused=True)
        except (TypeError, RuntimeError):  # pragma: no cover - older torch without fused SGD
            pass
    return torch.optim.SGD(groups, lr=lr, momentum=momentum)


def make_train_step(
    model, optimizer, device: torch.device, bf16: bool, channels_last: bool, precision: devices.Precision | None = None
):
    """One training step ``step(x, y) -> loss`` (a tensor; no host synchronisation), as the engine's: under
    autocast to ``precision.autocast`` (or bf16 when ``bf16`` and no ``precision`` is given), with a gradient
    scaler when ``precision.scaler`` (fp16)."""
    dtype = precision.autocast if precision is not None else (torch.bfloat16 if bf16 else None)
    scaler = torch.amp.GradScaler(device.type) if precision is not None and precision.scaler else None

    def step(x, y):
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss.detach()

    return step


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_ceiling(device: torch.device, dtype: torch.dtype, size: int, repetitions: int, rounds: int = 3) -> float:
    """Measured TFLOP/s of a dense ``size x size`` matrix product in ``dtype`` (2 size^3 FLOPs each): the best
    of ``rounds`` timings of ``repetitions`` back-to-back products (a ceiling: the least disturbed round)."""
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(size, size, device=device, dtype=dtype, generator=gen)
    b = torch.randn(size, size, device=device, dtype=dtype, generator=gen)
    for _ in range(2):
        a @ b
    best = float("inf")
    for _ in range(rounds):
        synchronize(device)
        start = time.perf_counter()
        for _ in range(repetitions):
            a @ b
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 * repetitions / best / 1e12


def profile_table(step, batches, steps: int, device: torch.device, rows: int = 12) -> str:
    """Run ``steps`` training steps under ``torch.profiler``; the top ``rows`` operations by self time on
    the device (CUDA kernels) or, on CPU, by self CPU time, with the wall time per step."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    synchronize(device)
    start = time.perf_counter()
    with profile(activities=activities) as prof:
        for _ in range(steps):
            step(*next(batches))
        synchronize(device)
    wall = (time.perf_counter() - start) / steps
    sort = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
    table = prof.key_averages().table(sort_by=sort, row_limit=rows, max_name_column_width=60)
    return f"{steps} steps, {1e3 * wall:.2f} ms per step under the profiler; sorted by {sort}\n{table}"


# --- the benchmark -------------------------------------------------------------------------------------------
@dataclass
class BenchResult:
    """Everything the benchmark measured (see the module docstring for the meaning of each figure)."""

    device: str
    device_name: str
    torch_version: str
    precision: str
    channels_last: bool
    compile: str
    model: str
    model_description: str
    trainable_parameters: int
    data: str
    input_shape: tuple
    images_held: int
    pad: int
    flip: bool
    batch_size: int
    warmup: int
    steps: int  # timed steps per pipeline in each round
    rounds: int
    forward_flops_per_image: int
    training_flops_per_image: int
    ceiling_tflops: float
    ceiling_description: str
    notes: list = field(default_factory=list)
    pipelines: dict = field(default_factory=dict)  # name -> figures
    ratio: float | None = None  # median over the rounds of each round's device / dataloader ratio
    ratio_rounds: list | None = None  # that ratio in each round
    ratio_spread: dict | None = None  # median, min, max, relative spread of the ratio
    ranking: dict | None = None  # rank_pipelines(ratio_rounds)
    profile: str | None = None  # torch.profiler table of the device pipeline, with --profile-steps
    cuda_version: str | None = None  # torch.version.cuda (None: a CPU build)
    cudnn_version: int | None = None
    cudnn_benchmark: bool = False  # cuDNN autotuning during the run (on CUDA, as the engine trains)
    warmup_seconds: dict = field(default_factory=dict)  # name -> seconds of its untimed warm-up (compilation)


def _device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return (
        f"CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"torch threads {torch.get_num_threads()}"
    )


def build_model(model: str, data: str, seed: int) -> AllConvResNet:
    """The full CIFAR network (``model="full"``) or the small one, for ``data``'s channel count."""
    torch.manual_seed(seed)
    channels = DATA_SHAPES[data][0]
    if model == "full":
        return AllConvResNet(num_classes=10, in_channels=channels)
    return AllConvResNet(**{**SMALL_CONFIG, "in_channels": channels})


@dataclass(frozen=True)
class _Settings:
    """A benchmark run's choices, after the device's defaults and validation."""

    device: torch.device
    facts: devices.DeviceFacts
    precision: devices.Precision
    model: str
    data: str
    pipelines: tuple
    steps: int
    warmup: int
    rounds: int
    batch_size: int
    workers: int
    images: int
    compile: bool
    compile_mode: str
    seed: int
    ceiling_size: int
    profile_steps: int

    @property
    def on_gpu(self) -> bool:
        return self.device.type == "cuda"


def run_benchmark(
    model: str | None = None,
    data: str | None = None,
    steps: int | None = None,
    warmup: int | None = None,
    batch_size: int = 128,
    device: str | None = None,
    compile: bool = False,
    compile_mode: str = "default",
    workers: int | None = None,
    images: int | None = None,
    pipelines=PIPELINES,
    seed: int = 0,
    ceiling_size: int | None = None,
    threads: int | None = None,
    profile_steps: int = 0,
    flush_denormal: bool = True,
    rounds: int | None = None,
    precision: str = "auto",
) -> BenchResult:
    """Run the benchmark (see the module docstring); ``None`` picks the device's default.

    ``threads`` sets ``torch.set_num_threads`` for the run (restored afterwards); on a busy shared CPU one
    thread avoids the stalls of several spinning threads competing for the same cores. ``profile_steps``
    more steps of the device pipeline run under ``torch.profiler`` after its timed loops (not timed).
    ``rounds`` (default 5) rounds of ``steps`` timed steps per pipeline, the pipelines taking turns (see
    :func:`time_interleaved`). ``precision``: as the engine's (:func:`resnet_theory.engine.devices.choose_precision`).
    ``flush_denormal`` (CPU only) flushes subnormal floats to zero during the run, as the training engine does:
    the paper's small initialisation makes many values subnormal, which x86 CPUs process far more slowly."""
    if threads is not None:  # torch.set_num_threads(100000) crashes the process (a segmentation fault)
        validate.positive_int("threads", threads, maximum=_most_per_core())
    settings = _settings(
        model=model,
        data=data,
        steps=steps,
        warmup=warmup,
        batch_size=batch_size,
        device=device,
        compile=compile,
        compile_mode=compile_mode,
        workers=workers,
        images=images,
        pipelines=pipelines,
        seed=seed,
        ceiling_size=ceiling_size,
        profile_steps=profile_steps,
        rounds=rounds,
        precision=precision,
    )
    cpu_flush = flush_denormal and settings.device.type == "cpu"
    # cuDNN autotuning as the engine trains (devices.backend_settings, not deterministic): on CUDA, on
    with (
        devices.cpu_settings(threads=threads, flush_denormal=cpu_flush) as flushed,
        devices.backend_settings(settings.facts, deterministic=False),
    ):
        result = _measure(settings)
    if flushed:
        result.notes.append("subnormal floats flushed to zero on the CPU during the run, as in the training engine")
    return result


def _settings(
    *,
    model,
    data,
    steps,
    warmup,
    batch_size,
    device,
    compile,
    compile_mode,
    workers,
    images,
    pipelines,
    seed,
    ceiling_size,
    profile_steps,
    rounds,
    precision,
) -> _Settings:
    """Every argument of :func:`run_benchmark` checked (TypeError / ValueError naming it), with the device's
    defaults filled in: CUDA when available, the full network on CIFAR-shaped data there, the small one on
    digits-shaped data on the CPU."""
    device = validate.torch_device("device", device or ("cuda" if torch.cuda.is_available() else "cpu"))
    validate.choice("device", device.type, ("cpu", "cuda"))
    on_gpu = device.type == "cuda"
    if on_gpu and device.index is None:  # an explicit index, as the engine has
        device = torch.device("cuda", torch.cuda.current_device())
    facts = devices.describe(device)
    precision = devices.choose_precision(validate.choice("precision", precision, devices.PRECISIONS), facts)
    rounds = validate.positive_int("rounds", rounds if rounds is not None else 5)
    model = validate.choice("model", model or ("full" if on_gpu else "small"), ("small", "full"))
    data = validate.choice("data", data or ("cifar" if model == "full" else "digits"), sorted(DATA_SHAPES))
    pipelines = tuple(pipelines)
    if not pipelines or any(p not in PIPELINES for p in pipelines):
        raise ValueError(f"pipelines must be a non-empty selection of {PIPELINES}, got {pipelines!r}")
    steps = validate.positive_int("steps", steps if steps is not None else (100 if on_gpu else 10))
    warmup = warmup if warmup is not None else ((20 if compile else 5) if on_gpu else 2)
    warmup = validate.non_negative_int("warmup", warmup)
    batch_size = validate.positive_int("batch_size", batch_size)
    workers = workers if workers is not None else (min(8, os.cpu_count() or 1) if on_gpu else 0)
    workers = validate.non_negative_int("workers", workers, maximum=_most_per_core())  # each a process
    default_images = {"digits": 1437, "cifar": 50_000 if on_gpu else 2048}[data]
    images = validate.positive_int("images", images if images is not None else max(default_images, batch_size))
    if images < batch_size:
        raise ValueError(f"images ({images}) must be at least one batch ({batch_size})")
    _check_memory(model, data, batch_size, images)
    compile_mode = validate.choice("compile_mode", compile_mode, COMPILE_MODES)
    profile_steps = validate.non_negative_int("profile_steps", profile_steps)
    ceiling_size = validate.positive_int(
        "ceiling_size", ceiling_size if ceiling_size is not None else (8192 if on_gpu else 1024)
    )
    return _Settings(
        device=device,
        facts=facts,
        precision=precision,
        model=model,
        data=data,
        pipelines=pipelines,
        steps=steps,
        warmup=warmup,
        rounds=rounds,
        batch_size=batch_size,
        workers=workers,
        images=images,
        compile=compile,
        compile_mode=compile_mode,
        seed=seed,
        ceiling_size=ceiling_size,
        profile_steps=profile_steps,
    )


def _most_per_core() -> int:
    """The most threads or DataLoader workers a run may ask for: four per core of this machine (at least 8)."""
    return max(8, 4 * (os.cpu_count() or 1))


def _check_memory(model: str, data: str, batch_size: int, images: int) -> None:
    """Refuse (:class:`~resnet_theory.validate.BudgetError`, naming the option) a run whose images or batches need
    more memory than this machine allows, before anything is allocated: a batch's activations kept for the
    backward pass (four float32 tensors per block: the two convolutions' outputs, the ReLU's and the sum's, at
    each stage's size, every stage after the first halving the side), and the synthetic images as bytes and as
    floats."""
    channels, height, width = DATA_SHAPES[data]
    config = {"widths": (64, 128, 256), "blocks_per_stage": 9} if model == "full" else SMALL_CONFIG
    per_image = channels * height * width
    limit = validate.memory_limit_bytes()
    activations = sum(
        4 * 4 * config["blocks_per_stage"] * w * -(-height // 2**i) * -(-width // 2**i)
        for i, w in enumerate(config["widths"])
    )
    validate.check_budget("batch_size", batch_size * (activations + 4 * per_image), limit, value=batch_size)
    validate.check_budget("images", images * per_image * (1 + 4), limit, value=images)


def _measure(s: _Settings) -> BenchResult:
    """The run itself: the facts of the run, the warmed-up pipelines timed in interleaved rounds, the figures."""
    net = build_model(s.model, s.data, s.seed)
    result = _describe_run(s, net)
    gen = torch.Generator().manual_seed(s.seed)
    raw = torch.randint(0, 256, (s.images, *DATA_SHAPES[s.data]), dtype=torch.uint8, generator=gen).numpy()
    labels = torch.randint(0, net.num_classes, (s.images,), generator=gen).numpy()
    resident = DeviceData(raw, labels, s.device)
    steppers = {}
    for name in s.pipelines:
        step, batches, seconds = _pipeline(name, s, raw, labels, resident, result.channels_last)
        steppers[name], result.warmup_seconds[name] = (step, batches), seconds

    def timed(name: str) -> tuple[float, float]:
        step, batches = steppers[name]
        synchronize(s.device)
        start = time.perf_counter()
        for _ in range(s.steps):
            loss = step(*next(batches))
        synchronize(s.device)
        return s.steps * s.batch_size / (time.perf_counter() - start), float(loss)

    per_round = time_interleaved(timed, s.pipelines, s.rounds)
    for name in s.pipelines:
        result.pipelines[name] = _pipeline_figures([r[name] for r in per_round], result)
    if s.profile_steps and "device" in steppers:
        result.profile = profile_table(*steppers["device"], s.profile_steps, s.device)
    steppers.clear()
    if len(result.pipelines) == 2:
        ratios = [r["device"][0] / r["dataloader"][0] for r in per_round]
        result.ratio = float(np.median(ratios))
        result.ratio_rounds = ratios
        result.ratio_spread = spread(ratios)
        result.ranking = rank_pipelines(ratios)
    return result


def _describe_run(s: _Settings, net: AllConvResNet) -> BenchResult:
    """The facts of the run (``net``: the network the pipelines train), before anything is timed (the matmul
    ceiling is measured here)."""
    shape, aug = DATA_SHAPES[s.data], AUGMENTATION[s.data]
    notes = []
    if s.compile and not s.on_gpu and s.compile_mode in CUDA_GRAPH_MODES:
        notes.append(f"--compile-mode {s.compile_mode} on the CPU compiles without CUDA graphs (they are CUDA's)")
    forward = flops_per_image(net, shape)
    desc = (
        f"{s.model} AllConvResNet: widths {'-'.join(map(str, net.widths))}, {net.blocks_per_stage[0]} blocks "
        f"per stage, {count_parameters(net):,} trainable parameters"
    )
    dtype = s.precision.autocast or torch.float32
    reps = 50 if s.on_gpu else 5
    ceiling = matmul_ceiling(s.device, dtype, s.ceiling_size, reps)
    size = s.ceiling_size
    return BenchResult(
        device=str(s.device),
        device_name=_device_name(s.device),
        torch_version=torch.__version__,
        cuda_version=torch.version.cuda,
        cudnn_version=torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        precision=s.precision.description,
        channels_last=devices.use_channels_last(s.facts, s.precision),
        compile=f"torch.compile mode={s.compile_mode}" if s.compile else "off",
        model=s.model,
        model_description=desc,
        trainable_parameters=count_parameters(net),
        data=s.data,
        input_shape=shape,
        images_held=s.images,
        pad=aug["pad"],
        flip=aug["flip"],
        batch_size=s.batch_size,
        warmup=s.warmup,
        steps=s.steps,
        rounds=s.rounds,
        forward_flops_per_image=forward,
        training_flops_per_image=3 * forward,
        ceiling_tflops=ceiling,
        ceiling_description=(
            f"{str(dtype).removeprefix('torch.')} matmul, measured: "
            f"{size}x{size} by {size}x{size}, best of 3 rounds of {reps}"
        ),
        notes=notes,
    )


def _pipeline(name: str, s: _Settings, raw: np.ndarray, labels: np.ndarray, resident: DeviceData, channels_last: bool):
    """``(step, batches, warm-up seconds)`` of one pipeline, warmed up: a fresh network with the run's seed, its
    optimiser and training step, and an endless stream of its batches on the device."""
    aug = AUGMENTATION[s.data]
    net = build_model(s.model, s.data, s.seed).to(s.device)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(net, s.device)
    runnable = torch.compile(net, mode=s.compile_mode) if s.compile else net
    step = make_train_step(runnable, optimizer, s.device, False, channels_last, s.precision)
    if name == "device":
        batch_gen = torch.Generator(device=s.device).manual_seed(s.seed)

        def epochs():
            while True:
                yield from resident.batches(s.batch_size, batch_gen, augment=True, **aug)
    else:
        dataset = PerImageAugmentedDataset(raw, labels, resident.mean, resident.std, **aug)
        loader = torch.utils.data.DataLoader(
            dataset,
            batch_size=s.batch_size,
            shuffle=True,
            drop_last=True,
            num_workers=s.workers,
            pin_memory=s.on_gpu,
            persistent_workers=s.workers > 0,
            generator=torch.Generator().manual_seed(s.seed),
        )

        def epochs():
            while True:
                for x, y in loader:
                    yield x.to(s.device, non_blocking=True), y.to(s.device, non_blocking=True)

    batches = epochs()
    synchronize(s.device)
    start = time.perf_counter()
    for _ in range(s.warmup):
        step(*next(batches))
    synchronize(s.device)
    return step, batches, time.perf_counter() - start


def _pipeline_figures(rounds: list[tuple[float, float]], result: BenchResult) -> dict:
    """One pipeline's figures from its ``(images/s, last loss)`` in every round (medians over the rounds)."""
    rates = [rate for rate, _ in rounds]
    per_second = float(np.median(rates))
    tflops = per_second * result.training_flops_per_image / 1e12
    return {
        "images_per_second": per_second,
        "ms_per_step": 1e3 * result.batch_size / per_second,
        "tflops": tflops,
        "fraction_of_ceiling": tflops / result.ceiling_tflops,
        "schedule_minutes": SCHEDULE_STEPS * PAPER_BATCH / per_second / 60,
        "last_loss": rounds[-1][1],
        "rounds_images_per_second": rates,
        "spread": spread(rates),
    }


def time_interleaved(timed, names, rounds: int) -> list[dict]:
    """``rounds`` rounds in which every pipeline is timed once (``timed(name) -> figures``), the pipelines
    taking turns, in reversed order every other round (A B, B A, A B, ...) so that a slow drift of the machine
    (another job starting, a clock changing) weighs on both alike. One dict per round: name -> figures."""
    names = list(names)
    out = []
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        out.append({name: timed(name) for name in order})
    return out


def spread(values) -> dict:
    """Median, minimum, maximum and the relative spread ``(max - min) / median`` of per-round figures."""
    values = np.asarray(values, dtype=float)
    median = float(np.median(values))
    return {
        "median": median,
        "min": float(values.min()),
        "max": float(values.max()),
        "relative": float((values.max() - values.min()) / median) if median else float("nan"),
    }


def _count(n: int, noun: str) -> str:
    """``n`` and its noun, singular for one: "1 round", "3 rounds"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def rank_pipelines(ratios, min_rounds: int = MIN_ROUNDS_TO_RANK) -> dict:
    """Whether the per-round ratios ``device / dataloader`` rank the pipelines: only when there are at least
    ``min_rounds`` rounds and every round puts the same pipeline ahead (all ratios above 1, or all below).
    Otherwise the spread is too wide to rank them, and the result says so. Returns ``{"ranked": bool,
    "faster": name or None, "text": one sentence}``."""
    ratios = [float(r) for r in ratios]
    lo, hi = min(ratios), max(ratios)
    span = f"{lo:.2f}x to {hi:.2f}x"
    if len(ratios) < min_rounds:
        return {
            "ranked": False,
            "faster": None,
            "text": f"not ranked: {_count(len(ratios), 'round')}, at least {min_rounds} are needed to rank",
        }
    if lo > 1:
        return {
            "ranked": True,
            "faster": "device",
            "text": f"device faster in every one of {len(ratios)} rounds (ratio {span})",
        }
    if hi < 1:
        return {
            "ranked": True,
            "faster": "dataloader",
            "text": f"dataloader faster in every one of {len(ratios)} rounds (ratio {span})",
        }
    return {
        "ranked": False,
        "faster": None,
        "text": f"not ranked: the ratio ranges from {span} over {len(ratios)} rounds, on both sides of 1; "
        "the spread is too wide to rank the pipelines on this machine now",
    }


def format_report(result: BenchResult) -> str:
    """The text the CLI prints (format in the module docstring)."""
    r = result
    c, h, w = r.input_shape
    lines = [
        "resnet_theory.engine.bench: training throughput, device-resident data vs DataLoader",
        f"device: {r.device} ({r.device_name}) | torch {r.torch_version} | CUDA {r.cuda_version or 'none'} | "
        f"precision {r.precision} | channels_last {'on' if r.channels_last else 'off'} | compile {r.compile} | "
        f"cuDNN autotuning {'on' if r.cudnn_benchmark else 'off'}",
        f"model: {r.model_description}",
        f"data: synthetic {r.data}-shaped uint8 images ({c}x{h}x{w}), {r.images_held:,} held; "
        f"augmentation pad {r.pad}, flip {'on' if r.flip else 'off'}",
        f"flops: {r.forward_flops_per_image:,} forward per image; {r.training_flops_per_image:,} per training "
        "image (3x forward)",
        f"run: batch {r.batch_size}, {_count(r.warmup, 'warm-up step')}, then {_count(r.rounds, 'round')} of "
        f"{_count(r.steps, 'timed step')} per "
        "pipeline, the pipelines taking turns (order reversed every other round); figures are medians over rounds",
        "warm-up: "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in r.warmup_seconds.items())
        + (" (compilation included)" if r.compile != "off" else ""),
        f"ceiling: {r.ceiling_tflops:.3f} TFLOP/s ({r.ceiling_description})",
    ]
    lines += [f"note: {n}" for n in r.notes]
    for name, p in r.pipelines.items():
        minutes = p["schedule_minutes"]
        schedule = f"{minutes:.1f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
        lines.append(
            f"pipeline {name}: {p['images_per_second']:,.1f} images/s | {p['ms_per_step']:.2f} ms/step | "
            f"{p['tflops']:.3f} TFLOP/s | {100 * p['fraction_of_ceiling']:.1f}% of ceiling | "
            f"64k-step schedule {schedule} | last loss {p['last_loss']:.3g} | rounds "
            f"{p['spread']['min']:,.1f} to {p['spread']['max']:,.1f} images/s "
            f"(spread {100 * p['spread']['relative']:.1f}% of the median)"
        )
    if r.ratio is not None:
        lines.append(
            f"ratio: device / dataloader = {r.ratio:.2f}x images per second (median of "
            f"{_count(r.rounds, 'round')}; {r.ratio_spread['min']:.2f}x to {r.ratio_spread['max']:.2f}x, spread "
            f"{100 * r.ratio_spread['relative']:.1f}% of the median)"
        )
        lines.append(f"ranking: {r.ranking['text']}")
    if r.profile is not None:
        lines.append(f"profile (device pipeline): {r.profile}")
    return "\n".join(lines)


def _parser() -> validate.OneLineParser:
    """The command line of ``python -m resnet_theory.engine.bench``."""
    parser = validate.OneLineParser(prog="python -m resnet_theory.engine.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["small", "full"], help="default: full on CUDA, small on CPU")
    parser.add_argument(
        "--data",
        choices=sorted(DATA_SHAPES),
        help="shape of the synthetic images (default: cifar for the full model, digits for the small one)",
    )
    parser.add_argument(
        "--steps",
        type=validate.int_option(1),
        help="timed steps per pipeline in each round (default: 100 on CUDA, 10 on CPU)",
    )
    parser.add_argument(
        "--rounds",
        type=validate.int_option(1),
        help=f"rounds, the pipelines taking turns (default 5; at least {MIN_ROUNDS_TO_RANK} to rank them)",
    )
    parser.add_argument(
        "--precision",
        choices=list(devices.PRECISIONS),
        default="auto",
        help="auto: bf16 on GPUs with it, fp16 + gradient scaler on older ones, float32 on CPU",
    )
    parser.add_argument(
        "--warmup",
        type=validate.int_option(0),
        help="untimed steps first (default: 5 on CUDA, 20 with --compile, 2 on CPU)",
    )
    parser.add_argument("--batch-size", type=validate.int_option(1), default=128)
    parser.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (the warm-up compiles)")
    parser.add_argument(
        "--compile-mode",
        default="default",
        choices=COMPILE_MODES,
        help="torch.compile mode (reduce-overhead and max-autotune add CUDA graphs; "
        "max-autotune tunes kernels, compiling for minutes)",
    )
    parser.add_argument(
        "--workers",
        type=validate.int_option(0),
        help="DataLoader worker processes (default: min(8, cores) on CUDA, 0 on CPU)",
    )
    parser.add_argument(
        "--images",
        type=validate.int_option(1),
        help="synthetic images held (default: 1,437 digits; 50,000 CIFAR on CUDA, 2,048 on CPU)",
    )
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="comma-separated subset of device,dataloader")
    parser.add_argument("--seed", type=validate.int_option(0), default=0)
    parser.add_argument(
        "--ceiling-size",
        type=validate.int_option(1),
        help="matrix size for the matmul ceiling (default 8192 CUDA, 1024 CPU)",
    )
    parser.add_argument("--threads", type=validate.int_option(1), help="torch CPU threads (default: torch's choice)")
    parser.add_argument(
        "--keep-denormals",
        action="store_true",
        help="CPU: do not flush subnormal floats to zero (the engine flushes them)",
    )
    parser.add_argument(
        "--profile-steps",
        type=validate.int_option(0),
        default=0,
        help="then profile this many steps of the device pipeline (torch.profiler table)",
    )
    parser.add_argument("--json", help="also write the figures as JSON to this path")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return int(exc.code or 0)
    if args.json:
        problem = json_path_problem(args.json)
        if problem:  # found before the run, not after minutes of it
            print(f"error: --json {args.json}: {problem}", file=sys.stderr)
            return 2
    try:
        result = run_benchmark(
            model=args.model,
            data=args.data,
            steps=args.steps,
            warmup=args.warmup,
            batch_size=args.batch_size,
            device=args.device,
            compile=args.compile,
            compile_mode=args.compile_mode,
            workers=args.workers,
            images=args.images,
            pipelines=[p.strip() for p in args.pipelines.split(",") if p.strip()],
            seed=args.seed,
            ceiling_size=args.ceiling_size,
            threads=args.threads,
            profile_steps=args.profile_steps,
            flush_denormal=not args.keep_denormals,
            rounds=args.rounds,
            precision=args.precision,
        )
    except (TypeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_report(result), flush=True)
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(asdict(result), f, indent=1)
        except OSError as exc:
            print(f"error: --json {args.json}: cannot write it ({validate.describe_os_error(exc)})", file=sys.stderr)
            return 1
    return 0


def json_path_problem(path: str) -> str | None:
    """Why the figures could not be written to ``path`` (a folder, a missing folder, a source or a file other
    than ``.json``: :func:`resnet_theory.outputs.check_command_output`; no permission), found by opening it for
    appending (nothing is truncated; a file created for the test is removed), or None."""
    from pathlib import Path

    from ..outputs import OutputRefused, check_command_output

    target = Path(path)
    if target.is_dir():
        return "is a folder"
    if target.parent.exists() and not target.parent.is_dir():
        return f"{target.parent} is not a folder"
    if not target.parent.is_dir():
        return f"the folder {target.parent} does not exist"
    try:  # never a chapter source, a file under book/, lib/ or tests/, a build's records, nor a file but .json
        check_command_output(target, "--json", suffix=".json")
    except OutputRefused as exc:
        return str(exc).removeprefix(f"--json {path}: ")
    existed = target.exists()
    try:
        with open(target, "a"):
            pass
    except OSError as exc:
        return f"cannot write it ({validate.describe_os_error(exc)})"
    if not existed:
        target.unlink(missing_ok=True)
    return None


if __name__ == "__main__":
    sys.exit(main())
