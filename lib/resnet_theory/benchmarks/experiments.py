"""Benchmark: the experiments chapter's workload, the sized one against the baseline's, cell by cell.

Run with ``python -m resnet_theory.benchmarks.experiments [--profile quick] [--seed 0] [--workers 2]``.
It runs the chapter's digits claims (:mod:`resnet_theory.claims.experiments`) twice in one process, once with
the knobs of :data:`BASELINE` (the sizes before issue 35: every configuration ten seeds, thirty for the two
initialisations at the paper's rate, twenty for the deepest residual network) and once with the profile's
own (sized by :mod:`resnet_theory.claims.experiments_sizing`), in the chapter's order: the architecture
claim, the training grid, the three ablation claims, the depth sweep, the two depth claims. For each it prints
the CPU seconds (this process and its finished worker processes, which a loaded machine barely changes, unlike
the wall clock), the ratio sized / baseline, and for a claim its verdict and its statement's and control's
margins in standard errors under both workloads; then the totals. ``--json PATH`` writes the same rows.
Not a timed test: it measures and prints.
"""

from __future__ import annotations

import json
import os
import platform
import time

import torch

from resnet_theory import validate
from resnet_theory.claims import experiments as E
from resnet_theory.claims.context import Context
from resnet_theory.claims.experiments_sizing import PILOT_SIZES
from resnet_theory.claims.run import run_claim

#: Today's workload before sizing, the baseline every ratio divides by: knob overrides per profile.
BASELINE = {"quick": dict(PILOT_SIZES), "full": {}, "tiny": {}}

#: The chapter's cells that cost something, in its order: a claim id, or a shared run.
CELLS = (
    "hardt-ma/sec4-architecture",
    "training grid",
    "hardt-ma/sec4-small-init",
    "hardt-ma/sec4-small-init-best-rate",
    "hardt-ma/sec4-fixed-head",
    "depth sweep",
    "he-et-al/plain-degradation",
    "hardt-ma/sec4-identity-trains-without-bn",
)
_SHARED = {"training grid": E.training_grid, "depth sweep": E.depth_sweep}


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _margin(check) -> float | None:
    """A statistical check's margin in standard errors (the tightest part of a combined check)."""
    if check is None:
        return None
    check = getattr(check, "tried", check)  # a control without power keeps the check it ran
    found = check.numbers.get("margin_standard_errors")
    if found is None:
        parts = [p.get("margin_standard_errors") for p in check.numbers.get("parts", []) if isinstance(p, dict)]
        parts = [p for p in parts if p is not None]
        found = min(parts, key=abs) if parts else None
    return None if found is None else float(found)


def run_workload(profile: str, seed: int, knobs: dict, workers: int) -> dict:
    """Each cell of :data:`CELLS` in one context: ``{cell: {"cpu_seconds", "seconds", ...}}``."""
    ctx = Context.for_table(E.PROFILE, profile, seed, knobs)
    E.use_settings(ctx, workers=workers)
    out = {}
    for cell in CELLS:
        cpu, start = _cpu_seconds(), time.perf_counter()
        row: dict = {}
        if cell in _SHARED:
            _SHARED[cell](ctx)
        else:
            run = run_claim(E.CLAIMS.claims[cell], ctx)
            controls = run.evidence.controls if run.evidence else ()
            row = {
                "verdict": run.verdict,
                "statement margin": _margin(run.evidence.statement) if run.evidence else None,
                "control margin": _margin(controls[0]) if controls else None,
            }
        out[cell] = {"cpu_seconds": _cpu_seconds() - cpu, "seconds": time.perf_counter() - start, **row}
    return out


def run(profile: str = "quick", seed: int = 0, workers: int = 2, baseline: dict | None = None) -> list[dict]:
    """The baseline workload (``baseline``, default :data:`BASELINE` of the profile) and the profile's own,
    one after the other in this process; one row per cell and a last ``total`` row."""
    profile = validate.choice("profile", profile, tuple(BASELINE))
    seed = validate.integer("seed", seed, minimum=0)
    workers = validate.positive_int("workers", workers)
    base_knobs = dict(BASELINE[profile] if baseline is None else baseline)
    torch.set_num_threads(1)
    before = run_workload(profile, seed, base_knobs, workers)
    after = run_workload(profile, seed, {}, workers)
    rows = []
    for cell in CELLS:
        b, a = before[cell], after[cell]
        rows.append(
            {
                "cell": cell,
                "baseline CPU s": b["cpu_seconds"],
                "sized CPU s": a["cpu_seconds"],
                "ratio": _ratio(a["cpu_seconds"], b["cpu_seconds"]),
                "baseline wall s": b["seconds"],
                "sized wall s": a["seconds"],
                **{f"{k} ({w})": r.get(k) for w, r in (("baseline", b), ("sized", a)) for k in _CLAIM_KEYS},
            }
        )
    total_b, total_a = (sum(r[f"{w} CPU s"] for r in rows) for w in ("baseline", "sized"))
    rows.append({"cell": "total", "baseline CPU s": total_b, "sized CPU s": total_a, "ratio": _ratio(total_a, total_b)})
    return rows


def _ratio(sized: float, baseline: float) -> float | None:
    """sized / baseline, or None where the baseline took no measurable CPU time (the clock ticks at 10 ms)."""
    return sized / baseline if baseline > 0 else None


_CLAIM_KEYS = ("verdict", "statement margin", "control margin")


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:+.1f}"
    return str(value)


def format_rows(rows: list[dict]) -> str:
    lines = [f"{'cell':42s} {'base CPU s':>10s} {'sized CPU s':>11s} {'ratio':>6s}  verdict and margins (SE)"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}"
        line = f"{r['cell']:42s} {r['baseline CPU s']:10.1f} {r['sized CPU s']:11.1f} {ratio:>6s}"
        if r.get("verdict (sized)") is not None:
            line += "  " + "; ".join(
                f"{w}: {r[f'verdict ({w})']}, {_fmt(r[f'statement margin ({w})'])}, "
                f"control {_fmt(r[f'control margin ({w})'])}"
                for w in ("baseline", "sized")
            )
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = validate.OneLineParser(prog="python -m resnet_theory.benchmarks.experiments", description=__doc__)
    parser.add_argument("--profile", choices=tuple(BASELINE), default="quick", help="the chapter's profile")
    parser.add_argument("--seed", type=validate.int_option(0), default=0, help="the chapter's seed (default 0)")
    parser.add_argument("--workers", type=validate.int_option(1), default=2, help="worker processes (default 2)")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)
    rows = run(args.profile, args.seed, args.workers)
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}; "
        f"profile {args.profile}, seed {args.seed}, {args.workers} workers; load average {os.getloadavg()[0]:.2f}"
    )
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
