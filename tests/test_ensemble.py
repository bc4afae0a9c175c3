"""Batched multi-seed training (resnet_theory.engine.ensemble) against one-at-a-time training
(resnet_theory.engine.train)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from resnet_theory.benchmarks import ensemble as ensemble_bench
from resnet_theory.engine import allconv, ensemble
from resnet_theory.engine import train as engine

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(**changes) -> engine.TrainConfig:
    config = engine.TrainConfig(
        dataset="digits",
        stem_channels=4,
        widths=(4, 8),
        blocks_per_stage=1,
        steps=12,
        lr=0.05,
        lr_milestones=(6, 10),
        eval_every=6,
        log_every=3,
        checkpoint_every=0,
        progress=False,
        on_divergence="stop",
    )
    return dataclasses.replace(config, **changes)


def assert_same_run(batched: engine.TrainResult, single: engine.TrainResult, rtol=1e-4):
    """Same weights (relative to each tensor's scale), same logged losses, same evaluations."""
    a, b = batched.model.state_dict(), single.model.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        scale = float(b[key].abs().max()) or 1.0
        assert float((a[key] - b[key]).abs().max()) <= rtol * scale, key

    def kinds(r):
        return [(h["kind"], h["step"]) for h in r.history if h["kind"] != "start"]

    assert kinds(batched) == kinds(single)
    for x, y in zip(batched.history, single.history):
        for field in ("loss", "test_loss"):
            if field in x and np.isfinite(y[field]):
                assert x[field] == pytest.approx(y[field], rel=rtol)
        if "test_accuracy" in x:
            assert abs(x["test_accuracy"] - y["test_accuracy"]) <= 1 / 360 + 1e-12  # at most one image flips
    assert batched.diverged == single.diverged
    assert batched.steps_done == single.steps_done


def test_batched_members_match_one_at_a_time_training():
    configs = [tiny(seed=0), tiny(seed=1, lr=0.02), tiny(seed=2, init="standard")]
    batched = ensemble.train_members(configs)
    for config, result in zip(configs, batched):
        assert_same_run(result, engine.train(config))


def test_plain_members_and_trained_heads_match_too():
    configs = [
        tiny(seed=3, skip=False, init="standard", trainable_head=True),
        tiny(seed=4, skip=False, init="standard", trainable_head=True, lr=0.01),
    ]
    for config, result in zip(configs, ensemble.train_members(configs)):
        assert_same_run(result, engine.train(config))


def test_a_diverging_member_stops_like_the_engine_and_leaves_the_others_alone():
    configs = [tiny(seed=5, lr=40.0, init="standard"), tiny(seed=6)]
    wild, calm = ensemble.train_members(configs)
    alone_wild, alone_calm = engine.train(configs[0]), engine.train(configs[1])
    assert alone_wild.diverged and wild.diverged
    assert wild.steps_done == alone_wild.steps_done
    assert [h["kind"] for h in wild.history][-1] == "diverged"
    assert np.isnan(wild.final_test_accuracy)
    assert_same_run(calm, alone_calm)


def test_members_compute_in_the_engines_precision():
    # bf16 autocast (what the engine uses on GPUs with bf16), here on the CPU: the batched members match the
    # engine's bf16 runs as closely as in float32 (a float32 ensemble differs from them by about 2e-2 to 7e-2
    # of each tensor's scale after these 12 steps, far outside the tolerance)
    configs = [tiny(seed=0, precision="bf16"), tiny(seed=1, precision="bf16", lr=0.02)]
    for config, result in zip(configs, ensemble.train_members(configs)):
        assert result.history[0]["precision"] == "bf16"
        assert_same_run(result, engine.train(config))
    with pytest.raises(ValueError, match="precision 'fp16' needs a gradient scaler"):
        ensemble.train_members([tiny(precision="fp16")])


def test_grouped_forward_is_each_members_forward():
    torch.manual_seed(0)
    for skip in (True, False):
        members = [
            allconv.AllConvResNet(
                num_classes=5,
                in_channels=2,
                stem_channels=3,
                widths=(3, 6),
                blocks_per_stage=2,
                skip=skip,
                init="standard",
            )
            for _ in range(3)
        ]
        net = ensemble.GroupedResNet(members)
        x = torch.randn(4, 3, 2, 7, 7)  # (N, G, C, H, W): odd sizes exercise the ceil-mode pooling
        out = net(x.flatten(1, 2))
        assert out.shape == (4, 3, 5)
        for g, m in enumerate(members):
            torch.testing.assert_close(out[:, g], m(x[:, g]), rtol=1e-5, atol=1e-6)
            state = net.member_state_dict(g)
            for key, value in m.state_dict().items():
                torch.testing.assert_close(state[key], value)


@pytest.mark.parametrize("size, kernel, bias", [(8, 3, True), (8, 3, False), (7, 5, True), (3, 3, False)])
def test_tiny_maps_take_the_dense_path_with_the_same_values_and_gradients(size, kernel, bias, monkeypatch):
    # 8 x 8 inputs through three stages end on 2 x 2 maps (and 7 x 7 on 2 x 2, 3 x 3 on 1 x 1): there the
    # grouped network multiplies by dense matrices instead of convolving (DENSE_MAX_PIXELS)
    torch.manual_seed(1)
    members = [
        allconv.AllConvResNet(
            num_classes=4,
            in_channels=2,
            stem_channels=3,
            widths=(3, 5, 6),
            blocks_per_stage=2,
            kernel_size=kernel,
            bias=bias,
            init="standard",
            trainable_head=True,
        )
        for _ in range(3)
    ]
    net = ensemble.GroupedResNet(members)
    x = torch.randn(5, 3, 2, size, size)
    dense_maps = []
    table = ensemble._dense_table
    monkeypatch.setattr(ensemble, "_dense_table", lambda h, w, *a: dense_maps.append(h * w) or table(h, w, *a))
    out = net(x.flatten(1, 2))
    assert dense_maps and max(dense_maps) <= ensemble.DENSE_MAX_PIXELS
    out.square().sum().backward()
    for g, m in enumerate(members):
        mine = m(x[:, g])
        torch.testing.assert_close(out[:, g], mine, rtol=1e-5, atol=1e-6)
        mine.square().sum().backward()
    grads = {name: p.grad for name, p in net.named_parameters()}
    for g, m in enumerate(members):  # each member's gradient is its block of the grouped gradient
        per = net.stem.out_channels // 3
        torch.testing.assert_close(
            grads["stem.weight"][g * per : (g + 1) * per], m.stem.weight.grad, rtol=1e-4, atol=1e-6
        )
        last = net.blocks[-1][1]
        per = last.out_channels // 3
        torch.testing.assert_close(
            last.weight.grad[g * per : (g + 1) * per], m.stages[2][1].conv2.weight.grad, rtol=1e-4, atol=1e-6
        )
        if bias:
            torch.testing.assert_close(
                last.bias.grad[g * per : (g + 1) * per], m.stages[2][1].conv2.bias.grad, rtol=1e-4, atol=1e-6
            )


def test_workers_do_not_change_the_results():
    seeds = [0, 1, 2]
    one = ensemble.train_seeds(tiny(steps=6, eval_every=0), seeds)
    two = ensemble.train_seeds(tiny(steps=6, eval_every=0), seeds, workers=2)
    for a, b in zip(one, two):
        assert a.final_test_accuracy == pytest.approx(b.final_test_accuracy, abs=1 / 360 + 1e-12)
        assert a.final_train_loss == pytest.approx(b.final_train_loss, rel=1e-4)
        assert b.model is None


def test_train_seeds_groups_configurations_and_keeps_their_order():
    configs = [
        tiny(steps=3, eval_every=0),
        tiny(steps=3, eval_every=0, skip=False, init="standard"),
        tiny(steps=3, eval_every=0, lr=0.02),
    ]
    out = ensemble.train_seeds(configs, [7, 8])
    assert [[(r.config.seed, r.config.lr, r.config.skip) for r in row] for row in out] == [
        [(7, 0.05, True), (8, 0.05, True)],
        [(7, 0.05, False), (8, 0.05, False)],
        [(7, 0.02, True), (8, 0.02, True)],
    ]
    assert out[0][0].history[0]["batched_members"] == 4  # the two residual configurations, both seeds


def test_bad_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="at least one"):
        ensemble.train_members([])
    with pytest.raises(TypeError):
        ensemble.train_members([{"lr": 0.1}])
    with pytest.raises(ValueError, match="differ"):
        ensemble.train_members([tiny(), tiny(steps=5)])
    with pytest.raises(ValueError, match="on_divergence"):
        ensemble.train_members([tiny(on_divergence="raise")])
    with pytest.raises(ValueError, match="out_dir"):
        ensemble.train_members([tiny(out_dir="somewhere")])
    with pytest.raises(engine.ConfigError):
        ensemble.train_members([tiny(lr=-1.0)])
    with pytest.raises(ValueError, match="workers"):
        ensemble.train_seeds(tiny(), [0], workers=0)
    with pytest.raises(TypeError, match="workers"):  # a wrong type is a TypeError
        ensemble.train_seeds(tiny(), [0], workers=2.0)
    with pytest.raises(TypeError, match=r"seeds\[1\]"):  # was truncated to 1 without a word
        ensemble.train_seeds(tiny(), [0, 1.5])
    with pytest.raises(ValueError, match="level"):  # checked before the result is read
        ensemble.steps_to_level(None, float("nan"))
    with pytest.raises(TypeError, match="level"):
        ensemble.steps_to_level(None, "0.5")
    with pytest.raises(ValueError, match="at least one"):
        ensemble.train_seeds(tiny(), [])
    a = allconv.AllConvResNet(in_channels=1, stem_channels=4, widths=(4, 8), blocks_per_stage=1)
    b = allconv.AllConvResNet(in_channels=1, stem_channels=4, widths=(4, 8), blocks_per_stage=2)
    with pytest.raises(ValueError, match="architecture"):
        ensemble.GroupedResNet([a, b])
    with pytest.raises(TypeError):
        ensemble.GroupedResNet([])
    with pytest.raises(ValueError, match="expected"):
        ensemble.GroupedResNet([a, a])(torch.zeros(2, 1, 8, 8))
    with pytest.raises(IndexError):
        ensemble.GroupedResNet([a]).member_state_dict(1)


# --- statistics ----------------------------------------------------------------------------------------
def test_bootstrap_median_interval_and_standard_error():
    rng = np.random.default_rng(0)
    constant = ensemble.bootstrap_median([0.9] * 10)
    assert constant["se"] < 1e-12 and constant["low"] == constant["high"] == constant["median"] == 0.9
    # The bootstrap standard error of a median of n normal draws is near 1.2533 sigma / sqrt(n) on average.
    ses = [ensemble.bootstrap_median(rng.normal(0, 1, 40), seed=i, resamples=1000)["se"] for i in range(40)]
    assert np.mean(ses) == pytest.approx(1.2533 / np.sqrt(40), rel=0.25)
    st = ensemble.bootstrap_median(rng.normal(3, 1, 25))
    assert st["low"] <= st["median"] <= st["high"] and st["n"] == 25
    assert ensemble.bootstrap_median([1, 2, 3], seed=4) == ensemble.bootstrap_median([1, 2, 3], seed=4)


def test_bootstrap_median_difference_sign_and_interval():
    rng = np.random.default_rng(1)
    d = ensemble.bootstrap_median_difference(rng.normal(1, 0.1, 20), rng.normal(0, 0.1, 20))
    assert d["low"] > 0.8 and d["high"] < 1.2 and d["se"] > 0
    same = ensemble.bootstrap_median_difference([1.0] * 5, [1.0] * 7)
    assert same["median"] == 0 and same["se"] < 1e-12 and same["n"] == 5
    with pytest.raises(ValueError, match="finite"):
        ensemble.bootstrap_median_difference([1.0, float("nan")], [1.0])
    with pytest.raises(ValueError, match="at least one"):
        ensemble.bootstrap_median([])


def test_steps_to_level_reads_the_training_curve():
    def result(history):
        return engine.TrainResult(tiny(), history, 30, 0.5, 1.0, 0.4, False, "", None, 1.0, 1.0, 1)

    curve = [
        {"kind": "start", "step": 0},
        {"kind": "train", "step": 10, "loss": 2.0},
        {"kind": "train", "step": 20, "loss": 0.49},
        {"kind": "train", "step": 30, "loss": 0.1},
    ]
    assert ensemble.steps_to_level(result(curve), 0.5) == 20
    assert ensemble.steps_to_level(result(curve), 0.05) is None
    diverged = curve[:2] + [{"kind": "diverged", "step": 20, "loss": float("nan"), "message": ""}]
    assert ensemble.steps_to_level(result(diverged), 0.5) is None
    with pytest.raises(ValueError, match="level"):
        ensemble.steps_to_level(result(curve), -1.0)


def test_benchmark_runs_and_reports_every_way(capsys):
    rows = ensemble_bench.run(members=2, steps=2, blocks=1)
    assert [r["way"] for r in rows] == [
        "one at a time, 1 thread",
        "grouped conv, 1 thread",
        "grouped conv, 2 threads",
        "vmap, 1 thread",
        "grouped conv, 2 processes",
    ]
    assert rows[0]["speedup"] == 1.0 and all(r["seeds_per_second"] > 0 for r in rows)
    assert "seeds/s" in ensemble_bench.format_rows(rows)
    with pytest.raises(SystemExit):
        ensemble_bench.main(["--members", "0"])


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"resamples": 1}, "resamples"),  # one resample has no spread: a NaN standard error
        ({"resamples": 0}, "resamples"),
        ({"resamples": 2.5}, "resamples"),
        ({"level": 1.5}, "level"),
        ({"level": 0.0}, "level"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bootstrap_medians_refuse_bad_settings_in_one_line(kwargs, words):
    """Found by the issue 32 probe: these gave NaN, a numpy traceback or a MemoryError."""
    from resnet_theory.engine.ensemble import bootstrap_median, bootstrap_median_difference

    for call in (
        lambda: bootstrap_median([1.0, 2.0, 3.0], **kwargs),
        lambda: bootstrap_median_difference([1.0], [2.0], **kwargs),
    ):
        with pytest.raises((ValueError, TypeError), match=words) as info:
            call()
        assert "\n" not in str(info.value)
