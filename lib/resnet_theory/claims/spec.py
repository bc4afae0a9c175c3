"""How a claim is declared: what it says, where it is printed, what it was checked against, and its control.

A claim is declared once, beside the function that computes its evidence::

    CLAIMS = ClaimSet("linear")

    @CLAIMS.checked(
        "hardt-ma/claim-2.3", paper="hardt-ma", ref="Claim 2.3, eq. (2.4), Section 2",
        source=Source.printed(), section="linear-claim-2-3",
        statement=r"$f(A) = \\|E(A)\\,\\Sigma^{1/2}\\|_F^2 + C$ ...",
        control=Control("Noise xi = M x + eta that depends on the input: the setting rules it out ..."),
    )
    def claim_2_3(ctx: Context) -> Evidence:
        ...
        return Evidence(statement=..., control=..., data={...})

The declaration's types make the illegal combinations impossible to write: a checked claim cannot be declared
without its :class:`Control` (what the control input is and why the claim rules it out), a proof step without
its repair (:class:`ProofStep` takes both; a claim whose printed proof has several steps that fail as written
declares a tuple of them, and its evidence returns a tuple of :class:`StepEvidence` in the same order), a
correction without the corrected statement (:class:`Correction`), a claim that is not checkable here without what
it needs (:class:`NotCheckable`), and an :class:`Evidence` without the control's check. Whether the evidence a
function returns matches its declaration (a declared proof step needs its step and repair checks, one per declared
step, an undeclared one may not have them) is checked when the claim runs
(:func:`resnet_theory.claims.run.run_claim`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ledger import PAPERS, Check
from ..verdicts import NoUsableControl

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context

_ID = re.compile(r"^[a-z][a-z-]*/[a-z0-9][a-z0-9.-]*$")
_LABEL = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _sentence(text: Any, what: str, words: int = 4) -> str:
    if not isinstance(text, str) or len(text.split()) < words:
        raise ValueError(f"{what} must be a sentence of at least {words} words, got {text!r}")
    return text


@dataclass(frozen=True)
class Source:
    """Whose statement a claim tests, and from which text: the printed paper, its abstract, a review (which
    one), the book's reconstruction, or the book's own question (a question the paper does not ask: a finding
    of the book, never a verdict on the paper). Build it with the constructors.

    A review or a restatement that makes an abstract's or a review's statement precise (a constant, a hypothesis
    the abstract leaves out) is named in ``detail`` by its name in :data:`resnet_theory.record.REVIEWS`: the
    ledger cites it and the verdict's label says so ("as the abstract states it, made precise by the restatement
    by Arora et al."). A review source's detail is the review's name, then ``"; "`` and anything else."""

    kind: str
    #: For a review: which one (e.g. "the PaperWhy review of Hardt & Ma"); else what text was read.
    detail: str = ""
    #: The evidence is the book's scaled-down analogue of the paper's experiment, not the experiment itself (only
    #: for a printed statement; ``detail`` says what the analogue is): the verdict's label says so.
    on_analogue: bool = False

    KINDS = ("printed", "abstract", "review", "reconstruction", "question")

    def __post_init__(self):
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown source kind {self.kind!r}; one of {', '.join(self.KINDS)}")
        if self.kind == "review" and not self.detail.strip():
            raise ValueError("a review source must say which review")
        if not isinstance(self.on_analogue, bool):
            raise TypeError(f"on_analogue must be True or False, got {self.on_analogue!r}")
        if self.on_analogue and self.kind != "printed":
            raise ValueError(f"only a printed statement is tested on the book's analogue, not a {self.kind} one")
        if self.on_analogue and not self.detail.strip():
            raise ValueError("a statement tested on the book's analogue must say what the analogue is (detail)")

    @classmethod
    def printed(cls, detail: str = "", *, on_analogue: bool = False) -> Source:
        """The statement as the paper prints it (the printed text named in ../shared/papers/SOURCES.md);
        ``on_analogue=True`` where the evidence is the book's scaled-down analogue of the paper's experiment, not
        the experiment itself, and ``detail`` says what the analogue is."""
        return cls("printed", detail, on_analogue)

    @classmethod
    def abstract(cls, detail: str = "") -> Source:
        """The statement as the paper's abstract gives it (the full text was not available)."""
        return cls("abstract", detail)

    @classmethod
    def review(cls, which: str) -> Source:
        """The statement as a review of the paper gives it; ``which`` names the review."""
        return cls("review", which)

    @classmethod
    def reconstruction(cls, detail: str = "") -> Source:
        """The book's reconstruction of the statement (the paper's text was not available)."""
        return cls("reconstruction", detail)

    @classmethod
    def question(cls, detail: str = "") -> Source:
        """The book's own question, which the paper does not ask: a finding, never a verdict on the paper."""
        return cls("question", detail)

    @property
    def ledger_key(self) -> str:
        """The key of :data:`resnet_theory.ledger.SOURCES` the claims record carries."""
        return {"printed": "paper"}.get(self.kind, self.kind)


@dataclass(frozen=True)
class Control:
    """The negative control's input: what it is and why the claim rules it out (one sentence). The control's
    check, run on that input by the evidence function, must fail."""

    input: str

    def __post_init__(self):
        _sentence(self.input, "Control.input (what the control input is and why the claim rules it out)")


@dataclass(frozen=True)
class Correction:
    """What holds instead, when the statement as printed fails on a counterexample: the corrected statement."""

    statement: str

    def __post_init__(self):
        _sentence(self.statement, "Correction.statement", words=3)


@dataclass(frozen=True)
class ProofStep:
    """A step or construction of the printed proof that may fail as written (``step``), with the repair that
    the book checks in its place (``repair``): both are required. ``where`` is optional: the step's place in the
    printed proof, as a claim's ``ref`` names the statement's ("Appendix A.1, proof of Theorem 2.1: the choice of
    $p$ and $q$"); the record, the ledger's card, the errata, ``claims verify`` and a chapter's step table show it.
    ``key`` is optional too: a short name of the step ("layer-count"), unique within its claim, by which a chapter
    asks for the step's number and its table (:meth:`Checked.step_number`), so that prose which says "step n"
    follows the declaration's order instead of a number typed by hand; the record carries it too, and the ledger's
    card, the errata and ``claims verify`` name the step by it ("proof step 2 (conditions)")."""

    step: str
    repair: str
    where: str = ""
    key: str = ""

    def __post_init__(self):
        _sentence(self.step, "ProofStep.step", words=3)
        _sentence(self.repair, "ProofStep.repair", words=3)
        if not isinstance(self.where, str):
            raise TypeError(f"ProofStep.where must be text (the step's place in the printed proof), got {self.where!r}")
        if self.where:
            _sentence(self.where, "ProofStep.where (the step's place in the printed proof)", words=3)
        if not isinstance(self.key, str) or (self.key and not _LABEL.match(self.key)):
            raise ValueError(
                f"ProofStep.key must be a short name in lower case with hyphens ('layer-count'), got {self.key!r}"
            )


@dataclass(frozen=True)
class StepEvidence:
    """The checks of a declared proof step: the step as printed (``step``) and its repair (``repair``). A claim that
    declares several proof steps returns a tuple of them, one per step in the declaration's order."""

    step: Check
    repair: Check

    def __post_init__(self):
        if not (isinstance(self.step, Check) and isinstance(self.repair, Check)):
            raise TypeError("StepEvidence needs two Check objects, the step's and the repair's")


@dataclass(frozen=True)
class Evidence:
    """What a claim's function computed: the statement's check, the control's check (or several), the
    corrected statement's check and the proof step's checks when the claim declares them, and the data the
    chapter shows (``data``: tables as lists of row dicts, figure data, anything the narration needs) and the
    numbers its prose quotes (``glue``: plain floats, ints and strings, glued under their names)."""

    statement: Check
    #: The control's check, or :class:`NoUsableControl` (the check tried) where it cannot decide: the claim then
    #: has no usable control and its verdict is ``undecided``.
    control: Check | NoUsableControl | tuple[Check | NoUsableControl, ...]
    corrected: Check | None = None
    #: The checks of the declared proof step (:class:`StepEvidence`), or a tuple of them, one per declared step in
    #: the declaration's order; :attr:`proof_steps` is always the tuple.
    proof: StepEvidence | tuple[StepEvidence, ...] | None = None
    data: dict = field(default_factory=dict)
    glue: dict = field(default_factory=dict)

    def __post_init__(self):
        controls = self.control if isinstance(self.control, tuple) else (self.control,)
        if not isinstance(self.statement, Check):
            raise TypeError("Evidence.statement must be a Check built from computed numbers")
        if not controls or not all(isinstance(c, (Check, NoUsableControl)) for c in controls):
            raise TypeError(
                "Evidence.control must be a Check (or a tuple of Checks) run on the control input, or "
                "NoUsableControl(check) where it cannot decide"
            )
        if self.corrected is not None and not isinstance(self.corrected, Check):
            raise TypeError("Evidence.corrected must be a Check or None")
        steps = self.proof if isinstance(self.proof, tuple) else (self.proof,)
        if self.proof is not None and not (steps and all(isinstance(p, StepEvidence) for p in steps)):
            raise TypeError(
                "Evidence.proof must be a StepEvidence(step=..., repair=...), a non-empty tuple of them (one per "
                "declared proof step), or None"
            )
        for k, v in self.glue.items():
            if not isinstance(k, str) or not isinstance(v, (bool, int, float, str)):
                raise TypeError(f"Evidence.glue[{k!r}] must be a plain int, float, bool or str, got {type(v).__name__}")

    @property
    def controls(self) -> tuple[Check | NoUsableControl, ...]:
        return self.control if isinstance(self.control, tuple) else (self.control,)

    @property
    def proof_steps(self) -> tuple[StepEvidence, ...]:
        """The proof steps' checks as a tuple (empty where the claim declares none)."""
        if self.proof is None:
            return ()
        return self.proof if isinstance(self.proof, tuple) else (self.proof,)


@dataclass(frozen=True)
class NotAvailable:
    """What a checked claim's function returns when this run lacks what the check needs (a GPU, a data set):
    the claim is recorded as ``not-checkable-here`` with ``needs`` and ``reason``, so the same declaration is
    checked where the hardware and data exist and says what it needs elsewhere."""

    needs: str
    reason: str

    def __post_init__(self):
        if not isinstance(self.needs, str) or not self.needs.strip():
            raise ValueError("NotAvailable.needs must name the hardware, data or text the check needs")
        _sentence(self.reason, "NotAvailable.reason")


@dataclass(frozen=True, kw_only=True)
class _Declared:
    id: str
    paper: str
    ref: str
    statement: str
    source: Source
    section: str
    chapter: str
    #: Ids of the printed results whose printed proofs this claim's printed proof uses.
    rests_on: tuple[str, ...] = ()

    def __post_init__(self):
        if not _ID.match(self.id):
            raise ValueError(f"claim id {self.id!r}: expected 'paper/name' in lower case")
        if self.paper not in PAPERS:
            raise ValueError(f"claim {self.id!r}: unknown paper {self.paper!r}; known: {sorted(PAPERS)}")
        if not isinstance(self.source, Source):
            raise TypeError(f"claim {self.id!r}: source must be a Source (Source.printed(), Source.review(...))")
        if not _LABEL.match(self.section):
            raise ValueError(f"claim {self.id!r}: section {self.section!r} is not a MyST label")
        for what in ("ref", "statement"):
            if not isinstance(getattr(self, what), str) or not getattr(self, what).strip():
                raise ValueError(f"claim {self.id!r}: {what} must be given")
        if not isinstance(self.rests_on, tuple) or not all(isinstance(r, str) and _ID.match(r) for r in self.rests_on):
            raise ValueError(f"claim {self.id!r}: rests_on must be a tuple of claim ids")


@dataclass(frozen=True, kw_only=True)
class Checked(_Declared):
    """A claim the book checks by computation: the declaration and its evidence function."""

    control: Control
    #: Returns the Evidence, or NotAvailable where this run lacks the hardware or data the check needs.
    evidence: Callable[[Context], Evidence | NotAvailable]
    correction: Correction | None = None
    #: The steps of the printed proof the claim checks, in the proof's order (empty: none). Declared with
    #: ``ClaimSet.checked(..., proof_step=ProofStep(...))`` or ``proof_step=(ProofStep(...), ProofStep(...))``.
    proof_steps: tuple[ProofStep, ...] = ()

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.control, Control):
            raise TypeError(f"claim {self.id!r}: control must be a Control(input=...)")
        if self.correction is not None and not isinstance(self.correction, Correction):
            raise TypeError(f"claim {self.id!r}: correction must be a Correction(statement=...)")
        if not isinstance(self.proof_steps, tuple) or not all(isinstance(p, ProofStep) for p in self.proof_steps):
            raise TypeError(
                f"claim {self.id!r}: proof_step must be a ProofStep(step=..., repair=...) or a tuple of them"
            )
        if len(set(self.proof_steps)) != len(self.proof_steps):
            raise ValueError(f"claim {self.id!r}: a proof step is declared twice")
        keys = [p.key for p in self.proof_steps if p.key]
        if len(set(keys)) != len(keys):
            twice = sorted({k for k in keys if keys.count(k) > 1})
            raise ValueError(f"claim {self.id!r}: proof step key(s) {', '.join(twice)} declared twice")
        if not callable(self.evidence):
            raise TypeError(f"claim {self.id!r}: evidence must be a function of a Context")

    @property
    def step_keys(self) -> tuple[str, ...]:
        """The declared proof steps' keys, in the proof's order (``""`` for a step declared without one)."""
        return tuple(p.key for p in self.proof_steps)

    def step_number(self, key: str) -> int:
        """The number (from 1, the printed proof's order) of the proof step declared with ``key``: what
        ``claim_run.proof_step`` takes and what a chapter glues where its prose says "step n". A key that names no
        step of this claim is refused, naming the keys it has."""
        if isinstance(key, str) and key and key in self.step_keys:
            return self.step_keys.index(key) + 1
        named = [k for k in self.step_keys if k]
        has = f"its step keys: {', '.join(named)}" if named else "it declares no step keys"
        raise KeyError(f"claim {self.id!r} has no proof step {key!r}; {has}")

    @property
    def function(self) -> str:
        """``module:qualname`` of the evidence function."""
        return f"{self.evidence.__module__}:{self.evidence.__qualname__}"

    @property
    def source_location(self) -> tuple[str, int]:
        """The evidence function's file, relative to the package's parent folder (``resnet_theory/...``), and
        its first line."""
        path = inspect.getsourcefile(self.evidence) or ""
        _, line = inspect.getsourcelines(self.evidence)
        marker = "/resnet_theory/"
        rel = "resnet_theory/" + path.split(marker, 1)[1] if marker in path else path
        return rel, line


@dataclass(frozen=True, kw_only=True)
class NotCheckable(_Declared):
    """A claim this book cannot check here: ``needs`` names the hardware, data or text the check needs and a
    build lacks; ``reason`` says why in a sentence. A statistic that does not decide is never filed here."""

    reason: str
    needs: str

    def __post_init__(self):
        super().__post_init__()
        _sentence(self.reason, f"claim {self.id!r}: reason")
        if not isinstance(self.needs, str) or not self.needs.strip():
            raise ValueError(f"claim {self.id!r}: needs must name the hardware, data or text the check needs")


@dataclass(frozen=True)
class Skip:
    """A printed statement the chapter discusses but does not check, and why (no verdict)."""

    paper: str
    ref: str
    statement: str
    why: str

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"unknown paper key {self.paper!r}; known: {sorted(PAPERS)}")
        if not (self.ref and self.statement and self.why):
            raise ValueError("a skipped statement needs its printed location, the statement and why it is not checked")
