"""Hardt & Ma's Section 4 recipe taken apart on the digits: many seeds per variant, scored at the end.

The experiments chapter (Hardt & Ma, ICLR 2017, Section 4.1, and He et al. 2016, Section 4.1, on the 8x8
digits) compares variants of the all-convolutional network by what they reach at the end of a run. Besides
the test accuracy and the mean training loss of the last logging interval that every
:class:`resnet_theory.engine.train.TrainResult` carries, He et al.'s degradation is stated for the *training error*
at the end of training, so this module also measures each final model on the whole training set (no
augmentation, the training standardisation):

- :func:`training_fit` evaluates one model on the training split of its run's configuration;
- :func:`train_seeds` is :func:`resnet_theory.engine.ensemble.train_seeds` (all seeds of a configuration trained as
  one batched model) with the seeds split between ``workers`` processes, each of which measures its models
  on the training set before they are dropped; the result gets a ``{"kind": "train_eval", ...}`` record;
- :func:`train_runs` does the same for a flat list of configurations, each with its own seed, so that each
  configuration may train its own number of seeds, all in one pool of worker processes;
- :func:`final_training_error` and :func:`final_training_loss` read that record, scoring a run stopped by the
  divergence guard at chance: it fits nothing.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import replace

import torch
import torch.nn.functional as F

from resnet_theory import validate
from resnet_theory.engine import ensemble
from resnet_theory.engine import train as engine
from resnet_theory.engine.interval import history_record

#: The kind of the history record that :func:`train_seeds` appends.
RECORD_KIND = "train_eval"


def training_fit(model: torch.nn.Module, config: engine.TrainConfig, batch_size: int = 512) -> dict:
    """``{"train_error", "train_loss", "n"}`` of ``model`` on the whole training split of ``config``'s dataset
    (no augmentation, standardised as in training), on the CPU."""
    if not isinstance(config, engine.TrainConfig):
        raise TypeError(f"training_fit needs a TrainConfig, got {type(config).__name__}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"training_fit needs a torch module, got {type(model).__name__}")
    batch_size = validate.positive_int("batch_size", batch_size)
    train_data, _, _ = engine.device_datasets(config, torch.device("cpu"))
    wrong, loss, count = 0, 0.0, 0
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for x, y in train_data.batches(batch_size, None, augment=False, shuffle=False, drop_last=False):
            logits = model(x).float()
            loss += float(F.cross_entropy(logits, y, reduction="sum"))
            wrong += int((logits.argmax(1) != y).sum())
            count += y.numel()
    model.train(was_training)
    return {"train_error": wrong / count, "train_loss": loss / count, "n": count}


def _measured(results: list[engine.TrainResult]) -> list[engine.TrainResult]:
    for r in results:
        if not r.diverged:
            fit = training_fit(r.model, r.config)
            r.history.append(history_record(RECORD_KIND, r.steps_done, **fit))
        r.model = None  # results cross a process boundary: keep them small
    return results


def _worker(configs, seeds):
    torch.set_num_threads(1)
    return [_measured(runs) for runs in ensemble.train_seeds(configs, seeds, workers=1)]


def _runs_worker(configs):
    torch.set_num_threads(1)
    return _measured(ensemble.train_groups(configs))


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator:
    """A pool of ``workers`` spawned processes that several :func:`train_runs` calls share, so that each process
    imports torch once (``None`` for one worker: the runs train in this process). On leaving, the pool is shut
    down and its processes joined, so their CPU time counts among this process's children from then on."""
    workers = validate.positive_int("workers", workers)
    if workers == 1:
        yield None
        return
    import concurrent.futures
    import multiprocessing

    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def train_runs(configs: Sequence[engine.TrainConfig], *, workers: int = 2, pool=None) -> list[engine.TrainResult]:
    """One run per configuration, each with its own ``seed`` (so configurations may have different numbers of
    seeds), measured on the training set at its end like :func:`train_seeds`; results in order. Configurations
    that may share a batched model are trained together, and every such group is split evenly between the
    ``workers`` processes (one pool for all of them: ``pool``, a :func:`worker_pool` of at least ``workers``
    processes, or a pool of this call's own), so one call trains a whole plan of runs."""
    configs = list(configs)
    if not configs or not all(isinstance(c, engine.TrainConfig) for c in configs):
        raise TypeError("train_runs needs a non-empty list of TrainConfig objects")
    workers = min(validate.positive_int("workers", workers), len(configs))
    configs = [replace(c, on_divergence="stop") for c in configs]
    shares: list[list[int]] = [[] for _ in range(workers)]
    for indices in ensemble._groups(configs):
        for w in range(workers):
            shares[w].extend(indices[w::workers])
    shares = [share for share in shares if share]
    if len(shares) == 1:
        parts = [_runs_worker([configs[i] for i in shares[0]])]
    else:
        with contextlib.nullcontext(pool) if pool is not None else worker_pool(len(shares)) as used:
            futures = [used.submit(_runs_worker, [configs[i] for i in share]) for share in shares]
            parts = [f.result() for f in futures]
    out: list = [None] * len(configs)
    for share, part in zip(shares, parts):
        for i, r in zip(share, part):
            out[i] = r
    return out


def train_seeds(
    configs: Sequence[engine.TrainConfig], seeds: Sequence[int], *, workers: int = 2
) -> list[list[engine.TrainResult]]:
    """One run per configuration and seed, ``result[i][j]`` configuration i at seed j, each measured on the
    training set at its end (see the module docstring). The seeds are split evenly between ``workers``
    processes of one thread each; members keep their own seeds, so the runs do not depend on ``workers``."""
    configs = list(configs)
    if not configs or not all(isinstance(c, engine.TrainConfig) for c in configs):
        raise TypeError("train_seeds needs a non-empty list of TrainConfig objects")
    seeds = [validate.integer(f"seeds[{i}]", s) for i, s in enumerate(seeds)]
    if not seeds:
        raise ValueError("train_seeds needs at least one seed")
    workers = min(validate.positive_int("workers", workers), len(seeds))
    shares = [list(range(w, len(seeds), workers)) for w in range(workers)]
    if workers == 1:
        parts = [_worker(configs, seeds)]
    else:
        import concurrent.futures
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(_worker, configs, [seeds[j] for j in share]) for share in shares]
            parts = [f.result() for f in futures]
    out: list[list] = [[None] * len(seeds) for _ in configs]
    for share, part in zip(shares, parts):
        for i, runs in enumerate(part):
            for j, r in zip(share, runs):
                out[i][j] = r
    return out


def _record(result: engine.TrainResult) -> dict | None:
    if not isinstance(result, engine.TrainResult):
        raise TypeError(f"expected a TrainResult, got {type(result).__name__}")
    found = [r for r in result.history if r.get("kind") == RECORD_KIND]
    if not found and not result.diverged:
        raise ValueError("this run has no training-set evaluation: train it with ablation.train_seeds")
    return found[-1] if found else None


def final_training_error(result: engine.TrainResult) -> float:
    """The final model's error on the whole training set; a diverged run scores chance, 1 - 1/classes."""
    record = _record(result)
    return 1.0 - 1.0 / result.config.num_classes if record is None else float(record["train_error"])


def final_training_loss(result: engine.TrainResult) -> float:
    """The final model's mean cross-entropy on the whole training set; a diverged run scores that of a
    uniform guess, ln(classes)."""
    record = _record(result)
    return math.log(result.config.num_classes) if record is None else float(record["train_loss"])


def mean_difference(a, b) -> dict:
    """``mean(a) - mean(b)`` for two independent samples with its standard error
    ``sqrt(var(a)/n_a + var(b)/n_b)`` (sample variances, as in Welch's test); ``n`` is the smaller sample.

    The mean, not the median, for outcomes with two modes (a run trains or diverges): the median of such a
    sample jumps from one mode to the other with a single run, the mean moves by ``1/n`` of the gap."""
    va, vb = ensemble._values(a, "mean_difference (a)"), ensemble._values(b, "mean_difference (b)")
    if va.size < 2 or vb.size < 2:
        raise ValueError(f"mean_difference needs at least two values in each sample, got {va.size} and {vb.size}")
    se = math.sqrt(va.var(ddof=1) / va.size + vb.var(ddof=1) / vb.size)
    return {"difference": float(va.mean() - vb.mean()), "se": se, "n": int(min(va.size, vb.size))}
