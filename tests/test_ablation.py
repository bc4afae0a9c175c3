"""The digits ablation runs (resnet_theory.engine.ablation): training-set scoring of batched multi-seed runs."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from resnet_theory.engine import ablation, ensemble
from resnet_theory.engine import train as engine
from test_ensemble import tiny as ensemble_tiny

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(**changes) -> engine.TrainConfig:
    """test_ensemble's small digits run, without evaluations during training."""
    return ensemble_tiny(**{"eval_every": 0, **changes})


def test_training_fit_counts_the_errors_of_the_model_on_the_training_set():
    """A hand count over the training split: argmax of the model's logits against the labels."""
    from resnet_theory.engine import data

    config = tiny()
    torch.manual_seed(0)
    model = engine.build_model(config, in_channels=1)
    fit = ablation.training_fit(model, config, batch_size=100)
    images, labels = data.load_digits_images()["train"]
    split = data.DeviceData(images, labels, "cpu")
    with torch.no_grad():
        logits = model(split.images)
    assert fit["n"] == len(labels) == 1437
    assert fit["train_error"] == pytest.approx(float((logits.argmax(1) != split.labels).float().mean()))
    expected = float(torch.nn.functional.cross_entropy(logits, split.labels))
    assert fit["train_loss"] == pytest.approx(expected, rel=1e-5)


def test_runs_match_ensemble_runs_and_carry_their_training_fit():
    configs = [tiny(), tiny(lr=0.02, init="printed-standard")]
    seeds = [3, 4, 5]
    ours = ablation.train_seeds(configs, seeds, workers=2)
    reference = ensemble.train_seeds(configs, seeds, workers=1)
    for runs, refs, config in zip(ours, reference, configs):
        assert [r.config.seed for r in runs] == seeds
        for r, ref in zip(runs, refs):
            assert r.final_train_loss == pytest.approx(ref.final_train_loss, rel=1e-4)
            fit = ablation.training_fit(ref.model, dataclasses.replace(config, seed=ref.config.seed))
            assert ablation.final_training_error(r) == pytest.approx(fit["train_error"], abs=1 / 1437 + 1e-12)
            assert ablation.final_training_loss(r) == pytest.approx(fit["train_loss"], rel=1e-3)
            assert r.model is None


def test_a_diverged_run_scores_chance():
    ((run,),) = ablation.train_seeds(
        [tiny(steps=20, lr_milestones=(5,), lr_gamma=1e9, init="standard")], [0], workers=1
    )
    assert run.diverged
    assert ablation.final_training_error(run) == pytest.approx(0.9)
    assert ablation.final_training_loss(run) == pytest.approx(math.log(10))


def test_bad_input_gives_clear_errors():
    with pytest.raises(TypeError, match="TrainConfig"):
        ablation.train_seeds([{"lr": 0.05}], [0])
    with pytest.raises(ValueError, match="at least one seed"):
        ablation.train_seeds([tiny()], [])
    with pytest.raises(ValueError, match="workers"):
        ablation.train_seeds([tiny()], [0], workers=0)
    with pytest.raises(TypeError, match="TrainResult"):
        ablation.final_training_error("run")
    ((run,),) = ensemble.train_seeds([tiny(steps=3)], [0])
    with pytest.raises(ValueError, match="no training-set evaluation"):
        ablation.final_training_error(run)
    with pytest.raises(TypeError, match="TrainConfig"):
        ablation.training_fit(torch.nn.Linear(2, 2), {"dataset": "digits"})
    with pytest.raises(ValueError, match="batch_size"):
        ablation.training_fit(torch.nn.Linear(2, 2), tiny(), batch_size=0)


def test_mean_difference_is_welch():
    import numpy as np
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=50, deadline=None)
    @given(
        st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=30), st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=30)
    )
    def check(a, b):
        d = ablation.mean_difference(a, b)
        assert d["difference"] == pytest.approx(np.mean(a) - np.mean(b), abs=1e-9)
        se = math.sqrt(np.var(a, ddof=1) / len(a) + np.var(b, ddof=1) / len(b))
        assert d["se"] == pytest.approx(se, rel=1e-9, abs=1e-12)
        assert d["n"] == min(len(a), len(b))

    check()
    with pytest.raises(ValueError, match="at least two"):
        ablation.mean_difference([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        ablation.mean_difference([1.0, float("nan")], [1.0, 2.0])


def test_train_runs_gives_each_configuration_its_own_seeds_as_train_seeds_would():
    a, b = tiny(), tiny(lr=0.02, init="printed-standard")
    flat = [dataclasses.replace(a, seed=s) for s in (3, 4, 5)] + [dataclasses.replace(b, seed=3)]
    ours = ablation.train_runs(flat, workers=1)
    (ref_a, ref_b) = ablation.train_seeds([a, b], [3, 4, 5], workers=1)
    assert [r.config.seed for r in ours] == [3, 4, 5, 3] and [r.config.lr for r in ours] == [0.05] * 3 + [0.02]
    for r, ref in zip(ours, [*ref_a, ref_b[0]]):
        assert r.final_train_loss == pytest.approx(ref.final_train_loss, rel=1e-4)
        assert ablation.final_training_loss(r) == pytest.approx(ablation.final_training_loss(ref), rel=1e-3)
    with pytest.raises(TypeError, match="train_runs needs a non-empty list of TrainConfig"):
        ablation.train_runs([])
    with pytest.raises(ValueError, match="workers"):
        ablation.train_runs(flat, workers=0)


def test_a_shared_worker_pool_trains_each_call_as_its_own_pool_would_and_keeps_its_processes():
    a, b = tiny(), tiny(lr=0.02, init="printed-standard")
    first = [dataclasses.replace(a, seed=s) for s in (3, 4)]
    second = [dataclasses.replace(b, seed=s) for s in (3, 4)]
    alone = ablation.train_runs(first + second, workers=1)
    with ablation.worker_pool(2) as pool:
        ours = ablation.train_runs(first, workers=2, pool=pool)
        started = set(pool._processes)
        ours += ablation.train_runs(second, workers=2, pool=pool)
        assert set(pool._processes) == started and len(started) == 2  # the same two processes, not new ones
    assert pool._shutdown_thread  # left: shut down, its processes joined
    for r, ref in zip(ours, alone):
        assert (r.config.seed, r.config.lr) == (ref.config.seed, ref.config.lr)
        assert ablation.final_training_loss(r) == pytest.approx(ablation.final_training_loss(ref), rel=1e-3)
    with ablation.worker_pool(1) as none:
        assert none is None  # one worker: the runs train in this process
    with pytest.raises(ValueError, match="workers"):
        with ablation.worker_pool(0):
            pass
