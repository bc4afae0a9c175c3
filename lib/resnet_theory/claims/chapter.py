"""The claims of a chapter as the chapter's notebook runs them.

A chapter's first code cell makes one :class:`Chapter`; each claim's cell is one short visible call, which runs
the claim's function, records it in the chapter's ledger, glues the numbers its prose quotes, and shows the
evidence (statement, each check, the control, the verdict, and the command that re-checks the claim alone)::

    chapter = Chapter("linear", profile=profile, seed=seed, knobs=knobs)
    c32 = chapter.check("hardt-ma/thm-3.2")
    c32                      # the evidence, as a small table
    c32.proof_step("conditions")  # one declared proof step, by its key, where its narration is: step, repair, checks
    chapter.step_number("hardt-ma/thm-3.2", "conditions")  # its number, glued where the prose says "step n"
    ...
    chapter.show()           # last cell: the chapter's claims table, its claims file, every verdict glued

:meth:`Chapter.show` refuses a chapter that did not run every claim its module declares, so a chapter and its
claims module cannot drift apart.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from ..ledger import Ledger, glue_numbers
from ..ledger_html import claim_anchor, evidence_part_name, text_html
from ..record import source_line
from .context import Context
from .registry import ClaimSet, chapter_claims, retired_message
from .run import ClaimRun, run_claim, verify_command


def evidence_html(run: ClaimRun) -> str:
    """The evidence of one claim run as a small HTML table (every field escaped, its ``$...$`` typeset): each part's
    outcome and what was computed, a proof step's place in the printed proof after its check where the declaration
    names one (read from the record's step fields, so older records, and steps without one, show nothing more)."""
    rec = run.record
    placed = {s.keys[0]: s for s in rec.proof_steps if s.where}  # a step's check: where the step is printed
    rows = [("statement", rec.statement), ("checked against", source_line(rec))]
    for key, part in rec.evidence.items():
        mark = "holds" if part.get("holds") else "fails"
        if not part.get("decisive", True):
            mark += " (not decisive)"
        rows.append((f"{evidence_part_name(rec, key)}: {mark}", str(part.get("summary", ""))))
        if key in placed:
            s = placed[key]
            rows.append((f"where step {s.number} is printed" if s.of > 1 else "where the step is printed", s.where))
    if rec.control is not None:
        mark = "holds (a defect)" if rec.control.get("holds") else "fails, as it must"
        rows.append((f"control: {mark}", f"{rec.control.get('input', '')} {rec.control.get('summary', '')}"))
    if rec.needs:
        rows.append(("needs", rec.needs))
    rows.append(("verdict", rec.label + (f" ({rec.reason})" if rec.reason else "")))
    rows.append(("re-check alone", verify_command(rec.id)))
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{text_html(v)}</td></tr>" for k, v in rows)
    anchor = html.escape(claim_anchor(rec.id))
    return (
        f"<table class='claim-evidence' id='evidence-{anchor}'><caption><a href='ledger.html#{anchor}' "
        f"title='this claim in the ledger'>{html.escape(rec.id)}</a></caption>{body}</table>"
    )


def step_html(run: ClaimRun, number: int) -> str:
    """One declared proof step of a claim run as a small HTML table: the step as printed (and where it is printed,
    when the declaration names its place) and its check, its repair and the repair's check, the claim's verdict
    (which all its steps decide) and the command that re-checks it, linked to the claim's card (printed, like
    :func:`evidence_html`'s table: the step, the verdict, the command)."""
    rec = run.record
    steps = rec.proof_steps
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(steps):
        raise ValueError(
            f"claim {rec.id!r} declares {len(steps)} proof step(s): ask for one of 1 to {len(steps)}, not {number!r}"
        )
    s = steps[number - 1]

    def mark(check: Mapping) -> str:
        word = "holds" if check.get("holds") else "fails"
        return word if check.get("decisive", True) else word + " (not decisive)"

    rows = [
        (f"proof step {number} of {len(steps)}, as printed: {mark(s.step_check)}", s.step),
        *([("printed at", s.where)] if s.where else []),  # the step's place in the printed proof, where declared
        ("what was computed", str(s.step_check.get("summary", ""))),
        (f"its repair: {mark(s.repair_check)}", s.repair),
        ("what was computed", str(s.repair_check.get("summary", ""))),
        ("verdict of the claim", rec.label + (f" ({rec.reason})" if rec.reason else "")),
        ("re-check alone", verify_command(rec.id)),  # last two rows, the step first: what a printed chapter keeps
    ]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{text_html(v)}</td></tr>" for k, v in rows)
    anchor = html.escape(claim_anchor(rec.id))
    return (
        f"<table class='claim-evidence claim-step'><caption><a href='ledger.html#{anchor}' title='this claim in the "
        f"ledger'>{html.escape(rec.id)}</a>, proof step {number}</caption>{body}</table>"
    )


class _StepShown:
    """One proof step of a claim run, shown in a chapter where its narration is (:meth:`_Shown.proof_step`)."""

    def __init__(self, run: ClaimRun, number: int):
        self._html = step_html(run, number)
        self.run, self.number = run, number

    def _repr_html_(self) -> str:
        return self._html

    def __repr__(self) -> str:
        return f"{self.run.record.id}: proof step {self.number}"


def _in_kernel() -> bool:
    """Whether a Jupyter kernel runs this code (glue has somewhere to go); plain Python and the tests have none."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


class _Shown(ClaimRun):
    def _repr_html_(self) -> str:
        return evidence_html(self)

    def proof_step(self, step: int | str) -> _StepShown:
        """Declared proof step ``step`` of this claim, to show where the chapter narrates it: the step and its
        check, the repair and its check, the claim's verdict. ``step`` is the step's key (``"layer-count"``,
        :meth:`~resnet_theory.claims.spec.Checked.step_number`), or its number (from 1) for a step without one."""
        return _StepShown(self, self.decl.step_number(step) if isinstance(step, str) else step)


class Chapter:
    """One chapter's claims, run in the chapter's kernel at its profile, seed and knob overrides."""

    def __init__(
        self,
        chapter: str,
        *,
        profile: str = "quick",
        seed: int = 0,
        knobs: Mapping[str, Any] | None = None,
        settings: Mapping[str, Any] | None = None,
    ):
        self.claims: ClaimSet = chapter_claims(chapter)
        self.knobs = dict(knobs or {})
        self.ctx = Context.for_table(self.claims.profile, profile, seed, self.knobs, settings)
        self.ledger = Ledger(chapter)
        self.runs: dict[str, ClaimRun] = {}

    @property
    def cfg(self):
        """The resolved knobs (``chapter.cfg.max_depth``)."""
        return self.ctx.cfg

    def profile_rows(self) -> list[dict]:
        """The chapter's profile table, with the values this run uses."""
        return self.claims.profile.rows(self.ctx.profile, self.knobs)

    def step_number(self, claim_id: str, key: str) -> int:
        """The number (from 1) of the proof step ``key`` of this chapter's claim ``claim_id``, from its declaration:
        what the chapter glues where its prose says "step n", before or after the claim runs."""
        if claim_id not in self.claims.claims:
            raise KeyError(f"claim {claim_id!r} is not declared in chapter {self.claims.chapter!r}")
        decl = self.claims.claims[claim_id]
        if not hasattr(decl, "step_number"):
            raise KeyError(f"claim {claim_id!r} is not checked here: it declares no proof steps")
        return decl.step_number(key)

    def check(self, claim_id: str) -> ClaimRun:
        """Run one claim of this chapter, record it, glue its numbers; the result shows its evidence."""
        if claim_id not in self.claims.claims:
            moved = retired_message(claim_id)
            raise KeyError(moved or f"claim {claim_id!r} is not declared in chapter {self.claims.chapter!r}")
        if claim_id in self.runs:
            raise ValueError(f"claim {claim_id!r} was already checked in this chapter")
        run = run_claim(self.claims.claims[claim_id], self.ctx)
        self.ledger._add(run.record)
        if run.evidence is not None and run.evidence.glue and _in_kernel():
            glue_numbers(**run.evidence.glue)  # a failure here is the chapter's, and shows
        self.runs[claim_id] = run
        return _Shown(run.decl, run.record, run.evidence)

    def show(self):
        """The last cell: every declared claim must have run; record the skips, save, glue, return the table."""
        missing = [cid for cid in self.claims.claims if cid not in self.runs]
        if missing:
            raise RuntimeError(f"chapter {self.claims.chapter!r} did not check {', '.join(missing)}")
        for s in self.claims.skipped:
            self.ledger.skip(paper=s.paper, ref=s.ref, statement=s.statement, why=s.why)
        return self.ledger.show()
