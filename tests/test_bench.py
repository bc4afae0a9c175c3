"""Tests for resnet_theory.engine.bench: the throughput benchmark (device-resident data vs a DataLoader)."""

import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from resnet_theory.engine import devices
from resnet_theory.engine.allconv import SMALL_CONFIG, AllConvResNet, conv_weight_parameters, flops_per_image
from resnet_theory.engine.bench import (
    MIN_ROUNDS_TO_RANK,
    PerImageAugmentedDataset,
    build_model,
    format_report,
    main,
    make_optimizer,
    make_train_step,
    matmul_ceiling,
    rank_pipelines,
    run_benchmark,
    spread,
    time_interleaved,
)

from conftest import bad_int_options, one_line_error

TINY = [
    "--device",
    "cpu",
    "--steps",
    "2",
    "--warmup",
    "1",
    "--images",
    "64",
    "--batch-size",
    "16",
    "--ceiling-size",
    "128",
    "--threads",
    "1",
    "--rounds",
    "3",
]
PIPELINE_LINE = re.compile(
    r"^pipeline (device|dataloader): ([\d,.]+) images/s \| ([\d.]+) ms/step \| ([\d.]+) TFLOP/s"
    r" \| ([\d.]+)% of ceiling \| 64k-step schedule ([\d.]+) (min|h) \| last loss ([\d.]+)"
    r" \| rounds ([\d,.]+) to ([\d,.]+) images/s \(spread ([\d.]+)% of the median\)$",
    re.MULTILINE,
)


def test_cli_runs_end_to_end_and_prints_the_ratio():
    proc = subprocess.run(
        [sys.executable, "-m", "resnet_theory.engine.bench", *TINY], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"torch {torch.__version__}" in out and "device: cpu" in out
    assert "synthetic digits-shaped uint8 images (1x8x8)" in out  # the CPU default says what it ran on
    assert re.search(
        r"^ratio: device / dataloader = \d+\.\d\dx images per second \(median of 3 rounds; "
        r"\d+\.\d\dx to \d+\.\d\dx, spread [\d.]+% of the median\)$",
        out,
        re.MULTILINE,
    )
    assert re.search(
        r"^ranking: (device faster in every one of 3 rounds|dataloader faster in every one of 3 "
        r"rounds|not ranked: the ratio ranges from .* on both sides of 1;.*too wide to rank.*)",
        out,
        re.MULTILINE,
    )
    assert "1 warm-up step, then 3 rounds of 2 timed steps per pipeline, the pipelines taking turns" in out
    assert "| compile off |" in out and "compilation included" not in out  # eager without --compile
    found = PIPELINE_LINE.findall(out)
    assert [f[0] for f in found] == ["device", "dataloader"]
    for f in found:
        rate, lo, hi = (float(f[i].replace(",", "")) for i in (1, 8, 9))
        assert 0 < lo <= rate <= hi and math.isfinite(float(f[7]))


def test_figures_are_consistent(tmp_path):
    path = tmp_path / "bench.json"
    assert main([*TINY, "--json", str(path)]) == 0
    result = json.loads(path.read_text())
    model = AllConvResNet(**SMALL_CONFIG)
    assert result["forward_flops_per_image"] == flops_per_image(model, (1, 8, 8))
    assert result["training_flops_per_image"] == 3 * result["forward_flops_per_image"]
    assert result["model"] == "small" and result["data"] == "digits" and result["precision"] == "float32"
    assert result["pad"] == 1 and result["flip"] is False
    assert result["rounds"] == 3 and result["steps"] == 2
    for p in result["pipelines"].values():
        rounds = p["rounds_images_per_second"]
        assert len(rounds) == 3 and p["images_per_second"] == pytest.approx(np.median(rounds))
        assert p["spread"] == pytest.approx(spread(rounds))
        assert p["tflops"] == pytest.approx(p["images_per_second"] * result["training_flops_per_image"] / 1e12)
        assert p["fraction_of_ceiling"] == pytest.approx(p["tflops"] / result["ceiling_tflops"])
        assert p["ms_per_step"] == pytest.approx(1e3 * 16 / p["images_per_second"])
        assert p["schedule_minutes"] == pytest.approx(64_000 * 128 / p["images_per_second"] / 60)
        assert 0 < p["last_loss"] < 10
    # the ratio is taken within each round (the two pipelines timed next to each other), then the median
    per_round = [
        d / c
        for d, c in zip(
            result["pipelines"]["device"]["rounds_images_per_second"],
            result["pipelines"]["dataloader"]["rounds_images_per_second"],
        )
    ]
    assert result["ratio_rounds"] == pytest.approx(per_round)
    assert result["ratio"] == pytest.approx(np.median(per_round))
    assert result["ratio_spread"] == pytest.approx(spread(per_round))
    assert result["ranking"] == rank_pipelines(per_round)


def test_compile_on_the_cpu_compiles_in_the_mode_asked_and_profile_is_printed(capsys, monkeypatch):
    # --compile compiles on the CPU too, as the engine's --compile does (torch.compile itself is recorded and
    # left out here: a CPU compile takes about 20 s; the GPU check's rehearsal with --compile runs it for real)
    asked = []

    def compile_spy(model, mode=None):
        asked.append((type(model).__name__, mode))
        return model

    monkeypatch.setattr(torch, "compile", compile_spy)
    assert (
        main([*TINY, "--compile", "--compile-mode", "reduce-overhead", "--pipelines", "device", "--profile-steps", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert asked == [("AllConvResNet", "reduce-overhead")]
    assert "compile torch.compile mode=reduce-overhead" in out and "(compilation included)" in out
    assert "note: --compile-mode reduce-overhead on the CPU compiles without CUDA graphs" in out
    assert "ratio:" not in out  # one pipeline only: no ratio to print
    profile = out.split("profile (device pipeline): ", 1)[1]
    assert profile.startswith("1 steps,") and "sorted by self_cpu_time_total" in profile
    assert "aten::mkldnn_convolution" in profile or "aten::convolution" in profile


def test_cifar_shaped_small_model_report():
    threads = torch.get_num_threads()
    result = run_benchmark(
        device="cpu",
        data="cifar",
        steps=1,
        warmup=0,
        batch_size=4,
        images=8,
        pipelines=["device"],
        ceiling_size=64,
        threads=1,
    )
    assert torch.get_num_threads() == threads  # restored
    assert "torch threads 1" in result.device_name
    assert result.input_shape == (3, 32, 32) and result.pad == 4 and result.flip is True
    assert result.forward_flops_per_image == flops_per_image(build_model("small", "cifar", 0), (3, 32, 32))
    text = format_report(result)
    assert "synthetic cifar-shaped uint8 images (3x32x32), 8 held; augmentation pad 4, flip on" in text


def test_full_model_is_the_paper_network():
    model = build_model("full", "cifar", 0)
    assert model.widths == (64, 128, 256) and model.blocks_per_stage == (9, 9, 9) and model.in_channels == 3


def test_conventional_dataset_does_the_same_crop_and_flip():
    rng = np.random.default_rng(0)
    raw = rng.integers(0, 256, (40, 2, 5, 5), dtype=np.uint8)
    mean, std = [0.4, 0.6], [0.2, 0.3]
    dataset = PerImageAugmentedDataset(raw, np.arange(40), mean, std, pad=2, flip=True)
    torch.manual_seed(0)
    flipped = set()
    for i in range(len(dataset)):
        image, label = dataset[i]
        assert label == i and image.shape == (2, 5, 5)
        normalised = (torch.from_numpy(raw[i]).float() / 255 - torch.tensor(mean).view(2, 1, 1)) / torch.tensor(
            std
        ).view(2, 1, 1)
        padded = torch.nn.functional.pad(normalised, (2, 2, 2, 2))
        matches = [
            f
            for r in range(5)
            for q in range(5)
            for f in (False, True)
            if torch.allclose(image, padded[:, r : r + 5, q : q + 5].flip(-1) if f else padded[:, r : r + 5, q : q + 5])
        ]
        assert matches, f"item {i} is not a (mirrored) window of its padded image"
        flipped.update(matches)
    assert flipped == {False, True}


def test_optimizer_decays_conv_weights_only_and_step_trains():
    torch.manual_seed(0)
    model = AllConvResNet(**SMALL_CONFIG)
    opt = make_optimizer(model, torch.device("cpu"))
    decayed = {id(p) for g in opt.param_groups if g["weight_decay"] > 0 for p in g["params"]}
    assert decayed == {id(p) for p in conv_weight_parameters(model)}
    assert all(g["momentum"] == 0.9 and g["lr"] == 0.05 for g in opt.param_groups)
    step = make_train_step(model, opt, torch.device("cpu"), bf16=False, channels_last=False)
    head, stem = model.head.weight.clone(), model.stem.weight.clone()
    loss = step(torch.randn(8, 1, 8, 8), torch.arange(8))
    assert loss.shape == () and not loss.requires_grad
    assert torch.equal(model.head.weight, head) and not torch.equal(model.stem.weight, stem)


def test_matmul_ceiling_is_a_positive_rate():
    rate = matmul_ceiling(torch.device("cpu"), torch.float32, 64, 2)
    assert math.isfinite(rate) and rate > 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(model="huge"), "model must be one of 'small', 'full', got 'huge'"),
        (dict(data="imagenet"), "data must be one of"),
        (dict(steps=0), "steps must be a positive integer"),
        (dict(warmup=-1), "warmup must be a non-negative integer"),
        (dict(batch_size=0), "batch_size must be a positive integer"),
        (dict(images=8, batch_size=16), r"images \(8\) must be at least one batch \(16\)"),
        (dict(workers=-2), "workers must be a non-negative integer"),
        (dict(pipelines=("gpu",)), "pipelines must be a non-empty selection"),
        (dict(pipelines=()), "pipelines must be a non-empty selection"),
        (dict(device="meta"), "device must be one of 'cpu', 'cuda', got 'meta'"),
        (dict(device="tpu9"), "device must be 'cpu' or a CUDA device, got 'tpu9'"),
        (dict(ceiling_size=0), "ceiling_size must be a positive integer"),
        (dict(threads=0), "threads must be a positive integer"),
        (dict(profile_steps=-1), "profile_steps must be a non-negative integer"),
        (dict(compile_mode="fastest"), "compile_mode must be one of"),
        (dict(rounds=0), "rounds must be a positive integer"),
        (dict(precision="fp8"), "precision must be one of 'auto', 'bf16', 'fp16', 'float32', got 'fp8'"),
    ],
)
def test_bad_benchmark_arguments(kwargs, message):
    # (a wrong type is a TypeError: see test_benchmark_arguments_follow_the_validation_rule)
    with pytest.raises(ValueError, match=message):
        run_benchmark(**{"device": "cpu", **kwargs})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(profile_steps=1.0), "profile_steps must be a non-negative integer, got 1.0"),  # was a ValueError
        (dict(profile_steps=True), "profile_steps must be a non-negative integer, got True"),
        (dict(model=3), "model must be one of 'small', 'full', got 3"),
        (dict(compile_mode=None), "compile_mode must be one of"),
        (dict(precision=16), "precision must be one of"),
        (dict(rounds=2.0), "rounds must be a positive integer"),
    ],
)
def test_benchmark_arguments_follow_the_validation_rule(kwargs, message):
    with pytest.raises(TypeError, match=message):
        run_benchmark(**{"device": "cpu", **kwargs})


def test_cuda_request():
    if torch.cuda.is_available():  # on a GPU machine: a tiny run on the fast path's precision and layout
        result = run_benchmark(
            device="cuda",
            model="small",
            data="digits",
            steps=1,
            warmup=1,
            images=64,
            batch_size=16,
            ceiling_size=256,
            workers=0,
        )
        facts = devices.describe(torch.device("cuda"))
        expected = devices.choose_precision("auto", facts)
        assert result.precision == expected.description and result.ratio > 0
        assert result.channels_last == devices.use_channels_last(facts, expected)
    else:
        with pytest.raises(ValueError, match="device='cuda' was requested but CUDA is not available here"):
            run_benchmark(device="cuda")


@pytest.mark.parametrize(
    "argv, words",
    bad_int_options(
        {
            "--steps": 1,
            "--warmup": 0,
            "--batch-size": 1,
            "--workers": 0,
            "--images": 1,
            "--seed": 0,
            "--ceiling-size": 1,
            "--threads": 1,
            "--profile-steps": 0,
        }
    )
    + [
        (["--batch-size", "x"], "argument --batch-size: expected an integer, got 'x'"),
        (["--workers", "-2"], "argument --workers: must be an integer >= 0, got '-2'"),
        (["--model", "huge"], "argument --model: invalid choice"),
        (["--pipelines", "gpu"], "pipelines must be a non-empty selection"),
        (["--compile-mode", "fastest"], "argument --compile-mode: invalid choice"),
        (["--rounds", "0"], "argument --rounds: must be an integer >= 1, got '0'"),
        (["--precision", "fp8"], "argument --precision: invalid choice"),
    ],
)
def test_cli_reports_bad_arguments_in_one_line_with_status_2(capsys, argv, words):
    err = one_line_error(capsys, main, ["--device", "cpu", *argv])
    assert words in err, err


def test_cpu_runs_flush_subnormals_like_the_engine_and_restore_the_setting():
    from resnet_theory.engine.bench import run_benchmark

    tiny = dict(steps=1, warmup=0, images=128, pipelines=("device",), threads=1, ceiling_size=64)
    result = run_benchmark(device="cpu", **tiny)
    assert any("subnormal" in n for n in result.notes)
    assert torch.tensor(1e-40).item() != 0.0, "the flush must be switched off again after the run"
    kept = run_benchmark(device="cpu", flush_denormal=False, **tiny)
    assert not any("subnormal" in n for n in kept.notes)


# --- several rounds, and when they rank the pipelines ----------------------------------------------------
def test_rounds_alternate_the_order_of_the_pipelines():
    calls = []

    def timed(name):
        calls.append(name)
        return len(calls)

    rounds = time_interleaved(timed, ["device", "dataloader"], 4)
    assert calls == ["device", "dataloader", "dataloader", "device", "device", "dataloader", "dataloader", "device"]
    assert rounds == [
        {"device": 1, "dataloader": 2},
        {"dataloader": 3, "device": 4},
        {"device": 5, "dataloader": 6},
        {"dataloader": 7, "device": 8},
    ]


def test_spread_is_median_range_and_relative_width():
    assert spread([2.0, 1.0, 4.0]) == {"median": 2.0, "min": 1.0, "max": 4.0, "relative": 1.5}


@pytest.mark.parametrize(
    "ratios, ranked, faster",
    [
        ([1.2, 1.1, 1.3], True, "device"),  # every round puts the device pipeline ahead
        ([0.5, 0.9, 0.7, 0.8, 0.6], True, "dataloader"),
        ([0.15, 0.17, 1.13], False, None),  # the spread the issue saw: both sides of 1
        ([1.01, 0.99, 1.02, 1.05, 1.03], False, None),  # one round the other way is enough to refuse
        ([1.5, 1.6], False, None),  # too few rounds, however clear
        ([1.0, 1.2, 1.3], False, None),  # a tie in one round is not "ahead"
    ],
)
def test_the_pipelines_are_ranked_only_when_every_round_agrees(ratios, ranked, faster):
    verdict = rank_pipelines(ratios)
    assert verdict["ranked"] is ranked and verdict["faster"] == faster
    if ranked:
        assert verdict["text"].startswith(f"{faster} faster in every one of {len(ratios)} rounds")
    elif len(ratios) < MIN_ROUNDS_TO_RANK:
        assert ratios == [1.5, 1.6]  # the one case with too few rounds (one round: the test below)
        assert verdict["text"] == f"not ranked: 2 rounds, at least {MIN_ROUNDS_TO_RANK} are needed to rank"
    else:
        assert "too wide to rank" in verdict["text"]


def test_one_round_reports_its_figures_but_does_not_rank(tmp_path):
    result = run_benchmark(
        device="cpu", steps=1, warmup=0, images=32, batch_size=16, ceiling_size=64, threads=1, rounds=1
    )
    assert result.rounds == 1 and len(result.ratio_rounds) == 1 and result.ratio_spread["relative"] == 0.0
    assert result.ranking["ranked"] is False and "at least 3" in result.ranking["text"]
    assert "ranking: not ranked: 1 round," in format_report(result)


@pytest.mark.parametrize(
    "precision, autocast, scaler", [("bf16", torch.bfloat16, False), ("fp16", torch.float16, True)]
)
def test_the_train_step_runs_in_the_chosen_precision(precision, autocast, scaler):
    # the CUDA precisions' code path, run on the CPU: autocast to the dtype, and fp16's gradient scaler
    chosen = devices.choose_precision(precision, devices.DeviceFacts("cpu"))
    assert chosen.autocast == autocast and chosen.scaler is scaler
    torch.manual_seed(0)
    model = AllConvResNet(**SMALL_CONFIG)
    seen = []
    model.head.register_forward_hook(lambda m, i, o: seen.append(i[0].dtype))
    opt = make_optimizer(model, torch.device("cpu"))
    step = make_train_step(model, opt, torch.device("cpu"), bf16=False, channels_last=False, precision=chosen)
    stem = model.stem.weight.clone()
    loss = step(torch.randn(8, 1, 8, 8), torch.arange(8))
    assert loss.dtype == torch.float32 and math.isfinite(loss.item())
    assert seen == [autocast]
    assert not torch.equal(model.stem.weight, stem), "the step updated the weights"


def test_cudnn_autotuning_is_set_as_when_the_engine_trains(monkeypatch):
    """run_benchmark enters devices.backend_settings(facts, deterministic=False), the engine's switch for a training
    run, and reports the setting it ran with; on a GPU that turns torch.backends.cudnn.benchmark on (simulated here:
    the spy sets it as backend_settings does on CUDA, then checks it is restored)."""
    import contextlib

    calls = []
    real = devices.backend_settings

    @contextlib.contextmanager
    def spy(facts, deterministic):
        calls.append((facts, deterministic))
        saved = torch.backends.cudnn.benchmark
        with real(facts, deterministic):
            torch.backends.cudnn.benchmark = devices.cudnn_benchmark(
                devices.DeviceFacts("cuda", 0, "GPU", (9, 0)), deterministic
            )
            try:
                yield
            finally:
                torch.backends.cudnn.benchmark = saved

    before = torch.backends.cudnn.benchmark
    monkeypatch.setattr(devices, "backend_settings", spy)
    result = run_benchmark(device="cpu", steps=1, warmup=1, rounds=1, images=32, batch_size=16, ceiling_size=64)
    assert [(f.type, d) for f, d in calls] == [("cpu", False)]
    assert result.cudnn_benchmark is True and torch.backends.cudnn.benchmark == before
    assert "cuDNN autotuning on" in format_report(result)
    monkeypatch.setattr(devices, "backend_settings", real)
    plain = run_benchmark(device="cpu", steps=1, warmup=1, rounds=1, images=32, batch_size=16, ceiling_size=64)
    assert plain.cudnn_benchmark is False and "cuDNN autotuning off" in format_report(plain)  # CPU: nothing to tune


def test_the_report_names_the_versions_and_the_warm_up_time():
    result = run_benchmark(device="cpu", steps=1, warmup=2, rounds=1, images=32, batch_size=16, ceiling_size=64)
    assert result.cuda_version == torch.version.cuda and set(result.warmup_seconds) == {"device", "dataloader"}
    assert all(s > 0 for s in result.warmup_seconds.values())
    report = format_report(result)
    assert f"| CUDA {torch.version.cuda or 'none'} |" in report
    assert re.search(r"^warm-up: device \d+\.\d s, dataloader \d+\.\d s$", report, re.MULTILINE)
