"""The claims ledger as HTML, with no I/O: the errata, the counts, the table of every claim, the statements not
checked, and the typesetting of their ``$...$`` math.

Every field of a record is escaped; its math goes to MathJax only as ``\\(...\\)`` pieces of an escaped text,
and a text whose math uses a macro that acts on the page (:data:`resnet_theory.record.UNSAFE_TEX`: ``\\href``,
``\\style``, ``\\class``, ...) is refused (:class:`UnsafeText`), never typeset. The page that gathers a build's
claims, with each claim's source link, re-check command and seeds, is :mod:`resnet_theory.book.ledger_page`.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .record import (
    PAPERS,
    Claim,
    LedgerDefect,
    RecordedStep,
    cited_reviews,
    claim_defects,
    dependents,
    rests_on_defects,
    review_name,
    review_of,
    source_phrase,
    unsafe_macros,
)
from .tables import number_html
from .verdicts import VERDICTS, recorded_step_count, step_keys


class UnsafeText(LedgerDefect, ValueError):
    """A text whose ``$...$`` math uses a macro that would act on the page (a link, a style, a script)."""


@dataclass(frozen=True)
class SeedAgreement:
    """The verdicts a claim got when re-checked alone at each seed (``runs``: ``(seed, verdict)``), beside the
    verdict this build gives it (``verdict``)."""

    verdict: str
    runs: tuple[tuple[str, str], ...]

    @property
    def agree(self) -> int:
        return sum(v == self.verdict for _, v in self.runs)

    def text(self) -> str:
        others = "; ".join(f"{s}: {v}" for s, v in self.runs)
        return f"{self.agree} of {len(self.runs)} seeds give this build's verdict, {self.verdict} ({others})"


@dataclass(frozen=True)
class ClaimLinks:
    """What the ledger page adds to a claim row: the file and line of its evidence function (``source_label``,
    with ``source_url`` when the repository's address is known), the command that re-checks it alone, and the
    agreement of the builds at other seeds."""

    command: str | None = None
    source_label: str | None = None
    source_url: str | None = None
    seeds: SeedAgreement | None = None

    def __post_init__(self):
        if self.source_url is not None and not re.fullmatch(r"https://[^\s\"'<>`]+", self.source_url):
            raise ValueError(f"a claim's source link must be an https address, got {self.source_url!r}")


#: The sources in the order the counts show them: what the paper prints first, then its abstract, the reviews and
#: the book's reconstructions (the book's own questions are findings, never counted against a paper).
_SOURCE_ORDER = ("paper", "abstract", "review", "reconstruction")


def count_rows(claims: Iterable[Claim]) -> list[tuple[str, str, str | None, dict[str, int]]]:
    """The verdicts counted per paper and per source, one row each ``(paper key, source, review name or None,
    counts per verdict)``: what the paper prints on its own row, its abstract, each review (by its name in
    :data:`resnet_theory.record.REVIEWS`, whatever else a claim's detail adds) and the book's reconstructions on
    rows of their own, so that a correction of a review's statement is counted under that review, never charged
    to the paper. The book's own questions (source ``question``) are not counted:
    they are findings (:func:`findings_html`). Papers in the order the claims come, sources in
    :data:`_SOURCE_ORDER`."""
    table: dict[tuple[str, str, str | None], Counter] = {}
    for c in claims:
        if c.is_finding:
            continue
        detail = (review_name(c.source_detail) or c.source_detail) if c.source == "review" else None
        table.setdefault((c.paper, c.source, detail), Counter())[c.verdict] += 1
    papers = list(dict.fromkeys(paper for paper, _, _ in table))
    order = sorted(table, key=lambda k: (papers.index(k[0]), _SOURCE_ORDER.index(k[1]), k[2] or ""))
    return [(paper, source, detail, {v: table[paper, source, detail].get(v, 0) for v in VERDICTS})
            for paper, source, detail in order]  # fmt: skip


def count_label(paper: str, source: str, detail: str | None = None) -> str:
    """A counts row's name: "Hardt & Ma (2017)" for what the paper prints, "Hardt & Ma (2017), as the PaperWhy
    review states it", "Bartlett, Evans & Long (2018), as the abstract states it", "He, ... (2016), our
    reconstruction"."""
    name = PAPERS.get(paper, (paper,))[0]
    if source == "paper":
        return name
    return f"{name}, {source_phrase(source, detail)}"


def verdict_counts(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """Counts per verdict, one row per paper and source (:func:`count_rows`, named by :func:`count_label`: a
    paper's own name counts only what it prints), with a ``"total"`` row over them; the book's own questions
    are not counted."""
    out: dict[str, dict[str, int]] = {}
    total = Counter()
    for paper, source, detail, counts in count_rows(claims):
        out[count_label(paper, source, detail)] = counts
        total.update(counts)
    if out:
        out["total"] = {v: total.get(v, 0) for v in VERDICTS}
    return out


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
    return [part for piece in pieces if piece for part in _cut_after_binary_operators(piece)]


#: A ``+`` or ``-`` between two operands: after a space or an operand (a letter, digit, closing bracket, ``'``), and
#: followed by a space (so not ``-1`` after ``(`` or ``=``, not a superscript's ``^-``, not ``\pm``).
_BINARY = re.compile(r"(?<=[\w)\]}|'] )[+-](?= )|(?<=[\w)\]}|'])[+-](?= )")
#: A piece longer than this many shown characters (commands counted as one, braces and scripts' marks as none)
#: is also cut after its binary operators: "(\mathrm{Id} + B_q) \cdots (\mathrm{Id} + B_1)" ran 11 px past the
#: ledger's "stated in" column at 1400 px.
LONG_PIECE = 14


def _shown_length(tex: str) -> int:
    shown = re.sub(
        r"\\(?:mathrm|mathbf|mathcal|mathbb|operatorname|text|left|right|big|Big|,|;|!|quad)(?![A-Za-z])", "", tex
    )
    return len(re.sub(r"[{}^_\s]", "", re.sub(r"\\[A-Za-z]+", "x", shown)))


def _cut_after_binary_operators(piece: str) -> list[str]:
    """A long piece of :func:`math_pieces` cut after each ``+`` and ``-`` between operands that stands outside
    braces, ``\\left...\\right`` and environments, as TeX may break an inline formula there too; the operator keeps
    its spacing (``+{}``: a binary operator needs an operand on each side)."""
    if _shown_length(piece) <= LONG_PIECE:
        return [piece]
    parts, depth, start, i = [], 0, 0, 0
    while i < len(piece):
        if _OPENS.match(piece, i) or piece[i] == "{":
            depth += 1
        elif (_CLOSES.match(piece, i) or piece[i] == "}") and depth:
            depth -= 1
        elif piece[i] == "\\":
            i += 2
            continue
        elif depth == 0 and _BINARY.match(piece, i) and piece[i + 1 :].strip():
            parts.append(piece[start : i + 1].strip() + "{}")
            start = i + 1
        i += 1
    parts.append(piece[start:].strip())
    return [part for part in parts if part]


#: Punctuation that must not start a line after inline math (as :mod:`resnet_theory.book.math_punctuation` keeps
#: it with the page's own math).
_PUNCTUATION = re.compile(r"[.,;:!?)\]\u2019\u201d]+")


def _typeset(match: re.Match) -> str:
    return " ".join(f"\\({piece}\\)" for piece in math_pieces(match.group(1)))


def text_html(text: str | None) -> str:
    """Escape ``text`` for HTML, with its ``$...$`` spans typeset as math: they become ``\\(...\\)`` inside an
    element MathJax processes (the book's pages ignore raw output text otherwise), one per piece of
    :func:`math_pieces`, so that a long formula breaks across lines instead of widening its table.

    A text that uses a macro acting on the page (``\\href``, ``\\style``, ``\\class``, ``\\cssId``, ``\\data``,
    ``\\unicode``, ``\\require``, ...: :data:`resnet_theory.record.UNSAFE_TEX`) raises :class:`UnsafeText`.
    Outside the math, Python's number forms (``1e-06``, ``inf``) are written as a reader writes them
    (:func:`resnet_theory.tables.number_html`)."""
    bad = unsafe_macros(text)
    if bad:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise UnsafeText(f"{', '.join(sorted(set(bad)))} in {shown!r}: a macro that acts on the page, not math")
    escaped = html.escape(text or "")
    if not _INLINE_MATH.search(escaped):
        return number_html(escaped)
    pieces, start = [], 0
    for match in _INLINE_MATH.finditer(escaped):  # numbers written as a reader writes them outside the math
        pieces.append(number_html(escaped[start : match.start()]))
        start = match.end()
        tail = _PUNCTUATION.match(escaped, start)
        if not tail:
            pieces.append(_typeset(match))
            continue
        # the punctuation after the math stays on its last piece's line (it wrapped alone: "... \le \pi/q" / ".")
        *first, last = [f"\\({piece}\\)" for piece in math_pieces(match.group(1))]
        pieces.append(
            " ".join([*first, f'<span class="math-nowrap" style="white-space: nowrap">{last}{tail.group(0)}</span>'])
        )
        start = tail.end()
    pieces.append(number_html(escaped[start:]))
    return '<span class="mathjax_process">' + "".join(pieces) + "</span>"


#: ASCII spellings of mathematics a reader should see typeset (issue 33): a power of a parenthesis ``^(``, a power
#: ``x^2`` or ``Sigma^1/2``, a square root written as a call, Python's ``**``, a product written with ``*`` between
#: names or numbers, and the relations ``!=``, ``<=``, ``>=``, ``==``.
#: Also ``||`` for a norm, a Greek letter's name next to an operator or a number ("4 pi", "gamma)/l", "tau-ball"),
#: fractions written with a slash ("1/eps", "F = 1/2"), "d=2" in a label and a Greek name applied as a function
#: ("m eps(m)" in the smooth-maps chapter) (issue 33).
_GREEK = (
    r"(?:alpha|beta|gamma|delta|eps|epsilon|zeta|eta|theta|kappa|lambda|mu|nu|xi|rho|sigma|Sigma|tau|phi|Phi|psi|omega)"
)
#: Greek letters' names that are no English word (not "beta", "eta", "mu", "nu", "xi", "pi": "the beta version")
_GREEK_ALONE = r"(?:alpha|gamma|Gamma|delta|Delta|epsilon|theta|kappa|lambda|Lambda|rho|sigma|Sigma|tau|omega)"
ASCII_MATH = re.compile(
    r"\^\(|\w\^[\w{]|\bsqrt\(|\*\*|[\w)\]] ?\* ?[\w(]|!=|<=|>=|==|\|\|"  # powers, products, relations, norms
    rf"|\b{_GREEK}\b ?[-+/=<>)^]|\b{_GREEK}_\w|[-+/=(] ?\b{_GREEK}\b|\d \b(?:pi|{_GREEK})\b"  # Greek names by operators
    r"|\b\d+/[a-z]+\b|= ?\d+/\d+\b|\b[A-Z]'? / [a-z]\b|\blog [a-z] / [a-z]\b"  # 1/eps, 3/l; F = 1/2; C / m; log m / m
    r"|\b[a-zA-Z]=\d"  # "d=2" in a title or label
    r"|\b(?:exp|log|ln)\(|\b\d+/\("  # exp(-k I(d)), 4/(4 - d)
    rf"|\b{_GREEK}\("  # a Greek letter's name as a function: "eps(m)", "m eps(m)", "sigma(A)"
    rf"|(?<!\\)\b{_GREEK_ALONE}\b"  # a Greek letter's name as a word: "-2 R Sigma", "at the rho", "p vs gamma"
    r"|\b[A-Za-z]_(?:\d|[A-Za-z]\b|\+|\{)|\b[A-Z]_[a-z]{2,}\b"  # subscripts: "A_1", "h_0", "e_j", "s_+", "F_lin"
    r"|\b\d+\.\.\d+\b|\.\.[A-Za-z]_"  # a range: "d = 3..9", "q_1..q_r"
    r"|\([a-z] = \d+\)"  # a variable's value in words' parentheses: "One layer (l = 1)"
    r"|\b\d+ x \d+\b"  # a size with an "x" for the times sign: "the 2 x 2 maps"
    r"|(?<![\w$.])[A-Za-z] = -?\d"  # one letter set to a number: "W = 0 is a bad critical point", "b = 2"
    r"|\b(?:vs|from|approach|invertible|every|maps) [A-Z]\b(?![\w'.])"  # a matrix named in words: "vs R", "from I"
)
_TYPESET = re.compile(r"\\\(.*?\\\)", re.S)


def ascii_math(rendered: str) -> list[str]:
    """The ASCII spellings of mathematics (:data:`ASCII_MATH`) in rendered HTML outside its typeset math (the
    ``\\(...\\)`` pieces :func:`text_html` writes), with the text around each: what a reader would see untypeset."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", _TYPESET.sub(" ", rendered)))
    return [text[max(0, m.start() - 30) : m.end() + 30] for m in ASCII_MATH.finditer(text)]


def claim_anchor(claim_id: str) -> str:
    """The HTML id of a claim's row on the ledger page: ``hardt-ma/thm-2.1`` -> ``claim-hardt-ma-thm-2-1``."""
    return "claim-" + "".join(ch if ch.isalnum() else "-" for ch in claim_id.lower())


def _verdict_badge(verdict: str) -> str:
    """The verdict as one unbreakable word, coloured by the book's style sheet (a colour for each theme)."""
    kind = verdict if verdict in VERDICTS else "unknown"
    return f'<span class="claim-verdict" data-verdict="{kind}">{html.escape(verdict)}</span>'


def verdict_label_html(c: Claim) -> str:
    """The verdict with what it was checked against (:attr:`resnet_theory.record.Claim.label`): the verdict's
    badge inside its label, "confirmed, as the abstract states it", "the book's finding: refuted"."""
    label = c.label
    before, _, after = label.partition(c.verdict)
    return (
        f'<span class="claim-verdict-label" data-source="{html.escape(c.source)}">{html.escape(before)}'
        f"{_verdict_badge(c.verdict)}{html.escape(after)}</span>"
    )


def review_cite_html(detail: str | None) -> str:
    """The citations of the reviews a source detail names (:data:`resnet_theory.record.REVIEWS`), each linked
    to the References page, with its ``references.bib`` key; empty when it names none."""
    cites = [
        f'<cite class="claim-review-cite" data-bibkey="{html.escape(r.bibkey)}">'
        f'<a href="references.html" title="{html.escape(name)}, in the References">{html.escape(r.cite)}</a></cite>'
        for name, r in cited_reviews(detail)
    ]
    return f" ({'; '.join(cites)})" if cites else ""


def source_html(c: Claim) -> str:
    """Whose statement the claim tests, and from which text, the reviews it names cited."""
    return text_html(c.checked_against) + review_cite_html(c.source_detail)


def _claim_ref(c: Claim) -> str:
    """A link to a claim's row (its id), its printed location and its verdict."""
    return (
        f'<a href="#{claim_anchor(c.id)}"><code class="claim-id">{html.escape(c.id)}</code></a> '
        f"({html.escape(c.paper_name)}, {text_html(c.ref)}: {verdict_label_html(c)})"
    )


def _recheck_html(c: Claim, links: ClaimLinks | None) -> str:
    """The visible line under a claim: its evidence function's source, the command that re-checks it, its seeds."""
    if links is None:
        return ""
    parts = []
    if links.source_label:
        label = f"<code>{html.escape(links.source_label)}</code>"
        if links.source_url:
            label = f'<a class="claim-source" href="{html.escape(links.source_url)}">{label}</a>'
        parts.append(f"evidence: {label}")
    if links.command:
        parts.append(f're-check alone: <code class="claim-command">{html.escape(links.command)}</code>')
    if links.seeds is not None:
        s = links.seeds
        parts.append(
            f'<span class="claim-seeds" title="{html.escape(s.text())}">seeds: {s.agree} of {len(s.runs)} agree</span>'
        )
    return f'<div class="claim-recheck"><small>{" &middot; ".join(parts)}</small></div>' if parts else ""


#: The parts of a claim's evidence, in the order a reader follows them, with their names on the page (a claim with
#: several proof steps has each step and its repair in the proof's order: :func:`evidence_parts`).
EVIDENCE_PARTS = (
    ("printed", "statement as printed"),
    ("corrected", "corrected statement"),
    ("proof_step", "proof step as printed"),
    ("repair", "repair"),
)
_STEP_KEY = re.compile(r"^(proof_step|repair)(?:_(\d+))?$")


def _step_of(key: str) -> tuple[str, int] | None:
    """``("proof_step", 2)`` for ``"proof_step_2"``, ``("repair", 1)`` for ``"repair"``; None for another part."""
    m = _STEP_KEY.match(key)
    if not m or m[2] == "1":
        return None
    return m[1], int(m[2] or 1)


def evidence_parts(c: Claim) -> list[tuple[str, str]]:
    """The parts of ``c``'s evidence in a reader's order, ``(key, name)``: the statement, the corrected statement,
    then each proof step and its repair, in the proof's order (one step: "proof step as printed", "repair"; several:
    "proof step 1 as printed", "repair of step 1", ...)."""
    keys = [k for k, _ in EVIDENCE_PARTS[:2]]
    keys += [k for n in range(1, recorded_step_count(c.evidence) + 1) for k in step_keys(n)]
    return [(k, evidence_part_name(c, k)) for k in keys if isinstance(c.evidence.get(k), Mapping)]


def _clause(text: str | None) -> str:
    """``text`` without its closing punctuation, to be quoted inside a sentence that supplies its own."""
    return (text or "").strip().rstrip(".;:,").rstrip()


def _lines(summary: str) -> str:
    """A check's summary with each of its top-level ``; ``-separated parts on a line of its own (parts inside
    parentheses or brackets stay together), escaped and with its math typeset."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(summary):
        depth += ch in "([{"
        depth -= ch in ")]}" and depth > 0
        if depth == 0 and summary.startswith("; ", i):
            parts.append(summary[start:i])
            start = i + 2
    parts.append(summary[start:])
    return "<br>".join(text_html(part.strip()) for part in parts if part.strip())


def _outcome(part: Mapping, control: bool = False) -> str:
    holds = bool(part.get("holds"))
    if control:
        return "holds: a defect" if holds else "fails, as it must"
    word = "holds" if holds else "fails"
    return word if part.get("decisive", True) else f"{word} (within its noise: not decisive)"


def part_name(c: Claim, key: str, name: str, tag: str = "") -> str:
    """A part's name in the evidence table: "statement as printed" only for a statement the paper prints; else
    "statement, as the abstract states it", "statement (our reconstruction)", "the book's question" (and for a
    proof step, "proof step 2, as the abstract states it" where the claim has several; ``tag``, " (conditions)",
    follows the step's number)."""
    step = _step_of(key)
    if c.source == "paper" or not (key == "printed" or (step and step[0] == "proof_step")):
        return name
    number = f" {step[1]}" if step and recorded_step_count(c.evidence) > 1 else ""
    if c.source == "question":
        return "the book's question" if key == "printed" else f"step{number}{tag} of the book's argument"
    part = "statement" if key == "printed" else f"proof step{number}{tag}"
    return f"{part} ({c.whose})" if c.source == "reconstruction" else f"{part}, {c.whose}"


def evidence_part_name(c: Claim, key: str, *, with_step_key: bool = False) -> str:
    """The name of the part ``key`` of a claim's evidence ("printed", "proof_step", "repair_2", ...) as every page
    and the command line show it: :func:`part_name` for a part of :data:`EVIDENCE_PARTS` or a further proof step
    (numbered where the claim has several: "proof step 2 as printed", "repair of step 2"), else the key in words.
    ``with_step_key``: a step's check is named with the step's recorded key, "proof step 2 (conditions) as printed"
    (what ``claims verify`` prints), where the record has one."""
    names = dict(EVIDENCE_PARTS)
    step = _step_of(key)
    tag = _step_tag(c, step[1]) if with_step_key and step and step[0] == "proof_step" else ""
    if step and recorded_step_count(c.evidence) > 1:
        kind, n = step
        name = f"proof step {n}{tag} as printed" if kind == "proof_step" else f"repair of step {n}"
        return part_name(c, key, name, tag)
    if tag and key == "proof_step":
        return part_name(c, key, f"proof step{tag} as printed", tag)
    return part_name(c, key, names[key]) if key in names else key.replace("_", " ")


def _step_tag(c: Claim, number: int) -> str:
    """ " (KEY)" for a claim's proof step ``number`` whose record carries its key (:attr:`RecordedStep.tag`)."""
    steps = c.proof_steps
    return steps[number - 1].tag if 1 <= number <= len(steps) else ""


def evidence_table_html(c: Claim) -> str:
    """What was checked for a claim, as a small table: one row per part of its evidence (the statement as printed,
    the corrected statement, the proof step, its repair) and its control, each with its outcome and what was
    computed, the parts of a combined check on lines of their own."""
    rows = [
        (name, _outcome(c.evidence[key]), str(c.evidence[key].get("summary", ""))) for key, name in evidence_parts(c)
    ]
    if c.control is not None:
        rows.append(("control", _outcome(c.control, control=True), str(c.control.get("summary", ""))))
    body = "".join(
        f"<tr><th>{html.escape(name)}</th><td>{html.escape(outcome)}</td><td>{_lines(summary)}</td></tr>"
        for name, outcome, summary in rows
    )
    head = "<tr><th>part</th><th>outcome</th><th>what was computed</th></tr>"
    return f'<table class="claim-evidence-parts"><thead>{head}</thead><tbody>{body}</tbody></table>'


def _step_rows(s: RecordedStep) -> list[tuple[str, str]]:
    """A declared proof step's rows on a claim's card: the step ("Proof step that fails", or "Proof step 2 that
    fails" where the claim has several; "..., holds as printed" for a step whose check holds; its key after its
    number where the record has one, "Proof step 2 (conditions) that fails"), where it is printed when the
    declaration names its place ("Where step 2 is printed"), and its repair. The names are escaped by the card."""
    number = f" {s.number}" if s.of > 1 else ""
    named = f"Proof step{number}{s.tag}"
    name = f"{named} that fails" if not s.holds else f"{named}, holds as printed"
    repair = f"Repair of step{number}" if s.of > 1 else "Repair"
    where = [(f"Where step{number} is printed" if s.of > 1 else "Where the step is printed", text_html(s.where))]
    return [(name, text_html(s.step)), *(where if s.where else []), (repair, text_html(s.repair))]


def _claim_details(c: Claim, links: ClaimLinks | None = None, by_id: Mapping[str, Claim] | None = None) -> str:
    """What a reader opens to audit a claim: where the statement comes from, what was computed, the control, the
    results its printed proof uses and, across seeds, each build's verdict."""
    rows = [("Checked against", source_html(c))]
    if c.corrected_statement:
        rows.append(("What holds instead", text_html(c.corrected_statement)))
    for s in c.proof_steps:
        rows += _step_rows(s)
    if c.verdict == "not-checkable-here":
        rows.append(("Why not checked", text_html(c.reason or "")))
        if c.needs:
            rows.append(("Needs", text_html(c.needs)))
    else:
        if c.verdict == "undecided":
            rows.append(("Why undecided", text_html(c.reason or "")))
        rows.append(("What was checked", evidence_table_html(c)))
    if c.control is not None and c.control.get("input"):
        rows.append(("Control input", text_html(str(c.control["input"]))))
    if c.rests_on and by_id is not None:
        uses = [_claim_ref(by_id[r]) if r in by_id else html.escape(r) for r in c.rests_on]
        rows.append(("Its printed proof uses", "; ".join(uses)))
    if links is not None and links.seeds is not None:
        rows.append(("Seeds", html.escape(links.seeds.text())))
    items = "".join(f"<dt>{html.escape(k)}</dt><dd>{v}</dd>" for k, v in rows)
    return f'<details class="claim-details"><summary>evidence and control</summary><dl>{items}</dl></details>'


def _chapter_link(c: Claim, label: str) -> str:
    return f'<a href="{html.escape(c.chapter)}.html#{html.escape(c.section)}">{label}</a>'


def _claim_row(c: Claim, link: bool, extra: ClaimLinks | None, by_id: Mapping[str, Claim] | None) -> str:
    """One claim's row: on the ledger (``link``) it has an anchor, its id links to the chapter's section and it
    carries its paper, verdict and source for the filters; in a chapter's table its id links to its ledger row."""
    anchor = claim_anchor(c.id)
    ident = html.escape(c.id)
    if link:
        ident = _chapter_link(c, ident)
        mark = f' <a class="claim-permalink" href="#{anchor}" title="link to this claim">#</a>'
        attrs = (
            f' id="{anchor}" class="claim-row" data-paper="{html.escape(c.paper)}" '
            f'data-verdict="{html.escape(c.verdict)}" data-source="{html.escape(c.source)}"'
        )
    else:
        mark = f' <a class="claim-ledger-link" href="ledger.html#{anchor}" title="this claim in the ledger">ledger</a>'
        attrs = ""
    return (
        f"<tr{attrs}><td>{verdict_label_html(c)}</td>"
        f'<td><code class="claim-id">{ident}</code>{mark}<br>{text_html(c.statement)}'
        f"{_recheck_html(c, extra)}{_claim_details(c, extra, by_id)}</td>"
        f"<td>{html.escape(c.paper_name)}, {text_html(c.ref)}</td></tr>"
    )


def _filter_id(facet: str, value: str) -> str:
    return f"claims-filter-{facet}-" + "".join(ch if ch.isalnum() else "-" for ch in value.lower())


def _filters_html(claims: Sequence[Claim]) -> tuple[str, str, str]:
    """The filters of the ledger's table, with no script: one radio button per paper, verdict and source of the
    claims (and "all"), placed before the table so that the style sheet (inline, one rule per value) hides the
    rows that do not match; a CSS counter says how many rows are shown. Returns the inputs, their labels and
    the style sheet."""
    facets = (
        ("paper", "paper", {c.paper: c.paper_name for c in claims}),
        ("verdict", "verdict", {v: v for v in VERDICTS if any(c.verdict == v for c in claims)}),
        ("source", "checked against", {c.source: _SOURCE_NAMES.get(c.source, c.source) for c in claims}),
    )
    inputs, groups, rules = [], [], []
    for facet, title, values in facets:
        labels = []
        for value, name in [("all", "all"), *values.items()]:
            fid = _filter_id(facet, value)
            checked = " checked" if value == "all" else ""
            inputs.append(
                f'<input type="radio" class="claims-filter-input" name="claims-filter-{facet}" id="{fid}"{checked}>'
            )
            labels.append(f'<label for="{fid}">{html.escape(name)}</label>')
            rules.append(f"#{fid}:checked~.claims-filter label[for={fid}]{{{_CHOSEN}}}")
            rules.append(f"#{fid}:focus-visible~.claims-filter label[for={fid}]{{outline:2px solid currentColor}}")
            if value != "all":
                match = f'[data-{facet}="{html.escape(value)}"]'
                rules.append(f"#{fid}:checked~table tr.claim-row:not({match}){{display:none}}")
                rules.append(f"#{fid}:checked~table tbody:not(:has(tr.claim-row{match})){{display:none}}")
        title = f'<span class="claims-filter-title">{title}:</span>'
        groups.append(f'<div class="claims-filter-group">{title} {" ".join(labels)}</div>')
    filters = f'<div class="claims-filter" role="group" aria-label="Show only the claims of">{"".join(groups)}</div>'
    return "".join(inputs), filters, "<style>" + "\n".join(rules) + "</style>"


#: The source filter's buttons.
_SOURCE_NAMES = {
    "paper": "the printed paper",
    "abstract": "an abstract",
    "review": "a review",
    "reconstruction": "our reconstruction",
    "question": "the book's question",
}

_CHOSEN = "background:var(--pst-color-primary,#0a7d91);color:var(--pst-color-background,#fff);border-color:transparent"


def _paper_groups(claims: Sequence[Claim]) -> list[tuple[str, list[Claim]]]:
    """The claims grouped by paper, the papers in the order the book first checks one of their claims and each
    paper's claims in the order given (the book's)."""
    groups: dict[str, list[Claim]] = {}
    for c in claims:
        groups.setdefault(c.paper, []).append(c)
    return list(groups.items())


def claims_table_html(claims: Sequence[Claim], link: bool = True, links: Mapping[str, ClaimLinks] | None = None) -> str:
    """An HTML table of claims, one row each: verdict, the claim (its id, the statement, and the evidence and
    negative control one click away), and where it is printed.

    With ``link`` (the ledger page) the claims are grouped by paper (a heading row each; papers in the order the
    claims come, which is the book's), each row has an anchor (:func:`claim_anchor`) and its id links to the
    chapter section that checks it, and filters by paper, verdict and source (radio buttons and a style sheet,
    no script: they work offline and in any page) stand above the table. Without it (a chapter's own table) each
    id links to the claim's row in the ledger (``ledger.html#claim-...``). ``links`` adds, per claim id, its
    evidence function's source, its re-check command and its seeds (:class:`ClaimLinks`)."""
    by_id = {c.id: c for c in claims}
    if link:
        claims = [c for c in claims if not c.is_finding]  # the book's own questions: findings_html
    head = "<thead><tr><th>verdict</th><th>claim</th><th>stated in</th></tr></thead>"
    colgroup = '<colgroup><col class="col-verdict"><col class="col-claim"><col class="col-where"></colgroup>'
    if not link:
        rows = "".join(_claim_row(c, False, (links or {}).get(c.id), None) for c in claims)
        return f'<table class="claims-ledger">{colgroup}{head}<tbody>{rows}</tbody></table>'
    bodies = []
    for paper, group in _paper_groups(claims):
        name = html.escape(PAPERS.get(paper, (paper,))[0])
        count = f"{len(group)} claim{'s' if len(group) != 1 else ''}"
        heading = (
            f'<tr class="claims-paper-row"><th colspan="3" id="claims-paper-{html.escape(paper)}">{name} '
            f"<small>({count})</small></th></tr>"
        )
        rows = "".join(_claim_row(c, True, (links or {}).get(c.id), by_id) for c in group)
        bodies.append(f'<tbody class="claims-paper" data-paper="{html.escape(paper)}">{heading}{rows}</tbody>')
    inputs, filters, style = _filters_html(claims)
    shown = (
        f'<p class="claims-shown"><span class="claims-shown-count"></span> of {len(claims)} claims shown '
        "(choose a paper, a verdict or a source above to show only those).</p>"
    )
    table = f'<table class="claims-ledger">{colgroup}{head}{"".join(bodies)}</table>'
    return f'<div class="claims-browser">{style}{inputs}{filters}{table}{shown}</div>'


def _resting_html(c: Claim, resting: Sequence[tuple[str, str | None]], by_id: Mapping[str, Claim]) -> str:
    """The results whose printed proofs rest on ``c`` (directly, or through another), with what the book found."""
    if not resting:
        return '<p class="claims-resting">No printed proof of another result the book checks rests on it.</p>'
    items = [_claim_ref(by_id[rid]) + ("" if via is None else f", through {html.escape(via)}") for rid, via in resting]
    # one paragraph, not a nested list: the errata list stays one flat <ul>
    return f'<p class="claims-resting">Printed proofs that rest on it: {"; ".join(items)}.</p>'


def _quoted(text: str | None) -> str:
    """``text`` (its math typeset) in quotation marks, its closing punctuation left to the sentence around it."""
    return f"\u201c{text_html(_clause(text))}\u201d"


def erratum_sentence(c: Claim) -> str:
    """One sentence (HTML) for an erratum: where it is printed, the statement as printed, the counterexample the
    book computed (what the failing check found), and what holds instead (or the failing proof step and its
    repair); every quoted text has its math typeset and its own closing punctuation dropped, so that the
    sentence's punctuation is never doubled. Empty for a claim that is no erratum."""
    where = f"<strong>{html.escape(c.paper_name)}, {text_html(_clause(c.ref))}</strong>"
    failing = c.failing_steps
    found = c.evidence.get("printed", {}) if c.verdict == "corrected" else (failing[0].step_check if failing else {})
    shown = _shown(found)
    if c.is_finding:
        return ""
    if c.verdict == "corrected":
        return (
            f"{where}: {_whose_statement(c)} {_quoted(c.statement)} fails on a counterexample the book computed"
            f"{shown}; what holds instead is {_quoted(c.corrected_statement)}."
        )
    if c.verdict == "proof-gap" and len(failing) > 1:
        proof = "the printed proof" if c.source == "paper" else f"its proof, {c.whose},"
        steps = "; and ".join(
            f"step {s.number}{_printed_at(s)} {_quoted(s.step)}{_shown(s.step_check)}, repaired by {_quoted(s.repair)}"
            for s in failing
        )
        return (
            f"{where}: {'the statement' if c.source == 'paper' else _whose_statement(c)} {_quoted(c.statement)} "
            f"holds, but {len(failing)} steps of {html.escape(proof)} fail as written: {steps}; the book checks "
            "each repair in its step's place."
        )
    if c.verdict == "proof-gap":
        step = failing[0] if failing else None
        proof = "the printed proof's step" if c.source == "paper" else f"the step of its proof, {c.whose},"
        return (
            f"{where}: {'the statement' if c.source == 'paper' else _whose_statement(c)} {_quoted(c.statement)} "
            f"holds, but {html.escape(proof)}{_printed_at(step) if step else ''} "
            f"{_quoted(step.step if step else c.proof_step)} fails as written{shown}; the book checks the repair "
            f"{_quoted(step.repair if step else c.repair)} in its place."
        )
    return ""


def _printed_at(s: RecordedStep) -> str:
    """ " (KEY; printed at WHERE)" after a step's name in an erratum (:meth:`RecordedStep.annotation`), the key
    escaped and the place's math typeset, its closing punctuation dropped; else empty."""
    return s.annotation(html.escape, lambda where: text_html(_clause(where)))


def _shown(found: Mapping) -> str:
    """What a failing check found, in parentheses after the statement or step it refutes (empty when nothing)."""
    counterexample = _clause(str(found.get("summary", "")) if isinstance(found, Mapping) else "")
    return f' <span class="claims-counterexample">({text_html(counterexample)})</span>' if counterexample else ""


def _whose_statement(c: Claim) -> str:
    """The subject of an erratum: "the printed statement", "the statement as the abstract states it", "the
    statement as the PaperWhy review states it (cited)", "the book's reconstruction of the statement"."""
    if c.source == "paper":
        return "the printed statement"
    if c.source == "reconstruction":
        return "the book's reconstruction of the statement"
    return f"the statement {html.escape(c.whose)}{review_cite_html(c.source_detail)}"


def errata_html(claims: Sequence[Claim], link: bool = True) -> str:
    """The errata, one sentence each (:func:`erratum_sentence`: what is printed, the counterexample, what holds);
    the evidence as a small table and the results whose printed proofs rest on the erratum (``rests_on``,
    followed backwards, with their verdicts) are one click away (``<details>``), and the claim's id links to its
    row in the table below and its section."""
    items, others = [], []
    resting = dependents(claims)
    by_id = {c.id: c for c in claims}
    for c in claims:
        if c.verdict not in ("corrected", "proof-gap") or c.is_finding:
            continue
        label = _chapter_link(c, html.escape(c.id)) if link else html.escape(c.id)
        row = f' &middot; <a href="#{claim_anchor(c.id)}">its row below</a>' if link else ""
        rests = len(resting.get(c.id, []))
        (items if c.source == "paper" else others).append(
            f'<li><p class="claims-erratum">{erratum_sentence(c)}</p><small>(<code class="claim-id">{label}</code>, '
            f"{verdict_label_html(c)}; {rests} result{'s' if rests != 1 else ''} rest on it{row})</small>"
            f'<details class="claim-details"><summary>the computation, and what rests on it</summary>'
            f"{evidence_table_html(c)}{_resting_html(c, resting.get(c.id, []), by_id)}</details></li>"
        )
    out = (
        f'<ul class="claims-errata">{"".join(items)}</ul>'
        if items
        else '<p class="claims-errata">No erratum of a printed paper: every statement and proof step the book '
        "checks against a paper's printed text holds as printed.</p>"
    )
    if others:
        out += (
            '<p class="claims-errata-others">Corrections of statements the book read from an abstract, a review or '
            "its own reconstruction, not from the paper's printed text: they are not errata of the paper, and are "
            f'counted under their source.</p><ul class="claims-errata claims-errata-others">'
            f"{''.join(others)}</ul>"
        )
    return out


def counts_table_html(claims: Sequence[Claim]) -> str:
    """The verdicts counted per paper and per source (:func:`count_rows`): a paper's row counts only what it
    prints; its abstract, each review (cited) and the book's reconstructions have rows of their own; the book's
    own questions are not counted (they are findings, listed in their own part)."""
    head = (
        "<tr><th>paper</th><th>checked against</th>"
        + "".join(f"<th>{html.escape(v)}</th>" for v in VERDICTS)
        + "<th>all</th></tr>"
    )
    rows, total = [], Counter()
    for paper, source, detail, counts in count_rows(claims):
        review = review_of(detail) if source == "review" else None
        against = _SOURCE_NAMES[source] if source != "review" else (review.short if review else f"a review: {detail}")
        against = html.escape(against) + (review_cite_html(detail) if source == "review" else "")
        cells = "".join(f"<td>{int(counts[v])}</td>" for v in VERDICTS)
        rows.append(
            f'<tr data-paper="{html.escape(paper)}" data-source="{html.escape(source)}">'
            f"<td>{html.escape(PAPERS.get(paper, (paper,))[0])}</td><td>{against}</td>{cells}"
            f"<td>{sum(counts.values())}</td></tr>"
        )
        total.update(counts)
    cells = "".join(f"<td>{int(total.get(v, 0))}</td>" for v in VERDICTS)
    rows.append(f'<tr class="claims-counts-total"><td>total</td><td>every source</td>{cells}'
                f"<td>{sum(total.values())}</td></tr>")  # fmt: skip
    findings = sum(c.is_finding for c in claims)
    note = (
        f'<p class="claims-counts-findings">Not counted: {findings} finding{"s" if findings != 1 else ""} of the '
        "book's own questions, which are no verdict on a paper (listed under the book's findings).</p>"
        if findings
        else ""
    )
    return f'<table class="claims-counts">{head}{"".join(rows)}</table>{note}'


def findings_html(claims: Sequence[Claim], links: Mapping[str, ClaimLinks] | None = None) -> str:
    """The book's own questions (source ``question``): what the book found on a question the paper does not
    ask, one row each, with its evidence and control one click away. Never a verdict on the paper: they are in
    no paper's counts or errata and not in the table of the papers' claims."""
    found = [c for c in claims if c.is_finding]
    if not found:
        return (
            '<p class="claims-findings">No finding of the book\'s own: every claim above tests a statement of a '
            "paper (as printed, as its abstract or a review states it, or as the book reconstructs it).</p>"
        )
    by_id = {c.id: c for c in claims}
    head = "<thead><tr><th>finding</th><th>the book's question</th><th>on the setting of</th></tr></thead>"
    colgroup = '<colgroup><col class="col-verdict"><col class="col-claim"><col class="col-where"></colgroup>'
    rows = "".join(_claim_row(c, True, (links or {}).get(c.id), by_id) for c in found)
    return f'<table class="claims-ledger claims-findings">{colgroup}{head}<tbody>{rows}</tbody></table>'


def skipped_html(skipped: Sequence[dict]) -> str:
    """The printed statements the chapters discuss but do not check, with why (one line each)."""
    if not skipped:
        return "<p>Every printed statement the chapters discuss is checked above.</p>"
    items = [
        f"<li><strong>{html.escape(PAPERS.get(s['paper'], (s['paper'],))[0])}, {text_html(s['ref'])}</strong>: "
        f"{text_html(s['statement'])} <em>Not checked:</em> {text_html(s['why'])} "
        f'(<a href="{html.escape(s["chapter"])}.html">{html.escape(s["chapter"])}</a>)</li>'
        for s in skipped
    ]
    return f'<ul class="claims-skipped">{"".join(items)}</ul>'


def ledger_defects(claims: Sequence[Claim], skipped: Sequence[dict] = ()) -> list[str]:
    """Why a set of claims cannot be published as the book's ledger, one line each: every record's defects
    (:func:`resnet_theory.record.claim_defects`), ``rests_on`` ids that are no claim, or cycles
    (:func:`resnet_theory.record.rests_on_defects`), and skipped statements with a macro that acts on the page."""
    out = claim_defects(claims) + rests_on_defects(claims)
    for s in skipped:
        for key in ("ref", "statement", "why"):
            bad = unsafe_macros(s.get(key))
            if bad:
                out.append(f"skipped {s.get('ref')!r}: {key} uses {', '.join(sorted(set(bad)))} (acts on the page)")
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", str(s.get("chapter", ""))):
            out.append(f"skipped {s.get('ref')!r}: chapter {s.get('chapter')!r} is not a plain name")
    return out


def refuse_defects(claims: Sequence[Claim], skipped: Sequence[dict] = ()) -> None:
    """Raise :class:`LedgerDefect` listing :func:`ledger_defects`, if any."""
    defects = ledger_defects(claims, skipped)
    if defects:
        raise LedgerDefect(
            "the ledger cannot be published (fix the check, its control or the claims file):\n  " + "\n  ".join(defects)
        )


_NO_CLAIMS = (
    "<p><strong>No claims were found.</strong> Execute the book with "
    "<code>make book</code> so that each chapter records its claims.</p>"
)


def ledger_section(
    part: str, claims: Sequence[Claim], skipped: Sequence[dict] = (), links: Mapping[str, ClaimLinks] | None = None
):
    """One part of the ledger page, under its own heading in the page (so that it is in the page contents):
    ``"errata"``, ``"counts"``, ``"claims"``, ``"findings"`` or ``"skipped"``. Refuses claims with a defect
    (:func:`refuse_defects`)."""
    from IPython.display import HTML

    render = {
        "errata": lambda: errata_html(claims),
        "counts": lambda: counts_table_html(claims),
        "claims": lambda: claims_table_html(claims, link=True, links=links),
        "findings": lambda: findings_html(claims, links),
        "skipped": lambda: skipped_html(skipped),
    }
    if part not in render:
        raise ValueError(f"unknown ledger part {part!r}; known: {sorted(render)}")
    refuse_defects(claims, skipped)
    if not claims and part != "skipped":
        return HTML(_NO_CLAIMS)
    return HTML(render[part]())


def render_ledger(claims: Sequence[Claim], skipped: Sequence[dict] = (), links: Mapping[str, ClaimLinks] | None = None):
    """The ledger page's content: the errata, counts per verdict and paper, then every claim, linked.

    Raises :class:`LedgerDefect` when a recorded claim has a defect (:func:`ledger_defects`: a claims file that no
    chapter could have published, e.g. edited by hand or left by an older check, or a ``rests_on`` id that is no
    claim): the ledger page then fails, and with it the build.
    """
    from IPython.display import HTML

    refuse_defects(claims, skipped)
    if not claims:
        return HTML(_NO_CLAIMS)
    return HTML(
        "<h3>Errata</h3>"
        + errata_html(claims)
        + "<h3>Counts</h3>"
        + counts_table_html(claims)
        + "<h3>Every claim</h3>"
        + claims_table_html(claims, link=True, links=links)
        + "<h3>The book's findings</h3>"
        + findings_html(claims, links)
        + "<h3>Not checked, and why</h3>"
        + skipped_html(skipped)
    )
