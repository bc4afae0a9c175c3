"""The book's claims as library objects: each declared once, beside the function that computes its evidence.
The map, one line per module:

- :mod:`~resnet_theory.claims.spec`: how a claim is declared (Source, Control, Correction, ProofStep,
  Checked, NotCheckable, Skip) and what its function returns (Evidence, StepEvidence, NotAvailable).
- :mod:`~resnet_theory.claims.context`: a chapter's profile table (Knob, ProfileTable) and the Context a
  claim's function gets (sizes, seed, its own random numbers, results shared between claims).
- :mod:`~resnet_theory.claims.registry`: ClaimSet (one chapter's claims) and the book's chapters' claims
  modules, in book order.
- :mod:`~resnet_theory.claims.run`: run one claim: its evidence checked against its declaration, its verdict.
- :mod:`~resnet_theory.claims.chapter`: Chapter, what a chapter's notebook calls for each claim.
- :mod:`~resnet_theory.claims.cli`: ``python -m resnet_theory.claims list|verify``.
- :mod:`~resnet_theory.claims.coverage`: Hardt & Ma walked paragraph by paragraph (claim, skip line or finding).

The chapters' claims modules (one per chapter; see ``registry.CHAPTER_MODULES``):

- :mod:`~resnet_theory.claims.linear`: Hardt & Ma Section 2, Bartlett, Helmbold & Long.
- :mod:`~resnet_theory.claims.expressivity`: Hardt & Ma Section 3, Appendices B and C.
- :mod:`~resnet_theory.claims.smooth_maps`: Bartlett, Evans & Long.
- :mod:`~resnet_theory.claims.linear_predictors`: Shamir.
- :mod:`~resnet_theory.claims.experiments`: Hardt & Ma Section 4, He et al.
- :mod:`~resnet_theory.claims.experiments_sizing`: the experiments chapter's seeds, sized by power from the pilot
  file ``resnet_theory/data/experiments_pilot.json``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ..verdicts import Check, NoUsableControl
    from .context import Context, Knob, ProfileTable
    from .registry import ClaimSet
    from .spec import Control, Correction, Evidence, NotAvailable, ProofStep, Source, StepEvidence

#: Where each name of the package's API lives. They are imported on first use (PEP 562), so that
#: ``python -m resnet_theory.claims`` imports numpy only inside its own ``__main__``, where a Ctrl-C in the
#: command's first half-second is one line, not a traceback of the import.
_EXPORTS = {
    "Check": "..verdicts",
    "NoUsableControl": "..verdicts",
    "Context": ".context",
    "Knob": ".context",
    "ProfileTable": ".context",
    "ClaimSet": ".registry",
    **{
        name: ".spec"
        for name in ("Control", "Correction", "Evidence", "NotAvailable", "ProofStep", "Source", "StepEvidence")
    },
}


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "Check",
    "ClaimSet",
    "Context",
    "Control",
    "Correction",
    "Evidence",
    "Knob",
    "NoUsableControl",
    "NotAvailable",
    "ProfileTable",
    "ProofStep",
    "Source",
    "StepEvidence",
]
