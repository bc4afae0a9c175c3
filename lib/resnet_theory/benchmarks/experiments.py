"""Benchmark: the experiments chapter's workload, the sized one against the baseline's, cell by cell; and the
command that writes the pilot the quick profile's seeds are sized from.

Run with ``python -m resnet_theory.benchmarks.experiments [--profile quick] [--seed 0] [--workers 2]
[--baseline pre-issue|previous|fixed]``. It runs the chapter's digits claims (:mod:`resnet_theory.claims.experiments`)
twice in one process, once with the knobs of a baseline (:data:`BASELINE`, the workload before issue 35: every
configuration ten seeds, thirty for the two initialisations at the paper's rate, twenty for the deepest residual
network, 250 steps of a network of widths 8, 16, 32 and a sweep to 55 convolutions; or, with ``--baseline
previous``, :data:`PREVIOUS`, the quick profile before its workload was made smaller; with ``--baseline fixed``,
:data:`FIXED`, the profile's own sizes with every seed trained at once, no looks) and once with the
profile's own (sized by :mod:`resnet_theory.claims.experiments_sizing`), in the chapter's order: the architecture
claim, the training grid, the three ablation claims, the depth sweep, the two depth claims. For each it prints
the CPU seconds (this process and its finished worker processes, which a loaded machine barely changes, unlike
the wall clock), the ratio sized / baseline, and for a claim its verdict and its statement's and control's
margins in standard errors under both workloads; then the totals. ``--json PATH`` writes the same rows.
Not a timed test: it measures and prints.

``--pilot PATH [--seed 100]`` runs the same cells once, at the profile's workload with the seeds of
:data:`~resnet_theory.claims.experiments_sizing.PILOT_SIZES` (the tiny profile: its own), and writes the pilot
file (:func:`~resnet_theory.claims.experiments_sizing.pilot_record`: every comparison's estimate, standard error
and seeds, the CPU seconds per cell, and its provenance: commit, knobs, seed, machine, date). The shipped pilot
is ``lib/resnet_theory/data/experiments_pilot.json``; its seed lies outside the seeds the book is checked at
(0, 1, 2), so that those test the sizing rather than repeat the pilot.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from resnet_theory import validate

if "--pilot" in sys.argv[1:] and __name__ == "__main__":  # may rewrite a pilot the chapter cannot read
    os.environ["RESNET_THEORY_REWRITING_PILOT"] = "1"  # experiments_sizing.REWRITE_ENV, read at its import

from resnet_theory.claims import experiments as E  # noqa: E402
from resnet_theory.claims import experiments_sizing as sizing  # noqa: E402
from resnet_theory.claims.context import Context  # noqa: E402
from resnet_theory.claims.run import run_claim  # noqa: E402

#: The quick workload before issue 35 (the knobs that are not seeds; every seed trained at once, no looks).
PRE_ISSUE_WORKLOAD = {
    "steps": 250,
    "widths": (8, 16, 32),
    "blocks": 3,
    "depths": (1, 3, 9),
    "lr_grid": (0.01, 0.05),
    "sequential": False,
}
#: The workload before issue 35, the baseline every ratio divides by: knob overrides per profile.
BASELINE = {
    "quick": {
        "n_seeds": 10,
        "init_seeds": 30,
        "head_seeds": 10,
        "control_seeds": 10,
        "depth_seeds": 10,
        "deep_seeds": 20,
        **PRE_ISSUE_WORKLOAD,
    },
    "full": {"sequential": False},
    "tiny": {"sequential": False},
}
#: The quick profile before its workload was made smaller (its seeds sized from the first, typed, pilot).
PREVIOUS = {
    "n_seeds": 4,
    "init_seeds": 21,
    "head_seeds": 10,
    "control_seeds": 4,
    "depth_seeds": 10,
    "deep_seeds": 20,
    **PRE_ISSUE_WORKLOAD,
}
#: The quick profile's own sizes with every seed trained at once: what its looks (the sequential design) save.
FIXED = {"sequential": False}
BASELINES = {"pre-issue": None, "previous": PREVIOUS, "fixed": FIXED}

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
                "checks": (run.evidence.statement, controls[0]) if controls else None,
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


# --- the pilot ---------------------------------------------------------------------------------------------------
def _commit() -> str:
    """The repository's commit (with "+changes" where the working tree differs from it), or "unknown"."""
    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "lib"], cwd=root, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def _machine() -> str:
    return (
        f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, torch {torch.__version__}"
    )


def _cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str | None:
    """The CPU's model name: the first "model name" of ``cpuinfo`` where it is readable, else
    ``platform.processor()``, else None. Another CPU may run other kernels, hence other floating-point sums."""
    try:
        for line in Path(cpuinfo).read_text(errors="replace").splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def _torch_cpu_capability() -> str | None:
    """The instruction set torch's CPU kernels dispatch to on this machine ("AVX2", "AVX512", ...), or None."""
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None


def run_pilot(path, profile: str = "quick", seed: int = 100, workers: int = 2, knobs: dict | None = None) -> dict:
    """Run the chapter's cells once at the pilot's sizes (the quick profile: :data:`sizing.PILOT_SIZES`; another
    profile: its own seeds), with ``knobs`` overriding any knob (to measure what a smaller workload would
    decide), and write the pilot to ``path``; returns what it wrote."""
    profile = validate.choice("profile", profile, tuple(BASELINE))
    seed = validate.integer("seed", seed, minimum=0)
    workers = validate.positive_int("workers", workers)
    path = validate.path("path", path)
    if not isinstance(knobs, (dict, type(None))):
        raise TypeError(f"knobs must be a dict of knob overrides, got {type(knobs).__name__}")
    torch.set_num_threads(1)
    overrides = dict(knobs or {})
    # the pilot trains every seed at once: a sequential design would stop where the pilot must measure
    sizes = {**(dict(sizing.PILOT_SIZES) if profile == "quick" else {}), "sequential": False, **overrides}
    provenance = {  # the code and the time the run starts with
        "commit": _commit(),
        "seed": seed,
        "profile": profile,
        "workers": workers,
        "machine": _machine(),
        "cpu_model": _cpu_model(),
        "torch_cpu_capability": _torch_cpu_capability(),
        "load_average_at_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": f"python -m resnet_theory.benchmarks.experiments --pilot PATH --profile {profile} --seed {seed}"
        + "".join(f" --knob {k}={json.dumps(v)}" for k, v in overrides.items()),
    }
    cells = run_workload(profile, seed, sizes, workers)
    cfg = E.PROFILE.resolve(profile, sizes)
    ran_at = {k: getattr(cfg, k) for k in (*E.SEED_KNOBS, *sizing.WORKLOAD_KNOBS)}
    checks = {cell: row["checks"] for cell, row in cells.items() if row.get("checks") is not None}
    record = sizing.pilot_record(
        checks,
        sizes={k: ran_at[k] for k in sizing.PILOT_SIZES},
        knobs=ran_at,
        cpu_seconds={cell: row["cpu_seconds"] for cell, row in cells.items()},
        provenance=provenance,
    )
    sizing.write_pilot(record, path)
    return record


def _knob(text: str) -> tuple[str, object]:
    """``NAME=JSON`` as ``(name, value)``, lists as tuples (as the profile table has them)."""
    name, sep, value = text.partition("=")
    if not sep or name not in E.PROFILE.knobs:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME one of {', '.join(E.PROFILE.knobs)}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        raise argparse.ArgumentTypeError(f"{name}: {value!r} is not a JSON value (e.g. 100 or [4,8,16])") from None
    return name, tuple(parsed) if isinstance(parsed, list) else parsed


def output_problem(path: str, option: str) -> str | None:
    """Why ``path`` may not be written by ``option``, or None. ``--json`` writes a ``.json`` file outside the
    sources (:func:`resnet_theory.engine.bench.json_path_problem`). ``--pilot`` may also rewrite the shipped pilot
    (:data:`~resnet_theory.claims.experiments_sizing.PILOT_PATH`, its purpose), and replaces no file that is not
    a pilot (one that does not parse as JSON with the pilot's ``format``)."""
    from resnet_theory.engine.bench import json_path_problem
    from resnet_theory.outputs import OutputRefused, check_command_output

    target = Path(path)
    if option == "--json":
        return json_path_problem(path)
    if target.resolve() == sizing.PILOT_PATH.resolve():
        return None
    if target.is_dir():
        return "is a folder"
    try:  # never a source, nor a file but .json; its folder is made when missing (write_pilot)
        check_command_output(target, option, suffix=".json")
    except OutputRefused as exc:
        return str(exc).removeprefix(f"{option} {path}: ")
    if target.exists():
        try:
            record = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            record = None
        if not isinstance(record, dict) or record.get("format") != sizing.PILOT_FORMAT:
            return "exists and is not an experiments pilot; it is not replaced (give a new path)"
    return None


def main(argv=None) -> int:
    parser = validate.OneLineParser(prog="python -m resnet_theory.benchmarks.experiments", description=__doc__)
    parser.add_argument("--profile", choices=tuple(BASELINE), default="quick", help="the chapter's profile")
    parser.add_argument("--seed", type=validate.int_option(0), default=None, help="seed (default 0; pilot 100)")
    parser.add_argument("--workers", type=validate.int_option(1), default=2, help="worker processes (default 2)")
    parser.add_argument("--baseline", choices=tuple(BASELINES), default="pre-issue", help="the workload to divide by")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--pilot", default=None, metavar="PATH", help="write the pilot to PATH instead")
    parser.add_argument("--knob", action="append", default=[], type=_knob, metavar="NAME=JSON",
                        help="with --pilot: override a knob, e.g. steps=100 or widths=[4,8,16]")  # fmt: skip
    args = parser.parse_args(argv)
    if args.knob and args.pilot is None:
        parser.error("--knob goes with --pilot")
    for option, path in (("--json", args.json), ("--pilot", args.pilot)):
        problem = None if path is None else output_problem(path, option)
        if problem:  # found before minutes of training, not after
            parser.error(f"{option} {path}: {problem}")
    if args.pilot is not None:
        seed = 100 if args.seed is None else args.seed
        try:  # a knob of another type than the table's: before anything trains
            E.PROFILE.resolve(args.profile, dict(args.knob))
        except (TypeError, ValueError) as exc:
            parser.error(f"--knob: {exc}")
        try:
            record = run_pilot(args.pilot, args.profile, seed, args.workers, dict(args.knob))
        except ValueError as exc:  # a knob's value the training refuses (steps=-1), a size over the budget
            print(f"error: --pilot: {exc}", file=sys.stderr)
            return 2
        print(f"pilot written to {args.pilot} (seed {seed}, {sum(record['cpu_seconds'].values()):.0f} CPU s)")
        print(f"quick seed knobs sized from it: {sizing.sized_knobs(sizing.pilot_from_record(record))}")
        return 0
    seed = 0 if args.seed is None else args.seed
    baseline = BASELINES[args.baseline] if args.profile == "quick" or args.baseline == "fixed" else None
    rows = run(args.profile, seed, args.workers, baseline)
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}; "
        f"profile {args.profile}, seed {seed}, {args.workers} workers, baseline {args.baseline}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in r.items()} for r in rows], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
