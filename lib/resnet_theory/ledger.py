"""The claims ledger of a chapter: every claim it checks, with a verdict derived from computation.

A chapter (or :class:`resnet_theory.claims.chapter.Chapter`, which runs the claims declared in
:mod:`resnet_theory.claims`) creates one :class:`Ledger`, records each claim it checks with :meth:`Ledger.claim`
(or :meth:`Ledger.not_checkable` when it cannot be checked here, with the reason), and ends with
:meth:`Ledger.show`, which renders the chapter's claims table, glues every verdict and, when the book executor
runs the chapter, writes the claims as JSON beside the executed notebook (:data:`CLAIMS_FILE_ENV` names the file).

The rest of the ledger lives by concern:

- :mod:`resnet_theory.verdicts`: the verdict rules, with no I/O (:class:`~resnet_theory.verdicts.Check` and its
  constructors, :func:`~resnet_theory.verdicts.derive_verdict`);
- :mod:`resnet_theory.record`: the claim record, declared once (:class:`~resnet_theory.record.Claim`, its
  fields' types, :data:`~resnet_theory.record.PAPERS`, :func:`~resnet_theory.record.claim_defects`);
- :mod:`resnet_theory.ledger_html`: the HTML (claims table, errata, counts, the typesetting of statements);
- :mod:`resnet_theory.book.claims_files` and :mod:`resnet_theory.book.ledger_page`: a build's claims files read
  and verified, and the book's ledger page.

Every checkable claim carries a **negative control**: the same check run on an *input the claim rules out*
(a depth below the theorem's, ``det R < 0``, a width far below the claim's, a network without shortcuts, ...),
whose outcome is not known before it runs, and ``control_input`` says what that input is and why the claim
rules it out. A control is never built from the numbers its check just measured. The control must come out
``holds = False``, decisively (a statistical control within two standard errors of its threshold is refused:
it would "fail" on any input); a control that holds means the check could not tell the claim's inputs from others, and
:meth:`Ledger.show` refuses to publish the chapter (:class:`~resnet_theory.record.LedgerDefect`).

Printed statements a chapter discusses but does not check are listed with :meth:`Ledger.skip` (what, where,
and why not), and the ledger page shows them under "Not checked, and why".
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .ledger_html import claims_table_html
from .record import (
    PAPERS,
    SOURCES,
    Claim,
    LedgerDefect,
    claim_defects,
    claim_to_dict,
    is_statistical,
    step_key_defect,
)
from .verdicts import (
    VERDICTS,
    Check,
    NoUsableControl,
    control_without_power,
    derive_verdict,
    step_keys,
    undecided_reason,
)

#: The file a chapter's :meth:`Ledger.save` writes its claims to, when the book executor names one.
CLAIMS_FILE_ENV = "RESNET_THEORY_CLAIMS_FILE"


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
        control: Check | NoUsableControl | Sequence[Check | NoUsableControl],
        control_input: str,
        source: str = "paper",
        corrected: Check | None = None,
        corrected_statement: str | None = None,
        proof_step: Check | Sequence[Check] | None = None,
        proof_step_statement: str | Sequence[str] | None = None,
        repair: Check | Sequence[Check] | None = None,
        repair_statement: str | Sequence[str] | None = None,
        proof_step_where: str | Sequence[str] | None = None,
        proof_step_key: str | Sequence[str] | None = None,
    ) -> Claim:
        """Record a claim checked by computation; the verdict is derived from the checks.

        ``printed`` tests the statement as the paper prints it (or, per ``source``, as its abstract or a
        review gives it, our reconstruction of it, or the book's own question: :data:`resnet_theory.record.
        SOURCES`; the verdict's label says which, :attr:`resnet_theory.record.Claim.label`). ``control`` is
        the negative control: the same check on an input the claim rules out, never built from the numbers
        ``printed`` measured; it must fail (several controls may be given; each must fail), and it must decide:
        a statistical control within two standard errors of its threshold is refused with a ValueError
        (:func:`~resnet_theory.verdicts.control_without_power`). A claim whose control cannot decide says so
        with :class:`~resnet_theory.verdicts.NoUsableControl` (the control it tried): it has no usable control
        and its verdict is ``undecided``, with the reason. ``control_input`` says in one sentence what that
        input is and why the claim rules it out.

        - When ``printed`` fails on a counterexample and a corrected statement holds, pass that
          statement's check as ``corrected`` with its wording as ``corrected_statement``.
        - When the statement holds but a step or construction of the printed proof fails as written,
          pass that step's check as ``proof_step`` (it fails) with ``proof_step_statement``, and the
          repaired step as ``repair`` (it holds) with ``repair_statement``: the verdict is ``proof-gap``.
        - Several such steps: pass each of the four as a sequence, one entry per step in the proof's order. Step 1
          is recorded as a lone step is; step ``n`` after it under ``proof_step_n``/``repair_n`` (:func:`~resnet_
          theory.verdicts.step_keys`), its wording in ``further_proof_steps``; a step that holds is recorded so.
        - ``proof_step_where`` and ``proof_step_key`` (optional; one text per step where there are several, ``""``
          for a step without one): each step's place in the printed proof and its key (``ProofStep.key``, a short
          name in lower case with hyphens, unique within the claim); step 1's are recorded as these fields, a
          further step's as ``"where"`` and ``"key"`` in its entry of ``further_proof_steps``.
        """
        steps, repairs, step_words, repair_words = _proof_steps(
            proof_step, repair, proof_step_statement, repair_statement
        )
        wheres = _step_wheres(proof_step_where, len(steps))
        keys = _step_keys_given(proof_step_key, len(steps))
        checks = {"printed": printed, "corrected": corrected}
        for n, (step, fix) in enumerate(zip(steps, repairs), 1):
            checks.update(dict(zip(step_keys(n), (step, fix))))
        if not all(c is None or isinstance(c, Check) for c in checks.values()) or not isinstance(printed, Check):
            raise TypeError(
                "printed (and corrected, proof_step, repair when given) must be Check objects built from computed "
                "numbers"
            )
        tried, unusable = _controls(id, control, control_input)
        if corrected is not None and not corrected_statement:
            raise ValueError("a corrected check needs the corrected statement")
        verdict = derive_verdict(printed, corrected, steps, control_usable=not unusable)
        if verdict == "proof-gap":
            _repairs_hold(id, steps, repairs)
        summary = _summary(printed, corrected, steps, repairs)
        evidence = {
            k: {"holds": c.holds, "decisive": c.decisive, "summary": c.summary, **c.numbers}
            for k, c in checks.items()
            if c is not None
        }
        control_record = {
            "holds": any(c.holds for c in tried),
            "decisive": all(c.decisive for c in tried),
            "usable": not unusable,
            "summary": " | ".join(c.summary for c in tried),
            "input": control_input,
        }
        reason = "; ".join(c.reason for c in unusable) or (
            undecided_reason(printed, corrected, steps) if verdict == "undecided" else None
        )
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
                **_step_fields(step_words, repair_words, wheres, keys),
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
        if is_statistical(reason):
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
            {"chapter": self.chapter, "claims": [claim_to_dict(c) for c in self.claims], "skipped": self.skipped},
            indent=1,
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
        """E.g. "7 claims: 4 confirmed, 1 proof gap, 1 corrected, 1 not checkable here"; the book's own
        questions are counted apart ("; and 1 finding of the book's own question: refuted")."""
        papers = [c for c in self.claims if not c.is_finding]
        counts = Counter(c.verdict for c in papers)
        parts = [f"{counts[v]} {v.replace('-', ' ')}" for v in VERDICTS if counts[v]]
        n = len(papers)
        out = f"{n} claim{'s' if n != 1 else ''}: " + ", ".join(parts) if parts else "no claims"
        findings = [c.verdict for c in self.claims if c.is_finding]
        if findings:
            plural = "s" if len(findings) != 1 else ""
            out += f"; and {len(findings)} finding{plural} of the book's own question{plural}: {', '.join(findings)}"
        return out

    def glue(self) -> None:
        """Glue each verdict as ``verdict_<id>`` (the plain word, for prose that says what it was checked
        against around it; see :func:`verdict_key`), its label as ``verdict_<id>_label`` ("confirmed, as the
        abstract states it": :func:`verdict_label_key`) and the chapter's summary sentence as
        ``ledger_summary``, for ``{glue:text}`` anywhere in the chapter."""
        from myst_nb import glue

        for c in self.claims:
            glue(verdict_key(c.id), Text(c.verdict), display=False)
            glue(verdict_label_key(c.id), Text(c.label), display=False)
        glue("ledger_summary", Text(self.summary_sentence()), display=False)

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


def _proof_steps(proof_step, repair, step_words, repair_words) -> tuple[tuple, tuple, tuple, tuple]:
    """:meth:`Ledger.claim`'s proof-step arguments as four tuples of one length (one entry per step); a step without
    its repair, or a check or wording missing, is refused in one line."""
    out = tuple(_several(x) for x in (proof_step, repair, step_words, repair_words))
    if len({len(x) for x in out}) != 1 or not all(isinstance(w, str) and w.strip() for w in (*out[2], *out[3])):
        raise ValueError(
            "a proof step needs its repair, and both need their wording (proof_step_statement, repair_statement): "
            f"got {len(out[0])} step check(s), {len(out[1])} repair check(s), {len(out[2])} step wording(s) "
            f"and {len(out[3])} repair wording(s)"
        )
    if not all(isinstance(c, Check) for c in (*out[0], *out[1])):
        raise TypeError("proof_step and repair must be Check objects built from computed numbers (one per step)")
    return out


def _step_fields(step_words: tuple, repair_words: tuple, wheres: tuple, keys: tuple) -> dict:
    """The record's fields for a claim's proof steps: step 1's wording, place and key (``proof_step``, ``repair``,
    ``proof_step_where``, ``proof_step_key``), and the further steps' in ``further_proof_steps`` (a ``"where"`` and
    a ``"key"`` only where given)."""
    further = [
        {"step": s, "repair": r, **({"where": w} if w else {}), **({"key": k} if k else {})}
        for s, r, w, k in zip(step_words[1:], repair_words[1:], wheres[1:], keys[1:])
    ]
    return {
        "proof_step": step_words[0] if step_words else None,
        "repair": repair_words[0] if repair_words else None,
        "further_proof_steps": further or None,
        "proof_step_where": wheres[0] if wheres and wheres[0] else None,
        "proof_step_key": keys[0] if keys and keys[0] else None,
    }


def _step_keys_given(key, count: int) -> tuple[str, ...]:
    """:meth:`Ledger.claim`'s ``proof_step_key`` as one key per step (``""`` where a step has none); a count that
    differs from the steps', a value that is not text, a key that is not a short name in lower case with hyphens,
    or one key given to two steps is refused in one line."""
    keys = _several(key) or ("",) * count
    if len(keys) != count or not all(isinstance(k, str) for k in keys):
        raise ValueError(
            f"proof_step_key gives the key of each proof step, one text per step ('' for none): got {key!r} for "
            f"{count} step(s)"
        )
    defect = step_key_defect(keys)
    if defect:
        raise ValueError(f"proof_step_key: {defect}")
    return keys


def _step_wheres(where, count: int) -> tuple[str, ...]:
    """:meth:`Ledger.claim`'s ``proof_step_where`` as one text per step (``""`` where a step has none); a count
    that differs from the steps', or a value that is not text, is refused in one line."""
    wheres = _several(where) or ("",) * count
    if len(wheres) != count or not all(isinstance(w, str) for w in wheres):
        raise ValueError(
            f"proof_step_where gives the printed place of each proof step, one text per step ('' for none): got "
            f"{where!r} for {count} step(s)"
        )
    if any(w and not w.strip() for w in wheres):
        raise ValueError("proof_step_where: a step's printed place is blank")
    return wheres


def _repairs_hold(claim_id: str, steps: tuple, repairs: tuple) -> None:
    """A proof gap's every failing step must have a repair that holds: else a ValueError naming the step."""
    for n, (step, fix) in enumerate(zip(steps, repairs), 1):
        if not step.holds and not fix.holds:
            which = f" {n}" if len(steps) > 1 else ""
            raise ValueError(
                f"claim {claim_id!r}: the repair of the failing proof step{which} does not hold: {fix.summary}"
            )


def _summary(printed: Check, corrected: Check | None, steps: tuple, repairs: tuple) -> str:
    """A claim's one-line check: "statement: ... | corrected statement: ... | proof step: ... | repair: ..." (the
    steps numbered where there are several)."""
    summary = "statement: " + printed.summary
    if corrected is not None:
        summary += " | corrected statement: " + corrected.summary
    for n, (step, fix) in enumerate(zip(steps, repairs), 1):
        which = f" {n}" if len(steps) > 1 else ""
        summary += f" | proof step{which}: " + step.summary + f" | repair{which}: " + fix.summary
    return summary


def _several(value) -> tuple:
    """A proof step's argument to :meth:`Ledger.claim` as a tuple: none, one, or one per step."""
    if value is None:
        return ()
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


def _controls(claim_id: str, control, control_input) -> tuple[list[Check], list[NoUsableControl]]:
    """The controls' checks and the declared :class:`NoUsableControl`; a control that is not a Check, is missing,
    has no input sentence or cannot decide is refused in one line."""
    controls = [control] if isinstance(control, (Check, NoUsableControl)) else list(control or [])
    if not controls or not all(isinstance(c, (Check, NoUsableControl)) for c in controls):
        raise TypeError(
            "control must be a Check built from computed numbers (or NoUsableControl); every checkable claim "
            "needs a control"
        )
    if not isinstance(control_input, str) or len(control_input.split()) < 4:
        raise ValueError(
            f"claim {claim_id!r}: control_input must say, in a sentence, what the control's input is "
            "and why the claim rules it out"
        )
    for c in controls:
        why = None if isinstance(c, NoUsableControl) else control_without_power(c)
        if why is not None:
            raise ValueError(
                f"claim {claim_id!r}: a negative control must decide against the claim, and this one cannot: {why} "
                "(pass NoUsableControl(check) to record that the claim has none: its verdict is then undecided)"
            )
    tried = [c.tried if isinstance(c, NoUsableControl) else c for c in controls]
    return tried, [c for c in controls if isinstance(c, NoUsableControl)]


class Text(str):
    """A string that ``myst_nb.glue`` shows without quotes (its repr is itself): glue a sentence or a word made
    in a chapter as ``glue(name, Text(words), display=False)`` and quote it with ``{glue:text}`name```."""

    def __repr__(self):
        return str(self)


def verdict_key(claim_id: str) -> str:
    """The glue key of a claim's verdict: ``hardt-ma/thm-2.1`` -> ``verdict_hardt_ma_thm_2_1``."""
    return "verdict_" + claim_id.replace("/", "_").replace("-", "_").replace(".", "_")


def verdict_label_key(claim_id: str) -> str:
    """The glue key of a claim's verdict label (:attr:`resnet_theory.record.Claim.label`):
    ``hardt-ma/thm-2.1`` -> ``verdict_hardt_ma_thm_2_1_label``."""
    return verdict_key(claim_id) + "_label"


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


def glue_numbers(**values) -> None:
    """Glue several computed numbers at once, each under its keyword (``{glue:text}`name:.3f``` in the text)."""
    from myst_nb import glue

    for name, value in values.items():
        glue(name, value, display=False)
