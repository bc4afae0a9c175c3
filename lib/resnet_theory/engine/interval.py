"""The logging interval of a training run and the records of its history, written once for the engine
(:mod:`resnet_theory.engine.train`) and the batched ensemble (:mod:`resnet_theory.engine.ensemble`).

Between two logging points a run adds every step's loss to a float64 sum on the device
(:class:`LossAccumulator`; no host synchronisation). At the logging point one transfer gives the mean loss of
the interval and whether the weights are still finite (:meth:`LossAccumulator.close`, an :class:`Interval`),
for one run or for every member of a batched model at once, summed over processes under ``torchrun``. The
divergence guard (Hardt & Ma's recipe has none; a long run needs one) stops a run whose mean loss is NaN,
infinite or above the threshold, or whose weights are no longer finite (:meth:`Interval.divergence`).

Every record of a run's history (and of its metrics file) is built by :func:`history_record`, whose
:data:`RECORD_FIELDS` fix the fields of each kind, so that a single run and a batched member write the same
records.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

#: The fields of each kind of history record after ``kind`` and ``step``, in order. ``start`` and ``resume``
#: records (None) describe the run and the machine, with whatever fields the writer has.
RECORD_FIELDS: dict[str, tuple[str, ...] | None] = {
    "start": None,
    "resume": None,
    "train": ("loss", "lr", "images_per_s", "seconds"),
    "eval": ("test_loss", "test_accuracy"),
    "diverged": ("loss", "message"),
    "end": ("message", "seconds"),
    "train_eval": ("train_error", "train_loss", "n"),  # the final model on the training set (ablation)
}


def history_record(kind: str, step: int, **fields) -> dict:
    """One record of a run's history: ``{"kind": kind, "step": step, ...}`` with exactly the fields
    :data:`RECORD_FIELDS` gives for ``kind``, in that order."""
    if kind not in RECORD_FIELDS:
        raise ValueError(f"unknown history record kind {kind!r}; known: {', '.join(RECORD_FIELDS)}")
    expected = RECORD_FIELDS[kind]
    if expected is None:
        return {"kind": kind, "step": step, **fields}
    if set(fields) != set(expected):
        raise ValueError(f"a {kind!r} record has the fields {', '.join(expected)}; got {', '.join(fields)}")
    return {"kind": kind, "step": step, **{name: fields[name] for name in expected}}


def divergence_reason(mean_loss: float, threshold: float, step: int, interval_steps: int) -> str:
    """Why the divergence guard stopped a run at ``step`` (mean loss over the last ``interval_steps``)."""
    if math.isfinite(mean_loss) and mean_loss <= threshold:
        return "the weights are no longer finite"
    return f"mean training loss {mean_loss:.4g} over steps {step - interval_steps + 1}-{step}" + (
        "" if not math.isfinite(mean_loss) else f" exceeds max_loss {threshold:.4g}"
    )


def finished_message(step: int, test_accuracy: float, test_loss: float) -> str:
    """The message of a run's ``end`` record."""
    return f"finished {step} steps: test accuracy {test_accuracy:.4f}, test loss {test_loss:.4f}"


@dataclass(frozen=True)
class Interval:
    """One logging interval, closed: it ends after update number ``step`` and spans ``steps`` updates;
    ``losses[g]`` is member g's mean training loss over it and ``finite[g]`` whether its weights were all
    finite at its end (one member for a single run); ``seconds`` is its wall time, ``ended`` the
    ``time.perf_counter()`` at its end."""

    step: int
    steps: int
    losses: tuple[float, ...]
    finite: tuple[bool, ...]
    seconds: float
    ended: float

    def images_per_second(self, batch_size: int) -> float:
        """Training images per second of one member over the interval."""
        return batch_size * self.steps / self.seconds

    def divergence(self, member: int, threshold: float) -> str | None:
        """Why the guard stops ``member`` at the end of this interval (a mean loss that is not finite or
        exceeds ``threshold``, weights that are not finite), or None when it trains on."""
        loss = self.losses[member]
        if math.isfinite(loss) and self.finite[member] and loss <= threshold:
            return None
        return divergence_reason(loss, threshold, self.step, self.steps)

    def record(
        self, member: int, *, threshold: float, lr: float, images_per_s: float, seconds: float, kept: Callable[[], str]
    ) -> dict:
        """The history record that closes this interval for ``member``: ``diverged`` when the guard stops it
        (its message ends with ``kept()``, what the run leaves behind), ``train`` otherwise (``seconds``:
        since the run began)."""
        loss = self.losses[member]
        reason = self.divergence(member, threshold)
        if reason is not None:
            message = f"training diverged at step {self.step}: {reason}; stopped, {kept()}"
            return history_record("diverged", self.step, loss=loss, message=message)
        return history_record("train", self.step, loss=loss, lr=lr, images_per_s=images_per_s, seconds=seconds)


class LossAccumulator:
    """The training loss summed over the updates since the last logging point, on the device: one sum for a
    single run (``members=None``) or one per member of a batched model. :meth:`add` does not synchronise
    with the host; :meth:`close` does, once."""

    def __init__(self, device: torch.device | str, members: int | None = None):
        shape = () if members is None else (members,)
        self.sums = torch.zeros(shape, dtype=torch.float64, device=device)
        self.steps = 0
        self.started = time.perf_counter()

    def add(self, loss: torch.Tensor) -> None:
        """Add one update's loss (a scalar, or one per member), in float64."""
        self.sums += loss.detach().double()
        self.steps += 1

    def close(
        self, step: int, finite: torch.Tensor, all_reduce: Callable[[torch.Tensor], object] | None = None
    ) -> Interval:
        """The interval ending after update ``step``. ``finite`` (a bool per member, or one) says whether the
        weights are all finite; ``all_reduce`` (``torch.distributed.all_reduce`` under ``torchrun``) sums a
        tensor over the processes in place, so that the mean is over every process's losses and a non-finite
        weight in any process counts."""
        if self.steps == 0:
            raise ValueError("a logging interval needs at least one update before it is closed")
        count = torch.full_like(self.sums, float(self.steps))
        stats = torch.stack([self.sums, count, (~finite).double()])
        if all_reduce is not None:
            all_reduce(stats)
        totals, counts, not_finite = (row if isinstance(row, list) else [row] for row in stats.tolist())
        ended = time.perf_counter()
        return Interval(
            step=step,
            steps=self.steps,
            losses=tuple(t / c for t, c in zip(totals, counts)),
            finite=tuple(n == 0 for n in not_finite),
            seconds=ended - self.started,
            ended=ended,
        )

    def restart(self) -> None:
        """Begin the next interval: the sums at zero, the clock from now."""
        self.sums.zero_()
        self.steps = 0
        self.started = time.perf_counter()
