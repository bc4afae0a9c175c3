"""Benchmark: many seeds of the digits network, one at a time against batched, in the same run.

Run with ``python -m resnet_theory.benchmarks.ensemble [--members 10] [--steps 60] [--blocks 4]``.
Trains ``members`` seeds of the experiments chapter's scaled-down network (Hardt & Ma, Section 4, on the
8x8 digits) for ``steps`` steps in each of these ways and prints seeds-per-second (member-steps per second
divided by ``steps``... i.e. how many whole ``steps``-step runs per second) and the speed-up over the first:

- ``one at a time``: ``train.train`` once per seed, one thread (the engine's path);
- ``grouped conv, 1 thread``: :func:`resnet_theory.engine.ensemble.train_members`, all seeds in one model;
- ``grouped conv, 2 threads``: the same with two intra-op threads;
- ``vmap, 1 thread``: ``torch.func`` stacked parameters, ``vmap`` of ``grad`` over the members;
- ``grouped conv, 2 processes``: the members split between two worker processes of one thread each.

Timings include everything a chapter pays (data, evaluation at the end, process start-up for the workers).
Next to the wall clock it prints the CPU seconds per seed (this process and its finished workers): on a
loaded machine the wall clock of the two-thread way collapses (its threads wait for each other whenever one
is descheduled) while CPU seconds still compare the ways' work. Not a timed test: it measures and prints.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time

import torch
import torch.nn.functional as F

from resnet_theory import validate
from resnet_theory.engine import ensemble
from resnet_theory.engine import train as engine


def member_bytes(config: engine.TrainConfig) -> float:
    """About the memory one member takes while training: weights, gradients, momentum and a copy, and the
    activations of a batch (two convolution outputs per block, float32), as the training engine estimates."""
    from resnet_theory.engine import allconv

    blocks = (config.blocks_per_stage,) * len(config.widths)
    weights = allconv.estimate_model_bytes(
        1, config.stem_channels, config.widths, blocks, config.kernel_size, config.num_classes
    )
    return 4 * weights + 4 * 2 * config.batch_size * 8 * 8 * sum(w * b for w, b in zip(config.widths, blocks))


def digits_config(blocks: int = 4, steps: int = 60, lr: float = 0.05) -> engine.TrainConfig:
    """The chapter's digits configuration (widths 8, 16, 32) with ``blocks`` blocks per stage."""
    return engine.TrainConfig(
        dataset="digits",
        stem_channels=8,
        widths=(8, 16, 32),
        blocks_per_stage=blocks,
        steps=steps,
        lr=lr,
        lr_milestones=(),
        eval_every=0,
        log_every=10,
        checkpoint_every=0,
        progress=False,
        on_divergence="stop",
    )


def vmap_train(configs, steps: int) -> float:
    """Train the members with ``torch.func`` (stacked parameters, ``vmap(grad)``); returns seconds."""
    from torch.func import functional_call, grad, stack_module_state, vmap

    from resnet_theory.engine import data as data_module

    shared = configs[0]
    raw = engine.load_dataset(shared)
    train_data = data_module.DeviceData(*raw["train"], "cpu")
    models, streams = [], []
    for c in configs:
        data_seed = engine.seed_model_draws(c.seed)
        models.append(engine.build_model(c, in_channels=1))
        streams.append(
            engine.BatchStream(train_data, c.batch_size, torch.Generator().manual_seed(data_seed), *c.augmentation)
        )
    params, buffers = stack_module_state(models)
    template = models[0].to("meta")
    decays = {name: name.endswith("weight") and not name.startswith("head") for name in params}
    momentum = {name: torch.zeros_like(p) for name, p in params.items()}

    def loss_of(p, b, x, y):
        return F.cross_entropy(functional_call(template, (p, b), (x,)), y)

    step_grad = vmap(grad(loss_of))
    start = time.perf_counter()
    flush = torch.set_flush_denormal(True)
    try:
        for _ in range(steps):
            batches = [next(s) for s in streams]
            x = torch.stack([b[0] for b in batches])
            y = torch.stack([b[1] for b in batches])
            grads = step_grad(params, buffers, x, y)
            with torch.no_grad():
                for name, p in params.items():
                    d = grads[name].add(p, alpha=shared.weight_decay) if decays[name] else grads[name]
                    momentum[name].mul_(shared.momentum).add_(d)
                    p.sub_(shared.lr * momentum[name])
    finally:
        if flush:
            torch.set_flush_denormal(False)
    return time.perf_counter() - start


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished child processes (the workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(fn) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``fn()``."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    fn()
    return time.perf_counter() - start, _cpu_seconds() - cpu


def run(
    members: int = 10,
    steps: int = 60,
    blocks: int = 4,
    seed: int = 0,
    ways: tuple[str, ...] | None = None,
    sequential_members: int | None = None,
) -> list[dict]:
    """Time every way (see the module docstring); ``sequential_members`` seeds for the one-at-a-time
    baseline (default: all), scaled to ``members``. Returns one row per way."""
    members = validate.positive_int("members", members)
    base = digits_config(blocks, steps)
    base.validate()  # one member's memory, refused with the estimate
    validate.check_budget("members", members * member_bytes(base), validate.memory_limit_bytes(), value=members)
    seeds = list(range(seed, seed + members))
    configs = [dataclasses.replace(base, seed=s) for s in seeds]
    threads_before = torch.get_num_threads()
    engine.load_dataset(base)  # warm the dataset cache for every way alike

    def with_threads(n, fn):
        def inner():
            torch.set_num_threads(n)
            try:
                return fn()
            finally:
                torch.set_num_threads(threads_before)

        return inner

    n_seq = sequential_members or members
    all_ways = {
        "one at a time, 1 thread": (n_seq, with_threads(1, lambda: [engine.train(c) for c in configs[:n_seq]])),
        "grouped conv, 1 thread": (members, with_threads(1, lambda: ensemble.train_members(configs))),
        "grouped conv, 2 threads": (members, with_threads(2, lambda: ensemble.train_members(configs))),
        "vmap, 1 thread": (members, with_threads(1, lambda: vmap_train(configs, steps))),
        "grouped conv, 2 processes": (members, lambda: ensemble.train_seeds(base, seeds, workers=2)),
    }
    rows = []
    for name, (count, fn) in all_ways.items():
        if ways and name not in ways:
            continue
        seconds, cpu = _timed(fn)
        rows.append(
            {
                "way": name,
                "members": count,
                "steps": steps,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "seeds_per_second": count / seconds,
                "cpu_seconds_per_seed": cpu / count,
            }
        )
    baseline = rows[0]["seeds_per_second"] if rows else float("nan")
    for row in rows:
        row["speedup"] = row["seeds_per_second"] / baseline
    return rows


def format_rows(rows: list[dict]) -> str:
    lines = [
        f"{'way':28s} {'members':>7s} {'steps':>6s} {'seconds':>8s} {'seeds/s':>8s} {'speed-up':>8s} "
        f"{'CPU s/seed':>10s}"
    ]
    for r in rows:
        lines.append(
            f"{r['way']:28s} {r['members']:7d} {r['steps']:6d} {r['seconds']:8.2f} "
            f"{r['seeds_per_second']:8.3f} {r['speedup']:8.2f}x {r['cpu_seconds_per_seed']:10.3f}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = validate.OneLineParser(prog="python -m resnet_theory.benchmarks.ensemble", description=__doc__)
    parser.add_argument("--members", type=validate.int_option(1), default=10, help="seeds trained (default 10)")
    parser.add_argument("--steps", type=validate.int_option(1), default=60, help="steps of every run (default 60)")
    parser.add_argument(
        "--blocks", type=validate.int_option(1), default=4, help="blocks per stage (default 4: 25 convolutions)"
    )
    parser.add_argument("--seed", type=validate.int_option(0), default=0)
    parser.add_argument(
        "--sequential-members",
        type=validate.int_option(1),
        default=None,
        help="seeds for the one-at-a-time baseline (default: all)",
    )
    args = parser.parse_args(argv)
    try:
        rows = run(args.members, args.steps, args.blocks, args.seed, sequential_members=args.sequential_members)
    except engine.ConfigError as exc:  # sizes this machine cannot hold, refused before anything runs
        parser.error(str(exc))
    except validate.BudgetError as exc:
        parser.error(f"--{str(exc)}")
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
