"""The experiments chapter's quick workload, sized by what each claim must decide (issue 35).

Every statistical check of the chapter (:mod:`resnet_theory.claims.experiments`) compares means, medians, or a
median with a threshold, over seeds. A pilot, the chapter's statistical checks run at the quick profile's
workload (its steps, widths and depths) with the seeds of :data:`PILOT_SIZES`, at a seed the chapter does not
use, recorded each comparison's estimate, standard error and seeds. The pilot is a data file written by a
command, ``python -m resnet_theory.benchmarks.experiments --pilot PATH [--seed 100]``, shipped in the package
(:data:`PILOT_PATH`) and read and validated here (:func:`read_pilot`: a damaged file, or one run at another
workload than the quick profile's, is refused with a one-line :class:`PilotError`). For each comparison,
:func:`resnet_theory.power.seeds_for` gives the fewest seeds with which a repeat decides (margin beyond two
standard errors, in the pilot's direction) with probability :data:`PROBABILITY`, planned with a pessimistic
effect: the pilot's less one of its own standard errors. A configuration trains as many seeds as the most
demanding comparison that uses it needs, never more than the pilot had (a comparison the pilot decided by a
few standard errors keeps the pilot's size) and never fewer than :data:`MINIMUM`: a run that diverges now and
then makes a two-mode sample, which a handful of seeds may not show.

The quick values of the seed knobs are :func:`sized_knobs`, computed at import from the pilot. They are the most a
kind of configuration trains: the chapter trains in looks (the sequential design). Each seed knob looks at the
counts of its :func:`ladder` (:data:`MINIMUM`, doubling, its size); after a look, a knob grows to its next count
while one of the comparisons it sizes is under :data:`~resnet_theory.power.EARLY_STOP` standard errors from its
threshold (:func:`next_look`), and stops otherwise or at its size, where its checks decide at two standard errors
as with every seed at once. :func:`sequential_rows` simulates how often each design decides, with an effect and
with none.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import power

#: The seed knobs at which the pilot trains the quick workload; a seed knob's full value stays as it was.
PILOT_SIZES = {
    "n_seeds": 10,
    "init_seeds": 30,
    "head_seeds": 10,
    "control_seeds": 10,
    "depth_seeds": 10,
    "deep_seeds": 20,
}
#: The probability with which each sized comparison decides under the pilot's (pessimistic) effect and noise.
PROBABILITY = 0.999
#: The fewest seeds a configuration trains.
MINIMUM = 4
#: The pilot shipped with the package, and the format it is written in.
PILOT_PATH = Path(__file__).resolve().parents[1] / "data" / "experiments_pilot.json"
PILOT_FORMAT = "resnet-theory/experiments-pilot/1"
#: The knobs that are not seeds: the pilot must have run at the quick profile's values of these.
WORKLOAD_KNOBS = ("steps", "lr_grid", "widths", "blocks", "depths")
#: Set (to "1") by the pilot command, which must import the chapter to rewrite a pilot it cannot read.
REWRITE_ENV = "RESNET_THEORY_REWRITING_PILOT"
PILOT_COMMAND = "python -m resnet_theory.benchmarks.experiments --pilot PATH --seed 100"


class PilotError(ValueError):
    """A pilot file that cannot be used: missing, damaged, or run at another workload."""


@dataclass(frozen=True)
class PilotComparison:
    """One statistical comparison as the pilot measured it: ``effect`` (difference of means, or distance of a
    median from its threshold, signed as the check reads it), the per-run standard deviations ``sd_a`` and
    ``sd_b`` (``None`` for a check against a threshold) and the seeds ``n`` per side; ``knob`` is the seed knob
    of the configuration it sizes, ``cap`` the seeds the pilot trained with that knob (default
    :data:`PILOT_SIZES`)."""

    claim: str
    role: str
    what: str
    knob: str
    effect: float
    sd_a: float
    sd_b: float | None
    n: int
    cap: int | None = None

    @property
    def standard_error(self) -> float:
        return math.sqrt((self.sd_a**2 + (self.sd_b or 0.0) ** 2) / self.n)

    @property
    def margin(self) -> float:
        """The pilot's margin in standard errors."""
        se = self.standard_error
        return math.copysign(math.inf, self.effect) if se == 0 else self.effect / se

    @property
    def planning_effect(self) -> float:
        """The pilot's effect less one of its standard errors (at least zero): a pessimistic effect."""
        return max(abs(self.effect) - self.standard_error, 0.0)

    def needed(self) -> int:
        """The seeds per side with which a repeat decides with :data:`PROBABILITY` (capped at 1000)."""
        if self.planning_effect == 0:
            return 1000
        return power.seeds_for(self.planning_effect, self.sd_a, self.sd_b, probability=PROBABILITY, minimum=MINIMUM)

    def chosen(self) -> int:
        """What this comparison asks of its knob: what it needs, but no more than the pilot had."""
        cap = PILOT_SIZES[self.knob] if self.cap is None else self.cap
        return max(MINIMUM, min(self.needed(), cap))


def from_summary(
    claim: str, role: str, what: str, knob: str, estimate: float, standard_error: float, n: int, cap=None
) -> PilotComparison:
    """A comparison from the numbers a check records (its estimate, standard error and ``n``): the standard
    error is read as one sample's noise, ``sd = SE sqrt(n)`` with ``n - 1`` degrees of freedom, which is never
    more optimistic than Welch's split of it between two samples."""
    return PilotComparison(claim, role, what, knob, estimate, standard_error * math.sqrt(n), None, n, cap)


_INIT, _BEST, _HEAD = "hardt-ma/sec4-small-init", "hardt-ma/sec4-small-init-best-rate", "hardt-ma/sec4-fixed-head"
_DEG, _TRAINS = "he-et-al/plain-degradation", "hardt-ma/sec4-identity-trains-without-bn"
#: The comparisons the pilot records, in order: (claim, role, which part of that role's checks, what it
#: compares, the seed knob of the configuration it sizes). A part is one statistical check of a claim's
#: statement or control, in the order :func:`run_margins` lists them.
COMPARISONS = (
    (_INIT, "statement", 0, "training loss, standard minus small init, paper's rate", "init_seeds"),
    (_INIT, "control", 0, "the same without shortcuts", "control_seeds"),
    (_BEST, "statement", 0, "the same, each at its best rate", "n_seeds"),
    (_BEST, "control", 0, "the same without shortcuts", "control_seeds"),
    (_HEAD, "statement", 0, "test accuracy, fixed minus trained head", "head_seeds"),
    (_HEAD, "control", 0, "fixed head of rank 1, same network", "control_seeds"),
    (_DEG, "statement", 0, "training error, deepest minus ablation depth, no shortcuts", "depth_seeds"),
    (_DEG, "control", 0, "the same with shortcuts", "deep_seeds"),
    (_TRAINS, "statement", 0, "median test accuracy minus 0.8, ablation depth", "init_seeds"),
    (_TRAINS, "statement", 1, "median test accuracy minus 0.8, deepest", "deep_seeds"),
    (_TRAINS, "control", 0, "the same without shortcuts", "control_seeds"),
)


# --- the pilot file -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pilot:
    """A pilot as its file holds it: the :data:`COMPARISONS` measured (``comparisons``), the seed knobs it
    trained (``sizes``), every knob it ran at (``knobs``), the CPU seconds of each of the chapter's cells
    (``cpu_seconds``) and where it comes from (``provenance``: commit, seed, machine, date, command; a pilot run
    since the thirteenth session also names the CPU model and torch's CPU capability, which older pilots lack)."""

    comparisons: tuple[PilotComparison, ...]
    sizes: dict
    knobs: dict
    cpu_seconds: dict
    provenance: dict = field(default_factory=dict)
    source: str = "(in memory)"


def pilot_record(checks: dict, *, sizes: dict, knobs: dict, cpu_seconds: dict, provenance: dict) -> dict:
    """The pilot file's contents from the checks of a run at the pilot's sizes: ``checks`` maps a claim id to its
    (statement, control) checks; each of :data:`COMPARISONS` is looked up there by role and part and recorded
    as its ``effect`` (the estimate's signed distance from the check's threshold, margin times standard error),
    ``standard_error`` and ``n``."""
    rows = []
    for claim, role, part, what, knob in COMPARISONS:
        if claim not in checks:
            raise PilotError(f"the pilot needs the checks of {claim}, which did not run")
        found = [(m, n, se) for r, m, n, _, se in _run_parts(*checks[claim]) if r == role]
        if part >= len(found) or found[part][2] is None:
            raise PilotError(f"{claim} has no statistical {role} check number {part} for the pilot")
        margin, n, se = found[part]
        effect = margin * se if se > 0 else math.copysign(0.0, margin)  # the signed distance from the threshold
        rows.append(dict(claim=claim, role=role, part=part, what=what, knob=knob, effect=effect,
                         standard_error=se, n=n))  # fmt: skip
    return {
        "format": PILOT_FORMAT,
        "provenance": dict(provenance),
        "knobs": {k: list(v) if isinstance(v, tuple) else v for k, v in knobs.items()},
        "sizes": {k: int(sizes[k]) for k in PILOT_SIZES},
        "cpu_seconds": {k: float(v) for k, v in cpu_seconds.items()},
        "comparisons": rows,
    }


def write_pilot(record: dict, path) -> Path:
    """Write a pilot (:func:`pilot_record`) to ``path``, after checking that it reads back."""
    path = Path(path)
    pilot_from_record(record, source=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return path


def _need(cond: bool, source: str, message: str) -> None:
    if not cond:
        raise PilotError(f"experiments pilot {source}: {message}; write it again with {PILOT_COMMAND}")


def _number(value, source: str, what: str, *, minimum: float | None = None) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    _need(ok and (minimum is None or value >= minimum), source, f"{what} must be a finite number"
          + ("" if minimum is None else f" >= {minimum:g}") + f", got {value!r}")  # fmt: skip
    return float(value)


def _count(value, source: str, what: str) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 2
    _need(ok, source, f"{what} must be a whole number >= 2, got {value!r}")
    return int(value)


def pilot_from_record(record, source: str = "(in memory)") -> Pilot:
    """Validate a pilot's contents (as :func:`pilot_record` makes them) and read them into a :class:`Pilot`."""
    _need(isinstance(record, dict), source, f"the file holds a {type(record).__name__}, not an object")
    _need(record.get("format") == PILOT_FORMAT, source, f"format {record.get('format')!r}, expected {PILOT_FORMAT!r}")
    for key, kind in (("provenance", dict), ("knobs", dict), ("sizes", dict), ("cpu_seconds", dict),
                      ("comparisons", list)):  # fmt: skip
        _need(isinstance(record.get(key), kind), source, f"'{key}' is missing or not a {kind.__name__}")
    for key in ("commit", "seed", "machine", "date"):
        _need(key in record["provenance"], source, f"the provenance has no '{key}'")
    sizes = {k: _count(record["sizes"].get(k), source, f"sizes.{k}") for k in PILOT_SIZES}
    cpu = {str(k): _number(v, source, f"cpu_seconds.{k}", minimum=0) for k, v in record["cpu_seconds"].items()}
    rows = record["comparisons"]
    _need(len(rows) == len(COMPARISONS), source, f"{len(rows)} comparisons, expected {len(COMPARISONS)}")
    out = []
    for i, (row, (claim, role, part, what, knob)) in enumerate(zip(rows, COMPARISONS)):
        _need(isinstance(row, dict), source, f"comparison {i} is not an object")
        # what a comparison compares is part of its identity: a pilot that measured another comparison under the
        # same claim and role (a control since replaced, say) is refused, not read as this one's effect
        got = tuple(row.get(k) for k in ("claim", "role", "part", "what", "knob"))
        want = (claim, role, part, what, knob)
        _need(got == want, source, f"comparison {i} is {got}, expected {want}")
        est = _number(row.get("effect"), source, f"comparison {i} effect")
        se = _number(row.get("standard_error"), source, f"comparison {i} standard_error", minimum=0)
        n = _count(row.get("n"), source, f"comparison {i} n")
        out.append(from_summary(claim, role, what, knob, est, se, n, cap=sizes[knob]))
    knobs = {k: tuple(v) if isinstance(v, list) else v for k, v in record["knobs"].items()}
    return Pilot(tuple(out), sizes, knobs, cpu, dict(record["provenance"]), source)


def read_pilot(path=PILOT_PATH, *, workload: dict | None = None) -> Pilot:
    """The pilot in ``path``, validated; with ``workload`` (knob -> value), also that it ran at those values."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        raise PilotError(f"experiments pilot {path}: no such file; write it with {PILOT_COMMAND}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        why = f"not readable JSON ({e})"
        raise PilotError(f"experiments pilot {path}: {why}; write it again with {PILOT_COMMAND}") from None
    pilot = pilot_from_record(record, source=str(path))
    check_workload(pilot, workload or {})
    return pilot


def check_workload(pilot: Pilot, workload: dict) -> None:
    """Refuse a pilot that ran at other values of the ``workload`` knobs (knob -> value) than these."""
    for knob, value in workload.items():
        got = pilot.knobs.get(knob)
        want = tuple(value) if isinstance(value, list) else value
        _need(got == want, pilot.source, f"it ran at {knob}={got!r}, the quick profile has {knob}={want!r}")


def rewriting() -> bool:
    """Whether the pilot command is running (it may import the chapter while the shipped pilot is unusable)."""
    return os.environ.get(REWRITE_ENV) == "1"


def _comparisons(pilot) -> tuple:
    if pilot is None:
        pilot = PILOT
    if pilot is None:  # the pilot command, rewriting an unusable pilot: nothing sized
        return ()
    return tuple(pilot.comparisons if isinstance(pilot, Pilot) else pilot)


def sized_knobs(pilot=None) -> dict[str, int]:
    """The seed knobs of the quick profile: per knob, the most that a comparison sized by it asks."""
    comparisons = _comparisons(pilot)
    out = {}
    for knob in PILOT_SIZES:
        asks = [c.chosen() for c in comparisons if c.knob == knob]
        out[knob] = max(asks) if asks else PILOT_SIZES[knob]
    return out


#: Short headers for :func:`sizing_rows` (its keys say "pilot" in full; nine columns need words that fit).
SIZING_HEADERS = {
    "pilot effect": "effect",
    "pilot seeds": "seeds",
    "pilot margin (SE)": "margin (SE)",
    "seeds needed": "needed",
    "quick seeds": "quick",
    "P(decides)": r"$P(\text{margin} \geq 2\,\mathrm{SE})$",
}


def sizing_rows(pilot=None) -> list[dict]:
    """One row per sized comparison: the pilot's effect, seeds and margin (its noise is the effect over the
    margin), the seeds it needs, the seed knob that sizes it (in words: ``init seeds`` for ``init_seeds``, so
    that a narrow column breaks it between words) and what that knob gets, and the probability of deciding
    with the knob's chosen size (under the pessimistic effect)."""
    knobs = sized_knobs(pilot)
    rows = []
    for c in _comparisons(pilot):
        n = knobs[c.knob]
        rows.append(
            {
                "claim": c.claim,
                "check": f"{c.role}: {c.what}",
                "pilot effect": c.effect,
                "pilot seeds": c.n,
                "pilot margin (SE)": c.margin,
                "seeds needed": c.needed(),
                "knob": c.knob.replace("_", " "),
                "quick seeds": n,
                "P(decides)": power.margin_power(c.planning_effect, c.sd_a, c.sd_b, n=n)
                if c.planning_effect > 0
                else 0.0,
            }
        )
    return rows


def short_rows(pilot=None) -> list[dict]:
    """The comparisons that ask for more seeds than the pilot had (:func:`sizing_rows` where "seeds needed" is
    more than "quick seeds"): they keep the pilot's seeds and decide a repeat only with the probability given."""
    return [
        {k: r[k] for k in ("claim", "check", "pilot margin (SE)", "seeds needed", "quick seeds", "P(decides)")}
        for r in sizing_rows(pilot)
        if r["seeds needed"] > r["quick seeds"]
    ]


def _run_parts(statement, control) -> list[tuple]:
    """``(role, margin in standard errors, n, estimate, standard error)`` of a claim's checks as run, in
    :data:`COMPARISONS`' order: the statement's parts, then the control (the check it tried, where it had no
    power)."""

    def parts(check) -> list:
        check = getattr(check, "tried", check)
        found = check.numbers.get("parts") or [check.numbers]
        keys = ("margin_standard_errors", "n", "estimate", "standard_error")
        return [tuple(p.get(k) for k in keys) for p in found]

    return [("statement", *m) for m in parts(statement)] + [("control", *m) for m in parts(control)]


def run_margins(claim: str, statement, control) -> list[tuple[str, float | None, int | None]]:
    """``(role, margin in standard errors, n)`` of a claim's checks as run, in :data:`COMPARISONS`' order."""
    return [part[:3] for part in _run_parts(statement, control)]


def margin_rows(runs: dict, pilot=None) -> list[dict]:
    """Every sized comparison's margin in the pilot and in ``runs`` (claim id -> (statement, control) checks),
    with the seeds of each (``n`` as the check counts it: the smaller side)."""
    now = {cid: run_margins(cid, *checks) for cid, checks in runs.items()}
    seen: dict = {}
    rows = []
    for c in _comparisons(pilot):
        i = seen.get((c.claim, c.role), 0)
        seen[(c.claim, c.role)] = i + 1
        found = [(m, n) for role, m, n in now.get(c.claim, []) if role == c.role]
        margin, n = found[i] if i < len(found) else (None, None)
        rows.append(
            {
                "claim": c.claim,
                "check": f"{c.role}: {c.what}",
                "pilot seeds": c.n,
                "pilot margin (SE)": c.margin,
                "seeds now": n,
                "margin now (SE)": None if margin is None else float(margin),
            }
        )
    return rows


def sizing_glue(pilot=None) -> dict:
    """The numbers the chapter's prose quotes about the sizing, and the pilot's provenance."""
    pilot = PILOT if pilot is None else pilot
    comparisons = _comparisons(pilot)
    knobs = sized_knobs(pilot)

    def first(claim, role):
        return next(c for c in comparisons if c.claim == claim and c.role == role)

    controls = [abs(c.margin) for c in comparisons if c.role == "control" and c.knob == "control_seeds"]
    prov = pilot.provenance if isinstance(pilot, Pilot) else {}
    return {
        "size_probability": PROBABILITY,
        "size_minimum": MINIMUM,
        "size_control_margin_min": min(controls),
        "size_init_margin": first(_INIT, "statement").margin,
        "size_init_pilot": first(_INIT, "statement").n,
        "size_init_seeds": knobs["init_seeds"],
        "size_init_needed": first(_INIT, "statement").needed(),
        "size_best_margin": first(_BEST, "statement").margin,
        "size_best_needed": first(_BEST, "statement").needed(),
        "size_best_seeds": knobs["n_seeds"],
        "size_control_seeds": knobs["control_seeds"],
        "size_short": sum(c.needed() > knobs[c.knob] for c in comparisons),
        "size_deg_margin": first(_DEG, "statement").margin,
        "size_deg_control_margin": first(_DEG, "control").margin,
        "size_deg_control_needed": first(_DEG, "control").needed(),
        "size_deg_seeds": knobs["depth_seeds"],
        "size_deep_seeds": knobs["deep_seeds"],
        "size_head_margin": first(_HEAD, "statement").margin,
        "size_head_seeds": knobs["head_seeds"],
        "size_pilot_seed": prov.get("seed", "?"),
        "size_pilot_commit": str(prov.get("commit", "?"))[:10],
        "size_pilot_date": str(prov.get("date", "?"))[:10],
        "size_pilot_cpu_seconds": sum(pilot.cpu_seconds.values()) if isinstance(pilot, Pilot) else float("nan"),
    }


# --- the sequential design: looks at growing seed counts ------------------------------------------------------
#: The knobs a look may grow, in the order the chapter trains them: the training grid's, then the depth sweep's.
GRID_KNOBS = ("n_seeds", "init_seeds", "head_seeds", "control_seeds")
SWEEP_KNOBS = ("depth_seeds", "deep_seeds")
#: Repeats of each simulated sequential comparison (:func:`resnet_theory.power.sequential_rates`).
SIMULATED_REPEATS = 20_000


def ladder(cap: int) -> tuple[int, ...]:
    """The seed counts a knob whose fixed-design size is ``cap`` looks at: :data:`MINIMUM`, doubling, ``cap``."""
    return power.ladder(cap, MINIMUM)


def _key(claim: str, role: str, part: int) -> tuple[str, str, int]:
    return claim, role, part


def look_margins(checks: dict) -> dict:
    """``{(claim, role, part): margin or None}`` of the :data:`COMPARISONS` found in ``checks`` (claim id ->
    (statement, control) checks, as they ran at a look); a comparison whose claim did not run is left out."""
    out = {}
    for claim, role, part, _, _ in COMPARISONS:
        if claim in checks:
            found = [m for r, m, *_ in _run_parts(*checks[claim]) if r == role]
            out[_key(claim, role, part)] = found[part] if part < len(found) else None
    return out


@dataclass(frozen=True)
class Look:
    """One look of the sequential design: the seeds of each knob of the phase (``sizes``), the margin of each
    comparison that uses one of them (``margins``), and the knobs that grow for the next look (``grows``)."""

    sizes: dict
    margins: dict
    grows: tuple


def next_look(sizes: dict, caps: dict, margins: dict, early: float = power.EARLY_STOP) -> Look:
    """The look at ``sizes`` (knob -> seeds now) with ``margins`` (:func:`look_margins`): a knob grows to the
    next count of its :func:`ladder` (``caps``: knob -> fixed-design size) while one of its comparisons is under
    ``early`` standard errors (or has no margin) and it is below its cap; the rest stop."""
    grows = []
    for knob in sizes:
        undecided = [
            m
            for (claim, role, part, _, k) in COMPARISONS
            if k == knob and _key(claim, role, part) in margins
            for m in [margins[_key(claim, role, part)]]
            if m is None or not abs(m) >= early
        ]
        if undecided and sizes[knob] < caps[knob]:
            grows.append(knob)
    return Look(dict(sizes), dict(margins), tuple(grows))


def grown(look: Look, caps: dict) -> dict:
    """The sizes of the look after ``look``: each growing knob at the next count of its ladder."""
    out = dict(look.sizes)
    for knob in look.grows:
        out[knob] = next(n for n in ladder(caps[knob]) if n > look.sizes[knob])
    return out


def first_sizes(caps: dict, knobs) -> dict:
    """The first look's seeds of each of ``knobs``: the first count of its ladder."""
    return {k: ladder(caps[k])[0] for k in knobs}


def look_rows(looks) -> list[dict]:
    """One row per look (training grid, then depth sweep): the seeds of each knob and the comparisons under
    :data:`~resnet_theory.power.EARLY_STOP` standard errors there."""
    rows = []
    for phase, phase_looks in looks:
        for i, look in enumerate(phase_looks):
            short = [
                f"{claim} ({role}{'' if part == 0 else f', part {part + 1}'})"
                for claim, role, part, _, k in COMPARISONS
                if k in look.sizes
                for m in [look.margins.get(_key(claim, role, part), 0.0)]
                if (claim, role, part) in look.margins and (m is None or not abs(m) >= power.EARLY_STOP)
            ]
            rows.append(
                {
                    "runs": phase,
                    "look": i + 1,
                    "seeds": ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in look.sizes.items()),
                    f"under {power.EARLY_STOP:g} SE": "; ".join(short) or "none",
                    "grows": ", ".join(k.replace("_", " ") for k in look.grows) or "nothing: stop",
                }
            )
    return rows


def sequential_rows(pilot=None) -> list[dict]:
    """Per sized comparison, by simulation (:func:`resnet_theory.power.sequential_rates`, normal scores with the
    pilot's noise and its pessimistic effect): the looks of its knob, how often a repeat decides in the pilot's
    direction with the fixed design (all seeds at once) and with the sequential one, the mean seeds the
    sequential one trains, and how often each decides (either way, so wrongly) when there is no effect at all."""
    knobs = sized_knobs(pilot)
    rows = []
    for i, c in enumerate(_comparisons(pilot)):
        looks = ladder(knobs[c.knob])
        if c.sd_a == 0:  # no noise: an effect decides at the first look, no effect never decides
            decided = float(c.planning_effect > 0)
            seq, fixed = ({"right": decided, "seeds": float(n)} for n in (looks[0], looks[-1]))
            null_seq = null_fixed = {"right": 0.0, "wrong": 0.0}
        else:
            sim = dict(sd_a=c.sd_a, sd_b=c.sd_b, repeats=SIMULATED_REPEATS, seed=i)
            seq = power.sequential_rates(c.planning_effect, looks=looks, **sim)
            fixed = power.sequential_rates(c.planning_effect, looks=looks[-1:], **sim)
            null_seq = power.sequential_rates(0.0, looks=looks, **sim)
            null_fixed = power.sequential_rates(0.0, looks=looks[-1:], **sim)
        rows.append(
            {
                "claim": c.claim,
                "check": f"{c.role}: {c.what}",
                "looks": ", ".join(str(n) for n in looks),
                "decides, fixed": fixed["right"],
                "decides, sequential": seq["right"],
                "mean seeds": seq["seeds"],
                "decides at no effect, fixed": null_fixed["right"] + null_fixed["wrong"],
                "decides at no effect, sequential": null_seq["right"] + null_seq["wrong"],
            }
        )
    return rows


def _load_shipped() -> Pilot | None:
    """The shipped pilot; ``None`` only while the pilot command rewrites it (:func:`rewriting`)."""
    try:
        return read_pilot(PILOT_PATH)
    except PilotError:
        if rewriting():
            return None
        raise


#: The pilot shipped with the package (read and validated at import).
PILOT: Pilot | None = _load_shipped()
