"""The claims of the smooth_maps chapter (``book/smooth_maps.md``): Bartlett, Evans & Long (arXiv 1804.05012),
read from the paper's abstract, the notes on Bartlett's 2017 talk (review 002) and the quotation of Theorem 1's
hypotheses and rate in MathOverflow question 310744 (a secondary restatement). Each claim is declared once,
beside the function that computes its evidence; the chapter narrates the construction and calls
:meth:`resnet_theory.claims.chapter.Chapter.check` for each. The mathematics is :mod:`resnet_theory.smooth`.

The paper's full text, and with it its printed proofs, is not available to the book: no claim here names the
printed results its proof rests on (``rests_on`` stays empty).
"""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import sympy
import torch

from .. import smooth
from ..checks import compare_gradients, compare_hessians, sympy_derivatives
from ..fits import fit_power_law
from ..tables import in_words
from . import Check
from .context import Context, Knob, ProfileTable
from .registry import ClaimSet
from .spec import Control, Evidence, Source

PROFILE = ProfileTable(
    rate_depths=Knob([4, 8, 16, 32], [4, 8, 16, 32, 64, 128, 256], "depths $m$ of the rate fits", tiny=[2, 4]),
    rate_points=Knob(256, 2048, "points per Lipschitz estimate", tiny=32),
    certify_points=Knob(20000, 40000, "grid points per certified bound", tiny=5000),
    n_instances=Knob(300, 5000, "gradient-bound instances (the control draws more, the factor below)", tiny=150),
    picture_layers=Knob(5, 5, r"layers in the grid pictures (odd: $h, h^{-1}, \dots, h$ ends on $h$)"),
    linear_method=Knob(
        "logarithm", "logarithm", "linear split in the nonlinear construction", choices=smooth.LINEAR_METHODS
    ),
)

CLAIMS = ClaimSet("smooth_maps", PROFILE)

TALK_REVIEW = Source.review("the notes on Bartlett's 2017 talk (review 002)")

#: The maps the theorem covers: (name of :func:`resnet_theory.smooth.example_map`, dimension).
CASES = (("swirl", 2), ("sine-shear", 1), ("sine-shear", 3), ("tanh-residual", 4))


def _seed(ctx: Context, key: str) -> int:
    """An integer seed of its own for ``key`` (for the library's functions that take one)."""
    return int(ctx.rng(key).integers(2**31 - 1))


def _torch_generator(ctx: Context, key: str) -> torch.Generator:
    return torch.Generator().manual_seed(_seed(ctx, key))


# --- the chapter's maps --------------------------------------------------------------------------------------
def map_seed(ctx: Context) -> int:
    """The seed of the chapter's example maps (:func:`resnet_theory.smooth.example_map`), from the chapter's."""
    return _seed(ctx, "bartlett-evans-long/maps")


def example_maps(ctx: Context) -> dict[str, tuple]:
    """``"name, d=dim" -> (h, dim)`` for :data:`CASES`: the maps the warm-up, the pictures and the
    representation claims use (one set per context)."""
    return ctx.shared(
        "maps", lambda: {f"{n}, d={d}": (smooth.example_map(n, d, seed=map_seed(ctx)), d) for n, d in CASES}
    )


#: The strength ``c`` of the ruled-out maps (:func:`resnet_theory.smooth.ruled_out_map`): the Hölder map
#: ``x (1 + c |x|^(1/2))`` and the cusp map ``(g(x_1), x_2)``, ``g(t) = (c/3)(1 - (1 - t/c)^3)``, singular at
#: ``x_1 = c``.
RULED_OUT_STRENGTH = 0.6
#: The radii ``|x|`` at which the Hölder map's ``||h'(x) - I|| / |x|`` is measured (bounded if h' were Lipschitz).
HOLDER_RADII = (1e-2, 1e-4, 1e-6)


def ruled_out_maps() -> dict[str, tuple]:
    """``name -> (h, 2)`` for the maps of the plane the representation theorem rules out (the controls)."""
    return {n: (smooth.ruled_out_map(n, strength=RULED_OUT_STRENGTH), 2) for n in smooth.RULED_OUT_MAPS}


# --- the representation result: certificates and rates, uniform and geometric scales ---------------------------
_NOT_COVERED = (
    rf"the Hölder map $x (1 + {RULED_OUT_STRENGTH:g} |x|^{{1/2}})$ (bi-Lipschitz, but $h'$ is not "
    r"Lipschitz: not smooth; its hand-derived $\sup \|h''\|$ is infinite, so it has no certificate by "
    r"derivation) and the cusp map $(g(x_1), x_2)$ with "
    rf"$g' = (1 - x_1/{RULED_OUT_STRENGTH:g})^2$ (smooth, but $h^{{-1}}$ is not Lipschitz: not "
    "bi-Lipschitz, so no near-identity composition equals it; whether the grid certifies it is computed); the "
    "same construction, certificates and estimates, one control per map, each of which must fail"
)
#: The composition must reproduce h to this relative error at these depths (part of both representation checks).
EXACT_RTOL, EXACT_DEPTHS = 1e-9, (1, 3, 12)
#: ``m eps(m)`` growing by more than this factor over the depths is what a ``log m / m`` rate shows (prose only).
GROWING_FACTOR = 1.5


def _representation(ctx: Context) -> tuple[dict, dict]:
    """Certificates per map and :class:`~resnet_theory.smooth.RepresentationEvidence` per (map, spacing), for
    the covered maps and the ruled-out ones: shared by both representation claims."""

    def compute():
        cfg, seed = ctx.cfg, _seed(ctx, "bartlett-evans-long/representation")
        certificates, evidence = {}, {}
        for label, (h, d) in {**example_maps(ctx), **ruled_out_maps()}.items():
            certificates[label] = smooth.try_rate_certificate(h, d, grid_points=cfg.certify_points)
            for spacing in smooth.SPACINGS:
                evidence[label, spacing] = smooth.representation_evidence(
                    h, d, cfg.rate_depths, spacing, label=label.split(",")[0], linear=cfg.linear_method,
                    n_points=cfg.rate_points, certify_points=cfg.certify_points, seed=seed,
                    certificate=certificates[label], exact_depths=EXACT_DEPTHS,
                )  # fmt: skip
        return certificates, evidence

    return ctx.shared("representation", compute)


def typeset_label(label: str) -> str:
    """A map's label as a reader sees it: ``"swirl, d=2"`` -> ``"swirl, $d = 2$"``."""
    return re.sub(r", d=(\d+)$", r", $d = \1$", label)


def _representation_check(evidence: dict, labels, spacing: str, rate: str) -> Check:
    """Per map: a finite certificate exists, the composition reproduces h, the cell-wise certified bound lies
    below the certificate's rate, the attained lower estimates below the cell-wise bound."""
    parts = []
    for label in labels:
        e = evidence[label, spacing]
        shown = typeset_label(label)
        exists = f"{shown}: a finite certificate {rate} exists"
        parts += [
            Check.all_of([math.isfinite(e.constant)], what=exists + (f" (no: {e.reason})" * bool(e.reason))),
            Check.at_most(
                e.exact_errors,
                EXACT_RTOL,
                what=rf"{shown}: $|h_m \circ \dots \circ h_1 - h| / |h|$, $m = {', '.join(map(str, EXACT_DEPTHS))}$",
            ),
        ]
        with np.errstate(invalid="ignore"):  # inf vs inf without a certificate: fails
            parts += [
                Check.at_most(e.certified, e.rate_bound(), what=f"{shown}: cell-wise certified vs {rate}"),
                Check.at_most(e.eps, e.certified, what=f"{shown}: attained vs cell-wise certified"),
            ]
    return Check.combine(parts, what=f"{spacing} scales")


def _representation_controls(evidence: dict, spacing: str, rate: str) -> tuple[Check, ...]:
    """The control: the same check on each ruled-out map, one control per map, each of which must fail. Pooled
    into one check, the Hölder map (whose hand-derived ``sup ||h''||`` is infinite, so it never has a
    certificate) would make the control fail whatever the certificate does on the cusp map, where its failure is
    computed (``g'`` cannot be kept invertible on the grid)."""
    return tuple(_representation_check(evidence, [label], spacing, rate) for label in smooth.RULED_OUT_MAPS)


def _growth(e) -> float:
    """``m eps(m)`` at the largest depth over its value at the smallest."""
    return float(e.ms[-1] * e.eps[-1] / (e.ms[0] * e.eps[0]))


def _control_rows(evidence: dict, spacing: str) -> list[dict]:
    rows = []
    for label in smooth.RULED_OUT_MAPS:
        e = evidence[label, spacing]
        rows.append(
            {"map": typeset_label(label), "spacing": spacing}
            | {rf"$\varepsilon({int(m)})$": float(v) for m, v in zip(e.ms, e.eps)}
            | {r"growth of $m\,\varepsilon(m)$": _growth(e), "certified max": float(e.certified.max()),
               "constant": float(e.constant), "error": float(e.exact_errors.max())}
        )  # fmt: skip
    return rows


def _certificate_rows(certificates: dict) -> list[dict]:
    rows = []
    for label, (c, why) in certificates.items():
        # no certificate: an em dash in every number's place (no finite constant exists), the last column says why
        values = (
            [float(v) for v in (c.log_norm, c.curvature, c.inverse_bound, c.cell_radius, c.constant, c.log_constant)]
            if c
            else ["\u2014"] * 6
        )
        names = [r"$\|L\|$", r"$\Lambda$", "$S$", "cell radius", "$C$ (uniform)", "$C'$ (geometric)"]
        rows.append({"map": typeset_label(label)} | dict(zip(names, values)) | {"no certificate because": why})
    return rows


#: The points of the ball at which every map's Jacobian is computed three ways (their first ``d`` coordinates).
JACOBIAN_POINTS = (
    np.array([0.3, -0.4, 0.1, 0.2]),
    np.array([0.05, 0.2, -0.3, 0.0]),
    np.array([-0.7, 0.1, 0.2, -0.1]),
)


def jacobian_witness_rows(maps: dict) -> list[dict]:
    """The Jacobian of every map (``label -> (h, dim)``) three ways at three points of the ball: SymPy (from
    the map's formula, :func:`resnet_theory.smooth.sympy_map`), autograd and central differences; per map the
    largest relative disagreement of each pair. The chapter shows it beside the representation claims, whose
    deviations are all built from these Jacobians."""
    rows = []
    for label, (h, d) in maps.items():
        components, xs = smooth.sympy_map(h)
        exact = [sympy_derivatives(c, xs, simplify=False, hessian=False).gradient for c in components]
        reports = [
            compare_gradients(
                lambda p, h=h, k=k: h(p[None])[0, k], [p[:d] for p in JACOBIAN_POINTS], closed_form={"sympy": exact[k]}
            )
            for k in range(len(components))
        ]
        worst = {key: max(r.max_rel_error[key] for r in reports) for key in reports[0].max_rel_error}
        rows.append(
            {"map": typeset_label(label)} | worst | {"agree": "yes" if all(r.check().holds for r in reports) else "NO"}
        )
    return rows


def _ruled_out_diagnostics() -> dict:
    """Why the ruled-out maps admit no certificate: the cusp map's smallest singular value at (0.6, 0), and
    the Holder map's ``||h'(x) - I|| / |x|`` on an axis (bounded if h' were Lipschitz)."""
    ruled_out = ruled_out_maps()
    cusp, holder = ruled_out["cusp"][0], ruled_out["holder"][0]
    corner = torch.tensor([[RULED_OUT_STRENGTH, 0.0]], dtype=torch.float64)
    cusp_sigma = float(smooth.singular_values(smooth.batch_jacobian(cusp, corner))[0, -1])
    quotients = []
    for r in HOLDER_RADII:
        x = torch.tensor([[r, 0.0]], dtype=torch.float64)
        deviation = smooth.batch_jacobian(holder, x)[0] - torch.eye(2, dtype=torch.float64)
        quotients.append(float(torch.linalg.matrix_norm(deviation, ord=2)) / r)
    return {"smooth_cusp_sigma": cusp_sigma, "smooth_holder_quotient_min": min(quotients),
            "smooth_holder_quotient_max": max(quotients)}  # fmt: skip


def _slope_glue(rates: list, key: str) -> dict:
    slopes = [r.slope for r in rates]
    return {f"smooth_slope_{key}_min": float(min(slopes)), f"smooth_slope_{key}_max": float(max(slopes))}


@CLAIMS.checked(
    "bartlett-evans-long/representation-rate-inverse-m",
    paper="bartlett-evans-long",
    ref="Abstract, first sentence (the representation result); hypotheses of Theorem 1 as MathOverflow "
    "question 310744 quotes it",
    source=Source.abstract(
        "the abstract's wording; the hypotheses a bounded domain and $\\det h'(x_0) > 0$ are added from Theorem 1 "
        "as MathOverflow question 310744 quotes it (a secondary restatement, not the paper's text)"
    ),
    section="smooth-rate",
    statement=r"Any smooth bi-Lipschitz $h$ is exactly a composition $h_m \circ "
    r"\cdots \circ h_1$ with each $h_i - \mathrm{Id}$ Lipschitz, the constant "
    r"decreasing inversely with $m$: $\max_i \|h_i - \mathrm{Id}\|_L \le C/m$. Added "
    r"from Theorem 1 as MathOverflow question 310744 quotes it: $\det h'(x_0) > 0$ for some "
    r"$x_0$, a bounded domain (here a ball).",
    control=Control("Uniform scales on " + _NOT_COVERED + "."),
)
def representation_rate_inverse_m(ctx: Context) -> Evidence:
    """Uniform scales: a certificate ``C/m`` valid at every depth for each covered map, the composition exact,
    the cell-wise certified bounds below ``C/m`` and the attained deviations below those."""
    certificates, evidence = _representation(ctx)
    maps = example_maps(ctx)
    rates = [evidence[label, "uniform"] for label in maps]
    ms = np.asarray(ctx.cfg.rate_depths, dtype=float)
    control_rows = _control_rows(evidence, "uniform")
    glue = _slope_glue(rates, "uni") | _ruled_out_diagnostics()
    glue |= {
        "smooth_rate_points": ctx.cfg.rate_points,
        "smooth_certify_points": ctx.cfg.certify_points,
        "smooth_log_ref_slope": fit_power_law(ms, np.log(ms) / ms)[0],
        "smooth_uni_growth_max": max(_growth(r) for r in rates),
        "smooth_n_maps": len(maps),
        "smooth_m_min": int(ms[0]),
        "smooth_m_max": int(ms[-1]),
        "smooth_m_max_full": int(PROFILE.knobs["rate_depths"].value("full")[-1]),
        "smooth_exact_rtol": f"{EXACT_RTOL:g}",
        "smooth_exact_depths": in_words(EXACT_DEPTHS),
        "smooth_ruled_c": f"{RULED_OUT_STRENGTH:g}",
        "smooth_holder_r_max": f"{max(HOLDER_RADII):g}",
        "smooth_holder_r_min": f"{min(HOLDER_RADII):g}",
        # the covered maps only: the prose quotes it beside their certificates (the cusp map's error was the largest)
        "smooth_exact_err": float(max(e.exact_errors.max() for (label, _), e in evidence.items() if label in maps)),
        "smooth_cusp_worst": float(max(e.eps.max() for (k, _), e in evidence.items() if k == "cusp")),
        "smooth_holder_growth": control_rows[0][r"growth of $m\,\varepsilon(m)$"],
    }
    return Evidence(
        statement=_representation_check(evidence, maps, "uniform", "$C/m$"),
        control=_representation_controls(evidence, "uniform", "$C/m$"),
        data={
            "certificates": _certificate_rows(certificates),
            "rates": rates,
            "control_rows": control_rows,
        },
        glue=glue,
    )


@CLAIMS.checked(
    "bartlett-evans-long/representation-rate",
    paper="bartlett-evans-long",
    ref="Main result of Bartlett's talk (review 002); Theorem 1 as MathOverflow question 310744 quotes it "
    "(a secondary restatement), with the same rate",
    source=Source.review(
        f"{TALK_REVIEW.detail}; the hypotheses a bounded domain and $\\det h'(x_0) > 0$ are added from Theorem 1 "
        "as MathOverflow question 310744 quotes it (a secondary restatement, not the paper's text)"
    ),
    section="smooth-rate",
    statement=r"A smooth invertible $h$ (Lipschitz derivative and inverse) is exactly "
    r"$h_m \circ \cdots \circ h_1$ with $\max_i \|h_i - \mathrm{Id}\|_L = O(\log m / "
    r"m)$ (talk notes; the same rate as Theorem 1 quoted on MathOverflow, question 310744); "
    r"the talk builds the layers by rescaling, $h(a_i x)/a_i$ over scales $a_1 < \dots < a_m$; the "
    r"normalisation $h(0) = 0$, $h'(0) = I$ this needs, and the spacing of the scales, are ours. Added from that "
    r"quotation: $\det h'(x_0) > 0$ for some "
    r"$x_0$, a bounded domain (here a ball).",
    control=Control("Geometric scales on " + _NOT_COVERED + "."),
)
def representation_rate(ctx: Context) -> Evidence:
    """Geometric scales: the same evidence as the abstract's claim, against the certificate's ``C' log m / m``."""
    _, evidence = _representation(ctx)
    maps = example_maps(ctx)
    rates = [evidence[label, "geometric"] for label in maps]
    glue = _slope_glue(rates, "geo") | {
        "smooth_geo_growing": int(sum(_growth(r) > GROWING_FACTOR for r in rates)),
        "smooth_growing_factor": f"{GROWING_FACTOR:g}",
    }
    return Evidence(
        statement=_representation_check(evidence, maps, "geometric", r"$C' \log m/m$"),
        control=_representation_controls(evidence, "geometric", r"$C' \log m/m$"),
        data={"rates": rates, "control_rows": _control_rows(evidence, "geometric")},
        glue=glue,
    )


# --- optimisation: the functional-gradient bound --------------------------------------------------------------
#: The small instance on which the derivative is computed four ways: blocks, dimension, hidden width, the blocks'
#: certified bound ``||W2|| ||W1||``, distinct inputs.
WITNESS_BLOCKS, WITNESS_DIM, WITNESS_WIDTH, WITNESS_EPS, WITNESS_INPUTS = 3, 2, 2, 0.6, 3


def _derivative_witnesses(gen: torch.Generator) -> list:
    """``dQ/d delta_i`` on a small instance (:data:`WITNESS_BLOCKS` blocks, :data:`WITNESS_INPUTS` inputs), four
    ways: SymPy, autograd, central differences and the closed form from the blocks' Jacobians; one report per
    layer."""
    blocks = smooth.random_residual_blocks(WITNESS_BLOCKS, WITNESS_DIM, WITNESS_WIDTH, WITNESS_EPS, gen)
    problem = smooth.random_empirical_problem(WITNESS_INPUTS, WITNESS_DIM, gen)

    def risk_in_layer(i):
        def q(flat):
            deltas = [torch.zeros_like(problem.atoms) for _ in blocks]
            deltas[i] = flat.reshape(problem.atoms.shape)
            return smooth.empirical_risk(blocks, problem, deltas)

        return q

    def witnesses(i):
        expr, symbols = smooth.functional_risk_sympy(blocks, problem, i + 1)
        sd = sympy_derivatives(expr, symbols, simplify=False, hessian=False)
        closed = smooth.functional_gradient_closed_form(blocks, problem, i + 1).ravel()
        return {"sympy": sd.gradient, "closed form": lambda p: closed}

    start = [np.zeros(problem.atoms.numel())]
    return [compare_gradients(risk_in_layer(i), start, closed_form=witnesses(i)) for i in range(len(blocks))]


#: The aligned instances' inputs lie within about this distance of the origin, where the depth factor is tight.
ALIGNED_ATOM_SCALE = 1e-3


def _aligned_instances(gen: torch.Generator) -> list[tuple]:
    """``m`` copies of ``z -> z - eps tanh(z)`` with inputs near the origin, where the depth factor is tight:
    ``(eps, m, norms, sharper bounds, the talk's bound, bounds one layer stronger)`` per instance."""
    aligned = []
    for m in (2, 4, 8):
        for eps in (0.1, 0.3, 0.6, 0.9):
            problem = smooth.random_empirical_problem(8, 3, gen, atom_scale=ALIGNED_ATOM_SCALE)
            fg = smooth.functional_gradient(smooth.aligned_residual_blocks(m, 3, eps), problem)
            stronger = (1 - eps) ** (m - np.arange(1, m + 1) - 1.0) * fg.distance
            aligned.append((eps, m, fg.norms, fg.sharper_bounds(eps), fg.talk_bound(eps), stronger))
    return aligned


def _span(values) -> str:
    """A range of integers as a reader writes it: ``range(1, 9)`` -> "1 to 8"."""
    values = list(values)
    return f"{min(values)} to {max(values)}"


def _instance_ranges() -> dict:
    """The ranges :func:`resnet_theory.smooth.gradient_bound_instances` draws from (its defaults, which the check
    uses), and how often :func:`resnet_theory.smooth.random_empirical_problem` repeats an input at most."""
    drawn = inspect.signature(smooth.gradient_bound_instances).parameters
    low, high = drawn["eps_range"].default
    return {
        "smooth_inst_depths": _span(drawn["depths"].default),
        "smooth_inst_dims": _span(drawn["dims"].default),
        "smooth_inst_atoms": _span(drawn["n_atoms"].default),
        "smooth_inst_eps_low": f"{low:g}",
        "smooth_inst_eps_high": f"{high:g}",
        "smooth_inst_repeats": inspect.signature(smooth.random_empirical_problem).parameters["max_repeats"].default,
    }


def _inner_layer_glue(instances) -> dict:
    """The smallest ratios over the layers ``i < m`` (where the depth factor matters), to the talk's bound
    and to our sharper form ``(1 - eps)^(m - i) ||h - h*||``."""
    deeper = instances.depths > 1
    inner, sharper = [], []
    for n, p, e, m, dist, k in zip(
        instances.norms, instances.talk, instances.eps, instances.depths, instances.distances, deeper
    ):
        if k:
            inner.append(n[:-1].min() / p)
            sharper.append((n / ((1 - e) ** (m - np.arange(1, m + 1)) * dist))[:-1].min())
    return {"smooth_min_inner_ratio": float(min(inner)), "smooth_min_sharper_inner": float(min(sharper))}


#: The negative control's instances: drawn as the check's, but with ``eps`` in this range, outside the theorem's
#: ``eps < 1``, and at these depths, odd so that the talk's factor ``(1 - eps)^(m - 1)`` stays positive and its
#: inequality still says something; ``CONTROL_DRAW_FACTOR`` times as many instances as the check.
CONTROL_EPS, CONTROL_DEPTHS, CONTROL_DRAW_FACTOR = (1.0, 2.0), (3, 5, 7), 2
_CONTROL_EPS_TEX = rf"${CONTROL_EPS[0]:g} < \epsilon < {CONTROL_EPS[1]:g}$"


@CLAIMS.checked(
    "bartlett-evans-long/functional-gradient",
    paper="bartlett-evans-long",
    ref="Theorem in Bartlett's talk (review 002); abstract (its consequence)",
    source=TALK_REVIEW,
    section="smooth-optimisation",
    statement=r"If $\|h_i - \mathrm{Id}\|_L \le \varepsilon < 1$ for all $i$, then "
    r"$\|D_{h_i} Q(h)\| \ge (1-\varepsilon)^{m-1} (Q(h) - Q(h^*)) / \|h - h^*\|$ for "
    r"every $i$ (norms: $L^2$ of the sample, our reading).",
    control=Control(
        f"Random compositions drawn as for the check but with {_CONTROL_EPS_TEX} "
        rf"(outside the theorem's $\epsilon < 1$; odd depths {in_words(CONTROL_DEPTHS)} so the talk's "
        "factor stays positive), whose layers may have singular Jacobians."
    ),
)
def functional_gradient_bound(ctx: Context) -> Evidence:
    """The derivative three ways, then the talk's bound on random instances with ``eps < 1`` and on aligned
    (tight) ones; the control: random instances with ``eps`` in
    :data:`CONTROL_EPS` at :data:`CONTROL_DEPTHS`."""
    gen = _torch_generator(ctx, "bartlett-evans-long/functional-gradient")
    reports = _derivative_witnesses(gen)
    n = ctx.cfg.n_instances
    instances = smooth.gradient_bound_instances(n, gen)
    outside = smooth.gradient_bound_instances(
        CONTROL_DRAW_FACTOR * n, gen, eps_range=CONTROL_EPS, depths=CONTROL_DEPTHS
    )
    aligned = _aligned_instances(gen)
    aligned_stated = [norms.min() / p for _, _, norms, _, p, _ in aligned]
    statement = Check.combine(
        [
            Check.at_least(
                instances.ratios,
                1.0,
                rtol=1e-12,
                what=r"$\min_i \|D_{h_i} Q\|$ / the talk's bound, random $\epsilon < 1$",
            ),
            Check.at_least(
                aligned_stated, 1.0, rtol=1e-12, what=r"$\min_i \|D_{h_i} Q\|$ / the talk's bound, aligned (tight)"
            ),
        ]
        + [r.check(f"dQ/d delta_{i + 1}, four witnesses") for i, r in enumerate(reports)],
        what="bound and its derivative",
    )
    control = Check.at_least(
        outside.ratios, 1.0, rtol=1e-12, what=r"$\min_i \|D_{h_i} Q\|$ / the talk's bound, random " + _CONTROL_EPS_TEX
    )
    aligned_sharper = np.concatenate([norms / s for _, _, norms, s, _, _ in aligned])
    aligned_stronger = np.concatenate([norms[:-1] / st[:-1] for _, _, norms, _, _, st in aligned])
    aligned_rows = [
        {r"$\varepsilon$": e, "$m$": m, r"$\min_i \|D_{h_i} Q\|$ / sharper": float((norms / s).min()),
         r"$\max_i \|D_{h_i} Q\|$ / sharper": float((norms / s).max()),
         r"$\|D_{h_1} Q\|$ / the talk's bound": float(norms[0] / p)}
        for e, m, norms, s, p, _ in aligned
    ]  # fmt: skip
    glue = (
        _inner_layer_glue(instances)
        | _instance_ranges()
        | {
            "smooth_n_instances": n,
            "smooth_control_n": CONTROL_DRAW_FACTOR * n,
            "smooth_witness_blocks": WITNESS_BLOCKS,
            "smooth_witness_dim": WITNESS_DIM,
            "smooth_witness_width": WITNESS_WIDTH,
            "smooth_witness_inputs": WITNESS_INPUTS,
            "smooth_aligned_scale": f"{ALIGNED_ATOM_SCALE:g}",
            "smooth_control_eps_low": f"{CONTROL_EPS[0]:g}",
            "smooth_control_eps_high": f"{CONTROL_EPS[1]:g}",
            "smooth_control_depths": in_words(CONTROL_DEPTHS),
            "smooth_control_violations": int((outside.ratios < 1).sum()),
            "smooth_control_min_ratio": float(outside.ratios.min()),
            "smooth_min_talk_ratio": float(instances.ratios.min()),
            "smooth_aligned_sharper_min": float(aligned_sharper.min()),
            "smooth_aligned_sharper_max": float(aligned_sharper.max()),
            "smooth_aligned_stronger_max": float(aligned_stronger.max()),
            "smooth_aligned_talk_max": float(max(row[r"$\|D_{h_1} Q\|$ / the talk's bound"] for row in aligned_rows)),
        }
    )
    data = {"witnesses": reports, "ratios": instances.ratios, "control_ratios": outside.ratios, "aligned": aligned_rows}
    return Evidence(statement=statement, control=control, data=data, glue=glue)


# --- the negative result in parameter space: a saddle at the identity, a strict local minimum near it ---------
_THETA = sympy.symbols("V1 V2 W1 W2 b1 b2")
#: The examples' sizes: the local minimum's certified deviation ``||f - Id||_L`` (the output scale s is chosen for
#: it, and every point must be within it), the distance at which the gradient's typical size is measured, how far
#: one input of the symmetric data is moved to break the saddle, and the layers of the function-space control.
DEVIATION, NEARBY, SADDLE_SHIFT, FUNCTION_SPACE_LAYERS = 0.1, 0.1, 1e-3, 4
#: Critical: the gradient norm at most this fraction of its typical size nearby; not minimal: the loss gap at
#: least this fraction of the identity's loss.
CRITICAL_RTOL, GAP_RTOL = 1e-9, 1e-6


def _sympy_sigmoid(t):
    return 1 / (1 + sympy.exp(-t))


def _loss_derivatives(example: smooth.SigmoidSaddle):
    """SymPy: the loss as an exact expression in theta, with its gradient and Hessian."""

    def network(x):
        x = float(x)
        return x + sum(_THETA[k] * _sympy_sigmoid(_THETA[2 + k] * x + _THETA[4 + k]) for k in range(2))

    expr = sum((network(x) - float(y)) ** 2 for x, y in zip(example.x, example.y))
    return sympy_derivatives(expr / (2 * len(example.x)), _THETA, simplify=False)


def _gradient_scale(sd, theta, directions) -> float:
    """The gradient's typical size :data:`NEARBY` away from ``theta``: the median over ``directions`` (that
    long)."""
    return float(np.median([np.linalg.norm(sd.gradient(theta + v)) for v in directions]))


def _losses(example: smooth.SigmoidSaddle, theta) -> tuple[float, float, float, float]:
    """(loss at theta, at theta*, at the identity with the same W and b, certified ||f_theta - Id||_L)."""
    identity = np.concatenate([[0.0, 0.0], theta[2:]])
    return (
        float(example.loss(theta)),
        float(example.loss(example.theta_star)),
        float(example.loss(identity)),
        smooth.sigmoid_deviation_bound(theta),
    )


def _functional_view(example: smooth.SigmoidSaddle, theta, m: int = FUNCTION_SPACE_LAYERS):
    """``D_{h_i} Q`` of ``f_theta`` written as ``m`` near-identity layers (the rescaling construction)."""
    n = len(example.x)
    weights = torch.full((n,), 1 / n, dtype=torch.float64)
    data = smooth.EmpiricalProblem(example.x[:, None], weights, torch.arange(n), example.y[:, None])
    layers = smooth.near_identity_factors(example.as_map(theta), m, 1, linear="logarithm")
    return smooth.functional_gradient(layers, data)


def _critical_not_minimal(label, derivative_norm, scale, loss, loss_star, loss_identity, deviation) -> Check:
    return Check.combine(
        [
            Check.at_most(
                derivative_norm,
                CRITICAL_RTOL * scale,
                what=f"derivative norm vs {CRITICAL_RTOL:g} × its size nearby",
            ),
            Check.at_least(
                loss - loss_star,
                GAP_RTOL * loss_identity,
                what=f"loss gap vs {GAP_RTOL:g} × the identity's loss",
            ),
            Check.at_most(
                deviation,
                DEVIATION * (1 + 1e-9),
                what=rf"certified $\|f - \mathrm{{Id}}\|_L$ vs {DEVIATION:g}",
            ),
        ],
        what=f"critical, not minimal, near the identity: {label}",
    )


def _saddle_rows(saddle: smooth.SigmoidSaddle, sd, gradient_norm: float, scale: float) -> dict:
    theta0 = saddle.theta_critical
    x_moved = saddle.x + SADDLE_SHIFT * torch.eye(len(saddle.x))[0]
    y_moved = saddle.network(torch.as_tensor(saddle.theta_star), x_moved)
    shifted = smooth.SigmoidSaddle(x_moved, y_moved, saddle.theta_star, theta0)
    hessian = sd.hessian(theta0)
    return {
        r"gradient norm at $\theta_0$ (SymPy)": gradient_norm,
        _SHIFTED: np.linalg.norm(_loss_derivatives(shifted).gradient(theta0)),
        _NEARBY: scale,
        r"loss at $\theta_0$ (the identity map)": saddle.loss(theta0),
        r"loss at $\theta^*$ (realisable target)": saddle.loss(saddle.theta_star),
        r"largest $|\partial^2 L / \partial V_k \partial W_k|$": np.abs(hessian[[0, 1], [2, 3]]).max(),
        "smallest Hessian eigenvalue": np.linalg.eigvalsh(hessian).min(),
    }


def _local_minimum_rows(
    local: smooth.SigmoidSaddle, sd, gradient_norm: float, scale: float
) -> tuple[dict, np.ndarray, np.ndarray]:
    """The table's rows, and the Hessian's eigenvalues in the coordinates ``(V/s, W, b)`` and in theta."""
    theta = local.theta_critical
    s_scale = np.array([local.output_scale] * 2 + [1.0] * 4)
    hessian = sd.hessian(theta)
    eigs = np.linalg.eigvalsh(hessian * np.outer(s_scale, s_scale))
    rows = {
        "gradient norm at the local minimum (SymPy)": gradient_norm,
        _NEARBY: scale,
        "loss at the local minimum": local.loss(theta),
        r"loss at $\theta^*$ (realisable target)": local.loss(local.theta_star),
        "loss at the identity ($V = 0$)": local.loss(np.concatenate([[0.0, 0.0], theta[2:]])),
        r"certified $\|f - \mathrm{Id}\|_L$, local minimum": smooth.sigmoid_deviation_bound(theta),
        r"certified $\|f - \mathrm{Id}\|_L$, target": smooth.sigmoid_deviation_bound(local.theta_star),
        "Hessian in $(V/s, W, b)$: smallest eigenvalue": eigs.min(),
        "Hessian in $(V/s, W, b)$: largest eigenvalue": eigs.max(),
    }
    return rows, eigs, np.linalg.eigvalsh(hessian)


_SHIFTED = f"the same, one input moved by {SADDLE_SHIFT:g}"
_NEARBY = f"median gradient norm {NEARBY:g} away"


def _quantity_rows(rows: dict) -> list[dict]:
    return [{"quantity": k, "value": float(v)} for k, v in rows.items()]


def _parameter_space_glue(saddle_rows, local_rows, local_eigs, raw_eigs, losses, hessians, fspace, inputs):
    return {
        "smooth_saddle_grad": float(saddle_rows[r"gradient norm at $\theta_0$ (SymPy)"]),
        "smooth_saddle_shifted": float(saddle_rows[_SHIFTED]),
        "smooth_saddle_shift": f"{SADDLE_SHIFT:g}",
        "smooth_deviation": f"{DEVIATION:g}",
        "smooth_fs_layers": FUNCTION_SPACE_LAYERS,
        "smooth_lm_inputs": len(inputs),
        "smooth_lm_x_low": float(inputs.min()),
        "smooth_lm_x_high": float(inputs.max()),
        "smooth_saddle_gap": losses["saddle"][0] - losses["saddle"][1],
        "smooth_saddle_min_eig": float(saddle_rows["smallest Hessian eigenvalue"]),
        "smooth_lm_grad": float(local_rows["gradient norm at the local minimum (SymPy)"]),
        "smooth_lm_gap": losses["local minimum"][0] - losses["local minimum"][1],
        "smooth_lm_gap_rel": losses["local minimum"][0] / losses["local minimum"][2],
        "smooth_lm_deviation": float(losses["local minimum"][3]),
        "smooth_lm_min_eig": float(local_eigs.min()),
        "smooth_lm_cond": float(local_eigs.max() / local_eigs.min()),
        "smooth_lm_raw_min_eig": float(raw_eigs.min()),
        "smooth_lm_hessian_diff": float(max(hessians.max_abs_error.values())),
        "smooth_fs_min": float(min(fg.norms.min() / fg.distance for fg in fspace.values())),
    }


@CLAIMS.checked(
    "bartlett-evans-long/parameter-space",
    paper="bartlett-evans-long",
    ref="Abstract (negative result); the examples are ours",
    source=Source.abstract(),
    section="smooth-negative",
    statement="For a fixed-size residual network with sigmoid units there are "
    "near-identity critical points (in parameter space) that are not global "
    "minima, even for a realisable target.",
    control=Control(
        "The same two near-identity maps and data, differentiated with "
        rf"respect to the functions $h_i$ of a {FUNCTION_SPACE_LAYERS}-layer near-identity "
        "composition (the abstract's function-space result rules out a "
        "suboptimal critical point)."
    ),
)
def parameter_space(ctx: Context) -> Evidence:
    """Our two examples (a saddle at the identity on symmetric data, a strict local minimum near it on generic
    data): critical in parameter space, not minimal, near the identity, with every gradient and Hessian three
    ways; the control differentiates the same maps with respect to the layers of a near-identity composition."""
    u = ctx.rng("bartlett-evans-long/parameter-space").standard_normal((20, 6))
    directions = NEARBY * u / np.linalg.norm(u, axis=1, keepdims=True)
    saddle, local = smooth.sigmoid_saddle_example(), smooth.sigmoid_local_minimum_example(deviation=DEVIATION)
    points = {
        "saddle": (saddle, _loss_derivatives(saddle), saddle.theta_critical),
        "local minimum": (local, _loss_derivatives(local), local.theta_critical),
    }
    scales = {k: _gradient_scale(sd, t, directions) for k, (_, sd, t) in points.items()}
    gradient_norms = {k: float(np.linalg.norm(sd.gradient(t))) for k, (_, sd, t) in points.items()}
    losses = {k: _losses(ex, t) for k, (ex, _, t) in points.items()}
    witnesses = {
        k: (
            compare_gradients(ex.loss, [t], closed_form={"sympy": sd.gradient}),
            compare_hessians(ex.loss, [t], closed_form={"sympy": sd.hessian}),
        )
        for k, (ex, sd, t) in points.items()
    }
    fspace = {k: _functional_view(ex, t) for k, (ex, _, t) in points.items()}
    in_parameters = [
        _critical_not_minimal(f"{k}, parameters", gradient_norms[k], scales[k], *losses[k]) for k in points
    ]
    in_functions = [
        _critical_not_minimal(f"{k}, functions, some layer", fg.norms.min(), fg.distance, *losses[k])
        for k, fg in fspace.items()
    ]
    witness_checks = [
        r.check(f"{k} witnesses") for pair in witnesses.values() for r, k in zip(pair, ("gradient", "Hessian"))
    ]
    saddle_rows = _saddle_rows(saddle, points["saddle"][1], gradient_norms["saddle"], scales["saddle"])
    local_rows, local_eigs, raw_eigs = _local_minimum_rows(
        local, points["local minimum"][1], gradient_norms["local minimum"], scales["local minimum"]
    )
    glue = _parameter_space_glue(
        saddle_rows, local_rows, local_eigs, raw_eigs, losses, witnesses["local minimum"][1], fspace, local.x
    )
    function_space_rows = [
        {
            "point": k,
            rf"$\|D_{{h_i}} Q\|,\ i = 1, \dots, {FUNCTION_SPACE_LAYERS}$": ", ".join(f"{v:.3e}" for v in fg.norms),
            r"$\|h - h^*\|$": fg.distance,
        }
        for k, fg in fspace.items()
    ]
    return Evidence(
        statement=Check.combine(in_parameters + witness_checks, what="our two examples"),
        control=tuple(in_functions),
        data={
            "saddle_rows": _quantity_rows(saddle_rows),
            "local_rows": _quantity_rows(local_rows),
            "hessian_witnesses": witnesses["local minimum"][1],
            "function_space": function_space_rows,
        },
        glue=glue,
    )


# --- what needs the paper's full text ----------------------------------------------------------------------
CLAIMS.not_checkable(
    "bartlett-evans-long/constants",
    paper="bartlett-evans-long",
    ref="Main theorem (full text)",
    source=Source.abstract(
        "the abstract states the representation result and the function-space result; their construction, "
        "constants and norms are in the full text only, which the book has not seen"
    ),
    section="smooth-construction",
    statement="The paper's own construction and its constants in the representation theorem, and the norm "
    "its functional-gradient bound uses.",
    reason="the abstract, the talk notes (review 002) and a quotation of Theorem 1's hypotheses and rate on "
    "MathOverflow (question 310744) are available to us; none gives the construction, the constants or the "
    "norm of the bound",
    needs="the paper's full text (arXiv 1804.05012), which this build does not have",
)
