"""Every claim of the book, by chapter: each chapter's claims module declares a :class:`ClaimSet`.

The chapters' claims modules are listed in :data:`CHAPTER_MODULES` in book order; :func:`all_claims` imports
them and returns every declaration in that order, :func:`find` one by id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from .context import ProfileTable
from .spec import Checked, Control, Correction, NotCheckable, ProofStep, Skip, Source

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context
    from .spec import Evidence

#: chapter (its file stem in book/) -> the module declaring its claims, in book order.
CHAPTER_MODULES: dict[str, str] = {
    "linear": "resnet_theory.claims.linear",
    "expressivity": "resnet_theory.claims.expressivity",
    "smooth_maps": "resnet_theory.claims.smooth_maps",
    "linear_predictors": "resnet_theory.claims.linear_predictors",
    "experiments": "resnet_theory.claims.experiments",
}


class ClaimSet:
    """The claims of one chapter, in the order it reads them, with the chapter's profile table and the printed
    statements it discusses but does not check (:meth:`skip`)."""

    def __init__(self, chapter: str, profile: ProfileTable):
        if not isinstance(profile, ProfileTable):
            raise TypeError("ClaimSet needs the chapter's ProfileTable")
        self.chapter = chapter
        self.profile = profile
        self.claims: dict[str, Checked | NotCheckable] = {}
        self.skipped: list[Skip] = []

    def _add(self, decl):
        if decl.id in self.claims:
            raise ValueError(f"claim {decl.id!r} declared twice in chapter {self.chapter!r}")
        self.claims[decl.id] = decl
        return decl

    def checked(
        self,
        id: str,
        *,
        paper: str,
        ref: str,
        statement: str,
        source: Source,
        section: str,
        control: Control,
        correction: Correction | None = None,
        proof_step: ProofStep | tuple[ProofStep, ...] | None = None,
        rests_on: tuple[str, ...] = (),
    ) -> Callable[[Callable[[Context], Evidence]], Checked]:
        """Decorate the function that computes a claim's evidence with its declaration; the name is bound to
        the :class:`Checked` declaration (call ``decl.evidence(ctx)`` for the evidence alone).

        ``proof_step`` is the step of the printed proof the claim checks, or a tuple of them in the proof's order
        (the declaration holds them as ``Checked.proof_steps``, always a tuple)."""
        if isinstance(proof_step, tuple) and not proof_step:
            raise ValueError(f"claim {id!r}: proof_step=() declares no step: leave it out")
        steps = () if proof_step is None else proof_step if isinstance(proof_step, tuple) else (proof_step,)

        def declare(fn: Callable[[Context], Evidence]) -> Checked:
            return self._add(
                Checked(
                    id=id,
                    paper=paper,
                    ref=ref,
                    statement=statement,
                    source=source,
                    section=section,
                    chapter=self.chapter,
                    control=control,
                    correction=correction,
                    proof_steps=steps,
                    rests_on=tuple(rests_on),
                    evidence=fn,
                )
            )

        return declare

    def not_checkable(
        self,
        id: str,
        *,
        paper: str,
        ref: str,
        statement: str,
        source: Source,
        section: str,
        reason: str,
        needs: str,
        rests_on: tuple[str, ...] = (),
    ) -> NotCheckable:
        return self._add(
            NotCheckable(
                id=id,
                paper=paper,
                ref=ref,
                statement=statement,
                source=source,
                section=section,
                chapter=self.chapter,
                reason=reason,
                needs=needs,
                rests_on=tuple(rests_on),
            )
        )

    def skip(self, *, paper: str, ref: str, statement: str, why: str) -> Skip:
        s = Skip(paper, ref, statement, why)
        self.skipped.append(s)
        return s

    def __iter__(self):
        return iter(self.claims.values())

    def __len__(self):
        return len(self.claims)


def chapter_claims(chapter: str) -> ClaimSet:
    """The :class:`ClaimSet` of one chapter (its module imported)."""
    if chapter not in CHAPTER_MODULES:
        raise KeyError(f"no claims module for chapter {chapter!r}; chapters: {', '.join(CHAPTER_MODULES)}")
    module = importlib.import_module(CHAPTER_MODULES[chapter])
    claims = getattr(module, "CLAIMS", None)
    if not isinstance(claims, ClaimSet) or claims.chapter != chapter:
        raise TypeError(f"{CHAPTER_MODULES[chapter]} must define CLAIMS = ClaimSet({chapter!r}, PROFILE)")
    return claims


def all_claims() -> list[Checked | NotCheckable]:
    """Every declared claim, in book order; an id declared in two chapters is an error."""
    seen: dict[str, str] = {}
    out = []
    for chapter in CHAPTER_MODULES:
        for decl in chapter_claims(chapter):
            if decl.id in seen:
                raise ValueError(f"claim {decl.id!r} declared in {seen[decl.id]!r} and {chapter!r}")
            seen[decl.id] = chapter
            out.append(decl)
    return out


#: Claim ids the book no longer declares, and where what they checked went: old id -> (the claim it moved into, the
#: key of the proof step of that claim it became, :attr:`~resnet_theory.claims.spec.ProofStep.key`). A link or a
#: command with an old id gets one line naming its new place (:func:`retired_message`), not "no claim"; the step's
#: number comes from the claim's declaration, so a reordered declaration cannot leave it pointing at another step.
RETIRED: dict[str, tuple[str, str]] = {
    "hardt-ma/thm-3.2-proof-conditions": ("hardt-ma/thm-3.2", "conditions"),
    # Theorem 2.1's printed proof, once six claims that each repeated the statement's check: now steps of one claim
    "hardt-ma/thm-2.1-proof-rotation-blocks": ("hardt-ma/thm-2.1-proof", "rotation-blocks"),
    "hardt-ma/thm-2.1-proof-sign": ("hardt-ma/thm-2.1-proof", "sign"),
    "hardt-ma/thm-2.1-proof-rotation-norm": ("hardt-ma/thm-2.1-proof", "rotation-norm"),
    "hardt-ma/thm-2.1-proof-scaling": ("hardt-ma/thm-2.1-proof", "scaling"),
    "hardt-ma/thm-2.1-proof-layer-count": ("hardt-ma/thm-2.1-proof", "layer-count"),
    "hardt-ma/thm-2.1-proof-rounding": ("hardt-ma/thm-2.1-proof", "rounding"),
}


def retired_into(claim_id: str) -> tuple[str, str] | None:
    """For a retired claim id (:data:`RETIRED`): the claim it moved into and what of that claim it became ("its
    proof step 2, conditions", the number from the declaration); None for an id that was never retired."""
    if claim_id not in RETIRED:
        return None
    into, key = RETIRED[claim_id]
    return into, f"its proof step {find(into).step_number(key)}, {key}"


def retired_message(claim_id: str) -> str | None:
    """One line for a retired claim id (:data:`RETIRED`): which claim it moved into and how to re-check that one;
    None for an id that was never retired."""
    moved = retired_into(claim_id)
    if moved is None:
        return None
    into, what = moved
    return (
        f"claim {claim_id!r} was merged into {into} ({what}); re-check it with: "
        f"python -m resnet_theory.claims verify {into}"
    )


def unknown_claim_message(claim_id: str) -> str:
    """Why ``claim_id`` names no claim, in one line: where a retired id moved (:func:`retired_message`), else that
    no claim has the id."""
    return retired_message(claim_id) or f"no claim {claim_id!r} (python -m resnet_theory.claims list shows the ids)"


def find(claim_id: str) -> Checked | NotCheckable:
    """The declaration of ``claim_id``; :class:`KeyError` otherwise, saying where a retired id moved."""
    for decl in all_claims():
        if decl.id == claim_id:
            return decl
    raise KeyError(unknown_claim_message(claim_id))
