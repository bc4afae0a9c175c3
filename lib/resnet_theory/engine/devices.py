"""Where and in which precision the training code runs: the CPU/CUDA decisions as pure functions.

What depends on the machine is read in one place, :func:`describe`, into a :class:`DeviceFacts` (device type
and index, GPU name, compute capability, memory, whether NCCL is built in). Every decision the training engine
(:mod:`resnet_theory.engine.train`), the batched ensemble and the benchmark make is a function of such facts only:

- :func:`resolve_device`: ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` to a ``torch.device`` with an
  explicit index (``torch.cuda.set_device`` refuses a CUDA device without one); under ``torchrun`` each
  process takes the GPU of its ``LOCAL_RANK``;
- :func:`choose_precision`: ``"auto"`` is bf16 autocast on GPUs that compute in bf16 natively (compute
  capability 8.0 and newer: A100, H100, H200, RTX 30xx and later), fp16 autocast with a gradient scaler on
  GPUs with fp16 tensor cores but no bf16 (7.x: V100, T4, RTX 20xx), float32 on older GPUs and on the CPU.
  ``"bf16"``, ``"fp16"`` and ``"float32"`` choose explicitly; bf16 on a GPU without it is refused;
- :func:`fused_sgd`, :func:`use_channels_last`, :func:`cudnn_benchmark`, :func:`ddp_backend`.

So the tests run every CUDA decision on a CPU, with a :class:`DeviceFacts` written by hand for a GPU; no test
needs one. :func:`backend_settings` applies the global switches (cuDNN autotuning, deterministic kernels) for
the length of a run and restores them afterwards; :func:`cpu_settings` does the same for the CPU's (the
number of threads, subnormal floats flushed to zero), for the engine and the benchmark alike.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

import torch

from .. import validate

PRECISIONS = ("auto", "bf16", "fp16", "float32")
#: Compute capability from which a GPU computes in bf16 natively (NVIDIA Ampere).
BF16_CAPABILITY = (8, 0)
#: Compute capability from which a GPU has fp16 tensor cores (NVIDIA Volta).
FP16_CAPABILITY = (7, 0)
#: cuBLAS workspace setting that makes its results reproducible (NVIDIA's cuBLAS documentation).
CUBLAS_DETERMINISTIC = ":4096:8"


@dataclass(frozen=True)
class DeviceFacts:
    """What the decisions need to know about one device. ``describe(device)`` reads them from the machine;
    tests write them by hand (``DeviceFacts("cuda", 0, "NVIDIA H100", (9, 0))``)."""

    type: str  # "cpu" or "cuda"
    index: int | None = None  # CUDA device index (None on the CPU)
    name: str = ""
    capability: tuple[int, int] | None = None  # CUDA compute capability (major, minor)
    memory_bytes: int | None = None
    nccl: bool = False  # torch.distributed was built with NCCL

    @property
    def cuda(self) -> bool:
        return self.type == "cuda"


@dataclass(frozen=True)
class Precision:
    """The arithmetic of a training step: ``autocast`` dtype (None: plain float32) and whether a gradient
    scaler is needed (fp16 only: its small range underflows gradients without one)."""

    name: str  # "bf16", "fp16" or "float32"
    autocast: torch.dtype | None
    scaler: bool
    reason: str  # one phrase: why this precision

    @property
    def description(self) -> str:
        return {"bf16": "bf16 autocast", "fp16": "fp16 autocast + gradient scaler", "float32": "float32"}[self.name]


_DEVICE_PATTERN = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")


def cuda_device_count() -> int:
    """CUDA devices visible to this process (0 without CUDA or with a CPU-only build of torch)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(
    requested, *, cuda_devices: int, local_rank: int = 0, world: int = 1, current: int = 0
) -> torch.device:
    """The device a process trains on, with an explicit index for CUDA. Pure: ``cuda_devices`` is the number
    of visible CUDA devices, ``current`` the current one (``torch.cuda.current_device()``), ``local_rank`` and
    ``world`` come from ``torchrun``. Raises ValueError naming what to change."""
    text = requested if isinstance(requested, str) else None
    match = _DEVICE_PATTERN.match(text.strip().lower()) if text is not None else None
    if match is None or (match.group(1) in ("auto", "cpu") and match.group(2) is not None):
        raise ValueError(f"device must be 'auto', 'cpu' or a CUDA device ('cuda', 'cuda:N'), got {requested!r}")
    kind, index = match.group(1), None if match.group(2) is None else int(match.group(2))
    if kind == "cpu" or (kind == "auto" and cuda_devices == 0):
        return torch.device("cpu")
    if cuda_devices == 0:
        raise ValueError(
            f"device {requested!r} asked for but CUDA is not available here (torch "
            f"{torch.__version__}{' is a CPU-only build' if torch.version.cuda is None else ' sees no GPU'})"
        )
    visible = f"{cuda_devices} CUDA {'device is' if cuda_devices == 1 else 'devices are'} visible"
    if world > 1:
        if local_rank >= cuda_devices:
            raise ValueError(
                f"LOCAL_RANK {local_rank} but only {visible}: start at most {cuda_devices} processes per machine "
                "(torchrun --nproc_per_node)"
            )
        if index is not None and index != local_rank:
            raise ValueError(
                f"under torchrun every process trains on the GPU of its LOCAL_RANK (here cuda:"
                f"{local_rank}); pass device 'cuda' or 'auto', not {requested!r}"
            )
        return torch.device("cuda", local_rank)
    index = current if index is None else index
    if index >= cuda_devices:
        raise ValueError(f"device {requested!r}: only {visible} (cuda:0 to cuda:{cuda_devices - 1})")
    return torch.device("cuda", index)


def describe(device: torch.device) -> DeviceFacts:
    """The facts of ``device`` as this machine reports them (the one function here that asks CUDA)."""
    device = torch.device(device)
    nccl = bool(torch.distributed.is_available() and torch.distributed.is_nccl_available())
    if device.type != "cuda":
        return DeviceFacts("cpu", None, "CPU", None, None, nccl)
    index = torch.cuda.current_device() if device.index is None else device.index
    props = torch.cuda.get_device_properties(index)
    return DeviceFacts("cuda", index, props.name, (props.major, props.minor), int(props.total_memory), nccl)


def choose_precision(requested, facts: DeviceFacts, scaler_allowed: bool = True) -> Precision:
    """The precision of a run on ``facts``' device (see the module docstring). Raises ValueError for an
    unknown name or bf16 on a GPU without it. ``scaler_allowed=False`` is for code without a gradient scaler
    (the batched ensemble's own SGD): there ``"auto"`` never picks fp16 (float32 instead) and ``"fp16"`` is
    refused."""
    if not isinstance(requested, str) or requested not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {requested!r}")
    if not scaler_allowed:
        if requested == "fp16":
            raise ValueError(
                "precision 'fp16' needs a gradient scaler, which batched training does not have: "
                "use 'bf16' (on GPUs of compute capability 8.0 and newer) or 'float32'"
            )
        chosen = choose_precision(requested, facts)
        if chosen.scaler:
            return Precision("float32", None, False, chosen.reason + "; fp16 needs a gradient scaler, so float32")
        return chosen
    bf16 = Precision("bf16", torch.bfloat16, False, "")
    fp16 = Precision("fp16", torch.float16, True, "")
    fp32 = Precision("float32", None, False, "")

    def because(p: Precision, reason: str) -> Precision:
        return Precision(p.name, p.autocast, p.scaler, reason)

    if not facts.cuda:
        if requested == "auto":
            return because(fp32, "the CPU trains in float32")
        return because({"bf16": bf16, "fp16": fp16, "float32": fp32}[requested], "asked for (on the CPU)")
    capability = facts.capability or (0, 0)
    shown = f"{facts.name or 'this GPU'} (compute capability {capability[0]}.{capability[1]})"
    if requested == "bf16" and capability < BF16_CAPABILITY:
        raise ValueError(
            f"precision 'bf16' needs a GPU of compute capability 8.0 or newer; {shown} has no "
            f"native bf16: use precision 'fp16' (with a gradient scaler) or 'float32'"
        )
    if requested != "auto":
        return because({"bf16": bf16, "fp16": fp16, "float32": fp32}[requested], "asked for")
    if capability >= BF16_CAPABILITY:
        return because(bf16, f"{shown} computes in bf16 natively")
    if capability >= FP16_CAPABILITY:
        return because(fp16, f"{shown} has fp16 tensor cores but no native bf16")
    return because(fp32, f"{shown} has neither bf16 nor fp16 tensor cores")


def fused_sgd(facts: DeviceFacts) -> bool:
    """Use ``torch.optim.SGD(fused=True)`` (one kernel for all parameters): on CUDA."""
    return facts.cuda


def use_channels_last(facts: DeviceFacts, precision: Precision) -> bool:
    """Channels-last tensors: on CUDA when the convolutions run on tensor cores (bf16 or fp16 autocast),
    whose kernels want that layout."""
    return facts.cuda and precision.autocast is not None


def cudnn_benchmark(facts: DeviceFacts, deterministic: bool) -> bool:
    """Let cuDNN time its algorithms and keep the fastest: on CUDA, unless the run must be reproducible
    (the choice can differ between processes, and with it the rounding)."""
    return facts.cuda and not deterministic


def ddp_backend(facts: DeviceFacts) -> str:
    """The ``torch.distributed`` backend: NCCL between GPUs when torch has it, gloo otherwise."""
    return "nccl" if facts.cuda and facts.nccl else "gloo"


def ddp_device_ids(device: torch.device) -> list[int] | None:
    """``DistributedDataParallel(device_ids=...)``: the process's one GPU, or None on the CPU."""
    if device.type != "cuda":
        return None
    if device.index is None:
        raise ValueError("a CUDA device for DistributedDataParallel needs an explicit index (cuda:N)")
    return [device.index]


@contextlib.contextmanager
def backend_settings(facts: DeviceFacts, deterministic: bool):
    """For the length of a run: cuDNN autotuning (:func:`cudnn_benchmark`) and, with ``deterministic`` on
    CUDA, deterministic cuDNN kernels and PyTorch's warnings about non-deterministic ones (and the cuBLAS
    workspace setting, when not set already). The previous settings are restored afterwards."""
    saved = (
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    try:
        if facts.cuda:
            torch.backends.cudnn.benchmark = cudnn_benchmark(facts, deterministic)
            if deterministic:
                os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_DETERMINISTIC)
                torch.backends.cudnn.deterministic = True
                torch.use_deterministic_algorithms(True, warn_only=True)
        yield
    finally:
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[0], saved[1]
        torch.use_deterministic_algorithms(saved[2], warn_only=saved[3])


def denormals_flushed() -> bool:
    """Whether the CPU flushes subnormal floats to zero now (``torch.set_flush_denormal`` has no getter: with
    flushing on, the float32 subnormal 1e-40 reads back as 0)."""
    return torch.tensor(1e-40, dtype=torch.float32).item() == 0.0


@contextlib.contextmanager
def cpu_settings(threads: int | None = None, flush_denormal: bool = False):
    """For the length of a run: ``threads`` torch CPU threads (None: as they are) and, with ``flush_denormal``,
    subnormal floats flushed to zero on the CPU (``torch.set_flush_denormal``: the paper's small
    initialisation makes many weights and gradients subnormal, and x86 CPUs process those about ten times more
    slowly). Yields whether flushing is on during the run (False on a CPU that cannot flush, or when not
    asked). The thread count and the flushing setting are restored afterwards, also when the run raises."""
    if threads is not None:
        threads = validate.positive_int("threads", threads)
    saved_threads, saved_flush = torch.get_num_threads(), denormals_flushed()
    try:
        if threads is not None:
            torch.set_num_threads(threads)
        yield bool(flush_denormal) and torch.set_flush_denormal(True)
    finally:
        torch.set_flush_denormal(saved_flush)
        if threads is not None:
            torch.set_num_threads(saved_threads)


def grad_scaler(facts: DeviceFacts, precision: Precision) -> torch.amp.GradScaler | None:
    """A gradient scaler for fp16 autocast, on the run's device type; None otherwise."""
    return torch.amp.GradScaler(facts.type) if precision.scaler else None
