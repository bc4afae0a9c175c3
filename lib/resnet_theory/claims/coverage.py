"""Hardt & Ma, walked paragraph by paragraph: what the book does with every printed statement (issue 31, item 5).

The reference is the printed ICLR text named in ``../shared/papers/SOURCES.md`` (Sections 1-5, Appendices A-C, a
text conversion). Each :class:`Row` is one checkable printed statement, displayed equation with quantitative
content, quantitative proof step or number (paraphrased, in TeX), at its printed location, with exactly one of:

- ``claim``: the id of the declared claim that checks it;
- ``line`` alone: the ``ref`` of the skip line (``ClaimSet.skip``) a chapter's claims module declares for it; the
  reason is read from that declaration (:func:`skip_reasons`), so it lives once, beside the claims;
- ``skip``: why it is not checked, with ``line`` :data:`NO_STATEMENT` for a paragraph with nothing to check (a
  definition, an announcement; listed so that every paragraph of the walk is accounted for), or no ``line``:
  **new**, a skip line to add;
- ``finding``: **new**, a statement neither checked nor skipped that should become a claim or a proof-step record,
  and what to check.

Locations read ``Section 2, paragraph 6, Theorem 2.1`` or ``Appendix B, paragraphs 11-12, ...`` or
``Section 4.1, Table 2``: paragraphs are counted within each heading of the text conversion (a displayed theorem,
lemma or claim is a paragraph of its own; a displayed equation belongs to the paragraph it ends; the run-in
headings of Section 1.1 belong to the paragraph they open). :data:`ROWS` is in the paper's order.

:func:`validate` compares the table with the claims registry (ids and skip lines not declared yet are reported as
lists, never raised at import: the experiments chapter's claims still live in its notebook);
:func:`ledger_rows` gives the rows the ledger page shows. ``python -m resnet_theory.claims.coverage`` prints the
counts per heading, the new rows and what :func:`validate` finds.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

#: The headings of the printed text, in order: (key, title).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("1", "Introduction"),
    ("1.1", "Our contributions"),
    ("1.2", "Related work"),
    ("2", "Optimization landscape of linear residual networks"),
    ("3", "Representational power of the residual networks"),
    ("4", "Power of all-convolutional residual networks"),
    ("4.1", "CIFAR10 and CIFAR100"),
    ("4.2", "ImageNet"),
    ("5", "Conclusion"),
    ("A", "Missing proofs in Section 2"),
    ("A.1", "Proof of Theorem 2.1"),
    ("A.2", "Proof of Lemma 2.4"),
    ("B", "Missing proofs in Section 3"),
    ("C", "Toolbox"),
)
_RANK = {key: i for i, (key, _) in enumerate(SECTIONS)}

#: Where the two tables stand among the paragraphs of their section: (section, position).
TABLES: dict[str, tuple[str, float]] = {"Table 1": ("4.1", 3.5), "Table 2": ("4.1", 4.5)}

#: ``Row.line`` of a paragraph with nothing to check (no skip line needed).
NO_STATEMENT = "nothing to check"

PAPER = "hardt-ma"

_LOCATION = re.compile(
    r"^(?P<kind>Section|Appendix) (?P<key>[1-5](?:\.[12])?|[A-C](?:\.[12])?), "
    r"(?:paragraphs? (?P<first>\d+)(?:-(?P<last>\d+))?|(?P<table>Table \d+))(?:, .+)?$"
)
_CLAIM_ID = re.compile(r"^hardt-ma/[a-z0-9][a-z0-9.-]*$")


def parse_location(location: str) -> tuple[str, float]:
    """``(heading key, position)`` of a printed location; ``ValueError`` (one line) when it is malformed."""
    m = _LOCATION.match(location) if isinstance(location, str) else None
    if not m:
        raise ValueError(
            f"location {location!r}: expected 'Section K, paragraph N[, detail]' or 'Appendix K, ...' "
            "or 'Section 4.1, Table N'"
        )
    key = m["key"]
    if (m["kind"] == "Section") != key[0].isdigit() or key not in _RANK:
        raise ValueError(f"location {location!r}: no heading {m['kind']} {key} in the printed text")
    if m["table"]:
        if TABLES.get(m["table"], ("", 0))[0] != key:
            raise ValueError(f"location {location!r}: {m['table']} is not in {m['kind']} {key}")
        return key, TABLES[m["table"]][1]
    first, last = int(m["first"]), int(m["last"] or m["first"])
    if first < 1 or last < first:
        raise ValueError(f"location {location!r}: paragraph numbers must be 1 or more, in increasing order")
    return key, float(first)


def order_key(location: str) -> tuple[int, float]:
    """The position of a location in the printed text (heading, then paragraph or table)."""
    key, position = parse_location(location)
    return _RANK[key], position


@dataclass(frozen=True)
class Row:
    """One printed statement and what the book does with it: exactly one of ``claim``, ``skip``, ``finding``, or a
    declared skip ``line`` alone (its reason is the declaration's)."""

    location: str
    what: str
    claim: str = ""
    skip: str = ""
    finding: str = ""
    line: str = ""

    def __post_init__(self):
        parse_location(self.location)
        for name in ("what", "claim", "skip", "finding", "line"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{self.location}: {name} must be a string")
        if len(self.what.split()) < 3:
            raise ValueError(f"{self.location}: 'what' must paraphrase the statement, got {self.what!r}")
        given = [name for name in ("claim", "skip", "finding") if getattr(self, name).strip()]
        if self.line and not given:  # under a declared skip line: its reason is the declaration's
            given = ["line"]
        if len(given) != 1:
            raise ValueError(f"{self.location}: exactly one of claim, skip, finding must be given, got {given}")
        if self.claim and not _CLAIM_ID.match(self.claim):
            raise ValueError(f"{self.location}: claim {self.claim!r} is not a Hardt & Ma claim id")
        if self.line and (self.claim or self.finding):
            raise ValueError(f"{self.location}: 'line' names the skip line of a skipped statement; this row has none")
        if self.line == NO_STATEMENT and not self.skip:
            raise ValueError(f"{self.location}: a row with nothing to check must say why in 'skip'")
        if self.skip and self.line not in ("", NO_STATEMENT):
            raise ValueError(
                f"{self.location}: a row under skip line {self.line!r} takes its reason from it; drop 'skip'"
            )
        for name in ("skip", "finding"):
            text = getattr(self, name)
            if text and len(text.split()) < 4:
                raise ValueError(f"{self.location}: {name} must say why in a sentence, got {text!r}")

    @property
    def section(self) -> str:
        return parse_location(self.location)[0]

    @property
    def is_new(self) -> bool:
        """Neither checked nor under a skip line: a claim to write (``finding``) or a skip line to add."""
        return bool(self.finding) or (bool(self.skip) and not self.line)

    def status(self, reasons: dict[str, str] | None = None) -> str:
        """What the ledger page says the book does with the statement (``reasons``: the declared skip lines'
        reasons by ref, :func:`skip_reasons` by default)."""
        if self.claim:
            return f"checked by {self.claim}"
        if self.finding:
            return f"not yet checked: {self.finding}"
        if self.line == NO_STATEMENT:
            return f"nothing to check: {self.skip}"
        if not self.line:
            return f"not checked (no skip line yet): {self.skip}"
        reasons = skip_reasons() if reasons is None else reasons
        if self.line not in reasons:
            return f"not checked: under the skip line {self.line!r}, which no claims module declares"
        return f"not checked: {reasons[self.line]}"


def _c(location: str, what: str, claim: str) -> Row:
    return Row(location, what, claim=claim)


def _s(location: str, what: str, why: str) -> Row:
    return Row(location, what, skip=why)


def _l(location: str, what: str, line: str) -> Row:
    return Row(location, what, line=line)


def _n(location: str, what: str, why: str) -> Row:
    return Row(location, what, skip=why, line=NO_STATEMENT)


# The skip lines the rows fall under, by their printed ref (ClaimSet.skip / ledger.skip).
_L21 = "Section 2, after eq. (2.1)"
_LT21 = "Section 2, below Theorem 2.1"
_L23 = "Section 2, after eq. (2.3)"
_LCOUNT = "Section 3, paragraph after Theorem 3.2 (parameter count)"
_L413 = "Section 4.1, paragraph 3"
_L414 = "Section 4.1, paragraph 4 (after Table 1)"
_LALLCNN = "Section 4.1, Table 2 (row 'All-CNN')"
_LRESNET = "Section 4.1, Table 2 (row 'ResNet')"
_LDENSE = "Section 4.1, Table 2 (row 'DenseNet')"
_L421 = "Section 4.2, paragraph 1"
_L4213 = "Section 4.2, paragraphs 1-3"
_L423 = "Section 4.2, paragraph 3"

_IMAGENET = "needs ImageNet (ILSVRC 2012) and a multi-GPU cluster; this build has neither"

# fmt: off
_SECTION_1: tuple[Row, ...] = (
    _n("Section 1, paragraph 1",
       r"A plain convolutional layer with all weights 0 is the zero map; a residual layer $x + h(x)$ with all "
       r"weights 0 is the identity.",
       "definitions of the two parameterisations, true by construction"),
    _l("Section 1, paragraph 1",
       "With weights initialised symmetrically around 0, a standard layer trained by stochastic gradient methods "
       "cannot easily converge to the identity (batch normalisation partly addresses this).",
       "Section 1, paragraph 1 (symmetric initialisation)"),
    _l("Section 1, paragraph 1",
       "The residual reparameterisation allows much deeper networks, largely avoiding vanishing or exploding "
       "gradients; residual networks have since led CIFAR-10 and ImageNet.",
       "Section 1, paragraph 1 (deeper residual networks)"),
    _n("Section 1.1, paragraph 1",
       "The first result shows that identity parameterisations ease optimisation, the second representation.",
       "an overview of Sections 2 and 3, whose statements are the rows below"),
    _c("Section 1.1, paragraph 2, eq. (1.1)",
       r"Although $A_\ell \cdots A_1$ is a linear map, the objective over the factors, and its residual form "
       r"(1.1), is non-convex.",
       "hardt-ma/sec1-nonconvex"),
    _c("Section 1.1, paragraph 3",
       r"Any symmetric positive semidefinite $O$ is $O_\ell \cdots O_1$ with $O_i = O^{1/\ell}$, very close to "
       r"$I$ for large $\ell$, so $A_i = O_i - I$ has small spectral norm.",
       "hardt-ma/sec1-psd-root"),
    _c("Section 1.1, paragraph 3, eq. (1.2)",
       r"For every linear $R$ and large enough $\ell$, (1.1) has a global optimum with "
       r"$\max_i \|A_i\| \le O(1/\ell)$, the constant depending on the conditioning of $R$.",
       "hardt-ma/thm-2.1"),
    _l("Section 1.1, paragraph 4",
       "As depth grows, smaller-norm solutions exist, so regularisation may offset the added parameters.",
       "Section 1.1, paragraph 4 (regularisation may offset depth)"),
    _c("Section 1.1, paragraph 4",
       r"The gradient of (1.1) vanishes only where $f(A) = 0$, provided $\max_i \|A_i\| \le O(1/\ell)$ "
       r"(Theorem 2.2).",
       "hardt-ma/thm-2.2"),
    _c("Section 1.1, paragraph 4",
       "Hence linear residual networks have no critical points other than the global optimum.",
       "hardt-ma/sec1-no-bad-critical"),
    _c("Section 1.1, paragraph 4",
       r"In the standard parameterisation $A_\ell \cdots A_1$, setting every $A_i = 0$ always gives a bad "
       r"critical point.",
       "hardt-ma/sec1-plain-zero-critical"),
    _c("Section 1.1, paragraph 5",
       r"A ReLU residual network expresses any function of $n$ samples with sufficiently more than $n$ "
       r"parameters; with $r$ classes the construction needs $O(n \log n + r^2)$ (Theorem 3.2).",
       "hardt-ma/thm-3.2"),
    _l("Section 1.1, paragraph 5",
       r"On CIFAR-10 ($n = 50{,}000$) successful residual networks often have more than $10^6$ parameters.",
       "Section 1.1, paragraph 5 (parameters of CIFAR-10 networks)"),
    _l("Section 1.1, paragraph 5",
       r"Each residual layer of the construction is $x + V\,\mathrm{ReLU}(Ux)$, simpler than standard residual "
       r"layers with two ReLUs and two batch normalisations.",
       "Section 1.1, paragraph 5 (the simpler residual layer)"),
    _l("Section 1.1, paragraph 6",
       "The Section 4 network: convolutional residual layers with one ReLU each, no batch norm, dropout or max "
       "pooling, a fixed random last layer, near-zero Gaussian initialisation, weight decay only.",
       "Section 1.1, paragraph 6 (the Section 4 network)"),
    _c("Section 1.1, paragraph 6",
       "The network reaches 6.38% top-1 error on CIFAR-10 with standard augmentation.",
       "hardt-ma/sec4-cifar10-error"),
    _l("Section 1.1, paragraph 6",
       "This is competitive with He et al.'s best residual network, 6.43%.",
       _LRESNET),
    _l("Section 1.1, paragraph 6",
       "It improves on the best previous all-convolutional network (Springenberg et al., 7.25%, with dropout and "
       "ZCA preprocessing), on CIFAR-10, CIFAR-100 and ImageNet.",
       _LALLCNN),
    _n("Section 1.2, paragraph 1",
       "Dense nets concatenate features and can also encode an identity embedding; whether the results apply to "
       "them is left open.",
       "a pointer to related work and an open question"),
    _l("Section 1.2, paragraphs 2-3",
       "Related results: few bad local minima in experiments (Goodfellow et al., Dauphin et al.), a spin-glass "
       "analogy (Choromanska et al.), no bad local minima for two layers (Soudry & Carmon) and for linear "
       "networks (Baldi & Hornik, Kawaguchi).",
       "Section 1.2, paragraphs 2-3 (related landscape results)"),
    _c("Section 1.2, paragraph 3",
       "In contrast, deep linear residual networks have no bad critical point, a stronger property.",
       "hardt-ma/sec1-no-bad-critical"),
    _l("Section 1.2, paragraph 3",
       "The proof is notably simpler, and the results indicate that deeper networks may have better landscapes.",
       "Section 1.2, paragraph 3 (a simpler proof, deeper landscapes)"),
)

_SECTION_2: tuple[Row, ...] = (
    _n("Section 2, paragraph 1",
       r"Setting: $y = Rx + \xi$, $\xi \sim N(0, I_d)$, inputs $x \sim \mathcal D$, "
       r"$\Sigma = \mathbb E[xx^\top]$.",
       "the setting (claim-2.3's control breaks the independence of noise and input its proof uses)"),
    _n("Section 2, paragraph 2, eq. (2.1)",
       r"The model $h_0 = x$, $h_j = h_{j-1} + A_j h_{j-1}$, $\hat y = h_\ell$.",
       "the definition of the model, used by every claim of Section 2"),
    _l("Section 2, paragraph 3",
       r"So $\hat y = (I + A_\ell)\cdots(I + A_1)x$, and the model can express any linear map $R$.",
       _L21),
    _l("Section 2, paragraph 3, eq. (2.2)",
       r"The loss $f(A, (x, y)) = \|\hat y - y\|^2$, called the maximum likelihood estimator.",
       "Section 2, eq. (2.2) (the maximum likelihood estimator)"),
    _n("Section 2, paragraphs 4-5",
       r"The population risk $f(A) = \mathbb E f(A, (x, y))$, $|||A||| = \max_i \|A_i\|$ and "
       r"$\gamma = \max\{|\log\sigma_{\max}(R)|, |\log\sigma_{\min}(R)|\}$.",
       "definitions, used by every claim of Section 2"),
    _c("Section 2, paragraph 5",
       r"The first theorem: an optimal solution whose $|||\cdot|||$-norm is inversely proportional to $\ell$.",
       "hardt-ma/thm-2.1"),
    _c("Section 2, paragraph 6, Theorem 2.1",
       r"If $\ell \ge 3\gamma$, the population risk has a global optimum with "
       r"$|||A^*||| \le 2(\sqrt\pi + \sqrt{3\gamma})^2/\ell$.",
       "hardt-ma/thm-2.1"),
    _c("Section 2, paragraph 6, Theorem 2.1",
       r"Theorem 2.1 as the PaperWhy review states it, constant $(4\pi + 3\gamma)/\ell$ (not the printed one).",
       "hardt-ma/thm-2.1-early"),
    _l("Section 2, paragraph 7",
       r"$\gamma$ is a constant after rescaling: $\sigma_{\min}(R) = 1/\sqrt\kappa$, $\sigma_{\max}(R) = "
       r"\sqrt\kappa$ give $\gamma = \log\sqrt\kappa$, small for fairly large $\kappa$; constants not optimised.",
       _LT21),
    _c("Section 2, paragraph 8",
       r"On $\mathcal B_\tau = \{A : |||A||| \le \tau\}$, $\tau$ of order $1/\ell$: no bad critical point for any "
       r"$\tau < 1$.",
       "hardt-ma/thm-2.2"),
    _c("Section 2, paragraph 9, Theorem 2.2",
       r"For any $\tau < 1$, every critical point of $f$ in $\mathcal B_\tau$ is a global minimum.",
       "hardt-ma/thm-2.2"),
    _c("Section 2, paragraph 10",
       "It suffices for the optimiser to reach a critical point, since all critical points are global minima.",
       "hardt-ma/sec1-no-bad-critical"),
    _c("Section 2, paragraph 11, eq. (2.3)",
       r"On $\mathcal B_\tau$, $\|\nabla f(A)\|_F^2 \ge 4\ell(1-\tau)^{\ell-1}\sigma_{\min}(\Sigma)^2"
       r"(f(A) - C_{\mathrm{opt}})$.",
       "hardt-ma/eq-2.3"),
    _l("Section 2, paragraph 12",
       r"So gradient descent converges to a global minimum (Karimi et al.) if its iterates stay in "
       r"$\mathcal B_\tau$, which Theorem 2.2 does not guarantee.",
       _L23),
    _c("Section 2, paragraph 14, Claim 2.3, eq. (2.4)",
       r"$f(A) = \|((I + A_\ell)\cdots(I + A_1) - R)\Sigma^{1/2}\|_F^2 + C$ with $C$ independent of $A$.",
       "hardt-ma/claim-2.3"),
    _c("Section 2, paragraph 15, proof of Claim 2.3",
       r"The cross term vanishes, $\mathbb E\langle Ex, \xi\rangle = \mathbb E\langle Ex, \mathbb E[\xi|x]\rangle "
       r"= 0$, and $\operatorname{tr}(E\Sigma E^\top) = \|E\Sigma^{1/2}\|_F^2$.",
       "hardt-ma/claim-2.3"),
    _c("Section 2, paragraph 15, proof of Claim 2.3",
       r"The proof names the constant $C = \mathbb E[xx^\top]$.",
       "hardt-ma/claim-2.3"),
    _c("Section 2, paragraph 17, Lemma 2.4, eq. (2.5)",
       r"$\partial f/\partial A_i = 2(I + A_\ell^\top)\cdots(I + A_{i+1}^\top)E\Sigma(I + A_{i-1}^\top)\cdots"
       r"(I + A_1^\top)$, $E = (I + A_\ell)\cdots(I + A_1) - R$.",
       "hardt-ma/lemma-2.4"),
    _c("Section 2, paragraph 18",
       r"Sketch: no small $A_j$ cancels $I$, so the gradient (2.5) is a product of non-zero matrices and $E$, and "
       r"vanishes only if $E$ does.",
       "hardt-ma/thm-2.2"),
    _c("Section 2, paragraph 19, proof of Theorem 2.2",
       r"Per layer, $\|\partial f/\partial A_i\|_F \ge 2\prod_{j \ne i}\sigma_{\min}(I + A_j^\top)\,"
       r"\sigma_{\min}(\Sigma)\|E\|_F \ge 2(1-\tau)^{\ell-1}\sigma_{\min}(\Sigma)\|E\|_F$ (Claim C.2 and "
       r"$\sigma_{\min}(I + A) \ge 1 - \|A\|$).",
       "hardt-ma/thm-2.2"),
    _c("Section 2, paragraph 19, proof of Theorem 2.2",
       r"Summing, (i) $\|\nabla f\|_F^2 \ge 4\ell(1-\tau)^{\ell-1}\sigma_{\min}(\Sigma)^2\|E\|_F^2$ and (ii) "
       r"$\|E\|_F^2 \ge f(A) - C \ge f(A) - C_{\mathrm{opt}}$, hence (2.3).",
       "hardt-ma/thm-2.2"),
    _c("Section 2, paragraph 19, proof of Theorem 2.2",
       r"At a critical point (2.3) forces $f(A) = C_{\mathrm{opt}}$.",
       "hardt-ma/thm-2.2"),
)

_SECTION_3: tuple[Row, ...] = (
    _n("Section 3, paragraph 1, eq. (3.1)",
       r"The block $\mathcal T_{U,V,s}(h) = V\,\mathrm{ReLU}(Uh + s)$, $U, V \in \mathbb R^{k \times k}$, "
       r"$s \in \mathbb R^k$.",
       "a definition (the expressivity chapter builds it as a torch module)"),
    _l("Section 3, paragraph 2",
       "Compared with He et al.'s full pre-activation block, two batch normalisations and one ReLU are removed.",
       "Section 3, paragraph 2 (two batch normalisations removed)"),
    _c("Section 3, paragraph 3",
       r"Labels are the $r$ basis vectors $e_j$; without loss of generality $\|x^{(i)}\| = 1$.",
       "hardt-ma/sec3-unit-norm"),
    _c("Section 3, paragraph 4, Assumption 3.1",
       r"$\|x^{(i)} - x^{(j)}\|^2 \ge \rho$ for all $i < j$, some constant $\rho > 0$.",
       "hardt-ma/thm-3.2"),
    _l("Section 3, paragraph 5",
       r"Images can always be perturbed imperceptibly so as to satisfy Assumption 3.1 for a small constant $\rho$.",
       "Section 3, paragraph 5 (images perturbed imperceptibly)"),
    _c("Section 3, paragraphs 6-7, Theorem 3.2",
       r"Under Assumption 3.1 a residual network with $O(n\log n + r^2)$ parameters maps every $x^{(i)}$ to "
       r"$y^{(i)}$.",
       "hardt-ma/thm-3.2"),
    _l("Section 3, paragraph 8",
       r"In practice $n > r^2$, as for ImageNet with $n > 10^6$ and $r = 1000$.",
       "Section 3, paragraph 8 ($n > r^2$ in practice)"),
    _c("Section 3, paragraph 9",
       r"$h_0 = A_0x$, blocks $h_j = h_{j-1} + \mathcal T_{A_j,B_j,b_j}(h_{j-1})$, output "
       r"$\hat y = h_\ell + \mathcal T_{A_{\ell+1},B_{\ell+1},s_{\ell+1}}(h_\ell)$ with weights "
       r"$k \times r$ and $r \times r$ 'so that the dimension is compatible'.",
       "hardt-ma/output-block"),
    _l("Section 3, paragraph 9",
       r"With $r, d < n$, $k = O(\log n)$ and $\ell = \lceil n/k\rceil$ the network has "
       r"$O(kd + \ell k^2 + rk + r^2) = O(n\log n + r^2)$ parameters.",
       _LCOUNT),
    _c("Section 3, paragraph 9",
       r"Exactly: $dk$ parameters in the first layer, $2k^2$ in each block, $kr + r^2$ in the last.",
       "hardt-ma/sec3-parameter-count"),
    _c("Section 3, paragraph 10",
       r"A random $A_0$ keeps Assumption 3.1 for the $h_0^{(i)}$ with good probability (Johnson-Lindenstrauss), "
       r"'with slightly different scaling and larger constant $\rho$'.",
       "hardt-ma/thm-3.2"),
    _c("Section 3, paragraph 11",
       r"If $k > 4\log r$, random unit vectors $q_1, \dots, q_r \in \mathbb R^k$ are pairwise uncorrelated, "
       r"inner products below 0.5.",
       "hardt-ma/surrogates"),
    _n("Section 3, paragraph 11, eq. (3.2)",
       r"Surrogate labels $v^{(i)} = q_j$ when $y^{(i)} = e_j$ ($k$ possibly much smaller than $r$).",
       "the definition of the surrogate labels (the surrogates row checks their width)"),
    _c("Section 3, paragraph 12, eq. (3.3)",
       r"The first $\ell$ blocks map every $h_0^{(i)}$ to $h_\ell^{(i)} = v^{(i)}$.",
       "hardt-ma/lemma-b.2"),
    _c("Section 3, paragraph 13, eq. (3.4)",
       r"The last layer maps each surrogate to its label, $q_j + \mathcal T_{A_{\ell+1},B_{\ell+1},b_{\ell+1}}"
       r"(q_j) = e_j$.",
       "hardt-ma/output-block"),
    _c("Section 3, paragraph 14",
       r"Together, $\hat y^{(i)} = y^{(i)}$ for every $i$.",
       "hardt-ma/thm-3.2"),
    _c("Section 3, paragraph 16, Lemma 3.3",
       r"Informal Lemma B.2: for almost arbitrary $h_0^{(i)}$ and $v^{(i)} \in \{q_j\}$ there are weights with "
       r"$h_\ell^{(i)} = v^{(i)}$.",
       "hardt-ma/lemma-b.2"),
    _c("Section 3, paragraph 17, eqs. (3.5)-(3.6)",
       r"One block $h \mapsto h + \mathcal T_{U,V,s}(h)$ moves any $k$ of (almost) arbitrary $n$ vectors to "
       r"chosen vectors and keeps the other $n - k$ (formalised as Lemma B.1).",
       "hardt-ma/lemma-b.1"),
    _c("Section 3, paragraph 17",
       r"Applied $\ell = \lceil n/k\rceil$ times, such blocks move every $h_0^{(i)}$ to $v^{(i)}$.",
       "hardt-ma/lemma-b.2"),
)

_SECTIONS_4_5: tuple[Row, ...] = (
    _n("Section 4, paragraph 1",
       "All-convolutional residual networks were tried on standard image classification benchmarks.",
       "an announcement of Sections 4.1 and 4.2"),
    _c("Section 4.1, paragraph 1",
       "The CIFAR-10 and CIFAR-100 networks are identical except for the final dimension, 10 or 100 classes.",
       "hardt-ma/sec4-architecture"),
    _c("Section 4.1, paragraph 2",
       r"Each block is $x + C_2(\mathrm{ReLU}(C_1x))$; the second convolution has stride 1, the first may have "
       r"stride 2; where the shape changes the shortcut uses average pooling and padding.",
       "hardt-ma/sec4-architecture"),
    _l("Section 4.1, paragraphs 2-3",
       "Recipe: TensorFlow, momentum 0.9, batch 128, weight decay 0.0001 on all convolutions, learning rate 0.05 "
       "divided by 10 at steps 30,000 and 50,000.",
       "Section 4.1, paragraphs 2-3 (the training recipe)"),
    _c("Section 4.1, paragraphs 2-3",
       "Without batch normalisation, with the small initialisation and the fixed head, the network trains "
       "(momentum SGD, learning rate 0.05).",
       "hardt-ma/sec4-identity-trains-without-bn"),
    _l("Section 4.1, paragraph 3",
       "Peak performance at about 50k steps, about 24 hours on one Tesla K40.",
       _L413),
    _l("Section 4.1, paragraph 3",
       "The code derives from the TensorFlow ResNet implementation by removing batch normalisation and changing "
       "the blocks and the architecture.",
       "Section 4.1, paragraph 3 (the code's origin)"),
    _c("Section 4.1, paragraph 3",
       r"A residual $k \times k$ convolution with $c$ output channels is initialised with standard deviation "
       r"$1/(k^2c)$ instead of $1/(k\sqrt c)$, which helped training.",
       "hardt-ma/sec4-small-init"),
    _c("Section 4.1, paragraph 3",
       "The same sentence with each initialisation at its own best learning rate (the book's question, not "
       "printed).",
       "hardt-ma/sec4-small-init-best-rate"),
    _l("Section 4.1, paragraph 3",
       "The smaller initialisation does not affect representation.",
       "Section 4.1, paragraph 3 (initialisation and representation)"),
    _c("Section 4.1, paragraph 3",
       "A fixed random projection as the last layer slightly improved the test error (perhaps by regularising); "
       "checked at the paper's rate and with each head at its own best rate (one claim, both readings).",
       "hardt-ma/sec4-fixed-head"),
    _c("Section 4.1, paragraph 3",
       "So the only trained weights are those of the convolutions: the network is 'all-convolutional'.",
       "hardt-ma/sec4-architecture"),
    _c("Section 4.1, Table 1",
       r"A $3\times3$ convolution from 3 to 16 channels; three stages of nine blocks of $3\times3$ convolutions, "
       r"$16 \to 64$ (stride 1), $64 \to 128$ (stride 2), $128 \to 256$ (stride 2); an $8\times8$ global "
       r"average pool; a fixed random $256 \times$ classes projection.",
       "hardt-ma/sec4-architecture"),
    _c("Section 4.1, paragraph 4",
       "The network has 13.59 million trainable parameters.",
       "hardt-ma/sec4-architecture"),
    _l("Section 4.1, paragraph 4",
       "Despite its size and 50,000 training images it does not seem to overfit too quickly, while a "
       "batch-normalised model of that size overfitted.",
       _L414),
    _n("Section 4.1, paragraph 4",
       "Table 2 compares with Springenberg et al., He et al. (2015) and DenseNet, all with standard augmentation.",
       "a description of Table 2, whose entries are the rows below"),
    _c("Section 4.1, Table 2",
       "Ours: 6.38% top-1 error on CIFAR-10.",
       "hardt-ma/sec4-cifar10-error"),
    _c("Section 4.1, Table 2",
       "Ours: 24% top-1 error on CIFAR-100 (the conversion keeps the integer part; the chapter's 24.64 is from "
       "its notes).",
       "hardt-ma/sec4-cifar100-error"),
    _l("Section 4.1, Table 2",
       "All-CNN (all-convolutional, dropout, extra data processing): 7.25% on CIFAR-10, 32% on CIFAR-100.",
       _LALLCNN),
    _l("Section 4.1, Table 2",
       "ResNet (no citation in the row; the text names He et al. (2015), which report no CIFAR-100 result): "
       "6.43% on CIFAR-10, 25% on CIFAR-100.",
       _LRESNET),
    _l("Section 4.1, Table 2",
       "DenseNet: 3.74% on CIFAR-10, 19% on CIFAR-100, N/A on ImageNet.",
       _LDENSE),
    _l("Section 4.1, Table 2",
       "The ImageNet column (lost in the text conversion except DenseNet's N/A).",
       "Section 4.1, Table 2 (the ImageNet column)"),
    _l("Section 4.2, paragraph 1",
       r"ILSVRC 2012: 1,281,167 images of 1000 classes, resized to $224 \times 224$ with 3 channels.",
       _L421),
    _l("Section 4.2, paragraph 1",
       "An all-convolutional variant of He et al.'s 34-layer network, whose original reached 25.03% error.",
       _L4213),
    _l("Section 4.2, paragraph 1",
       "The variant has 35.7M trainable parameters.",
       _L421),
    _l("Section 4.2, paragraph 1",
       "Momentum 0.9, learning rate 0.1 decayed by 0.94 every two epochs, 6 asynchronous machines of 8 K40s, "
       "batch 256 (32 per GPU).",
       _L421),
    _l("Section 4.2, paragraph 2",
       "On ImageNet the model did significantly worse than the original and underfitted.",
       _L4213),
    _l("Section 4.2, paragraph 2",
       "A larger model would likely perform better.",
       "Section 4.2, paragraph 2 (a larger model)"),
    _l("Section 4.2, paragraph 3",
       "35.29% top-1 and 14.17% top-5 error on the 50,000 test images after 700,000 steps (about a week), better "
       "than Krizhevsky et al.'s 40.7% and the best all-convolutional network.",
       _L4213),
    _l("Section 4.2, paragraph 3",
       "A better learning-rate schedule and hyperparameters could substantially improve the result.",
       _L423),
    _l("Section 5, paragraph 1",
       "Conjecture: an analogue of Theorem 2.2 holds for non-linear residual networks with one ReLU per residual; "
       "'no fundamental obstacle' is seen.",
       "Section 5, paragraph 1 (a non-linear Theorem 2.2, conjectured)"),
    _l("Section 5, paragraph 1",
       "Much of the progress in image recognition could come from residual convolutions and ReLUs alone.",
       "Section 5, paragraph 1 (residual convolutions alone)"),
)

_APPENDIX_A: tuple[Row, ...] = (
    _n("Appendix A, paragraph 1",
       "The complete proofs of Theorem 2.1 and Lemma 2.4.",
       "an announcement of Appendices A.1 and A.2"),
    _c("Appendix A.1, paragraph 1",
       r"For symmetric positive semidefinite $R$ the proof is easier and gives the stronger "
       r"$|||A^*||| \le 3\gamma/\ell$.",
       "hardt-ma/thm-2.1-psd"),
    _c("Appendix A.1, paragraph 2",
       r"For $R = UZU^\top$ the layers $A_j^* = U\operatorname{diag}(z_i^{1/\ell})U^\top - I$ multiply to $R$, a "
       r"global minimum by Claim 2.3.",
       "hardt-ma/thm-2.1-psd"),
    _c("Appendix A.1, paragraph 3, eq. (A.1)",
       r"$\|A_j^*\| = \max_i |z_i^{1/\ell} - 1|$.",
       "hardt-ma/thm-2.1-psd"),
    _c("Appendix A.1, paragraph 4",
       r"$\ell \ge 3\gamma \ge |\log z_i|$, so $|z_i^{1/\ell} - 1| \le 3|\log z_i|/\ell \le 3\gamma/\ell$.",
       "hardt-ma/thm-2.1-psd"),
    _l("Appendix A.1, paragraph 4",
       r"The inequality $|e^x - 1| \le 3|x|$ for $|x| \le 1$.",
       r"Appendix A.1, paragraph 4 ($|e^x - 1| \le 3|x|$ for $|x| \le 1$)"),
    _c("Appendix A.1, paragraph 5",
       r"Hence $|||A^*||| \le 3\gamma/\ell$ in the positive semidefinite case.",
       "hardt-ma/thm-2.1-psd"),
    _l("Appendix A.1, paragraph 6",
       r"The proof assumes $d$ even; the odd case 'has very similar proof' and is left to the reader.",
       "Appendix A.1, paragraph 6 (d even; the odd case omitted)"),
    _c("Appendix A.1, paragraph 6",
       r"With the SVD $R = UKV^\top$, $U$ is normal, so by Claim C.1 $U = SDS^{-1}$, $D$ block diagonal with "
       r"$2 \times 2$ blocks.",
       "hardt-ma/claim-c.1"),
    _c("Appendix A.1, paragraph 7",
       r"$U$ is orthogonal, so every block $D_i$ is a rotation $T(\theta_i)$, $\theta_i \in [-\pi, \pi]$.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "rotation-blocks"
    _c("Appendix A.1, paragraphs 7-9",
       r"$D_i = T(\theta_i/q)^q$, $W = \operatorname{diag}(T(\theta_i/q))$, $U = (SWS^{-1})^q$; with "
       r"$B_j = I - SWS^{-1}$, $U = (I + B_q)\cdots(I + B_1)$.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "sign"
    _c("Appendix A.1, paragraph 10",
       r"$\|B_j\| = \|I - W\| = \max_i |\sin(\theta_i/q)| \le \pi/q$.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "rotation-norm"
    _c("Appendix A.1, paragraph 11",
       r"Likewise $V^\top = (I + B'_q)\cdots(I + B'_1)$ with $\|B'_j\| \le \pi/q$ (printed $\|C_j\|$).",
       "hardt-ma/thm-2.1-proof"),  # its proof step "rotation-norm"
    _c("Appendix A.1, paragraph 12",
       r"$K = (K')^p$, $K' = \operatorname{diag}(k_i^{1/p})$, and for $p \ge \gamma$, "
       r"$\|K' - I\| \le \max_i |e^{\log k_i/p} - 1| \le 3\gamma/p$.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "scaling"
    _c("Appendix A.1, paragraph 13",
       r"$p = \ell\sqrt{3\gamma}/(2(\sqrt\pi + \sqrt{3\gamma}))$, $q = \ell\sqrt\pi/(\sqrt\pi + \sqrt{3\gamma})$ "
       r"(a reading of the converted fractions), with $2q + p = \ell$ (the conversion garbles its $\ell$ into a 1).",
       "hardt-ma/thm-2.1-proof"),  # its proof step "layer-count"
    _c("Appendix A.1, paragraph 13",
       r"Layers $A_{2p+q} = B_q, \dots, A_{p+q+1} = B_1$, $A_{p+q} = B''_p, \dots$, $A_q = B'_q, \dots, "
       r"A_1 = B'_1$ (the top index should read $2q + p$), with product $UKV^\top = R$.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "layer-count"
    _c("Appendix A.1, paragraph 14",
       r"$|||A||| \le \max\{\|B_j\|, \|B'_j\|, \|B''_j\|\} \le \pi/q + 3\gamma/p \le "
       r"2(\sqrt\pi + \sqrt{3\gamma})^2/\ell$ (as real numbers).",
       "hardt-ma/thm-2.1-proof"),  # its proof step "layer-count"
    _c("Appendix A.1, paragraph 14",
       r"The same bound with $p$ and $q$ whole numbers of layers.",
       "hardt-ma/thm-2.1-proof"),  # its proof step "rounding"
    _c("Appendix A.2, paragraph 1",
       r"Taylor expansion: $f(\dots, A_j + \Delta_j, \dots) = f(A) + 2\langle G_j, \Delta_j\rangle + "
       r"O(\|\Delta_j\|_F^2)$ with $G_j = (I + A_\ell^\top)\cdots(I + A_{j+1}^\top)$ $E\Sigma$ "
       r"$(I + A_{j-1}^\top)\cdots(I + A_1^\top)$.",
       "hardt-ma/lemma-2.4"),
    _c("Appendix A.2, paragraph 2",
       r"Hence $\partial f/\partial A_j$ is that matrix, eq. (2.5).",
       "hardt-ma/lemma-2.4"),
)

_APPENDICES_B_C: tuple[Row, ...] = (
    _n("Appendix B, paragraph 1",
       r"The full proof of Theorem 3.2 starts from a block that moves $k$ of $n$ vectors and keeps the others.",
       "an announcement of Lemma B.1"),
    _c("Appendix B, paragraph 2, Lemma B.1",
       r"If $1 - \rho' \le \|\alpha^{(i)}\|^2 \le 1 + \rho'$ and $\|\alpha^{(i)} - \alpha^{(j)}\| \ge 3\rho'$ "
       r"(printed with $\beta^{(j)}$) whenever $S$ holds $i$ or $j$, some $U, V, s$ give "
       r"$\mathcal T(\alpha^{(i)}) = \beta^{(i)} - \alpha^{(i)}$ on $S$ and 0 off $S$.",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 3",
       r"Equivalently $\beta^{(i)} = \alpha^{(i)} + \mathcal T(\alpha^{(i)})$ on $S$ and "
       r"$\alpha^{(i)} = \alpha^{(i)} + \mathcal T(\alpha^{(i)})$ off $S$, a rewriting of eq. (3.6).",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 4, proof of Lemma B.1",
       r"Rows of $U$ are the $\alpha^{(i)}$, $s = -(1 - 2\rho')\mathbf 1$, column $i$ of $V$ is "
       r"$(\beta^{(i)} - \alpha^{(i)})/(\|\alpha^{(i)}\|^2 - (1 - 2\rho'))$.",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 5, eq. (B.1)",
       r"$\langle\alpha^{(j)}, \alpha^{(i)}\rangle = \frac12(\|\alpha^{(i)}\|^2 + \|\alpha^{(j)}\|^2 - "
       r"\|\alpha^{(i)} - \alpha^{(j)}\|^2) \le 1 + \rho' - 3\rho' \le 1 - 2\rho'$.",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 6",
       r"So $U\alpha^{(i)} - (1 - 2\rho')\mathbf 1$ has one positive entry, at least $\rho'$, and the block adds "
       r"$\beta^{(i)} - \alpha^{(i)}$.",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 7",
       r"For $i > k$ every entry of $U\alpha^{(i)}$ is below $1 - 2\rho'$, so the block adds 0.",
       "hardt-ma/lemma-b.1"),
    _c("Appendix B, paragraph 9, Lemma B.2",
       r"If $1 - \rho' \le \|z^{(i)}\|^2 \le 1 + \rho'$ and $\|z^{(i)} - z^{(j)}\|^2 \ge \rho'$, some "
       r"$(A_1, B_1), \dots, (A_\ell, B_\ell)$ give $h_\ell^{(i)} = v^{(i)}$ for every $i$.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 10",
       r"Each block turns $k$ of the $z^{(i)}$ into their $v^{(i)}$ and keeps the others; $n/k$ blocks turn all.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraphs 11-12, proof of Lemma B.2",
       r"Block $j + 1$ is Lemma B.1's with $\alpha$ the current vectors ($v^{(i)}$ for $i \le jk$, $z^{(i)}$ "
       r"after) and $S = \{jk + 1, \dots, (j + 1)k\}$, which 'satisfies the assumption of Lemma B.1'.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 13, proof of Lemma B.2",
       r"Because the $q_s$ are random, w.h.p. $\langle q_s, z^{(i)}\rangle \le 1 - \rho'$ for every $s$ and $i$, "
       r"so no $v^{(i)}$ correlates with any $z^{(i)}$.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 14",
       r"Lemma B.1 then gives $\mathcal T = 0$ on the moved $v^{(i)}$, $v^{(i)} - z^{(i)}$ on the group, 0 after, "
       r"so $h_{j+1}^{(i)}$ is $v^{(i)}$, $v^{(i)}$, $z^{(i)}$ on the three ranges.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 15",
       r"By induction $h_\ell^{(i)} = v^{(i)}$ for every example.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 16, proof of Theorem 3.2",
       r"$k = c\log n/\rho^2$ with $c = 10$; a standard normal $A_0$ keeps every distance among "
       r"$\{0, x^{(1)}, \dots, x^{(n)}\}$ within $1 \pm \rho/3$ w.h.p., so "
       r"$1 - \rho/3 \le \|A_0x^{(i)}\| \le 1 + \rho/3$.",
       "hardt-ma/thm-3.2"),
    _c("Appendix B, paragraph 16, proof of Theorem 3.2",
       r"$\|A_0x^{(i)} - A_0x^{(j)}\| \ge \rho(1 - \rho/3) \ge 2\rho/3$.",
       "hardt-ma/thm-3.2"),
    _c("Appendix B, paragraph 16, proof of Theorem 3.2",
       r"With $z^{(i)} = A_0x^{(i)}$ and $\rho' = \rho/3$, the $z^{(i)}$ satisfy the conditions of Lemma B.2.",
       "hardt-ma/thm-3.2"),
    _c("Appendix B, paragraph 16, proof of Theorem 3.2",
       r"Random $q_j$, $v^{(i)}$ as in eq. (3.2), and Lemma B.2 gives blocks with $h_\ell^{(i)} = v^{(i)}$.",
       "hardt-ma/lemma-b.2"),
    _c("Appendix B, paragraph 17, eq. (B.3)",
       r"Random unit $q_j$ with $\alpha = q_j$, $\beta = e_j$ satisfy Lemma B.1, which gives "
       r"$e_j = q_j + \mathcal T_{A_{\ell+1},B_{\ell+1},b_{\ell+1}}(q_j)$.",
       "hardt-ma/output-block"),
    _c("Appendix B, paragraph 17",
       r"By eqs. (3.2) and (B.2) (not displayed in the text), $\hat y^{(i)} = h_\ell^{(i)} + "
       r"\mathcal T(h_\ell^{(i)}) = y^{(i)}$.",
       "hardt-ma/thm-3.2"),
    _n("Appendix C, paragraph 1",
       "Two folklore linear-algebra facts, the first without a reference in the literature.",
       "an announcement of Claims C.1 and C.2"),
    _c("Appendix C, paragraph 2, Claim C.1",
       r"A real normal $U$ is $SDS^\top$ with $S$ orthonormal and $D$ real block diagonal, blocks of size at most "
       r"2, exactly $2 \times 2$ when $d$ is even.",
       "hardt-ma/claim-c.1"),
    _l("Appendix C, paragraph 3, proof of Claim C.1",
       r"$U = V\Lambda V^*$ with conjugate pairs, $U = \sum_i 2\Re(v_i\lambda_iv_i^*) + \sum_i v_i\lambda_iv_i^\top$, "
       r"each $Q_i = \Re(v_i\lambda_iv_i^*)$ real of rank 2, $Q_i = S_iD_iS_i^\top$.",
       "Appendix C, proof of Claim C.1"),
    _n("Appendix C, paragraph 4",
       "Claim C.2 is used in the proof of Theorem 2.2.",
       "a cross-reference (thm-2.2 and eq-2.3 declare that they rest on claim-c.2)"),
    _c("Appendix C, paragraph 5, Claim C.2",
       r"For $A, B \in \mathbb R^{d \times d}$, $\|AB\|_F \ge \sigma_{\min}(A)\|B\|_F$.",
       "hardt-ma/claim-c.2"),
    _l("Appendix C, paragraph 6, proof of Claim C.2",
       r"$B^\top A^\top AB \succeq \sigma_{\min}(A)^2B^\top B$, so $\|AB\|_F^2 = \operatorname{tr}(B^\top A^\top AB) "
       r"\ge \sigma_{\min}(A)^2\|B\|_F^2$.",
       "Appendix C, proof of Claim C.2"),
)
# fmt: on

#: The walk, in the paper's order.
ROWS: tuple[Row, ...] = _SECTION_1 + _SECTION_2 + _SECTION_3 + _SECTIONS_4_5 + _APPENDIX_A + _APPENDICES_B_C

#: The columns of :func:`ledger_rows`.
LEDGER_HEADERS = ("printed location", "statement", "what the book does")


def declared_claims() -> set[str]:
    """The Hardt & Ma claim ids the registry declares now (every chapter's claims module imported)."""
    from .registry import all_claims

    return {decl.id for decl in all_claims() if decl.paper == PAPER}


def skip_reasons() -> dict[str, str]:
    """``{ref: why}`` of the Hardt & Ma skip lines the chapters' claims modules declare now."""
    from .registry import CHAPTER_MODULES, chapter_claims

    return {s.ref: s.why for chapter in CHAPTER_MODULES for s in chapter_claims(chapter).skipped if s.paper == PAPER}


def declared_skip_lines() -> set[str]:
    """The printed refs of the Hardt & Ma skip lines the chapters' claims modules declare now."""
    return set(skip_reasons())


def unknown_claims(rows: tuple[Row, ...] = ROWS, declared: set[str] | None = None) -> list[str]:
    """Claim ids the rows name that the registry does not declare (yet), in table order, each once."""
    declared = declared_claims() if declared is None else declared
    return list(dict.fromkeys(r.claim for r in rows if r.claim and r.claim not in declared))


def unknown_skip_lines(rows: tuple[Row, ...] = ROWS, declared: set[str] | None = None) -> list[str]:
    """Skip-line refs the rows fall under that no claims module declares (yet), in table order, each once."""
    declared = declared_skip_lines() if declared is None else declared
    named = (r.line for r in rows if r.line and r.line != NO_STATEMENT)
    return list(dict.fromkeys(line for line in named if line not in declared))


def unwalked_claims(rows: tuple[Row, ...] = ROWS, declared: set[str] | None = None) -> list[str]:
    """Declared Hardt & Ma claim ids that no row names (a claim the walk did not place), sorted."""
    declared = declared_claims() if declared is None else declared
    return sorted(declared - {r.claim for r in rows if r.claim})


def validate(rows: tuple[Row, ...] = ROWS) -> dict[str, list[str]]:
    """The table against the registry, as lists (empty when all is well): claim ids and skip lines the rows name
    that are not declared, declared claims no row names, and rows out of the paper's order."""
    keys = [order_key(r.location) for r in rows]
    return {
        "unknown claims": unknown_claims(rows),
        "unknown skip lines": unknown_skip_lines(rows),
        "claims not in the table": unwalked_claims(rows),
        "out of order": [r.location for r, a, b in zip(rows[1:], keys, keys[1:]) if b < a],
    }


def new_rows(rows: tuple[Row, ...] = ROWS) -> list[Row]:
    """The statements neither checked nor under a skip line: claims to write and skip lines to add."""
    return [r for r in rows if r.is_new]


def counts_by_section(rows: tuple[Row, ...] = ROWS) -> dict[str, dict[str, int]]:
    """Per heading, in the paper's order: how many rows, how many checked by a claim, under a skip line, with
    nothing to check, and new."""
    out = {key: Counter() for key, _ in SECTIONS}
    for r in rows:
        kind = "claim" if r.claim else "new" if r.is_new else "nothing" if r.line == NO_STATEMENT else "skip line"
        out[r.section].update({"rows": 1, kind: 1})
    return {key: {k: c[k] for k in ("rows", "claim", "skip line", "nothing", "new")} for key, c in out.items()}


def ledger_rows(rows: tuple[Row, ...] = ROWS) -> list[tuple[str, str, str]]:
    """``(printed location, statement, what the book does)`` per row, for the ledger page (:data:`LEDGER_HEADERS`):
    "checked by ID", "not checked: why" (the declared skip line's reason), "nothing to check: why" or "not yet
    checked: what to check"."""
    reasons = skip_reasons()
    return [(r.location, r.what, r.status(reasons)) for r in rows]


def _report() -> str:
    titles = dict(SECTIONS)
    lines = [f"{len(ROWS)} rows; per heading: rows, claim, skip line, nothing to check, new"]
    for key, c in counts_by_section().items():
        lines.append(f"  {key:4} {titles[key][:44]:44} " + " ".join(f"{v:3}" for v in c.values()))
    lines.append(f"new rows ({len(new_rows())}):")
    lines += [f"  [{'claim' if r.finding else 'skip'}] {r.location}: {r.what}" for r in new_rows()]
    lines += [f"{name}: {found or 'none'}" for name, found in validate().items()]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(_report())
