"""The experiments chapter's quick workload, sized by what each claim must decide (issue 35).

Every statistical check of the chapter (:mod:`resnet_theory.claims.experiments`) compares means, medians, or a
median with a threshold, over seeds (the pilot read the degradation and its control as means; they now compare
medians, at the pilot's sizes, so that one diverged run cannot swamp them). A pilot, the chapter at its former
sizes (:data:`PILOT_SIZES`, quick profile, seed 0), measured each comparison's effect and the per-run noise
of both sides (:data:`PILOT`). For each,
:func:`resnet_theory.power.seeds_for` gives the fewest seeds with which a repeat decides (margin beyond two
standard errors, in the pilot's direction) with probability :data:`PROBABILITY`, planned with a pessimistic
effect: the pilot's less one of its own standard errors. A configuration trains as many seeds as the most
demanding comparison that uses it needs, never more than the pilot had (a comparison the pilot decided by a
few standard errors keeps the pilot's size) and never fewer than :data:`MINIMUM`: a run that diverges now and
then makes a two-mode sample, which a handful of seeds may not show.

The quick values of the seed knobs are :func:`sized_knobs`, computed at import from these numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import power

#: The seed knobs of the quick profile before sizing (the pilot's); a seed knob's full value stays as it was.
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


@dataclass(frozen=True)
class PilotComparison:
    """One statistical comparison as the pilot measured it: ``effect`` (difference of means, or distance of a
    median from its threshold, signed as the check reads it), the per-run standard deviations ``sd_a`` and
    ``sd_b`` (``None`` for a check against a threshold) and the seeds ``n`` per side; ``knob`` is the seed knob
    of the configuration it sizes."""

    claim: str
    role: str
    what: str
    knob: str
    effect: float
    sd_a: float
    sd_b: float | None
    n: int

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
        return max(MINIMUM, min(self.needed(), PILOT_SIZES[self.knob]))


def from_summary(claim: str, role: str, what: str, knob: str, estimate: float, standard_error: float, n: int):
    """A comparison from the numbers a check records (its estimate, standard error and ``n``): the standard
    error is read as one sample's noise, ``sd = SE sqrt(n)`` with ``n - 1`` degrees of freedom, which is never
    more optimistic than Welch's split of it between two samples."""
    return PilotComparison(claim, role, what, knob, estimate, standard_error * math.sqrt(n), None, n)


_INIT, _BEST, _HEAD = "hardt-ma/sec4-small-init", "hardt-ma/sec4-small-init-best-rate", "hardt-ma/sec4-fixed-head"
_DEG, _TRAINS = "he-et-al/plain-degradation", "hardt-ma/sec4-identity-trains-without-bn"
#: The pilot: each statistical check of the chapter as the quick profile recorded it at seed 0 with the sizes of
#: :data:`PILOT_SIZES` (the chapter's claims record at commit 16fe833), as (estimate, standard error, n). The
#: best rates it chose (0.05 for the residual network with either head, 0.01 for the printed standard
#: initialisation and the network without shortcuts) are far apart in its grid table: at the other rate the
#: first two stay near chance (median test accuracy 0.18) and the last two diverge in 3 and 2 of 10 runs.
PILOT = (
    from_summary(_INIT, "statement", "training loss, standard minus small init, paper's rate", "init_seeds",
                 1.424, 0.1945, 30),
    from_summary(_INIT, "control", "the same without shortcuts", "control_seeds", -2.298, 7.815e-4, 10),
    from_summary(_BEST, "statement", "the same, each at its best rate", "n_seeds", -0.1619, 0.01437, 10),
    from_summary(_BEST, "control", "the same without shortcuts", "control_seeds", -2.298, 7.815e-4, 10),
    from_summary(_HEAD, "statement", "test accuracy, fixed minus trained head", "head_seeds", -0.0125, 0.008432, 10),
    from_summary(_HEAD, "control", "fixed head on untrained layers", "control_seeds", -0.8275, 0.00595, 10),
    from_summary(_DEG, "statement", "training error, 55 minus 19 convolutions, no shortcuts", "depth_seeds",
                 0.5109, 0.09322, 10),
    from_summary(_DEG, "control", "the same with shortcuts", "deep_seeds", -0.02846, 0.00466, 20),
    from_summary(_TRAINS, "statement", "median test accuracy - 0.8, 19 convolutions", "init_seeds",
                 0.9167 - 0.8, 0.006954, 10),
    from_summary(_TRAINS, "statement", "median test accuracy - 0.8, 55 convolutions", "deep_seeds",
                 0.9361 - 0.8, 0.003837, 20),
    from_summary(_TRAINS, "control", "the same without shortcuts", "control_seeds", 0.1014 - 0.8, 0.001206, 10),
)  # fmt: skip


def sized_knobs(pilot=PILOT) -> dict[str, int]:
    """The seed knobs of the quick profile: per knob, the most that a comparison sized by it asks."""
    out = {}
    for knob in PILOT_SIZES:
        asks = [c.chosen() for c in pilot if c.knob == knob]
        out[knob] = max(asks) if asks else PILOT_SIZES[knob]
    return out


#: Short headers for :func:`sizing_rows` (its keys say "pilot" in full; ten columns need words that fit).
SIZING_HEADERS = {
    "pilot effect": "effect",
    "pilot noise (SD a, b)": "SD (a, b)",
    "pilot seeds": "seeds",
    "pilot margin (SE)": "margin (SE)",
    "seeds needed": "needed",
    "quick seeds": "quick",
    "P(decides)": r"$P(\text{margin} \geq 2\,\mathrm{SE})$",
}


def sizing_rows(pilot=PILOT) -> list[dict]:
    """One row per sized comparison: the pilot's effect, noise and margin, the seeds it needs and gets, and
    the probability of deciding with the knob's chosen size (under the pessimistic effect)."""
    knobs = sized_knobs(pilot)
    rows = []
    for c in pilot:
        n = knobs[c.knob]
        rows.append(
            {
                "claim": c.claim,
                "check": f"{c.role}: {c.what}",
                "pilot effect": c.effect,
                "pilot noise (SD a, b)": f"{c.sd_a:.3g}" + ("" if c.sd_b is None else f", {c.sd_b:.3g}"),
                "pilot seeds": c.n,
                "pilot margin (SE)": c.margin,
                "seeds needed": c.needed(),
                "knob": c.knob,
                "quick seeds": n,
                "P(decides)": power.margin_power(c.planning_effect, c.sd_a, c.sd_b, n=n)
                if c.planning_effect > 0
                else 0.0,
            }
        )
    return rows


#: What training the pilot's digits runs took, in CPU seconds (its chapter's performance table, one execution on
#: the 2-core build machine): the grid, the extra seeds of the two initialisations, the depth sweep.
PILOT_CPU_SECONDS = {"grid": 282.0, "extra seeds": 124.0, "depth": 262.0}


def run_margins(claim: str, statement, control) -> list[tuple[str, float | None, int | None]]:
    """``(role, margin in standard errors, n)`` of a claim's checks as run, in :data:`PILOT`'s order: the
    statement's parts, then the control (the check it tried, where it had no power)."""

    def margins(check) -> list:
        check = getattr(check, "tried", check)
        parts = check.numbers.get("parts") or [check.numbers]
        return [(p.get("margin_standard_errors"), p.get("n")) for p in parts]

    return [("statement", *m) for m in margins(statement)] + [("control", *m) for m in margins(control)]


def margin_rows(runs: dict, pilot=PILOT) -> list[dict]:
    """Every sized comparison's margin in the pilot and in ``runs`` (claim id -> (statement, control) checks),
    with the seeds of each (``n`` as the check counts it: the smaller side)."""
    now = {cid: run_margins(cid, *checks) for cid, checks in runs.items()}
    seen: dict = {}
    rows = []
    for c in pilot:
        i = seen.get((c.claim, c.role), 0)
        seen[(c.claim, c.role)] = i + 1
        found = [(m, n) for role, m, n in now.get(c.claim, []) if role == c.role]
        margin, n = found[i] if i < len(found) else (None, None)
        rows.append(
            {
                "claim": c.claim,
                "check": f"{c.role}: {c.what}",
                "seeds before": c.n,
                "margin before (SE)": c.margin,
                "seeds now": n,
                "margin now (SE)": None if margin is None else float(margin),
            }
        )
    return rows


def sizing_glue(pilot=PILOT) -> dict:
    """The numbers the chapter's prose quotes about the sizing."""
    knobs = sized_knobs(pilot)

    def first(claim, role):
        return next(c for c in pilot if c.claim == claim and c.role == role)

    controls = [abs(c.margin) for c in pilot if c.role == "control" and c.knob == "control_seeds"]
    return {
        "size_probability": PROBABILITY,
        "size_minimum": MINIMUM,
        "size_control_margin_min": min(controls),
        "size_init_margin": first(_INIT, "statement").margin,
        "size_init_pilot": first(_INIT, "statement").n,
        "size_init_seeds": knobs["init_seeds"],
        "size_deg_margin": first(_DEG, "statement").margin,
        "size_deg_control_margin": first(_DEG, "control").margin,
        "size_deg_seeds": knobs["depth_seeds"],
        "size_deep_seeds": knobs["deep_seeds"],
        "size_head_margin": first(_HEAD, "statement").margin,
        "size_head_seeds": knobs["head_seeds"],
    }
