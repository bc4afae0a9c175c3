"""The logging interval written once (resnet_theory.engine.interval): loss sums, the divergence guard and the
history records, shared by the engine (train) and the batched ensemble."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import torch

from resnet_theory.engine import ensemble, interval
from resnet_theory.engine import train as engine
from resnet_theory.engine.interval import Interval, LossAccumulator, history_record
from test_ensemble import tiny

pytestmark = pytest.mark.usefixtures("one_thread")

GOLDEN = Path(__file__).parent / "golden" / "engine_histories.json"
TIMING = {"images_per_s", "seconds"}


# --- history records --------------------------------------------------------------------------------------
def test_a_record_has_exactly_its_kinds_fields_in_order():
    record = history_record("train", 9, seconds=1.5, images_per_s=10.0, lr=0.1, loss=2.0)
    assert list(record) == ["kind", "step", "loss", "lr", "images_per_s", "seconds"]
    assert record == {"kind": "train", "step": 9, "loss": 2.0, "lr": 0.1, "images_per_s": 10.0, "seconds": 1.5}
    assert list(history_record("eval", 3, test_accuracy=0.5, test_loss=1.0)) == [
        "kind",
        "step",
        "test_loss",
        "test_accuracy",
    ]
    start = history_record("start", 0, world_size=1, device="cpu")
    assert start == {"kind": "start", "step": 0, "world_size": 1, "device": "cpu"}


@pytest.mark.parametrize(
    "kind, fields, message",
    [
        (
            "train",
            dict(loss=1.0, lr=0.1, images_per_s=1.0),
            "a 'train' record has the fields loss, lr, images_per_s, seconds; got loss, lr, images_per_s",
        ),
        ("eval", dict(test_loss=1.0, test_accuracy=0.5, extra=1), "a 'eval' record has the fields"),
        ("trained", dict(loss=1.0), "unknown history record kind 'trained'"),
    ],
)
def test_a_record_with_other_fields_or_an_unknown_kind_is_refused(kind, fields, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        history_record(kind, 1, **fields)


# --- the accumulator ------------------------------------------------------------------------------------------
def test_one_run_interval_is_the_float64_mean_of_its_losses():
    acc = LossAccumulator("cpu")
    losses = [torch.tensor(2.5, dtype=torch.float32), torch.tensor(1.0 / 3.0), torch.tensor(0.1)]
    for loss in losses:
        acc.add(loss)
    closed = acc.close(7, torch.tensor(True))
    expected = sum(float(x) for x in losses) / 3  # float64 sum of the float32 values
    assert closed.step == 7 and closed.steps == 3
    assert closed.losses == (expected,) and closed.finite == (True,)
    assert closed.seconds >= 0 and closed.images_per_second(4) == 4 * 3 / closed.seconds
    acc.restart()
    assert acc.steps == 0 and float(acc.sums) == 0.0
    acc.add(torch.tensor(4.0))
    assert acc.close(8, torch.tensor(True)).losses == (4.0,)


def test_members_have_their_own_sums_and_finiteness():
    acc = LossAccumulator("cpu", members=3)
    acc.add(torch.tensor([1.0, 2.0, float("nan")]))
    acc.add(torch.tensor([3.0, 2.0, 1.0]))
    closed = acc.close(2, torch.tensor([True, False, True]))
    assert closed.losses[:2] == (2.0, 2.0) and math.isnan(closed.losses[2])
    assert closed.finite == (True, False, True)


def test_all_reduce_averages_over_processes_and_any_non_finite_weight_counts():
    """A stand-in for torch.distributed.all_reduce over two processes: this one, and one whose losses are
    ``other`` and whose weights are not finite."""
    acc = LossAccumulator("cpu")
    acc.add(torch.tensor(1.0))
    acc.add(torch.tensor(2.0))

    def two_processes(stats: torch.Tensor) -> None:
        stats += torch.tensor([10.0, 2.0, 1.0], dtype=torch.float64)  # loss sum, steps, non-finite weights

    closed = acc.close(2, torch.tensor(True), all_reduce=two_processes)
    assert closed.losses == ((1.0 + 2.0 + 10.0) / 4,) and closed.finite == (False,)


def test_an_empty_interval_cannot_be_closed():
    with pytest.raises(ValueError, match="at least one update"):
        LossAccumulator("cpu").close(0, torch.tensor(True))


# --- the divergence guard and the record that closes an interval ----------------------------------------
def closed(loss: float, finite: bool = True) -> Interval:
    return Interval(step=30, steps=10, losses=(loss,), finite=(finite,), seconds=2.0, ended=12.0)


@pytest.mark.parametrize(
    "loss, finite, reason",
    [
        (2.0, True, None),
        (5.0, True, None),  # at the threshold: trains on
        (5.5, True, "mean training loss 5.5 over steps 21-30 exceeds max_loss 5"),
        (float("nan"), True, "mean training loss nan over steps 21-30"),
        (float("inf"), True, "mean training loss inf over steps 21-30"),
        (2.0, False, "the weights are no longer finite"),
    ],
)
def test_the_guard_stops_a_run_for_each_reason(loss, finite, reason):
    assert closed(loss, finite).divergence(0, threshold=5.0) == reason


def test_the_closing_record_is_train_or_diverged_and_asks_what_is_kept_only_when_it_stops():
    asked = []

    def kept() -> str:
        asked.append(1)
        return "the last good checkpoint (x) is kept"

    ok = closed(2.0).record(0, threshold=5.0, lr=0.5, images_per_s=64.0, seconds=9.0, kept=kept)
    assert ok == {"kind": "train", "step": 30, "loss": 2.0, "lr": 0.5, "images_per_s": 64.0, "seconds": 9.0}
    assert not asked
    stop = closed(9.0).record(0, threshold=5.0, lr=0.5, images_per_s=64.0, seconds=9.0, kept=kept)
    assert stop == {
        "kind": "diverged",
        "step": 30,
        "loss": 9.0,
        "message": "training diverged at step 30: mean training loss 9 over steps 21-30 exceeds "
        "max_loss 5; stopped, the last good checkpoint (x) is kept",
    }
    assert asked == [1]


# --- the same histories as before the interval was written once ------------------------------------------
#: The runs of tests/golden/engine_histories.json, written by the code at commit b9d63eb (before this module).
GOLDEN_RUNS = {
    "train": lambda: engine.train(tiny(seed=1)),
    "train_diverged": lambda: engine.train(tiny(seed=2, lr=40.0, max_loss=3.0)),
    "train_odd": lambda: engine.train(tiny(seed=3, steps=10, eval_every=4, log_every=4)),
    "ensemble": lambda: ensemble.train_members(
        [tiny(seed=1, max_loss=3.0), tiny(seed=4, lr=40.0, max_loss=3.0), tiny(seed=5, init="standard", max_loss=3.0)]
    ),
}


def words(message: str) -> str:
    return re.sub(r"\d[\d.e+-]*|nan|inf", "#", message)


def assert_same_history(result: engine.TrainResult, golden: dict):
    """Same records (kinds, steps, fields, learning rates, messages) and the same numbers up to float rounding
    across machines; a diverging loss (about 1e9 after three steps at lr 40) up to 1e-3."""
    assert result.steps_done == golden["steps_done"] and result.diverged == golden["diverged"]
    assert result.final_train_loss == pytest.approx(golden["final_train_loss"], rel=1e-5, nan_ok=True)
    assert len(result.history) == len(golden["history"])
    for got, want in zip(result.history, golden["history"]):
        assert [k for k in got if k not in TIMING] == list(want), (got, want)
        assert got["kind"] == want["kind"] and got["step"] == want["step"]
        for key, value in want.items():
            if key in ("loss", "test_loss"):
                assert got[key] == pytest.approx(value, rel=1e-3 if got["kind"] == "diverged" else 1e-5)
            elif key == "test_accuracy":
                assert abs(got[key] - value) <= 1 / 360 + 1e-12  # at most one image of 360 flips
            elif key == "message":  # the same words; its numbers are the record's, compared above
                assert words(got[key]) == words(value), (got[key], value)
            elif key not in ("config",):
                assert got[key] == value, key


@pytest.mark.parametrize("name", list(GOLDEN_RUNS))
def test_histories_are_those_written_before_the_interval_was_shared(name):
    golden = json.loads(GOLDEN.read_text())[name]
    results = GOLDEN_RUNS[name]()
    if name == "ensemble":
        assert len(results) == len(golden)
        for result, member in zip(results, golden):
            assert_same_history(result, member)
    else:
        assert_same_history(results, golden)


def test_the_engine_and_the_ensemble_write_the_same_records():
    config = tiny(seed=6)
    single, batched = engine.train(config), ensemble.train_members([config])[0]

    def fields(r):
        return [(h["kind"], tuple(h)) for h in r.history if h["kind"] != "start"]

    assert fields(single) == fields(batched)
    for h in single.history + batched.history:
        if interval.RECORD_FIELDS[h["kind"]] is not None:
            assert tuple(h)[2:] == interval.RECORD_FIELDS[h["kind"]]
