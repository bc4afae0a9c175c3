"""The claims ledger: every claim a chapter checks, with a verdict derived from computation.

A chapter creates one :class:`Ledger`, records each claim it checks with :meth:`Ledger.claim` (or
:meth:`Ledger.not_checkable` when it cannot be checked here, with the reason), and ends with
:meth:`Ledger.show`, which renders the chapter's claims table and, when the book executor runs the
chapter, writes the claims as JSON beside the executed notebook. ``book/ledger.md`` gathers every
chapter's JSON with :func:`load_claims` and renders it with :func:`render_ledger`.

The verdict is never typed in. A claim carries :class:`Check` objects, each built by one of the
constructors below from computed numbers; the verdict follows from them:

- the printed form holds                                   -> ``confirmed``
- the printed form fails, a corrected form holds           -> ``corrected`` (an erratum; both recorded)
- the printed form fails and no corrected form holds       -> ``refuted``
- :meth:`Ledger.not_checkable`                              -> ``not-checkable-here`` (with the reason)
"""

from __future__ import annotations

import html
import json
import math
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

VERDICTS = ("confirmed", "corrected", "refuted", "not-checkable-here")

#: Papers the book reviews or cites in claims: key -> (display name, bibtex key).
PAPERS = {
    "hardt-ma": ("Hardt & Ma (2017)", "hardt2017identity"),
    "bartlett-helmbold-long": ("Bartlett, Helmbold & Long (2018)", "bartlett2018gradient"),
    "bartlett-evans-long": ("Bartlett, Evans & Long (2018)", "bartlett2018representing"),
    "shamir": ("Shamir (2018)", "shamir2018resnets"),
}

CLAIMS_FILE_ENV = "RESNET_THEORY_CLAIMS_FILE"
BUILD_DIR_ENV = "RESNET_THEORY_BUILD_DIR"


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

    @staticmethod
    def _bound(value, bound, *, what: str, rtol: float, atol: float, upper: bool) -> "Check":
        """``value <= bound`` (``upper``) or ``value >= bound`` elementwise, with slack ``rtol |bound| + atol``."""
        name = "at_most" if upper else "at_least"
        v = np.asarray(value, dtype=float).ravel()
        b = np.broadcast_to(np.asarray(bound, dtype=float), np.asarray(value).shape).ravel()
        if v.size == 0:
            raise ValueError(f"Check.{name} needs at least one value")
        slack = (b - v if upper else v - b) + rtol * np.abs(b) + atol
        ok = np.isfinite(v) & np.isfinite(b) & (slack >= 0)
        worst = int(np.argmin(np.where(np.isfinite(slack), slack, -np.inf)))
        nums = {"cases": int(v.size), "violations": int((~ok).sum()),
                "worst_value": _as_float(v[worst]), "worst_bound": _as_float(b[worst])}
        relation, key, extreme, label = ("<=", "max_ratio", np.max, "largest") if upper else (">=", "min_ratio", np.min, "smallest")
        if np.all(b > 0):
            with np.errstate(divide="ignore", invalid="ignore"):
                nums[key] = _as_float(extreme(v / b))
        summary = (f"{what}: {nums['violations']} of {v.size} cases violate value {relation} bound; "
                   f"tightest case {_fmt(nums['worst_value'])} vs {_fmt(nums['worst_bound'])}")
        if key in nums:
            summary += f" ({label} value/bound {_fmt(nums[key])})"
        return Check(bool(ok.all()), summary, nums)

    @staticmethod
    def at_most(value, bound, *, what: str, rtol: float = 0.0, atol: float = 0.0) -> "Check":
        """``value <= bound`` elementwise (up to ``rtol``/``atol`` for rounding); NaN never holds."""
        return Check._bound(value, bound, what=what, rtol=rtol, atol=atol, upper=True)

    @staticmethod
    def at_least(value, bound, *, what: str, rtol: float = 0.0, atol: float = 0.0) -> "Check":
        """``value >= bound`` elementwise (up to ``rtol``/``atol``); NaN never holds."""
        return Check._bound(value, bound, what=what, rtol=rtol, atol=atol, upper=False)

    @staticmethod
    def close(actual, expected, *, what: str, rtol: float = 1e-7, atol: float = 0.0) -> "Check":
        """``|actual - expected| <= atol + rtol |expected|`` elementwise; reports the largest error."""
        a = np.asarray(actual, dtype=float)
        e = np.asarray(expected, dtype=float)
        if a.shape != e.shape:
            return Check(False, f"{what}: shapes differ, {a.shape} vs {e.shape}",
                         {"shape_actual": list(a.shape), "shape_expected": list(e.shape)})
        err = np.abs(a - e)
        tol = atol + rtol * np.abs(e)
        ok = bool(np.all(np.isfinite(a)) and np.all(err <= tol))
        max_err = _as_float(np.max(err)) if err.size else 0.0
        denom = np.max(np.abs(e)) if e.size else 0.0
        rel = max_err / denom if denom > 0 else max_err
        nums = {"cases": int(a.size), "max_abs_error": max_err, "max_rel_error": _as_float(rel)}
        summary = (f"{what}: largest error {_fmt(max_err)} (relative {_fmt(rel)}) over {a.size} entries, "
                   f"tolerance atol={atol:g}, rtol={rtol:g}")
        return Check(ok, summary, nums)

    @staticmethod
    def equal(actual, expected, *, what: str) -> "Check":
        """Exact equality (numbers, strings, SymPy expressions after ``simplify`` by the caller)."""
        ok = bool(actual == expected)
        summary = f"{what}: {actual!s} {'==' if ok else '!='} {expected!s}"
        return Check(ok, summary, {"actual": str(actual), "expected": str(expected)})

    @staticmethod
    def all_of(conditions, *, what: str) -> "Check":
        """Every entry of a boolean array holds; reports how many did not."""
        c = np.asarray(conditions, dtype=bool).ravel()
        if c.size == 0:
            raise ValueError("Check.all_of needs at least one condition")
        bad = int((~c).sum())
        return Check(bad == 0, f"{what}: {c.size - bad} of {c.size} cases hold",
                     {"cases": int(c.size), "violations": bad})

    @staticmethod
    def combine(checks: Sequence["Check"], *, what: str) -> "Check":
        """All of several checks hold."""
        checks = list(checks)
        if not checks:
            raise ValueError("Check.combine needs at least one check")
        ok = all(c.holds for c in checks)
        return Check(ok, f"{what}: " + "; ".join(c.summary for c in checks),
                     {"parts": [c.numbers for c in checks]})


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

    @property
    def paper_name(self) -> str:
        return PAPERS.get(self.paper, (self.paper, None))[0]


def derive_verdict(printed: Check | None, corrected: Check | None = None) -> str:
    """The verdict that follows from the computed checks (see the module docstring)."""
    if printed is None:
        return "not-checkable-here"
    if printed.holds:
        return "confirmed"
    if corrected is not None and corrected.holds:
        return "corrected"
    return "refuted"


class Ledger:
    """The claims one chapter checks.

    ``chapter`` is the chapter's file stem (``"linear"`` for ``book/linear.md``); ``section`` labels
    passed to :meth:`claim` are MyST labels in that chapter (``(linear-thm-2-1)=``) so the book's
    ledger page can link to them.
    """

    def __init__(self, chapter: str):
        self.chapter = chapter
        self.claims: list[Claim] = []

    def _add(self, claim: Claim) -> Claim:
        if claim.paper not in PAPERS:
            raise ValueError(f"unknown paper key {claim.paper!r}; known: {sorted(PAPERS)}")
        if any(c.id == claim.id for c in self.claims):
            raise ValueError(f"claim {claim.id!r} recorded twice in chapter {self.chapter!r}")
        self.claims.append(claim)
        return claim

    def claim(self, id: str, *, paper: str, ref: str, statement: str, section: str,
              printed: Check, corrected: Check | None = None,
              corrected_statement: str | None = None) -> Claim:
        """Record a claim checked by computation; the verdict is derived from the checks.

        ``printed`` tests the claim as the paper states it. When it fails and the chapter has found a
        corrected form, pass that form's check as ``corrected`` and its wording as ``corrected_statement``.
        """
        if not isinstance(printed, Check) or (corrected is not None and not isinstance(corrected, Check)):
            raise TypeError("printed and corrected must be Check objects built from computed numbers")
        if corrected is not None and not corrected_statement:
            raise ValueError("a corrected check needs the corrected statement")
        verdict = derive_verdict(printed, corrected)
        summary = "printed form: " + printed.summary
        evidence = {"printed": {"holds": printed.holds, **printed.numbers}}
        if corrected is not None:
            summary += " | corrected form: " + corrected.summary
            evidence["corrected"] = {"holds": corrected.holds, **corrected.numbers}
        return self._add(Claim(id, paper, ref, statement, self.chapter, section, verdict, summary,
                               _jsonable(evidence), corrected_statement))

    def not_checkable(self, id: str, *, paper: str, ref: str, statement: str, section: str,
                      reason: str) -> Claim:
        """Record a claim this book cannot check here, and why."""
        if not reason:
            raise ValueError("a claim that is not checkable here needs the reason")
        return self._add(Claim(id, paper, ref, statement, self.chapter, section,
                               "not-checkable-here", "", {}, None, reason))

    # --- output -------------------------------------------------------------------------------
    def to_json(self) -> str:
        return json.dumps({"chapter": self.chapter, "claims": [asdict(c) for c in self.claims]}, indent=1)

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

    def show(self):
        """Save the claims (when executed by the book executor) and return the rendered table."""
        from IPython.display import HTML

        self.save()
        return HTML(self.table_html())


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


def claim_from_dict(d: dict) -> Claim:
    claim = Claim(**d)
    if claim.verdict not in VERDICTS:
        raise ValueError(f"claim {claim.id!r} has unknown verdict {claim.verdict!r}")
    return claim


def load_claims(directory: str | os.PathLike | None = None) -> list[Claim]:
    """Every ``*.claims.json`` under ``directory`` (default: the executor's build directory)."""
    if directory is None:
        build = os.environ.get(BUILD_DIR_ENV)
        if not build:
            return []
        directory = Path(build) / "executed"
    claims: list[Claim] = []
    for path in sorted(Path(directory).rglob("*.claims.json")):
        data = json.loads(path.read_text())
        claims.extend(claim_from_dict(d) for d in data["claims"])
    return claims


def verdict_counts(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Counts per paper and verdict, with a ``"total"`` row."""
    table: dict[str, Counter] = {}
    for c in claims:
        table.setdefault(c.paper_name, Counter())[c.verdict] += 1
        table.setdefault("total", Counter())[c.verdict] += 1
    return {paper: {v: counts.get(v, 0) for v in VERDICTS} for paper, counts in table.items()}


_BADGE = {"confirmed": "#1b7f3b", "corrected": "#b36b00", "refuted": "#b00020",
          "not-checkable-here": "#555"}


def claims_table_html(claims: Sequence[Claim], link: bool = True) -> str:
    """An HTML table of claims; with ``link`` each id links to the chapter section that checks it."""
    rows = []
    for c in claims:
        ident = html.escape(c.id)
        if link:
            ident = f'<a href="{html.escape(c.chapter)}.html#{html.escape(c.section)}">{ident}</a>'
        what = html.escape(c.statement)
        if c.corrected_statement:
            what += f"<br><em>Corrected:</em> {html.escape(c.corrected_statement)}"
        detail = html.escape(c.reason if c.verdict == "not-checkable-here" else c.check)
        colour = _BADGE[c.verdict]
        rows.append(
            f"<tr><td>{ident}</td><td>{html.escape(c.paper_name)}, {html.escape(c.ref)}</td>"
            f"<td>{what}</td><td>{detail}</td>"
            f'<td><strong style="color:{colour}">{c.verdict}</strong></td></tr>')
    head = "<tr><th>claim</th><th>source</th><th>statement</th><th>what the check computed</th><th>verdict</th></tr>"
    return f'<table class="claims-ledger">{head}{"".join(rows)}</table>'


def counts_table_html(claims: Sequence[Claim]) -> str:
    counts = verdict_counts(claims)
    head = "<tr><th>paper</th>" + "".join(f"<th>{v}</th>" for v in VERDICTS) + "<th>all</th></tr>"
    rows = []
    for paper in sorted(counts, key=lambda p: (p == "total", p)):
        cells = "".join(f"<td>{counts[paper][v]}</td>" for v in VERDICTS)
        rows.append(f"<tr><td>{html.escape(paper)}</td>{cells}<td>{sum(counts[paper].values())}</td></tr>")
    return f'<table class="claims-counts">{head}{"".join(rows)}</table>'


def render_ledger(claims: Sequence[Claim]):
    """The ledger page's content: counts per verdict and paper, then every claim, linked."""
    from IPython.display import HTML

    if not claims:
        return HTML("<p><strong>No claims were found.</strong> Execute the book with "
                    "<code>make book</code> so that each chapter records its claims.</p>")
    return HTML(counts_table_html(claims) + claims_table_html(claims, link=True))
