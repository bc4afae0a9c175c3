"""Linear residual networks: Hardt & Ma (2017), Section 2, and Bartlett, Helmbold & Long (2018).

Hardt & Ma study the linear residual network ``x -> (I + A_l) ... (I + A_1) x`` fitted to
``y = R x + xi`` with ``xi ~ N(0, I_d)`` and ``Sigma = E[x x^T]``. This module implements, in the order of
the chapter ``book/linear.md``,

- the population risk of Claim 2.3 (:func:`risk`), its gradient (Lemma 2.4) in the order the chain rule
  gives (:func:`risk_gradient`) and in the order the ICLR text prints (:func:`risk_gradient_printed_order`);
- the Theorem 2.1 construction (:func:`factorize_near_identity`, :func:`factorization_plan`,
  :func:`compose`; the polar split :func:`polar_split`), the constant ``gamma(R)`` and two bounds on
  ``max_i ||A_i||`` (:func:`theorem_2_1_bound`, the printed ICLR one; :func:`theorem_2_1_bound_early`, a review's);
- the gradient lower bound of eq. (2.3) as printed (:func:`gradient_lower_bound_printed`) and as its
  proof actually yields it (:func:`gradient_lower_bound`);
- gradient descent on the risk (:func:`risk_gradient_descent`) and, for Bartlett, Helmbold & Long,
  gradient descent from the identity on ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2`` with an optional
  regulariser toward the identity (:func:`identity_init_gd`, numpy or torch, CPU or GPU).

Conventions: a network is an array ``A`` of shape ``(depth, d, d)``; ``A[0]`` acts first, so the network's
matrix is ``compose(A) = (I + A[depth-1]) ... (I + A[0])``. Norms ``||.||`` are spectral norms unless
written ``||.||_F``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
import scipy.optimize
import sympy as sp
import torch
from torch.func import hessian

from . import checks, validate

__all__ = [
    "best_factorization_in_ball",
    "best_factorizations_in_ball",
    "BHL_STEP_SCALE",
    "bhl_step_size",
    "compose",
    "CRITICAL_RTOL",
    "critical_point_search",
    "CriticalPointSearch",
    "det_loss_floor",
    "FACTORIZATION_METHODS",
    "factorization_plan",
    "FactorizationPlan",
    "factorize_near_identity",
    "gamma",
    "GDResult",
    "gradient_lower_bound",
    "gradient_lower_bound_printed",
    "identity_gd_steps_to",
    "identity_gd_trace",
    "identity_gd_trace_many",
    "identity_init_gd",
    "IdentityGDTrace",
    "layer_norms",
    "polar_split",
    "random_layers_in_ball",
    "random_matrix_with_gamma",
    "random_rotation",
    "random_theorem_2_1_target",
    "risk",
    "risk_by_quadrature",
    "risk_gradient",
    "risk_gradient_descent",
    "risk_gradient_printed_order",
    "rotation_root",
    "symmetric_identity_gd",
    "symmetric_identity_gd_many",
    "SymmetricGDRun",
    "sympy_risk",
    "sympy_risk_gradient",
    "TARGET_KINDS",
    "theorem_2_1_bound",
    "theorem_2_1_bound_early",
    "theorem_2_1_bound_integer",
    "theorem_2_1_min_depth",
    "theorem_2_1_ratio",
    "theorem_2_1_sweep",
    "theorem_2_1_worst_ratio_search",
    "torch_risk",
]

# Relative tolerance for deciding that a matrix is symmetric / a singular value equals one.
_SYMMETRY_RTOL = 1e-12


# --- input validation -----------------------------------------------------------------------------------
def _as_layers(A, name: str = "A") -> np.ndarray:
    arr = validate.finite_array(name, A, allow_empty=True)
    if arr.ndim != 3 or arr.shape[1] != arr.shape[2]:
        raise ValueError(f"{name} must have shape (depth, d, d), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} needs depth >= 1 and d >= 1, got shape {arr.shape}")
    return arr


def _check_depth_budget(depth: int, d: int, *, layers: bool) -> None:
    """Refuse depths whose integer-split search (a Python loop over ``depth``) or whose ``depth`` layers of
    ``d x d`` would take longer or more memory than this machine can give."""
    validate.check_budget("depth", depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=depth)
    if layers:
        validate.check_budget("depth", 8.0 * depth * d * d, validate.memory_limit_bytes(), value=depth)


def _as_covariance(Sigma, d: int) -> np.ndarray:
    S = validate.square_matrix("Sigma", Sigma)
    if S.shape[0] != d:
        raise ValueError(f"Sigma must be {d} x {d} to match the layers, got shape {S.shape}")
    scale = max(1.0, float(np.max(np.abs(S))))
    if np.max(np.abs(S - S.T)) > _SYMMETRY_RTOL * scale * 1e3:
        raise ValueError("Sigma = E[x x^T] must be symmetric")
    if np.min(np.linalg.eigvalsh((S + S.T) / 2)) < -1e-12 * scale:
        raise ValueError("Sigma = E[x x^T] must be positive semidefinite (it has a negative eigenvalue)")
    return (S + S.T) / 2


def _check_risk_inputs(A, R, Sigma):
    A = _as_layers(A)
    R = validate.square_matrix("R", R)
    if R.shape[0] != A.shape[1]:
        raise ValueError(f"R is {R.shape[0]} x {R.shape[0]} but the layers are {A.shape[1]} x {A.shape[2]}")
    return A, R, _as_covariance(Sigma, A.shape[1])


# --- Section 2, the setting: the network's matrix, and random instances ---------------------------------
def compose(A) -> np.ndarray:
    """The network's matrix ``(I + A[depth-1]) ... (I + A[0])`` for layers ``A`` of shape ``(depth, d, d)``."""
    A = _as_layers(A)
    d = A.shape[1]
    P = np.eye(d)
    for layer in A:
        P = P + layer @ P  # (I + A_i) P
    return P


def layer_norms(A) -> np.ndarray:
    """Spectral norms ``||A_i||`` of every layer (identical layers are computed once)."""
    A = _as_layers(A)
    unique, inverse = np.unique(A.reshape(A.shape[0], -1), axis=0, return_inverse=True)
    norms = np.linalg.norm(unique.reshape(-1, A.shape[1], A.shape[2]), ord=2, axis=(1, 2))
    return norms[np.asarray(inverse).ravel()]


def _prefix_suffix(A):
    """``right[i] = (I+A_{i-1})...(I+A_0)`` and ``left[i] = (I+A_{l-1})...(I+A_{i+1})`` (0-based)."""
    depth, d, _ = A.shape
    right = np.empty_like(A)
    left = np.empty_like(A)
    P = np.eye(d)
    for i in range(depth):
        right[i] = P
        P = P + A[i] @ P
    Q = np.eye(d)
    for i in range(depth - 1, -1, -1):
        left[i] = Q
        Q = Q + Q @ A[i]
    return right, left, P


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def random_rotation(d, seed=None) -> np.ndarray:
    """A Haar-random matrix in SO(d)."""
    d = validate.positive_int("d", d)
    validate.check_budget("d", 3 * 8.0 * d * d, validate.memory_limit_bytes(), value=d)  # the matrix, its QR
    validate.check_budget("d", 2.0 * d**3, validate.OPS_LIMIT, what="work", unit="operations", value=d)
    Q, Rm = np.linalg.qr(_rng(seed).standard_normal((d, d)))
    Q = Q * np.sign(np.diag(Rm))[None, :]
    if np.linalg.det(Q) < 0:
        Q[:, 0] *= -1
    return Q


def random_matrix_with_gamma(d, target_gamma, seed=None, psd=False) -> np.ndarray:
    """A random ``R = U diag(s) V^T`` with ``det R > 0`` and ``gamma(R) = target_gamma`` exactly (up to rounding).

    The singular values are log-uniform in ``[e^-gamma, e^gamma]`` with one endpoint attained; ``psd=True``
    takes ``V = U`` (symmetric positive definite).
    """
    d = validate.positive_int("d", d)
    target_gamma = validate.non_negative_float("target_gamma", target_gamma)
    rng = _rng(seed)
    logs = rng.uniform(-target_gamma, target_gamma, size=d)
    logs[0] = target_gamma if rng.random() < 0.5 else -target_gamma
    U = random_rotation(d, rng)
    V = U if psd else random_rotation(d, rng)
    return (U * np.exp(logs)[None, :]) @ V.T


def random_layers_in_ball(depth, d, tau, seed=None, boundary=False) -> np.ndarray:
    """Random layers ``A`` of shape ``(depth, d, d)`` with ``||A_i|| = tau * u_i``, ``u_i ~ U(0, 1)``,
    Gaussian directions: random points of the ball ``max_i ||A_i|| <= tau`` (not uniform in it).
    ``boundary=True`` puts every layer on the boundary: ``||A_i|| = tau`` exactly."""
    depth = validate.positive_int("depth", depth)
    d = validate.positive_int("d", d)
    tau = validate.non_negative_float("tau", tau)
    validate.check_budget("(depth, d)", 16.0 * depth * d * d, validate.memory_limit_bytes(), value=(depth, d))
    rng = _rng(seed)
    A = rng.standard_normal((depth, d, d))
    u = np.ones(depth) if validate.boolean("boundary", boundary) else rng.uniform(0.0, 1.0, depth)
    scale = tau * u / np.linalg.norm(A, 2, axis=(1, 2))
    return A * scale[:, None, None]


# --- Claim 2.3: the risk is a weighted distance to R ----------------------------------------------------
def risk(A, R, Sigma) -> float:
    """Population risk ``E ||(I + A_l)...(I + A_1) x - y||^2`` for ``y = R x + xi``, ``xi ~ N(0, I_d)``.

    Equals ``||E Sigma^(1/2)||_F^2 + d = tr(E Sigma E^T) + d`` with ``E = compose(A) - R`` (Claim 2.3;
    the noise contributes ``E ||xi||^2 = d``).
    """
    A, R, Sigma = _check_risk_inputs(A, R, Sigma)
    E = compose(A) - R
    return float(np.trace(E @ Sigma @ E.T)) + A.shape[1]


def risk_by_quadrature(A, R, atoms, weights, noise_map=None) -> float:
    """The population risk computed from its definition (eq. 2.2), not from Claim 2.3's closed form.

    ``x`` takes the values ``atoms[m]`` (shape ``(n, d)``) with probabilities ``weights[m]``; the target is
    ``y = R x + xi`` with ``xi = noise_map @ x + eta`` (``noise_map`` defaults to zero: the setting of Section
    2, noise independent of x) and ``eta ~ N(0, I_d)``. The expectation over ``eta`` uses the two-point
    Gauss-Hermite rule in every coordinate (nodes +-1, weights 1/2), exact for the quadratic integrand, so
    the result is ``E ||(I + A_l)...(I + A_1) x - y||^2`` to rounding, for any A.
    """
    A = _as_layers(A)
    d = A.shape[1]
    R = validate.square_matrix("R", R)
    if R.shape[0] != d:
        raise ValueError(f"R is {R.shape[0]} x {R.shape[0]} but the layers are {d} x {d}")
    atoms = validate.finite_array("atoms", atoms, ndim=2)
    if atoms.shape[1] != d:
        raise ValueError(f"atoms must have shape (n, {d}), got {atoms.shape}")
    weights = validate.finite_array("weights", weights, shape=(atoms.shape[0],))
    if np.any(weights < 0) or not math.isclose(float(weights.sum()), 1.0, rel_tol=1e-12):
        raise ValueError("weights must be non-negative and sum to one")
    M = np.zeros((d, d)) if noise_map is None else validate.square_matrix("noise_map", noise_map)
    if M.shape[0] != d:
        raise ValueError(f"noise_map must be {d} x {d}, got shape {M.shape}")
    if d > 16:
        raise ValueError(f"the 2^d-node noise rule is limited to d <= 16, got d = {d}")
    nodes = np.array(np.meshgrid(*([[-1.0, 1.0]] * d), indexing="ij")).reshape(d, -1).T  # (2^d, d)
    residual = atoms @ (compose(A) - R - M).T  # P x - R x - M x, shape (n, d)
    sq = np.sum((residual[:, None, :] - nodes[None, :, :]) ** 2, axis=2)  # (n, 2^d)
    return float(weights @ sq.mean(axis=1))


# --- Lemma 2.4: the gradient of the risk (corrected and printed order), and its torch and SymPy witnesses ---
def risk_gradient(A, R, Sigma) -> np.ndarray:
    """``d risk / d A_i = 2 (I+A_{i+1})^T ... (I+A_l)^T E Sigma (I+A_1)^T ... (I+A_{i-1})^T``, shape (depth, d, d).

    That is ``2 L_i^T E Sigma R_i^T`` with ``L_i = (I+A_l)...(I+A_{i+1})`` and ``R_i = (I+A_{i-1})...(I+A_1)``.
    """
    A, R, Sigma = _check_risk_inputs(A, R, Sigma)
    right, left, P = _prefix_suffix(A)
    G = (P - R) @ Sigma
    return 2.0 * np.einsum("lji,jk,lmk->lim", left, G, right)


def risk_gradient_printed_order(A, R, Sigma) -> np.ndarray:
    """Lemma 2.4 as the ICLR text prints it: the transposed factors on each side in the opposite order,
    ``2 (I+A_l)^T ... (I+A_{i+1})^T E Sigma (I+A_{i-1})^T ... (I+A_1)^T``. Not the gradient when depth >= 3."""
    A, R, Sigma = _check_risk_inputs(A, R, Sigma)
    depth, d, _ = A.shape
    _, _, P = _prefix_suffix(A)
    G = (P - R) @ Sigma
    out = np.empty_like(A)
    for i in range(depth):
        left = np.eye(d)
        for j in range(depth - 1, i, -1):  # (I+A_l)^T (I+A_{l-1})^T ... (I+A_{i+1})^T
            left = left @ (np.eye(d) + A[j]).T
        right = np.eye(d)
        for j in range(i - 1, -1, -1):  # (I+A_{i-1})^T ... (I+A_1)^T
            right = right @ (np.eye(d) + A[j]).T
        out[i] = 2.0 * left @ G @ right
    return out


def torch_risk(depth, d, R, Sigma):
    """The risk as a torch function of one flat float64 vector of ``depth * d * d`` layer entries
    (``A[0]`` first, row-major), for the autograd and finite-difference witnesses of :mod:`resnet_theory.checks`."""
    depth, d = validate.positive_int("depth", depth), validate.positive_int("d", d)
    validate.check_budget("(depth, d)", 8.0 * depth * d * d, validate.memory_limit_bytes(), value=(depth, d))
    validate.check_budget("depth", depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=depth)
    _, R, Sigma = _check_risk_inputs(np.zeros((depth, d, d)), R, Sigma)
    R_t, S_t = torch.as_tensor(R), torch.as_tensor(Sigma)

    def f(v):
        if v.numel() != depth * d * d:
            raise ValueError(f"expected {depth * d * d} parameters, got {v.numel()}")
        A = v.reshape(depth, d, d)
        I = torch.eye(d, dtype=v.dtype)
        P = I
        for i in range(depth):
            P = (I + A[i]) @ P
        E = P - R_t
        return torch.trace(E @ S_t @ E.T) + d

    return f


def sympy_risk(depth, d, R, Sigma):
    """The risk ``tr(E Sigma E^T) + d`` as an exact SymPy expression in ``depth * d * d`` symbols ``a0, a1, ...``
    (same order as :func:`torch_risk`); ``R`` and ``Sigma`` are converted to exact rationals."""
    depth, d = validate.positive_int("depth", depth), validate.positive_int("d", d)
    validate.check_budget(
        "(depth, d)",
        d * d * float(1 + d) ** (2 * depth),
        1e6,
        what="work",
        unit="terms of the expanded risk",
        value=(depth, d),
    )
    _check_risk_inputs(np.zeros((depth, d, d)), R, Sigma)
    Rs = sp.Matrix(np.asarray(R, dtype=float).tolist()).applyfunc(sp.nsimplify)
    Ss = sp.Matrix(np.asarray(Sigma, dtype=float).tolist()).applyfunc(sp.nsimplify)
    symbols = sp.symbols(f"a0:{depth * d * d}")
    P = sp.eye(d)
    for i in range(depth):
        P = (sp.eye(d) + sp.Matrix(d, d, symbols[i * d * d : (i + 1) * d * d])) * P
    E = P - Rs
    return sp.expand((E * Ss * E.T).trace()) + d, symbols


def sympy_risk_gradient(depth, d, R, Sigma):
    """The exact gradient of :func:`sympy_risk`: its ``depth * d * d`` SymPy expressions and a numpy callable of
    the flat layers (the order of :func:`torch_risk`), from :func:`resnet_theory.checks.sympy_derivatives` with
    the risk differentiated as a polynomial and no Hessian."""
    sd = checks.sympy_derivatives(*sympy_risk(depth, d, R, Sigma), simplify=False, hessian=False, polynomial=True)
    return list(sd.gradient_exprs), sd.gradient


# --- Theorem 2.1: the constant gamma(R) and the bounds on max_i ||A_i|| ---------------------------------
def gamma(R) -> float:
    """``gamma(R) = max(|log s_max(R)|, |log s_min(R)|)`` for an invertible square ``R``."""
    R = validate.square_matrix("R", R)
    s = np.linalg.svd(R, compute_uv=False)
    if s[-1] <= 0:
        raise ValueError("R is singular (its smallest singular value is zero), so gamma(R) is infinite")
    return float(max(abs(math.log(s[0])), abs(math.log(s[-1]))))


def theorem_2_1_bound(R, depth) -> float:
    """The camera-ready (ICLR 2017) bound ``2 (sqrt(pi) + sqrt(3 gamma))^2 / depth`` on ``max_i ||A_i||``."""
    depth = validate.positive_int("depth", depth)
    g = gamma(R)
    return 2.0 * (math.sqrt(math.pi) + math.sqrt(3.0 * g)) ** 2 / depth


def theorem_2_1_bound_early(R, depth) -> float:
    """The bound ``(4 pi + 3 gamma) / depth`` on ``max_i ||A_i||`` as a review of the paper (PaperWhy) states
    Theorem 2.1; the printed ICLR text has :func:`theorem_2_1_bound`, and which version the review read is
    not known to us."""
    depth = validate.positive_int("depth", depth)
    return (4.0 * math.pi + 3.0 * gamma(R)) / depth


def theorem_2_1_bound_integer(R, depth) -> float:
    """What the construction guarantees with whole-number layer counts (our correction, not in the paper).

    The proof takes ``q = l sqrt(pi) / (2 (sqrt(pi) + sqrt(3 gamma)))`` rotation layers per side and
    ``p = l - 2q`` scaling layers as if they were real numbers. Rounding q down loses at most one layer per
    side, which amounts to replacing ``l`` by ``l - 2 (1 + sqrt(3 gamma / pi))``:
    ``max_i ||A_i|| <= 2 (sqrt(pi) + sqrt(3 gamma))^2 / (l - 2 - 2 sqrt(3 gamma / pi))`` for
    ``l >= 3 gamma`` and ``l > 2 + 2 sqrt(3 gamma / pi)``; ``inf`` for smaller ``l``.
    """
    depth = validate.positive_int("depth", depth)
    g = gamma(R)
    a, b = math.sqrt(math.pi), math.sqrt(3.0 * g)
    effective = depth - 2.0 * (a + b) / a
    if effective <= 0:
        return math.inf
    return 2.0 * (a + b) ** 2 / effective


def theorem_2_1_min_depth(R) -> int:
    """The smallest integer depth with ``depth >= 3 gamma(R)`` (the theorem's hypothesis), at least 1."""
    return max(1, math.ceil(3.0 * gamma(R) - 1e-12))


# --- Theorem 2.1: the construction (the polar split, and the SVD scheme of the proof) -------------------
@dataclass
class FactorizationPlan:
    """How :func:`factorize_near_identity` splits ``depth`` layers.

    ``kind`` is ``"psd"`` (symmetric positive definite R: every layer the same root), ``"polar"`` (p layers
    ``P^(1/p)`` then q layers ``Q^(1/q)`` for the polar split ``R = Q P``, ``q + p = depth``), ``"svd"`` (the
    proof's scheme: q layers for V^T, p scaling layers, q layers for U, ``2q + p = depth``), ``"depth-1"``
    (one layer ``R - I``) or ``"depth-2"`` (SVD scheme only: ``K^(1/2) V^T`` then ``U K^(1/2)``).
    ``rotation_norm`` and ``scaling_norm`` are the exact spectral norms of the rotation and scaling layers
    (0 when there are none).
    """

    kind: str
    depth: int
    q: int
    p: int
    rotation_norm: float
    scaling_norm: float
    rotation_angles: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @property
    def max_norm(self) -> float:
        return max(self.rotation_norm, self.scaling_norm)


def _check_invertible_oriented(R: np.ndarray) -> None:
    sign, logabsdet = np.linalg.slogdet(R)
    s = np.linalg.svd(R, compute_uv=False)
    if sign == 0 or s[-1] == 0:
        raise ValueError("R is singular (det R = 0): a product of invertible factors I + A_i cannot equal it")
    if s[-1] <= s[0] * np.finfo(float).eps * R.shape[0]:
        raise ValueError(
            f"R is too ill-conditioned to factorise in float64: its singular values run from {s[-1]:.3g} "
            f"to {s[0]:.3g} (condition number {s[0] / s[-1]:.3g}, beyond 1 / (d * machine epsilon)), so "
            f"the construction's roots cannot be computed accurately; R itself need not be singular"
        )
    if sign < 0:
        raise ValueError(
            "det R < 0: no near-identity factorisation exists. Every factor I + A with ||A|| < 1 has "
            "det(I + A) > 0 (t -> det(I + tA) never vanishes on [0, 1] and starts at 1), so any product of "
            "such factors has positive determinant"
        )


def _rotation_generator(Q: np.ndarray):
    """Real Schur form of ``Q`` in SO(d): ``Q = Z blockdiag(rot(theta_k), 1, ...) Z^T``.

    Returns ``Z`` and a list of ``(i, j, theta)``: the plane spanned by columns i, j of Z is rotated by theta.
    Pairs of -1 eigenvalues that LAPACK returns as two 1x1 blocks are paired into a rotation by pi.
    """
    d = Q.shape[0]
    T, Z = scipy.linalg.schur(Q, output="real")
    planes, minus_ones = [], []
    i = 0
    while i < d:
        if i + 1 < d and abs(T[i + 1, i]) > 1e-13:
            planes.append((i, i + 1))
            i += 2
        else:
            if T[i, i] < 0:
                minus_ones.append(i)
            i += 1
    if len(minus_ones) % 2:
        raise ValueError("internal: an orientation-reversing factor reached the rotation step")  # pragma: no cover
    planes += [(minus_ones[k], minus_ones[k + 1]) for k in range(0, len(minus_ones), 2)]
    rotations = []
    for a, b in planes:
        M = T[np.ix_([a, b], [a, b])]
        rotations.append((a, b, math.atan2(M[1, 0] - M[0, 1], M[0, 0] + M[1, 1])))
    return Z, rotations


def _rotation_root(Z, rotations, q: int) -> np.ndarray:
    """``S W S^T`` with W rotating each plane by theta / q, so that its q-th power is the rotation."""
    W = np.eye(Z.shape[0])
    for a, b, theta in rotations:
        c, s = math.cos(theta / q), math.sin(theta / q)
        W[a, a], W[a, b], W[b, a], W[b, b] = c, -s, s, c
    return Z @ W @ Z.T


def _scaling_norm(k: np.ndarray, p: int) -> float:
    return float(np.max(np.abs(k ** (1.0 / p) - 1.0)))


def _rotation_norms(angles: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``||Q^(1/q) - I||`` for each entry of ``q`` (0 where q = 0): ``max_k 2 |sin(theta_k / 2q)|``."""
    if not angles.size:
        return np.zeros(q.size)
    return np.where(q > 0, np.max(2 * np.abs(np.sin(angles[None, :] / (2 * np.maximum(q, 1)[:, None]))), axis=1), 0.0)


def _scaling_norms(k: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``max_j |k_j^(1/p) - 1|`` for each entry of ``p`` (0 where p = 0)."""
    return np.where(p > 0, np.max(np.abs(k[None, :] ** (1.0 / np.maximum(p, 1)[:, None]) - 1.0), axis=1), 0.0)


#: Rotation factors that each take q layers: one (Q) in the polar scheme, two (V^T and U) in the SVD scheme.
_ROTATION_FACTORS = {"polar": 1, "svd": 2}


def _trivial_factors(angles: np.ndarray, k: np.ndarray) -> tuple[bool, bool]:
    """Whether the rotation part (its plane angles) and the scaling part (its singular values ``k``) are the
    identity up to rounding."""
    return (angles.size == 0 or float(np.max(angles)) <= 1e-12), float(np.max(np.abs(np.log(k)))) <= 1e-12


def _admissible_splits(method: str, depths, rotation_trivial: bool, scaling_trivial: bool):
    """The whole-number splits of each depth in ``depths`` (an int or an array of them) that ``method`` may use:
    q layers per rotation factor and ``p = depth - r q`` scaling layers, ``r`` = 1 for ``"polar"``
    (``q + p = depth``) and 2 for ``"svd"`` (``2q + p = depth``). q = 0 only in the polar scheme and only when
    the rotation is the identity up to rounding; p = 0 only when the scaling is; the missing factor is then
    folded into a neighbouring layer. (Depth 1, depth 2 of the SVD scheme and symmetric positive definite
    targets are special cases that :func:`_plan` handles before asking for splits.)

    Returns ``(q, p, ok)``: the candidate q in increasing order, from the smallest allowed up to
    ``max(depths) // r``; ``p`` of shape ``np.shape(depths) + q.shape``; and ``ok``, the same shape, marking
    the admissible (depth, q) pairs (``p >= 0`` and the rules above).
    """
    r = _ROTATION_FACTORS[method]
    ell = np.asarray(depths)
    q = np.arange(0 if method == "polar" else 1, int(ell.max()) // r + 1)
    p = ell[..., None] - r * q
    ok = (p >= 0) & ~(((q == 0) & (not rotation_trivial)) | ((p == 0) & (not scaling_trivial)))
    return q, p, ok


def _best_split(angles: np.ndarray, k: np.ndarray, q: np.ndarray, p: np.ndarray):
    """Among the admissible splits ``(q[j], p[j])`` (q rotation layers by ``angles / q``, p scaling layers
    ``k^(1/p)``; q = 0 or p = 0 means none), the first whose largest layer norm beats every earlier one by
    more than 1e-15. Returns ``(largest norm, q, p, rotation norm, scaling norm)``."""
    rot, sca = _rotation_norms(angles, q), _scaling_norms(k, p)
    values = np.maximum(rot, sca).tolist()
    best = 0
    for j, value in enumerate(values):
        if value < values[best] - 1e-15:
            best = j
    return values[best], int(q[best]), int(p[best]), float(rot[best]), float(sca[best])


def _is_spd(R: np.ndarray) -> bool:
    if np.max(np.abs(R - R.T)) > _SYMMETRY_RTOL * np.max(np.abs(R)):
        return False
    return bool(np.min(np.linalg.eigvalsh((R + R.T) / 2)) > 0)


def _svd_oriented(R: np.ndarray):
    U, k, Vt = np.linalg.svd(R)
    if np.linalg.det(U) < 0:  # det R > 0 means det U = det V; flip one column of both
        U[:, -1] *= -1
        Vt[-1, :] *= -1
    return U, k, Vt


#: Constructions :func:`factorize_near_identity` offers: ``"polar"`` (default, the best one here) and
#: ``"svd"`` (the scheme of Hardt & Ma's proof of Theorem 2.1).
FACTORIZATION_METHODS = ("polar", "svd")


def _as_method(method) -> str:
    return validate.choice("method", method, FACTORIZATION_METHODS)


def _plan(R: np.ndarray, depth: int, method: str = "polar"):
    """Validated inputs -> (plan, pieces needed to build the layers)."""
    _check_invertible_oriented(R)
    d = R.shape[0]
    if depth == 1:
        return FactorizationPlan("depth-1", 1, 0, 0, float(np.linalg.norm(R - np.eye(d), 2)), 0.0), None
    if _is_spd(R):
        z, E = np.linalg.eigh((R + R.T) / 2)
        return FactorizationPlan("psd", depth, 0, depth, 0.0, _scaling_norm(z, depth)), (z, E)
    if method == "polar":
        return _plan_polar(R, depth)
    U, k, Vt = _svd_oriented(R)
    if depth == 2:
        half = np.sqrt(k)
        A1, A2 = half[:, None] * Vt - np.eye(d), U * half[None, :] - np.eye(d)
        norm = float(max(np.linalg.norm(A1, 2), np.linalg.norm(A2, 2)))
        return FactorizationPlan("depth-2", 2, 1, 0, norm, 0.0), (A1, A2)
    ZU, rotU = _rotation_generator(U)
    ZV, rotV = _rotation_generator(Vt)
    angles = np.abs(np.array([t for *_, t in rotU + rotV], dtype=float))
    # Integer split 2q + p = depth: among all admissible (q, p) take the one whose largest layer norm is
    # smallest (q >= 1; p >= 1 unless K = I up to rounding, in which case K is folded into a U layer).
    q, p, ok = _admissible_splits("svd", depth, *_trivial_factors(angles, k))
    _, q, p, rot, sca = _best_split(angles, k, q[ok], p[ok])
    plan = FactorizationPlan("svd", depth, q, p, rot, sca, angles)
    return plan, (U, k, Vt, ZU, rotU, ZV, rotV)


def polar_split(R) -> tuple[np.ndarray, np.ndarray]:
    """The polar split ``R = Q P`` (``scipy.linalg.polar``): Q orthogonal (in SO(d) when det R > 0) and
    ``P = (R^T R)^(1/2)``, symmetric positive semidefinite with R's singular values as its eigenvalues (positive
    definite when R is invertible). P is returned exactly symmetric, as the mean of it and its transpose."""
    R = validate.square_matrix("R", R)
    Q, P = scipy.linalg.polar(R)
    return Q, (P + P.T) / 2


def _plan_polar(R: np.ndarray, depth: int):
    """The polar split ``R = Q P`` (:func:`polar_split`; Q in SO(d) since det R > 0, P symmetric positive
    definite): p layers ``P^(1/p) - I`` act first, then q layers ``Q^(1/q) - I``; ``q + p = depth`` with the best
    q."""
    Q, P = polar_split(R)
    s, E = np.linalg.eigh(P)  # eigenvalues of P are the singular values of R
    Z, rotations = _rotation_generator(Q)
    angles = np.abs(np.array([t for *_, t in rotations], dtype=float))
    # q = 0 (p = 0) only when Q (P) is the identity up to rounding; it is then folded into another layer.
    q, p, ok = _admissible_splits("polar", depth, *_trivial_factors(angles, s))
    _, q, p, rot, sca = _best_split(angles, s, q[ok], p[ok])
    return FactorizationPlan("polar", depth, q, p, rot, sca, angles), (Q, s, E, Z, rotations)


def factorization_plan(R, depth, method: str = "polar") -> FactorizationPlan:
    """The split :func:`factorize_near_identity` uses for ``R`` at ``depth``, with the exact layer norms."""
    R = validate.square_matrix("R", R)
    depth = validate.positive_int("depth", depth)
    _check_depth_budget(depth, R.shape[0], layers=False)
    return _plan(R, depth, _as_method(method))[0]


def rotation_root(Q, q) -> np.ndarray:
    """A q-th root of a rotation ``Q`` in SO(d): ``S W S^T`` with ``Q = S D S^T`` its real Schur form and W
    turning each plane of D by ``theta_k / q``; ``||S W S^T - I|| = max_k 2 |sin(theta_k / 2q)|``.

    The layer of Hardt & Ma's construction is ``B = S W S^T - I`` (the text prints ``I - S W S^T``)."""
    Q = validate.square_matrix("Q", Q)
    q = validate.positive_int("q", q)
    if np.max(np.abs(Q @ Q.T - np.eye(Q.shape[0]))) > 1e-9 or np.linalg.det(Q) <= 0:
        raise ValueError("Q must be a rotation: orthogonal (Q Q^T = I) with det Q = +1")
    Z, rotations = _rotation_generator(Q)
    return _rotation_root(Z, rotations, q)


def factorize_near_identity(R, depth, method: str = "polar") -> np.ndarray:
    """Layers ``A`` of shape ``(depth, d, d)`` with ``compose(A) = R`` and small ``max_i ||A_i||``.

    ``method="polar"`` (default; the construction that meets both published constants of Hardt & Ma's
    Theorem 2.1 on every target we tried): write ``R = Q P`` (polar decomposition; Q is a rotation because
    det R > 0, P symmetric positive definite); p layers ``P^(1/p) - I`` act first, then q layers
    ``Q^(1/q) - I`` (:func:`rotation_root`), ``q + p = depth``, with the q whose largest layer norm is smallest.

    ``method="svd"``: the scheme of the paper's proof. Take the SVD ``R = U K V^T`` with U, V rotations
    (det R > 0 allows this), write each rotation in real Schur form and split its angles into q equal parts,
    and split K into p equal roots: q layers for ``V^T``, p for K, q for U, ``2q + p = depth``. The integer
    split is the admissible one with the smallest largest layer norm (:func:`factorization_plan`).
    Depth 2 gives ``K^(1/2) V^T - I`` and ``U K^(1/2) - I``.

    Both: for symmetric positive definite ``R = E diag(z) E^T`` every layer is ``E diag(z^(1/depth)) E^T - I``;
    depth 1 gives ``R - I``.

    Raises ``ValueError`` for a non-square, non-2-D or non-finite ``R``, for ``det R <= 0``, for
    ``depth < 1`` and for an unknown method; ``TypeError`` for a non-integer depth.
    """
    R = validate.square_matrix("R", R)
    depth = validate.positive_int("depth", depth)
    _check_depth_budget(depth, R.shape[0], layers=True)
    plan, pieces = _plan(R, depth, _as_method(method))
    d = R.shape[0]
    I = np.eye(d)
    if plan.kind == "polar":
        Q, s, E, Z, rotations = pieces
        q, p = plan.q, plan.p
        A = np.empty((depth, d, d))
        if p:
            A[:p] = (E * s ** (1.0 / p)) @ E.T - I
        if q:
            A[p:] = _rotation_root(Z, rotations, q) - I
        if not p:  # P = I up to rounding: fold it into the first rotation layer
            A[0] = (A[0] + I) @ ((E * s) @ E.T) - I
        if not q:  # Q = I up to rounding: fold it into the last scaling layer
            A[-1] = Q @ (A[-1] + I) - I
        return A
    if plan.kind == "depth-1":
        return (R - I)[None].copy()
    if plan.kind == "depth-2":
        return np.stack(pieces)
    if plan.kind == "psd":
        z, E = pieces
        layer = (E * z ** (1.0 / depth)) @ E.T - I
        return np.repeat(layer[None], depth, axis=0)
    U, k, Vt, ZU, rotU, ZV, rotV = pieces
    q, p = plan.q, plan.p
    BV = _rotation_root(ZV, rotV, q) - I
    BU = _rotation_root(ZU, rotU, q) - I
    A = np.empty((depth, d, d))
    A[:q] = BV
    if p:
        A[q : q + p] = np.diag(k ** (1.0 / p)) - I
    A[q + p :] = BU
    if not p:  # K = I up to rounding: fold it into the first U layer
        A[q] = (BU + I) @ np.diag(k) - I
    return A


# --- Theorem 2.1: the statement on random targets, an adversarial search, the best factorisation in a ball ---
#: Families of targets for the Theorem 2.1 statement check (:func:`random_theorem_2_1_target`).
TARGET_KINDS = ("near-pi rotation x stretch", "symmetric positive definite", "random")


def random_theorem_2_1_target(kind, d, seed=None) -> np.ndarray:
    """A random ``R`` with ``det R > 0`` from one of :data:`TARGET_KINDS`: a rotation turning every plane by
    nearly pi composed with a slight random stretch (gamma log-uniform in [e^-6, 1]; the case that strains
    whole-number layer counts most), a symmetric positive definite matrix, or a random ``U diag(s) V^T``
    (gamma log-uniform in [e^-5, e^1.2])."""
    kind = validate.choice("kind", kind, TARGET_KINDS)
    d = validate.positive_int("d", d)
    rng = _rng(seed)
    if kind == "random":
        return random_matrix_with_gamma(d, float(np.exp(rng.uniform(-5.0, 1.2))), rng)
    if kind == "symmetric positive definite":
        return random_matrix_with_gamma(d, float(np.exp(rng.uniform(-5.0, 1.2))), rng, psd=True)
    W = np.eye(d)
    for k in range(d // 2):
        theta = math.pi - abs(rng.normal(0.0, 0.05))
        c, s = math.cos(theta), math.sin(theta)
        W[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = [[c, -s], [s, c]]
    Q = random_rotation(d, rng)
    stretch = random_matrix_with_gamma(d, float(np.exp(rng.uniform(-6.0, 0.0))), rng)
    return Q @ W @ Q.T @ stretch


def theorem_2_1_ratio(R, depths, method: str = "polar") -> np.ndarray:
    """``max_i ||A_i|| / bound`` at each depth, for the layers :func:`factorization_plan` predicts with
    ``method``, against the smaller of the two bounds (the printed one and the review's).

    Uses one decomposition per depth (no layers are built): fast enough for a search. The chapter confirms
    the worst cases it finds with :func:`factorize_near_identity` and :func:`layer_norms`.
    """
    R = validate.square_matrix("R", R)
    validate.check_budget(
        "depths",
        len(depths) if hasattr(depths, "__len__") else 0,
        validate.LOOP_LIMIT,
        what="work",
        unit="depths",
        value=None,
    )
    depths = [validate.positive_int("depth", depth) for depth in depths]
    if depths:  # the budget grows with the depth: the deepest one decides
        _check_depth_budget(max(depths), R.shape[0], layers=True)
    out = min(theorem_2_1_bound(R, 1), theorem_2_1_bound_early(R, 1)) / np.asarray(depths, dtype=float)
    method = _as_method(method)
    _check_invertible_oriented(R)
    if _is_spd(R):
        return np.array([factorization_plan(R, depth, method).max_norm for depth in depths]) / out
    if method == "polar":
        Q, P = polar_split(R)
        k = np.linalg.eigvalsh(P)
        angles = np.abs(np.array([t for *_, t in _rotation_generator(Q)[1]], dtype=float))
    else:
        U, k, Vt = _svd_oriented(R)
        angles = np.abs(np.array([t for *_, t in _rotation_generator(U)[1] + _rotation_generator(Vt)[1]], dtype=float))
    # the planners' admissible splits (_admissible_splits), all depths at once; the rotation layers' norm
    # depends on q only, the scaling layers' on p only
    q, p, ok = _admissible_splits(method, depths, *_trivial_factors(angles, k))  # p, ok: (depths, q)
    rot = _rotation_norms(angles, q)
    sca = _scaling_norms(k, np.arange(max(depths) + 1))
    split = np.where(ok, np.maximum(rot[None, :], sca[np.maximum(p, 0)]), np.inf).min(axis=1, initial=np.inf)
    for n, depth in enumerate(depths):
        if depth <= 2:  # depth 1 (and depth 2 of the SVD scheme) are special cases of the plan
            out[n] = factorization_plan(R, depth, method).max_norm / out[n]
        else:
            out[n] = float(split[n]) / out[n]
    return out


def _rotated_stretch(params: np.ndarray, d: int, mixing: np.ndarray) -> np.ndarray:
    """``M1 blockdiag(rot(theta_k)) M1^T M2 diag(exp(g)) M2^T``: the first ``d // 2`` params are angles, the
    next ``d`` log singular values; ``mixing = (M1, M2)`` are fixed rotations."""
    angles, logs = params[: d // 2], params[d // 2 : d // 2 + d]
    W = np.eye(d)
    for k, theta in enumerate(angles):
        c, s = math.cos(theta), math.sin(theta)
        W[2 * k : 2 * k + 2, 2 * k : 2 * k + 2] = [[c, -s], [s, c]]
    M1, M2 = mixing
    return (M1 @ W @ M1.T) @ ((M2 * np.exp(logs)[None, :]) @ M2.T)


def theorem_2_1_worst_ratio_search(
    dims=(2, 3, 4), max_depth=24, random_starts=40, refine=4, max_gamma=2.0, method: str = "polar", seed=None
) -> dict:
    """Adversarial search for the ``R`` and depth ``l >= 3 gamma(R)`` that bring the construction closest to
    (or over) the smaller published Theorem 2.1 bound.

    ``R`` ranges over rotated stretches (:func:`_rotated_stretch`: plane rotations by any angles, with
    singular values ``exp(g)``, ``|g| <= max_gamma``, mixed by random rotations); the objective is the largest
    :func:`theorem_2_1_ratio` over the admissible depths up to ``max_depth``. ``random_starts`` random draws
    per dimension (angles near pi half of the time) are followed by Nelder-Mead from the ``refine`` best.
    Returns ``{"ratio", "R", "depth", "history"}`` for the worst case found; ``history`` lists every ratio
    evaluated (for a histogram).
    """
    dims = [validate.positive_int("d", d) for d in dims]
    max_depth = validate.positive_int("max_depth", max_depth)
    random_starts = validate.positive_int("random_starts", random_starts)
    refine = validate.non_negative_int("refine", refine)
    max_gamma = validate.positive_float("max_gamma", max_gamma)
    validate.check_budget(
        "max_depth", max_depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=max_depth
    )
    validate.check_budget(
        "(dims, max_depth)",
        8.0 * max_depth * max(dims, default=1) ** 2,
        validate.memory_limit_bytes(),
        value=(dims, max_depth),
    )
    validate.check_budget(
        "random_starts",
        float(random_starts) * len(dims) * (refine + 1) * max_depth,
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=random_starts,
    )
    method = _as_method(method)
    rng = _rng(seed)
    history, best = [], (-np.inf, None, None)

    def worst(params, d, mixing):
        params = np.asarray(params, dtype=float).copy()
        params[d // 2 :] = np.clip(params[d // 2 :], -max_gamma, max_gamma)
        R = _rotated_stretch(params, d, mixing)
        depths = list(range(theorem_2_1_min_depth(R), max_depth + 1))
        if not depths:
            return -np.inf, R, None
        ratios = theorem_2_1_ratio(R, depths, method)
        k = int(np.argmax(ratios))
        history.append(float(ratios[k]))
        return float(ratios[k]), R, depths[k]

    for d in dims:
        mixing = (random_rotation(d, rng), random_rotation(d, rng))
        starts = []
        for n in range(random_starts):
            angles = (math.pi - np.abs(rng.normal(0, 0.1, d // 2))) if n % 2 else rng.uniform(-math.pi, math.pi, d // 2)
            logs = rng.uniform(-1, 1, d) * max_gamma * rng.uniform() ** 3  # many draws with small gamma
            params = np.concatenate([angles, logs])
            starts.append((worst(params, d, mixing)[0], params))
        starts.sort(key=lambda t: -t[0])
        for _, params in starts[:refine]:
            res = scipy.optimize.minimize(
                lambda x, d=d, mixing=mixing: -worst(x, d, mixing)[0],
                params,
                method="Nelder-Mead",
                options={"maxfev": 150 * d, "xatol": 1e-6, "fatol": 1e-9},
            )
            value, R, depth = worst(res.x, d, mixing)
            if value > best[0]:
                best = (value, R, depth)
        for _, params in starts[:1]:
            v, R, depth = worst(params, d, mixing)
            if v > best[0]:
                best = (v, R, depth)
    return {"ratio": best[0], "R": best[1], "depth": best[2], "history": np.asarray(history)}


def _project_to_ball(A: np.ndarray, tau) -> np.ndarray:
    """Nearest point (Frobenius) with every ``||A_i|| <= tau``: clip each layer's singular values at tau.
    ``A`` is ``(depth, d, d)``, or ``(batch, depth, d, d)`` with one ``tau`` per member of the batch."""
    U, s, Vt = np.linalg.svd(A)
    if A.ndim == 4:
        return (U * np.minimum(s, np.asarray(tau)[:, None, None])[..., None, :]) @ Vt
    return np.einsum("lij,lj,ljk->lik", U, np.minimum(s, tau), Vt)


def best_factorization_in_ball(R, depth, radius, starts=4, steps=400, seed=None) -> dict:
    """Look for layers with ``max_i ||A_i|| <= radius`` whose product is ``R``, independently of the
    Theorem 2.1 construction: projected gradient descent on ``||(I + A_l)...(I + A_1) - R||_F^2`` (the
    excess risk at ``Sigma = I``) with a backtracking step, from ``A = 0`` and ``starts - 1`` random points
    of the ball. Returns the smallest residual ``||P - R||_F`` found, the largest layer norm there and the
    determinant of that product. For ``det R < 0`` and ``radius < 1`` no such product exists (every
    ``I + A_i`` has positive determinant) and the residual cannot fall below ``s_min(R)``.

    One target of :func:`best_factorizations_in_ball` (the same descent, all starts at once)."""
    R = validate.square_matrix("R", R)
    return best_factorizations_in_ball([R], depth, [radius], starts, steps, seed)[0]


def best_factorizations_in_ball(targets, depth, radii, starts=4, steps=400, seed=None) -> list[dict]:
    """:func:`best_factorization_in_ball` for several targets ``R`` of one size, each in its own ball
    (``radii``), every start of every target descended together as one batch: the same descents (each with
    its own backtracking step, stopping when its step falls below 1e-12) and the same random starts (drawn
    target by target, start by start), at a fraction of the cost of one loop per start."""
    Rs = [validate.square_matrix("R", R) for R in targets]
    if not Rs or len({R.shape for R in Rs}) != 1:
        raise ValueError(f"targets must be one or more square matrices of one size, got {len(Rs)}")
    radii = [validate.positive_float("radius", r) for r in radii]
    if len(radii) != len(Rs):
        raise ValueError(f"radii must give one radius per target: {len(Rs)} targets, {len(radii)} radii")
    d = Rs[0].shape[0]
    depth = validate.positive_int("depth", depth)
    starts = validate.positive_int("starts", starts)
    steps = validate.positive_int("steps", steps)
    _check_depth_budget(depth, d, layers=True)
    validate.check_budget(
        "(starts, steps)",
        float(starts) * steps * len(Rs),
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(starts, steps),
    )
    validate.check_budget(
        "(targets, starts)", 32.0 * len(Rs) * starts * depth * d * d, validate.memory_limit_bytes(), value=len(Rs)
    )
    rng = _rng(seed)
    A0 = np.stack(
        [
            np.zeros((depth, d, d)) if m == 0 else random_layers_in_ball(depth, d, radius, rng)
            for radius in radii
            for m in range(starts)
        ]
    )
    R_b = np.repeat(np.stack(Rs), starts, axis=0)
    tau = np.repeat(np.asarray(radii, dtype=float), starts)
    A, res = _descend_in_balls(A0, R_b, tau, steps)
    out = []
    for k, R in enumerate(Rs):
        m = k * starts + int(np.argmin(res[k * starts : (k + 1) * starts]))
        out.append(
            {
                "residual": float(res[m]),
                "max_norm": float(np.max(layer_norms(A[m]))),
                "det": float(np.linalg.det(compose(A[m]))),
                "s_min": float(np.linalg.svd(R, compute_uv=False)[-1]),
            }
        )
    return out


def _compose_batch(A: np.ndarray) -> np.ndarray:
    """``compose`` of a batch of layer stacks ``(batch, depth, d, d)``."""
    P = np.broadcast_to(np.eye(A.shape[-1]), (A.shape[0], A.shape[-1], A.shape[-1])).copy()
    for i in range(A.shape[1]):
        P = P + A[:, i] @ P
    return P


def _excess_gradient_batch(A: np.ndarray, R: np.ndarray) -> np.ndarray:
    """:func:`risk_gradient` at ``Sigma = I`` for a batch ``(batch, depth, d, d)`` of layer stacks."""
    batch, depth, d, _ = A.shape
    right, left = np.empty_like(A), np.empty_like(A)
    P = np.broadcast_to(np.eye(d), (batch, d, d)).copy()
    for i in range(depth):
        right[:, i] = P
        P = P + A[:, i] @ P
    Q = np.broadcast_to(np.eye(d), (batch, d, d)).copy()
    for i in range(depth - 1, -1, -1):
        left[:, i] = Q
        Q = Q + Q @ A[:, i]
    G = (P - R)[:, None]
    return 2.0 * left.transpose(0, 1, 3, 2) @ G @ right.transpose(0, 1, 3, 2)


def _descend_in_balls(A: np.ndarray, R: np.ndarray, tau: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Projected gradient descent with backtracking for each member of the batch, as one loop over steps:
    a member accepts its first trial step that lowers its residual (then its step grows by 1.5), halves its
    step otherwise, and stops for good once the step falls below 1e-12. Returns the layers and residuals."""
    res = np.linalg.norm(_compose_batch(A) - R, axis=(1, 2))
    lr = np.full(len(A), 0.5 / A.shape[1])
    active = np.ones(len(A), dtype=bool)
    for _ in range(steps):
        if not active.any():
            break
        g = np.zeros_like(A)
        g[active] = _excess_gradient_batch(A[active], R[active])
        pending = active.copy()
        while pending.any():
            k = np.flatnonzero(pending)  # the members still looking for a step that lowers their residual
            trial = _project_to_ball(A[k] - lr[k, None, None, None] * g[k], tau[k])
            res_trial = np.linalg.norm(_compose_batch(trial) - R[k], axis=(1, 2))
            better = res_trial < res[k]
            A[k[better]], res[k[better]] = trial[better], res_trial[better]
            lr[k[better]] *= 1.5
            pending[k[better]] = False
            lr[pending] /= 2
            stuck = pending & ~(lr > 1e-12)
            active &= ~stuck
            pending &= ~stuck
    return A, res


def theorem_2_1_sweep(R, depths, method: str = "polar") -> dict:
    """Factorise ``R`` at each depth with ``method``; return arrays of the measured largest layer norm, the
    product's relative error, the three bounds (camera-ready, early, whole-number layer counts of the SVD
    scheme) and the split (q, p)."""
    R = validate.square_matrix("R", R)
    method = _as_method(method)
    validate.check_budget(
        "depths",
        len(depths) if hasattr(depths, "__len__") else 0,
        validate.LOOP_LIMIT,
        what="work",
        unit="depths",
        value=None,
    )
    depths = [validate.positive_int("depth", depth) for depth in depths]
    for depth in depths:
        _check_depth_budget(depth, R.shape[0], layers=True)
    validate.check_budget(
        "depths",
        float(sum(depths)),
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations (the sum of the depths)",
        value=None,
    )
    if not depths:
        raise ValueError("depths must contain at least one depth")
    out = {k: [] for k in ("depth", "max_norm", "relative_error", "camera_ready", "early", "integer", "q", "p")}
    for depth in depths:
        A = factorize_near_identity(R, depth, method)
        plan = factorization_plan(R, depth, method)
        out["depth"].append(depth)
        out["max_norm"].append(float(np.max(layer_norms(A))))
        out["relative_error"].append(float(np.linalg.norm(compose(A) - R) / np.linalg.norm(R)))
        out["camera_ready"].append(theorem_2_1_bound(R, depth))
        out["early"].append(theorem_2_1_bound_early(R, depth))
        out["integer"].append(theorem_2_1_bound_integer(R, depth))
        out["q"].append(plan.q)
        out["p"].append(plan.p)
    return {k: np.asarray(v) for k, v in out.items()}


# --- Theorem 2.2 and eq. (2.3): the gradient lower bound, as printed and as its proof yields it ---------
def _bound_inputs(A, R, Sigma, tau, allow_outside=False):
    A, R, Sigma = _check_risk_inputs(A, R, Sigma)
    tau = validate.finite_float("tau", tau)
    if not 0.0 <= tau < 1.0:
        raise ValueError(f"tau must satisfy 0 <= tau < 1, got {tau!r}")
    norm = float(np.max(layer_norms(A)))
    if not validate.boolean("allow_outside", allow_outside) and norm > tau * (1 + 1e-12) + 1e-15:
        raise ValueError(f"A is outside the tau-ball: max_i ||A_i|| = {norm:.6g} > tau = {tau:.6g}")
    s_min = float(np.min(np.linalg.eigvalsh(Sigma)))
    excess = risk(A, R, Sigma) - A.shape[1]  # C_opt = d: the product can equal R, leaving only the noise
    return A.shape[0], tau, max(s_min, 0.0), excess


def gradient_lower_bound(A, R, Sigma, tau, allow_outside=False) -> float:
    """What the proof of eq. (2.3) yields on ``max_i ||A_i|| <= tau``:
    ``||grad f(A)||_F^2 >= 4 l (1 - tau)^(2(l-1)) s_min(Sigma) (f(A) - C_opt)``, with ``C_opt = d``.

    Layers outside the ball are refused unless ``allow_outside=True`` (a negative control evaluates the
    bound where it promises nothing)."""
    depth, tau, s_min, excess = _bound_inputs(A, R, Sigma, tau, allow_outside)
    return 4.0 * depth * (1.0 - tau) ** (2 * (depth - 1)) * s_min * excess


def smallest_positive_eigenvalue(Sigma, rtol: float = 1e-12) -> float:
    """The smallest eigenvalue of the covariance ``Sigma`` above ``rtol`` times its largest (0.0 for Sigma = 0)."""
    Sigma = validate.square_matrix("Sigma", Sigma)
    rtol = validate.positive_float("rtol", rtol)
    eig = np.linalg.eigvalsh((Sigma + Sigma.T) / 2)
    positive = eig[eig > rtol * max(float(eig.max()), 0.0)]
    return float(positive.min()) if positive.size and eig.max() > 0 else 0.0


def gradient_lower_bound_every_sigma(A, R, Sigma, tau, allow_outside=False) -> float:
    """The corrected eq. (2.3) for every covariance, singular ones included:
    ``||grad f(A)||_F^2 >= 4 l (1 - tau)^(2(l-1)) s_+(Sigma) (f(A) - C_opt)`` with ``s_+`` the smallest
    *positive* eigenvalue of Sigma. (``||grad f||^2 >= 4 l (1-tau)^(2(l-1)) ||E Sigma||_F^2`` and the rows of
    ``E Sigma^(1/2)`` lie in the range of Sigma, so ``||E Sigma||_F^2 >= s_+ ||E Sigma^(1/2)||_F^2 = s_+ (f -
    C_opt)``.) For invertible Sigma it is :func:`gradient_lower_bound`."""
    depth, tau, _, excess = _bound_inputs(A, R, Sigma, tau, allow_outside)
    s_plus = smallest_positive_eigenvalue(_as_covariance(Sigma, np.shape(R)[0]))
    return 4.0 * depth * (1.0 - tau) ** (2 * (depth - 1)) * s_plus * excess


def gradient_lower_bound_printed(A, R, Sigma, tau) -> float:
    """Eq. (2.3) as printed: ``4 l (1 - tau)^(l-1) s_min(Sigma)^2 (f(A) - C_opt)``. It fails, e.g. at
    ``A = 0`` with ``Sigma = c I``, ``c > 1``."""
    depth, tau, s_min, excess = _bound_inputs(A, R, Sigma, tau)
    return 4.0 * depth * (1.0 - tau) ** (depth - 1) * s_min**2 * excess


# --- Theorem 2.2: searching for critical points inside the tau-ball -------------------------------------
@dataclass
class CriticalPointSearch:
    """Result of :func:`critical_point_search`, one entry per start.

    ``grad_sq`` is ``||grad f||_F^2`` at the end point and ``grad_sq_start`` at the start, ``excess`` is
    ``f - C_opt`` (``C_opt = d``: the targets are reachable) and ``excess_start`` its value at the start,
    ``max_norm`` the end point's ``max_i ||A_i||``. ``critical`` marks end points whose squared gradient fell
    below ``critical_rtol`` times its starting value.
    """

    grad_sq: np.ndarray
    grad_sq_start: np.ndarray
    excess: np.ndarray
    excess_start: np.ndarray
    max_norm: np.ndarray
    critical: np.ndarray
    tau: float


#: An end point of :func:`critical_point_search` is critical when its squared gradient is below this fraction of
#: its starting value.
CRITICAL_RTOL = 1e-16


def critical_point_search(R, Sigma, starts, tau, iterations=60, critical_rtol=CRITICAL_RTOL) -> CriticalPointSearch:
    """Minimise ``||grad f(A)||_F^2`` over ``max_i ||A_i|| <= tau`` from each start in ``starts``
    (shape ``(n, depth, d, d)``): projected Gauss-Newton steps ``-H^+ grad f`` (H the Hessian of the risk,
    from torch; a pseudo-inverse, since minima form a manifold), halved until ``||grad f||^2`` decreases,
    then projected back into the ball. Gauss-Newton on the residual ``grad f`` is drawn to saddles and
    maxima as much as to minima, so it looks for *any* critical point, which is what Theorem 2.2 rules out.
    """
    starts = validate.finite_array("starts", starts, ndim=4)
    n, depth, d, _ = starts.shape
    R = validate.square_matrix("R", R)
    _, R, Sigma = _check_risk_inputs(starts[0], R, Sigma)
    tau = validate.positive_float("tau", tau)
    iterations = validate.positive_int("iterations", iterations)
    validate.check_budget(
        "(starts, iterations)",
        float(n) * iterations,
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(n, iterations),
    )
    f = torch_risk(depth, d, R, Sigma)
    hess = hessian(f)
    out = {k: np.empty(n) for k in ("grad_sq", "grad_sq_start", "excess", "excess_start", "max_norm")}

    def excess(A):
        E = compose(A) - R
        return float(np.trace(E @ Sigma @ E.T))

    for m in range(n):
        A = _project_to_ball(starts[m], tau)
        g = risk_gradient(A, R, Sigma)
        g2 = float(np.sum(g**2))
        out["grad_sq_start"][m], out["excess_start"][m] = g2, excess(A)
        for _ in range(iterations):
            if g2 <= critical_rtol * out["grad_sq_start"][m]:
                break
            H = hess(torch.as_tensor(A.ravel())).numpy()
            step = (np.linalg.pinv(H, rcond=1e-12, hermitian=True) @ g.ravel()).reshape(A.shape)
            t = 1.0
            while t > 1e-8:
                trial = _project_to_ball(A - t * step, tau)
                g_trial = risk_gradient(trial, R, Sigma)
                g2_trial = float(np.sum(g_trial**2))
                if g2_trial < g2:
                    A, g, g2 = trial, g_trial, g2_trial
                    break
                t /= 2
            else:
                break  # no decrease along the projected step: a stationary point of the search
        out["grad_sq"][m], out["excess"][m] = g2, excess(A)
        out["max_norm"][m] = float(np.max(layer_norms(A)))
    critical = out["grad_sq"] <= critical_rtol * np.maximum(out["grad_sq_start"], 1e-300)
    return CriticalPointSearch(**out, critical=critical, tau=tau)


# --- Theorem 2.2: gradient descent on the risk from A = 0, and the plain parameterisation ---------------
def risk_gradient_descent(A0, R, Sigma, steps, lr):
    """Plain gradient descent on :func:`risk` from layers ``A0``; returns ``(excess_risks, A)``.

    ``excess_risks[t]`` is ``f(A) - d`` after ``t`` steps (length ``steps + 1``). Starting at ``A0 = -I``
    in every layer is the plain parameterisation ``W_l ... W_1`` started at ``W = 0``.
    """
    A, R, Sigma = _check_risk_inputs(A0, R, Sigma)
    steps = validate.positive_int("steps", steps)
    lr = validate.positive_float("lr", lr)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget(
        "steps",
        4.0 * steps * A.shape[0] * A.shape[1] ** 3,
        validate.OPS_LIMIT,
        what="work",
        unit="operations",
        value=steps,
    )
    A = A.copy()

    def excess(A):  # tr(E Sigma E^T) directly: risk(A) - d would lose everything below d * 1e-16
        E = compose(A) - R
        return float(np.trace(E @ Sigma @ E.T))

    out = np.empty(steps + 1)
    out[0] = excess(A)
    for t in range(steps):
        A -= lr * risk_gradient(A, R, Sigma)
        out[t + 1] = excess(A)
        if not np.isfinite(out[t + 1]):
            raise validate.DivergenceError(f"gradient descent diverged at step {t + 1}; lower the learning rate {lr}")
    return out, A


# --- Bartlett, Helmbold & Long: a step suited to the target, and steps to a tolerance -------------------
#: The scale ``c`` of :func:`bhl_step_size`'s step ``c / (L max(1, ||Phi||_2)^(2 - 2/L))``: our choice, fixed before
#: any run (``c = 1/2`` keeps the step times the update's derivative below ``2c = 1``; see :func:`bhl_step_size`).
BHL_STEP_SCALE = 0.5


def bhl_step_size(Phi, depth, scale=BHL_STEP_SCALE) -> float:
    """A step size suited to ``Phi``: ``scale / (L max(1, ||Phi||_2)^(2 - 2/L))``.

    Our choice; the paper's step sizes are in its full text, which was not available to us. Why this one: for
    a symmetric target every layer's eigenvalue ``mu`` along an eigenvector with eigenvalue ``lambda`` follows
    ``mu <- mu - eta mu^(L-1) (mu^L - lambda)``, whose linearisation at ``mu = lambda^(1/L)`` has slope
    ``L lambda^(2 - 2/L)``; on the path from ``mu = 1`` it stays below ``(2L - 1) max(1, lambda)^(2 - 2/L)``.
    The default ``scale = BHL_STEP_SCALE`` keeps ``eta`` times it below one. For ``||Phi||_2 <= 1`` this is
    ``scale / L``.
    """
    Phi = validate.square_matrix("Phi", Phi)
    depth = validate.positive_int("depth", depth)
    scale = validate.positive_float("scale", scale)
    top = max(1.0, float(np.linalg.norm(Phi, 2)))
    return scale / (depth * top ** (2.0 - 2.0 / depth))


def identity_gd_steps_to(Phi, depth, lr, tol, max_steps) -> int | None:
    """Steps of gradient descent from ``Theta_i = I`` on ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2`` until the
    loss is at most ``tol``; ``None`` if ``max_steps`` do not suffice. The same updates as
    :func:`identity_init_gd` (without regulariser), stopping early; raises ``DivergenceError`` on overflow."""
    Phi = validate.square_matrix("Phi", Phi)
    depth = validate.positive_int("depth", depth)
    lr = validate.positive_float("lr", lr)
    tol = validate.positive_float("tol", tol)
    max_steps = validate.positive_int("steps", max_steps)
    _check_depth_budget(depth, Phi.shape[0], layers=True)
    validate.check_budget(
        "max_steps", max_steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=max_steps
    )
    validate.check_budget(
        "max_steps",
        4.0 * max_steps * depth * Phi.shape[0] ** 3,
        validate.OPS_LIMIT,
        what="work",
        unit="operations",
        value=max_steps,
    )
    d = Phi.shape[0]
    I = np.eye(d)
    T = np.repeat(I[None], depth, axis=0)
    right, left = np.empty_like(T), np.empty_like(T)  # Theta_{i-1}...Theta_1 and Theta_L...Theta_{i+1}
    right[0], left[-1] = I, I
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(max_steps + 1):
            for i in range(1, depth):
                right[i] = T[i - 1] @ right[i - 1]
            G = T[-1] @ right[-1] - Phi
            loss = 0.5 * float(np.sum(G**2))
            if not math.isfinite(loss):
                raise validate.DivergenceError(f"identity_gd_steps_to diverged at step {t}; lower lr {lr}")
            if loss <= tol:
                return t
            if t == max_steps:
                return None
            for i in range(depth - 2, -1, -1):
                left[i] = left[i + 1] @ T[i + 1]
            T = T - lr * (left.transpose(0, 2, 1) @ G @ right.transpose(0, 2, 1))  # every layer at once
    return None  # pragma: no cover


# --- Bartlett, Helmbold & Long: runs with determinants, and the loss floor when det Phi < 0 -------------
@dataclass
class IdentityGDTrace:
    """A run of gradient descent from ``Theta_i = I`` (:func:`identity_gd_trace`).

    ``losses[t]`` and ``product_dets[t]`` are ``1/2 ||P_t - Phi||_F^2`` and ``det P_t`` for the product
    ``P_t = Theta_L ... Theta_1`` after ``t`` steps (``t = 0`` is the identity; ``steps + 1`` entries; the
    regulariser is not in ``losses``); ``layers`` are the final layers, shape ``(depth, d, d)``."""

    losses: np.ndarray
    product_dets: np.ndarray
    layers: np.ndarray


def identity_gd_trace(Phi, depth, lr, steps, reg=0.0, tol=None) -> IdentityGDTrace:
    """Gradient descent from ``Theta_i = I`` on
    ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2 + reg sum_i ||Theta_i - I||_F^2``,
    recording the loss and the determinant of the product at every step; with ``tol``, it stops at the first
    step whose loss is at most ``tol`` (the arrays then end there).

    The same objective as :func:`identity_init_gd` (written independently: all layers updated at once from the
    prefix and suffix products, as in :func:`identity_gd_steps_to`). Raises ``DivergenceError`` when the loss
    stops being finite."""
    Phi = validate.square_matrix("Phi", Phi)
    depth = validate.positive_int("depth", depth)
    lr = validate.positive_float("lr", lr)
    steps = validate.positive_int("steps", steps)
    reg = validate.non_negative_float("reg", reg)
    tol = -math.inf if tol is None else validate.positive_float("tol", tol)
    _check_depth_budget(depth, Phi.shape[0], layers=True)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget("steps", 16.0 * (steps + 1), validate.memory_limit_bytes(), value=steps)
    validate.check_budget(
        "steps",
        4.0 * steps * depth * Phi.shape[0] ** 3,
        validate.OPS_LIMIT,
        what="work",
        unit="operations",
        value=steps,
    )
    d = Phi.shape[0]
    I = np.eye(d)
    T = np.repeat(I[None], depth, axis=0)
    right, left = np.empty_like(T), np.empty_like(T)  # Theta_{i-1}...Theta_1 and Theta_L...Theta_{i+1}
    right[0], left[-1] = I, I
    losses, dets = np.empty(steps + 1), np.empty(steps + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            for i in range(1, depth):
                right[i] = T[i - 1] @ right[i - 1]
            P = T[-1] @ right[-1]
            G = P - Phi
            losses[t] = 0.5 * float(np.sum(G**2))
            dets[t] = float(np.linalg.det(P)) if np.all(np.isfinite(P)) else math.nan
            if not math.isfinite(losses[t]):
                raise validate.DivergenceError(f"identity_gd_trace diverged at step {t}; lower the learning rate {lr}")
            if t == steps or losses[t] <= tol:
                losses, dets = losses[: t + 1], dets[: t + 1]
                break
            for i in range(depth - 2, -1, -1):
                left[i] = left[i + 1] @ T[i + 1]
            grads = left.transpose(0, 2, 1) @ G @ right.transpose(0, 2, 1)
            if reg:
                grads = grads + 2.0 * reg * (T - I)
            T = T - lr * grads
    return IdentityGDTrace(losses, dets, T)


def identity_gd_trace_many(Phis, depth, lrs, steps, regs=None, tol=None) -> list[IdentityGDTrace]:
    """:func:`identity_gd_trace` for several targets of one size (``Phis``: ``(runs, d, d)``), each with its own
    step and regulariser, as one batch: every run follows its own updates and stops at its own first step with
    loss at most ``tol`` (its arrays end there, as :func:`identity_gd_trace`'s do); the batch ends when the last
    run does. Raises ``DivergenceError`` when a running run's loss stops being finite."""
    Phi = validate.finite_array("Phis", Phis, ndim=3)
    if Phi.shape[0] < 1 or Phi.shape[1] != Phi.shape[2]:
        raise ValueError(f"Phis must be one or more square matrices, shape (runs, d, d), got shape {Phi.shape}")
    runs, d = Phi.shape[0], Phi.shape[1]
    depth = validate.positive_int("depth", depth)
    lr = np.array([validate.positive_float("lr", x) for x in lrs], dtype=float)
    reg = np.array([validate.non_negative_float("reg", x) for x in (regs if regs is not None else [0.0] * runs)])
    if not runs == len(lr) == len(reg):
        raise ValueError(f"one step and one regulariser per target: {runs} targets, {len(lr)} and {len(reg)}")
    steps = validate.positive_int("steps", steps)
    tol = -math.inf if tol is None else validate.positive_float("tol", tol)
    _check_depth_budget(depth, d, layers=True)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget("steps", 16.0 * (steps + 1) * runs, validate.memory_limit_bytes(), value=steps)
    validate.check_budget(
        "steps", 4.0 * steps * runs * depth * d**3, validate.OPS_LIMIT, what="work", unit="operations", value=steps
    )
    I = np.eye(d)
    T = np.broadcast_to(I, (runs, depth, d, d)).copy()
    right, left = np.empty_like(T), np.empty_like(T)
    right[:, 0], left[:, -1] = I, I
    losses, dets = np.empty((runs, steps + 1)), np.empty((runs, steps + 1))
    ends = np.full(runs, steps)
    active = np.ones(runs, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            for i in range(1, depth):
                right[:, i] = T[:, i - 1] @ right[:, i - 1]
            P = T[:, -1] @ right[:, -1]
            G = P - Phi
            losses[:, t] = 0.5 * np.sum(G**2, axis=(1, 2))
            finite = np.all(np.isfinite(P), axis=(1, 2))
            dets[:, t] = np.where(finite, np.linalg.det(np.where(finite[:, None, None], P, 0.0)), math.nan)
            if not np.all(np.isfinite(losses[active, t])):
                raise validate.DivergenceError(f"identity_gd_trace_many diverged at step {t}; lower the learning rate")
            stop = active & (losses[:, t] <= tol) if t < steps else active
            ends[stop], active = t, active & ~stop
            if not active.any():
                break
            for i in range(depth - 2, -1, -1):
                left[:, i] = left[:, i + 1] @ T[:, i + 1]
            grads = left.transpose(0, 1, 3, 2) @ G[:, None] @ right.transpose(0, 1, 3, 2)
            grads = grads + (2.0 * reg)[:, None, None, None] * (T - I)
            T = np.where(active[:, None, None, None], T - lr[:, None, None, None] * grads, T)
    return [IdentityGDTrace(losses[k, : ends[k] + 1], dets[k, : ends[k] + 1], T[k]) for k in range(runs)]


def det_loss_floor(Phi) -> float:
    """The smallest of ``1/2 ||P - Phi||_F^2`` over all ``P`` with ``det P >= 0``: ``1/2 s_min(Phi)^2`` when
    ``det Phi < 0``, else 0.

    Why: the segment from ``Phi`` (``det < 0``) to such a ``P`` crosses a singular matrix ``S``, and
    ``||P - Phi||_F >= ||S - Phi||_F >= s_min(Phi)`` (the distance to the singular matrices, Eckart-Young-Mirsky),
    attained by zeroing ``Phi``'s smallest singular value. So a run whose product keeps ``det P_t > 0`` never
    has loss below this floor."""
    Phi = validate.square_matrix("Phi", Phi)
    if np.linalg.det(Phi) >= 0:
        return 0.0
    return 0.5 * float(np.linalg.svd(Phi, compute_uv=False).min()) ** 2


# --- Bartlett, Helmbold & Long: symmetric targets, the reduction exact arithmetic follows ---------------
@dataclass
class SymmetricGDRun:
    """Exact-arithmetic gradient descent from the identity on a symmetric target, as its reduction to the layers'
    eigenvalues (:func:`symmetric_identity_gd`; the recursion itself is computed in floating point).

    ``losses[t]`` is ``1/2 sum_k (mu_k^L - lambda_k)^2`` after ``t`` steps (``steps + 1`` entries), ``mu`` the
    final layer eigenvalues, ``min_mu`` the smallest layer eigenvalue over the whole run."""

    losses: np.ndarray
    mu: np.ndarray
    min_mu: float


def symmetric_identity_gd(eigenvalues, depth, lr, steps, reg=0.0) -> SymmetricGDRun:
    """Gradient descent from ``Theta_i = I`` on a symmetric ``Phi`` with these eigenvalues, as exact arithmetic
    runs it (the same objective as :func:`identity_gd_trace`), through its reduction to one scalar recursion per
    eigenvalue; the recursion is computed in floating point, where there is no symmetry left to break.

    In exact arithmetic every layer stays equal to the others and a polynomial in ``Phi`` (induction: the
    gradient in layer i is ``Theta^(L-1) (Theta^L - Phi) + 2 reg (Theta - I)`` when all layers equal ``Theta``),
    so along each eigenvector the common layer eigenvalue follows
    ``mu <- mu - lr (mu^(L-1) (mu^L - lambda) + 2 reg (mu - 1))``. Floating-point matrix runs leave this
    invariant set once rounding errors grow along its unstable directions; this reduction does not."""
    lam = validate.finite_array("eigenvalues", eigenvalues, ndim=1)
    depth = validate.positive_int("depth", depth)
    lr = validate.positive_float("lr", lr)
    steps = validate.positive_int("steps", steps)
    reg = validate.non_negative_float("reg", reg)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget("steps", 16.0 * (steps + 1) * (1 + lam.size), validate.memory_limit_bytes(), value=steps)
    mu = np.ones_like(lam)
    losses = np.empty(steps + 1)
    min_mu = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            power = mu**depth
            losses[t] = 0.5 * float(np.sum((power - lam) ** 2))
            if not math.isfinite(losses[t]):
                raise validate.DivergenceError(f"symmetric_identity_gd diverged at step {t}; lower lr {lr}")
            min_mu = min(min_mu, float(mu.min()))
            if t < steps:
                mu = mu - lr * (mu ** (depth - 1) * (power - lam) + 2.0 * reg * (mu - 1.0))
    return SymmetricGDRun(losses, mu, min_mu)


def symmetric_identity_gd_many(spectra, depth, lrs, steps, regs) -> list[SymmetricGDRun]:
    """:func:`symmetric_identity_gd` for several targets of one dimension at once, each with its own step
    and regulariser (``spectra`` is ``(runs, d)``): the same updates, elementwise, for every run in one loop
    over the steps, so each run's losses are those :func:`symmetric_identity_gd` gives it."""
    lam = validate.finite_array("spectra", spectra, ndim=2)
    depth = validate.positive_int("depth", depth)
    lr = np.array([validate.positive_float("lr", x) for x in lrs], dtype=float)
    reg = np.array([validate.non_negative_float("reg", x) for x in regs], dtype=float)
    steps = validate.positive_int("steps", steps)
    if not len(lam) == len(lr) == len(reg):
        raise ValueError(f"one step and one regulariser per target: {len(lam)} targets, {len(lr)} and {len(reg)}")
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget("steps", 16.0 * (steps + 1) * (1 + lam.size), validate.memory_limit_bytes(), value=steps)
    mu = np.ones_like(lam)
    losses = np.empty((len(lam), steps + 1))
    min_mu = np.ones(len(lam))
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(steps + 1):
            power = mu**depth
            losses[:, t] = 0.5 * np.sum((power - lam) ** 2, axis=1)
            if not np.all(np.isfinite(losses[:, t])):
                raise validate.DivergenceError(f"symmetric_identity_gd_many diverged at step {t}; lower lr")
            min_mu = np.minimum(min_mu, mu.min(axis=1))
            if t < steps:
                mu = mu - lr[:, None] * (mu ** (depth - 1) * (power - lam) + 2.0 * reg[:, None] * (mu - 1.0))
    return [SymmetricGDRun(losses[k], mu[k], float(min_mu[k])) for k in range(len(lam))]


# --- Bartlett, Helmbold & Long: the same descent with a regulariser, numpy or torch, CPU or GPU ---------
@dataclass
class GDResult:
    """Gradient descent from the identity (:func:`identity_init_gd`).

    ``losses[t]`` is ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2`` after step ``t + 1`` (one entry per step;
    the regulariser is not included, ``objectives`` includes it); ``initial_loss`` is the loss at the
    identity; ``layers`` has shape ``(depth, d, d)`` (numpy, on the CPU).
    """

    losses: np.ndarray
    objectives: np.ndarray
    initial_loss: float
    layers: np.ndarray
    backend: str
    device: str

    @property
    def product(self) -> np.ndarray:
        P = np.eye(self.layers.shape[1])
        for layer in self.layers:
            P = layer @ P
        return P


def identity_init_gd(Phi, depth, steps, lr, reg=0.0, *, backend="numpy", device=None, dtype=None) -> GDResult:
    """Gradient descent from ``Theta_i = I`` on
    ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2 + reg sum_i ||Theta_i - I||_F^2``.

    Bartlett, Helmbold & Long's setting (isotropic inputs, so the population loss is this Frobenius loss).
    The gradient in layer i is ``L_i^T (P - Phi) R_i^T + 2 reg (Theta_i - I)`` (products of the layers above
    and below). ``backend="torch"`` runs the same updates in torch on ``device`` (default: CUDA if available),
    in ``dtype`` (default float64). Raises ``FloatingPointError`` if the loss stops being finite.
    """
    Phi = validate.square_matrix("Phi", Phi)
    depth = validate.positive_int("depth", depth)
    steps = validate.positive_int("steps", steps)
    lr = validate.positive_float("lr", lr)
    reg = validate.non_negative_float("reg", reg)
    d = Phi.shape[0]  # the layers, their partial products and gradients; three Python loops over depth a step
    validate.check_budget("depth", 4 * 8.0 * depth * d * d, validate.memory_limit_bytes(), value=depth)
    validate.check_budget(
        "steps", 3.0 * steps * depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps
    )
    validate.check_budget(
        "steps", 6.0 * steps * depth * d**3, validate.OPS_LIMIT, what="work", unit="operations", value=steps
    )
    if validate.choice("backend", backend, ("numpy", "torch")) == "torch":
        return _gd_torch(Phi, depth, steps, lr, float(reg), device, dtype)
    if device is not None and str(device) != "cpu":
        raise ValueError(f"the numpy backend runs on the CPU only, got device={device!r}")
    return _gd_numpy(Phi, depth, steps, lr, float(reg))


def _gd_numpy(Phi, depth, steps, lr, reg) -> GDResult:
    d = Phi.shape[0]
    I = np.eye(d)
    T = np.repeat(I[None], depth, axis=0)
    losses, objectives = np.empty(steps), np.empty(steps)
    initial = 0.5 * float(np.sum((I - Phi) ** 2))

    def products(T):
        right = np.empty_like(T)
        P = I
        for i in range(depth):
            right[i] = P
            P = T[i] @ P
        return right, P

    right, P = products(T)
    with np.errstate(over="ignore", invalid="ignore"):  # divergence is reported below, not warned about
        T = _gd_numpy_loop(T, I, Phi, depth, steps, lr, reg, right, P, products, losses, objectives)
    return GDResult(losses, objectives, initial, T, "numpy", "cpu")


def _gd_numpy_loop(T, I, Phi, depth, steps, lr, reg, right, P, products, losses, objectives):
    for t in range(steps):
        G = P - Phi
        grads = np.empty_like(T)
        Q = I
        for i in range(depth - 1, -1, -1):  # Q = Theta_L ... Theta_{i+1}
            grads[i] = Q.T @ G @ right[i].T
            Q = Q @ T[i]
        if reg:
            grads += 2 * reg * (T - I)
        T = T - lr * grads
        right, P = products(T)
        losses[t] = 0.5 * float(np.sum((P - Phi) ** 2))
        objectives[t] = losses[t] + reg * float(np.sum((T - I) ** 2))
        if not np.isfinite(objectives[t]):
            raise validate.DivergenceError(f"identity_init_gd diverged at step {t + 1}; lower the learning rate {lr}")
    return T


def _gd_torch(Phi, depth, steps, lr, reg, device, dtype) -> GDResult:
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device = validate.torch_device("device", device)
    dtype = validate.choice("dtype", torch.float64 if dtype is None else dtype, (torch.float32, torch.float64))
    d = Phi.shape[0]
    Phi_t = torch.as_tensor(Phi, dtype=dtype, device=device)
    I = torch.eye(d, dtype=dtype, device=device)
    T = I.expand(depth, d, d).clone()
    losses = torch.empty(steps, dtype=dtype, device=device)
    objectives = torch.empty(steps, dtype=dtype, device=device)
    with torch.no_grad():
        for t in range(steps):
            right = torch.empty_like(T)
            P = I
            for i in range(depth):
                right[i] = P
                P = T[i] @ P
            G = P - Phi_t
            grads = torch.empty_like(T)
            Q = I
            for i in range(depth - 1, -1, -1):
                grads[i] = Q.T @ G @ right[i].T
                Q = Q @ T[i]
            if reg:
                grads += 2 * reg * (T - I)
            T = T - lr * grads
            P = I
            for i in range(depth):
                P = T[i] @ P
            losses[t] = 0.5 * torch.sum((P - Phi_t) ** 2)
            objectives[t] = losses[t] + reg * torch.sum((T - I) ** 2)
    objectives_np = objectives.cpu().numpy().astype(np.float64)
    if not np.all(np.isfinite(objectives_np)):
        bad = int(np.argmin(np.isfinite(objectives_np))) + 1
        raise validate.DivergenceError(f"identity_init_gd diverged at step {bad}; lower the learning rate {lr}")
    initial = 0.5 * float(np.sum((np.eye(d) - Phi) ** 2))
    return GDResult(
        losses.cpu().numpy().astype(np.float64),
        objectives_np,
        initial,
        T.cpu().numpy().astype(np.float64),
        "torch",
        str(device),
    )
