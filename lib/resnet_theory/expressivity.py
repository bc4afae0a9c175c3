"""Finite-sample expressivity of ReLU residual networks: Hardt & Ma (2017), Section 3 and Appendix B.

Theorem 3.2 of the paper says that a residual network of ReLU blocks ``h -> h + V relu(U h + s)`` with
``O(n log n + r^2)`` parameters can map any ``n`` separated inputs onto their ``r``-class one-hot labels.
The proof is a construction, built and verified here:

1. **Normalise** the inputs (:class:`InputNormaliser`). Inputs that already have unit norm (the paper's
   Assumption 3.1) are used as given. Otherwise they are centred, divided by ``R = sqrt(2)`` times the
   largest centred norm and lifted onto the unit sphere of ``R^{d+1}``: ``z = (x - mu) / R``,
   ``x~ = (z, sqrt(1 - ||z||^2))``. The first ``d`` coordinates are an affine bijection of ``x``, so distinct
   inputs stay distinct (plain division by the norm would merge ``x`` and ``2x``). The factor ``sqrt(2)``
   keeps the lifted coordinate at least ``1/sqrt(2)``: at 0 the square root would turn rounding errors of
   ``1e-16`` into ``1e-8``.
2. **Project** to ``R^k`` with ``A_0`` (:func:`random_projection`): a Gaussian matrix with entries of
   variance ``1/k`` (the scale that preserves norms; the paper leaves it out), and, when ``k >= D`` (``D``
   the normalised dimension), the same matrix with its columns orthonormalised, an exact isometry.
3. **Surrogate labels**: ``r`` random unit vectors ``q_c`` in ``R^k`` (:func:`surrogate_labels`).
4. **One block per group of k points** (Lemma B.1, :func:`lemma_b1_block`): rows of ``U`` are the group's
   current representations ``alpha_j``, ``s = -t 1``, column ``j`` of ``V`` is
   ``(q_{y_j} - alpha_j) / (||alpha_j||^2 - t)``. The block moves exactly its group onto the surrogates
   and leaves every other point where it is if and only if (the corrected condition, checked on the actual
   vectors at every block)::

       max_{j in S, h != alpha_j} <alpha_j, h>  <  t  <  min_{j in S} ||alpha_j||^2

   where ``h`` runs over the current representations of all other points (moved ones included). ``t`` is
   the midpoint of that interval. A violated condition raises :class:`ConstructionError` naming the
   condition and the sample indices; the builder draws ``A_0`` and the ``q_c`` again a bounded number of
   times first.
5. **Output block** (well typed, no skip): ``y = V_out relu(U_out h + s_out)`` with the rows of ``U_out``
   the surrogates, ``s_out = -t_out 1`` and ``V_out = I_r / (1 - t_out)``. The paper's skip connection
   ``h + T(h)`` would add a ``k``-vector to an ``r``-vector.

The built network is verified on every training input before it is returned (never a network that does
not fit). :meth:`InterpolatingResNet.as_torch_module` gives the same function as a ``torch.nn.Module`` of
real residual blocks.

Parameter counts (:func:`paper_parameter_count`): the paper counts weights only,
``k D + depth 2 k^2 + (k r + r^2)``; with biases add ``depth k + r``. The normalisation constants
(``mu``, ``R``) are preprocessing, counted in neither.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits

#: BLAS threads for the block loops. The products are small (n x k times k x k, once per block); on the
#: shared 2-core machine OpenBLAS's waiting threads made the n = 20,000 build 1.5-30x slower than one thread.
BLAS_THREADS = 1
#: Largest |forward - one-hot| accepted on a training input when the network is verified.
FIT_TOLERANCE = 1e-6
#: Draws of A_0 and the surrogates tried by the builder before it gives up.
DEFAULT_ATTEMPTS = 4
#: Refuse networks with more weights than this (memory, not mathematics).
MAX_PARAMETERS = 400_000_000
PROJECTIONS = ("auto", "gaussian", "orthonormal", "printed")


class ConstructionError(ValueError):
    """A condition of the construction fails on the actual vectors.

    ``condition`` names it; ``indices`` are the sample indices (rows of the ``X`` given) involved.
    """

    def __init__(self, message: str, condition: str, indices: tuple = ()):
        super().__init__(message)
        self.condition = condition
        self.indices = tuple(int(i) for i in indices)


# --- input validation ------------------------------------------------------------------------------
def _as_inputs(X, name: str = "X") -> np.ndarray:
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"{name} must be a 2-D array of numbers, got {type(X).__name__}")
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists
        raise ValueError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex values")
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n points by d features), got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); need at least one point with one feature")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise ValueError(f"{name} contains NaN or inf ({int(bad.sum())} entries; first in row {row})")
    return arr


def _as_labels(y, n: int, num_classes) -> tuple[np.ndarray, int]:
    if isinstance(y, (str, bytes)) or y is None:
        raise TypeError(f"y must be a 1-D array of integer labels, got {type(y).__name__}")
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {arr.shape}")
    if arr.shape[0] != n:
        raise ValueError(f"X has {n} points but y has {arr.shape[0]} labels; they must match")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
            or arr.dtype == bool):
        raise TypeError(f"y must hold integer labels, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)):
            raise ValueError("y contains NaN or inf")
        if np.any(arr != np.round(arr)):
            raise ValueError("y must hold integer labels; got non-integral values")
    labels = arr.astype(np.int64)
    if labels.min() < 0:
        raise ValueError(f"labels must lie in 0..r-1; found {int(labels.min())} at index {int(labels.argmin())}")
    if num_classes is None:
        r = int(labels.max()) + 1
    else:
        if isinstance(num_classes, bool) or not isinstance(num_classes, numbers.Integral):
            raise TypeError(f"num_classes must be an integer, got {type(num_classes).__name__}")
        r = int(num_classes)
        if r < 1:
            raise ValueError(f"num_classes must be at least 1, got {r}")
        if labels.max() >= r:
            i = int(labels.argmax())
            raise ValueError(f"labels must lie in 0..{r - 1} (num_classes={r}); found {int(labels[i])} at index {i}")
    return labels, r


def _check_k(k) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"k must be a positive integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return int(k)


def unique_points(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the first occurrence of each distinct input (in data order), and each row's group.

    Identical inputs with the same label are merged; identical inputs with different labels raise a
    ``ValueError`` naming the indices.
    """
    X = _as_inputs(X)
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"X has {X.shape[0]} points but y has shape {y.shape}")
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    clash = y != y[first[inverse]]
    if clash.any():
        i = int(np.argmax(clash))
        j = int(first[inverse[i]])
        raise ValueError(f"inputs {j} and {i} are identical but have different labels "
                         f"({int(y[j])} and {int(y[i])}); no function can fit both")
    order = np.argsort(first, kind="stable")          # distinct points in data order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse]


# --- normalisation -------------------------------------------------------------------------------
@dataclass(frozen=True)
class InputNormaliser:
    """``x -> x~`` on the unit sphere, injective on the data (see the module docstring)."""

    mean: np.ndarray | None      # None: inputs already unit norm, used as given
    scale: float

    @property
    def lifted(self) -> bool:
        return self.mean is not None

    @staticmethod
    def fit(X, tol: float = 1e-9) -> "InputNormaliser":
        X = _as_inputs(X)
        norms = np.linalg.norm(X, axis=1)
        if np.all(np.abs(norms - 1.0) <= tol):
            return InputNormaliser(None, 1.0)
        mean = X.mean(axis=0)
        radius = math.sqrt(2.0) * float(np.linalg.norm(X - mean, axis=1).max())
        return InputNormaliser(mean, radius if radius > 0 else 1.0)

    def output_dim(self, d: int) -> int:
        return d + 1 if self.lifted else d

    def transform(self, X) -> np.ndarray:
        """Normalised inputs. Points outside the fitted ball (new data) are put on the sphere's equator
        band by dividing by their norm, so every output has unit norm."""
        X = _as_inputs(X)
        if not self.lifted:
            return X
        if X.shape[1] != self.mean.shape[0]:
            raise ValueError(f"X has {X.shape[1]} features; the network was built for {self.mean.shape[0]}")
        Z = (X - self.mean) / self.scale
        sq = np.einsum("ij,ij->i", Z, Z)
        lift = np.sqrt(np.clip(1.0 - sq, 0.0, None))
        out = np.concatenate([Z, lift[:, None]], axis=1)
        outside = sq > 1.0
        if outside.any():
            out[outside] /= np.sqrt(sq[outside])[:, None]
        return out


# --- the pieces of the construction --------------------------------------------------------------
def random_projection(D: int, k: int, rng: np.random.Generator, kind: str = "auto") -> np.ndarray:
    """The ``k x D`` matrix ``A_0``.

    ``"gaussian"``: entries ``N(0, 1/k)``, so ``E ||A_0 x||^2 = ||x||^2`` (Johnson-Lindenstrauss).
    ``"orthonormal"`` (needs ``k >= D``): the Gaussian matrix with its columns orthonormalised, so
    ``||A_0 x|| = ||x||`` exactly. ``"auto"``: orthonormal when ``k >= D``, else Gaussian.
    ``"printed"``: entries ``N(0, 1)``, the paper's unscaled matrix (norms grow like ``sqrt(k)``).
    """
    D = _check_k(D)
    k = _check_k(k)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    if kind not in PROJECTIONS:
        raise ValueError(f"unknown projection {kind!r}; choose one of {PROJECTIONS}")
    G = rng.standard_normal((k, D))
    if kind == "printed":
        return G
    if kind == "gaussian" or (kind == "auto" and k < D):
        return G / math.sqrt(k)
    if k < D:
        raise ValueError(f"an orthonormal projection needs k >= D; got k={k} < D={D}")
    Q, R = np.linalg.qr(G)
    return Q * np.sign(np.where(np.diag(R) == 0, 1.0, np.diag(R)))


def surrogate_labels(r: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``r`` independent uniformly random unit vectors in ``R^k`` (rows)."""
    r = _check_k(r)
    k = _check_k(k)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    Q = rng.standard_normal((r, k))
    return Q / np.linalg.norm(Q, axis=1, keepdims=True)


@dataclass(frozen=True)
class BlockCondition:
    """The corrected Lemma B.1 condition on one block: ``lower < t < upper``."""

    lower: float        # max <alpha_j, h> over j in S and every other current representation h
    upper: float        # min ||alpha_j||^2 over j in S
    lower_pair: tuple   # (row of h, column j) attaining ``lower`` (positions in the arrays given)
    upper_index: int    # column j attaining ``upper``

    @property
    def holds(self) -> bool:
        return bool(self.lower < self.upper)

    @property
    def margin(self) -> float:
        return self.upper - self.lower


def block_condition(alphas, others) -> BlockCondition:
    """The condition of Lemma B.1 for rows ``alphas`` (the group) against ``others`` (all other points).

    ``others`` may be empty (shape ``(0, k)``).
    """
    A = np.atleast_2d(np.asarray(alphas, dtype=np.float64))
    H = np.asarray(others, dtype=np.float64).reshape(-1, A.shape[1])
    if A.shape[0] == 0:
        raise ValueError("a block needs at least one point")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(H))):
        raise ValueError("representations contain NaN or inf")
    G_in = A @ A.T
    diag = np.diag(G_in).copy()
    np.fill_diagonal(G_in, -np.inf)
    G = np.concatenate([G_in, H @ A.T], axis=0)
    return _condition_from_gram(G, diag)


def _condition_from_gram(G: np.ndarray, diag: np.ndarray) -> BlockCondition:
    """``G[row, j] = <h_row, alpha_j>`` with the group's own diagonal already set to ``-inf``."""
    j_up = int(np.argmin(diag))
    if G.size == 0 or not np.isfinite(G).any():
        return BlockCondition(0.0 if diag[j_up] > 0 else -1.0, float(diag[j_up]), (-1, -1), j_up)
    flat = int(np.argmax(G))
    row, col = divmod(flat, G.shape[1])
    return BlockCondition(float(G[row, col]), float(diag[j_up]), (int(row), int(col)), j_up)


def lemma_b1_block(alphas, betas, others=None, threshold: float | None = None):
    """The block of Lemma B.1 that moves ``alphas[j]`` to ``betas[j]`` and fixes every row of ``others``.

    Returns ``(U, V, s, condition)`` with ``U, V`` of shape ``(k, k)`` (``k`` = the dimension; the group
    may have fewer than ``k`` points, the spare rows and columns are zero) and ``s = -t 1``. ``threshold``
    ``t`` defaults to the midpoint of the corrected condition's interval; a given ``t`` is used as is,
    so the printed recipe ``t = 1 - 2 rho'`` can be tried. Raises :class:`ConstructionError` when no
    threshold works and none is given.
    """
    A = np.atleast_2d(np.asarray(alphas, dtype=np.float64))
    B = np.atleast_2d(np.asarray(betas, dtype=np.float64))
    m, k = A.shape
    if B.shape != A.shape:
        raise ValueError(f"alphas and betas must have the same shape, got {A.shape} and {B.shape}")
    if m > k:
        raise ValueError(f"a block in R^{k} moves at most {k} points, got {m}")
    if others is None:
        others = np.zeros((0, k))
    cond = block_condition(A, others)
    if threshold is None:
        if not cond.holds:
            raise ConstructionError(
                f"Lemma B.1 condition fails: <alpha_{cond.lower_pair[1]}, h> = {cond.lower:.6g} is not below "
                f"min ||alpha_j||^2 = {cond.upper:.6g}", "lemma-b1", ())
        t = 0.5 * (cond.lower + cond.upper)
    else:
        t = float(threshold)
    norms_sq = np.einsum("ij,ij->i", A, A)
    if np.any(norms_sq - t == 0):
        raise ValueError("threshold equals a squared norm of the group; the block is undefined")
    U = np.zeros((k, k))
    V = np.zeros((k, k))
    U[:m] = A
    V[:, :m] = ((B - A) / (norms_sq - t)[:, None]).T
    s = np.full(k, -t)
    return U, V, s, cond


def apply_block(H, U, V, s) -> np.ndarray:
    """``H + relu(H U^T + s) V^T`` for rows ``H``: one residual block on many points."""
    H = np.array(H, dtype=np.float64)
    Z = H @ U.T
    Z += s
    np.maximum(Z, 0.0, out=Z)
    active = np.flatnonzero(Z.any(axis=1))      # the ReLU is exactly zero elsewhere: skip those rows
    if active.size:
        H[active] += Z[active] @ V.T
    return H


# --- separation and the choice of k ---------------------------------------------------------------
def separation(X, chunk: int = 2048) -> float:
    """``rho = min_{i != j} ||x_i - x_j||^2`` over the rows of ``X`` (at least two distinct rows)."""
    X = _as_inputs(X)
    n = X.shape[0]
    if n < 2:
        raise ValueError("separation needs at least two points")
    sq = np.einsum("ij,ij->i", X, X)
    best = np.inf
    for start in range(0, n, chunk):
        block = X[start:start + chunk]
        D2 = sq[start:start + chunk, None] + sq[None, :] - 2.0 * block @ X.T
        rows = np.arange(block.shape[0])
        D2[rows, start + rows] = np.inf
        best = min(best, float(D2.min()))
    return max(best, 0.0)


def paper_k(n: int, rho: float, c: float = 10.0) -> int:
    """The paper's choice ``k = ceil(c log n / rho^2)`` (natural log, ``c = 10``)."""
    n = _check_k(n)
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be a positive number, got {rho}")
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"c must be a positive number, got {c}")
    return max(1, math.ceil(c * math.log(max(n, 2)) / rho ** 2))


def jl_k(n: int, rho: float) -> int:
    """A ``k`` for which the Gaussian projection provably suffices with one threshold per block.

    A projection that keeps squared norms and distances of ``{0, x_1..x_n}`` within a factor ``1 +- eps``
    keeps ``<alpha_i, alpha_j> <= 1 + eps - (1 - eps) rho / 2`` and ``||alpha_i||^2 >= 1 - eps``; a common
    threshold fits between them iff ``eps < rho / (4 + rho)``. The Johnson-Lindenstrauss bound
    ``k >= 4 ln(n + 1) / (eps^2/2 - eps^3/3)`` is then evaluated at ``eps = rho / (4 + rho)``.
    """
    n = _check_k(n)
    if not (np.isfinite(rho) and 0 < rho <= 4):
        raise ValueError(f"rho must lie in (0, 4] for unit vectors, got {rho}")
    eps = rho / (4.0 + rho)
    return math.ceil(4.0 * math.log(n + 1) / (eps ** 2 / 2 - eps ** 3 / 3))


def default_k(D: int) -> int:
    """The builder's default: ``k = max(D, 2)``, the smallest width with an exactly isometric ``A_0``.

    With an isometry the representations keep the inputs' inner products, so the Lemma B.1 condition
    holds whatever the separation ``rho`` (the paper's ``10 log n / rho^2`` grows without bound as the data
    cluster); only random surrogates landing on a data point could break it, and the builder checks.
    """
    return max(_check_k(D), 2)


def paper_parameter_count(k: int, D: int, depth: int, r: int, biases: bool = False) -> int:
    """``k D + depth 2 k^2 + (k r + r^2)`` (the paper's count, weights only); ``+ depth k + r`` with biases."""
    k, D, r = _check_k(k), _check_k(D), _check_k(r)
    if isinstance(depth, bool) or not isinstance(depth, numbers.Integral) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, got {depth!r}")
    count = k * D + depth * 2 * k * k + k * r + r * r
    if biases:
        count += depth * k + r
    return int(count)


# --- the network -----------------------------------------------------------------------------------
@dataclass
class InterpolatingResNet:
    """The network of Theorem 3.2 as built by :func:`build_interpolating_resnet` (arrays in float64).

    ``forward(X)`` returns ``(n, r)`` outputs (one-hot on the training inputs), ``predict(X)`` their argmax.
    ``depth`` is the number of residual blocks; ``num_parameters`` the paper's count (weights only) and
    ``num_parameters_with_biases`` adds the block and output biases.
    """

    normaliser: InputNormaliser
    A0: np.ndarray                 # (k, D)
    U: np.ndarray                  # (depth, k, k)
    V: np.ndarray                  # (depth, k, k)
    s: np.ndarray                  # (depth, k)
    surrogates: np.ndarray         # (r, k): rows of U_out
    output_threshold: float
    num_classes: int
    input_dim: int
    groups: list = field(default_factory=list)   # sample indices moved by each block
    margins: np.ndarray | None = None           # upper - lower of each block's condition
    output_margin: float = float("nan")
    attempts: int = 1
    projection: str = "auto"
    max_fit_error: float = float("nan")

    @property
    def k(self) -> int:
        return int(self.A0.shape[0])

    @property
    def depth(self) -> int:
        return int(self.U.shape[0])

    @property
    def normalised_dim(self) -> int:
        return int(self.A0.shape[1])

    @property
    def num_parameters(self) -> int:
        return paper_parameter_count(self.k, self.normalised_dim, self.depth, self.num_classes)

    @property
    def num_parameters_with_biases(self) -> int:
        return paper_parameter_count(self.k, self.normalised_dim, self.depth, self.num_classes, biases=True)

    def weight_arrays(self) -> list[np.ndarray]:
        """Every weight matrix, in order: ``A_0``, each block's ``U`` and ``V``, ``U_out``, ``V_out``."""
        V_out = np.eye(self.num_classes) / (1.0 - self.output_threshold)
        return [self.A0, *[m for j in range(self.depth) for m in (self.U[j], self.V[j])], self.surrogates, V_out]

    def _check_X(self, X) -> np.ndarray:
        X = _as_inputs(X)
        if X.shape[1] != self.input_dim:
            raise ValueError(f"X has {X.shape[1]} features; the network was built for {self.input_dim}")
        return X

    def embed(self, X) -> np.ndarray:
        """``h_0 = A_0 x~`` for the rows of ``X``."""
        return self.normaliser.transform(self._check_X(X)) @ self.A0.T

    def hidden(self, X, upto: int | None = None) -> np.ndarray:
        """The representation after ``upto`` residual blocks (default: all of them)."""
        upto = self.depth if upto is None else upto
        if isinstance(upto, bool) or not isinstance(upto, numbers.Integral) or not 0 <= upto <= self.depth:
            raise ValueError(f"upto must be an integer in 0..{self.depth}, got {upto!r}")
        H = self.embed(X)
        with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
            for j in range(upto):
                H = apply_block(H, self.U[j], self.V[j], self.s[j])
        return H

    def output_block(self, H) -> np.ndarray:
        """``V_out relu(U_out h - t_out)`` with ``V_out = I / (1 - t_out)``: from ``R^k`` to ``R^r``."""
        H = np.asarray(H, dtype=np.float64)
        if H.ndim != 2 or H.shape[1] != self.k:
            raise ValueError(f"H must have shape (n, {self.k}), got {H.shape}")
        Z = H @ self.surrogates.T - self.output_threshold
        return np.maximum(Z, 0.0) / (1.0 - self.output_threshold)

    def forward(self, X) -> np.ndarray:
        return self.output_block(self.hidden(X))

    def predict(self, X) -> np.ndarray:
        return np.argmax(self.forward(X), axis=1)

    def as_torch_module(self):
        """A ``torch.nn.Module`` (float64) of real residual blocks computing :meth:`forward`."""
        return _torch_module(self)


def _torch_module(net: InterpolatingResNet):
    import torch
    from torch import nn

    class ReLUResidualBlock(nn.Module):
        """``h + V relu(U h + s)``."""

        def __init__(self, U, V, s):
            super().__init__()
            k = U.shape[0]
            self.inner = nn.Linear(k, k, bias=True, dtype=torch.float64)
            self.outer = nn.Linear(k, k, bias=False, dtype=torch.float64)
            with torch.no_grad():
                self.inner.weight.copy_(torch.from_numpy(U))
                self.inner.bias.copy_(torch.from_numpy(s))
                self.outer.weight.copy_(torch.from_numpy(V))

        def forward(self, h):
            return h + self.outer(torch.relu(self.inner(h)))

    class InterpolatingResNetModule(nn.Module):
        """Normalise (buffers), project, ``depth`` residual blocks, the output block."""

        def __init__(self):
            super().__init__()
            self.lifted = net.normaliser.lifted
            mean = net.normaliser.mean if self.lifted else np.zeros(net.input_dim)
            self.register_buffer("mean", torch.from_numpy(np.array(mean, dtype=np.float64)))
            self.register_buffer("scale", torch.tensor(float(net.normaliser.scale), dtype=torch.float64))
            self.projection = nn.Linear(net.normalised_dim, net.k, bias=False, dtype=torch.float64)
            self.blocks = nn.ModuleList(ReLUResidualBlock(net.U[j], net.V[j], net.s[j]) for j in range(net.depth))
            r = net.num_classes
            self.output_in = nn.Linear(net.k, r, bias=True, dtype=torch.float64)
            self.output_out = nn.Linear(r, r, bias=False, dtype=torch.float64)
            with torch.no_grad():
                self.projection.weight.copy_(torch.from_numpy(net.A0))
                self.output_in.weight.copy_(torch.from_numpy(net.surrogates))
                self.output_in.bias.fill_(-net.output_threshold)
                self.output_out.weight.copy_(torch.eye(r, dtype=torch.float64) / (1.0 - net.output_threshold))

        def normalise(self, x):
            if not self.lifted:
                return x
            z = (x - self.mean) / self.scale
            sq = (z * z).sum(dim=1, keepdim=True)
            out = torch.cat([z, torch.sqrt(torch.clamp(1.0 - sq, min=0.0))], dim=1)
            return torch.where(sq > 1.0, out / torch.sqrt(sq), out)

        def forward(self, x):
            h = self.projection(self.normalise(x.to(device=self.mean.device, dtype=self.mean.dtype)))
            for block in self.blocks:
                h = block(h)
            return self.output_out(torch.relu(self.output_in(h)))

    return InterpolatingResNetModule()


# --- the builder -----------------------------------------------------------------------------------
def _attempt(Xn, labels_u, original, r, k, rng, projection):
    """One draw of ``A_0`` and the surrogates; returns the network's arrays or raises ConstructionError."""
    n, D = Xn.shape
    A0 = random_projection(D, k, rng, projection)
    Q = surrogate_labels(r, k, rng)
    H = Xn @ A0.T
    targets = Q[labels_u]
    depth = math.ceil(n / k)
    U = np.zeros((depth, k, k))
    V = np.zeros((depth, k, k))
    s = np.zeros((depth, k))
    margins = np.empty(depth)
    groups = []
    for g in range(depth):
        S = np.arange(g * k, min((g + 1) * k, n))
        m = S.size
        A = H[S].copy()
        G = H @ A.T                                   # <h_i, alpha_j> for every current h_i
        diag = G[S, np.arange(m)].copy()
        G[S, np.arange(m)] = -np.inf
        cond = _condition_from_gram(G, diag)
        if not cond.holds:
            i_row, j_col = cond.lower_pair
            i, j, jj = original[i_row], original[S[j_col]], original[S[cond.upper_index]]
            state = "already moved to its surrogate" if i_row < S[0] else (
                "in the same group" if i_row <= S[-1] else "not yet moved")
            raise ConstructionError(
                f"Lemma B.1 condition fails at block {g}: <alpha_{j}, h_{i}> = {cond.lower:.6g} (point {i}, "
                f"{state}) is not below min_j ||alpha_j||^2 = {cond.upper:.6g} (point {jj}); no threshold "
                f"separates them", "lemma-b1", (j, i, jj))
        t = 0.5 * (cond.lower + cond.upper)
        U[g, :m] = A
        V[g, :, :m] = ((targets[S] - A) / (diag - t)[:, None]).T
        s[g] = -t
        margins[g] = cond.margin
        # Only the group's rows are active (the condition just checked), so this is the block applied to all.
        Z = np.maximum(G[S] - t, 0.0)
        Z[np.arange(m), np.arange(m)] = diag - t
        H[S] = A + Z @ V[g, :, :m].T
        groups.append(original[S])
    # Output block: rows of U_out are the surrogates, one threshold between on- and off-label products.
    P = H @ Q.T
    on = P[np.arange(n), labels_u]
    P[np.arange(n), labels_u] = -np.inf
    upper = float(on.min())
    lower = float(P.max()) if r > 1 else -1.0
    if not lower < upper:
        i_row = int(np.unravel_index(np.argmax(P), P.shape)[0]) if r > 1 else int(np.argmin(on))
        raise ConstructionError(
            f"output block condition fails: a moved point's product with another class's surrogate "
            f"({lower:.6g}) is not below the smallest product with its own ({upper:.6g}); point "
            f"{original[i_row]}", "output-block", (original[i_row],))
    t_out = 0.5 * (lower + upper)
    return A0, U, V, s, Q, t_out, margins, upper - lower, groups


def construct_interpolating_resnet(X, y, *, k: int, num_classes=None, seed: int = 0,
                                   projection: str = "auto", attempts: int = DEFAULT_ATTEMPTS
                                   ) -> InterpolatingResNet:
    """Build and verify the network with an explicit ``k`` and projection kind (see :func:`random_projection`).

    Tries up to ``attempts`` draws of ``A_0`` and the surrogates; if all fail, re-raises the last
    :class:`ConstructionError`. The returned network has been checked to fit every row of ``X``.
    """
    X = _as_inputs(X)
    labels, r = _as_labels(y, X.shape[0], num_classes)
    k = _check_k(k)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if projection not in PROJECTIONS:
        raise ValueError(f"unknown projection {projection!r}; choose one of {PROJECTIONS}")
    if isinstance(attempts, bool) or not isinstance(attempts, numbers.Integral) or attempts < 1:
        raise ValueError(f"attempts must be a positive integer, got {attempts!r}")
    first, _ = unique_points(X, labels)
    normaliser = InputNormaliser.fit(X)
    Xn = normaliser.transform(X[first])
    n, D = Xn.shape
    if projection == "orthonormal" and k < D:
        raise ValueError(f"k={k} is refused: an orthonormal projection needs k >= D = {D}")
    if k == 1 and r > 2:
        raise ValueError(f"k=1 is refused: R^1 holds at most 2 unit surrogate labels, r={r} classes need k >= 2")
    depth = math.ceil(n / k)
    if paper_parameter_count(k, D, depth, r) > MAX_PARAMETERS:
        raise ValueError(f"k={k} is refused: the network would have "
                         f"{paper_parameter_count(k, D, depth, r):,} weights (limit {MAX_PARAMETERS:,})")
    last = None
    for attempt in range(int(attempts)):
        rng = np.random.default_rng([int(seed), attempt])
        try:
            with threadpool_limits(limits=BLAS_THREADS, user_api="blas"):
                A0, U, V, s, Q, t_out, margins, out_margin, groups = _attempt(
                    Xn, labels[first], first, r, k, rng, projection)
        except ConstructionError as exc:
            last = exc
            continue
        net = InterpolatingResNet(normaliser, A0, U, V, s, Q, t_out, r, X.shape[1], groups, margins,
                                  out_margin, attempt + 1, projection)
        out = net.forward(X)
        err = float(np.abs(out - np.eye(r)[labels]).max())
        net.max_fit_error = err
        if not err <= FIT_TOLERANCE or np.any(np.argmax(out, axis=1) != labels):
            bad = int(np.argmax(np.abs(out - np.eye(r)[labels]).max(axis=1)))
            last = ConstructionError(f"verification failed: output of point {bad} is off its one-hot label "
                                     f"by {err:.3g} (rounding at tiny margins)", "verification", (bad,))
            continue
        return net
    raise ConstructionError(f"no network after {attempts} draws of A_0 and the surrogate labels; last: {last}",
                            last.condition, last.indices) from last


def build_interpolating_resnet(X, y, num_classes=None, k=None, seed=0) -> InterpolatingResNet:
    """The residual network of Hardt & Ma's Theorem 3.2 that maps every row of ``X`` to its one-hot label.

    ``X``: ``(n, d)`` finite inputs; ``y``: ``n`` integer labels in ``0..r-1`` (``r = num_classes`` or
    ``max(y) + 1``). ``k=None`` uses :func:`default_k` (the normalised dimension, with an exactly isometric
    projection); an explicit ``k`` is honoured (Gaussian projection below ``D``, orthonormal from ``D`` on)
    or refused with a :class:`ConstructionError` naming the failing condition and the indices involved.
    """
    X = _as_inputs(X)
    labels, r = _as_labels(y, X.shape[0], num_classes)
    if k is None:
        k = default_k(InputNormaliser.fit(X).output_dim(X.shape[1]))
    return construct_interpolating_resnet(X, labels, k=k, num_classes=r, seed=seed, projection="auto")


# --- helpers for the chapter's experiments --------------------------------------------------------
def success_rate(X, y, k: int, seeds, *, projection: str = "gaussian", num_classes=None) -> float:
    """Fraction of ``seeds`` for which one draw (no retries) builds a network that fits ``(X, y)``."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("success_rate needs at least one seed")
    ok = 0
    for seed in seeds:
        try:
            construct_interpolating_resnet(X, y, k=k, num_classes=num_classes, seed=seed,
                                           projection=projection, attempts=1)
            ok += 1
        except ConstructionError:
            pass
    return ok / len(seeds)


def printed_condition_counterexample(k: int, rho_prime: float) -> tuple[np.ndarray, np.ndarray]:
    """``k`` unit vectors in ``R^{k+1}`` at pairwise squared distance exactly ``2 rho'``, and targets.

    ``alpha_i = sqrt(1 - rho') e_0 + sqrt(rho') e_i``: their inner products are ``1 - rho'``, above the
    printed threshold ``1 - 2 rho'``. The targets are ``e_1 .. e_k``.
    """
    k = _check_k(k)
    if not (np.isfinite(rho_prime) and 0 < rho_prime < 1):
        raise ValueError(f"rho_prime must lie in (0, 1), got {rho_prime}")
    alphas = np.zeros((k, k + 1))
    alphas[:, 0] = math.sqrt(1.0 - rho_prime)
    alphas[np.arange(k), np.arange(1, k + 1)] = math.sqrt(rho_prime)
    return alphas, np.eye(k + 1)[1:]


