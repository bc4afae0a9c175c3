"""Run one claim: call its evidence function, check the evidence against the declaration, derive the verdict.

:func:`run_claim` returns a :class:`ClaimRun`: the ledger record (with the verdict derived from the checks by
:mod:`resnet_theory.verdicts`' rules) and the evidence, whose ``data`` and ``glue`` the chapter shows.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..ledger import Ledger
from ..record import Claim
from .context import Context
from .spec import Checked, Evidence, NotAvailable, NotCheckable


class EvidenceMismatch(TypeError):
    """An evidence function returned checks its declaration does not have, or lacks ones it declares."""


@dataclass
class ClaimRun:
    """A claim run at one profile and seed: the declaration, its ledger record and (if checked) its evidence."""

    decl: Checked | NotCheckable
    record: Claim
    evidence: Evidence | None

    @property
    def verdict(self) -> str:
        return self.record.verdict

    @property
    def data(self) -> dict:
        return {} if self.evidence is None else self.evidence.data

    def __repr__(self) -> str:
        return f"{self.record.id}: {self.record.verdict}"


def verify_command(claim_id: str) -> str:
    """The command that re-checks one claim."""
    return f"python -m resnet_theory.claims verify {claim_id}"


def _match(decl: Checked, ev: Evidence) -> None:
    if not isinstance(ev, Evidence):
        raise EvidenceMismatch(f"claim {decl.id!r}: {decl.function} returned {type(ev).__name__}, not Evidence")
    if (decl.correction is None) != (ev.corrected is None):
        raise EvidenceMismatch(
            f"claim {decl.id!r}: the declaration "
            + ("has no correction but the evidence checks one" if decl.correction is None else "declares a correction")
            + ("" if decl.correction is None else " but the evidence has no check of it")
        )
    declared, returned = len(decl.proof_steps), len(ev.proof_steps)
    if not declared and returned:
        raise EvidenceMismatch(f"claim {decl.id!r}: the declaration has no proof step but the evidence checks one")
    if declared and not returned:
        steps = "a proof step" if declared == 1 else f"{declared} proof steps"
        raise EvidenceMismatch(
            f"claim {decl.id!r}: the declaration declares {steps} but the evidence has no StepEvidence for "
            + ("it" if declared == 1 else "them")
        )
    if declared != returned:
        raise EvidenceMismatch(
            f"claim {decl.id!r}: the declaration declares {declared} proof steps but the evidence has {returned} "
            "StepEvidence: one per declared step, in the declaration's order"
        )


def _record(decl: Checked | NotCheckable, ev: Evidence | NotAvailable | None) -> Claim:
    ledger = Ledger(decl.chapter)
    common = dict(paper=decl.paper, ref=decl.ref, statement=decl.statement, section=decl.section)
    source = decl.source.ledger_key
    if isinstance(decl, NotCheckable) or isinstance(ev, NotAvailable):
        why = ev if isinstance(ev, NotAvailable) else decl
        rec = ledger.not_checkable(decl.id, **common, reason=why.reason, needs=why.needs, source=source)
        extra = {}
    else:
        rec = ledger.claim(
            decl.id,
            **common,
            source=source,
            printed=ev.statement,
            control=list(ev.controls),
            control_input=decl.control.input,
            corrected=ev.corrected,
            corrected_statement=None if decl.correction is None else decl.correction.statement,
            proof_step=[p.step for p in ev.proof_steps],
            proof_step_statement=[p.step for p in decl.proof_steps],
            repair=[p.repair for p in ev.proof_steps],
            repair_statement=[p.repair for p in decl.proof_steps],
            proof_step_where=[p.where for p in decl.proof_steps],
            proof_step_key=list(decl.step_keys),  # what step_number (and registry.RETIRED) counts a key's step by
        )
        path, line = decl.source_location
        extra = {"function": decl.function, "source_file": path, "source_line": line}
    return dataclasses.replace(
        rec,
        source_detail=decl.source.detail or None,
        on_analogue=decl.source.on_analogue,
        rests_on=list(decl.rests_on) or None,
        **extra,
    )


def run_claim(decl: Checked | NotCheckable, ctx: Context) -> ClaimRun:
    """Compute ``decl``'s evidence in ``ctx`` and its record (verdict derived, never typed)."""
    if isinstance(decl, NotCheckable):
        return ClaimRun(decl, _record(decl, None), None)
    ev = decl.evidence(ctx)
    if isinstance(ev, NotAvailable):
        return ClaimRun(decl, _record(decl, ev), None)
    _match(decl, ev)
    return ClaimRun(decl, _record(decl, ev), ev)
