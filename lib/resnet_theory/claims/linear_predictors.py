"""The claims of the linear_predictors chapter (``book/linear_predictors.md``): Shamir (2018), "Are ResNets
provably better than linear predictors?". Each claim is declared once, beside the function that computes its
evidence; the chapter narrates the mathematics and calls :meth:`resnet_theory.claims.chapter.Chapter.check`
for each.

The paper's theorem texts were not available: the statements follow the TU Munich seminar review of the paper
(Güley, 2020; ``seeds/003``) or the abstract, as each declaration's :class:`Source` says, and the mathematics
is :mod:`resnet_theory.shamir`.

Random instances: every survey draws its instances from one integer seed taken from
``ctx.rng("shamir/instances")``, with the paper module's offsets (``shamir.SEED_STRIDE``), so that the checks
that must see the same instances (Theorems 1 and 2 and their controls, Corollary 1's search with and without
the skip, Theorem 3 on the searches' paths) do, whichever claims run and in whatever order.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from .. import shamir as S
from ..checks import compare_gradients, compare_hessians, sympy_derivatives
from ..ledger import Check
from ..tables import in_words
from .context import Context, Knob, ProfileTable
from .registry import ClaimSet
from .spec import Control, Evidence, Source

PROFILE = ProfileTable(
    n_instances=Knob(150, 2000, "instances per loss, Theorems 1 and 2", tiny=3),
    n_adversarial=Knob(4, 40, "instances where Adam hunts a Theorem 1 violation", tiny=1),
    n_corollary=Knob(8, 40, "instances searched for minima (Corollary 1, Theorem 3)", tiny=4),
    sgd_steps=Knob(4096, 32768, "the longest horizon $T$ of projected SGD (Theorem 4)", tiny=512),
    sgd_runs=Knob(16, 32, "independent SGD runs behind the rate of Theorem 4", tiny=4),
    sweep_eps=Knob((1.0,), (0.5, 1.0, 2.0), r"$\epsilon$ of the landscape sweep"),
    sweep_penalties=Knob(
        (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
        (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
        "penalties of the landscape sweep, fixed in advance",
        tiny=(0.1, 2.0),
    ),
    sweep_radii=Knob(
        (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0),
        (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0),
        "radii of the landscape sweep, fixed in advance",
        tiny=(2.0, 5.0),
    ),
    figure_eps=Knob(1.0, 1.0, r"$\epsilon$ of the drawn landscapes (the review does not give it)"),
    figure_penalty=Knob(0.25, 0.25, "penalty of panel (b), tuned by us to resemble the review"),
    figure_radius=Knob(2.0, 2.0, "radius of panel (c), tuned by us to resemble the review"),
    plateau_after=Knob(16, 16, "Theorem 4 illustration: the step stops shrinking after this"),
)

CLAIMS = ClaimSet("linear_predictors", PROFILE)

#: The review every statement of this chapter but Corollary 1 follows.
REVIEW = Source.review("the TU Munich seminar review of Shamir (Güley, 2020)")
#: Theorem 4's statement follows the review, which gives its O(.) without constants: those tested are ours.
REVIEW_THEOREM_4 = Source.review(
    "the TU Munich seminar review of Shamir (Güley, 2020); the constants of its O(.) are our reconstruction"
)
#: Theorem 3: the domain ``max(|w|, |V|) < b`` and the comparator radius ``r = b``; the stationarity levels.
THM3_BOUND = 10.0
THM3_EPS = (1e-2, 1e-4, 1e-6, 1e-8)
#: Theorem 4: the confidence of our explicit bound, and the radius of the control's ball (excludes ``u*``).
T4_DELTA = 0.05
T4_CONTROL_RADIUS = 0.05
#: Example 1: the eps at which the derivatives are compared, and its saddle evaluated by Theorem 2's code.
EXAMPLE_1_EPS = (0.1, 0.5, 1.0, 2.0)
EXAMPLE_1_SADDLE_EPS = (1.0, 0.1, 0.01, 0.001)
#: Example 1's saddle claim: its control evaluates the same exact conditions at ``(0, -SADDLE_CONTROL_FACTOR/eps)``.
SADDLE_CONTROL_FACTOR = 2
#: Example 1 in Theorem 1's check: the eps and the offsets delta of its points ``(delta, -1/eps)``.
EXAMPLE_1_T1_EPS = (1.0, 0.1, 0.01)
EXAMPLE_1_DELTAS = (1e-1, 1e-3)
#: Adam's steps on each instance where it hunts a Theorem 1 violation.
ADVERSARIAL_STEPS = 150
#: Theorem 2: its control evaluates the survey's first instances at ``w = 0`` without the skip; the V-V block of
#: the Hessian at ``w = 0`` is shown on the first of them.
NO_SKIP_T2_INSTANCES = 20
VV_BLOCK_INSTANCES = 10
#: The derivatives of Theorems 1 and 2, three ways (SymPy, autograd, finite differences): on the first rows of the
#: survey's first instance of each loss (SymPy's expression grows with the rows; the code path does not).
WITNESS_ROWS = 4
#: Corollary 1: the relative slack of ``F <= inf F_lin`` (rounding of the two computed values).
COROLLARY_RTOL = 1e-9
#: The chapter's illustrations: the points the verification of minima must refuse (Example 1's saddle at this eps;
#: the logistic instance an earlier version of the chapter accepted, and its search's start seed), and the starts
#: of the local searches behind the drawn landscapes.
REFUSED_SADDLE_EPS = 0.1
REFUSED_INSTANCE = (20_003, 3)
FIGURE_STARTS = 196


def instance_seed(ctx: Context) -> int:
    """The integer seed of every random instance of the chapter (the paper module's surveys offset it)."""
    return int(ctx.rng("shamir/instances").integers(0, 10_000))


def _no_input(what: str, knob: str) -> ValueError:
    return ValueError(f"{what}: the control has no input at this size; raise the knob {knob}")


# --- Example 1: a saddle that is almost flat and worse than linear ---------------------------------------------
def _example_1_formulas() -> dict:
    """SymPy's gradient and Hessian of Example 1, the review's, and the review's Hessian with one sign changed."""
    sym, review = S.example_1_symbolic(), S.example_1_review_formulas()
    w, v, eps = sym["symbols"]
    to_ours = dict(zip(review["symbols"], sym["symbols"]))
    review_hessian = review["hessian"].subs(to_ours)
    typo_hessian = review_hessian + sp.Matrix([[0, 2 * eps], [2 * eps, 0]])
    return {
        "sym": sym,
        "typo_hessian": typo_hessian,
        "diff_grad": (sym["gradient"] - review["gradient"].subs(to_ours)).applyfunc(sp.simplify),
        "diff_hess": (sym["hessian"] - review_hessian).applyfunc(sp.simplify),
        "diff_typo": (sym["hessian"] - typo_hessian).applyfunc(sp.simplify),
    }


@CLAIMS.checked(
    "shamir/example-1-derivatives",
    paper="shamir",
    ref="Example 1 (statement per review 003)",
    source=REVIEW,
    section="shamir-example-1",
    statement=r"The gradient and Hessian of $F(w, v) = \frac12 (w(1 + \epsilon v) - "
    r"1)^2$ are the formulas the review gives.",
    control=Control(
        "the review's Hessian with the sign of the -1 in its off-diagonal "
        "entry changed: a formula the claim says is not the Hessian of F, "
        "put to the same exact and numerical witnesses"
    ),
)
def example_1_derivatives(ctx: Context) -> Evidence:
    """SymPy against the review's formulas exactly, then SymPy, autograd and finite differences at six random
    points per eps; the control puts the Hessian with one sign changed to the same witnesses."""
    rng = ctx.rng("shamir/example-1-derivatives")
    f = _example_1_formulas()
    sym = f["sym"]
    w, v, eps = sym["symbols"]
    grad_reports, hess_reports, typo_reports = [], [], []
    for e in EXAMPLE_1_EPS:
        sd = sympy_derivatives(sym["objective"].subs(eps, e), (w, v))
        typo = sp.lambdify((w, v), f["typo_hessian"].subs(eps, e), "numpy")
        points = rng.uniform(-3, 3, size=(6, 2))
        objective = S.example_1_objective(e)
        grad_reports.append(compare_gradients(objective, points, closed_form={"sympy": sd.gradient}))
        hess_reports.append(compare_hessians(objective, points, closed_form={"sympy": sd.hessian}))
        changed = {"one sign changed": lambda z, t=typo: np.array(t(*z), float)}
        typo_reports.append(compare_hessians(objective, points, closed_form=changed))
    difference = list(f["diff_grad"]) + list(f["diff_hess"])
    statement = Check.combine(
        [Check.equal(difference, [sp.Integer(0)] * 6, what="SymPy minus the review's formulas")]
        + [r.check(f"gradient, $\\epsilon = {e}$") for r, e in zip(grad_reports, EXAMPLE_1_EPS)]
        + [r.check(f"Hessian, $\\epsilon = {e}$") for r, e in zip(hess_reports, EXAMPLE_1_EPS)],
        what="exact and numerical witnesses",
    )
    control = (
        Check.equal(list(f["diff_typo"]), [sp.Integer(0)] * 4, what="SymPy minus the Hessian with one sign changed"),
        Check.combine(
            [r.check(f"Hessian with one sign changed, $\\epsilon = {e}$") for r, e in zip(typo_reports, EXAMPLE_1_EPS)],
            what="numerical witnesses against the changed Hessian",
        ),
    )
    return Evidence(
        statement=statement,
        control=control,
        data={
            "difference_gradient": list(f["diff_grad"]),
            "difference_hessian": list(f["diff_hess"]),
            "gradient_report": grad_reports[-1],
            "hessian_report": hess_reports[-1],
        },
    )


def _saddle_conditions(e, point, sym) -> bool:
    """Zero gradient, the Hessian [[0, -e], [-e, 0]] and F = 1/2 at ``point``, exactly."""
    w, v, eps = sym["symbols"]
    at = {w: point[0], v: point[1], eps: e}
    return bool(
        sym["gradient"].subs(at) == sp.zeros(2, 1)
        and sym["hessian"].subs(at) == sp.Matrix([[0, -e], [-e, 0]])
        and sp.simplify(sym["objective"].subs(at)) == sp.Rational(1, 2)
    )


def _only_critical_point_above_zero(e, point, sym) -> bool:
    """Every solution of ``grad F = 0`` (SymPy's ``solve``, exactly) other than ``point`` has ``F = 0``: ``point`` is
    the only critical point with a positive loss, so no other point meets the saddle's conditions (``F = 1/2``)."""
    w, v, eps = sym["symbols"]
    solutions = sp.solve(list(sym["gradient"].subs(eps, e)), [w, v], dict=True)
    objective = sym["objective"].subs(eps, e)
    positive = [sol for sol in solutions if sp.simplify(objective.subs(sol)) != 0]
    return bool(solutions) and positive == [{w: point[0], v: point[1]}]


@CLAIMS.checked(
    "shamir/example-1-saddle",
    paper="shamir",
    ref="Example 1 (statement per review 003)",
    source=REVIEW,
    section="shamir-example-1",
    statement=r"At $(0, -1/\epsilon)$ the gradient is 0, the Hessian is "
    r"$\begin{pmatrix} 0 & -\epsilon \\ -\epsilon & 0 \end{pmatrix}$ (eigenvalues "
    r"$\pm\epsilon$) and $F = 1/2$, above $F_{\mathrm{lin}}(1) = 0$. Added here: it is the only critical point "
    r"with $F > 0$ (every other one has $F = 0$), so no other point meets these conditions.",
    control=Control(
        rf"the point $(0, -{SADDLE_CONTROL_FACTOR}/\epsilon)$, which the example does not name and which, by the "
        r"uniqueness in the statement, the claim rules out: the same exact conditions (zero gradient, that Hessian, "
        r"$F = 1/2$) evaluated there"
    ),
)
def example_1_saddle(ctx: Context) -> Evidence:
    """The saddle exactly for five eps (the library's :func:`~resnet_theory.shamir.example_1_saddle` and the
    conditions evaluated by SymPy here), and that every other critical point has zero loss (so the saddle's
    conditions hold nowhere else); the control evaluates the same conditions at
    ``(0, -SADDLE_CONTROL_FACTOR/eps)``."""
    sym = S.example_1_symbolic()
    eps_list = [sp.Integer(2), sp.Integer(1), sp.Rational(1, 10), sp.Rational(1, 100), sp.Rational(1, 1000)]
    saddles = [S.example_1_saddle(e) for e in eps_list]
    at_saddle = [_saddle_conditions(e, (0, -1 / e), sym) for e in eps_list]
    unique = [_only_critical_point_above_zero(e, (0, -1 / e), sym) for e in eps_list]
    elsewhere = [_saddle_conditions(e, (0, -SADDLE_CONTROL_FACTOR / e), sym) for e in eps_list]
    agrees = [s["point"] == (0, -1 / e) and s["eigenvalues"] == [-e, e] for e, s in zip(eps_list, saddles)]
    rows = [
        {
            r"$\epsilon$": f"${sp.latex(e)}$",
            "point $(w, v)$": f"${sp.latex(s['point'])}$",
            "$F$ there": f"${sp.latex(s['value'])}$",
            "gradient": f"${sp.latex(list(s['gradient']))}$",
            "Hessian eigenvalues": f"${sp.latex(s['eigenvalues'])}$",
            r"$|v| = 1/\epsilon$": f"${sp.latex(abs(s['point'][1]))}$",
        }
        for e, s in zip(eps_list, saddles)
    ]
    return Evidence(
        statement=Check.combine(
            [
                Check.all_of(
                    at_saddle + agrees, what=r"exact values at $(0, -1/\epsilon)$, one case per $\epsilon$, twice"
                ),
                Check.all_of(
                    unique, what=r"every other solution of $\nabla F = 0$ has $F = 0$ (SymPy's solve), per $\epsilon$"
                ),
            ],
            what="the saddle, and the only critical point with a positive loss",
        ),
        control=Check.all_of(elsewhere, what=rf"the same exact conditions at $(0, -{SADDLE_CONTROL_FACTOR}/\epsilon)$"),
        data={"rows": rows},
        glue={"shamir_saddle_control_c": SADDLE_CONTROL_FACTOR},
    )


# --- Theorems 1 and 2: a point worse than linear is not (approximately) stationary -----------------------------
def _survey(ctx: Context) -> dict:
    return ctx.shared("survey", lambda: S.survey_theorems(ctx.cfg.n_instances, instance_seed(ctx)))


def _search(ctx: Context, skip: bool) -> list[dict]:
    """Corollary 1's search for local minima (with the skip) or the same on the network without it."""
    key = "corollary search" if skip else "no-skip search"
    return ctx.shared(key, lambda: S.corollary_1_survey(ctx.cfg.n_corollary, instance_seed(ctx), skip=skip))


def _verified_minima(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] == "local minimum"]


def _comparator_gain(seed: int, n: int = 20) -> np.ndarray:
    """On the survey's first ``n`` Theorem 1 instances with a positive right side: the largest right side over
    comparators ``c w*``, ``0 < c <= 1``, divided by the right side at ``w*``."""
    scales = np.linspace(0.05, 1.0, 20)
    gain = []
    for i in range(n):
        a = S.random_theorem_instance(S.SEED_STRIDE * seed + 2 * i, S.LOSSES[i % 2])
        rhs = S.theorem_1_rhs_along(a["X"], a["y"], a["w"], a["V"], a["f_theta"], a["w_star"], scales, a["loss"])
        if rhs[-1] > 0:
            gain.append(rhs.max() / rhs[-1])
    return np.array(gain)


def _adversarial(seed: int, n: int) -> list[dict]:
    """Adam minimising Theorem 1's ratio over ``(w, V)`` on ``n`` instances."""
    out = []
    for i in range(n):
        a = S.random_theorem_instance(S.SEED_STRIDE * seed + 10_000 + i, S.LOSSES[i % 2])
        out.append(
            S.theorem_1_adversarial(
                a["X"], a["y"], a["f_theta"], a["w_star"], a["w"], a["V"], a["loss"], ADVERSARIAL_STEPS
            )
        )
    return out


def _example_1_theorem_1() -> list[dict]:
    """Theorem 1's sides at Example 1's points ``(delta, -1/eps)``: the tightest cases known."""
    points = []
    for e in EXAMPLE_1_T1_EPS:
        a = S.example_1_instance(e)
        for delta in EXAMPLE_1_DELTAS:
            points.append(S.theorem_1_sides(a["X"], a["y"], [delta], [[-1 / e]], a["f_theta"], a["w_star"]))
    return points


def _derivative_witnesses(seed: int, at_zero_w: bool) -> list:
    """The gradient (and at ``w = 0``, as Theorem 2 needs, the Hessian) of ``F_theta`` in ``(w, V)`` three ways:
    SymPy (:func:`~resnet_theory.shamir.objective_sympy`, from the formula), the autograd of
    :func:`~resnet_theory.shamir.objective_derivatives` that the checks use, and finite differences, at the point
    of the survey's first Theorem 1 instance (or Theorem 2 instance, ``w = 0``) of each loss, on its first
    :data:`WITNESS_ROWS` rows. One report per loss and derivative."""
    reports = []
    for loss in S.LOSSES:
        a = S.random_theorem_instance(S.SEED_STRIDE * seed + int(at_zero_w), loss, w_zero=at_zero_w)
        X, y = a["X"][:WITNESS_ROWS], a["y"][:WITNESS_ROWS]
        sd = sympy_derivatives(*S.objective_sympy(X, y, a["f_theta"], loss), simplify=False, hessian=at_zero_w)
        F = S.objective_derivatives(X, y, a["w"], a["V"], a["f_theta"], loss)["function"]
        point = [np.concatenate([a["w"], np.asarray(a["V"]).ravel()])]
        reports.append(compare_gradients(F, point, closed_form={"sympy": sd.gradient}))
        if at_zero_w:
            reports.append(compare_hessians(F, point, closed_form={"sympy": sd.hessian}))
    return reports


def _witness_names(reports: list) -> list[tuple[str, str]]:
    """``(loss, derivative)`` of each report of :func:`_derivative_witnesses`, in its order."""
    return [(loss, kind) for loss in S.LOSSES for kind in ("gradient", "Hessian")[: len(reports) // 2]]


def _witness_checks(reports: list, at: str) -> list[Check]:
    return [
        r.check(f"{loss}, {kind} at {at}, three witnesses") for (loss, kind), r in zip(_witness_names(reports), reports)
    ]


def _witness_rows(reports: list, at: str) -> list[dict]:
    """One row per report: where, which loss and derivative, the largest relative disagreement of each pair."""
    return [
        {"point": at, "loss": loss, "derivative": kind, **r.max_rel_error, "agree": "yes" if r.check().holds else "NO"}
        for (loss, kind), r in zip(_witness_names(reports), reports)
    ]


def _no_skip_theorem_1(ctx: Context) -> list[tuple[dict, dict]]:
    """Theorem 1's sides, without the skip, at every verified minimum of the network without the skip."""
    out = []
    for r in _verified_minima(_search(ctx, skip=False)):
        a = S.random_theorem_instance(r["instance"], r["loss"])
        out.append(
            (r, S.theorem_1_sides(a["X"], a["y"], r["w"], r["V"], a["f_theta"], a["w_star"], r["loss"], skip=False))
        )
    return out


@CLAIMS.checked(
    "shamir/thm-1",
    paper="shamir",
    ref="Theorem 1 (statement per review 003)",
    source=REVIEW,
    section="shamir-theorems-1-2",
    statement=r"For $w \ne 0$ and any $w^*$, $\|\nabla F_\theta(w, V)\| \ge (F - "
    r"F_{\mathrm{lin}}(w^*)) / \sqrt{2\|w\|^2 + \|w^*\|^2 (2 + \|V\|^2/\|w\|^2)}$ "
    r"(spectral norm of $V$).",
    control=Control(
        r"the same instances and local search for $x \mapsto w^T V f_\theta(x)$, the "
        "network without the skip, which Theorem 1 does not cover: its "
        r"minima can have zero gradient and a value above $F_{\mathrm{lin}}(w^*)$"
    ),
)
def theorem_1(ctx: Context) -> Evidence:
    """Theorem 1 on the survey's random instances, on the points Adam finds by minimising its ratio and at
    Example 1's points; the control evaluates it without the skip at that network's verified minima."""
    seed, survey = instance_seed(ctx), _survey(ctx)
    pos = survey["t1_rhs"] > 0
    ratio = survey["t1_lhs"][pos] / survey["t1_rhs"][pos]
    gain = _comparator_gain(seed)
    adversarial = _adversarial(seed, ctx.cfg.n_adversarial)
    ex1 = _example_1_theorem_1()
    witnesses = _derivative_witnesses(seed, at_zero_w=False)
    no_skip = _no_skip_theorem_1(ctx)
    if not no_skip:
        raise _no_input("shamir/thm-1: no verified minimum of the network without the skip", "n_corollary")
    statement = Check.combine(
        [
            Check.at_least(survey["t1_lhs"], survey["t1_rhs"], what="random instances, both losses"),
            Check.at_least(
                [a["lhs"] for a in adversarial],
                [a["rhs"] for a in adversarial],
                what="points found by minimising the ratio",
            ),
            Check.at_least(
                [p["lhs"] for p in ex1], [p["rhs"] for p in ex1], what=r"Example 1 at $(\delta, -1/\epsilon)$"
            ),
        ]
        + _witness_checks(witnesses, "$(w, V)$"),
        what="Theorem 1",
    )
    control = Check.at_least(
        [s["lhs"] for _, s in no_skip],
        [s["rhs"] for _, s in no_skip],
        what="the network without the skip, at its verified minima",
    )
    rows = [
        {
            "instance": r["instance"],
            "loss": r["loss"],
            r"$F - \inf F_{\mathrm{lin}}$": r["value"] - r["inf_linear"],
            r"$\|\nabla F\|$": s["lhs"],
            "Theorem 1 right side": s["rhs"],
        }
        for r, s in no_skip
    ]
    return Evidence(
        statement=statement,
        control=control,
        data={
            "ratio": ratio,
            "loss": survey["t1_loss"][pos],
            "no_skip_rows": rows,
            "witnesses": witnesses,
            "witness_rows": _witness_rows(witnesses, "$(w, V)$"),
        },
        glue={
            "shamir_witness_rows": WITNESS_ROWS,
            "shamir_t1_min_ratio": float(ratio.min()),
            "shamir_t1_cases": len(survey["t1_lhs"]),
            "shamir_t1_positive": int(pos.sum()),
            "shamir_rhs_gain_frac": int((gain > 1 + 1e-12).sum()),
            "shamir_rhs_gain_n": len(gain),
            "shamir_rhs_gain_max": float(gain.max()),
            "shamir_adv_min_ratio": float(min(a["ratio"] for a in adversarial)),
            "shamir_adv_n": int(ctx.cfg.n_adversarial),
            "shamir_ex1_min_ratio": float(min(p["lhs"] / p["rhs"] for p in ex1)),
            "shamir_ex1_without_V_min": float(min(p["lhs"] / p["rhs_without_V"] for p in ex1)),
            "shamir_noskip_minima": len(no_skip),
            "shamir_noskip_t1_fail": sum(s["lhs"] < s["rhs"] for _, s in no_skip),
            **{f"shamir_inst_{name}": size for name, size in S.INSTANCE.items()},
            "shamir_inst_flip": S.LABEL_FLIP,
            "shamir_inst_decades": int(S.SCALE_POWERS[1] - S.SCALE_POWERS[0]),
        },
    )


def _zero_w_instances(seed: int, n: int) -> list[dict]:
    """The survey's first ``n`` Theorem 2 instances (at ``w = 0``)."""
    return [S.random_theorem_instance(S.SEED_STRIDE * seed + 2 * i + 1, S.LOSSES[i % 2], w_zero=True) for i in range(n)]


def _vv_block_largest(instances: list[dict]) -> float:
    """The largest entry of the V-V block of the Hessian at ``w = 0`` (autograd): zero, identically."""
    largest = 0.0
    for b in instances:
        der = S.objective_derivatives(b["X"], b["y"], b["w"], b["V"], b["f_theta"], b["loss"])
        d = len(b["w"])
        largest = max(largest, float(np.abs(der["hessian"][d:, d:]).max()))
    return largest


@CLAIMS.checked(
    "shamir/thm-2",
    paper="shamir",
    ref="Theorem 2, second inequality (review 003)",
    source=REVIEW,
    section="shamir-theorems-1-2",
    statement=r"For any $V$, $\theta$ and $w^* \ne 0$, with $\lambda = "
    r"\lambda_{\min}$ of the Hessian in $(w, V)$ at $(0, V)$: $\|\nabla F_\theta(0, "
    r"V)\| + \|V\| \sqrt{|\lambda|\, \|\partial^2 F/\partial w^2\| + \lambda^2} \ge "
    r"(F(0, V) - F_{\mathrm{lin}}(w^*)) / \|w^*\|$.",
    control=Control(
        rf"$x \mapsto w^T V f_\theta(x)$ at $w = 0$ on the survey's first {NO_SKIP_T2_INSTANCES} instances: "
        "without the skip the theorem does not apply, and its gradient in $w$ "
        "shrinks with $V$ while the right side does not"
    ),
)
def theorem_2(ctx: Context) -> Evidence:
    """Theorem 2 at ``w = 0`` on the survey's random instances and at Example 1's saddles; the control evaluates
    it without the skip on the survey's first ``NO_SKIP_T2_INSTANCES`` instances. Also the V-V block of the
    Hessian at ``w = 0`` (the first half of the theorem, which holds identically and is not a verdict)."""
    seed, survey = instance_seed(ctx), _survey(ctx)
    pos = survey["t2_rhs"] > 0
    ratio = survey["t2_lhs"][pos] / survey["t2_rhs"][pos]
    ex1 = S.example_1_theorem_2(EXAMPLE_1_SADDLE_EPS)
    witnesses = _derivative_witnesses(seed, at_zero_w=True)
    zero_w = _zero_w_instances(seed, NO_SKIP_T2_INSTANCES)
    no_skip = [
        S.theorem_2_sides(b["X"], b["y"], b["V"], b["f_theta"], b["w_star"], b["loss"], skip=False) for b in zero_w
    ]
    no_skip = [s for s in no_skip if s["rhs"] > 0]
    if not no_skip:
        raise _no_input("shamir/thm-2: no point (0, V) without the skip has a positive right side", "n_instances")
    statement = Check.combine(
        [
            Check.at_least(survey["t2_lhs"], survey["t2_rhs"], what=r"random instances at $w = 0$, both losses"),
            Check.at_least(
                [r["Theorem 2 left side"] for r in ex1], [r["right side"] for r in ex1], what="Example 1's saddles"
            ),
        ]
        + _witness_checks(witnesses, "$(0, V)$"),
        what="Theorem 2",
    )
    control = Check.at_least(
        [s["lhs"] for s in no_skip],
        [s["rhs"] for s in no_skip],
        what=f"the network without the skip at (0, V), {len(no_skip)} instances with a positive right side",
    )
    return Evidence(
        statement=statement,
        control=control,
        data={
            "ratio": ratio,
            "loss": survey["t2_loss"][pos],
            "example_1_rows": ex1,
            "witnesses": witnesses,
            "witness_rows": _witness_rows(witnesses, "$(0, V)$"),
            "vv_block_instances": VV_BLOCK_INSTANCES,
            "vv_block_largest": _vv_block_largest(zero_w[:VV_BLOCK_INSTANCES]),
            "lambda_min_relative_largest": float((survey["t2_lambda_min"] / survey["t2_hessian_norm"]).max()),
        },
        glue={
            "shamir_t2_min_ratio": float(ratio.min()),
            "shamir_t2_positive": int(pos.sum()),
            "shamir_ex1_lhs_min": float(min(r["Theorem 2 left side"] for r in ex1)),
            "shamir_noskip_t2_n": len(no_skip),
            "shamir_noskip_t2_drawn": NO_SKIP_T2_INSTANCES,
            "shamir_noskip_t2_fail": sum(s["lhs"] < s["rhs"] for s in no_skip),
        },
    )


CLAIMS.skip(
    paper="shamir",
    ref="Theorem 2, first inequality (review 003)",
    statement=r"At $w = 0$, $\lambda_{\min}$ of the Hessian of $F_\theta$ in $(w, V)$ is at most 0.",
    why="it holds identically: the $V$-$V$ block of that Hessian is zero at $w = 0$, "
    "so no instance could contradict it; the chapter shows the block instead of a "
    "verdict",
)


# --- Corollary 1 and Theorem 3: local minima are at least as good as linear ------------------------------------
@CLAIMS.checked(
    "shamir/cor-1",
    paper="shamir",
    ref="Corollary 1 (numbering per review 003); abstract",
    source=Source.abstract(
        "the abstract states it in words; the precise form and the numbering follow the TU Munich seminar "
        "review of Shamir (Güley, 2020)"
    ),
    section="shamir-corollary-1",
    statement=r"Every local minimum of $F$ (in $(w, V)$, $\theta$ fixed; loss convex "
    r"in the prediction) has $F \le \inf_w F_{\mathrm{lin}}(w)$. The abstract states "
    r"it in words; the precise form and the numbering follow review 003.",
    control=Control(
        r"the same instances, search and verification for $x \mapsto w^T V "
        r"f_\theta(x)$, the network without the skip, whose minima the "
        r"corollary does not bound (they fit only the features $f_\theta(x)$)"
    ),
    rests_on=("shamir/thm-3",),
)
def corollary_1(ctx: Context) -> Evidence:
    """A local search on random instances, each end point verified at the problem's scale
    (:func:`~resnet_theory.shamir.verify_local_minimum`), compared with ``inf F_lin``; the control is the same
    search and verification on the network without the skip."""
    found = _search(ctx, skip=True)
    minima, no_skip = _verified_minima(found), _verified_minima(_search(ctx, skip=False))
    if not minima:
        raise ValueError("shamir/cor-1: no verified local minimum to check at this size; raise the knob n_corollary")
    if not no_skip:
        raise _no_input("shamir/cor-1: no verified minimum of the network without the skip", "n_corollary")
    per_loss = [sum(r["loss"] == loss for r in minima) for loss in S.LOSSES]
    statement = Check.combine(
        [
            Check.at_least(per_loss, 1, what="verified local minima per loss (squared, logistic)"),
            Check.at_most(
                [r["value"] for r in minima],
                [r["inf_linear"] for r in minima],
                rtol=COROLLARY_RTOL,
                what=r"$F$ at each verified minimum vs $\inf F_{\mathrm{lin}}$",
            ),
        ],
        what="Corollary 1",
    )
    control = Check.at_most(
        [r["value"] for r in no_skip],
        [r["inf_linear"] for r in no_skip],
        rtol=COROLLARY_RTOL,
        what="the same at the verified minima without the skip",
    )
    columns = ("relative_gradient", "relative_curvature", "escape_drop")
    names = (r"$\|\nabla F\| \|z\| / F$", r"$\lambda_{\min} / \|\nabla^2 F\|$", "drop along the ray")
    rows = [
        {
            "instance": r["instance"],
            "loss": r["loss"],
            "what was found": r["status"],
            "F": r["value"],
            r"$\inf F_{\mathrm{lin}}$": r["inf_linear"],
            **{name: r[c] for name, c in zip(names, columns)},
        }
        for r in found
    ]
    worse = [r["value"] - r["inf_linear"] for r in no_skip]
    return Evidence(
        statement=statement,
        control=control,
        data={"rows": rows},
        glue={
            "shamir_cor_n": len(found),
            "shamir_cor_minima": len(minima),
            "shamir_cor_unattained": sum(r["status"] == "no minimum attained" for r in found),
            "shamir_noskip_worse_n": sum(g > 0 for g in worse),
            "shamir_noskip_worse_max": float(max(worse)),
            "shamir_verify_rtol": S.VERIFY_RTOL,
            "shamir_ray_from": S.ESCAPE_FACTORS[0],
            "shamir_ray_to": S.ESCAPE_FACTORS[1],
        },
    )


def _sopsp(rows: list[dict], skip: bool) -> list[dict]:
    """The eps-SOPSPs on each search path (:func:`~resnet_theory.shamir.approximate_stationary_points`)."""
    out = []
    for r in rows:
        a = S.random_theorem_instance(r["instance"], r["loss"])
        out.append(
            S.approximate_stationary_points(
                a["X"], a["y"], a["f_theta"], r["path"], r["loss"], bound=THM3_BOUND, eps_levels=THM3_EPS, skip=skip
            )
        )
    return out


def _level(found: list[dict], eps: float) -> tuple[int, list[float]]:
    """How many eps-SOPSPs at level ``eps``, and each path's largest excess relative to its scale ``s``."""
    counted = [q for q in found if q["count"][eps] > 0]
    return sum(q["count"][eps] for q in found), [q["worst_excess"][eps] / q["scale"] for q in counted]


def _thm3_check(found: list[dict], what: str) -> Check:
    """Every eps-SOPSP found is no worse than the best linear predictor on the ball: excess at most 0, with no
    allowance for Theorem 3's ``(eps + eps^(1/4)) poly`` term (whose polynomial is unknown here)."""
    excess = [q["worst_excess"][e] / q["scale"] for q in found for e in THM3_EPS if q["count"][e] > 0]
    if not excess:
        raise ValueError(f"shamir/thm-3-approximate, {what}: no eps-SOPSP on the paths; raise the knob n_corollary")
    return Check.at_most(excess, 0.0, what=what)


_THM3_LEVELS = in_words(THM3_EPS)


@CLAIMS.checked(
    "shamir/thm-3-approximate",
    paper="shamir",
    ref="Theorem 3 (per review 003): the book's question on Corollary 1's search paths",
    source=Source.question(
        "the book's question beside Theorem 3, whose polynomial is unknown here: are the approximate stationary "
        "points that Corollary 1's searches meet already no worse than the best linear predictor?"
    ),
    section="shamir-corollary-1",
    statement=r"On the iterates of Corollary 1's searches (domain $\max(\|w\|, \|V\|) < b$), every "
    rf"$\epsilon$-SOPSP at $\epsilon$ = {_THM3_LEVELS}, $b = r = {THM3_BOUND:g}$, has $F \le "
    r"\min_{\|w\| \le r} F_{\mathrm{lin}}(w)$ outright: no allowance for Theorem 3's "
    r"$(\epsilon + \epsilon^{1/4})\, \mathrm{poly}(b, r, \mu_0, \mu_1, \mu_2)$, so the check does "
    r"not test that term.",
    control=Control(
        r"the $\epsilon$-SOPSPs of $x \mapsto w^T V f_\theta(x)$, the network without the "
        "skip, on the same instances and paths: Theorem 3 does not cover it"
    ),
)
def theorem_3_approximate(ctx: Context) -> Evidence:
    """Every iterate of Corollary 1's searches that is an eps-SOPSP on the bounded domain, its excess over the
    best linear predictor on the ball against the stated tolerance; the control: the paths without the skip."""
    sop = _sopsp(_search(ctx, skip=True), skip=True)
    sop_no_skip = _sopsp(_search(ctx, skip=False), skip=False)
    rows = []
    for eps in THM3_EPS:
        n_res, ex_res = _level(sop, eps)
        n_ns, ex_ns = _level(sop_no_skip, eps)
        rows.append(
            {
                r"$\epsilon$": eps,
                "points (residual)": n_res,
                "largest excess / s (residual)": max(ex_res, default=math.nan),
                "points (no skip)": n_ns,
                "largest excess / s (no skip)": max(ex_ns, default=math.nan),
            }
        )
    counts = [sum(q["count"][e] for q in sop) for e in THM3_EPS]
    statement = Check.combine(
        [
            Check.at_least(counts, 1, what=r"$\epsilon$-SOPSPs found at each level"),
            _thm3_check(sop, "largest excess / s per instance and level vs 0"),
        ],
        what="no worse than linear, with no tolerance",
    )
    return Evidence(
        statement=statement,
        control=_thm3_check(sop_no_skip, "the same without the skip"),
        data={"rows": rows},
        glue={
            "shamir_thm3_b": float(THM3_BOUND),
            "shamir_thm3_points": int(sum(r["points (residual)"] for r in rows)),
            # NaN marks a level without points (then the count check fails): not max()'s order-dependent pick
            "shamir_thm3_worst": float(np.nanmax([r["largest excess / s (residual)"] for r in rows])),
        },
    )


CLAIMS.not_checkable(
    "shamir/thm-3",
    paper="shamir",
    ref="Theorem 3 (statement per review 003)",
    source=REVIEW,
    section="shamir-corollary-1",
    statement=r"The bound of Theorem 3 with its polynomial $\mathrm{poly}(b, r, \mu_0, \mu_1, \mu_2)$.",
    reason="the review leaves the polynomial unspecified and the paper's text is not "
    "available, so its constant cannot be compared with anything; the book's question "
    "shamir/thm-3-approximate asks only whether the points found are no worse than linear, "
    r"which leaves the $(\epsilon + \epsilon^{1/4})$ term untested",
    needs="the printed polynomial of Theorem 3, not available here",
    rests_on=("shamir/thm-1", "shamir/thm-2"),
)


# --- Regularisation and constraints create spurious minima -----------------------------------------------------
def _sweep(ctx: Context) -> dict:
    """Every verified local minimum for each eps, penalty (no ball) and radius (no penalty) of the sweep."""
    cfg = ctx.cfg
    return ctx.shared(
        "landscape sweep",
        lambda: {e: S.landscape_sweep(e, cfg.sweep_penalties, cfg.sweep_radii) for e in cfg.sweep_eps},
    )


def _plain(ctx: Context) -> list[dict]:
    """The same search on the plain objective (no penalty, no ball) at each eps of the sweep: the control of
    both landscape claims."""
    return ctx.shared("plain landscape", lambda: [S.landscape_sweep(e, penalties=(0.0,))[0] for e in ctx.cfg.sweep_eps])


def _spurious(sweep: dict, kind: str) -> tuple[list[float], list[float], str]:
    """The spurious minima's values for one setting, the best linear value beside each, where they occur."""
    rows = [r for rows_e in sweep.values() for r in rows_e if r["setting"] == kind]
    values = [m["value"] for r in rows for m in r["spurious"]]
    linear = [r["linear_optimum"] for r in rows for m in r["spurious"]]
    where = sorted({r["parameter"] for r in rows if r["spurious"]})
    return values, linear, in_words(where) if where else "none"


def _worse_than_linear(values: list[float], linear: list[float]) -> int:
    """How many spurious minima are worse than the best linear predictor under the same penalty or on the same
    ball: the book's comparison, reported beside the verdicts, not part of them (the review says only that the
    minima are spurious)."""
    return int(sum(v > lin for v, lin in zip(values, linear)))


def _sweep_rows(sweep: dict, kind: str) -> list[dict]:
    out = []
    for e, rows_e in sweep.items():
        for r in rows_e:
            if r["setting"] != kind:
                continue
            found = "; ".join(f"({m['point'][0]:.3f}, {m['point'][1]:.3f}): {m['value']:.4g}" for m in r["spurious"])
            out.append(
                {
                    r"$\epsilon$": e,
                    "setting": r["setting"],
                    r"$\lambda$ or radius": r["parameter"],
                    "spurious minima: value": found or "none",
                    "global minimum": r["global_value"],
                    "best linear": r["linear_optimum"],
                }
            )
    return out


def _ball_window_rows(sweep: dict) -> tuple[list[dict], int, int]:
    """Per eps of the sweep, the radii at which the search found a spurious minimum beside those the closed form
    :func:`~resnet_theory.shamir.ball_bottom_left_minimum_radii` predicts (``1/eps < R < d``), and at how many of the
    sweep's radii the two agree (an explanation of the table, not part of a verdict)."""
    rows, agree, n_radii = [], 0, 0
    for e, rows_e in sweep.items():
        low, high = S.ball_bottom_left_minimum_radii(e)
        radii = [(r["parameter"], bool(r["spurious"])) for r in rows_e if r["setting"] == "radius"]
        predicted = [radius for radius, _ in radii if low < radius < high]
        found = [radius for radius, spurious in radii if spurious]
        agree += sum((low < radius < high) == spurious for radius, spurious in radii)
        n_radii += len(radii)
        rows.append(
            {
                r"$\epsilon$": e,
                r"$1/\epsilon$": low,
                "$d$": high,
                r"radii in $(1/\epsilon, d)$": ", ".join(f"{radius:g}" for radius in predicted) or "none",
                "radii with a spurious minimum found": ", ".join(f"{radius:g}" for radius in found) or "none",
            }
        )
    return rows, agree, n_radii


def _plain_control(ctx: Context) -> Check:
    found = sum(len(row["spurious"]) for row in _plain(ctx))
    return Check.at_least([found], 1, what=r"spurious minima of the plain objective, at the sweep's $\epsilon$")


@CLAIMS.checked(
    "shamir/figure-penalty",
    paper="shamir",
    ref="Section 4 (per the NeurIPS reviews); review 003's figure, panel (b)",
    source=REVIEW,
    section="shamir-landscapes",
    statement=r"With a norm penalty $\frac{\lambda}{2}\|(w, v)\|^2$ added, Example "
    r"1's objective has a spurious (non-global) local minimum (the review says a regularisation term; the "
    r"squared norm is our reading).",
    control=Control(
        r"the same search on the plain objective (no penalty), at the sweep's $\epsilon$: Corollary 1 "
        "says it has no local minimum above the best linear predictor, and "
        "the claim is about what the penalty adds"
    ),
)
def figure_penalty(ctx: Context) -> Evidence:
    """The sweep over the penalties fixed in advance: a spurious minimum exists; the control: the plain objective
    has none. How many are worse than the penalised linear optimum is glued beside the verdict (the book's
    comparison, not the review's statement)."""
    sweep = _sweep(ctx)
    values, linear, where = _spurious(sweep, "penalty")
    eps_text = [f"{e:g}" for e in ctx.cfg.sweep_eps]
    statement = Check.at_least([len(values)], 1, what="spurious minima over the pre-set penalties")
    return Evidence(
        statement=statement,
        control=_plain_control(ctx),
        data={"rows": _sweep_rows(sweep, "penalty")},
        glue={
            "shamir_pen_with": where,
            "shamir_pen_spurious_n": len(values),
            "shamir_pen_spurious_worse": _worse_than_linear(values, linear),
            "shamir_sweep_eps": f"ε = {eps_text[0]}"
            if len(eps_text) == 1
            else f"ε in {in_words(eps_text)} (pooled over ε)",
        },
    )


@CLAIMS.checked(
    "shamir/figure-ball",
    paper="shamir",
    ref="Section 4 (per the NeurIPS reviews); review 003's figure, panel (c)",
    source=REVIEW,
    section="shamir-landscapes",
    statement="With $(w, v)$ constrained to a norm ball, Example 1's objective has a "
    "spurious local minimum in the bottom left.",
    control=Control(
        r"the same search on the plain objective (no ball), at the sweep's $\epsilon$: Corollary 1 says "
        "it has no local minimum above the best linear predictor, and the "
        "claim is about what the constraint adds"
    ),
)
def figure_ball(ctx: Context) -> Evidence:
    """The sweep over the radii fixed in advance: a spurious minimum exists and lies in the bottom-left quadrant;
    the control: the plain objective has none. How many are worse than the linear optimum on the ball is glued
    beside the verdict (the book's comparison, not the review's statement)."""
    sweep = _sweep(ctx)
    values, linear, where = _spurious(sweep, "radius")
    corners = [
        m["point"][0] < 0 and m["point"][1] < 0
        for rows_e in sweep.values()
        for r in rows_e
        if r["setting"] == "radius"
        for m in r["spurious"]
    ]
    statement = Check.combine(
        [
            Check.at_least([len(values)], 1, what="spurious minima over the pre-set radii"),
            Check.all_of(corners or [False], what="each lies in the bottom-left quadrant"),
        ],
        what="radius sweep",
    )
    window_rows, agree, n_radii = _ball_window_rows(sweep)
    return Evidence(
        statement=statement,
        control=_plain_control(ctx),
        data={"rows": _sweep_rows(sweep, "radius"), "window_rows": window_rows},
        glue={
            "shamir_ball_with": where,
            "shamir_ball_spurious_n": len(values),
            "shamir_ball_spurious_worse": _worse_than_linear(values, linear),
            "shamir_ball_window_agree": agree,
            "shamir_ball_window_n": n_radii,
        },
    )


# --- Theorem 4: a skip connection to the output makes SGD provably competitive ---------------------------------
def _theorem_4_runs(ctx: Context) -> dict:
    """The output-skip runs, the control on a small ball, the original architecture and a constant-step run."""
    cfg = ctx.cfg
    seed = int(ctx.rng("shamir/thm-4").integers(0, 10_000))
    few = max(2, cfg.sgd_runs // 4)
    stride = S.SEED_STRIDE * seed
    return {
        "main": S.theorem_4_rates(cfg.sgd_steps, cfg.sgd_runs, seed),
        "control": S.theorem_4_rates(cfg.sgd_steps, few, stride + 2, radius=T4_CONTROL_RADIUS, comparator_outside=True),
        "original": S.theorem_4_rates(cfg.sgd_steps, few, stride + 1, architecture="original"),
        "flat": S.theorem_4_rates(cfg.sgd_steps, 2, stride + 3, plateau_after=cfg.plateau_after),
    }


def _bound(run: dict, horizons) -> np.ndarray:
    return S.theorem_4_bound(horizons, run["radius"], run["lipschitz"], run["loss_range"], T4_DELTA)


@CLAIMS.checked(
    "shamir/thm-4",
    paper="shamir",
    ref="Theorem 4 (statement per review 003)",
    source=REVIEW_THEOREM_4,
    section="shamir-theorem-4",
    statement=r"Projected SGD on $x \mapsto w^\top x + v^\top f_\theta(x)$ over "
    r"closed convex sets, loss $l$-Lipschitz and bounded by $r$ on $M_1$: with "
    r"probability $1 - \delta$ the objective (the review writes $F(w_t, v_t, \theta_t)$; our "
    r"reading: the average over the iterates $t \le T$) is at most "
    r"$\min_{(u, 0) \in M_1} F_{\mathrm{lin}}(u) + O((b l + r \sqrt{\log(1/\delta)}) "
    r"/ \sqrt{T})$. Tested with our constants (reconstruction): $3 b G / \sqrt{T} + b "
    rf"G \sqrt{{2 \log(2/\delta) / T}}$, $\delta = {T4_DELTA:g}$, every run and every $T$.",
    control=Control(
        f"projected SGD on a ball of radius {T4_CONTROL_RADIUS:g}, which "
        rf"excludes $u^*$ (norm {S.THEOREM_4['u_norm']:g}), with the gap measured against $F_{{\mathrm{{lin}}}}(u^*)$: "
        "the theorem compares only with linear predictors inside the ball"
    ),
)
def theorem_4(ctx: Context) -> Evidence:
    """Our explicit bound against the measured average excess risk at every horizon and in every run; the
    control: the same on a ball that excludes ``u*``. The original architecture and a run whose step stops
    shrinking are shown for contrast (no verdict rests on them)."""
    runs = _theorem_4_runs(ctx)
    t4, out, orig, flat = runs["main"], runs["control"], runs["original"], runs["flat"]
    H, gaps = t4["horizons"], t4["gap"]
    bound, bound_out = _bound(t4, H), _bound(out, H)
    t_min = int(H[-1]) // 64  # the slope of the last six doublings of T
    exponents = S.rate_exponents(H, gaps, t_min)
    fitted = H >= t_min
    mean_gap, out_mean, flat_gap = gaps.mean(axis=0), out["gap"].mean(axis=0), float(flat["gap"][:, -1].mean())
    crossed = out_mean > bound_out  # where the control's mean is above its bound
    return Evidence(
        statement=Check.at_most(
            gaps,
            np.broadcast_to(bound, gaps.shape),
            what=f"average excess risk vs our explicit bound, $b = {t4['radius']:g}$",
        ),
        control=Check.at_most(
            out["gap"],
            np.broadcast_to(bound_out, out["gap"].shape),
            what=f"the same on a ball of radius {T4_CONTROL_RADIUS:g}",
        ),
        data={
            "horizons": H,
            "gap": gaps,
            "bound": bound,
            "radius": t4["radius"],
            "delta": T4_DELTA,
            "t_min": t_min,
            "control_gap": out_mean,
            "control_bound": bound_out,
            "original_gap": orig["gap"].mean(axis=0),
            "flat_gap": flat["gap"].mean(axis=0),
            "control_radius": T4_CONTROL_RADIUS,
            "plateau_after": ctx.cfg.plateau_after,
        },
        glue={
            "shamir_t4_runs": len(gaps),
            "shamir_t4_tmin": t_min,
            "shamir_T_last": int(H[-1]),
            "shamir_t4_beta": float(exponents.mean()),
            "shamir_t4_beta_se": float(exponents.std(ddof=1) / math.sqrt(len(exponents))),
            "shamir_t4_gap_se_rel": float((t4["gap_standard_error"] / gaps)[:, fitted].max()),
            "shamir_t4_bound_ratio": float((bound / gaps).min()),
            "shamir_t4_bound_last": float(bound[-1]),
            "shamir_gap_last": float(mean_gap[-1]),
            "shamir_t4_control_radius": float(T4_CONTROL_RADIUS),
            "shamir_t4_plateau": int(ctx.cfg.plateau_after),
            "shamir_t4_control_runs": len(out["gap"]),
            "shamir_t4_control_gap": float(out["gap"][:, -1].min()),
            "shamir_t4_control_bound": float(bound_out[-1]),
            "shamir_t4_control_first_T": int(H[crossed][0]) if crossed.any() else 0,
            "shamir_gap_last_orig": float(orig["gap"].mean(axis=0)[-1]),
            "shamir_t4_flat_gap": flat_gap,
            "shamir_t4_flat_ratio": float(bound[-1] / flat_gap),
            "shamir_t4_flat_T": float(H[-1] * (bound[-1] / flat_gap) ** 2),
            "shamir_t4_orig_runs": len(orig["gap"]),
            "shamir_t4_delta": T4_DELTA,
            "shamir_t4_b": float(t4["radius"]),
            "shamir_t4_u_norm": float(t4["u_norm"]),
            **{f"shamir_t4_{name}": S.THEOREM_4[name] for name in ("d", "width", "depth", "n_fresh")},
        },
    )
