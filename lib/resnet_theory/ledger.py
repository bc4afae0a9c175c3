"""The claims ledger: every claim a chapter checks, with a verdict derived from computation.

A chapter creates one :class:`Ledger`, records each claim it checks with :meth:`Ledger.claim` (or
:meth:`Ledger.not_checkable` when it cannot be checked here, with the reason), and ends with
:meth:`Ledger.show`, which renders the chapter's claims table and, when the book executor runs the
chapter, writes the claims as JSON beside the executed notebook. ``book/ledger.md`` gathers every
chapter's JSON with :func:`load_claims` and renders it with :func:`render_ledger`.

The verdict is never typed in. A claim carries :class:`Check` objects, each built by one of the
constructors below from computed numbers; the verdict follows from them:

- the statement as printed holds, every proof step checked holds    -> ``confirmed``
- the statement holds (checked independently of the printed proof),
  but a step or construction of the printed proof fails as written  -> ``proof-gap`` (step and repair recorded)
- the statement as printed fails on a counterexample,
  a corrected statement holds                                       -> ``corrected`` (an erratum; both recorded)
- the statement as printed fails and no corrected form holds        -> ``refuted``
- a statistical check decides nothing (its margin is within its noise) -> ``undecided`` (which part, by how
  many standard errors)
- :meth:`Ledger.not_checkable`: the check needs hardware or data this
  build does not have                                               -> ``not-checkable-here`` (what it needs)

``corrected`` and ``refuted`` need a counterexample to the *statement*: a failing step of a proof whose
statement still holds is a ``proof-gap``, never an erratum.

Every checkable claim carries a **negative control**: the same check run on an *input the claim rules out*
(a depth below the theorem's, ``det R < 0``, a width far below the claim's, a network without shortcuts, the
constant of a special case applied to the general one, ...), whose outcome is not known before it runs. Its
record says what that input is and why the claim rules it out (``control_input``, shown on the ledger page).
A control is never built from the numbers its check just measured (a bound scaled below the worst case just
found, a threshold no value can reach): such a control proves nothing. The control must come out
``holds = False``; a control that holds means the check could not tell the claim's inputs from others, and
:meth:`Ledger.show` refuses to publish the chapter (:class:`LedgerDefect`).

A statistical check (:meth:`Check.statistical`) is *decisive* only when the measured value sits at least
two standard errors from its threshold; a claim whose deciding check is not decisive is ``undecided``
(with the part and its margin in standard errors as the reason), never a coin-flip ``confirmed``; a
``proof-gap`` likewise needs a proof step that fails decisively, and ``corrected`` a corrected statement that
holds decisively. :meth:`Check.combine` of several checks is decisively true when every part is decisive,
and decisively false when some failing part is. ``not-checkable-here`` is kept for what needs hardware or
data this build does not have (``needs`` names it); a statistical reason is never filed under it.

Printed statements a chapter discusses but does not check are listed with :meth:`Ledger.skip` (what, where,
and why not), and the ledger page shows them under "Not checked, and why".

Each claim also says where its statement comes from (``source``): ``paper`` (the paper states it),
``review`` (the statement as a review of the paper gives it) or ``reconstruction`` (our reconstruction,
when the paper's text is not available to us).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

VERDICTS = ("confirmed", "proof-gap", "corrected", "refuted", "undecided", "not-checkable-here")

#: Where a claim's statement comes from.
SOURCES = {
    "paper": "stated in the paper",
    "review": "as a review of the paper states it",
    "reconstruction": "our reconstruction (the paper's text was not available to us)",
    "abstract": "as the paper's abstract states it",
    "question": "the book's own question (not a statement of the paper)",
}

#: Papers the book reviews or cites in claims: key -> (display name, bibtex key).
PAPERS = {
    "hardt-ma": ("Hardt & Ma (2017)", "hardt2017identity"),
    "bartlett-helmbold-long": ("Bartlett, Helmbold & Long (2018)", "bartlett2018gradient"),
    "bartlett-evans-long": ("Bartlett, Evans & Long (2018)", "bartlett2018representing"),
    "shamir": ("Shamir (2018)", "shamir2018resnets"),
    "he-et-al": ("He, Zhang, Ren & Sun (2016)", "he2016deep"),
}

#: A statistical check decides a verdict only this many standard errors or more from its threshold.
DECISIVE_STANDARD_ERRORS = 2.0
_normal = NormalDist()
#: A combined check with more parts than this is summarised by its count and its tightest part.
MAX_PARTS_LISTED = 4


class LedgerDefect(RuntimeError):
    """A ledger cannot be published: a claim's negative control holds (its check cannot fail), a checked claim
    has no control input, a verdict does not follow from its evidence, or a not-checkable claim hides a statistic."""


#: Words of a statistical reason: a ``not-checkable-here`` claim whose reason says one of them is ``undecided``.
_STATISTICAL_WORDS = (
    "standard error",
    "within noise",
    "within its noise",
    "not decisive",
    "does not decide",
    "statistically",
    "significan",
)


class ClaimsFileError(LedgerDefect, ValueError):
    """A claims file that cannot be published or compared: malformed (not JSON, unknown keys, wrong types),
    a claim id recorded twice, a chapter no longer in the book's TOC, or a file that differs from the one its
    chapter's execution recorded (its SHA-256 in the execution record). The message names the file."""


CLAIMS_FILE_ENV = "RESNET_THEORY_CLAIMS_FILE"
BUILD_DIR_ENV = "RESNET_THEORY_BUILD_DIR"
#: The book's root (set by the executor for the pages it runs), where ``_toc.yml`` is.
ROOT_ENV = "RESNET_THEORY_ROOT"


def _as_float(x: Any) -> float:
    """A plain float for the JSON record (NaN and infinities are kept: they make a check fail, visibly)."""
    return float(x)


def _fmt(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return str(x)
    if 1e-3 <= abs(x) < 1e4:
        return f"{x:.4g}"
    return f"{x:.3e}"


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
        v = np.asarray(value, dtype=float).ravel()
        b = np.broadcast_to(np.asarray(bound, dtype=float), np.asarray(value).shape).ravel()
        if v.size == 0:
            raise ValueError(f"Check.{name} needs at least one value")
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
            ("<=", "max_ratio", np.max, "largest") if upper else (">=", "min_ratio", np.min, "smallest")
        )
        if np.all(b > 0):
            with np.errstate(divide="ignore", invalid="ignore"):
                nums[key] = _as_float(extreme(v / b))
        summary = (
            f"{what}: {nums['violations']} of {v.size} cases violate value {relation} bound; "
            f"tightest case {_fmt(nums['worst_value'])} vs {_fmt(nums['worst_bound'])}"
        )
        if key in nums:
            summary += f" ({label} value/bound {_fmt(nums[key])})"
        if rtol or atol:
            summary += f"; slack rtol={rtol:g} x |bound| + atol={atol:g}"
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
        a = np.asarray(actual, dtype=float)
        e = np.asarray(expected, dtype=float)
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
            f"{what}: largest error {_fmt(max_err)} (relative {_fmt(rel)}) over {a.size} entries, "
            f"tolerance atol={atol:g}, rtol={rtol:g}"
        )
        return Check(ok, summary, nums)

    @staticmethod
    def equal(actual, expected, *, what: str) -> Check:
        """Exact equality (numbers, strings, SymPy expressions after ``simplify`` by the caller)."""
        ok = bool(actual == expected)
        summary = f"{what}: {actual!s} {'==' if ok else '!='} {expected!s}"
        return Check(ok, summary, {"actual": str(actual), "expected": str(expected)})

    @staticmethod
    def all_of(conditions, *, what: str) -> Check:
        """Every entry of a boolean array holds; reports how many did not."""
        c = np.asarray(conditions, dtype=bool).ravel()
        if c.size == 0:
            raise ValueError("Check.all_of needs at least one condition")
        bad = int((~c).sum())
        return Check(
            bad == 0, f"{what}: {c.size - bad} of {c.size} cases hold", {"cases": int(c.size), "violations": bad}
        )

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
            tightest = min(margins, key=lambda c: c.numbers["margin_standard_errors"]) if margins else pool[0]
            count = f"{len(failing)} of {len(checks)} parts fail" if failing else f"all {len(checks)} parts hold"
            summary = f"{what}: {count}; {'worst' if failing else 'tightest'}: {tightest.summary}"
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
        est, se, thr = float(estimate), float(standard_error), float(threshold)
        if not (math.isfinite(se) and se >= 0):
            raise ValueError(f"Check.statistical: standard_error must be finite and >= 0, got {standard_error!r}")
        gap = (est - thr) if above else (thr - est)
        margin = gap / se if se > 0 else (math.inf if gap > 0 else -math.inf if gap < 0 else 0.0)
        ok = math.isfinite(est) and gap > 0
        decisive = math.isfinite(est) and abs(margin) >= min_standard_errors
        side = ">" if above else "<"
        summary = (
            f"{what}: {test}, n={int(n)}: {_fmt(est)} (standard error {_fmt(se)}) {side} {_fmt(thr)}? "
            f"margin {margin:+.2f} standard errors"
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


@dataclass
class Claim:
    """One claim of a paper as the book checks it."""

    id: str
    paper: str
    ref: str
    statement: str
    chapter: str
    section: str
    verdict: str
    check: str
    evidence: dict
    corrected_statement: str | None = None
    reason: str | None = None
    #: "paper", "review" or "reconstruction" (see :data:`SOURCES`).
    source: str = "paper"
    #: The negative control: ``{"holds": bool, "summary": str, "input": str}`` (``input``: what the control's
    #: input is and why the claim rules it out); ``None`` only when not checkable here.
    control: dict | None = None
    #: For a proof gap: the step of the printed proof that fails, and the repair that holds.
    proof_step: str | None = None
    repair: str | None = None
    #: For ``not-checkable-here``: the hardware or data the check needs and this build lacks.
    needs: str | None = None
    #: Which review, or which text, the source is (``resnet_theory.claims.Source.detail``).
    source_detail: str | None = None
    #: The function that computes the claim's evidence (``module:qualname``), its file and first line.
    function: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    #: Ids of the printed results whose printed proofs this claim's printed proof uses.
    rests_on: list | None = None

    def __repr__(self) -> str:  # a chapter cell that ends in ledger.claim(...) shows one short line
        return f"Claim {self.id}: {self.verdict}"

    @property
    def paper_name(self) -> str:
        return PAPERS.get(self.paper, (self.paper, None))[0]

    @property
    def source_text(self) -> str:
        return SOURCES.get(self.source, self.source)

    @property
    def erratum(self) -> str | None:
        """One sentence for the errata list: what is printed, what fails, what holds (else ``None``)."""
        where = f"{self.paper_name}, {self.ref}"
        if self.verdict == "corrected":
            printed, corrected = self.evidence.get("printed", {}), self.evidence.get("corrected", {})
            return (
                f"{where}: as printed, \u201c{self.statement}\u201d fails ({printed.get('summary', self.check)}); "
                f"what holds: \u201c{self.corrected_statement}\u201d ({corrected.get('summary', '')})."
            )
        if self.verdict == "proof-gap":
            step, repair = self.evidence.get("proof_step", {}), self.evidence.get("repair", {})
            return (
                f"{where}: the statement holds ({self.evidence.get('printed', {}).get('summary', '')}), "
                f"but the proof's step \u201c{self.proof_step}\u201d fails as written "
                f"({step.get('summary', '')}); repair: \u201c{self.repair}\u201d ({repair.get('summary', '')})."
            )
        return None


def derive_verdict(printed: Check | None, corrected: Check | None = None, proof_step: Check | None = None) -> str:
    """The verdict that follows from the computed checks (see the module docstring).

    ``printed`` tests the statement as printed; ``corrected`` a corrected statement; ``proof_step`` a
    step or construction of the printed proof, only meaningful when the statement itself holds.
    """
    if printed is None:
        return "not-checkable-here"
    if not printed.decisive:
        return "undecided"
    if printed.holds:
        if proof_step is None or proof_step.holds:
            return "confirmed"
        # a proof step that fails only within its statistical noise decides nothing about the proof
        return "proof-gap" if proof_step.decisive else "undecided"
    if corrected is not None and corrected.holds:
        return "corrected" if corrected.decisive else "undecided"
    return "refuted"


def undecided_reason(printed: Check, corrected: Check | None = None, proof_step: Check | None = None) -> str:
    """Which part of an ``undecided`` claim sits within its noise, with its summary (margin in standard errors)."""
    for name, check in (
        ("the statement's check", printed),
        ("the proof step's check", proof_step),
        ("the corrected statement's check", corrected),
    ):
        if check is not None and not check.decisive:
            return f"{name} is within its noise: {check.summary}"
    raise ValueError("undecided_reason: every check is decisive")


def verdict_from_evidence(evidence: dict) -> str:
    """The verdict that a claim's recorded evidence implies (each part's ``holds`` and ``decisive``), as
    :func:`derive_verdict` gives it: a claims record whose verdict differs was not written by a chapter."""

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

    return derive_verdict(part("printed"), part("corrected"), part("proof_step"))


class Ledger:
    """The claims one chapter checks.

    ``chapter`` is the chapter's file stem (``"linear"`` for ``book/linear.md``); ``section`` labels
    passed to :meth:`claim` are MyST labels in that chapter (``(linear-thm-2-1)=``) so the book's
    ledger page can link to them.
    """

    def __init__(self, chapter: str):
        self.chapter = chapter
        self.claims: list[Claim] = []
        #: Printed statements discussed but not checked (see :meth:`skip`).
        self.skipped: list[dict] = []

    def _add(self, claim: Claim) -> Claim:
        if claim.paper not in PAPERS:
            raise ValueError(f"unknown paper key {claim.paper!r}; known: {sorted(PAPERS)}")
        if claim.source not in SOURCES:
            raise ValueError(f"unknown source {claim.source!r} for claim {claim.id!r}; known: {sorted(SOURCES)}")
        if any(c.id == claim.id for c in self.claims):
            raise ValueError(f"claim {claim.id!r} recorded twice in chapter {self.chapter!r}")
        self.claims.append(claim)
        return claim

    def claim(
        self,
        id: str,
        *,
        paper: str,
        ref: str,
        statement: str,
        section: str,
        printed: Check,
        control: Check | Sequence[Check],
        control_input: str,
        source: str = "paper",
        corrected: Check | None = None,
        corrected_statement: str | None = None,
        proof_step: Check | None = None,
        proof_step_statement: str | None = None,
        repair: Check | None = None,
        repair_statement: str | None = None,
    ) -> Claim:
        """Record a claim checked by computation; the verdict is derived from the checks.

        ``printed`` tests the statement as the paper (or, per ``source``, the review or our
        reconstruction) gives it. ``control`` is the negative control: the same check on an input the
        claim rules out, never built from the numbers ``printed`` measured; it must fail (several controls
        may be given; each must fail). ``control_input`` says in one sentence what that input is and why
        the claim rules it out.

        - When ``printed`` fails on a counterexample and a corrected statement holds, pass that
          statement's check as ``corrected`` with its wording as ``corrected_statement``.
        - When the statement holds but a step or construction of the printed proof fails as written,
          pass that step's check as ``proof_step`` (it fails) with ``proof_step_statement``, and the
          repaired step as ``repair`` (it holds) with ``repair_statement``: the verdict is ``proof-gap``.
        """
        checks = {"printed": printed, "corrected": corrected, "proof_step": proof_step, "repair": repair}
        controls = [control] if isinstance(control, Check) else list(control or [])
        if (
            not all(c is None or isinstance(c, Check) for c in checks.values())
            or not controls
            or not all(isinstance(c, Check) for c in controls)
        ):
            raise TypeError(
                "printed, control (and corrected, proof_step, repair when given) must be Check "
                "objects built from computed numbers; every checkable claim needs a control"
            )
        if not isinstance(printed, Check):
            raise TypeError("printed must be a Check built from computed numbers")
        if not isinstance(control_input, str) or len(control_input.split()) < 4:
            raise ValueError(
                f"claim {id!r}: control_input must say, in a sentence, what the control's input is "
                "and why the claim rules it out"
            )
        if corrected is not None and not corrected_statement:
            raise ValueError("a corrected check needs the corrected statement")
        if (proof_step is None) != (repair is None) or (
            proof_step is not None and not (proof_step_statement and repair_statement)
        ):
            raise ValueError(
                "a proof step needs its repair, and both need their wording (proof_step_statement, repair_statement)"
            )
        verdict = derive_verdict(printed, corrected, proof_step)
        if verdict == "proof-gap" and not repair.holds:
            raise ValueError(f"claim {id!r}: the repair of the failing proof step does not hold: {repair.summary}")
        summary = "statement: " + printed.summary
        if corrected is not None:
            summary += " | corrected statement: " + corrected.summary
        if proof_step is not None:
            summary += " | proof step: " + proof_step.summary + " | repair: " + repair.summary
        evidence = {
            k: {"holds": c.holds, "decisive": c.decisive, "summary": c.summary, **c.numbers}
            for k, c in checks.items()
            if c is not None
        }
        control_record = {
            "holds": any(c.holds for c in controls),
            "summary": " | ".join(c.summary for c in controls),
            "input": control_input,
        }
        reason = undecided_reason(printed, corrected, proof_step) if verdict == "undecided" else None
        return self._add(
            Claim(
                id,
                paper,
                ref,
                statement,
                self.chapter,
                section,
                verdict,
                summary,
                _jsonable(evidence),
                corrected_statement,
                reason,
                source,
                _jsonable(control_record),
                proof_step_statement,
                repair_statement,
            )
        )

    def not_checkable(
        self,
        id: str,
        *,
        paper: str,
        ref: str,
        statement: str,
        section: str,
        reason: str,
        needs: str,
        source: str = "paper",
    ) -> Claim:
        """Record a claim this book cannot check here: ``needs`` names the hardware or data the check needs
        and this build lacks (e.g. "the CIFAR-10 archives and a GPU"), ``reason`` says why in a sentence.

        A statistic that does not decide is not "not checkable": record it with :meth:`claim`, whose
        verdict is then ``undecided``. A reason that speaks of standard errors or noise is refused."""
        if not reason or not needs or not str(needs).strip():
            raise ValueError("a claim that is not checkable here needs the reason and what it needs (hardware or data)")
        if _is_statistical(reason):
            raise ValueError(
                f"claim {id!r}: a statistical reason ({reason!r}) makes a claim undecided, not "
                "not-checkable-here: record the statistic with Ledger.claim"
            )
        return self._add(
            Claim(
                id,
                paper,
                ref,
                statement,
                self.chapter,
                section,
                "not-checkable-here",
                "",
                {},
                None,
                reason,
                source,
                needs=needs,
            )
        )

    def skip(self, *, paper: str, ref: str, statement: str, why: str) -> None:
        """A printed statement the chapter discusses but does not check, and why (listed on the ledger page
        under "Not checked, and why"; not a claim, no verdict)."""
        if paper not in PAPERS:
            raise ValueError(f"unknown paper key {paper!r}; known: {sorted(PAPERS)}")
        if not (ref and statement and why):
            raise ValueError("a skipped statement needs its printed location, the statement and why it is not checked")
        self.skipped.append({"paper": paper, "ref": ref, "statement": statement, "why": why, "chapter": self.chapter})

    def defects(self) -> list[str]:
        """Claims that cannot be published (see :func:`claim_defects`)."""
        return claim_defects(self.claims)

    # --- output -------------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps(
            {"chapter": self.chapter, "claims": [asdict(c) for c in self.claims], "skipped": self.skipped}, indent=1
        )

    def save(self, path: str | os.PathLike | None = None) -> Path | None:
        """Write the claims as JSON to ``path``, or to the file the book executor names; else nothing."""
        target = path or os.environ.get(CLAIMS_FILE_ENV)
        if not target:
            return None
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(target)
        return target

    def table_html(self) -> str:
        return claims_table_html(self.claims, link=False)

    def summary_sentence(self) -> str:
        """E.g. "7 claims: 4 confirmed, 1 proof gap, 1 corrected, 1 not checkable here"."""
        counts = Counter(c.verdict for c in self.claims)
        parts = [f"{counts[v]} {v.replace('-', ' ')}" for v in VERDICTS if counts[v]]
        n = len(self.claims)
        return f"{n} claim{'s' if n != 1 else ''}: " + ", ".join(parts) if parts else "no claims"

    def glue(self) -> None:
        """Glue each verdict as ``verdict_<id>`` (see :func:`verdict_key`) and the chapter's summary
        sentence as ``ledger_summary``, for ``{glue:text}`` anywhere in the chapter."""
        from myst_nb import glue

        for c in self.claims:
            glue(verdict_key(c.id), _Word(c.verdict), display=False)
        glue("ledger_summary", _Word(self.summary_sentence()), display=False)

    def show(self):
        """Save the claims (when executed by the book executor), glue the verdicts, return the table.

        Raises :class:`LedgerDefect` when a claim's negative control holds: the chapter must not be
        published with a check that could not have failed.
        """
        from IPython.display import HTML

        self.save()
        self.glue()
        defects = self.defects()
        if defects:
            raise LedgerDefect(
                "claims that cannot be published (fix the check or its control):\n  " + "\n  ".join(defects)
            )
        return HTML(self.table_html())


class _Word(str):
    """A string that glue shows without quotes."""

    def __repr__(self):
        return str(self)


def control_holds(claim: Claim) -> bool:
    """Whether the claim's negative control holds (a defect: its check could not have failed)."""
    return claim.control is not None and bool(claim.control["holds"])


def _is_statistical(reason: str | None) -> bool:
    text = (reason or "").lower()
    return any(word in text for word in _STATISTICAL_WORDS)


def claim_defects(claims: Iterable[Claim]) -> list[str]:
    """Claims that cannot be published, one line each: a negative control that holds (the check could not
    have failed); a checked claim without a control or without ``control.input``; a verdict that does not
    follow from its evidence; a ``not-checkable-here`` claim that ran a check, gives a statistical reason or
    does not name what it needs."""
    out = []
    for c in claims:
        if c.verdict == "not-checkable-here" and not c.evidence:
            if not c.needs or not str(c.needs).strip():
                out.append(f"{c.id}: not checkable here, but it does not say what hardware or data it needs")
            if _is_statistical(c.reason):
                out.append(f"{c.id}: not checkable here for a statistical reason ({c.reason}): that is 'undecided'")
            continue
        if not c.evidence:
            out.append(f"{c.id}: verdict {c.verdict!r} without evidence")
            continue
        try:
            implied = verdict_from_evidence(c.evidence)
        except ValueError as exc:
            out.append(f"{c.id}: malformed evidence ({exc})")
            continue
        if implied != c.verdict:
            out.append(f"{c.id}: verdict {c.verdict!r} does not follow from its evidence (which gives {implied!r})")
        if not isinstance(c.control, dict) or not isinstance(c.control.get("holds"), bool):
            out.append(f"{c.id}: a checked claim without a negative control")
            continue
        if control_holds(c):
            out.append(f"{c.id}: the negative control holds ({c.control.get('summary')})")
        if not isinstance(c.control.get("input"), str) or not c.control["input"].strip():
            out.append(
                f"{c.id}: the negative control does not say what its input is and why the claim rules "
                "it out (control.input)"
            )
    return out


def verdict_key(claim_id: str) -> str:
    """The glue key of a claim's verdict: ``hardt-ma/thm-2.1`` -> ``verdict_hardt_ma_thm_2_1``."""
    return "verdict_" + claim_id.replace("/", "_").replace("-", "_").replace(".", "_")


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


_STR, _OPT_STR, _DICT, _OPT_DICT = (str,), (str, type(None)), (dict,), (dict, type(None))
#: The type of every field of a claims record (a record holds exactly these keys, the optional ones may be
#: missing).
_CLAIM_FIELD_TYPES = {
    "id": _STR,
    "paper": _STR,
    "ref": _STR,
    "statement": _STR,
    "chapter": _STR,
    "section": _STR,
    "verdict": _STR,
    "check": _STR,
    "evidence": _DICT,
    "corrected_statement": _OPT_STR,
    "reason": _OPT_STR,
    "source": _STR,
    "control": _OPT_DICT,
    "proof_step": _OPT_STR,
    "repair": _OPT_STR,
    "needs": _OPT_STR,
    "source_detail": _OPT_STR,
    "function": _OPT_STR,
    "source_file": _OPT_STR,
    "source_line": (int, type(None)),
    "rests_on": (list, type(None)),
}
_REQUIRED_CLAIM_FIELDS = ("id", "paper", "ref", "statement", "chapter", "section", "verdict", "check", "evidence")


def claim_from_dict(d: dict) -> Claim:
    """A :class:`Claim` from its JSON record; a record with unknown or missing keys, a value of the wrong type, or
    an unknown verdict, source or paper raises :class:`ValueError` saying which."""
    if not isinstance(d, dict):
        raise ValueError(f"a claim record must be an object, got {type(d).__name__}")
    label = f"claim {d.get('id')!r}" if isinstance(d.get("id"), str) else "a claim record"
    unknown = sorted(str(k) for k in d if k not in _CLAIM_FIELD_TYPES)
    if unknown:
        raise ValueError(f"{label} has unknown keys: {', '.join(unknown)}")
    missing = [k for k in _REQUIRED_CLAIM_FIELDS if k not in d]
    if missing:
        raise ValueError(f"{label} lacks {', '.join(missing)}")
    for key, types in _CLAIM_FIELD_TYPES.items():
        if key in d and not isinstance(d[key], types):
            raise ValueError(
                f"{label}: {key} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}, "
                f"got {type(d[key]).__name__}"
            )
    claim = Claim(**d)
    if claim.verdict not in VERDICTS:
        raise ValueError(f"claim {claim.id!r} has unknown verdict {claim.verdict!r}")
    if claim.source not in SOURCES:
        raise ValueError(f"claim {claim.id!r} has unknown source {claim.source!r}")
    if claim.paper not in PAPERS:
        raise ValueError(f"claim {claim.id!r} has unknown paper {claim.paper!r}")
    return claim


def _claims_files(directory: Path) -> list[Path]:
    """The published claims files under ``directory``. Hidden files are skipped: they are the executor's
    temporaries (``.NAME.partial-PID.claims.json``) of a chapter still executing, or of a run that was killed."""
    return [p for p in sorted(Path(directory).rglob("*.claims.json")) if not p.name.startswith(".")]


def read_claims_file(path: Path) -> tuple[list[Claim], list[dict]]:
    """The claims and skipped statements of one claims file; :class:`ClaimsFileError` naming the file for
    anything a chapter's :meth:`Ledger.save` could not have written."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ClaimsFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ClaimsFileError(f"{path}: not a claims file (not JSON: {exc})") from None
    try:
        if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
            raise ValueError("it must be an object with a list of 'claims'")
        unknown = sorted(str(k) for k in data if k not in ("chapter", "claims", "skipped"))
        if unknown:
            raise ValueError(f"unknown keys: {', '.join(unknown)}")
        claims = [claim_from_dict(d) for d in data["claims"]]
        skipped = data.get("skipped", [])
        if not isinstance(skipped, list) or not all(
            isinstance(s, dict)
            and all(isinstance(s.get(k), str) for k in ("paper", "ref", "statement", "why", "chapter"))
            for s in skipped
        ):
            raise ValueError("'skipped' must be a list of records with paper, ref, statement, why and chapter")
    except ValueError as exc:
        raise ClaimsFileError(f"{path}: malformed claims file: {exc}") from None
    return claims, skipped


def _default_directory() -> Path | None:
    build = os.environ.get(BUILD_DIR_ENV)
    return Path(build) / "executed" if build else None


def _book_root() -> Path | None:
    """The book's root: the executor says where it is; else the nearest ``_toc.yml`` above the working folder."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    from resnet_theory.book.toc import BookError, find_root

    try:
        return find_root()
    except BookError:
        return None


def verify_claims_files(executed: Path, files: Sequence[Path], root: Path | None = None) -> None:
    """Check that every claims file in a build's ``executed`` folder is what its chapter's execution wrote:
    its chapter is in the book's TOC, and the SHA-256 recorded by the executor when it executed the chapter
    (the execution record ``<build>/cache/<chapter>.json``) matches the file. Raises :class:`ClaimsFileError`
    naming the file otherwise (a file edited by hand, copied from another build, or left by a removed chapter)."""
    from resnet_theory.book.cache import cache_record_path, read_cache_record
    from resnet_theory.book.files import file_sha
    from resnet_theory.book.toc import toc_files

    build = Path(executed).parent
    entries = None
    if root is not None and (Path(root) / "_toc.yml").is_file():
        entries = set(toc_files(Path(root)))
    for path in files:
        entry = path.relative_to(executed).as_posix()[: -len(".claims.json")]
        if entries is not None and entry not in entries:
            raise ClaimsFileError(
                f"{path}: claims of {entry}, which is not a chapter in {Path(root) / '_toc.yml'} "
                f"(a removed or renamed chapter): delete the file"
            )
        record = read_cache_record(build, entry)
        if record is None or "claims_sha" not in record:
            raise ClaimsFileError(
                f"{path}: no execution record ({cache_record_path(build, entry)}) says "
                f"that executing {entry} wrote it: execute {entry} again"
            )
        if record["claims_sha"] != file_sha(path):
            raise ClaimsFileError(
                f"{path}: not the file that executing {entry} wrote (its SHA-256 differs from "
                f"the one in {cache_record_path(build, entry)}; edited by hand?): execute "
                f"{entry} again"
            )


def _load(directory, verify: bool | None) -> tuple[list[Claim], list[dict]]:
    if directory is None:
        directory = _default_directory()
        if directory is None:
            return [], []
        verify = True if verify is None else verify
    directory = Path(directory)
    files = _claims_files(directory)
    if verify:
        verify_claims_files(directory, files, _book_root())
    claims: list[Claim] = []
    skipped: list[dict] = []
    where: dict[str, Path] = {}
    for path in files:
        file_claims, file_skipped = read_claims_file(path)
        for c in file_claims:
            if c.id in where:
                other = where[c.id]
                raise ClaimsFileError(
                    f"{path}: claim {c.id!r} is recorded twice"
                    + ("" if other == path else f" (also in {other})")
                    + ": claim ids must be unique across the book"
                )
            where[c.id] = path
        claims.extend(file_claims)
        skipped.extend(file_skipped)
    return claims, skipped


def load_claims(directory: str | os.PathLike | None = None, *, verify: bool | None = None) -> list[Claim]:
    """Every claim of the ``*.claims.json`` files under ``directory`` (default: the executor's build folder).

    Each file is read strictly (:func:`read_claims_file`), and a claim id may appear once in all of them; any
    problem raises :class:`ClaimsFileError` naming the file. With ``verify`` (the default when reading the
    executor's build folder, as the ledger page does) each file is also checked against what executed it
    (:func:`verify_claims_files`). Hidden files (the executor's temporaries) are skipped.
    """
    return _load(directory, verify)[0]


def load_skipped(directory: str | os.PathLike | None = None, *, verify: bool | None = None) -> list[dict]:
    """Every printed statement the chapters list as not checked (:meth:`Ledger.skip`), in file order (the files
    checked as :func:`load_claims` checks them)."""
    return _load(directory, verify)[1]


def glue_numbers(**values) -> None:
    """Glue several computed numbers at once, each under its keyword (``{glue:text}`name:.3f``` in the text)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)


def verdict_counts(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Counts per paper and verdict, with a ``"total"`` row."""
    table: dict[str, Counter] = {}
    for c in claims:
        table.setdefault(c.paper_name, Counter())[c.verdict] += 1
        table.setdefault("total", Counter())[c.verdict] += 1
    return {paper: {v: counts.get(v, 0) for v in VERDICTS} for paper, counts in table.items()}


_BADGE = {
    "confirmed": "#1b7f3b",
    "proof-gap": "#6a4fb3",
    "corrected": "#b36b00",
    "refuted": "#b00020",
    "undecided": "#8a6d00",
    "not-checkable-here": "#555",
}


_INLINE_MATH = re.compile(r"(?<![\\$])\$([^$\n]+?)\$")


_RELATION = re.compile(r"(=|<|>|&lt;|&gt;|\\le\b|\\ge\b|\\leq\b|\\geq\b|\\ne\b|\\approx\b|\\in\b|\\mapsto\b)")


_OPENS = re.compile(r"\\(left|begin)(?![A-Za-z])")
_CLOSES = re.compile(r"\\(right|end)(?![A-Za-z])")


def math_pieces(tex: str) -> list[str]:
    """``tex`` cut after each relation (``=``, ``\\le``, ...) that stands outside braces, ``\\left...\\right``
    and environments, where TeX itself may break an inline formula; MathJax does not break one, so each piece
    is typeset on its own and the line may break between them. A formula with nothing to cut is one piece."""
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        if _OPENS.match(tex, i) or tex[i] == "{":
            depth += 1
        elif (_CLOSES.match(tex, i) or tex[i] == "}") and depth:
            depth -= 1
        elif tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in "{}":
            i += 2
            continue
        match = _RELATION.match(tex, i) if depth == 0 and i > start else None
        if match:
            end = match.end()
            if tex[start:end].strip() and tex[end:].strip():
                pieces.append(tex[start:end].strip())
                start = end
            i = end
            continue
        i += 1
    pieces.append(tex[start:].strip())
    return [piece for piece in pieces if piece]


def _typeset(match: re.Match) -> str:
    return " ".join(f"\\({piece}\\)" for piece in math_pieces(match.group(1)))


def text_html(text: str | None) -> str:
    """Escape ``text`` for HTML, with its ``$...$`` spans typeset as math: they become ``\\(...\\)`` inside an
    element MathJax processes (the book's pages ignore raw output text otherwise), one per piece of
    :func:`math_pieces`, so that a long formula breaks across lines instead of widening its table."""
    escaped = html.escape(text or "")
    if not _INLINE_MATH.search(escaped):
        return escaped
    return '<span class="mathjax_process">' + _INLINE_MATH.sub(_typeset, escaped) + "</span>"


def claim_anchor(claim_id: str) -> str:
    """The HTML id of a claim's row on the ledger page: ``hardt-ma/thm-2.1`` -> ``claim-hardt-ma-thm-2-1``."""
    return "claim-" + "".join(ch if ch.isalnum() else "-" for ch in claim_id.lower())


def _verdict_badge(verdict: str) -> str:
    return f'<span class="claim-verdict" style="color:{_BADGE[verdict]}">{html.escape(verdict)}</span>'


def _claim_details(c: Claim) -> str:
    """What a reader opens to audit a claim: where the statement comes from, what was computed, the control."""
    rows = [("Source", c.source_text)]
    if c.corrected_statement:
        rows.append(("What holds instead", c.corrected_statement))
    if c.proof_step:
        rows += [("Proof step that fails", c.proof_step), ("Repair", c.repair or "")]
    if c.verdict == "not-checkable-here":
        rows.append(("Why not checked", c.reason or ""))
        if c.needs:
            rows.append(("Needs", c.needs))
    else:
        if c.verdict == "undecided":
            rows.append(("Why undecided", c.reason or ""))
        rows.append(("What the check computed", c.check))
    if c.control is not None:
        if c.control.get("input"):
            rows.append(("Control input", str(c.control["input"])))
        outcome = "fails, as it must" if not c.control.get("holds") else "HOLDS: defect"
        rows.append(("Control result", f"{c.control.get('summary', '')} ({outcome})"))
    items = "".join(f"<dt>{html.escape(k)}</dt><dd>{text_html(v)}</dd>" for k, v in rows)
    return f'<details class="claim-details"><summary>evidence and control</summary><dl>{items}</dl></details>'


def claims_table_html(claims: Sequence[Claim], link: bool = True) -> str:
    """An HTML table of claims, one row each: verdict, the claim (its id, the statement, and the evidence and
    negative control one click away), and where it is printed. With ``link`` each row has an anchor
    (:func:`claim_anchor`) and its id links to the chapter section that checks it."""
    rows = []
    for c in claims:
        ident = html.escape(c.id)
        if link:
            ident = f'<a href="{html.escape(c.chapter)}.html#{html.escape(c.section)}">{ident}</a>'
        anchor = claim_anchor(c.id)
        permalink = f' <a class="claim-permalink" href="#{anchor}" title="link to this claim">#</a>' if link else ""
        rows.append(
            f'<tr id="{anchor}"><td>{_verdict_badge(c.verdict)}</td>'
            f'<td><code class="claim-id">{ident}</code>{permalink}<br>{text_html(c.statement)}'
            f"{_claim_details(c)}</td>"
            f"<td>{html.escape(c.paper_name)}, {html.escape(c.ref)}</td></tr>"
        )
    head = "<tr><th>verdict</th><th>claim</th><th>printed in</th></tr>"
    colgroup = '<colgroup><col class="col-verdict"><col class="col-claim"><col class="col-where"></colgroup>'
    return f'<table class="claims-ledger">{colgroup}<thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def errata_html(claims: Sequence[Claim], link: bool = True) -> str:
    """The errata, one sentence each (what is printed, what fails, what holds); the computed evidence is one
    click away (``<details>``), and the claim's id links to its row in the table below and its section."""
    items = []
    for c in claims:
        if c.verdict not in ("corrected", "proof-gap"):
            continue
        where = f"{c.paper_name}, {c.ref}"
        if c.verdict == "corrected":
            sentence = (
                f"{where}: as printed, the statement fails on a computed counterexample; "
                f"what holds: {c.corrected_statement}"
            )
            parts = (("printed", "The printed statement"), ("corrected", "The corrected statement"))
        else:
            sentence = (
                f"{where}: the statement holds, but a step of the printed proof fails as written "
                f"({c.proof_step}); repaired: {c.repair}"
            )
            parts = (("printed", "The statement"), ("proof_step", "The printed step"), ("repair", "The repair"))
        label = html.escape(c.id)
        if link:
            label = f'<a href="{html.escape(c.chapter)}.html#{html.escape(c.section)}">{label}</a>'
        evidence = "".join(
            f"<dt>{name}</dt><dd>{html.escape(str(c.evidence.get(key, {}).get('summary', '')))}</dd>"
            for key, name in parts
        )
        items.append(
            f'<li>{text_html(sentence.rstrip("."))}. <small>(<code class="claim-id">{label}</code>, '
            f'{c.verdict})</small><details class="claim-details"><summary>the computation</summary>'
            f"<dl><dt>Statement as printed</dt><dd>{text_html(c.statement)}</dd>{evidence}</dl>"
            "</details></li>"
        )
    if not items:
        return '<p class="claims-errata">No erratum: every checked statement and proof step holds as printed.</p>'
    return f'<ul class="claims-errata">{"".join(items)}</ul>'


def counts_table_html(claims: Sequence[Claim]) -> str:
    counts = verdict_counts(claims)
    head = "<tr><th>paper</th>" + "".join(f"<th>{v}</th>" for v in VERDICTS) + "<th>all</th></tr>"
    rows = []
    for paper in sorted(counts, key=lambda p: (p == "total", p)):
        cells = "".join(f"<td>{counts[paper][v]}</td>" for v in VERDICTS)
        rows.append(f"<tr><td>{html.escape(paper)}</td>{cells}<td>{sum(counts[paper].values())}</td></tr>")
    return f'<table class="claims-counts">{head}{"".join(rows)}</table>'


def skipped_html(skipped: Sequence[dict]) -> str:
    """The printed statements the chapters discuss but do not check, with why (one line each)."""
    if not skipped:
        return "<p>Every printed statement the chapters discuss is checked above.</p>"
    items = [
        f"<li><strong>{html.escape(PAPERS.get(s['paper'], (s['paper'],))[0])}, {html.escape(s['ref'])}</strong>: "
        f"{text_html(s['statement'])} <em>Not checked:</em> {text_html(s['why'])} "
        f'(<a href="{html.escape(s["chapter"])}.html">{html.escape(s["chapter"])}</a>)</li>'
        for s in skipped
    ]
    return f'<ul class="claims-skipped">{"".join(items)}</ul>'


def render_ledger(claims: Sequence[Claim], skipped: Sequence[dict] = ()):
    """The ledger page's content: the errata, counts per verdict and paper, then every claim, linked.

    Raises :class:`LedgerDefect` when a recorded claim has a defect (:func:`claim_defects`: a claims file
    that no chapter could have published, e.g. edited by hand or left by an older check): the ledger page
    then fails, and with it the build.
    """
    from IPython.display import HTML

    defects = claim_defects(claims)
    if defects:
        raise LedgerDefect(
            "the ledger cannot be published (fix the check, its control or the claims file):\n  " + "\n  ".join(defects)
        )
    if not claims:
        return HTML(
            "<p><strong>No claims were found.</strong> Execute the book with "
            "<code>make book</code> so that each chapter records its claims.</p>"
        )
    return HTML(
        "<h3>Errata</h3>"
        + errata_html(claims)
        + "<h3>Counts</h3>"
        + counts_table_html(claims)
        + "<h3>Every claim</h3>"
        + claims_table_html(claims, link=True)
        + "<h3>Not checked, and why</h3>"
        + skipped_html(skipped)
    )


def published_claims(directory: str | os.PathLike | None = None) -> list[Claim]:
    """The claims the ledger page publishes (:func:`load_claims`), refused whole when any has a defect
    (:func:`claim_defects`): a claims file no chapter could have written stops the page and the build."""
    claims = load_claims(directory)
    defects = claim_defects(claims)
    if defects:
        raise LedgerDefect(
            "the ledger cannot be published (fix the check, its control or the claims file):\n  " + "\n  ".join(defects)
        )
    return claims


def ledger_section(part: str, claims: Sequence[Claim], skipped: Sequence[dict] = ()):
    """One part of the ledger page, under its own heading in the page (so that it is in the page contents):
    ``"errata"``, ``"counts"``, ``"claims"`` or ``"skipped"``."""
    from IPython.display import HTML

    if not claims and part != "skipped":
        return HTML(
            "<p><strong>No claims were found.</strong> Execute the book with "
            "<code>make book</code> so that each chapter records its claims.</p>"
        )
    render = {
        "errata": lambda: errata_html(claims),
        "counts": lambda: counts_table_html(claims),
        "claims": lambda: claims_table_html(claims, link=True),
        "skipped": lambda: skipped_html(skipped),
    }
    if part not in render:
        raise ValueError(f"unknown ledger part {part!r}; known: {sorted(render)}")
    return HTML(render[part]())
