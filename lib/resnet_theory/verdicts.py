"""The verdict rules, with no I/O: a :class:`Check` computed from numbers, and the verdict that follows from them.

A claim carries :class:`Check` objects, each built by one of the constructors from computed numbers; the verdict
follows from them (:func:`derive_verdict`), never typed in:

- the statement as printed holds, every proof step checked holds    -> ``confirmed``
- the statement holds (checked independently of the printed proof),
  but a step or construction of the printed proof fails as written  -> ``proof-gap`` (step and repair recorded;
  a claim may record several steps, each with its repair: one failing step makes the gap)
- the statement as printed fails on a counterexample,
  a corrected statement holds                                       -> ``corrected`` (an erratum; both recorded)
- the statement as printed fails and no corrected form holds        -> ``refuted``
- a statistical check decides nothing (its margin is within its noise) -> ``undecided`` (which part, by how
  many standard errors)
- the claim has no usable negative control (:class:`NoUsableControl`) -> ``undecided`` (and why)
- no check: the claim needs hardware or data this build lacks       -> ``not-checkable-here``

``corrected`` and ``refuted`` need a counterexample to the *statement*: a failing step of a proof whose
statement still holds is a ``proof-gap``, never an erratum.

A statistical check (:meth:`Check.statistical`) is *decisive* only when the measured value sits at least
two standard errors from its threshold; a claim whose deciding check is not decisive is ``undecided``
(with the part and its margin in standard errors as the reason), never a coin-flip ``confirmed``; a
``proof-gap`` likewise needs a proof step that fails decisively, and ``corrected`` a corrected statement that
holds decisively. :meth:`Check.combine` of several checks is decisively true when every part is decisive,
and decisively false when some failing part is.

A negative control counts only when it decides (:func:`control_without_power`): a statistical control whose
margin is within two standard errors of its threshold would "fail" on any input, so it shows nothing about
the check, and :meth:`resnet_theory.ledger.Ledger.claim` refuses it.

A check never holds on nothing: the constructors refuse empty inputs, complex values (whose imaginary parts a
comparison would drop) and conditions that are not booleans (``NaN`` is truthy), in one line each.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

VERDICTS = ("confirmed", "proof-gap", "corrected", "refuted", "undecided", "not-checkable-here")

#: A statistical check decides a verdict only this many standard errors or more from its threshold.
DECISIVE_STANDARD_ERRORS = 2.0
_normal = NormalDist()
#: A combined check with more parts than this is summarised by its count and its tightest part.
MAX_PARTS_LISTED = 4


def _as_float(x: Any) -> float:
    """A plain float for the JSON record (NaN and infinities are kept: they make a check fail, visibly)."""
    return float(x)


def _real_array(x: Any, name: str, what: str) -> np.ndarray:
    """``x`` as a float array; a complex value (whose imaginary part ``float`` would drop) or a value that is not a
    number is refused in one line, naming the check and its argument."""
    try:
        raw = np.asarray(x)
    except ValueError:  # a ragged nesting of lists
        raise ValueError(f"Check.{name} ({what}): expected an array of real numbers, got a ragged nesting") from None
    if np.iscomplexobj(raw) or (raw.dtype == object and any(isinstance(v, complex) for v in raw.ravel())):
        raise ValueError(f"Check.{name} ({what}): complex values are not compared (compare real parts or moduli)")
    if raw.dtype.kind in "USV" or (raw.dtype == object and any(isinstance(v, (str, bytes)) for v in raw.ravel())):
        raise ValueError(f"Check.{name} ({what}): expected real numbers, got text")
    try:
        return raw.astype(float)
    except (TypeError, ValueError):
        raise ValueError(f"Check.{name} ({what}): expected real numbers, got {raw.dtype} values") from None


def _tolerances(name: str, what: str, rtol: Any, atol: Any) -> tuple[float, float]:
    """``rtol`` and ``atol`` as floats: each a finite real number >= 0. An infinite tolerance would make the check
    hold on any values, a NaN or negative one fail on all; both are refused in one line."""
    out = []
    for label, tol in (("rtol", rtol), ("atol", atol)):
        try:
            value = float(_real_array(tol, name, what)) if not isinstance(tol, bool) else math.nan
        except (TypeError, ValueError):
            value = math.nan
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"Check.{name} ({what}): {label} must be a finite number >= 0, got {tol!r}")
        out.append(value)
    return out[0], out[1]


def _unequalable(x: Any) -> Any:
    """The first NaN or complex number in ``x`` (a number, or a list, tuple or array of them), else None: NaN
    is never equal to itself (a list holding one NaN object is equal to itself by identity), and a complex value
    equal to a real one hides its imaginary part's meaning."""
    items = np.asarray(x, dtype=object).ravel() if isinstance(x, list | tuple | np.ndarray) else [x]
    for v in items:
        if isinstance(v, complex | np.complexfloating) or type(v).__name__ in ("NaN", "ComplexInfinity"):
            return v
        if isinstance(v, float | np.floating) and math.isnan(v):
            return v
    return None


def _empty(x: Any) -> bool:
    """An empty array, collection or string (a SymPy expression is never empty, whatever its length means)."""
    if isinstance(x, np.ndarray):
        return x.size == 0
    if hasattr(x, "free_symbols"):
        return False
    try:
        return len(x) == 0
    except TypeError:
        return False


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return str(x)
    if 1e-3 <= abs(x) < 1e4:
        return f"{x:.4g}"
    return f"{x:.3e}"


def _shown(x: Any) -> str:
    """A value as a summary quotes it: a SymPy expression (or a list or tuple holding one) typeset (``$...$``, its
    LaTeX), a whole number of five digits or more with thousands separators, anything else as text."""
    if hasattr(x, "free_symbols") or (isinstance(x, list | tuple) and any(hasattr(v, "free_symbols") for v in x)):
        import sympy

        return f"${sympy.latex(x)}$"
    if isinstance(x, int | np.integer) and not isinstance(x, bool | np.bool_) and abs(int(x)) >= 10_000:
        return f"{int(x):,}"  # 13,546,816 as a reader writes it
    return str(x)


def round_sig(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits (half away from zero in the decimal string)."""
    return float(f"{x:.{digits - 1}e}")


@dataclass(frozen=True)
class Check:
    """The computed outcome of one test of a claim.

    Build it with :meth:`at_most`, :meth:`at_least`, :meth:`close`, :meth:`all_of` or :meth:`equal`:
    each computes ``holds`` from the numbers it is given and writes a one-line ``summary`` of them.
    """

    holds: bool
    summary: str
    numbers: dict = field(default_factory=dict)
    #: False for a statistical check whose value sits too close to its threshold to decide anything.
    decisive: bool = True

    @staticmethod
    def _bound(value, bound, *, what: str, rtol: float, atol: float, upper: bool) -> Check:
        """``value <= bound`` (``upper``) or ``value >= bound`` elementwise, with slack ``rtol |bound| + atol``."""
        name = "at_most" if upper else "at_least"
        rtol, atol = _tolerances(name, what, rtol, atol)
        v_full = _real_array(value, name, what)
        v = v_full.ravel()
        if v.size == 0:
            raise ValueError(f"Check.{name} ({what}) needs at least one value")
        b_full = _real_array(bound, name, what)
        try:
            b = np.broadcast_to(b_full, v_full.shape).ravel()
        except ValueError:
            shapes = f"a bound of shape {b_full.shape} for values of shape {v_full.shape}"
            raise ValueError(f"Check.{name} ({what}): {shapes}") from None
        slack = (b - v if upper else v - b) + rtol * np.abs(b) + atol
        ok = np.isfinite(v) & np.isfinite(b) & (slack >= 0)
        worst = int(np.argmin(np.where(np.isfinite(slack), slack, -np.inf)))
        nums = {
            "cases": int(v.size),
            "violations": int((~ok).sum()),
            "worst_value": _as_float(v[worst]),
            "worst_bound": _as_float(b[worst]),
        }
        relation, key, extreme, label = (
            (r"$\le$", "max_ratio", np.max, "largest") if upper else (r"$\ge$", "min_ratio", np.min, "smallest")
        )
        if np.all(b > 0):
            with np.errstate(divide="ignore", invalid="ignore"):
                nums[key] = _as_float(extreme(v / b))
        if v.size == 1:  # one value against one bound: "0.6719 <= 1? yes", no count of one case
            summary = f"{what}: {_fmt(nums['worst_value'])} {relation} {_fmt(nums['worst_bound'])}? "
            summary += "yes" if ok.all() else "no"
            if key in nums and nums["worst_bound"] != 1:
                summary += f" (value/bound {_fmt(nums[key])})"
        else:
            summary = (
                f"{what}: {nums['violations']} of {v.size} cases violate value {relation} bound; "
                f"tightest case {_fmt(nums['worst_value'])} vs {_fmt(nums['worst_bound'])}"
            )
            if key in nums:
                summary += f" ({label} value/bound {_fmt(nums[key])})"
        if rtol or atol:
            summary += f"; slack rtol={rtol:g} \u00d7 |bound| + atol={atol:g}"
        return Check(bool(ok.all()), summary, nums)

    @staticmethod
    def at_most(value, bound, *, what: str, rtol: float = 0.0, atol: float = 0.0) -> Check:
        """``value <= bound`` elementwise (up to ``rtol``/``atol`` for rounding); NaN never holds."""
        return Check._bound(value, bound, what=what, rtol=rtol, atol=atol, upper=True)

    @staticmethod
    def at_least(value, bound, *, what: str, rtol: float = 0.0, atol: float = 0.0) -> Check:
        """``value >= bound`` elementwise (up to ``rtol``/``atol``); NaN never holds."""
        return Check._bound(value, bound, what=what, rtol=rtol, atol=atol, upper=False)

    @staticmethod
    def close(actual, expected, *, what: str, rtol: float = 1e-7, atol: float = 0.0) -> Check:
        """``|actual - expected| <= atol + rtol |expected|`` elementwise; reports the largest error."""
        rtol, atol = _tolerances("close", what, rtol, atol)
        a = _real_array(actual, "close", what)
        e = _real_array(expected, "close", what)
        if a.size == 0 or e.size == 0:
            raise ValueError(f"Check.close ({what}) needs at least one value on each side")
        if a.shape != e.shape:
            return Check(
                False,
                f"{what}: shapes differ, {a.shape} vs {e.shape}",
                {"shape_actual": list(a.shape), "shape_expected": list(e.shape)},
            )
        err = np.abs(a - e)
        tol = atol + rtol * np.abs(e)
        ok = bool(np.all(np.isfinite(a)) and np.all(err <= tol))
        max_err = _as_float(np.max(err)) if err.size else 0.0
        denom = np.max(np.abs(e)) if e.size else 0.0
        rel = max_err / denom if denom > 0 else max_err
        nums = {"cases": int(a.size), "max_abs_error": max_err, "max_rel_error": _as_float(rel)}
        summary = (
            f"{what}: largest error {_fmt(max_err)} (relative {_fmt(rel)}) over {a.size} "
            f"{'entry' if a.size == 1 else 'entries'}, "
            f"tolerance atol={atol:g}, rtol={rtol:g}"
        )
        return Check(ok, summary, nums)

    @staticmethod
    def at_printed_precision(value, printed, *, digits: int, what: str, figure: str = "printed") -> Check:
        """``value`` rounded to the ``digits`` significant digits of a printed figure equals ``printed`` (a
        printed "13.59 million" carries 4): compared at the printed precision, never within a wider
        tolerance; a mismatch is reported with its size. ``figure="computed"``: ``printed`` is a corrected
        figure the book computed at the paper's precision, which the summary and the numbers call the book's
        computed figure, never printed."""
        if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
            raise ValueError(f"Check.at_printed_precision ({what}): digits must be a positive int, got {digits!r}")
        if figure not in ("printed", "computed"):
            raise ValueError(
                f"Check.at_printed_precision ({what}): figure must be 'printed' or 'computed', got {figure!r}"
            )
        v = float(_real_array(value, "at_printed_precision", what))
        p = float(_real_array(printed, "at_printed_precision", what))
        if not (math.isfinite(p) and p != 0 and math.isclose(round_sig(p, digits), p, rel_tol=1e-12)):
            raise ValueError(
                f"Check.at_printed_precision ({what}): the printed figure {printed!r} must be finite, nonzero and "
                f"carry at most {digits} significant digits"
            )
        rounded = round_sig(v, digits) if math.isfinite(v) and v != 0 else v
        ok = math.isfinite(v) and math.isclose(rounded, p, rel_tol=1e-12)
        gap = v - p
        against = (
            f"the printed {digits} significant digits, printed {p:,.10g}"
            if figure == "printed"
            else f"the paper's {digits} significant digits, the book's computed figure {p:,.10g}"
        )
        summary = f"{what}: {v:,.10g} is {rounded:,.10g} at {against}: " + (
            "matches" if ok else f"differs by {gap:+,.10g} ({100 * gap / p:+.2f}%)"
        )
        nums = {"value": v, "rounded": rounded, figure: p, "digits": digits, "relative_gap": gap / p}
        return Check(ok, summary, nums)

    @staticmethod
    def equal(actual, expected, *, what: str) -> Check:
        """Exact equality (numbers, strings, SymPy expressions after ``simplify`` by the caller); two empty
        collections (or strings) are refused, not found equal."""
        if _empty(actual) or _empty(expected):
            raise ValueError(f"Check.equal ({what}): an empty value holds on nothing; compare what it contains")
        ok = bool(actual == expected)
        for side in (actual, expected) if ok else ():  # equal only by identity (NaN) or to a complex value
            bad = _unequalable(side)
            if bad is not None:
                raise ValueError(
                    f"Check.equal ({what}): {bad!r} is NaN or complex, never equal to a value in the sense a claim "
                    f"means (use Check.close on real numbers, or compare real parts)"
                )
        relation = "$=$" if ok else r"$\ne$"
        summary = f"{what}: {_shown(actual)} {relation} {_shown(expected)}"
        return Check(ok, summary, {"actual": str(actual), "expected": str(expected)})

    @staticmethod
    def all_of(conditions, *, what: str) -> Check:
        """Every entry of a boolean array holds; reports how many did not. Each entry must be a boolean
        (``True``, ``numpy.True_``): a number (``NaN`` is truthy), ``None`` or a string is refused."""
        raw = np.asarray(conditions, dtype=object).ravel()
        if raw.size == 0:
            raise ValueError(f"Check.all_of ({what}) needs at least one condition")
        wrong = [x for x in raw if not isinstance(x, (bool, np.bool_))]
        if wrong:
            bad = wrong[0]
            raise ValueError(
                f"Check.all_of ({what}): every condition must be a boolean, got {bad!r} ({type(bad).__name__})"
            )
        c = raw.astype(bool)
        bad = int((~c).sum())
        summary = (
            f"{what}: {'holds' if bad == 0 else 'fails'}"
            if c.size == 1
            else f"{what}: {c.size - bad} of {c.size} cases hold"
        )
        return Check(bad == 0, summary, {"cases": int(c.size), "violations": bad})

    @staticmethod
    def combine(checks: Sequence[Check], *, what: str) -> Check:
        """All of several checks hold. That they all hold is decisive only when every part is; that they
        do not is decisive when a failing part is (one decisive counterexample settles a "for all"). A
        failing statistical part, picked among ``m`` parts, decides only beyond the two-standard-error level
        corrected for the choice (Bonferroni: the normal quantile of ``P(Z < -2) / m``, 2.77 for 8 parts),
        so a rate sitting at its threshold on every part is not declared false by the luckiest part."""
        checks = list(checks)
        if not checks:
            raise ValueError("Check.combine needs at least one check")
        ok = all(c.holds for c in checks)
        if len(checks) <= MAX_PARTS_LISTED:
            summary = f"{what}: " + "; ".join(c.summary for c in checks)
        else:  # the count and the tightest part; every part's numbers stay in the evidence
            failing = [c for c in checks if not c.holds]
            pool = failing or checks
            margins = [c for c in pool if "margin_standard_errors" in c.numbers]
            if margins:  # the part nearest its threshold (or, failing, furthest past it)
                shown = min(margins, key=lambda c: c.numbers["margin_standard_errors"])
                label = "worst" if failing else "tightest"
            else:  # parts without a common measure of slack: the first, named as such
                shown = pool[0]
                label = ("failing" if len(failing) == 1 else "first failing") if failing else "first"
            count = f"{len(failing)} of {len(checks)} parts fail" if failing else f"all {len(checks)} parts hold"
            summary = f"{what}: {count}; {label}: {shown.summary}"
        if ok:
            decisive = all(c.decisive for c in checks)
        else:
            z = _normal.inv_cdf(1 - _normal.cdf(-DECISIVE_STANDARD_ERRORS) / len(checks))
            decisive = any(
                abs(c.numbers["margin_standard_errors"]) >= z if "margin_standard_errors" in c.numbers else c.decisive
                for c in checks
                if not c.holds
            )
            if any("margin_standard_errors" in c.numbers for c in checks if not c.holds):
                summary += f" (a failing statistical part decides at {z:.2f} standard errors, {len(checks)} parts)"
        return Check(ok, summary, {"parts": [c.numbers for c in checks]}, decisive)

    @staticmethod
    def statistical(
        estimate,
        standard_error,
        threshold,
        *,
        what: str,
        test: str,
        n: int,
        above: bool = True,
        min_standard_errors: float = DECISIVE_STANDARD_ERRORS,
    ) -> Check:
        """A statistical comparison: ``estimate > threshold`` (``above``) or ``estimate < threshold``.

        ``standard_error`` is the estimate's standard error (or half the width of a 68% bootstrap
        interval); ``test`` names the statistic (e.g. "median of 10 seeds, bootstrap standard error") and
        ``n`` the number of independent instances behind it. The check holds when the estimate is on the
        claimed side of the threshold; it is *decisive* only when it is at least ``min_standard_errors``
        standard errors away from the threshold. The margin in standard errors is in the summary.
        """
        scalars = []
        for label, x in (("estimate", estimate), ("standard_error", standard_error), ("threshold", threshold)):
            arr = _real_array(x, "statistical", what)
            if arr.size != 1:
                raise ValueError(f"Check.statistical ({what}): {label} must be one number, got shape {arr.shape}")
            scalars.append(float(arr.ravel()[0]))
        est, se, thr = scalars
        if isinstance(n, bool) or not isinstance(n, numbers.Real) or not (float(n).is_integer() and n >= 1):
            raise ValueError(
                f"Check.statistical ({what}): n must be a whole number >= 1 (the independent instances), got {n!r}"
            )
        if not (math.isfinite(se) and se >= 0):
            raise ValueError(f"Check.statistical: standard_error must be finite and >= 0, got {standard_error!r}")
        gap = (est - thr) if above else (thr - est)
        margin = gap / se if se > 0 else (math.inf if gap > 0 else -math.inf if gap < 0 else 0.0)
        ok = math.isfinite(est) and gap > 0
        decisive = math.isfinite(est) and abs(margin) >= min_standard_errors
        side = "$>$" if above else "$<$"
        summary = (
            f"{what}: {test}, $n = {int(n)}$: {_fmt(est)} (standard error {_fmt(se)}) {side} {_fmt(thr)}? "
            f"margin {margin:+,.2f} standard errors"
            + ("" if decisive else f" (not decisive: under {min_standard_errors:g})")
        )
        nums = {
            "estimate": est,
            "standard_error": se,
            "threshold": thr,
            "n": int(n),
            "margin_standard_errors": _as_float(margin),
        }
        return Check(bool(ok), summary, nums, bool(decisive))


@dataclass(frozen=True)
class NoUsableControl:
    """A claim's declared statement that it has no usable negative control: the control it ran (``tried``) does
    not decide (:func:`control_without_power` gives why). A claim without a usable control cannot be
    confirmed, corrected, refuted or found to have a proof gap: its verdict is ``undecided``, with the reason."""

    tried: Check

    def __post_init__(self):
        if not isinstance(self.tried, Check):
            raise TypeError("NoUsableControl needs the Check of the control that was tried")
        if control_without_power(self.tried) is None:
            raise ValueError(f"the control decides, so it is usable: {self.tried.summary}")

    @property
    def reason(self) -> str:
        return (
            f"no usable negative control, so the claim cannot be confirmed: the control "
            f"{control_without_power(self.tried)}"
        )

    @staticmethod
    def unless_decisive(control: Check) -> Check | NoUsableControl:
        """``control`` where it decides, else the statement that the claim has no usable control."""
        return control if control_without_power(control) is None else NoUsableControl(control)


def control_without_power(control: Check) -> str | None:
    """Why a negative control shows nothing about its check, or None when it can count.

    A control counts only when it decides: a statistical control (one with ``margin_standard_errors``) must
    sit at least :data:`DECISIVE_STANDARD_ERRORS` standard errors from its threshold, on the side the claim
    rules out when it fails; any check marked not decisive (a combined check whose failing part is within its
    noise) is refused too. A control that "fails" inside its noise would fail on any input."""
    margin = control.numbers.get("margin_standard_errors")
    if margin is not None and not (abs(float(margin)) >= DECISIVE_STANDARD_ERRORS):
        return (
            f"its margin is {float(margin):+.2f} standard errors, within {DECISIVE_STANDARD_ERRORS:g} of its "
            f"threshold: {control.summary}"
        )
    if not control.decisive:
        return f"it is not decisive: {control.summary}"
    return None


def step_keys(number: int) -> tuple[str, str]:
    """The evidence keys of a claim's proof step ``number`` (from 1) and of its repair: ``("proof_step", "repair")``
    for the first (the keys a claim with one step has always had), ``("proof_step_2", "repair_2")`` for the second,
    and so on."""
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"a proof step's number counts from 1, got {number!r}")
    return ("proof_step", "repair") if number == 1 else (f"proof_step_{number}", f"repair_{number}")


def recorded_step_count(evidence: dict) -> int:
    """How many proof steps a claim's recorded evidence holds: the steps 1, 2, ... whose keys
    (:func:`step_keys`) are there, in a row."""
    n = 0
    while step_keys(n + 1)[0] in evidence:
        n += 1
    return n


def _step_checks(proof_step: Check | Sequence[Check] | None) -> tuple[Check, ...]:
    if proof_step is None:
        return ()
    return tuple(proof_step) if isinstance(proof_step, (list, tuple)) else (proof_step,)


def derive_verdict(
    printed: Check | None,
    corrected: Check | None = None,
    proof_step: Check | Sequence[Check] | None = None,
    control_usable: bool = True,
) -> str:
    """The verdict that follows from the computed checks (see the module docstring).

    ``printed`` tests the statement as printed; ``corrected`` a corrected statement; ``proof_step`` a
    step or construction of the printed proof (or several, a sequence of their checks), only meaningful when the
    statement itself holds: every step holds -> ``confirmed``; some step fails and every failing step fails
    decisively -> ``proof-gap``; a failing step within its noise -> ``undecided``. ``control_usable`` is False for
    a claim without a usable negative control (:class:`NoUsableControl`), whose verdict is then ``undecided``.
    """
    if printed is None:
        return "not-checkable-here"
    if not control_usable:
        return "undecided"
    if not printed.decisive:
        return "undecided"
    if printed.holds:
        failing = [step for step in _step_checks(proof_step) if not step.holds]
        if not failing:
            return "confirmed"
        # a proof step that fails only within its statistical noise decides nothing about the proof
        return "proof-gap" if all(step.decisive for step in failing) else "undecided"
    if corrected is not None and corrected.holds:
        return "corrected" if corrected.decisive else "undecided"
    return "refuted"


def undecided_reason(
    printed: Check, corrected: Check | None = None, proof_step: Check | Sequence[Check] | None = None
) -> str:
    """Which part of an ``undecided`` claim sits within its noise, with its summary (margin in standard errors);
    of several proof steps, the first that fails within its noise, by its number."""
    steps = _step_checks(proof_step)
    named = [
        (f"the check of proof step {i}" if len(steps) > 1 else "the proof step's check", s)
        for i, s in enumerate(steps, 1)
        if len(steps) == 1 or not s.holds
    ]
    for name, check in (("the statement's check", printed), *named, ("the corrected statement's check", corrected)):
        if check is not None and not check.decisive:
            return f"{name} is within its noise: {check.summary}"
    raise ValueError("undecided_reason: every check is decisive")


def verdict_from_evidence(evidence: dict, control: dict | None = None) -> str:
    """The verdict that a claim's recorded evidence implies (each part's ``holds`` and ``decisive``, and whether
    its recorded ``control`` is usable), as :func:`derive_verdict` gives it: a claims record whose verdict
    differs was not written by a chapter."""

    def part(name):
        rec = evidence.get(name)
        if rec is None:
            return None
        if (
            not isinstance(rec, dict)
            or not isinstance(rec.get("holds"), bool)
            or not isinstance(rec.get("decisive", True), bool)
        ):
            raise ValueError(f"evidence part {name!r} has no boolean 'holds'/'decisive'")
        return Check(rec["holds"], str(rec.get("summary", "")), {}, rec.get("decisive", True))

    usable = not (isinstance(control, dict) and control.get("usable") is False)
    steps = [part(step_keys(n)[0]) for n in range(1, recorded_step_count(evidence) + 1)]
    return derive_verdict(part("printed"), part("corrected"), steps, usable)
