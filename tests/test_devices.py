"""Every CPU/CUDA decision of resnet_theory.engine.devices, run on the CPU with hand-written descriptions of GPUs.

No test here needs a GPU: the decisions are pure functions of a DeviceFacts (and of the number of visible CUDA
devices, the local rank and the world size), so each GPU a user may have is one line below.
"""

from __future__ import annotations

import os

import pytest
import torch

from resnet_theory.engine import devices
from resnet_theory.engine.devices import DeviceFacts, choose_precision, resolve_device

CPU = DeviceFacts("cpu")
H100 = DeviceFacts("cuda", 0, "NVIDIA H100 80GB HBM3", (9, 0), 80 * 2**30, nccl=True)
A100 = DeviceFacts("cuda", 1, "NVIDIA A100-SXM4-40GB", (8, 0), 40 * 2**30, nccl=True)
RTX3090 = DeviceFacts("cuda", 0, "NVIDIA GeForce RTX 3090", (8, 6), 24 * 2**30, nccl=True)
V100 = DeviceFacts("cuda", 0, "Tesla V100-SXM2-16GB", (7, 0), 16 * 2**30, nccl=True)
T4 = DeviceFacts("cuda", 0, "Tesla T4", (7, 5), 15 * 2**30, nccl=True)
P100 = DeviceFacts("cuda", 0, "Tesla P100-PCIE-16GB", (6, 0), 16 * 2**30, nccl=True)
WINDOWS_GPU = DeviceFacts("cuda", 0, "NVIDIA GeForce RTX 4090", (8, 9), 24 * 2**30, nccl=False)


# --- the device and its index ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "requested, count, local_rank, world, current, expected",
    [
        ("cuda", 1, 0, 1, 0, "cuda:0"),  # the one-GPU case that crashed: now with its index
        ("auto", 1, 0, 1, 0, "cuda:0"),
        ("auto", 4, 0, 1, 2, "cuda:2"),  # the current device (torch.cuda.set_device / CUDA_VISIBLE_DEVICES)
        ("cuda:3", 4, 0, 1, 0, "cuda:3"),
        ("CUDA:1", 2, 0, 1, 0, "cuda:1"),
        (" cuda ", 1, 0, 1, 0, "cuda:0"),
        ("auto", 0, 0, 1, 0, "cpu"),  # no GPU: auto is the CPU
        ("cpu", 8, 0, 1, 0, "cpu"),  # asked for the CPU on a GPU machine
        ("cuda", 8, 5, 8, 0, "cuda:5"),  # torchrun: every process its LOCAL_RANK's GPU
        ("auto", 2, 1, 2, 0, "cuda:1"),
        ("cuda:1", 2, 1, 2, 0, "cuda:1"),  # an explicit index that agrees with LOCAL_RANK
        ("cpu", 0, 1, 2, 0, "cpu"),  # several CPU processes (gloo)
        ("auto", 0, 1, 2, 0, "cpu"),
    ],
)
def test_resolve_device_gives_an_explicit_index(requested, count, local_rank, world, current, expected):
    device = resolve_device(requested, cuda_devices=count, local_rank=local_rank, world=world, current=current)
    assert device == torch.device(expected)
    if device.type == "cuda":
        assert device.index is not None  # torch.cuda.set_device and DDP(device_ids=) need it


@pytest.mark.parametrize(
    "requested, count, local_rank, world, words",
    [
        ("cuda", 0, 0, 1, "asked for but CUDA is not available here"),
        ("cuda:0", 0, 0, 1, "asked for but CUDA is not available here"),
        ("cuda:2", 2, 0, 1, "only 2 CUDA devices are visible (cuda:0 to cuda:1)"),
        ("cuda", 2, 2, 4, "LOCAL_RANK 2 but only 2 CUDA devices are visible"),
        ("cuda:1", 1, 0, 1, "only 1 CUDA device is visible (cuda:0 to cuda:0)"),
        ("cuda:0", 2, 1, 2, "every process trains on the GPU of its LOCAL_RANK (here cuda:1)"),
        ("tpu", 1, 0, 1, "device must be 'auto', 'cpu' or a CUDA device ('cuda', 'cuda:N'), got 'tpu'"),
        ("cpu:0", 1, 0, 1, "device must be 'auto', 'cpu' or a CUDA device"),
        ("cuda:-1", 1, 0, 1, "device must be 'auto', 'cpu' or a CUDA device"),
        ("", 1, 0, 1, "device must be"),
        (0, 1, 0, 1, "device must be"),
        (None, 1, 0, 1, "device must be"),
    ],
)
def test_resolve_device_refuses_what_cannot_run(requested, count, local_rank, world, words):
    with pytest.raises(ValueError) as info:
        resolve_device(requested, cuda_devices=count, local_rank=local_rank, world=world)
    assert words in str(info.value)


def test_describe_the_cpu_and_this_machines_count():
    facts = devices.describe(torch.device("cpu"))
    assert facts.type == "cpu" and not facts.cuda and facts.index is None
    assert devices.cuda_device_count() == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="reads a real GPU's facts (runs on a GPU machine)")
def test_describe_a_real_gpu():  # pragma: no cover - GPU machines only
    facts = devices.describe(torch.device("cuda"))
    assert facts.cuda and facts.index == torch.cuda.current_device()
    assert facts.capability == torch.cuda.get_device_capability(facts.index) and facts.memory_bytes > 0


# --- the precision -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "facts, name, autocast, scaler",
    [
        (H100, "bf16", torch.bfloat16, False),
        (A100, "bf16", torch.bfloat16, False),
        (RTX3090, "bf16", torch.bfloat16, False),
        (T4, "fp16", torch.float16, True),  # fp16 tensor cores, no bf16: fp16 with a gradient scaler
        (V100, "fp16", torch.float16, True),
        (P100, "float32", None, False),  # neither
        (CPU, "float32", None, False),
    ],
)
def test_auto_precision_follows_the_hardware(facts, name, autocast, scaler):
    p = choose_precision("auto", facts)
    assert (p.name, p.autocast, p.scaler) == (name, autocast, scaler)
    assert p.reason


@pytest.mark.parametrize("facts", [H100, V100, T4, P100, CPU])
@pytest.mark.parametrize("requested, autocast, scaler", [("fp16", torch.float16, True), ("float32", None, False)])
def test_explicit_precisions_are_honoured(facts, requested, autocast, scaler):
    p = choose_precision(requested, facts)
    assert (p.name, p.autocast, p.scaler) == (requested, autocast, scaler)


@pytest.mark.parametrize("facts", [V100, T4, P100])
def test_bf16_is_refused_on_a_gpu_without_it(facts):
    with pytest.raises(
        ValueError,
        match=r"precision 'bf16' needs a GPU of compute capability 8.0 or newer; "
        rf"{facts.name} \(compute capability {facts.capability[0]}\.\d\)",
    ):
        choose_precision("bf16", facts)


def test_bf16_where_supported_and_on_the_cpu_when_asked():
    assert choose_precision("bf16", H100).autocast == torch.bfloat16
    assert choose_precision("bf16", CPU).autocast == torch.bfloat16  # CPU autocast exists (slow; for tests)


@pytest.mark.parametrize("bad", ["fp8", "BF16", "", None, 16])
def test_unknown_precisions_are_refused(bad):
    with pytest.raises(ValueError, match="precision must be one of 'auto', 'bf16', 'fp16', 'float32'"):
        choose_precision(bad, H100)


@pytest.mark.parametrize(
    "facts, name", [(H100, "bf16"), (V100, "float32"), (T4, "float32"), (P100, "float32"), (CPU, "float32")]
)
def test_without_a_gradient_scaler_auto_never_picks_fp16(facts, name):
    p = choose_precision("auto", facts, scaler_allowed=False)
    assert p.name == name and not p.scaler
    with pytest.raises(ValueError, match="precision 'fp16' needs a gradient scaler"):
        choose_precision("fp16", facts, scaler_allowed=False)


# --- the other switches ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "facts, fused, backend",
    [
        (H100, True, "nccl"),
        (V100, True, "nccl"),
        (WINDOWS_GPU, True, "gloo"),
        (CPU, False, "gloo"),
        (DeviceFacts("cpu", nccl=True), False, "gloo"),  # NCCL built in, but the ranks train on CPUs
    ],
)
def test_fused_optimizer_and_ddp_backend(facts, fused, backend):
    assert devices.fused_sgd(facts) is fused
    assert devices.ddp_backend(facts) == backend


@pytest.mark.parametrize(
    "facts, precision, expected",
    [
        (H100, "auto", True),
        (V100, "auto", True),
        (H100, "float32", False),
        (P100, "auto", False),
        (CPU, "auto", False),
        (CPU, "bf16", False),
    ],
)
def test_channels_last_only_for_tensor_core_convolutions(facts, precision, expected):
    assert devices.use_channels_last(facts, choose_precision(precision, facts)) is expected


@pytest.mark.parametrize(
    "facts, deterministic, expected", [(H100, False, True), (H100, True, False), (CPU, False, False)]
)
def test_cudnn_autotuning_unless_the_run_must_be_reproducible(facts, deterministic, expected):
    assert devices.cudnn_benchmark(facts, deterministic) is expected


def test_ddp_device_ids_need_an_index():
    assert devices.ddp_device_ids(torch.device("cpu")) is None
    assert devices.ddp_device_ids(torch.device("cuda", 3)) == [3]
    with pytest.raises(ValueError, match="explicit index"):
        devices.ddp_device_ids(torch.device("cuda"))


def test_backend_settings_are_restored_after_a_run(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    before = (
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
        torch.are_deterministic_algorithms_enabled(),
    )
    with devices.backend_settings(H100, deterministic=True):
        assert torch.backends.cudnn.benchmark is False and torch.backends.cudnn.deterministic is True
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()  # warns about, does not stop at, an op
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == devices.CUBLAS_DETERMINISTIC
    assert (
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
        torch.are_deterministic_algorithms_enabled(),
    ) == before
    with devices.backend_settings(H100, deterministic=False):
        assert torch.backends.cudnn.benchmark is True
    assert torch.backends.cudnn.benchmark == before[0]
    with devices.backend_settings(CPU, deterministic=True):  # the CPU is deterministic already: nothing set
        assert not torch.are_deterministic_algorithms_enabled()


def test_grad_scaler_only_for_fp16():
    assert devices.grad_scaler(CPU, choose_precision("float32", CPU)) is None
    assert isinstance(devices.grad_scaler(CPU, choose_precision("fp16", CPU)), torch.amp.GradScaler)


# --- the CPU settings of a run (threads, subnormal floats): one context manager for train and bench -----------
SUBNORMAL = 1e-40  # a float32 subnormal: read back as 0 while the CPU flushes subnormals to zero

CAN_FLUSH = torch.set_flush_denormal(True)
torch.set_flush_denormal(False)


def other_thread_count() -> int:
    return 1 if torch.get_num_threads() != 1 else 2


def test_cpu_settings_set_threads_and_flushing_for_the_run_and_restore_them():
    before, threads = torch.get_num_threads(), other_thread_count()
    assert not devices.denormals_flushed() and torch.tensor(SUBNORMAL).item() != 0.0
    with devices.cpu_settings(threads=threads, flush_denormal=True) as flushed:
        assert torch.get_num_threads() == threads
        assert flushed is CAN_FLUSH and devices.denormals_flushed() is CAN_FLUSH
        assert (torch.tensor(SUBNORMAL).item() == 0.0) is CAN_FLUSH
    assert torch.get_num_threads() == before
    assert not devices.denormals_flushed() and torch.tensor(SUBNORMAL).item() != 0.0


def test_cpu_settings_restore_threads_and_flushing_when_the_run_raises():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="the run failed"):
        with devices.cpu_settings(threads=other_thread_count(), flush_denormal=True):
            raise RuntimeError("the run failed")
    assert torch.get_num_threads() == before
    assert not devices.denormals_flushed() and torch.tensor(SUBNORMAL).item() != 0.0


def test_cpu_settings_leave_what_they_are_not_asked_to_change():
    before = torch.get_num_threads()
    with devices.cpu_settings() as flushed:
        assert flushed is False and not devices.denormals_flushed() and torch.get_num_threads() == before
    if not CAN_FLUSH:
        pytest.skip("this CPU cannot flush subnormal floats to zero")
    torch.set_flush_denormal(True)  # a caller's own flushing survives a run inside it, on exit and on error
    try:
        with devices.cpu_settings(threads=other_thread_count(), flush_denormal=True):
            pass
        assert devices.denormals_flushed()
        with pytest.raises(KeyError):
            with devices.cpu_settings(flush_denormal=True):
                raise KeyError("x")
        assert devices.denormals_flushed()
    finally:
        torch.set_flush_denormal(False)


@pytest.mark.parametrize(
    "threads, error, message",
    [
        (0, ValueError, r"threads must be a positive integer \(at least 1\), got 0"),
        (1.5, TypeError, "threads must be a positive integer, got 1.5"),
        (True, TypeError, "threads must be a positive integer, got True"),
    ],
)
def test_cpu_settings_refuse_a_bad_thread_count_before_changing_anything(threads, error, message):
    before = torch.get_num_threads()
    with pytest.raises(error, match=message):
        with devices.cpu_settings(threads=threads, flush_denormal=True):
            pass
    assert torch.get_num_threads() == before and not devices.denormals_flushed()


# --- the expressivity chapter's torch backend on a GPU ---------------------------------------------------------
def test_expressivity_torch_backend_keeps_full_float32_products_and_checks_its_device():
    # The float32 screen of expressivity.separation bounds its error with float32's unit roundoff; TF32 matrix
    # products (torch.set_float32_matmul_precision("high"), often set for training on GPUs) round to 10 bits.
    from resnet_theory import expressivity as ex

    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        ops = ex._backend("torch", "cpu")
        with ops.limits():
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "high"  # the caller's setting is back
    finally:
        torch.set_float32_matmul_precision(saved)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device='cuda' was requested but CUDA is not available here"):
            ex._backend("torch", "cuda")
