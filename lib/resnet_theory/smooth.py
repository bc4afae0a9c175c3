"""Smooth invertible maps as compositions of near-identity maps.

Bartlett, Evans & Long (2018), "Representing smooth functions as compositions of near-identity functions
with implications for deep network optimization" (arXiv 1804.05012), as summarised in its abstract and in
Bartlett's 2017 talk (review 002 in the project's seeds). The paper's full text was not available; the
construction below is our reconstruction of the rescaling idea described in the talk.

Representation (the talk's main result, our reconstruction of the construction):

- A smooth map ``h: R^d -> R^d`` with ``det h'(x) > 0`` is normalised to ``g(x) = A^{-1} (h(x) - h(0))`` with
  ``A = h'(0)``, so ``g(0) = 0`` and ``g'(0) = I``.
- ``G_a(x) = g(a x) / a`` interpolates between ``G_0 = Id`` (the limit ``a -> 0``) and ``G_1 = g``.
- The linear part ``A = (I + A_m) ... (I + A_1)`` is factorised near the identity (Hardt & Ma's construction,
  :func:`resnet_theory.linear.factorize_near_identity`); ``B_i`` is the partial product of the first i factors.
- With scales ``0 = a_0 < a_1 < ... < a_m = 1`` and ``Phi_i = B_i o G_{a_i}`` (so ``Phi_0 = Id`` and
  ``Phi_m = h - h(0)``), the layers are ``h_i = Phi_i o Phi_{i-1}^{-1}`` (plus the translation ``h(0)`` in the
  last layer). The composition telescopes to ``h`` exactly (:func:`near_identity_factors`).
- ``||h_i - Id||_L`` is measured by :func:`factor_deviations` (cheap, from ``h'`` alone) and, for any map,
  by :func:`lipschitz_constant` (a lower estimate from Jacobians); it is bounded above, with a certificate,
  by :func:`certified_deviations` and, for every depth at once, :func:`rate_certificate`.
- :func:`representation_evidence` gathers what the representation claims are decided on (exactness, attained
  and certified deviations, the certificate); the same computation runs on :func:`ruled_out_map`, maps
  outside the theorem (not smooth; not bi-Lipschitz), for the negative controls. :func:`sympy_map` writes
  every map as SymPy expressions, the exact witness of its Jacobian.

Optimisation (the talk's theorem on ``Q(h) = 1/2 E ||h(X) - Y||^2``), on an empirical distribution:
:func:`random_residual_blocks` builds residual MLP blocks with a *certified* ``||h_i - Id||_L <= eps`` and
:func:`functional_gradient` computes the Frechet derivative of Q with respect to each block in ``L2`` of the
sample (:func:`functional_risk_sympy`: the same derivative from SymPy); :func:`gradient_bound_instances` draws
random instances, inside the theorem (``eps < 1``) or outside it. :func:`sigmoid_saddle_example` (a saddle at
the identity, for exactly symmetric data) and :func:`sigmoid_local_minimum_example` (a strict local minimum
near the identity, generic data) are our own instances of the abstract's negative result in parameter space.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import sympy as sp
import torch

from . import validate
from .linear import factorize_near_identity

TorchMap = Callable[[torch.Tensor], torch.Tensor]
DTYPE = torch.float64


class NewtonConvergenceError(validate.DivergenceError):
    """A numerical inverse needed by the construction did not converge."""


# --- input checks, points of the ball, Jacobians --------------------------------------------------------
def _check_callable(f, name: str) -> None:
    validate.callable_arg(name, f, what="a callable mapping a torch tensor (N, dim) to (N, dim)")


def ball_points(n: int, dim: int, radius: float, generator: torch.Generator | None = None) -> torch.Tensor:
    """``n`` points uniform in the closed ball of ``radius`` in ``R^dim`` (float64)."""
    n = validate.positive_int("n", n)
    dim = validate.positive_int("dim", dim)
    radius = validate.positive_float("radius", radius)
    validate.check_budget("(n, dim)", 24.0 * n * dim, validate.memory_limit_bytes(), value=(n, dim))
    direction = torch.randn(n, dim, dtype=DTYPE, generator=generator)
    direction /= direction.norm(dim=1, keepdim=True).clamp_min(1e-300)
    r = torch.rand(n, 1, dtype=DTYPE, generator=generator) ** (1.0 / dim)
    return radius * r * direction


def _test_points(dim: int, radius: float, n: int, seed: int) -> torch.Tensor:
    """The origin, the 2*dim axis points on the sphere, and n random points in the ball."""
    gen = torch.Generator().manual_seed(seed)
    eye = torch.eye(dim, dtype=DTYPE)
    return torch.cat([torch.zeros(1, dim, dtype=DTYPE), radius * eye, -radius * eye, ball_points(n, dim, radius, gen)])


def _apply_checked(f: TorchMap, x: torch.Tensor, name: str, out_dim: int | None = None) -> torch.Tensor:
    try:
        y = f(x)
    except Exception as exc:  # a wrong-shape map usually fails inside its own matmul
        raise ValueError(f"{name} failed on a batch of shape {tuple(x.shape)}: {exc}") from exc
    if not isinstance(y, torch.Tensor):
        raise ValueError(f"{name} must return a torch tensor, got {type(y).__name__}")
    expected = (x.shape[0], x.shape[1] if out_dim is None else out_dim)
    if tuple(y.shape) != expected:
        raise ValueError(f"{name} maps a batch of shape {tuple(x.shape)} to {tuple(y.shape)}; expected {expected}")
    return y


def batch_jacobian(f: TorchMap, x: torch.Tensor, create_graph: bool = False) -> torch.Tensor:
    """Jacobians ``f'(x_n)`` of a row-wise map, shape ``(N, out, dim)``, by one backward pass per output.

    ``f`` must act on each row independently (true of every map in this module); that is what makes the
    gradient of ``f(x)[:, k].sum()`` the k-th Jacobian row at every point at once.
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2:
        raise ValueError("batch_jacobian needs a 2-D torch tensor of points (N, dim)")
    with torch.enable_grad():
        x = x if (create_graph and x.requires_grad) else x.detach().clone().requires_grad_(True)
        y = f(x)
        if y.ndim != 2 or y.shape[0] != x.shape[0]:
            raise ValueError(f"the map must return (N, out) for N = {x.shape[0]} points, got {tuple(y.shape)}")
        rows = []
        for k in range(y.shape[1]):
            (g,) = torch.autograd.grad(
                y[:, k].sum(), x, create_graph=create_graph, retain_graph=True, allow_unused=True
            )
            rows.append(torch.zeros_like(x) if g is None else g)
        return torch.stack(rows, dim=1)


def check_positive_orientation(
    h: TorchMap, dim: int, domain_radius: float = 1.0, n_points: int = 256, seed: int = 0
) -> float:
    """Smallest ``det h'(x)`` over test points of the ball; ``ValueError`` naming the point if it is <= 0.

    Also rejects a non-callable ``h`` and one that changes the shape of its input.
    """
    _check_callable(h, "h")
    dim = validate.positive_int("dim", dim)
    domain_radius = validate.positive_float("domain_radius", domain_radius)
    n_points = validate.positive_int("n_points", n_points)
    validate.check_budget(
        "n_points", 8.0 * 4 * n_points * dim * (dim + 1), validate.memory_limit_bytes(), value=n_points
    )
    x = _test_points(dim, domain_radius, n_points, seed)
    with torch.no_grad():
        y = _apply_checked(h, x, "h")
    if not torch.all(torch.isfinite(y)):
        bad = int(torch.nonzero(~torch.isfinite(y).all(dim=1))[0])
        raise ValueError(f"h is not finite at the point {x[bad].tolist()}")
    dets = torch.linalg.det(batch_jacobian(h, x))
    worst = int(torch.argmin(dets))
    if not dets[worst] > 0:
        raise ValueError(
            f"the Jacobian determinant of h is {float(dets[worst]):.3g} <= 0 at the point "
            f"{x[worst].tolist()}: h must be positively oriented on the ball"
        )
    return float(dets[worst])


# --- the chapter's smooth maps --------------------------------------------------------------------------
EXAMPLE_MAPS = ("swirl", "sine-shear", "tanh-residual")


def example_map(name: str, dim: int, seed: int = 0, strength: float = 0.6) -> TorchMap:
    """Smooth, globally invertible, positively oriented maps of ``R^dim`` used by the chapter and tests.

    - ``"swirl"`` (dim 2): rotate by ``2 strength |x|^2`` radians, then a fixed linear map with det > 0 and a shift.
    - ``"sine-shear"``: ``M (x + (strength/2) sin(2 P x)) + c`` with P a cyclic shift of coordinates.
    - ``"tanh-residual"``: ``M (x + W2 tanh(W1 x + b)) + c``, random with ``||W2|| ||W1|| = strength``.

    Each map carries ``h.second_derivative_bound(radius)``: a certified bound on ``sup ||h''(x)||`` over the
    ball of that radius, derived by hand from the formula (comments in the code), which
    :func:`certified_deviations` needs.

    With ``strength < 1`` the two residual maps are globally invertible (their residual parts are
    ``strength``-Lipschitz), M has positive determinant, so all three are bi-Lipschitz diffeomorphisms.
    """
    name = validate.choice("name", name, EXAMPLE_MAPS)
    dim = validate.positive_int("dim", dim)
    strength = validate.positive_float("strength", strength)
    if name != "swirl" and strength >= 1:
        raise ValueError(f"strength must be < 1 for {name!r} to be invertible, got {strength}")
    validate.check_budget("dim", 8.0 * 8 * dim * dim, validate.memory_limit_bytes(), value=dim)
    gen = torch.Generator().manual_seed(seed)
    M = torch.linalg.matrix_exp(0.4 * torch.randn(dim, dim, dtype=DTYPE, generator=gen) / math.sqrt(dim))
    c = 0.2 * torch.randn(dim, dtype=DTYPE, generator=gen)
    if name == "swirl":
        if dim != 2:
            raise ValueError(f"the swirl map lives in the plane (dim 2), got dim {dim}")
        M = torch.tensor([[1.1, 0.25], [-0.15, 0.9]], dtype=DTYPE)

        def h(x):
            angle = 2 * strength * (x**2).sum(dim=1, keepdim=True)
            cos, sin = torch.cos(angle), torch.sin(angle)
            rotated = torch.cat([cos * x[:, :1] - sin * x[:, 1:], sin * x[:, :1] + cos * x[:, 1:]], dim=1)
            return rotated @ M.T + c

        def curvature(radius):  # f(x) = Rot(2 s |x|^2) x: ||f''(x)|| <= 12 s |x| + 16 s^2 |x|^3
            return 12 * strength * radius + 16 * strength**2 * radius**3
    elif name == "sine-shear":
        perm = [(k + 1) % dim for k in range(dim)]

        def h(x):
            return (x + 0.5 * strength * torch.sin(2 * x[:, perm])) @ M.T + c

        def curvature(radius):  # component k has second derivative -2 s sin(2 x_p(k)) in (p(k), p(k)) only
            return 2 * strength + 0 * radius
    else:
        width = 2 * dim + 2
        W1 = torch.randn(width, dim, dtype=DTYPE, generator=gen)
        W2 = torch.randn(dim, width, dtype=DTYPE, generator=gen)
        W1 *= 1.5 / torch.linalg.matrix_norm(W1, ord=2)
        W2 *= strength / 1.5 / torch.linalg.matrix_norm(W2, ord=2)
        b = 0.5 * torch.randn(width, dtype=DTYPE, generator=gen)

        def h(x):
            return (x + torch.tanh(x @ W1.T + b) @ W2.T) @ M.T + c

        tanh_curvature = 4 / (3 * math.sqrt(3))  # max |tanh''|
        w1, w2 = (float(torch.linalg.matrix_norm(W, ord=2)) for W in (W1, W2))

        def curvature(radius):  # ||W2 diag(tanh'') (W1 u) * (W1 v)|| <= ||W2|| max|tanh''| ||W1||^2
            return w2 * tanh_curvature * w1**2 + 0 * radius

    h.__name__ = name.replace("-", "_")
    m_norm = float(torch.linalg.matrix_norm(M, ord=2))

    def second_derivative_bound(radius):
        """Certified ``sup_{|x| <= radius} ||h''(x)||`` (bilinear operator norm), elementwise in ``radius``."""
        radius = np.asarray(radius, dtype=float)
        return (1 + 1e-9) * m_norm * curvature(radius)  # 1e-9: room for rounding in the norms

    h.second_derivative_bound = second_derivative_bound
    h.parts = {"name": name, "strength": strength, "M": M, "c": c}  # for the SymPy witness, sympy_map
    if name == "tanh-residual":
        h.parts.update(W1=W1, b=b, W2=W2)
    return h


# --- Warm-up: linear maps (Hardt & Ma's Theorem 2.1 as the talk restates it) ----------------------------
def _orthogonal_log(Q: np.ndarray) -> np.ndarray:
    """A real skew-symmetric S with ``expm(S) = Q`` for an orthogonal Q with det +1 (real Schur form)."""
    T, Z = scipy.linalg.schur(Q, output="real")
    d = Q.shape[0]
    S = np.zeros((d, d))
    minus_ones = []
    i = 0
    while i < d:
        if i + 1 < d and abs(T[i + 1, i]) > 1e-12:
            theta = math.atan2(T[i + 1, i], T[i, i])
            S[i, i + 1], S[i + 1, i] = -theta, theta
            i += 2
        else:
            if T[i, i] < 0:
                minus_ones.append(i)
            i += 1
    for p, q in zip(minus_ones[::2], minus_ones[1::2]):  # det +1: the -1 eigenvalues come in pairs
        S[p, q], S[q, p] = -math.pi, math.pi
    return Z @ S @ Z.T


def _fallback_factorize(R: np.ndarray, depth: int) -> np.ndarray:
    """Layers with ``(I + A[depth-1]) ... (I + A[0]) = R``: the polar split R = Q P, equal roots of each."""
    d = R.shape[0]
    eye = np.eye(d)
    if depth == 1:
        return (R - eye)[None]
    U, s, Vt = np.linalg.svd(R)
    Q = U @ Vt
    log_P = (Vt.T * np.log(s)) @ Vt
    log_Q = _orthogonal_log(Q)
    p = depth // 2
    q = depth - p
    A = np.empty((depth, d, d))
    A[:p] = scipy.linalg.expm(log_P / p) - eye  # P acts first
    A[p:] = scipy.linalg.expm(log_Q / q) - eye
    return A


#: ``"hardt-ma"``: the SVD scheme of Hardt & Ma's proof; ``"polar"``: the polar split of the linear chapter;
#: ``"logarithm"``: equal layers from the principal real logarithm.
LINEAR_METHODS = ("hardt-ma", "polar", "logarithm")


@functools.lru_cache(maxsize=64)
def _matrix_logarithm(shape: tuple[int, int], entries: bytes) -> np.ndarray:
    """``scipy.linalg.logm`` of the float64 matrix with these bytes, read-only. The representation sweeps
    factorise one linear part ``h'(0)`` at every depth of every spacing: its logarithm is computed once."""
    L = scipy.linalg.logm(np.frombuffer(entries, dtype=np.float64).reshape(shape))
    L.setflags(write=False)
    return L


def _logarithm_factorize(R: np.ndarray, depth: int) -> tuple[np.ndarray, str]:
    """Equal layers ``expm(log(R)/depth) - I`` with the principal real logarithm, when R has one."""
    R = np.ascontiguousarray(R, dtype=np.float64)
    L = _matrix_logarithm(R.shape, R.tobytes())
    scale = max(1.0, float(np.max(np.abs(L))))
    if np.iscomplexobj(L):
        if np.max(np.abs(L.imag)) > 1e-10 * scale:  # an eigenvalue on the negative real axis
            return _fallback_factorize(R, depth), "polar fallback (no real logarithm)"
        L = L.real
    layers = np.repeat((scipy.linalg.expm(L / depth) - np.eye(R.shape[0]))[None], depth, axis=0)
    return layers, "principal logarithm"


def linear_near_identity_factors(R, depth: int, method: str = "hardt-ma") -> tuple[np.ndarray, str]:
    """Layers ``A`` (depth, d, d) with ``(I + A[depth-1]) ... (I + A[0]) = R`` for det R > 0, and their source.

    ``method="hardt-ma"``: the SVD scheme of Hardt & Ma's proof (``resnet_theory.linear.factorize_near_identity``
    with ``method="svd"``); ``method="polar"``: the linear chapter's polar split (``method="polar"`` there).
    ``method="logarithm"``: equal layers ``expm(log(R)/depth) - I`` from the principal real logarithm (the polar
    fallback when R has a negative real eigenvalue). Both are ``O(1/depth)``; the constants differ. The product
    is verified either way.
    """
    R = validate.square_matrix("R", R)
    depth = validate.positive_int("depth", depth)
    method = validate.choice("method", method, LINEAR_METHODS)
    det = np.linalg.det(R)
    if not det > 0:
        raise ValueError(f"R must have a positive determinant, got {det:.3g}")
    if method == "logarithm":
        A, source = _logarithm_factorize(R, depth)
    else:
        linear_method = "svd" if method == "hardt-ma" else "polar"
        A = np.asarray(factorize_near_identity(R, depth, method=linear_method), dtype=float)
        source = f"resnet_theory.linear ({linear_method})"
    product = np.eye(R.shape[0])
    for layer in A:
        product = (np.eye(R.shape[0]) + layer) @ product
    err = np.max(np.abs(product - R))
    if A.shape != (depth, *R.shape) or not err <= 1e-9 * max(1.0, np.max(np.abs(R))):
        raise validate.DivergenceError(f"the linear factorisation ({source}) does not reproduce R (error {err:.2e})")
    return A, source


def svd_cancellation(R) -> dict:
    """For ``R`` with det R > 0: the largest rotation angles of U, of V^T (oriented SVD ``R = U K V^T``) and
    of their product ``U V^T`` (the polar factor), and ``||log R||`` (principal real logarithm, NaN if none).

    Near the identity U and V^T can each be far from I while ``U V^T`` is close to it: a scheme that splits U
    and V^T separately pays for both rotations."""
    R = validate.square_matrix("R", R)
    if not np.linalg.det(R) > 0:
        raise ValueError("R must be a square matrix with a positive determinant")
    U, _, Vt = np.linalg.svd(R)
    if np.linalg.det(U) < 0:
        U[:, -1] *= -1
        Vt[-1, :] *= -1
    angle = lambda Q: float(np.linalg.norm(_orthogonal_log(Q), 2))  # noqa: E731
    L = scipy.linalg.logm(R)
    log_norm = float(np.linalg.norm(L.real, 2)) if np.max(np.abs(np.imag(L))) < 1e-10 else float("nan")
    return {"angle_U": angle(U), "angle_V": angle(Vt), "angle_polar": angle(U @ Vt), "log_norm": log_norm}


# --- the representation result: the rescaling construction, scales a_0 < ... < a_m ----------------------
SPACINGS = ("uniform", "geometric")


def scale_schedule(m: int, spacing="uniform") -> np.ndarray:
    """Scales ``0 = a_0 < a_1 < ... < a_m = 1`` (length m + 1).

    ``"uniform"``: ``a_i = i / m``. ``"geometric"``: ``a_1 = 1/m`` and a constant ratio up to ``a_m = 1``,
    i.e. ``a_i = m^{-(m-i)/(m-1)}`` (the spacing whose analysis gives ``log m / m``). An array of length
    ``m + 1`` is checked and returned as is.
    """
    m = validate.positive_int("m", m)
    validate.check_budget("m", 8.0 * 4 * (m + 1), validate.memory_limit_bytes(), value=m)
    if isinstance(spacing, str):
        if validate.choice("spacing", spacing, SPACINGS) == "uniform":
            return np.arange(m + 1) / m
        if m == 1:
            return np.array([0.0, 1.0])
        i = np.arange(1, m + 1)
        return np.concatenate([[0.0], float(m) ** (-(m - i) / (m - 1))])
    a = validate.finite_array("spacing", spacing, shape=(m + 1,))
    if a[0] != 0 or a[-1] != 1:
        raise ValueError(
            f"spacing (the scales) must run from a_0 = 0 to a_m = 1, got {float(a[0])!r} to {float(a[-1])!r}"
        )
    return validate.increasing("spacing", a)


class _RescalingPath:
    """``Phi_i = B_i o G_{a_i}`` with ``G_a(x) = g(a x)/a``, ``g = A^{-1}(h - h(0))``; see the module docstring."""

    def __init__(
        self, h: TorchMap, m: int, dim: int, scales: np.ndarray, newton_tol: float, newton_max_iter: int, linear: str
    ):
        self.h, self.m, self.dim = h, m, dim
        origin = torch.zeros(1, dim, dtype=DTYPE)
        with torch.no_grad():
            self.h0 = h(origin)[0]
        A = batch_jacobian(h, origin)[0].numpy()
        self.A = torch.as_tensor(A)
        self.A_inv = torch.as_tensor(np.linalg.inv(A))
        layers, self.linear_source = linear_near_identity_factors(A, m, linear)
        partial = [np.eye(dim)]
        for layer in layers:
            partial.append((np.eye(dim) + layer) @ partial[-1])
        partial[-1] = A  # exact at the end, so that Phi_m = h - h(0) up to the inverse's accuracy
        self.B = [torch.as_tensor(P) for P in partial]
        self.B_inv = [torch.as_tensor(np.linalg.inv(P)) for P in partial]
        self.scales = [float(a) for a in scales]
        self.newton_tol, self.newton_max_iter = newton_tol, newton_max_iter

    def g(self, x):
        return (self.h(x) - self.h0) @ self.A_inv.T

    def G(self, i, x):
        a = self.scales[i]
        return x if a == 0 else self.g(a * x) / a

    def phi(self, i, x):
        return self.G(i, x) @ self.B[i].T

    def h_inverse(self, z):
        return newton_inverse(
            self.h, z, x0=(z - self.h0) @ self.A_inv.T, tol=self.newton_tol, max_iter=self.newton_max_iter
        )

    def phi_inverse(self, i, y):
        a = self.scales[i]
        w = y @ self.B_inv[i].T
        if a == 0:
            return w
        return self.h_inverse(self.h0 + (a * w) @ self.A.T) / a

    def factor(self, i):
        def h_i(y):
            out = self.phi(i, self.phi_inverse(i - 1, y))
            return out + self.h0 if i == self.m else out

        h_i.__name__ = f"h_{i}"
        h_i.__doc__ = f"Layer {i} of {self.m}: Phi_{i} o Phi_{i - 1}^-1" + (" plus h(0)" if i == self.m else "")
        return h_i


def _damped_newton(h: TorchMap, target: torch.Tensor, x: torch.Tensor, tol: float, max_iter: int):
    """Damped Newton on ``h(x) = target`` (no autograd graph kept); returns x and the residual norms."""
    scale = 1.0 + target.norm(dim=1)

    def residual(x):
        with torch.no_grad():
            return h(x) - target

    r = residual(x)
    for _ in range(max_iter):
        rn = r.norm(dim=1)
        active = rn > tol * scale
        if not bool(active.any()):
            break
        J = batch_jacobian(h, x)
        step, info = torch.linalg.solve_ex(J, r.unsqueeze(-1))
        step = step.squeeze(-1)
        usable = active[:, None] & (info == 0)[:, None] & torch.isfinite(step).all(dim=1, keepdim=True)
        step = torch.where(usable, step, 0.0)
        t = torch.ones(x.shape[0], 1, dtype=x.dtype)
        for _ in range(30):  # backtrack where the residual would grow
            x_new = x - t * step
            r_new = residual(x_new)
            worse = ~(r_new.norm(dim=1) < rn) & active
            if not bool(worse.any()):
                break
            t[worse] /= 2
        x, r = x_new, r_new
    return x, r.norm(dim=1)


def newton_inverse(
    h: TorchMap, z: torch.Tensor, x0: torch.Tensor | None = None, tol: float = 1e-12, max_iter: int = 60
) -> torch.Tensor:
    """Solve ``h(x) = z`` row by row with damped Newton; differentiable in ``z``.

    Rows where Newton from ``x0`` fails are solved again by continuation: Newton along the targets
    ``(1 - s) h(x0) + s z`` for ``s = 1/K, ..., 1`` with K = 8, 32, 128. The iterations run without autograd;
    two final Newton steps are recorded, so derivatives of the result with respect to ``z`` (first and
    second order) are those of the true inverse. Raises :class:`NewtonConvergenceError` naming the worst
    target when the residual stays above ``tol * (1 + |z|)``.
    """
    _check_callable(h, "h")
    if not isinstance(z, torch.Tensor):
        raise TypeError(f"z must be a 2-D torch tensor (N, dim), got {validate.show(z)}")
    if z.ndim != 2:
        raise ValueError(f"z must be a 2-D torch tensor (N, dim), got shape {tuple(z.shape)}")
    tol = validate.positive_float("tol", tol)
    max_iter = validate.positive_int("max_iter", max_iter)
    validate.check_budget(
        "max_iter", max_iter, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=max_iter
    )
    start = (z if x0 is None else x0).detach().clone()
    target = z.detach()
    scale = 1.0 + target.norm(dim=1)
    x, rn = _damped_newton(h, target, start, tol, max_iter)
    for stages in (8, 32, 128):
        failed = ~(rn <= tol * scale) | ~torch.isfinite(x).all(dim=1)
        if not bool(failed.any()):
            break
        xs = start[failed]
        with torch.no_grad():
            origin = h(xs)
        for s in np.arange(1, stages + 1) / stages:
            stage_target = (1 - s) * origin + s * target[failed]
            xs, rs = _damped_newton(h, stage_target, xs, tol, min(max_iter, 20))
            if not bool(torch.all(rs <= tol * (1.0 + stage_target.norm(dim=1)))):
                break  # lost the path: try more stages
        x, rn = x.clone(), rn.clone()
        x[failed], rn[failed] = xs, rs
    if not bool(torch.all(rn <= tol * scale)) or not bool(torch.all(torch.isfinite(x))):
        worst = int(torch.argmax(torch.nan_to_num(rn / scale, nan=np.inf)))
        raise NewtonConvergenceError(
            f"Newton's method did not invert h at the target {target[worst].tolist()} (residual "
            f"{float(rn[worst]):.2e}, also with continuation): is h invertible there?"
        )
    for _ in range(2):  # recorded steps: derivatives in z come out right to second order
        x = x.detach() if not z.requires_grad else x
        with torch.enable_grad():
            xr = x if x.requires_grad else x.detach().requires_grad_(True)
            J = batch_jacobian(h, xr, create_graph=z.requires_grad)
            x = xr - torch.linalg.solve(J, (h(xr) - z).unsqueeze(-1)).squeeze(-1)
        if not z.requires_grad:
            x = x.detach()
    return x


def near_identity_factors(
    h: TorchMap,
    m: int,
    dim: int,
    domain_radius: float = 1.0,
    *,
    spacing="uniform",
    linear: str = "hardt-ma",
    n_check: int = 256,
    newton_tol: float = 1e-12,
    newton_max_iter: int = 60,
    seed: int = 0,
) -> list[TorchMap]:
    """Layers ``h_1, ..., h_m`` with ``h_m(... h_1(x)) = h(x)`` on the ball of ``domain_radius``.

    ``h`` maps a float64 torch tensor ``(N, dim)`` to ``(N, dim)``, is smooth, invertible, with positive
    Jacobian determinant. The construction (module docstring): move ``h(0)`` to 0, factor ``A = h'(0)`` with
    the linear near-identity factorisation (``linear``: see :func:`linear_near_identity_factors`), and
    interpolate the rest by rescaling, ``G_a(x) = g(a x)/a``, at the
    scales of :func:`scale_schedule` (``spacing``: ``"uniform"``, ``"geometric"`` or an array ``a_0..a_m``).
    ``h_1`` is explicit; every later layer inverts ``h`` by Newton's method (:func:`newton_inverse`), which
    raises :class:`NewtonConvergenceError` for points where it cannot.

    Raises ``ValueError`` for ``m < 1``, a non-callable or shape-changing ``h``, and an ``h`` whose Jacobian
    determinant is not positive at one of ``n_check`` test points of the ball (the message names the point).
    """
    _check_callable(h, "h")
    m = validate.positive_int("m", m)
    dim = validate.positive_int("dim", dim)
    domain_radius = validate.positive_float("domain_radius", domain_radius)
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    validate.check_budget("(m, dim)", 8.0 * 4 * (m + 1) * dim * dim, validate.memory_limit_bytes(), value=(m, dim))
    n_check = validate.positive_int("n_check", n_check)
    validate.check_budget("n_check", 8.0 * 4 * n_check * dim * (dim + 1), validate.memory_limit_bytes(), value=n_check)
    scales = scale_schedule(m, spacing)
    check_positive_orientation(h, dim, domain_radius, n_check, seed)
    newton_tol = validate.positive_float("newton_tol", newton_tol)
    linear = validate.choice("linear", linear, LINEAR_METHODS)
    path = _RescalingPath(
        h, m, dim, scales, newton_tol, validate.positive_int("newton_max_iter", newton_max_iter), linear
    )
    return [path.factor(i) for i in range(1, m + 1)]


def compose(factors: Sequence[TorchMap], x: torch.Tensor) -> torch.Tensor:
    """``h_m(... h_1(x))`` for factors ``[h_1, ..., h_m]``."""
    if len(factors) == 0:
        raise ValueError("compose needs at least one factor")
    for f in factors:
        _check_callable(f, "every factor")
        x = f(x)
    return x


def alternating_split(h: TorchMap, m: int, dim: int, *, newton_tol: float = 1e-12) -> list[TorchMap]:
    """A plain split of ``h`` that is nowhere near the identity: ``h, h^{-1}, h, ..., h`` (m odd).

    Every layer moves points as much as h does, whatever m is: the contrast to :func:`near_identity_factors`.
    """
    _check_callable(h, "h")
    m = validate.positive_int("m", m)
    dim = validate.positive_int("dim", dim)
    newton_tol = validate.positive_float("newton_tol", newton_tol)
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    if m % 2 == 0:
        raise ValueError(f"the alternating split needs an odd number of layers, got m = {m}")
    origin = torch.zeros(1, dim, dtype=DTYPE)
    _apply_checked(h, origin, "h")
    h0 = h(origin).detach()
    A_inv = torch.linalg.inv(batch_jacobian(h, origin)[0])

    def h_inv(z):
        return newton_inverse(h, z, x0=(z - h0) @ A_inv.T, tol=newton_tol)

    return [h if i % 2 == 0 else h_inv for i in range(m)]


# --- the representation result: pictures, a grid carried through the layers -----------------------------
def grid_lines(half_width: float = 0.7, n_lines: int = 9, n_points: int = 81) -> list[torch.Tensor]:
    """Horizontal and vertical lines of a square grid in the plane, each ``(n_points, 2)``."""
    half_width = validate.positive_float("half_width", half_width)
    n_lines, n_points = validate.positive_int("n_lines", n_lines), validate.positive_int("n_points", n_points)
    validate.check_budget(
        "(n_lines, n_points)",
        64.0 * n_lines * n_points + 8.0 * (n_lines + n_points),
        validate.memory_limit_bytes(),
        value=(n_lines, n_points),
    )
    ticks = torch.linspace(-half_width, half_width, n_lines, dtype=DTYPE)
    t = torch.linspace(-half_width, half_width, n_points, dtype=DTYPE)
    return [torch.stack([t, torch.full_like(t, c)], dim=1) for c in ticks] + [
        torch.stack([torch.full_like(t, c), t], dim=1) for c in ticks
    ]


def carry_grid(factors: Sequence[TorchMap], lines: Sequence[torch.Tensor]) -> list[list[np.ndarray]]:
    """The grid after 0, 1, ..., m layers: ``out[k][j]`` is line j after layers ``h_1 .. h_k``."""
    if len(factors) == 0:
        raise ValueError("need at least one factor")
    points = torch.cat(list(lines))
    sizes = [len(line) for line in lines]
    stages = [points]
    with torch.no_grad():
        for f in factors:
            stages.append(f(stages[-1]))
    return [[part.numpy() for part in torch.split(stage, sizes)] for stage in stages]


# --- the representation result: the rate, ||h_i - Id||_L against depth (Lipschitz constants, certificates) ---
def _spectral_norms(J: torch.Tensor) -> torch.Tensor:
    finite = torch.isfinite(J).flatten(1).all(dim=1)
    if not bool(finite.all()):
        raise ValueError(
            f"the Jacobian is not finite (NaN or inf) at {int((~finite).sum())} of {J.shape[0]} "
            f"points of the ball; the map must be differentiable there"
        )
    return torch.linalg.matrix_norm(J, ord=2)


def singular_values(M: torch.Tensor) -> torch.Tensor:
    """Singular values of a batch of square matrices ``(..., d, d)``, largest first.

    Closed forms for d = 1 (``|m|``) and d = 2 (``|q| + |r|`` and ``||q| - |r||`` with q and r the conformal
    and anticonformal parts ``((a + d) + i(c - b))/2`` and ``((a - d) + i(c + b))/2``), both accurate to a
    few units of rounding relative to the largest value; LAPACK's batched SVD otherwise, which loops over the
    matrices one by one and is the slowest step of :func:`certified_deviations` for tiny ones.
    """
    if not isinstance(M, torch.Tensor):  # the one rule: a wrong type is a TypeError
        raise TypeError(f"singular_values needs a torch tensor (..., d, d), got {validate.show(M)}")
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        raise ValueError(f"singular_values needs a batch of square matrices (..., d, d), got {validate.show(M)}")
    if M.shape[-1] == 1:
        return M[..., 0].abs()
    if M.shape[-1] == 2:
        a, b, c, d = M[..., 0, 0], M[..., 0, 1], M[..., 1, 0], M[..., 1, 1]
        q, r = torch.hypot(a + d, c - b) / 2, torch.hypot(a - d, c + b) / 2
        return torch.stack([q + r, (q - r).abs()], dim=-1)
    return torch.linalg.svdvals(M)


def _adam_step(x, grad, exp_avg, exp_avg_sq, step: int, lr: float, betas=(0.9, 0.999), eps=1e-8) -> None:
    """One step of ``torch.optim.Adam`` (its single-tensor update, no weight decay), in place on ``x`` and the
    moment estimates; ``step`` counts from 1."""
    beta1, beta2 = betas
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** float(step)
    bias_correction2 = 1 - beta2 ** float(step)
    denom = (exp_avg_sq.sqrt() / bias_correction2**0.5).add_(eps)
    x.addcdiv_(exp_avg, denom, value=-(lr / bias_correction1))


def _ascend(
    objective: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, radius: float, steps: int, lr: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Projected Adam ascent of a per-point objective on the ball; returns the best values and points seen.

    The update is ``torch.optim.Adam``'s (default betas and eps, :func:`_adam_step`), written out: making a
    ``torch.optim`` optimiser imports ``torch._dynamo`` on first use, about a CPU second for a few Adam steps."""
    x = x.detach().clone().requires_grad_(True)
    moments = (torch.zeros_like(x), torch.zeros_like(x))
    best = torch.full((x.shape[0],), -np.inf, dtype=DTYPE)
    best_x = x.detach().clone()
    for step in range(1, steps + 2):
        x.grad = None
        values = objective(x)
        better = values.detach() > best
        best = torch.where(better, values.detach(), best)
        best_x[better] = x.detach()[better]
        if not values.requires_grad:  # the objective does not depend on x (e.g. a linear map)
            break
        (-values.sum()).backward()
        with torch.no_grad():
            _adam_step(x, x.grad, *moments, step, lr)
            norms = x.norm(dim=1, keepdim=True)
            x.mul_(torch.clamp(radius / norms.clamp_min(1e-300), max=1.0))
    return best, best_x


@dataclass
class LipschitzEstimate:
    """The largest Jacobian spectral norm found, where, and how much the ascent added to the sampling."""

    value: float
    point: np.ndarray
    sampled: float


def lipschitz_constant(
    f: TorchMap,
    dim: int,
    domain_radius: float,
    *,
    n_points: int = 1024,
    n_refine: int = 8,
    refine_steps: int = 25,
    lr: float | None = None,
    seed: int = 0,
    return_details: bool = False,
):
    """A lower estimate of the Lipschitz constant of ``f`` on the ball of ``domain_radius`` in ``R^dim``.

    On a convex set the Lipschitz constant of a C^1 map is ``sup_x ||f'(x)||_2``. We evaluate the Jacobian
    spectral norm by autograd at the origin, the axis points on the sphere and ``n_points`` random points, then
    run projected gradient ascent from the ``n_refine`` worst ones. Every value returned is attained, so this
    is a **lower** estimate; it is not a certificate. Certified upper bounds exist for special maps, e.g.
    ``||W2|| ||W1||`` for the residual part ``x -> W2 s(W1 x + b)`` of a block with a 1-Lipschitz activation
    s (:func:`residual_block_lipschitz_bound`), or ``||M||`` for a linear map.

    ``f`` maps ``(N, dim)`` to ``(N, k)`` row by row. Returns a float, or a :class:`LipschitzEstimate` with
    ``return_details=True``.
    """
    _check_callable(f, "f")
    dim = validate.positive_int("dim", dim)
    domain_radius = validate.positive_float("domain_radius", domain_radius)
    n_points = validate.positive_int("n_points", n_points)
    n_refine = validate.non_negative_int("n_refine", n_refine)
    refine_steps = validate.non_negative_int("refine_steps", refine_steps)
    lr = 0.05 * domain_radius if lr is None else validate.positive_float("lr", lr)
    validate.check_budget(
        "n_points", 8.0 * 4 * n_points * dim * (dim + 1), validate.memory_limit_bytes(), value=n_points
    )
    validate.check_budget(
        "(n_refine, refine_steps)",
        float(n_refine) * refine_steps,
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(n_refine, refine_steps),
    )
    x = _test_points(dim, domain_radius, n_points, seed)
    try:
        with torch.no_grad():
            y = f(x[:2])
    except Exception as exc:
        raise ValueError(f"f failed on a batch of shape (2, {dim}): {exc}") from exc
    if not isinstance(y, torch.Tensor) or y.ndim != 2 or y.shape[0] != 2:
        raise ValueError(f"f must map a batch (N, {dim}) to a batch (N, k)")
    norms = _spectral_norms(batch_jacobian(f, x))
    k = min(n_refine, x.shape[0])
    sampled = float(norms.max())
    best_value, best_point = sampled, x[int(torch.argmax(norms))]
    if k and refine_steps:
        start = x[torch.topk(norms, k).indices]
        values, points = _ascend(
            lambda z: _spectral_norms(batch_jacobian(f, z, create_graph=True)), start, domain_radius, refine_steps, lr
        )
        j = int(torch.argmax(values))
        if float(values[j]) > best_value:
            best_value, best_point = float(values[j]), points[j]
    if not math.isfinite(best_value):
        raise ValueError("the Jacobian of f is not finite on the ball")
    if return_details:
        return LipschitzEstimate(best_value, best_point.detach().numpy(), sampled)
    return best_value


def factor_deviations(
    h: TorchMap,
    m: int,
    dim: int,
    domain_radius: float = 1.0,
    *,
    spacing="uniform",
    linear: str = "hardt-ma",
    n_points: int = 512,
    n_refine: int = 4,
    refine_steps: int = 15,
    seed: int = 0,
) -> np.ndarray:
    """``eps_i``, an estimate of ``||h_i - Id||_L`` on the layer's input set, for the layers of
    :func:`near_identity_factors` (same ``h, m, spacing``), without any inverse.

    The input set of ``h_i`` is ``D_{i-1} = Phi_{i-1}(ball)`` and at ``y = Phi_{i-1}(x)`` the chain rule gives
    ``h_i'(y) = B_i g'(a_i x) g'(a_{i-1} x)^{-1} B_{i-1}^{-1}`` with ``g' = A^{-1} h'``. We take the largest
    ``||h_i'(y) - I||_2`` over sampled x in the ball, refined by projected ascent. This is the Lipschitz
    constant of ``h_i - Id`` for the path metric of ``D_{i-1}``; :func:`lipschitz_constant` on a ball containing
    ``D_{i-1}`` gives the Euclidean one on that ball (the tests compare the two).
    """
    _check_callable(h, "h")
    m = validate.positive_int("m", m)
    dim = validate.positive_int("dim", dim)
    domain_radius = validate.positive_float("domain_radius", domain_radius)
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    validate.check_budget("(m, dim)", 8.0 * 4 * (m + 1) * dim * dim, validate.memory_limit_bytes(), value=(m, dim))
    n_points = validate.positive_int("n_points", n_points)
    validate.check_budget(
        "n_points", 8.0 * 4 * n_points * dim * (dim + 1), validate.memory_limit_bytes(), value=n_points
    )
    validate.check_budget(
        "(m, n_refine, refine_steps)",
        float(m)
        * validate.non_negative_int("n_refine", n_refine)
        * validate.non_negative_int("refine_steps", refine_steps),
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(m, n_refine, refine_steps),
    )
    scales = torch.as_tensor(scale_schedule(m, spacing))
    check_positive_orientation(h, dim, domain_radius, 64, seed)
    origin = torch.zeros(1, dim, dtype=DTYPE)
    A = batch_jacobian(h, origin)[0].numpy()
    layers, _ = linear_near_identity_factors(A, m, linear)
    B = [np.eye(dim)]
    for layer in layers:
        B.append((np.eye(dim) + layer) @ B[-1])
    B[-1] = A
    B = torch.as_tensor(np.stack(B))  # (m+1, d, d)
    A_inv = torch.as_tensor(np.linalg.inv(A))
    eye = torch.eye(dim, dtype=DTYPE)

    def deviations(x, create_graph=False):
        """``||h_i'(Phi_{i-1}(x_i)) - I||`` for points x of shape (N, d) (every layer) or (m, N, d) (layer i at x_i)."""
        xs = x.expand(m, -1, -1) if x.ndim == 2 else x
        pts = torch.stack([scales[1:, None, None] * xs, scales[:-1, None, None] * xs])  # (2, m, N, d)
        Jg = A_inv @ batch_jacobian(h, pts.reshape(-1, dim), create_graph=create_graph)  # g'(a x)
        Jg = Jg.reshape(2, m, xs.shape[1], dim, dim)
        outer = B[1:, None] @ Jg[0]  # B_i g'(a_i x)
        inner = B[:-1, None] @ Jg[1]  # B_{i-1} g'(a_{i-1} x)
        Ji = torch.linalg.solve(inner, outer, left=False)  # outer @ inner^{-1}
        return _spectral_norms(Ji - eye)  # (m, N)

    x = _test_points(dim, domain_radius, validate.positive_int("n_points", n_points), seed)
    values = deviations(x)  # (m, N)
    best = values.max(dim=1).values
    if n_refine and refine_steps:
        k = min(n_refine, x.shape[0])
        starts = x[torch.topk(values, k, dim=1).indices]  # (m, k, d)
        v, _ = _ascend(
            lambda z: deviations(z.reshape(m, k, dim), create_graph=True).reshape(-1),
            starts.reshape(m * k, dim),
            domain_radius,
            refine_steps,
            0.05 * domain_radius,
        )
        best = torch.maximum(best, v.reshape(m, k).max(dim=1).values)
    return best.detach().numpy()


def _linear_path(h: TorchMap, m: int, dim: int, linear: str):
    """``A = h'(0)`` and the partial products ``B_0 = I, B_i = (I + A_i) B_{i-1}, B_m = A`` (torch, (m+1, d, d))."""
    A = batch_jacobian(h, torch.zeros(1, dim, dtype=DTYPE))[0].numpy()
    layers, _ = linear_near_identity_factors(A, m, linear)
    B = [np.eye(dim)]
    for layer in layers:
        B.append((np.eye(dim) + layer) @ B[-1])
    B[-1] = A
    return torch.as_tensor(A), torch.as_tensor(np.stack(B))


@dataclass
class CertifiedDeviations:
    """Certified upper bounds on ``sup_{y in D_{i-1}} ||h_i'(y) - I||_2`` for each layer (see
    :func:`certified_deviations`), with the two bounds they are the cell-wise minimum of."""

    bound: np.ndarray  # (m,) the certified bound per layer
    grid_bound: np.ndarray  # (m,) max over cells of ||J_i(p) - I|| + delta * (Lipschitz bound of J_i)
    increment_bound: np.ndarray  # (m,) max over cells of ||A_i|| + ||B_i|| ||B_{i-1}^-1|| Lambda da |x| ||g'^-1||
    cell_radius: float  # every point of the ball is within this distance of a grid point
    n_cells: int


def _curvature_bound(h: TorchMap, second_derivative_bound) -> Callable:
    """``sup_{|x| <= rho} ||h''(x)||`` as a function of rho: the one given, a constant, or the one ``h`` carries."""
    curvature = (
        second_derivative_bound if second_derivative_bound is not None else getattr(h, "second_derivative_bound", None)
    )
    if curvature is None:
        raise ValueError(
            "certified_deviations needs a certified bound on ||h''|| (second_derivative_bound=...); h carries none"
        )
    if callable(curvature):
        return curvature
    constant = validate.positive_float("second_derivative_bound", curvature) if curvature != 0 else 0.0

    def constant_bound(rho):
        return np.full_like(np.asarray(rho, dtype=float), constant)

    return constant_bound


def _cell_centres(r: float, dim: int, grid_points: int) -> tuple[torch.Tensor, float]:
    """The centres of the cells that cover the ball of radius ``r`` (a cubic grid of about ``grid_points``
    points, those within ``r + delta``), and the cells' radius ``delta`` (half the grid cell's diagonal)."""
    n_axis = max(2, math.ceil(grid_points ** (1.0 / dim)))
    spacing_h = 2 * r / (n_axis - 1)
    delta = spacing_h * math.sqrt(dim) / 2
    axis = torch.linspace(-r, r, n_axis, dtype=DTYPE)
    grid = torch.cartesian_prod(*([axis] * dim)).reshape(-1, dim)
    return grid[grid.norm(dim=1) <= r + delta], delta


def certified_deviations(
    h: TorchMap,
    m: int,
    dim: int,
    domain_radius: float = 1.0,
    *,
    spacing="uniform",
    linear: str = "hardt-ma",
    grid_points: int = 4096,
    second_derivative_bound: Callable | float | None = None,
    exhaustive: bool = False,
) -> CertifiedDeviations:
    """Certified upper bounds on ``||h_i - Id||_L`` for the layers of :func:`near_identity_factors`.

    The quantity bounded is ``sup ||h_i'(y) - I||_2`` over the layer's input set ``D_{i-1} = Phi_{i-1}(ball)``,
    the Lipschitz constant of ``h_i - Id`` for the path metric of ``D_{i-1}`` (the Euclidean one where
    ``D_{i-1}`` is convex); :func:`factor_deviations` estimates the same quantity from below. With
    ``x = Phi_{i-1}^{-1}(y)`` in the ball, ``h_i'(y) = J_i(x) = B_i g'(a_i x) g'(a_{i-1} x)^{-1} B_{i-1}^{-1}``.

    The ball is covered by cells, balls of radius ``delta`` around the points ``p`` of a cubic grid
    (``grid_points`` points in the cube). ``Lambda(rho) = ||A^{-1}|| second_derivative_bound(rho)`` bounds the
    Lipschitz constant of ``g'`` on the ball of radius rho, so on a cell, with ``l_j = a_j Lambda(a_j(|p| +
    delta))``, ``||g'(a_j x)|| <= ||g'(a_j p)|| + delta l_j = K_j`` and ``||g'(a_j x)^{-1}|| <= 1 / (s_min(g'(a_j
    p)) - delta l_j) = S_j``. Two bounds hold on the cell, and the smaller is kept:

    - grid: ``||J_i(p) - I|| + delta ||B_i|| ||B_{i-1}^{-1}|| (l_i S_{i-1} + K_i S_{i-1}^2 l_{i-1})``;
    - increment: ``J_i(x) - I = (B_i B_{i-1}^{-1} - I) + B_i (g'(a_i x) - g'(a_{i-1} x)) g'(a_{i-1} x)^{-1}
      B_{i-1}^{-1}``, so ``||A_i|| + ||B_i|| ||B_{i-1}^{-1}|| Lambda(a_i rho) (a_i - a_{i-1}) rho S_{i-1}`` with
      ``rho = min(|p| + delta, r)``: this one shrinks with the step ``a_i - a_{i-1}``.

    ``second_derivative_bound``: a certified ``sup_{|x| <= rho} ||h''(x)||`` as a function of rho (numpy
    arrays in, arrays out) or a constant; default ``h.second_derivative_bound`` (the maps of
    :func:`example_map` carry one). Raises ``ArithmeticError`` when the grid is too coarse to keep ``g'``
    provably invertible on a cell.

    Only the maxima over cells are returned, so ``||J_i(p) - I||_2`` (an SVD per cell) is computed only on
    cells that can attain one of them: it lies between the largest column norm and the Frobenius norm of
    ``J_i(p) - I``, and a cell whose upper value is below the largest lower value cannot. ``exhaustive=True``
    computes it on every cell (same result; the tests compare the two).
    """
    _check_callable(h, "h")
    m = validate.positive_int("m", m)
    dim = validate.positive_int("dim", dim)
    r = validate.positive_float("domain_radius", domain_radius)
    grid_points = validate.positive_int("grid_points", grid_points)
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    validate.check_budget("(m, dim)", 8.0 * 4 * (m + 1) * dim * dim, validate.memory_limit_bytes(), value=(m, dim))
    validate.check_budget("grid_points", 8.0 * 4 * grid_points * m, validate.memory_limit_bytes(), value=grid_points)
    curvature = _curvature_bound(h, second_derivative_bound)
    scales = scale_schedule(m, spacing)
    check_positive_orientation(h, dim, r, 64, 0)
    A, B = _linear_path(h, m, dim, linear)
    B_inv = torch.linalg.inv(B)
    A_inv = torch.linalg.inv(A)
    coupling = (torch.linalg.matrix_norm(B[1:], ord=2) * torch.linalg.matrix_norm(B_inv[:-1], ord=2)).numpy()
    step_norms = torch.linalg.matrix_norm(B[1:] @ B_inv[:-1] - torch.eye(dim, dtype=DTYPE), ord=2).numpy()
    grid, delta = _cell_centres(r, dim, grid_points)
    p_norm = grid.norm(dim=1).numpy()
    rho = np.minimum(p_norm + delta, r)
    lam_g = float(torch.linalg.matrix_norm(A_inv, ord=2))

    def at_scale(j):
        a = float(scales[j])
        G = A_inv @ batch_jacobian(h, a * grid) if a > 0 else torch.eye(dim, dtype=DTYPE).expand(len(grid), dim, dim)
        sv = singular_values(G).numpy()
        lip = a * lam_g * np.asarray(curvature(a * (p_norm + delta)), dtype=float)
        with np.errstate(divide="ignore"):
            inv_bound = np.where(sv[:, -1] - delta * lip > 0, 1.0 / (sv[:, -1] - delta * lip), np.inf)
        return G, sv[:, 0] + delta * lip, inv_bound, lip

    grid_bound, increment_bound, bound = np.empty(m), np.empty(m), np.empty(m)
    previous = at_scale(0)
    eye = torch.eye(dim, dtype=DTYPE)
    for i in range(1, m + 1):
        current = at_scale(i)
        G, K, _, lip = current
        G_prev, _, S_prev, lip_prev = previous
        if not np.all(np.isfinite(S_prev)):
            raise ArithmeticError(
                f"grid too coarse: g' is not provably invertible on every cell at scale "
                f"a_{i - 1} = {scales[i - 1]:.3g}; raise grid_points"
            )
        D = B[i] @ torch.linalg.solve(G_prev, G, left=False) @ B_inv[i - 1] - eye  # J_i(p) - I
        spread = delta * coupling[i - 1] * (lip * S_prev + K * S_prev**2 * lip_prev)
        lam_here = lam_g * np.asarray(curvature(scales[i] * rho), dtype=float)
        by_increment = step_norms[i - 1] + coupling[i - 1] * lam_here * (scales[i] - scales[i - 1]) * rho * S_prev
        # ||D||_2 lies between the largest column norm and the Frobenius norm
        by_grid = D.norm(dim=-2).max(dim=-1).values.numpy() + spread
        upper = torch.linalg.matrix_norm(D).numpy() + spread
        needed = (upper >= by_grid.max()) | (np.minimum(upper, by_increment) >= np.minimum(by_grid, by_increment).max())
        if exhaustive:
            needed[:] = True
        by_grid[needed] = singular_values(D[torch.from_numpy(needed)])[:, 0].numpy() + spread[needed]
        grid_bound[i - 1], increment_bound[i - 1] = by_grid.max(), by_increment.max()
        bound[i - 1] = np.minimum(by_grid, by_increment).max()
        previous = current
    return CertifiedDeviations(bound, grid_bound, increment_bound, delta, len(grid))


@dataclass
class RateCertificate:
    """A bound on ``max_i ||h_i - Id||_L`` valid for *every* depth m (logarithm split of the linear part).

    With ``A = h'(0) = e^L``, ``B_i = e^{(i/m) L}``: ``||B_i B_{i-1}^{-1} - I|| <= e^{||L||/m} - 1``,
    ``||B_i|| ||B_{i-1}^{-1}|| <= e^{2 ||L||}``, and the increment bound of :func:`certified_deviations` with
    constants taken over the whole ball gives, for scales with largest step ``max_i (a_i - a_{i-1})``,

        ``max_i ||h_i - Id||_L <= (e^{||L||/m} - 1) + max step * e^{2 ||L||} Lambda r S``,

    where ``Lambda = ||A^{-1}|| sup ||h''||`` on the ball (the curvature bound must grow with the radius) and
    ``S >= sup ||g'(y)^{-1}||`` on the ball, certified on a grid. Uniform steps (1/m) make this ``C/m`` with
    ``C = ||L|| e^{||L||} + e^{2||L||} Lambda r S`` for every m.
    """

    log_norm: float  # ||L||
    curvature: float  # Lambda
    radius: float  # r
    inverse_bound: float  # S
    cell_radius: float

    @property
    def step_constant(self) -> float:
        return math.exp(2 * self.log_norm) * self.curvature * self.radius * self.inverse_bound

    @property
    def constant(self) -> float:
        """``C`` with ``max_i ||h_i - Id||_L <= C / m`` for every m with uniform scales."""
        return self.log_norm * math.exp(self.log_norm) + self.step_constant

    @property
    def log_constant(self) -> float:
        """``C'`` with ``max_i ||h_i - Id||_L <= C' log(m) / m`` for every m >= 2 with geometric scales
        (their largest step ``1 - m^{-1/(m-1)} <= log(m) / (m - 1) <= 2 log(m) / m``)."""
        return self.log_norm * math.exp(self.log_norm) / math.log(2) + 2 * self.step_constant

    def bound(self, m: int, spacing="uniform") -> float:
        """The certified bound on ``max_i ||h_i - Id||_L`` at depth m for the given scales."""
        m = validate.positive_int("m", m)
        step = float(np.max(np.diff(scale_schedule(m, spacing))))
        return math.expm1(self.log_norm / m) + step * self.step_constant


def rate_certificate(
    h: TorchMap,
    dim: int,
    domain_radius: float = 1.0,
    *,
    grid_points: int = 4096,
    second_derivative_bound: Callable | None = None,
) -> RateCertificate:
    """:class:`RateCertificate` for ``h`` on the ball (needs a real logarithm of ``h'(0)`` and a certified,
    radius-nondecreasing bound on ``||h''||``, by default ``h.second_derivative_bound``)."""
    _check_callable(h, "h")
    dim = validate.positive_int("dim", dim)
    r = validate.positive_float("domain_radius", domain_radius)
    grid_points = validate.positive_int("grid_points", grid_points)
    validate.check_budget("grid_points", 8.0 * 4 * grid_points, validate.memory_limit_bytes(), value=grid_points)
    curvature = second_derivative_bound or getattr(h, "second_derivative_bound", None)
    if curvature is None or not callable(curvature):
        raise ValueError("rate_certificate needs a callable certified bound on ||h''|| (second_derivative_bound)")
    check_positive_orientation(h, dim, r, 64, 0)
    A = batch_jacobian(h, torch.zeros(1, dim, dtype=DTYPE))[0].numpy()
    L = scipy.linalg.logm(A)
    if np.iscomplexobj(L):
        if np.max(np.abs(L.imag)) > 1e-10 * max(1.0, float(np.max(np.abs(L)))):
            raise ValueError("h'(0) has no real logarithm: the certificate assumes the logarithm split")
        L = L.real
    A_inv = torch.as_tensor(np.linalg.inv(A))
    n_axis = max(2, math.ceil(grid_points ** (1.0 / dim)))
    delta = (2 * r / (n_axis - 1)) * math.sqrt(dim) / 2
    axis = torch.linspace(-r, r, n_axis, dtype=DTYPE)
    grid = torch.cartesian_prod(*([axis] * dim)).reshape(-1, dim)
    grid = grid[grid.norm(dim=1) <= r + delta]
    lam = float(np.linalg.norm(np.linalg.inv(A), 2))
    sigma = float(singular_values(A_inv @ batch_jacobian(h, grid))[:, -1].min())
    sigma -= delta * lam * float(curvature(np.asarray(r + delta)))
    if not sigma > 0:
        raise ArithmeticError("grid too coarse to certify that g' is invertible on the ball; raise grid_points")
    return RateCertificate(float(np.linalg.norm(L, 2)), lam * float(curvature(np.asarray(r))), r, 1.0 / sigma, delta)


def equidistributed_scales(
    h: TorchMap,
    m: int,
    dim: int,
    domain_radius: float = 1.0,
    *,
    iterations: int = 2,
    linear: str = "hardt-ma",
    n_points: int = 256,
    seed: int = 0,
) -> np.ndarray:
    """Scales ``a_0..a_m`` chosen so that every layer deviates from the identity by about the same amount.

    Start from uniform scales, read off the local rate ``rho = eps_i / (a_i - a_{i-1})`` of each interval from
    :func:`factor_deviations`, and place the new scales at equal quantiles of ``int rho da`` (mesh
    equidistribution); repeat ``iterations`` times.
    """
    m = validate.positive_int("m", m)
    iterations = validate.positive_int("iterations", iterations)
    validate.check_budget(
        "m", 8.0 * 4 * (m + 1) * validate.positive_int("dim", dim) ** 2, validate.memory_limit_bytes(), value=m
    )
    validate.check_budget(
        "(m, iterations)",
        100.0 * iterations * m,
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(m, iterations),
    )
    a = scale_schedule(m, "uniform")
    for _ in range(iterations):
        eps = factor_deviations(
            h, m, dim, domain_radius, spacing=a, linear=linear, n_points=n_points, n_refine=0, seed=seed
        )
        rho = np.maximum(eps, 1e-12) / np.diff(a)
        cumulative = np.concatenate([[0.0], np.cumsum(rho * np.diff(a))])
        cumulative /= cumulative[-1]
        a = np.interp(np.arange(m + 1) / m, cumulative, a)
        a[0], a[-1] = 0.0, 1.0
        if not np.all(np.diff(a) > 0):
            raise validate.DivergenceError("equidistribution produced non-increasing scales")
    return a


RATE_SPACINGS = ("uniform", "geometric", "equidistributed")


@dataclass
class RateResult:
    """``eps(m) = max_i ||h_i - Id||_L`` (via :func:`factor_deviations`) over depths ``ms`` for one map and spacing."""

    map_name: str
    dim: int
    spacing: str
    ms: np.ndarray
    eps: np.ndarray
    #: certified upper bounds (:func:`certified_deviations`) at the same depths, when computed
    certified: np.ndarray | None = None

    @property
    def slope(self) -> float:
        """Least-squares exponent p of ``eps ~ c m^p`` on log-log axes."""
        p, _ = np.polyfit(np.log(self.ms), np.log(self.eps), 1)
        return float(p)

    @property
    def label(self) -> str:
        return f"{self.map_name}, d={self.dim}"


def deviation_rates(
    cases: Sequence[tuple[str, int]],
    ms: Sequence[int],
    spacings: Sequence[str] = RATE_SPACINGS,
    *,
    linear: str = "logarithm",
    domain_radius: float = 1.0,
    n_points: int = 256,
    seed: int = 0,
    certify_points: int | None = None,
) -> list[RateResult]:
    """:class:`RateResult` for every (map name, dim) in ``cases`` (maps of :func:`example_map`) and spacing.

    ``"equidistributed"`` uses :func:`equidistributed_scales` at each m; the others :func:`scale_schedule`.
    With ``certify_points``, also the certified upper bounds of :func:`certified_deviations` on a grid of
    about that many points (uniform and geometric scales; ``None`` for the equidistributed ones).
    """
    ms = np.asarray([validate.positive_int("m", m) for m in ms])
    if len(ms) < 2:
        raise ValueError("need at least two depths to measure a rate")
    validate.check_budget(
        "ms",
        100.0 * float(ms.sum()) * len(spacings) * len(cases),
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=ms.tolist(),
    )
    for spacing in spacings:
        validate.choice("spacing", spacing, RATE_SPACINGS)
    results = []
    for name, dim in cases:
        h = example_map(name, dim, seed=seed)
        for spacing in spacings:
            eps, certified = [], []
            for m in ms:
                scales = (
                    equidistributed_scales(h, int(m), dim, domain_radius, linear=linear, n_points=n_points, seed=seed)
                    if spacing == "equidistributed"
                    else spacing
                )
                eps.append(
                    factor_deviations(
                        h, int(m), dim, domain_radius, spacing=scales, linear=linear, n_points=n_points, seed=seed
                    ).max()
                )
                if certify_points is not None and spacing != "equidistributed":
                    certified.append(
                        certified_deviations(
                            h, int(m), dim, domain_radius, spacing=scales, linear=linear, grid_points=certify_points
                        ).bound.max()
                    )
            results.append(
                RateResult(name, dim, spacing, ms, np.array(eps), np.array(certified) if certified else None)
            )
    return results


# --- the representation result: maps it rules out (negative controls), and the SymPy witness ------------
RULED_OUT_MAPS = ("holder", "cusp")


def ruled_out_map(name: str, strength: float = 0.6) -> TorchMap:
    """Maps of the plane outside the representation theorem's hypotheses, for its negative controls.

    - ``"holder"``: ``h(x) = x (1 + strength |x|^(1/2))``, a bi-Lipschitz homeomorphism (for ``strength <= 1``)
      whose derivative is only Holder-1/2 at the origin, ``||h'(x) - h'(0)|| = 1.5 strength |x|^(1/2)``: it is
      not smooth in the theorem's sense (no Lipschitz derivative), and ``sup ||h''||`` on any ball around 0 is
      infinite (its ``second_derivative_bound`` says so).
    - ``"cusp"``: ``h(x) = (g(x_1), x_2)`` with ``g(t) = (c/3)(1 - (1 - t/c)^3)``, ``c = strength``: a smooth
      homeomorphism with ``g' = (1 - t/c)^2``, singular on the line ``x_1 = c``, so ``h^{-1}`` is not
      Lipschitz and h is not bi-Lipschitz. No composition of maps with ``||h_i - Id||_L <= eps < 1`` equals it
      (such a composition has an inverse with Lipschitz constant at most ``(1 - eps)^(-m)``).

    Both satisfy ``h(0) = 0`` and ``h'(0) = I``, and ``det h' >= 0``, so :func:`near_identity_factors` accepts
    them.
    """
    name = validate.choice("name", name, RULED_OUT_MAPS)
    strength = validate.positive_float("strength", strength)
    if name == "holder":
        if strength > 1:
            raise ValueError(f"strength must be <= 1 for the Holder map to be invertible, got {strength}")

        def h(x):
            r2 = (x**2).sum(dim=1, keepdim=True)
            safe = torch.where(r2 > 0, r2, torch.ones_like(r2))  # no NaN gradient through 0 ** (1/4)
            return x * (1 + strength * torch.where(r2 > 0, safe**0.25, torch.zeros_like(r2)))

        def second_derivative_bound(radius):  # ||h''(x)|| ~ |x|^(-1/2): unbounded on every ball around 0
            return np.full_like(np.asarray(radius, dtype=float), np.inf)
    else:
        c = strength

        def h(x):
            t = x[:, :1]
            return torch.cat([(c / 3) * (1 - (1 - t / c) ** 3), x[:, 1:]], dim=1)

        def second_derivative_bound(radius):  # |g''(t)| = (2/c) |1 - t/c| <= (2/c)(1 + radius/c)
            return (1 + 1e-9) * (2 / c) * (1 + np.asarray(radius, dtype=float) / c)

    h.__name__ = name
    h.second_derivative_bound = second_derivative_bound
    h.parts = {"name": name, "strength": strength}
    return h


def sympy_map(h: TorchMap):
    """The map ``h`` of :func:`example_map` or :func:`ruled_out_map` as SymPy expressions, written from the
    formulas independently of the torch code (the exact witness of its Jacobian): returns ``(components,
    symbols)``."""
    parts = getattr(h, "parts", None)
    if not isinstance(parts, dict) or "name" not in parts:
        raise ValueError("sympy_map needs a map made by example_map or ruled_out_map")
    name, s = parts["name"], parts["strength"]
    dim = parts["M"].shape[0] if "M" in parts else 2
    x = sp.symbols(f"x0:{dim}")
    if name == "holder":
        r = sp.sqrt(sum(v**2 for v in x))
        return [v * (1 + s * sp.sqrt(r)) for v in x], list(x)
    if name == "cusp":
        return [s / 3 * (1 - (1 - x[0] / s) ** 3), x[1] + 0 * x[0]], list(x)
    M, c = sp.Matrix(parts["M"].numpy()), sp.Matrix(parts["c"].numpy())
    X = sp.Matrix(x)
    if name == "swirl":
        angle = 2 * s * (x[0] ** 2 + x[1] ** 2)
        inner = sp.Matrix([[sp.cos(angle), -sp.sin(angle)], [sp.sin(angle), sp.cos(angle)]]) * X
    elif name == "sine-shear":
        inner = X + sp.Matrix([s / 2 * sp.sin(2 * x[(k + 1) % dim]) for k in range(dim)])
    else:
        W1, b, W2 = (sp.Matrix(np.atleast_2d(parts[k].numpy())) for k in ("W1", "b", "W2"))
        inner = X + W2 * (W1 * X + b.T).applyfunc(sp.tanh)
    return list(M * inner + c), list(x)


@dataclass
class RepresentationEvidence(RateResult):
    """Everything the representation claims are decided on, for one map and one spacing of the scales.

    ``eps`` (lower estimates, :func:`factor_deviations`) and ``certified`` (cell-wise certified bounds,
    :func:`certified_deviations`; ``inf`` where the map admits no certificate) at the depths ``ms``;
    ``constant``: the certificate's ``C`` (uniform scales, bound ``C/m``) or ``C'`` (geometric, bound
    ``C' log m / m``) of :func:`rate_certificate` (``certificate``), ``inf`` with ``reason`` when the map admits
    none; ``exact_errors``: ``max |h_m o ... o h_1 - h| / max |h|`` on the ball at the depths ``exact_depths``.
    """

    constant: float = math.inf
    reason: str = ""
    certificate: RateCertificate | None = None
    exact_depths: np.ndarray | None = None
    exact_errors: np.ndarray | None = None

    def rate_bound(self) -> np.ndarray:
        """The certificate's bound at each depth of ``ms`` (``C/m`` or ``C' log m / m``)."""
        ms = np.asarray(self.ms, dtype=float)
        shape = np.log(ms) / ms if self.spacing == "geometric" else 1.0 / ms
        return self.constant * shape


def try_rate_certificate(
    h: TorchMap, dim: int, domain_radius: float = 1.0, *, grid_points: int = 4096
) -> tuple[RateCertificate | None, str]:
    """:func:`rate_certificate`, or ``None`` and the reason when ``h`` admits none on the ball: ``sup ||h''||``
    infinite (``h'`` not Lipschitz) or ``g'`` not provably invertible on every cell (``ArithmeticError``)."""
    _check_callable(h, "h")
    curvature = getattr(h, "second_derivative_bound", None)
    if curvature is None or not callable(curvature):
        raise ValueError("try_rate_certificate needs h.second_derivative_bound (a certified bound on ||h''||)")
    if not np.isfinite(curvature(np.asarray(float(domain_radius)))):
        return None, r"$\sup \|h''\|$ on the ball is infinite ($h'$ is not Lipschitz)"
    try:
        return rate_certificate(h, dim, domain_radius, grid_points=grid_points), ""
    except ArithmeticError:
        return None, (
            "$g'$ could not be shown invertible on every cell of the grid (it is singular somewhere "
            "on the ball, or the grid is too coarse)"
        )


def representation_evidence(
    h: TorchMap,
    dim: int,
    ms: Sequence[int],
    spacing: str = "uniform",
    *,
    label: str | None = None,
    linear: str = "logarithm",
    domain_radius: float = 1.0,
    n_points: int = 256,
    certify_points: int = 20000,
    exact_depths: Sequence[int] = (1, 3, 12),
    n_exact: int = 300,
    seed: int = 0,
    certificate: tuple[RateCertificate | None, str] | None = None,
) -> RepresentationEvidence:
    """:class:`RepresentationEvidence` for ``h`` (any map with ``second_derivative_bound``; uniform or
    geometric scales). The same computation serves a map the theorem covers and one it rules out: where a
    certificate does not exist (see :func:`try_rate_certificate`; the cell-wise bounds of
    :func:`certified_deviations` likewise), the bound is ``inf`` and ``reason`` says why. ``certificate``: the
    result of :func:`try_rate_certificate` for ``h``, when already computed (it does not depend on the spacing).
    """
    _check_callable(h, "h")
    dim = validate.positive_int("dim", dim)
    spacing = validate.choice("spacing", spacing, SPACINGS)
    ms = np.asarray([validate.positive_int("m", m) for m in ms])
    if len(ms) < 2:
        raise ValueError("need at least two depths to measure a rate")
    validate.check_budget(
        "ms", 100.0 * float(ms.sum()), validate.LOOP_LIMIT, what="work", unit="loop iterations", value=ms.tolist()
    )
    validate.check_budget(
        "certify_points",
        8.0 * 4 * validate.positive_int("certify_points", certify_points) * dim * dim,
        validate.memory_limit_bytes(),
        value=certify_points,
    )
    cert, reason = (
        certificate
        if certificate is not None
        else try_rate_certificate(h, dim, domain_radius, grid_points=certify_points)
    )
    curvature_finite = bool(np.isfinite(h.second_derivative_bound(np.asarray(float(domain_radius)))))
    lower, certified = [], []
    for m in ms:
        lower.append(
            factor_deviations(
                h, int(m), dim, domain_radius, spacing=spacing, linear=linear, n_points=n_points, seed=seed
            ).max()
        )
        bound = math.inf
        if curvature_finite:
            try:
                bound = certified_deviations(
                    h, int(m), dim, domain_radius, spacing=spacing, linear=linear, grid_points=certify_points
                ).bound.max()
            except ArithmeticError:  # g' not provably invertible on some cell: no certified bound
                pass
        certified.append(bound)
    if cert is None:
        constant = math.inf
    else:
        constant = cert.constant if spacing == "uniform" else cert.log_constant
    x = ball_points(n_exact, dim, domain_radius, torch.Generator().manual_seed(seed))
    x = x * (0.999 * domain_radius / x.norm(dim=1, keepdim=True).clamp_min(domain_radius))
    exact_depths = np.asarray([validate.positive_int("exact depth", m) for m in exact_depths])
    errors = []
    with torch.no_grad():
        target = h(x)
        for m in exact_depths:
            factors = near_identity_factors(h, int(m), dim, domain_radius, spacing=spacing, linear=linear, seed=seed)
            errors.append(float((compose(factors, x) - target).abs().max() / target.abs().max()))
    name = label or getattr(h, "__name__", "h")
    return RepresentationEvidence(
        name,
        dim,
        spacing,
        ms,
        np.array(lower),
        np.array(certified),
        constant,
        reason,
        cert,
        exact_depths,
        np.array(errors),
    )


# --- the functional-gradient bound: Q(h) = 1/2 E ||h(X) - Y||^2 on an empirical distribution ------------
@dataclass
class ResidualBlock:
    """``z -> z + W2 tanh(W1 z + b)``; ``||block - Id||_L <= ||W2|| ||W1||`` since tanh is 1-Lipschitz."""

    W1: torch.Tensor
    b: torch.Tensor
    W2: torch.Tensor

    def __call__(self, z):
        return z + torch.tanh(z @ self.W1.T + self.b) @ self.W2.T

    def jacobian(self, z):
        """``I + W2 diag(1 - tanh^2(W1 z + b)) W1`` at each row of z, closed form, shape (N, d, d)."""
        s = 1 - torch.tanh(z @ self.W1.T + self.b) ** 2
        return torch.eye(z.shape[1], dtype=z.dtype) + (self.W2[None] * s[:, None, :]) @ self.W1


def residual_block_lipschitz_bound(W1, W2) -> float:
    """The certified bound ``||W2||_2 ||W1||_2`` on ``||x -> W2 s(W1 x + b)||_L`` for a 1-Lipschitz s."""
    W1 = torch.as_tensor(W1, dtype=DTYPE)
    W2 = torch.as_tensor(W2, dtype=DTYPE)
    if W1.ndim != 2 or W2.ndim != 2 or W2.shape[1] != W1.shape[0]:
        raise ValueError(f"need W1 (width, d) and W2 (d', width), got {tuple(W1.shape)} and {tuple(W2.shape)}")
    return float(torch.linalg.matrix_norm(W2, ord=2) * torch.linalg.matrix_norm(W1, ord=2))


def random_residual_blocks(
    m: int, dim: int, width: int, eps: float, generator: torch.Generator | None = None
) -> list[ResidualBlock]:
    """m random blocks, each rescaled so that its certified bound ``||W2|| ||W1||`` equals ``eps`` exactly."""
    m, dim, width = (validate.positive_int(n, v) for v, n in ((m, "m"), (dim, "dim"), (width, "width")))
    eps = validate.positive_float("eps", eps)
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    validate.check_budget(
        "(m, dim, width)",
        8.0 * m * (2 * width * dim + width + dim),
        validate.memory_limit_bytes(),
        value=(m, dim, width),
    )
    blocks = []
    for _ in range(m):
        W1 = torch.randn(width, dim, dtype=DTYPE, generator=generator)
        W2 = torch.randn(dim, width, dtype=DTYPE, generator=generator)
        b = torch.randn(width, dtype=DTYPE, generator=generator)
        W1 /= torch.linalg.matrix_norm(W1, ord=2)
        W2 *= eps / torch.linalg.matrix_norm(W2, ord=2)
        blocks.append(ResidualBlock(W1, b, W2))
    return blocks


def aligned_residual_blocks(m: int, dim: int, eps: float) -> list[ResidualBlock]:
    """m copies of ``z -> z - eps tanh(z)`` (``W1 = I``, ``b = 0``, ``W2 = -eps I``): ``||block - Id||_L = eps``
    (the slope at 0), and the Jacobian ``I - eps diag(1 - tanh^2 z)`` is ``(1 - eps) I`` at the origin. On inputs
    near 0 every layer's Jacobian is close to ``(1 - eps) I``, all aligned, so ``(h_m o ... o h_{i+1})'`` is close
    to ``(1 - eps)^(m-i) I``: the instance where the depth factor of the functional-gradient bound is tight."""
    m, dim = validate.positive_int("m", m), validate.positive_int("dim", dim)
    eps = validate.positive_float("eps", eps)
    if eps >= 1:
        raise ValueError(f"eps must be < 1 for a near-identity block, got {eps}")
    validate.check_budget("m", m, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=m)
    validate.check_budget(
        "(m, dim)", 8.0 * (m + 1) * (2 * dim * dim + dim), validate.memory_limit_bytes(), value=(m, dim)
    )
    eye = torch.eye(dim, dtype=DTYPE)
    return [ResidualBlock(eye.clone(), torch.zeros(dim, dtype=DTYPE), -eps * eye) for _ in range(m)]


@dataclass
class EmpiricalProblem:
    """An empirical distribution: distinct inputs ``atoms`` (K, d) with weights, and samples (x_j, y_j).

    ``h*`` (the minimiser of Q over all functions) is the mean of y over the samples at each atom.
    """

    atoms: torch.Tensor
    weights: torch.Tensor
    index: torch.Tensor
    y: torch.Tensor

    @property
    def h_star(self) -> torch.Tensor:
        sums = torch.zeros_like(self.atoms).index_add_(0, self.index, self.y)
        return sums / (self.weights[:, None] * self.y.shape[0])


def random_empirical_problem(
    n_atoms: int,
    dim: int,
    generator: torch.Generator | None = None,
    max_repeats: int = 3,
    noise: float = 0.5,
    atom_scale: float = 1.0,
) -> EmpiricalProblem:
    """Random atoms in ``R^dim`` (standard normal times ``atom_scale``), each seen 1..max_repeats times with
    noisy labels (so ``Q(h*) > 0``)."""
    atom_scale = validate.positive_float("atom_scale", atom_scale)
    n_atoms, dim, max_repeats = (
        validate.positive_int(n, v) for v, n in ((n_atoms, "n_atoms"), (dim, "dim"), (max_repeats, "max_repeats"))
    )
    validate.check_budget(
        "(n_atoms, dim)", 8.0 * 6 * n_atoms * max_repeats * dim, validate.memory_limit_bytes(), value=(n_atoms, dim)
    )
    atoms = atom_scale * torch.randn(n_atoms, dim, dtype=DTYPE, generator=generator)
    counts = torch.randint(1, max_repeats + 1, (n_atoms,), generator=generator)
    index = torch.repeat_interleave(torch.arange(n_atoms), counts)
    target = torch.sin(2 * atoms) + atoms.flip(1) ** 2 / 2
    y = target[index] + noise * torch.randn(len(index), dim, dtype=DTYPE, generator=generator)
    return EmpiricalProblem(atoms, counts.to(DTYPE) / len(index), index, y)


@dataclass
class FunctionalGradient:
    """Norms of ``D_{h_i} Q(h)`` in the dual of ``L2(P_i)`` and the quantities of the talk's bound."""

    norms: np.ndarray  # (m,) ||D_{h_i} Q(h)||
    excess_risk: float  # Q(h) - Q(h*)
    distance: float  # ||h - h*||_{L2(P)}
    gradients: list  # (K, d) arrays dQ/d delta_i at the atoms (autograd)

    def talk_bound(self, eps: float) -> float:
        """``(1 - eps)^(m-1) (Q(h) - Q(h*)) / ||h - h*||``, the bound as the notes on Bartlett's talk (review 002)
        report it (the paper's printed form is not available)."""
        m = len(self.norms)
        return (1 - eps) ** (m - 1) * self.excess_risk / self.distance

    def sharper_bounds(self, eps: float) -> np.ndarray:
        """Our derivation: ``||D_{h_i} Q|| >= (1 - eps)^(m-i) ||h - h*|| = 2 (1-eps)^(m-i) (Q - Q*)/||h - h*||``."""
        m = len(self.norms)
        return (1 - eps) ** (m - np.arange(1, m + 1)) * self.distance


def empirical_risk(
    blocks: Sequence[Callable], problem: EmpiricalProblem, perturbations: Sequence[torch.Tensor] | None = None
) -> torch.Tensor:
    """``Q = 1/(2n) sum_j ||h(x_j) - y_j||^2`` with ``h_i`` replaced by ``h_i + delta_i`` at the atoms' images."""
    if len(blocks) == 0:
        raise ValueError("need at least one layer")
    if not isinstance(problem, EmpiricalProblem):
        raise ValueError("problem must be an EmpiricalProblem")
    if perturbations is not None and len(perturbations) != len(blocks):
        raise ValueError(f"need one perturbation per layer ({len(blocks)}), got {len(perturbations)}")
    z = problem.atoms
    for i, block in enumerate(blocks):
        z = block(z)
        if perturbations is not None:
            z = z + perturbations[i]
    residual = z[problem.index] - problem.y
    return 0.5 * (residual**2).sum() / residual.shape[0]


def functional_gradient(blocks: Sequence[Callable], problem: EmpiricalProblem) -> FunctionalGradient:
    """The Frechet derivative of Q with respect to each layer, in ``L2`` of the sample.

    A perturbation of layer i is a function ``delta`` on the layer's inputs; only its values at the K atoms'
    images matter, and ``||delta||^2 = sum_k w_k |delta_k|^2`` (the ``L2(P)`` norm pushed through the earlier
    layers, which are injective). The derivative's norm is the dual one, ``(sum_k |dQ/d delta_k|^2 / w_k)^(1/2)``;
    ``||h - h*||`` is the ``L2(P)`` norm as well, the norm in which ``Q(h) - Q(h*) = ||h - h*||^2 / 2``.
    """
    if len(blocks) == 0:
        raise ValueError("need at least one layer")
    if not isinstance(problem, EmpiricalProblem):
        raise ValueError("problem must be an EmpiricalProblem")
    deltas = [torch.zeros_like(problem.atoms, requires_grad=True) for _ in blocks]
    with torch.enable_grad():
        Q = empirical_risk(blocks, problem, deltas)
        grads = torch.autograd.grad(Q, deltas)
    w = problem.weights
    norms = np.array([float(torch.sqrt(((g**2).sum(dim=1) / w).sum())) for g in grads])
    with torch.no_grad():
        h_atoms = problem.atoms
        for block in blocks:
            h_atoms = block(h_atoms)
        distance = float(torch.sqrt((w * ((h_atoms - problem.h_star) ** 2).sum(dim=1)).sum()))
        q_star = float(empirical_risk([lambda z: problem.h_star], problem))
        excess = float(empirical_risk(blocks, problem)) - q_star
    return FunctionalGradient(norms, excess, distance, [g.detach().numpy() for g in grads])


def functional_gradient_closed_form(blocks: Sequence[ResidualBlock], problem: EmpiricalProblem, i: int) -> np.ndarray:
    """``dQ/d delta_k = w_k (h_m o ... o h_{i+1})'(z_k)^T (h(u_k) - h*(u_k))`` from the blocks' Jacobians.

    ``i`` is 1-based; this is the closed-form witness for the autograd gradient of :func:`functional_gradient`.
    """
    m = len(blocks)
    i = validate.integer("i", i, minimum=1, maximum=m)
    with torch.no_grad():
        z = problem.atoms
        inputs = []
        for block in blocks:
            inputs.append(z)
            z = block(z)
        J = torch.eye(z.shape[1], dtype=DTYPE).expand(z.shape[0], -1, -1)
        for j in range(i, m):  # blocks i+1..m (0-based i..m-1)
            J = blocks[j].jacobian(inputs[j]) @ J
        r = z - problem.h_star
        return (problem.weights[:, None] * (J.transpose(1, 2) @ r.unsqueeze(-1)).squeeze(-1)).numpy()


@dataclass
class GradientBoundInstances:
    """Random compositions of residual blocks with certified ``||h_i - Id||_L <= eps`` and random data:
    per instance ``eps``, depth ``m``, the norms ``||D_{h_i} Q||`` and the talk's bound (review 002)."""

    eps: np.ndarray
    depths: np.ndarray
    norms: list
    talk: np.ndarray
    distances: np.ndarray

    @property
    def ratios(self) -> np.ndarray:
        """``min_i ||D_{h_i} Q|| / the talk's bound`` per instance."""
        return np.array([n.min() for n in self.norms]) / self.talk


def gradient_bound_instances(
    n: int,
    generator: torch.Generator | None = None,
    *,
    eps_range: tuple[float, float] = (0.02, 0.95),
    depths: Sequence[int] = range(1, 9),
    dims: Sequence[int] = range(1, 5),
    width: int = 6,
    n_atoms: Sequence[int] = range(2, 16),
) -> GradientBoundInstances:
    """``n`` instances: depth, dimension and number of distinct inputs drawn from ``depths``, ``dims``,
    ``n_atoms``, ``eps`` uniform in ``eps_range`` (which may lie outside the theorem's ``eps < 1``: the
    negative control), blocks of :func:`random_residual_blocks`, data of :func:`random_empirical_problem`."""
    n = validate.positive_int("n", n)
    validate.check_budget("n", 100.0 * n, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=n)
    low, high = (validate.finite_float(name, v) for name, v in zip(("eps_range[0]", "eps_range[1]"), eps_range))
    if not 0 < low < high:
        raise ValueError(f"eps_range must satisfy 0 < low < high, got {eps_range!r}")
    depths, dims, n_atoms = (list(v) for v in (depths, dims, n_atoms))
    if not depths or not dims or not n_atoms:
        raise ValueError("depths, dims and n_atoms must each hold at least one value")
    pick = lambda values: values[int(torch.randint(len(values), (1,), generator=generator))]  # noqa: E731
    eps_all, ms, norms, talk, distances = [], [], [], [], []
    for _ in range(n):
        m, d = pick(depths), pick(dims)
        eps = low + (high - low) * float(torch.rand(1, generator=generator))
        blocks = random_residual_blocks(m, d, width, eps, generator)
        problem = random_empirical_problem(pick(n_atoms), d, generator)
        fg = functional_gradient(blocks, problem)
        eps_all.append(eps), ms.append(m), norms.append(fg.norms)
        talk.append(fg.talk_bound(eps)), distances.append(fg.distance)
    return GradientBoundInstances(np.array(eps_all), np.array(ms), norms, np.array(talk), np.array(distances))


def functional_risk_sympy(blocks: Sequence[ResidualBlock], problem: EmpiricalProblem, i: int):
    """Q as a SymPy expression in the perturbation ``delta_i`` of layer i (1-based) at the K atoms' images:
    returns ``(expr, symbols)`` with the symbols in the order of ``delta_i.ravel()`` (the SymPy witness of
    the derivative :func:`functional_gradient` computes by autograd)."""
    m = len(blocks)
    i = validate.integer("i", i, minimum=1, maximum=m)
    K, d = problem.atoms.shape
    symbols = sp.symbols(f"delta0:{K * d}")
    delta = sp.Matrix(K, d, symbols)
    z = sp.Matrix(problem.atoms.numpy())
    for j, block in enumerate(blocks, start=1):
        W1, b, W2 = (sp.Matrix(np.atleast_2d(t.numpy())) for t in (block.W1, block.b, block.W2))
        pre = z * W1.T + sp.ones(K, 1) * b
        z = z + pre.applyfunc(sp.tanh) * W2.T
        if j == i:
            z = z + delta
    y = problem.y.numpy()
    index = problem.index.numpy()
    expr = sum((z[int(k), c] - float(y[j, c])) ** 2 for j, k in enumerate(index) for c in range(d))
    return expr / (2 * len(index)), list(symbols)


# --- the negative result in parameter space: a saddle at the identity, a strict local minimum near it ---
@dataclass
class SigmoidSaddle:
    """A one-block residual network ``x + sum_k V_k sigmoid(W_k x + b_k)`` on the line, data and a critical point.

    Parameters are a flat vector ``theta = (V_1, V_2, W_1, W_2, b_1, b_2)``; the target ``y`` is the network at
    ``theta_star`` (realisable) and ``theta_critical`` a critical point with positive loss. Built by
    :func:`sigmoid_saddle_example` (a saddle at the identity, for symmetric data only) and
    :func:`sigmoid_local_minimum_example` (a strict local minimum near the identity, generic data).
    """

    x: torch.Tensor
    y: torch.Tensor
    theta_star: np.ndarray
    theta_critical: np.ndarray
    #: the factor s applied to the output weights V (see :func:`sigmoid_local_minimum_example`)
    output_scale: float = 1.0

    @staticmethod
    def network(theta: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        V, W, b = theta[0:2], theta[2:4], theta[4:6]
        return x + (torch.sigmoid(x[:, None] * W + b) * V).sum(dim=1)

    def loss(self, theta) -> torch.Tensor:
        theta = torch.as_tensor(theta, dtype=DTYPE)
        return 0.5 * ((self.network(theta, self.x) - self.y) ** 2).mean()

    def as_map(self, theta) -> TorchMap:
        """The network at ``theta`` as a map of the line, ``(N, 1) -> (N, 1)`` (for the function-space view)."""
        theta = torch.as_tensor(validate.finite_array("theta", theta, shape=(6,)), dtype=DTYPE)
        return lambda z: self.network(theta, z[:, 0])[:, None]


def sigmoid_saddle_example(n: int = 8, v: float = 0.8, w: float = 2.0, b=(0.3, -0.7)) -> SigmoidSaddle:
    """:class:`SigmoidSaddle` with ``n`` points symmetric about 0 in ``[-1, 1]`` (n even, v, w nonzero).

    The target ``y = x + v (sigmoid(w x) - sigmoid(-w x))`` is the network at ``theta_star = (v, -v, w, -w, 0,
    0)``. ``theta_critical = (0, 0, 0, 0, b_1, b_2)`` computes the identity; it is critical only because the
    data are exactly symmetric (the target's odd residual then averages to zero, and every other derivative
    carries a factor V), and it is a saddle: at ``V = 0`` the ``(W, b)`` block of the Hessian vanishes."""
    n = validate.positive_int("n", n)
    validate.check_budget("n", 8.0 * 16 * n, validate.memory_limit_bytes(), value=n)
    if n % 2:
        raise ValueError(f"n must be even so that the inputs are symmetric about 0, got {n}")
    for value, name in ((v, "v"), (w, "w")):
        if validate.finite_float(name, value) == 0:
            raise ValueError(f"{name} must be a nonzero finite number, got {value!r}")
    b = tuple(float(t) for t in b)
    if len(b) != 2:
        raise ValueError("b must hold two biases")
    half = torch.linspace(1.0 / (n // 2), 1.0, n // 2, dtype=DTYPE)
    x = torch.cat([-half.flip(0), half])
    theta_star = np.array([v, -v, w, -w, 0.0, 0.0])
    y = SigmoidSaddle.network(torch.as_tensor(theta_star), x)
    return SigmoidSaddle(x, y.detach(), theta_star, np.array([0.0, 0.0, 0.0, 0.0, *b]))


#: Ten inputs and a two-unit target (``V*, W*, b*``), drawn once (numpy ``default_rng(15)``, rounded to 4
#: digits), and a point near a suboptimal local minimum that BFGS found from a random start.
_LOCAL_MIN_X = (-0.9103, -0.7075, -0.3112, -0.3093, -0.086, 0.1432, 0.3855, 0.4375, 0.6316, 0.9519)
_LOCAL_MIN_TARGET = (-0.5956, 2.0941, 2.1861, -1.617, 0.2015, 0.215)
_LOCAL_MIN_START = (0.5517, 1.2003, -7.8412, -4.0543, 3.4270, -1.1629)


def sigmoid_deviation_bound(theta) -> float:
    """Certified ``||f_theta - Id||_L <= sum_k |V_k W_k| / 4`` for ``f_theta(x) = x + sum_k V_k s(W_k x + b_k)``
    (``s' <= 1/4`` for the sigmoid)."""
    theta = validate.finite_array("theta", theta, shape=(6,))
    return float(np.abs(theta[0:2] * theta[2:4]).sum() / 4)


def sigmoid_local_minimum_example(deviation: float = 0.1, newton_steps: int = 8) -> SigmoidSaddle:
    """A near-identity strict local minimum of the two-unit sigmoid residual network that is not global.

    The data are ten fixed, asymmetric inputs with the realisable target ``f_{theta*}``; ``theta_critical`` is
    a local minimum with positive loss, polished by ``newton_steps`` Newton steps. Both are scaled so that the
    local minimum's certified deviation :func:`sigmoid_deviation_bound` equals ``deviation``: with ``V -> s V``
    for the target and the network, the loss is ``s^2`` times the unscaled one in ``(V / s, W, b)``, so every
    critical point (and its type) carries over and the near-identity region is reached at any ``deviation``.
    """
    deviation = validate.positive_float("deviation", deviation)
    newton_steps = validate.positive_int("newton_steps", newton_steps)
    validate.check_budget(
        "newton_steps", newton_steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=newton_steps
    )
    start = np.array(_LOCAL_MIN_START)
    s = deviation / sigmoid_deviation_bound(start)
    scale = np.array([s, s, 1, 1, 1, 1])
    theta_star = np.array(_LOCAL_MIN_TARGET) * scale
    x = torch.tensor(_LOCAL_MIN_X, dtype=DTYPE)
    y = SigmoidSaddle.network(torch.as_tensor(theta_star), x).detach()
    example = SigmoidSaddle(x, y, theta_star, start * scale, s)
    theta = torch.as_tensor(start * scale)
    for _ in range(newton_steps):
        g = torch.func.grad(example.loss)(theta)
        H = torch.func.hessian(example.loss)(theta)
        theta = theta - torch.linalg.solve(H, g)
    example.theta_critical = theta.numpy()
    return example
