"""The claim record, declared once: :class:`Claim` (every field a claims file holds, with its type), where its
statement comes from (:data:`SOURCES`), the papers (:data:`PAPERS`), the strict reading of a record
(:func:`claim_from_dict`, :func:`claims_document`) and what makes a record unpublishable (:func:`claim_defects`,
:func:`rests_on_defects`). No file or network I/O: reading claims files is :mod:`resnet_theory.book.claims_files`.

Every checkable claim carries a **negative control**: the same check run on an *input the claim rules out*, whose
record says what that input is and why the claim rules it out (``control["input"]``). The control must come out
``holds = False``; a control that holds means the check could not tell the claim's inputs from others, and the
record is a defect. A ``not-checkable-here`` claim names what it needs (hardware or data); a statistical reason
is never filed under it (that is ``undecided``).

A record's text fields reach a web page: the chapter and section are plain names (they become links), the
evidence function's file is one of the package's, and no field may carry a MathJax macro that makes a link, a
style, a class, an id, data attributes or a raw character through its ``$...$`` math (:data:`UNSAFE_TEX`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, asdict, dataclass, fields

from .tables import in_words
from .verdicts import VERDICTS, recorded_step_count, step_keys, verdict_from_evidence

#: Where a claim's statement comes from (the record's ``source``; ``Source.ledger_key`` of a declaration).
SOURCES = {
    "paper": "the paper's printed text",
    "review": "a review of the paper (its statement of the result, not the paper's)",
    "reconstruction": "our reconstruction (the paper's text was not available to us)",
    "abstract": "the paper's abstract (the full text was not available to us)",
    "question": "the book's own question (not a statement of the paper: a finding of the book, never a verdict on it)",
}


@dataclass(frozen=True)
class Review:
    """A secondary text a claim's statement rests on: the short name a verdict's label uses ("the PaperWhy
    review"), the key of its entry in ``references.bib`` and how the ledger cites it ("de Benito Delgado,
    2017")."""

    short: str
    bibkey: str
    cite: str


#: Every review a claim may rest on, in one place: the name a declaration gives (``Source.review(name)``, the
#: record's ``source_detail``) -> its short name and its entry in the References (``references.bib``). A review
#: source whose name is not here is a defect (:func:`claim_defects`): every review a chapter rests on is cited.
REVIEWS = {
    "the PaperWhy review of Hardt & Ma": Review(
        "the PaperWhy review", "paperwhy2017identity", "de Benito Delgado, 2017, PaperWhy review of Hardt & Ma"
    ),
    "the notes on Bartlett's 2017 talk (review 002)": Review(
        "the review of Bartlett's talk", "debenito2017talk", "de Benito Delgado, 2017, notes on Bartlett's talk"
    ),
    "the TU Munich seminar review of Shamir (Güley, 2020)": Review(
        "the TU Munich seminar review", "guley2020review", "Güley, 2020"
    ),
    "the restatement by Arora, Cohen, Golowich & Hu (ICLR 2019)": Review(
        "the restatement by Arora et al.", "arora2019convergence", "Arora, Cohen, Golowich & Hu, 2019, Section 5"
    ),
    "the AI-written summary of Hardt & Ma": Review(
        "the AI-written summary", "aisummary2016identity", "an unattributed AI-written summary of Hardt & Ma"
    ),
    "MathOverflow question 310744": Review(
        "the MathOverflow quotation", "mathoverflow310744", "MathOverflow, 2018, question 310744, quoting Theorem 1"
    ),
}


#: What follows a review's name in a review source's detail that says what else its statement rests on: "the notes
#: on Bartlett's 2017 talk (review 002); the hypotheses ... from MathOverflow question 310744" rests on the talk's
#: notes, made precise by MathOverflow (:func:`review_name`, :func:`source_phrase`).
REVIEW_MORE = "; "


def review_name(detail: str | None) -> str | None:
    """The name in :data:`REVIEWS` of the review a review source rests on: its detail is that name, or that name
    then :data:`REVIEW_MORE` and what else the statement rests on; None for any other detail."""
    text = detail or ""
    if text in REVIEWS:
        return text
    return next((name for name in REVIEWS if text.startswith(name + REVIEW_MORE)), None)


def review_of(detail: str | None) -> Review | None:
    """The review a review source's detail names (:func:`review_name`), or None."""
    name = review_name(detail)
    return None if name is None else REVIEWS[name]


def cited_reviews(detail: str | None) -> list[tuple[str, Review]]:
    """Every review of :data:`REVIEWS` whose name ``detail`` contains (an abstract source may say its precise
    form follows a review), in the order they appear in ``detail``."""
    text = detail or ""
    found = [(text.find(name), name, r) for name, r in REVIEWS.items() if name in text]
    return [(name, r) for _, name, r in sorted(found)]


def _made_precise(source: str, detail: str | None) -> str:
    """What a label adds where an abstract's or a review's statement is made precise by the reviews its detail
    names (:func:`cited_reviews`), other than the review it rests on: ", made precise by the restatement by Arora
    et al."; empty otherwise."""
    if source not in ("abstract", "review"):
        return ""
    primary = review_name(detail) if source == "review" else None
    others = [r.short for name, r in cited_reviews(detail) if name != primary]
    return f", made precise by {in_words(others)}" if others else ""


def source_phrase(source: str, detail: str | None = None, *, on_analogue: bool = False) -> str:
    """Against whose statement a verdict was reached, as a verdict's label says it: "as printed" ("as printed, on
    the book's analogue" where the evidence is the book's scaled-down analogue of the paper's experiment: the
    record's ``on_analogue``), "as the abstract states it", "as the PaperWhy review states it", "our
    reconstruction", "the book's finding". An abstract's or a review's statement made precise by a review its
    detail names says so: "as the abstract states it, made precise by the restatement by Arora et al."."""
    if on_analogue and source != "paper":
        raise ValueError(f"only a printed statement is tested on the book's analogue, not a {source!r} one")
    if source == "paper":
        return "as printed, on the book's analogue" if on_analogue else "as printed"
    if source == "abstract":
        return "as the abstract states it" + _made_precise(source, detail)
    if source == "review":
        review = review_of(detail)
        return f"as {review.short if review else 'a review'} states it" + _made_precise(source, detail)
    if source == "reconstruction":
        return "our reconstruction"
    if source == "question":
        return "the book's finding"
    raise ValueError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")


def verdict_label(verdict: str, source: str, detail: str | None = None, *, on_analogue: bool = False) -> str:
    """A verdict with what it was checked against, wherever it is shown: "confirmed, as printed", "corrected, as
    the PaperWhy review states it", "confirmed, as the abstract states it", "confirmed, as printed, on the
    book's analogue", "confirmed, as the abstract states it, made precise by the restatement by Arora et al.",
    "confirmed (our reconstruction)"; for the book's own question, "the book's finding: refuted" (never a verdict
    on the paper)."""
    phrase = source_phrase(source, detail, on_analogue=on_analogue)
    if source == "question":
        return f"{phrase}: {verdict}"
    if source == "reconstruction":
        return f"{verdict} ({phrase})"
    return f"{verdict}, {phrase}"


#: Papers the book reviews or cites in claims: key -> (display name, bibtex key).
PAPERS = {
    "hardt-ma": ("Hardt & Ma (2017)", "hardt2017identity"),
    "bartlett-helmbold-long": ("Bartlett, Helmbold & Long (2018)", "bartlett2018gradient"),
    "bartlett-evans-long": ("Bartlett, Evans & Long (2018)", "bartlett2018representing"),
    "shamir": ("Shamir (2018)", "shamir2018resnets"),
    "he-et-al": ("He, Zhang, Ren & Sun (2016)", "he2016deep"),
}


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
    #: Whose statement the claim tests: "paper", "abstract", "review", "reconstruction" or "question"
    #: (see :data:`SOURCES`).
    source: str = "paper"
    #: The negative control: ``{"holds": bool, "decisive": bool, "summary": str, "input": str}`` (``input``: what
    #: the control's input is and why the claim rules it out); ``None`` only when not checkable here.
    control: dict | None = None
    #: For a proof gap: the step of the printed proof that fails, and the repair that holds (the first declared step
    #: where the claim declares several: the others are in ``further_proof_steps``).
    proof_step: str | None = None
    repair: str | None = None
    #: For ``not-checkable-here``: the hardware or data the check needs and this build lacks.
    needs: str | None = None
    #: Which review, or which text, the source is (``resnet_theory.claims.Source.detail``).
    source_detail: str | None = None
    #: Whether the evidence is the book's scaled-down analogue of the paper's experiment, not the experiment itself
    #: (``resnet_theory.claims.Source.on_analogue``; only for a printed statement): the label says so.
    on_analogue: bool = False
    #: The function that computes the claim's evidence (``module:qualname``), its file and first line.
    function: str | None = None
    source_file: str | None = None
    source_line: int | None = None
    #: Ids of the printed results whose printed proofs this claim's printed proof uses.
    rests_on: list | None = None
    #: The wording of the proof steps after the first, where a claim declares several, in the proof's order:
    #: ``[{"step": ..., "repair": ...}, ...]``; step ``n`` (from 2) has its checks under the evidence keys
    #: ``proof_step_n`` and ``repair_n`` (:func:`resnet_theory.verdicts.step_keys`). Absent (``None``) for a claim
    #: with one step or none, whose record is written without it (:func:`claim_to_dict`).
    further_proof_steps: list | None = None
    #: Where the first proof step is printed (``resnet_theory.claims.ProofStep.where``: its place in the printed
    #: proof, as ``ref`` names the statement's); a further step's is ``"where"`` in its entry of
    #: ``further_proof_steps``. Absent (``None``) where the claim names none, and then not written.
    proof_step_where: str | None = None
    #: The first proof step's key (``resnet_theory.claims.ProofStep.key``: a short name such as ``"conditions"``,
    #: unique within the claim, by which a chapter and :data:`resnet_theory.claims.registry.RETIRED` name the step);
    #: a further step's is ``"key"`` in its entry of ``further_proof_steps``. Absent (``None``) where the claim's
    #: first step has none, and then not written.
    proof_step_key: str | None = None

    def __repr__(self) -> str:  # a chapter cell that ends in ledger.claim(...) shows one short line
        return f"Claim {self.id}: {self.verdict}"

    @property
    def paper_name(self) -> str:
        return PAPERS.get(self.paper, (self.paper, None))[0]

    @property
    def source_text(self) -> str:
        return SOURCES.get(self.source, self.source)

    @property
    def checked_against(self) -> str:
        """Whose statement, from which text: "the paper's printed text, tested on the book's analogue: the
        scaled-down network on 8 x 8 digits, ..." (the reviews it names are cited by :func:`source_line`)."""
        text = self.source_text + (", tested on the book's analogue" if self.on_analogue else "")
        return text + (f": {self.source_detail}" if self.source_detail else "")

    @property
    def label(self) -> str:
        """The verdict with what it was checked against (:func:`verdict_label`)."""
        return verdict_label(self.verdict, self.source, self.source_detail, on_analogue=self.on_analogue)

    @property
    def is_finding(self) -> bool:
        """The book's own question: a finding of the book, never a verdict on the paper (nor in its counts)."""
        return self.source == "question"

    @property
    def whose(self) -> str:
        """Whose statement, for a sentence: "as printed", "as the abstract states it", ..."""
        return source_phrase(self.source, self.source_detail, on_analogue=self.on_analogue)

    @property
    def proof_steps(self) -> list[RecordedStep]:
        """Every declared proof step, in the proof's order, with its wording, its repair's and their checks."""
        words = [(self.proof_step, self.repair, self.proof_step_where, self.proof_step_key)] if self.proof_step else []
        words += [
            (d.get("step"), d.get("repair"), d.get("where"), d.get("key"))
            for d in self.further_proof_steps or []
            if isinstance(d, dict)
        ]
        out = []
        for n, (step, repair, where, key) in enumerate(words, 1):
            step_key, repair_key = step_keys(n)
            checks = [self.evidence.get(k) for k in (step_key, repair_key)]
            step_check, repair_check = (c if isinstance(c, dict) else {} for c in checks)
            step, repair, where, key = (str(t or "") for t in (step, repair, where, key))
            out.append(RecordedStep(n, len(words), step, repair, step_check, repair_check, where, key))
        return out

    @property
    def failing_steps(self) -> list[RecordedStep]:
        """The declared proof steps whose check fails as printed (what a proof gap's erratum names)."""
        return [s for s in self.proof_steps if not s.holds]

    @property
    def erratum(self) -> str | None:
        """One sentence for the errata list: what is printed, what fails, what holds (else ``None``)."""
        where = f"{self.paper_name}, {self.ref}"
        if self.is_finding:
            return None
        if self.verdict == "corrected":
            printed, corrected = self.evidence.get("printed", {}), self.evidence.get("corrected", {})
            return (
                f"{where}: {self.whose}, \u201c{self.statement}\u201d fails ({printed.get('summary', self.check)}); "
                f"what holds: \u201c{self.corrected_statement}\u201d ({corrected.get('summary', '')})."
            )
        if self.verdict == "proof-gap":
            failing = self.failing_steps
            holds = f"{where}: the statement holds ({self.evidence.get('printed', {}).get('summary', '')}), "
            if len(failing) == 1:
                s = failing[0]
                return (
                    holds + f"but the proof's step{s.annotation()} \u201c{s.step}\u201d fails as written "
                    f"({s.step_check.get('summary', '')}); repair: \u201c{s.repair}\u201d "
                    f"({s.repair_check.get('summary', '')})."
                )
            steps = "; ".join(
                f"step {s.number}{s.annotation()} \u201c{s.step}\u201d fails as written "
                f"({s.step_check.get('summary', '')}), "
                f"repair: \u201c{s.repair}\u201d ({s.repair_check.get('summary', '')})"
                for s in failing
            )
            return holds + f"but {len(failing)} of the proof's steps fail as written: {steps}."
        return None


@dataclass(frozen=True)
class RecordedStep:
    """One declared proof step of a claim record (:attr:`Claim.proof_steps`): its number (from 1) of ``of``, the
    step's wording and its repair's, and their recorded checks (``{"holds", "decisive", "summary", ...}``; empty
    where the record lacks them)."""

    number: int
    of: int
    step: str
    repair: str
    step_check: dict
    repair_check: dict
    #: The step's place in the printed proof (``ProofStep.where``); empty where the claim names none.
    where: str = ""
    #: The step's key (``ProofStep.key``, "conditions"); empty where the declaration gives none (and in a record
    #: written before records carried it).
    key: str = ""

    @property
    def holds(self) -> bool:
        """Whether the step holds as printed (a step without a recorded check counts as failing, as it is shown)."""
        return self.step_check.get("holds") is True

    @property
    def keys(self) -> tuple[str, str]:
        """The evidence keys of the step's check and its repair's (:func:`resnet_theory.verdicts.step_keys`)."""
        return step_keys(self.number)

    @property
    def tag(self) -> str:
        """ " (KEY)" after the step's name where the record has its key ("Proof step 2 (conditions)"); else empty."""
        return self.annotation(where=None)

    def annotation(self, key: Callable[[str], str] = str, where: Callable[[str], str] | None = str) -> str:
        """ " (KEY; printed at WHERE)" after the step's name in an erratum: the step's key and its place, each where
        the record has it (" (conditions)", " (printed at ...)"), written by ``key`` and ``where`` (the HTML ledger
        escapes and typesets them; ``where=None`` leaves the place out); else empty."""
        notes = [key(self.key)] if self.key else []
        notes += [f"printed at {where(self.where)}"] if where and self.where else []
        return f" ({'; '.join(notes)})" if notes else ""


def source_line(rec: Claim) -> str:
    """Whose statement a claim tests, and from which text, with the References entry of each review it names:
    "a review of the paper (...): the PaperWhy review of Hardt & Ma [references.bib: paperwhy2017identity]"."""
    cites = "".join(f" [{r.cite}; references.bib: {r.bibkey}]" for _, r in cited_reviews(rec.source_detail))
    return rec.checked_against + cites


def control_holds(claim: Claim) -> bool:
    """Whether the claim's negative control holds (a defect: its check could not have failed)."""
    return claim.control is not None and bool(claim.control["holds"])


def is_statistical(reason: str | None) -> bool:
    text = (reason or "").lower()
    return any(word in text for word in _STATISTICAL_WORDS)


def claim_defects(claims: Iterable[Claim]) -> list[str]:
    """Claims that cannot be published, one line each: a negative control that holds (the check could not
    have failed) or, declared usable, does not decide; a checked claim without a control or without
    ``control.input``; a verdict that does not follow from its evidence (a claim without a usable control is
    undecided); a ``not-checkable-here`` claim that ran a check, gives a statistical reason or does not name
    what it needs; a review source the References do not cite (:data:`REVIEWS`); the book's analogue of a
    statement that is not printed; and anything that would act on the page it is shown on (:func:`page_defects`)."""
    out = []
    for c in claims:
        out.extend(page_defects(c))
        if c.source == "review" and review_of(c.source_detail) is None:
            out.append(
                f"{c.id}: its statement rests on a review the References do not cite ({c.source_detail!r}); name it "
                f"in resnet_theory.record.REVIEWS (one of: {'; '.join(REVIEWS)}) with its references.bib entry"
            )
        if c.on_analogue and c.source != "paper":
            out.append(f"{c.id}: only a printed statement is tested on the book's analogue, not a {c.source!r} one")
            continue
        if c.verdict == "not-checkable-here" and not c.evidence:
            if not c.needs or not str(c.needs).strip():
                out.append(f"{c.id}: not checkable here, but it does not say what hardware or data it needs")
            if is_statistical(c.reason):
                out.append(f"{c.id}: not checkable here for a statistical reason ({c.reason}): that is 'undecided'")
            continue
        if not c.evidence:
            out.append(f"{c.id}: verdict {c.verdict!r} without evidence")
            continue
        try:
            implied = verdict_from_evidence(c.evidence, c.control if isinstance(c.control, dict) else None)
        except ValueError as exc:
            out.append(f"{c.id}: malformed evidence ({exc})")
            continue
        if implied != c.verdict:
            out.append(f"{c.id}: verdict {c.verdict!r} does not follow from its evidence (which gives {implied!r})")
        out.extend(_step_defects(c))
        if not isinstance(c.control, dict) or not isinstance(c.control.get("holds"), bool):
            out.append(f"{c.id}: a checked claim without a negative control")
            continue
        if control_holds(c) and c.control.get("usable", True) is True:  # an unusable one decides nothing
            out.append(f"{c.id}: the negative control holds ({c.control.get('summary')})")
        if c.control.get("usable", True) is True and c.control.get("decisive", True) is not True:
            out.append(f"{c.id}: the negative control does not decide ({c.control.get('summary')})")
        if not isinstance(c.control.get("input"), str) or not c.control["input"].strip():
            out.append(
                f"{c.id}: the negative control does not say what its input is and why the claim rules "
                "it out (control.input)"
            )
    return out


_TYPE_NAMES = {"str": str, "dict": dict, "int": int, "bool": bool, "list": list, "None": type(None)}


def _field_types() -> dict[str, tuple[type, ...]]:
    """The type of every field of a claims record, read from :class:`Claim`'s own annotations (declared once)."""
    return {f.name: tuple(_TYPE_NAMES[t.strip()] for t in str(f.type).split("|")) for f in fields(Claim)}


#: The type of every field of a claims record: a record holds exactly these keys, the optional ones may be missing.
CLAIM_FIELD_TYPES = _field_types()
#: The fields every record has (those without a default in :class:`Claim`).
REQUIRED_CLAIM_FIELDS = tuple(
    f.name
    for f in fields(Claim)
    if f.default is MISSING and f.default_factory is MISSING  # type: ignore[misc]
)


#: How a printed statement's source detail began, before records had ``on_analogue``, when its evidence was the
#: book's analogue: such a record (one without the field) reads with ``on_analogue`` set. Only for reading old
#: records; no label reads a detail's wording.
_LEGACY_ANALOGUE = "the printed statement, tested on the book's analogue"


#: Fields written only when they differ from their default, so that a record without them reads as it always has
#: (a claim with one proof step or none is written as it was before a claim could declare several).
_WRITTEN_WHEN_GIVEN = ("further_proof_steps", "proof_step_where", "proof_step_key")


def claim_to_dict(c: Claim) -> dict:
    """The JSON record of ``c`` (what :meth:`resnet_theory.ledger.Ledger.save` writes and :func:`claim_from_dict`
    reads): every field, except those of :data:`_WRITTEN_WHEN_GIVEN` that keep their default."""
    return {k: v for k, v in asdict(c).items() if not (k in _WRITTEN_WHEN_GIVEN and v is None)}


def _further_steps_defect(value) -> str | None:
    """What is wrong with a record's ``further_proof_steps``, or None."""
    if value is None:
        return None
    ok = (
        isinstance(value, list)
        and value
        and all(
            isinstance(d, dict)
            and {"step", "repair"} <= set(d) <= {"step", "repair", "where", "key"}
            and all(isinstance(v, str) and v.strip() for v in d.values())
            for d in value
        )
    )
    return (
        None
        if ok
        else "further_proof_steps must be a non-empty list of {'step': text, 'repair': text} (and 'where': text, "
        "the step's printed place, and 'key': the step's key, where it has them)"
    )


#: A proof step's key (``resnet_theory.claims.ProofStep.key``): a short name in lower case with hyphens.
STEP_KEY = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def step_key_defect(keys: Sequence[str]) -> str | None:
    """What is wrong with a claim's proof step keys, one per step in the proof's order (``""`` for a step without
    one), or None: a key that is not a short name in lower case with hyphens, or a key given to two steps."""
    for n, key in enumerate(keys, 1):
        if key and not (isinstance(key, str) and STEP_KEY.match(key)):
            return (
                f"the key of proof step {n} must be a short name in lower case with hyphens ('layer-count'), "
                f"got {key!r}"
            )
    named = [k for k in keys if k]
    twice = sorted({k for k in named if named.count(k) > 1})
    return f"proof step key(s) {', '.join(map(repr, twice))} given to two steps" if twice else None


def _record_step_keys_defect(d: dict) -> str | None:
    """What is wrong with a record's proof step keys (``proof_step_key`` and the further steps' ``"key"``), or None."""
    first = d.get("proof_step_key")
    if first is not None and not (d.get("proof_step") and first):
        return "proof_step_key must be the first proof_step's key (absent where it has none)"
    return step_key_defect([first or "", *(s.get("key", "") for s in d.get("further_proof_steps") or [])])


def claim_from_dict(d: dict) -> Claim:
    """A :class:`Claim` from its JSON record; a record with unknown or missing keys, a value of the wrong type, an
    unknown verdict, source or paper, or ``on_analogue`` on a statement that is not printed raises
    :class:`ValueError` saying which. A record written before ``on_analogue`` existed reads as its detail said
    (:data:`_LEGACY_ANALOGUE`)."""
    if not isinstance(d, dict):
        raise ValueError(f"a claim record must be an object, got {type(d).__name__}")
    label = f"claim {d.get('id')!r}" if isinstance(d.get("id"), str) else "a claim record"
    unknown = sorted(str(k) for k in d if k not in CLAIM_FIELD_TYPES)
    if unknown:
        raise ValueError(f"{label} has unknown keys: {', '.join(unknown)}")
    missing = [k for k in REQUIRED_CLAIM_FIELDS if k not in d]
    if missing:
        raise ValueError(f"{label} lacks {', '.join(missing)}")
    for key, types in CLAIM_FIELD_TYPES.items():
        if key in d and not isinstance(d[key], types):
            raise ValueError(
                f"{label}: {key} must be {' or '.join('null' if t is type(None) else t.__name__ for t in types)}, "
                f"got {type(d[key]).__name__}"
            )
    bad_steps = _further_steps_defect(d.get("further_proof_steps"))
    if bad_steps:
        raise ValueError(f"{label}: {bad_steps}")
    if d.get("further_proof_steps") and not d.get("proof_step"):
        raise ValueError(f"{label}: further_proof_steps without a first proof_step")
    if d.get("proof_step_where") is not None and not (d.get("proof_step") and d["proof_step_where"].strip()):
        raise ValueError(f"{label}: proof_step_where must be the first proof_step's printed place (text)")
    bad_keys = _record_step_keys_defect(d)
    if bad_keys:
        raise ValueError(f"{label}: {bad_keys}")
    claim = Claim(**d)
    if "on_analogue" not in d and (claim.source_detail or "").startswith(_LEGACY_ANALOGUE):
        claim.on_analogue = True  # a record written before the field: its detail said so
    if claim.verdict not in VERDICTS:
        raise ValueError(f"claim {claim.id!r} has unknown verdict {claim.verdict!r}")
    if claim.source not in SOURCES:
        raise ValueError(f"claim {claim.id!r} has unknown source {claim.source!r}")
    if claim.paper not in PAPERS:
        raise ValueError(f"claim {claim.id!r} has unknown paper {claim.paper!r}")
    if claim.on_analogue and claim.source != "paper":
        raise ValueError(
            f"claim {claim.id!r}: only a printed statement is tested on the book's analogue, not a {claim.source!r} one"
        )
    return claim


def claims_document(data: object) -> tuple[list[Claim], list[dict]]:
    """The claims and skipped statements of a claims file's parsed JSON (what :meth:`resnet_theory.ledger.Ledger.
    save` writes); :class:`ValueError` saying what is wrong for anything a chapter could not have written."""
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ValueError("it must be an object with a list of 'claims'")
    unknown = sorted(str(k) for k in data if k not in ("chapter", "claims", "skipped"))
    if unknown:
        raise ValueError(f"unknown keys: {', '.join(unknown)}")
    claims = [claim_from_dict(d) for d in data["claims"]]
    skipped = data.get("skipped", [])
    if not isinstance(skipped, list) or not all(
        isinstance(s, dict) and all(isinstance(s.get(k), str) for k in SKIP_FIELDS) and set(s) <= set(SKIP_FIELDS)
        for s in skipped
    ):
        raise ValueError("'skipped' must be a list of records with paper, ref, statement, why and chapter")
    return claims, skipped


#: The fields of a printed statement a chapter discusses but does not check (``Ledger.skip``).
SKIP_FIELDS = ("paper", "ref", "statement", "why", "chapter")


# --- what a web page may receive from a record -------------------------------------------------------------------
#: MathJax macros that reach outside the formula: links (``\href``, ``\url``), styles and classes (``\style``,
#: ``\class``, ``\cssId``, ``\bbox`` with a CSS string), data attributes, raw characters and fonts
#: (``\unicode``), MathML with attributes (``\mmlToken``), tooltips and toggles, loading extensions
#: (``\require``: the ``html`` extension is off for every page) and macro definitions (which could spell one).
UNSAFE_TEX = frozenset(
    "href url style class cssId data unicode require bbox enclose mmlToken texttip mathtip toggle mathtoggle tooltip "
    "def gdef edef xdef let newcommand renewcommand providecommand newenvironment renewenvironment "
    "DeclareMathOperator Newextarrow htmlClass htmlStyle htmlId htmlData html raw rule "
    # spacing and boxes that move math over the page's other text (a negative kern of any size)
    "kern mkern hskip mskip hspace moveleft moveright raise lower llap rlap mathllap mathrlap".split()
)
_MACRO = re.compile(r"\\([A-Za-z]+)")
#: A chapter is a file stem and a section a MyST label: both become parts of a link.
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_LABEL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: The evidence function's file: a module of the package, relative to the folder holding it.
_SOURCE_FILE = re.compile(r"^resnet_theory/(?:[A-Za-z0-9_]+/)*[A-Za-z0-9_]+\.py$")
_FUNCTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.<>]*$")
#: The record's fields that a page shows as text (with their ``$...$`` math typeset).
TEXT_FIELDS = (
    "statement", "ref", "corrected_statement", "proof_step", "repair", "reason", "needs", "source_detail", "check",
    "proof_step_where",
)  # fmt: skip


def unsafe_macros(text: str | None) -> list[str]:
    """The :data:`UNSAFE_TEX` macros ``text`` uses (``["\\href"]``), in order; empty for text a page may typeset."""
    return [f"\\{m}" for m in _MACRO.findall(text or "") if m in UNSAFE_TEX]


def _step_defects(c: Claim) -> list[str]:
    """A checked record's proof steps against its evidence: one worded step per recorded step check, each with its
    repair's check, and no step's keys out of their row (``proof_step_3`` without ``proof_step_2``)."""
    worded = len(c.proof_steps)
    recorded = recorded_step_count(c.evidence)
    if worded != recorded:
        return [f"{c.id}: {worded} proof step(s) worded but {recorded} checked in its evidence"]
    stray = [
        k
        for k in c.evidence
        if k.startswith(("proof_step", "repair"))
        and k not in {key for n in range(1, recorded + 1) for key in step_keys(n)}
    ]
    missing = [step_keys(n)[1] for n in range(1, recorded + 1) if step_keys(n)[1] not in c.evidence]
    if stray or missing:
        return [f"{c.id}: proof step evidence out of order (stray: {stray}, repairs missing: {missing})"]
    return []


def _texts(c: Claim) -> Iterable[tuple[str, str]]:
    for name in TEXT_FIELDS:
        value = getattr(c, name)
        if isinstance(value, str):
            yield name, value
    for i, step in enumerate(c.further_proof_steps or [], 2):
        for key, value in step.items() if isinstance(step, dict) else ():
            if isinstance(value, str):
                yield f"further_proof_steps (step {i}).{key}", value
    for part, rec in (c.evidence or {}).items():
        if isinstance(rec, dict) and isinstance(rec.get("summary"), str):
            yield f"evidence.{part}.summary", rec["summary"]
    for key in ("input", "summary"):
        if isinstance(c.control, dict) and isinstance(c.control.get(key), str):
            yield f"control.{key}", c.control[key]


def page_defects(c: Claim) -> list[str]:
    """What in a record could act on a web page rather than be read on it, one line each: a chapter or section
    that is not a plain name (they become links), an evidence function's file outside the package or a line that
    is not a positive number, a ``rests_on`` that is not a list of ids, and :data:`UNSAFE_TEX` macros in any text
    field."""
    out = []
    if not NAME.match(c.chapter) or not _LABEL.match(c.section):
        out.append(f"{c.id}: chapter {c.chapter!r} and section {c.section!r} must be plain names (they become links)")
    if c.source_file is not None and (not _SOURCE_FILE.match(c.source_file) or ".." in c.source_file):
        out.append(f"{c.id}: source_file {c.source_file!r} is not a module of the package (resnet_theory/....py)")
    if c.source_line is not None and (isinstance(c.source_line, bool) or c.source_line < 1):
        out.append(f"{c.id}: source_line {c.source_line!r} is not a line number")
    if c.function is not None and not _FUNCTION.match(c.function):
        out.append(f"{c.id}: function {c.function!r} is not module:qualname")
    if c.rests_on is not None and not all(isinstance(r, str) and r for r in c.rests_on):
        out.append(f"{c.id}: rests_on must be a list of claim ids")
    for name, text in _texts(c):
        bad = unsafe_macros(text)
        if bad:
            out.append(
                f"{c.id}: {name} uses {', '.join(sorted(set(bad)))}, which would act on the page (a link, a style "
                "or a script through MathJax), not typeset math"
            )
    return out


# --- what rests on what -------------------------------------------------------------------------------------------
def rests_on_defects(claims: Iterable[Claim]) -> list[str]:
    """Across the whole book: a ``rests_on`` id that is no published claim, a claim resting on itself, and a
    cycle (printed proofs that use each other), one line each."""
    claims = list(claims)
    known = {c.id for c in claims}
    out = []
    for c in claims:
        for r in c.rests_on or ():
            if r == c.id:
                out.append(f"{c.id}: rests_on names the claim itself")
            elif r not in known:
                out.append(f"{c.id}: rests_on names {r!r}, which is no claim of the book")
    graph = {c.id: [r for r in c.rests_on or () if r in known and r != c.id] for c in claims}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt]
                out.append(f"{nxt}: printed proofs that rest on each other: {' -> '.join(cycle)}")
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for cid in graph:
        if cid not in state:
            visit(cid, [cid])
    return out


def dependents(claims: Iterable[Claim]) -> dict[str, list[tuple[str, str | None]]]:
    """The reverse of ``rests_on``, followed through: claim id -> ``(id, via)`` for every claim whose printed
    proof rests on it, directly (``via`` None) or through the claim ``via`` (the nearest one), in book order."""
    claims = list(claims)
    order = {c.id: i for i, c in enumerate(claims)}
    direct: dict[str, list[str]] = {}
    for c in claims:
        for r in c.rests_on or ():
            if r in order and r != c.id:
                direct.setdefault(r, []).append(c.id)
    out: dict[str, list[tuple[str, str | None]]] = {}
    for cid in order:
        seen: dict[str, str | None] = {}
        frontier = [(d, None) for d in direct.get(cid, [])]
        while frontier:
            node, via = frontier.pop(0)
            if node in seen or node == cid:
                continue
            seen[node] = via
            frontier += [(d, via or node) for d in direct.get(node, [])]
        out[cid] = sorted(seen.items(), key=lambda item: order[item[0]])
    return out
