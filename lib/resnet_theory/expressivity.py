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
   ``1e-16`` into ``1e-8``. Distinct inputs closer, relative to their spread, than float64 resolves
   (normalised separation below :func:`separation_floor`, about ``1e-14``) are refused by the builder.
2. **Project** to ``R^k`` with ``A_0`` (:func:`random_projection`): a Gaussian matrix with entries of
   variance ``1/k`` (the scale that keeps norms on average; the printed proof takes standard normal entries,
   under which norms grow like ``sqrt(k)``: the ``1/k`` is our addition), or, for
   ``k >= D`` (``D`` the normalised dimension), the same matrix with its columns orthonormalised, an exact
   isometry. The width: :func:`paper_k` is the paper's ``ceil(10 log n / rho^2)``; an explicit ``k`` is
   honoured with the Gaussian projection; without one the builder uses :func:`union_bound_k`, a width at
   which one draw keeps the per-unit condition on the inputs with probability at least 1/2 (a Chernoff
   bound per pair, :func:`pair_failure_exponent`), when it is below ``D`` and the isometry at ``k = D``
   otherwise (:func:`default_k`). On well-separated inputs the paper's width is too narrow for a random
   ``A_0``: at ``rho = 2`` (orthonormal inputs) almost no draw fits.
3. **Surrogate labels**: ``r`` random unit vectors ``q_c`` in ``R^k`` (:func:`surrogate_labels`).
4. **One block per group of k points** (Lemma B.1, :func:`lemma_b_1_block`): rows of ``U`` are the group's
   current representations ``alpha_j``, column ``j`` of ``V`` is ``(q_{y_j} - alpha_j) / (||alpha_j||^2 - t_j)``
   and ``s = -t`` with ``t`` in ``R^k``: **one threshold per unit** (the paper's block has ``s`` in ``R^k``).
   Unit ``j`` fires on ``alpha_j`` and on no other current representation ``h`` (of the group, of points
   not yet moved, of points already on a surrogate) if and only if::

       max_{h != alpha_j} <alpha_j, h>  <  t_j  <  ||alpha_j||^2            (per-unit condition)

   and ``t_j`` is the midpoint. The printed proof uses one shared threshold ``s = -t 1``
   (``thresholds="shared"``), which works if and only if the stronger condition
   ``max_j max_{h != alpha_j} <alpha_j, h> < t < min_j ||alpha_j||^2`` holds. A violated condition raises
   :class:`ConstructionError` naming the condition and the sample indices; the builder draws ``A_0`` and
   the ``q_c`` again a bounded number of times first.
5. **Output block** (well typed, no skip): ``y = V_out relu(U_out h + s_out)`` with the rows of ``U_out``
   the surrogates, ``s_out = -t_out 1`` and ``V_out = I_r / (1 - t_out)``. The paper's skip connection
   ``h + T(h)`` would add a ``k``-vector to an ``r``-vector.

The built network is verified on every training input before it is returned (never a network that does
not fit). :meth:`InterpolatingResNet.as_torch_module` gives the same function as a ``torch.nn.Module`` of
real residual blocks, an independent way to check the fit; :func:`count_module_parameters` counts its
weights.

Cost: building and verifying take about ``n^2 k`` multiply-adds each (every block shows that all ``n``
current points but its own ``k`` stay inactive), done as matrix products in chunks of
:data:`CHUNK_ENTRIES` entries that are reduced while they are in cache: memory is linear in ``n``, no
``n x n`` matrix is held, and :func:`separation` works in tiles too. All of it is float64. The
``backend="torch"`` option runs the same loops in torch (float64) on any device, e.g. a GPU.

The printed proof, step by step (for the chapter's review of Appendix B): :func:`projection_distortion`
measures the projection step of the proof of Theorem 3.2 (every norm and distance of ``{0, x_1..x_n}``
within ``1 +- rho/3``) and :func:`jl_union_width` gives a width at which it holds; Lemma B.1 as printed
(an unsquared separation ``3 rho'``) fails on :func:`hull_counterexample`, where :func:`firing_margin` (a
linear program) shows that no unit can fire on a point of S and stay silent on the others, while
:func:`general_lemma_b_1_block` builds a block whenever one exists; :func:`lemma_b_1_instance`,
:func:`ring_instance` and :func:`shared_threshold_counterexample` are instances of its hypotheses;
:func:`surrogate_width` is the width at which random surrogates are pairwise below ``1/2``; and
:func:`schur_off_block` checks Claim C.1 of Appendix C.

Parameter counts (:func:`paper_parameter_count`): the paper counts weights only,
``k D + depth 2 k^2 + (k r + r^2)``; with biases add ``depth k + r``. The normalisation constants
(``mu``, ``R``) are preprocessing, counted in neither.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.linalg import schur
from scipy.optimize import linprog
from torch import nn

from . import validate

try:  # optional: limits BLAS to BLAS_THREADS threads (speed only); a bare torch+numpy+scipy machine lacks it
    from threadpoolctl import ThreadpoolController
except ImportError:  # pragma: no cover - exercised where threadpoolctl is not installed
    ThreadpoolController = None

_THREADPOOLS: list = []


def threadpool_limits(limits=None, user_api=None):
    """``threadpoolctl.threadpool_limits``, from one controller made on first use: making one scans the loaded
    libraries (reads ``/proc/self/maps``, about 2 ms), once per network when each build made its own, and the
    Theorem 3.2 claim builds about a thousand networks (1.5 of its 19 CPU s, measured)."""
    if ThreadpoolController is None:  # pragma: no cover
        return contextlib.nullcontext()
    if not _THREADPOOLS:
        _THREADPOOLS.append(ThreadpoolController())
    return _THREADPOOLS[0].limit(limits=limits, user_api=user_api)


#: BLAS threads for the block loops. The products are small (n x k times k x k, once per block); on the
#: shared 2-core machine OpenBLAS's waiting threads made the n = 20,000 build 1.5-30x slower than one thread.
BLAS_THREADS = 1
#: Largest |forward - one-hot| accepted on a training input when the network is verified.
FIT_TOLERANCE = 1e-6
#: Draws of A_0 and the surrogates tried by the builder before it gives up.
DEFAULT_ATTEMPTS = 4
#: Refuse networks with more weights than this (memory, not mathematics).
MAX_PARAMETERS = 400_000_000
#: Entries of one tile of products in the CPU loops (2 MiB of float64, about the size of a core's cache):
#: :func:`separation` works on square tiles of pairs, the builder on chunks of points per block, the
#: verification on chunks of points taken through every block. Held in cache, the products are reduced
#: (a maximum, a minimum) before they are written back; a GPU takes :data:`GPU_CHUNK_ENTRIES`.
CHUNK_ENTRIES = 2**18
GPU_CHUNK_ENTRIES = 2**26
PROJECTIONS = ("auto", "gaussian", "orthonormal", "printed")
THRESHOLDS = ("per-unit", "shared")
BACKENDS = ("numpy", "torch")


class ConstructionError(ValueError):
    """A condition of the construction fails on the actual vectors.

    ``condition`` names it; ``indices`` are the sample indices (rows of the ``X`` given) involved.
    """

    def __init__(self, message: str, condition: str, indices: tuple = ()):
        super().__init__(message)
        self.condition = condition
        self.indices = tuple(int(i) for i in indices)


# --- input validation -----------------------------------------------------------------------------------
def _as_inputs(X, name: str = "X") -> np.ndarray:
    arr = validate.finite_array(name, X, ndim=2)
    # The normaliser works with squared norms: entries beyond ~1e154 overflow them to inf, which would
    # collapse every point onto one and surface later as a failed Lemma B.1 condition.
    with np.errstate(over="ignore"):
        sq = np.einsum("ij,ij->i", arr, arr)
    if not np.all(np.isfinite(sq)):
        big = float(np.max(np.abs(arr)))
        raise ValueError(
            f"{name} has entries as large as {big:.3g}: their squared norms overflow float64 "
            f"(beyond about 1e154), so rescale the inputs; the construction does not depend "
            f"on their scale"
        )
    return arr


def _as_labels(y, n: int, num_classes) -> tuple[np.ndarray, int]:
    labels = validate.integer_array("y", y, ndim=1, allow_empty=True)
    if labels.shape[0] != n:
        raise ValueError(f"X has {n} points but y has {labels.shape[0]} labels; they must match")
    if labels.size and labels.min() < 0:
        raise ValueError(f"labels must lie in 0..r-1; found {int(labels.min())} at index {int(labels.argmin())}")
    if num_classes is None:
        return labels, int(labels.max()) + 1
    r = validate.positive_int("num_classes", num_classes)
    if labels.max() >= r:
        i = int(labels.argmax())
        raise ValueError(f"labels must lie in 0..{r - 1} (num_classes={r}); found {int(labels[i])} at index {i}")
    return labels, r


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
        raise ValueError(
            f"inputs {j} and {i} are identical but have different labels "
            f"({int(y[j])} and {int(y[i])}); no function can fit both"
        )
    order = np.argsort(first, kind="stable")  # distinct points in data order
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse]


def _check_thresholds(thresholds) -> str:
    return validate.choice("thresholds", thresholds, THRESHOLDS)


# --- Theorem 3.2, the construction: normalise, project, surrogate labels, one block per group (Lemma B.1) ---
@dataclass(frozen=True)
class InputNormaliser:
    """``x -> x~`` on the unit sphere, injective on the data (see the module docstring)."""

    mean: np.ndarray | None  # None: inputs already unit norm, used as given
    scale: float

    @property
    def lifted(self) -> bool:
        return self.mean is not None

    @staticmethod
    def fit(X, tol: float = 1e-9) -> InputNormaliser:
        X = _as_inputs(X)
        norms = np.linalg.norm(X, axis=1)
        if np.all(np.abs(norms - 1.0) <= tol):
            return InputNormaliser(None, 1.0)
        mean = X.mean(axis=0)
        radius = math.sqrt(2.0) * float(np.linalg.norm(X - mean, axis=1).max())
        return InputNormaliser(mean, radius if radius > 0 else 1.0)

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


def random_projection(D: int, k: int, rng: np.random.Generator, kind: str = "auto") -> np.ndarray:
    """The ``k x D`` matrix ``A_0``.

    ``"gaussian"``: entries ``N(0, 1/k)``, so ``E ||A_0 x||^2 = ||x||^2`` (Johnson-Lindenstrauss).
    ``"orthonormal"`` (needs ``k >= D``): the Gaussian matrix with its columns orthonormalised, so
    ``||A_0 x|| = ||x||`` exactly. ``"auto"``: orthonormal when ``k >= D``, else Gaussian.
    ``"printed"``: entries ``N(0, 1)``, the paper's unscaled matrix (norms grow like ``sqrt(k)``).
    """
    D = validate.positive_int("D", D)
    k = validate.positive_int("k", k)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    kind = validate.choice("kind", kind, PROJECTIONS)
    validate.check_budget("(k, D)", 16.0 * k * D, validate.memory_limit_bytes(), value=(k, D))
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
    r = validate.positive_int("r", r)
    k = validate.positive_int("k", k)
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator")
    validate.check_budget("(r, k)", 16.0 * r * k, validate.memory_limit_bytes(), value=(r, k))
    Q = rng.standard_normal((r, k))
    return Q / np.linalg.norm(Q, axis=1, keepdims=True)


@dataclass(frozen=True)
class BlockCondition:
    """The Lemma B.1 conditions on one block, per unit and shared.

    Unit ``j`` needs ``unit_lower[j] < t_j < unit_upper[j]`` (``unit_lower[j]`` the largest
    ``<alpha_j, h>`` over every other current representation ``h``, ``unit_upper[j] = ||alpha_j||^2``);
    one threshold for all units needs ``lower = max unit_lower < t < upper = min unit_upper``.
    """

    lower: float  # max <alpha_j, h> over j in S and every other current representation h
    upper: float  # min ||alpha_j||^2 over j in S
    lower_pair: tuple  # (row of h, column j) attaining ``lower`` (positions in the arrays given)
    upper_index: int  # column j attaining ``upper``
    unit_lower: np.ndarray = field(default_factory=lambda: np.zeros(0))
    unit_upper: np.ndarray = field(default_factory=lambda: np.zeros(0))
    unit_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def holds(self) -> bool:
        """The shared-threshold condition (the printed proof's block)."""
        return bool(self.lower < self.upper)

    @property
    def holds_per_unit(self) -> bool:
        """The per-unit condition (the paper's block with ``s`` in ``R^k``)."""
        return bool(np.all(self.unit_lower < self.unit_upper))

    @property
    def margin(self) -> float:
        return self.upper - self.lower

    @property
    def unit_margin(self) -> float:
        """``min_j (||alpha_j||^2 - max_h <alpha_j, h>)``: positive iff the per-unit condition holds."""
        return float(np.min(self.unit_upper - self.unit_lower))


def block_condition(alphas, others) -> BlockCondition:
    """The conditions of Lemma B.1 for rows ``alphas`` (the group) against ``others`` (all other points).

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
    m = diag.size
    if G.shape[0] == 0 or not np.isfinite(G).any():
        # alone in the world: any threshold below the squared norm (and, for the shared one, 0 if possible)
        low = np.where(diag > 0, 0.0, diag - 1.0)
        return BlockCondition(
            0.0 if diag[j_up] > 0 else -1.0, float(diag[j_up]), (-1, -1), j_up, low, diag.copy(), np.full(m, -1)
        )
    rows = np.argmax(G, axis=0)
    unit_lower = G[rows, np.arange(m)]
    col = int(np.argmax(unit_lower))
    return BlockCondition(
        float(unit_lower[col]),
        float(diag[j_up]),
        (int(rows[col]), col),
        j_up,
        unit_lower.copy(),
        diag.copy(),
        rows.astype(np.int64),
    )


def forced_thresholds(lower, upper) -> np.ndarray:
    """Per-unit thresholds for a block built whatever its condition (negative controls): ``upper - |gap|/2``,
    with ``gap = upper - lower`` (at least ``1e-9`` times ``max(1, |upper|)``), so each unit still fires on its
    own point; where the condition holds (``gap > 0``) this is the builder's midpoint."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    return upper - 0.5 * np.maximum(np.abs(upper - lower), 1e-9 * np.maximum(1.0, np.abs(upper)))


def lemma_b_1_block(
    alphas, betas, others=None, threshold: float | None = None, thresholds: str = "per-unit", force: bool = False
):
    """The block of Lemma B.1 that moves ``alphas[j]`` to ``betas[j]`` and fixes every row of ``others``.

    Returns ``(U, V, s, condition)`` with ``U, V`` of shape ``(k, k)`` (``k`` = the dimension; the group
    may have fewer than ``k`` points, the spare rows and columns are zero) and ``s = -t``.
    ``thresholds="per-unit"`` (default): ``t_j`` is the midpoint of unit ``j``'s interval;
    ``"shared"``: one ``t`` at the midpoint of the shared interval. A given ``threshold`` is used as is for
    every unit (so the printed recipe ``t = 1 - 2 rho'`` can be tried). Raises :class:`ConstructionError`
    when the chosen condition fails and no threshold is given, unless ``force`` (for negative controls): then
    the :func:`forced_thresholds` are used and the block, which may misfit, is returned.
    """
    thresholds = _check_thresholds(thresholds)
    force = validate.boolean("force", force)
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
    if threshold is not None:
        t = np.full(m, float(threshold))
    elif force:
        t = forced_thresholds(cond.unit_lower, cond.unit_upper)
    elif thresholds == "per-unit":
        if not cond.holds_per_unit:
            j = int(np.argmin(cond.unit_upper - cond.unit_lower))
            raise ConstructionError(
                f"Lemma B.1 per-unit condition fails for unit {j}: max <alpha_{j}, h> = "
                f"{cond.unit_lower[j]:.6g} is not below ||alpha_{j}||^2 = {cond.unit_upper[j]:.6g}",
                "lemma-b1",
                (),
            )
        t = 0.5 * (cond.unit_lower + cond.unit_upper)
    else:
        if not cond.holds:
            raise ConstructionError(
                f"Lemma B.1 shared-threshold condition fails: <alpha_{cond.lower_pair[1]}, h> = "
                f"{cond.lower:.6g} is not below min ||alpha_j||^2 = {cond.upper:.6g}",
                "lemma-b1",
                (),
            )
        t = np.full(m, 0.5 * (cond.lower + cond.upper))
    norms_sq = np.einsum("ij,ij->i", A, A)
    if np.any(norms_sq - t == 0):
        raise ValueError("threshold equals a squared norm of the group; the block is undefined")
    U = np.zeros((k, k))
    V = np.zeros((k, k))
    U[:m] = A
    V[:, :m] = ((B - A) / (norms_sq - t)[:, None]).T
    s = np.zeros(k)
    s[:m] = -t
    if threshold is not None or thresholds == "shared":
        s[m:] = -t[0]  # the printed block: s = -t 1
    return U, V, s, cond


def apply_block(H, U, V, s) -> np.ndarray:
    """``H + relu(H U^T + s) V^T`` for rows ``H``: one residual block on many points."""
    H = np.array(H, dtype=np.float64)
    Z = H @ U.T
    Z += s
    np.maximum(Z, 0.0, out=Z)
    active = np.flatnonzero(Z.any(axis=1))  # the ReLU is exactly zero elsewhere: skip those rows
    if active.size:
        H[active] += Z[active] @ V.T
    return H


# --- Theorem 3.2, the construction: the backends (numpy, or torch on any device) ------------------------
class _NumpyOps:
    """The few array operations the build and verification loops need, in NumPy (float64)."""

    name = "numpy"

    def asarray(self, a):
        return np.array(a, dtype=np.float64)

    def index(self, a):
        return np.asarray(a, dtype=np.int64)

    def to_numpy(self, a) -> np.ndarray:
        return np.asarray(a)

    def zeros(self, shape):
        return np.zeros(shape)

    def arange(self, n: int):
        return np.arange(n)

    @property
    def chunk_entries(self) -> int:
        return CHUNK_ENTRIES

    def copy(self, a):
        return a.copy()

    def rowmax(self, G):
        return G.max(axis=1)

    def rowmin(self, G):
        return G.min(axis=1)

    def maximum(self, a, b):
        return np.maximum(a, b)

    def minimum(self, a, b):
        return np.minimum(a, b)

    def argmax(self, v) -> int:
        return int(np.argmax(v))

    def argmin(self, v) -> int:
        return int(np.argmin(v))

    def relu_(self, Z):
        np.maximum(Z, 0.0, out=Z)
        return Z

    def active_columns(self, Z):
        """Columns (points) of pre-activations ``Z`` (units x points) with a unit that fires (a NaN
        counts as firing, so that it reaches the output and fails the fit)."""
        return np.flatnonzero(~(Z.max(axis=0) <= 0.0))

    def row_sq_norms(self, X):
        return np.einsum("ij,ij->i", X, X)

    def to32(self, a):
        return a.astype(np.float32)

    def as_bool(self, mask: np.ndarray):
        return mask

    def nonzero2(self, M):
        """Row and column positions of the true entries of a 2-D mask."""
        return np.nonzero(M)

    def limits(self):
        return threadpool_limits(limits=BLAS_THREADS, user_api="blas")


class _TorchOps(_NumpyOps):
    """The same operations in torch (float64) on ``device``."""

    name = "torch"

    def __init__(self, device=None):
        self.torch = torch
        self.device = validate.torch_device("device", device if device is not None else "cpu")
        self.gpu = self.device.type != "cpu"

    @property
    def chunk_entries(self) -> int:
        return GPU_CHUNK_ENTRIES if self.gpu else CHUNK_ENTRIES

    def asarray(self, a):
        if isinstance(a, self.torch.Tensor):
            return a.to(device=self.device, dtype=self.torch.float64).clone()
        return self.torch.tensor(np.asarray(a, dtype=np.float64), device=self.device)

    def index(self, a):
        return self.torch.as_tensor(np.asarray(a, dtype=np.int64), device=self.device)

    def to_numpy(self, a) -> np.ndarray:
        return a.detach().cpu().numpy()

    def zeros(self, shape):
        return self.torch.zeros(shape, dtype=self.torch.float64, device=self.device)

    def arange(self, n: int):
        return self.torch.arange(n, device=self.device)

    def copy(self, a):
        return a.clone()

    def rowmax(self, G):
        return G.amax(dim=1)

    def rowmin(self, G):
        return G.amin(dim=1)

    def maximum(self, a, b):
        return self.torch.maximum(a, b)

    def minimum(self, a, b):
        return self.torch.minimum(a, b)

    def argmax(self, v) -> int:
        return int(self.torch.argmax(v))

    def argmin(self, v) -> int:
        return int(self.torch.argmin(v))

    def relu_(self, Z):
        return Z.clamp_(min=0.0)

    def active_columns(self, Z):
        return self.torch.nonzero(~(Z.amax(dim=0) <= 0.0)).ravel()

    def row_sq_norms(self, X):
        return (X * X).sum(dim=1)

    def to32(self, a):
        return a.to(self.torch.float32)

    def as_bool(self, mask: np.ndarray):
        return self.torch.as_tensor(mask, device=self.device)

    def nonzero2(self, M):
        return self.torch.nonzero(M, as_tuple=True)

    @contextlib.contextmanager
    def limits(self):
        """Full float32 matrix products while the loops run: the float32 screen of :func:`separation` bounds
        its rounding error with float32's unit roundoff, which TF32 (10 mantissa bits, used by CUDA matrix
        products after ``torch.set_float32_matmul_precision("high")``) or bf16 passes would exceed."""
        saved = self.torch.get_float32_matmul_precision()
        self.torch.set_float32_matmul_precision("highest")
        try:
            yield
        finally:
            self.torch.set_float32_matmul_precision(saved)


def _backend(backend: str, device=None) -> _NumpyOps:
    backend = validate.choice("backend", backend, BACKENDS)
    if backend == "numpy":
        if device not in (None, "cpu"):
            raise ValueError(f"the numpy backend runs on the CPU; device={device!r} needs backend='torch'")
        return _NumpyOps()
    return _TorchOps(device)


# --- Theorem 3.2, the construction: the network and the builder -----------------------------------------
@dataclass
class InterpolatingResNet:
    """The network of Theorem 3.2 as built by :func:`build_interpolating_resnet` (arrays in float64).

    ``forward(X)`` returns ``(n, r)`` outputs (one-hot on the training inputs), ``predict(X)`` their argmax.
    ``depth`` is the number of residual blocks; ``num_parameters`` the paper's count (weights only) and
    ``num_parameters_with_biases`` adds the block and output biases.
    """

    normaliser: InputNormaliser
    A0: np.ndarray  # (k, D)
    U: np.ndarray  # (depth, k, k)
    V: np.ndarray  # (depth, k, k)
    s: np.ndarray  # (depth, k)
    surrogates: np.ndarray  # (r, k): rows of U_out
    output_threshold: float
    num_classes: int
    input_dim: int
    groups: list = field(default_factory=list)  # sample indices moved by each block
    margins: np.ndarray | None = None  # upper - lower of each block's condition
    output_margin: float = float("nan")
    attempts: int = 1
    projection: str = "auto"
    max_fit_error: float = float("nan")
    thresholds: str = "per-unit"  # "per-unit" (s in R^k) or "shared" (the printed s = -t 1)

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
        upto = validate.integer("upto", upto, minimum=0, maximum=self.depth)
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


def count_module_parameters(module) -> dict:
    """``{"weights": ..., "biases": ...}``: parameters of a torch module by kind (``*.weight``/``*.bias``).

    Counted from the module itself, independently of :func:`paper_parameter_count`.
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    counts = {"weights": 0, "biases": 0}
    for name, p in module.named_parameters():
        counts["biases" if name.endswith("bias") else "weights"] += int(p.numel())
    return counts


def module_fit_error(module, X, y, num_classes: int, batch: int | None = None) -> float:
    """``max |module(x_i) - e_{y_i}|`` over the rows of ``X``: the fit, computed by the torch module.

    ``batch`` rows at a time; by default 2048 on a CPU (a batch's activations stay in cache: 18% less
    CPU than 65536 rows for the n = 20,000 network at the paper's width) and 65536 on a GPU.
    """
    X = _as_inputs(X)
    labels, r = _as_labels(y, X.shape[0], num_classes)
    if batch is None:
        on_cpu = all(b.device.type == "cpu" for b in module.buffers())
        batch = 2048 if on_cpu else 65536
    batch = validate.positive_int("batch", batch)
    worst = 0.0
    with torch.no_grad():
        for start in range(0, X.shape[0], batch):
            out = module(torch.from_numpy(X[start : start + batch])).cpu().numpy()
            if out.shape[1] != r:
                raise ValueError(f"the module outputs {out.shape[1]} classes, the labels need {r}")
            err = np.abs(out - np.eye(r)[labels[start : start + batch]]).max()
            worst = max(worst, float(err) if np.isfinite(err) else math.inf)
    return worst


def _attempt(Xn, labels_u, original, r, k, rng, projection, thresholds, ops, force=False):
    """One draw of ``A_0`` and the surrogates; returns the network's arrays or raises ConstructionError.

    ``force`` (numpy only, for :func:`build_unchecked_resnet`): a failed condition is not refused, the
    :func:`forced_thresholds` are used (per unit), and every block is applied to every point as it is.

    ``H`` holds the current representation of every point. Block ``g`` computes ``<alpha_j, h>`` for its
    ``k`` units and all ``n`` current ``h`` (its own group as one ``k x k`` product, the other points in
    chunks that are reduced to each unit's maximum while in cache), checks the Lemma B.1 condition on
    those numbers and moves its group. Memory: ``O(n k)``.
    """
    n, D = Xn.shape
    A0 = random_projection(D, k, rng, projection)
    Q = surrogate_labels(r, k, rng)
    H = ops.asarray(Xn) @ ops.asarray(A0).T
    targets = ops.asarray(Q)[ops.index(labels_u)]
    depth = math.ceil(n / k)
    U, V, s = ops.zeros((depth, k, k)), ops.zeros((depth, k, k)), ops.zeros((depth, k))
    margins = np.empty(depth)
    groups = []
    rows = max(1, ops.chunk_entries // k)  # points per chunk
    for g in range(depth):
        lo, hi = g * k, min((g + 1) * k, n)
        m = hi - lo
        A = ops.copy(H[lo:hi])
        G = A @ A.T  # G[j, i] = <alpha_j, alpha_i> within the group
        cols = ops.arange(m)
        diag = ops.copy(G[cols, cols])
        G[cols, cols] = -math.inf
        lower = ops.rowmax(G)  # unit j: largest <alpha_j, h> over the other h
        for left, right in ((0, lo), (hi, n)):  # every point outside the group, in chunks
            for start in range(left, right, rows):
                lower = ops.maximum(lower, ops.rowmax(A @ H[start : min(start + rows, right)].T))
        low, up = ops.to_numpy(lower), ops.to_numpy(diag)
        # no other point at all (n = 1): any threshold below the squared norm will do
        low = np.where(np.isfinite(low), low, np.minimum(up, 0.0) - 1.0)

        def other(j, A=A, lo=lo, H=H):
            """The point (row of H) attaining unit j's largest product with another point."""
            row = A[j] @ H.T
            row[lo + j] = -math.inf
            return ops.argmax(row)

        if force:
            t = forced_thresholds(low, up)
            margins[g] = float(np.min(up - low))
        elif thresholds == "per-unit":
            gap = up - low
            j = int(np.argmin(gap))
            if not gap[j] > 0:
                i = other(j)
                state = (
                    "already moved to its surrogate" if i < lo else ("in the same group" if i < hi else "not yet moved")
                )
                raise ConstructionError(
                    f"Lemma B.1 per-unit condition fails at block {g}, unit of point {original[lo + j]}: "
                    f"<alpha, h> = {low[j]:.6g} for point {original[i]} ({state}) is not below "
                    f"||alpha||^2 = {up[j]:.6g}; no threshold separates them",
                    "lemma-b1",
                    (original[lo + j], original[i]),
                )
            t = 0.5 * (low + up)
            margins[g] = gap[j]
        else:
            jl, ju = int(np.argmax(low)), int(np.argmin(up))
            if not low[jl] < up[ju]:
                i = other(jl)
                raise ConstructionError(
                    f"Lemma B.1 shared-threshold condition fails at block {g}: <alpha_{original[lo + jl]}, "
                    f"h_{original[i]}> = {low[jl]:.6g} is not below min_j ||alpha_j||^2 = {up[ju]:.6g} "
                    f"(point {original[lo + ju]}); no single threshold separates them",
                    "lemma-b1",
                    (original[lo + jl], original[i], original[lo + ju]),
                )
            t = np.full(m, 0.5 * (low[jl] + up[ju]))
            margins[g] = up[ju] - low[jl]
            s[g, m:] = -float(t[0])
        tb = ops.asarray(t)
        U[g, :m] = A
        V[g, :, :m] = ((targets[lo:hi] - A) / (diag - tb)[:, None]).T
        s[g, :m] = -tb
        # Only the group's own units fire, each on its own point (the condition just checked).
        Z = ops.relu_(G.T - tb)  # Z[i, j] = relu(<alpha_i, alpha_j> - t_j)
        Z[cols, cols] = diag - tb
        if force:  # the condition may fail: the block may move any point, so apply it to all of them
            H = apply_block(H, U[g], V[g], s[g])
        else:
            H[lo:hi] = A + Z @ V[g, :, :m].T
        groups.append(original[lo:hi])
    t_out, out_margin = _output_threshold(H, Q, labels_u, original, r, ops, force)
    return (A0, ops.to_numpy(U), ops.to_numpy(V), ops.to_numpy(s), Q, t_out, margins, out_margin, groups)


def _output_threshold(H, Q, labels_u, original, r, ops, force=False) -> tuple[float, float]:
    """The output block's threshold and margin: rows of ``U_out`` are the surrogates, one threshold between the
    on- and off-label products of the moved points ``H`` (``force``: see :func:`_attempt`)."""
    n = H.shape[0]
    P = ops.to_numpy(H @ ops.asarray(Q).T)
    on = P[np.arange(n), labels_u]
    P[np.arange(n), labels_u] = -np.inf
    upper = float(on.min())
    lower = float(P.max()) if r > 1 else -1.0
    if not lower < upper and not force:
        i_row = int(np.unravel_index(np.argmax(P), P.shape)[0]) if r > 1 else int(np.argmin(on))
        raise ConstructionError(
            f"output block condition fails: a moved point's product with another class's surrogate "
            f"({lower:.6g}) is not below the smallest product with its own ({upper:.6g}); point "
            f"{original[i_row]}",
            "output-block",
            (original[i_row],),
        )
    t_out = 0.5 * (lower + upper)
    if force and not (lower < upper and t_out < 1.0):
        # the threshold the recipe takes when every point sits on its surrogate: between the largest
        # off-label product of two surrogates and 1 (it depends on the surrogates alone)
        G = ops.to_numpy(ops.asarray(Q) @ ops.asarray(Q).T)
        off = float(G[~np.eye(r, dtype=bool)].max()) if r > 1 else -1.0
        t_out = 0.5 * (off + 1.0)
        if not t_out < 1.0:
            raise ConstructionError("two surrogates coincide: no output threshold below 1", "forced")
    return t_out, upper - lower


def _forward_backend(net, Xn, ops) -> np.ndarray:
    """The network's outputs on normalised inputs ``Xn``, computed with ``ops``: every block applied to
    every point, one chunk of points at a time (the chunk's representations stay in cache while it goes
    through all the blocks; the points are independent, so the result is the same). The chunk is held
    as columns, ``k x points``, so that the test for a firing unit reduces whole rows at once."""
    A0, Q = ops.asarray(net.A0), ops.asarray(net.surrogates)
    U, V, s = ops.asarray(net.U), ops.asarray(net.V), ops.asarray(net.s)[:, :, None]
    cols = max(1, ops.chunk_entries // net.k)
    out = []
    for start in range(0, Xn.shape[0], cols):
        H = A0 @ ops.asarray(Xn[start : start + cols]).T  # k x points
        for g in range(net.depth):
            Z = U[g] @ H
            Z += s[g]
            active = ops.active_columns(Z)
            if active.shape[0]:
                H[:, active] += V[g] @ ops.relu_(Z[:, active])
        Z = ops.relu_(Q @ H - net.output_threshold)
        out.append(ops.to_numpy(Z).T / (1.0 - net.output_threshold))
    return np.concatenate(out) if out else np.zeros((0, net.num_classes))


@dataclass(frozen=True)
class _DataSet:
    """One data set, checked and normalised once: the inputs and labels (checked), the number of classes,
    the rows ``first`` of the distinct points, the fitted normaliser and the normalised distinct points."""

    X: np.ndarray
    labels: np.ndarray
    r: int
    first: np.ndarray
    normaliser: InputNormaliser
    Xn: np.ndarray


def _checked_data(X, y, num_classes) -> tuple[np.ndarray, np.ndarray, int]:
    """The inputs and labels, checked (the first arguments :func:`construct_interpolating_resnet` checks), and
    the number of classes ``r``: ``(X, labels, r)``."""
    X = _as_inputs(X)
    labels, r = _as_labels(y, X.shape[0], num_classes)
    return X, labels, r


def _distinct_normalised(X: np.ndarray, labels: np.ndarray, r: int) -> _DataSet:
    """The :class:`_DataSet` of checked inputs and labels: their distinct points (identical inputs with two
    labels raise) and the normaliser fitted to the inputs."""
    first, _ = unique_points(X, labels)
    normaliser = InputNormaliser.fit(X)
    return _DataSet(X, labels, r, first, normaliser, normaliser.transform(X[first]))


def _draw_settings(k, seed, projection, thresholds, attempts, backend, device) -> tuple:
    """The other arguments of :func:`construct_interpolating_resnet`, checked in its order:
    ``(k, seed, projection, thresholds, attempts, ops)``."""
    k = validate.positive_int("k", k)
    seed = validate.non_negative_int("seed", seed)
    projection = validate.choice("projection", projection, PROJECTIONS)
    thresholds = _check_thresholds(thresholds)
    attempts = validate.positive_int("attempts", attempts)
    return k, seed, projection, thresholds, attempts, _backend(backend, device)


@dataclass
class _Prepared:
    """What every draw of :func:`construct_interpolating_resnet` for one data set shares: the checked inputs
    and labels, the distinct points, the fitted normaliser and the normalised inputs."""

    X: np.ndarray
    labels: np.ndarray
    r: int
    k: int
    projection: str
    thresholds: str
    ops: object
    first: np.ndarray
    normaliser: object
    Xn: np.ndarray
    X_all: np.ndarray


def _prepare(data: _DataSet, k: int, projection: str, thresholds: str, ops) -> _Prepared:
    """The work on a checked, normalised data set that does not depend on the draw, with the refusals that
    depend on the width (checked settings from :func:`_draw_settings`)."""
    n, D = data.Xn.shape
    if projection == "orthonormal" and k < D:
        raise ValueError(f"k={k} is refused: an orthonormal projection needs k >= D = {D}")
    if k == 1 and data.r > 2:
        raise ValueError(f"k=1 is refused: R^1 holds at most 2 unit surrogate labels, r={data.r} classes need k >= 2")
    depth = math.ceil(n / k)
    if paper_parameter_count(k, D, depth, data.r) > MAX_PARAMETERS:
        raise ValueError(
            f"k={k} is refused: the network would have "
            f"{paper_parameter_count(k, D, depth, data.r):,} weights (limit {MAX_PARAMETERS:,})"
        )
    X_all = data.normaliser.transform(data.X)
    return _Prepared(
        data.X, data.labels, data.r, k, projection, thresholds, ops, data.first, data.normaliser, data.Xn, X_all
    )


def _prepare_construction(X, y, k, num_classes, seed, projection, thresholds, attempts, backend, device):
    """Check the arguments of :func:`construct_interpolating_resnet` (in its order) and do the work that does
    not depend on the draw; returns the :class:`_Prepared` data set, the seed and the number of attempts."""
    X, labels, r = _checked_data(X, y, num_classes)
    k, seed, projection, thresholds, attempts, ops = _draw_settings(
        k, seed, projection, thresholds, attempts, backend, device
    )
    return _prepare(_distinct_normalised(X, labels, r), k, projection, thresholds, ops), seed, attempts


def _draw_network(p: _Prepared, seed: int, attempts: int) -> InterpolatingResNet:
    """The draws of :func:`construct_interpolating_resnet` for a prepared data set: the first network that
    builds and fits, or :class:`ConstructionError` with the last failure."""
    X, labels, r, k, first = p.X, p.labels, p.r, p.k, p.first
    Xn, X_all, normaliser, ops, projection, thresholds = p.Xn, p.X_all, p.normaliser, p.ops, p.projection, p.thresholds
    # each attempt draws A_0 and the surrogates and builds the network: a Python loop, as budgeted elsewhere
    validate.check_budget(
        "attempts", attempts, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=attempts
    )
    last = None
    for attempt in range(int(attempts)):
        rng = np.random.default_rng([int(seed), attempt])
        try:
            with ops.limits():
                A0, U, V, s, Q, t_out, margins, out_margin, groups = _attempt(
                    Xn, labels[first], first, r, k, rng, projection, thresholds, ops
                )
        except ConstructionError as exc:
            last = exc
            continue
        net = InterpolatingResNet(
            normaliser,
            A0,
            U,
            V,
            s,
            Q,
            t_out,
            r,
            X.shape[1],
            groups,
            margins,
            out_margin,
            attempt + 1,
            projection,
            thresholds=thresholds,
        )
        with ops.limits():
            out = _forward_backend(net, X_all, ops)
        dev = np.abs(out - np.eye(r)[labels]).max(axis=1)
        err = float(dev.max())
        net.max_fit_error = err
        if not err <= FIT_TOLERANCE or np.any(np.argmax(out, axis=1) != labels):
            bad = int(np.argmax(dev))
            last = ConstructionError(
                f"verification failed: output of point {bad} is off its one-hot label "
                f"by {err:.3g} (rounding at tiny margins)",
                "verification",
                (bad,),
            )
            continue
        return net
    raise ConstructionError(
        f"no network after {attempts} draws of A_0 and the surrogate labels; last: {last}", last.condition, last.indices
    ) from last


def construct_interpolating_resnet(
    X,
    y,
    *,
    k: int,
    num_classes=None,
    seed: int = 0,
    projection: str = "auto",
    thresholds: str = "per-unit",
    attempts: int = DEFAULT_ATTEMPTS,
    backend: str = "numpy",
    device=None,
) -> InterpolatingResNet:
    """Build and verify the network with an explicit ``k``, projection kind (see :func:`random_projection`)
    and threshold kind (``"per-unit"``: ``s`` in ``R^k``, the default; ``"shared"``: the printed proof's
    ``s = -t 1``). ``backend="torch"`` (with ``device``, e.g. ``"cuda"``) runs the loops in torch.

    Tries up to ``attempts`` draws of ``A_0`` and the surrogates; if all fail, raises a
    :class:`ConstructionError` with the last failure's condition and indices. The returned network has
    been checked to fit every row of ``X``.
    """
    prepared, seed, attempts = _prepare_construction(
        X, y, k, num_classes, seed, projection, thresholds, attempts, backend, device
    )
    return _draw_network(prepared, seed, attempts)


def build_interpolating_resnet(
    X,
    y,
    num_classes=None,
    k=None,
    seed=0,
    *,
    thresholds: str = "per-unit",
    attempts: int = DEFAULT_ATTEMPTS,
    backend: str = "numpy",
    device=None,
) -> InterpolatingResNet:
    """The residual network of Hardt & Ma's Theorem 3.2 that maps every row of ``X`` to its one-hot label.

    ``X``: ``(n, d)`` finite inputs; ``y``: ``n`` integer labels in ``0..r-1`` (``r = num_classes`` or
    ``max(y) + 1``). An explicit ``k`` is honoured with a Gaussian projection (entries of variance
    ``1/k``); ``k=None`` takes :func:`default_k`: :func:`union_bound_k` (``rho`` the separation of the
    normalised inputs) when it is below the normalised dimension ``D``, else ``D`` with an exact isometry
    (the paper's width ``paper_k(n, rho)`` is too narrow for a random ``A_0`` on well-separated inputs).
    One threshold per unit unless ``thresholds="shared"``. Up to ``attempts`` draws of ``A_0`` and the
    surrogates are tried. A network is returned only if it fits; otherwise a
    :class:`ConstructionError` names the failing condition and the indices. Inputs that are distinct but
    closer than float64 resolves (``rho`` below :func:`separation_floor`) are refused before any draw,
    with condition ``"separation-floor"``: whether a draw fits them rests on rounding, not on the proof.
    """
    data, (rho, i, j), k, projection = _builder_inputs(X, y, num_classes, k, backend, device)
    k, seed, projection, thresholds, attempts, ops = _draw_settings(
        k, seed, projection, thresholds, attempts, backend, device
    )
    prepared = _prepare(data, k, projection, thresholds, ops)
    floor = separation_floor(prepared.k, data.Xn.shape[1])
    if rho is not None and not rho >= floor:
        a, b = sorted((int(data.first[i]), int(data.first[j])))
        raise ConstructionError(
            f"inputs {a} and {b} are distinct but closer than this float64 construction resolves: their "
            f"normalised squared distance {rho:.3g} is below separation_floor(k={prepared.k}, "
            f"D={data.Xn.shape[1]}) = {floor:.3g} (a distance of {math.sqrt(rho):.2g} on the unit sphere), so "
            f"Lemma B.1's margin rho/2 is within the rounding of <alpha, h> whatever A_0 is drawn; merge or drop one",
            "separation-floor",
            (a, b),
        )
    return _draw_network(prepared, seed, attempts)


def _builder_inputs(X, y, num_classes, k, backend="numpy", device=None, *, separation_always=True) -> tuple:
    """The input setup of :func:`build_interpolating_resnet`, which :func:`build_unchecked_resnet` shares:
    ``(data, (rho, i, j), k, projection)``, with ``data`` the :class:`_DataSet` (checked inputs and labels,
    distinct points, normaliser, normalised distinct points ``Xn``; done once, and passed on to
    :func:`_prepare`), ``(rho, i, j)`` the separation of ``Xn`` and its closest pair (``(None, 0, 0)`` for
    one point), and the width and projection: an explicit ``k`` with the Gaussian projection, or
    :func:`default_k` from ``rho``. ``separation_always=False``: ``rho`` is computed only where ``default_k``
    needs it (``k=None``), else ``(None, 0, 0)``."""
    data = _distinct_normalised(*_checked_data(X, y, num_classes))
    Xn = data.Xn
    closest = (None, 0, 0)
    if Xn.shape[0] > 1 and (separation_always or k is None):
        closest = _separation(Xn, None, backend, device)
    if k is None:
        k, projection = default_k(Xn.shape[0], closest[0], Xn.shape[1])
    else:
        projection = "gaussian"
    return data, closest, k, projection


def build_unchecked_resnet(X, y, num_classes=None, k=None, seed=0) -> InterpolatingResNet:
    """The construction's recipe with every refusal skipped, for negative controls: one draw of ``A_0`` and
    the surrogates, the :func:`forced_thresholds` of each block (per unit) and, where the output block's
    condition fails, the threshold it takes when every point sits on its surrogate; no separation floor and
    no verification. ``num_classes``, ``k`` and ``seed`` mean what they mean for
    :func:`build_interpolating_resnet`, with the same defaults: the builder's own input setup
    (:func:`_builder_inputs`) checks the inputs and picks the width and projection, so the draw is the
    builder's first draw for the same arguments. The network is returned as
    the recipe makes it, so that its misfit can be measured (by its torch module); whether it fits is for
    the caller to find out. Raises :class:`ConstructionError` (condition ``"forced"``) only where the recipe
    is undefined (two surrogates coincide), and ``ValueError`` for identical inputs with different labels
    and for a refused ``k``, as the builder does."""
    data, _, k, projection = _builder_inputs(X, y, num_classes, k, separation_always=False)
    k, seed, projection, thresholds, _, ops = _draw_settings(k, seed, projection, "per-unit", 1, "numpy", None)
    p = _prepare(data, k, projection, thresholds, ops)
    rng = np.random.default_rng([int(seed), 0])
    with p.ops.limits():
        A0, U, V, s, Q, t_out, margins, out_margin, groups = _attempt(
            p.Xn, p.labels[p.first], p.first, p.r, p.k, rng, p.projection, p.thresholds, p.ops, force=True
        )
    return InterpolatingResNet(
        p.normaliser, A0, U, V, s, Q, t_out, p.r, p.X.shape[1], groups, margins, out_margin, 1, p.projection
    )


# --- Lemma B.1 as printed: its hypotheses, a counterexample, and the block whenever one exists ----------
def firing_margin(alpha, outside) -> float:
    """How far one ReLU unit can fire on ``alpha`` while it is silent on every row of ``outside``.

    The value of the linear program ``max u.alpha + c`` over ``(u, c)`` in ``[-1, 1]^(k+1)`` subject to
    ``u.h + c <= 0`` for every row ``h`` of ``outside`` (SciPy's HiGHS). It is positive exactly when
    ``alpha`` lies outside the convex hull of ``outside``, and 0 when it lies inside: then every unit that is
    silent on ``outside`` is silent on ``alpha`` too.
    """
    a = validate.finite_array("alpha", alpha, ndim=1)
    H = np.asarray(outside, dtype=np.float64).reshape(-1, a.shape[0])
    if not np.all(np.isfinite(H)):
        raise ValueError("outside contains NaN or inf")
    if H.shape[0] == 0:
        return float(np.abs(a).sum() + 1.0)
    cost = -np.append(a, 1.0)
    res = linprog(
        cost,
        A_ub=np.hstack([H, np.ones((H.shape[0], 1))]),
        b_ub=np.zeros(H.shape[0]),
        bounds=[(-1.0, 1.0)] * (a.shape[0] + 1),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the firing-margin linear program failed: {res.message}")
    return max(0.0, float(-res.fun))


def _hyperplane(alpha, H) -> np.ndarray:
    if H.shape[0] == 0:
        return np.append(np.sign(alpha) + (alpha == 0), 1.0)
    res = linprog(
        -np.append(alpha, 1.0),
        A_ub=np.hstack([H, np.ones((H.shape[0], 1))]),
        b_ub=np.zeros(H.shape[0]),
        bounds=[(-1.0, 1.0)] * (alpha.shape[0] + 1),
        method="highs",
    )
    return res.x


def hull_counterexample(rho_prime: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Four vectors of ``R^2`` that satisfy Lemma B.1's hypotheses as printed, for ``k = 2`` and ``S = {1, 2}``,
    but admit no block: ``(alphas_S, betas_S, outside)``.

    ``alpha_1 = sqrt(1 - rho') e_1`` is the midpoint of the two outside points
    ``sqrt(1 + rho') (cos t, +-sin t)`` with ``cos t = sqrt((1 - rho') / (1 + rho'))``; ``alpha_2 = -e_1``.
    Every squared norm lies in ``[1 - rho', 1 + rho']``; ``alpha_1`` is at distance ``sqrt(2 rho')`` from its
    two neighbours, which is at least the printed ``3 rho'`` (unsquared) when ``rho' <= 2/9``. The targets
    are chosen with independent displacements.
    """
    rho_prime = validate.finite_float(
        "rho_prime", rho_prime, minimum=0.0, open_minimum=True, maximum=1.0, open_maximum=True
    )
    c = math.sqrt((1 - rho_prime) / (1 + rho_prime))
    r = math.sqrt(1 + rho_prime)
    outside = np.array([[r * c, r * math.sqrt(1 - c * c)], [r * c, -r * math.sqrt(1 - c * c)]])
    alphas = np.array([[math.sqrt(1 - rho_prime), 0.0], [-1.0, 0.0]])
    betas = np.array([[3.0, 3.0], [-3.0, 3.0]])
    return alphas, betas, outside


def lemma_b_1_instance(
    k: int,
    m: int,
    rho_prime: float,
    min_distance: float,
    rng: np.random.Generator,
    *,
    squared: bool = True,
    spread: float = 1.5,
) -> tuple[np.ndarray, np.ndarray]:
    """A random instance of Lemma B.1 in ``R^k``: ``(alphas, outside)``, ``k`` points of S and ``m`` outside.

    Every squared norm is uniform in ``[1 - rho', 1 + rho']``. Each outside point is put near a random point
    of S, at a distance between ``min_distance`` and ``spread`` times it (``min_distance`` is a squared
    distance when ``squared``, else a distance), and every pair with a point of S is at least that far apart
    (rejection): points that crowd S as closely as the hypothesis allows.
    """
    k, m = validate.positive_int("k", k), validate.non_negative_int("m", m)
    rho_prime = validate.finite_float(
        "rho_prime", rho_prime, minimum=0.0, open_minimum=True, maximum=1.0, open_maximum=True
    )
    min_distance = validate.positive_float("min_distance", min_distance)
    validate.check_budget("(k, m)", 32.0 * (m + 1) * k, validate.memory_limit_bytes(), value=(k, m))
    validate.check_budget(
        "(k, m)", float(m + k) ** 2 * k, validate.OPS_LIMIT, what="work", unit="operations", value=(k, m)
    )
    d_min = math.sqrt(min_distance) if squared else min_distance

    def norm_sq():
        return rng.uniform(1 - rho_prime, 1 + rho_prime)

    def far_enough(p, S):
        return S.shape[0] == 0 or bool(np.min(np.linalg.norm(S - p, axis=1)) >= d_min * (1 - 1e-12))

    S = np.zeros((0, k))
    for _ in range(100_000):
        if S.shape[0] == k:
            break
        v = rng.standard_normal(k)
        p = v / np.linalg.norm(v) * math.sqrt(norm_sq())
        if far_enough(p, S):
            S = np.vstack([S, p])
    out = np.zeros((0, k))
    for _ in range(200_000):
        if out.shape[0] == m:
            break
        a = S[rng.integers(k)]
        w = rng.standard_normal(k)
        h = a + rng.uniform(d_min, spread * d_min) * w / np.linalg.norm(w)
        if abs(h @ h - 1.0) <= rho_prime and far_enough(h, S):
            out = np.vstack([out, h])
    if S.shape[0] < k or out.shape[0] < m:
        raise ValueError("could not place the points; lower min_distance or m")
    return S, out


def general_lemma_b_1_block(alphas, betas, outside):
    """A block ``h + V relu(U h + s)`` with ``k`` units that moves each row of ``alphas`` (the set S, at most
    ``k`` rows in ``R^k``) to the same row of ``betas`` and leaves every row of ``outside`` unchanged,
    without Lemma B.1's threshold recipe: unit ``j`` is the hyperplane of :func:`firing_margin` for
    ``alphas[j]`` against ``outside``, shifted to fire by half its margin on ``alphas[j]``; ``V`` solves
    ``V relu(U alpha_j + s) = beta_j - alpha_j``.

    Such a block exists whenever every ``alpha_j`` lies outside the convex hull of ``outside`` (and the
    activations of S are independent, which holds generically). Conversely, when the displacements
    ``beta_j - alpha_j`` are linearly independent, ``V`` must be invertible on them, so every unit must be
    silent on ``outside``; an ``alpha_j`` inside that hull then silences every unit, and no block exists.
    Raises :class:`ConstructionError` (condition ``"hull"``) in that case. Returns ``(U, V, s, margins)``.
    """
    A = np.atleast_2d(validate.finite_array("alphas", alphas))
    B = np.atleast_2d(validate.finite_array("betas", betas))
    m, k = A.shape
    if B.shape != A.shape:
        raise ValueError(f"alphas and betas must have the same shape, got {A.shape} and {B.shape}")
    if m > k:
        raise ValueError(f"a block in R^{k} moves at most {k} points, got {m}")
    H = np.asarray(outside, dtype=np.float64).reshape(-1, k)
    U, V, s = np.zeros((k, k)), np.zeros((k, k)), np.full(k, -1.0)
    margins = np.array([firing_margin(a, H) for a in A])
    if not np.all(margins > 1e-9):
        j = int(np.argmin(margins))
        raise ConstructionError(
            f"point {j} of S lies in the convex hull of the other points (firing margin "
            f"{margins[j]:.3g}): no unit can fire on it and stay silent on them",
            "hull",
            (j,),
        )
    for j, a in enumerate(A):
        u = _hyperplane(a, H)
        U[j], s[j] = u[:-1], u[-1] - margins[j] / 2
    Z = np.maximum(A @ U[:m].T + s[:m], 0.0)  # Z[i, j]: unit j on alpha_i
    if np.linalg.cond(Z) > 1e12:
        raise ConstructionError("the activations of S are (nearly) dependent", "activations", ())
    V[:, :m] = np.linalg.solve(Z, B - A).T
    return U, V, s, margins


def shared_threshold_counterexample(k: int, rho_prime: float) -> tuple[np.ndarray, np.ndarray]:
    """``k`` vectors in ``R^{k+1}`` that satisfy Lemma B.1's hypotheses read with squared distances (squared
    norms ``1 + rho'``, squared distances exactly ``3 rho'``), and targets ``e_1 .. e_k``.

    ``alpha_i = sqrt(1 + rho') (sqrt(1 - c) e_0 + sqrt(c) e_i)`` with ``c = 3 rho' / (2 (1 + rho'))``: their
    inner products are ``1 - rho'/2``, above the printed proof's shared threshold ``1 - 2 rho'`` (inequality
    (B.1) would need squared distances of ``6 rho'``), so that threshold fires the wrong units.
    """
    k = validate.positive_int("k", k)
    rho_prime = validate.finite_float(
        "rho_prime", rho_prime, minimum=0.0, open_minimum=True, maximum=0.5, open_maximum=True
    )
    validate.check_budget("k", 8.0 * 4 * k * (k + 1), validate.memory_limit_bytes(), value=k)
    c = 3 * rho_prime / (2 * (1 + rho_prime))
    alphas = np.zeros((k, k + 1))
    alphas[:, 0] = math.sqrt((1 + rho_prime) * (1 - c))
    alphas[np.arange(k), np.arange(1, k + 1)] = math.sqrt((1 + rho_prime) * c)
    return alphas, np.eye(k + 1)[1:]


def ring_instance(k: int, rho_prime: float) -> tuple[np.ndarray, np.ndarray]:
    """The tightest case of Lemma B.1 read with squared distances, in ``R^k`` (``k >= 2``, ``rho' <= 1/3``):
    ``(alphas, outside)``.

    ``alpha_1 = sqrt(1 - rho') e_1`` (the smallest norm the window allows) is ringed by ``2 (k - 1)`` outside
    points ``a e_1 +- b e_i`` of squared norm ``1 + rho'`` (the largest) at squared distance exactly
    ``3 rho'``; the other ``k - 1`` points of S are ``-(e_1 + e_i) / sqrt(2)``. Unit 1's margin
    ``||alpha_1||^2 - max <alpha_1, h>`` is ``rho' / 2``.
    """
    k = validate.integer("k", k, minimum=2)
    rho_prime = validate.finite_float("rho_prime", rho_prime, minimum=0.0, open_minimum=True, maximum=1 / 3)
    validate.check_budget("k", 8.0 * 4 * k * k, validate.memory_limit_bytes(), value=k)
    a = (2 - 3 * rho_prime) / (2 * math.sqrt(1 - rho_prime))
    b = math.sqrt(1 + rho_prime - a * a)
    alphas = np.zeros((k, k))
    alphas[0, 0] = math.sqrt(1 - rho_prime)
    outside = []
    for i in range(1, k):
        alphas[i, 0] = alphas[i, i] = -1 / math.sqrt(2)
        for sign in (1.0, -1.0):
            h = np.zeros(k)
            h[0], h[i] = a, sign * b
            outside.append(h)
    return alphas, np.array(outside)


# --- Theorem 3.2 at the paper's width: the separation rho and the choice of k ---------------------------
def _row_minima(Xa, sq, chunk, ops):
    """For every row ``i`` of ``Xa``: ``min_{j > i} ||x_j||^2 - 2 <x_i, x_j>`` (``inf`` for the last row), in
    tiles of ``chunk x chunk`` reduced while in cache. ``sq`` is in the precision of ``Xa``."""
    n = Xa.shape[0]
    out = []
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block = Xa[start:stop] * -2.0  # exact: a power of two
        low = None
        for left in range(start, n, chunk):
            right = min(left + chunk, n)
            T = block @ Xa[left:right].T
            T += sq[None, left:right]
            if left == start:  # the diagonal tile: only j > i
                T[ops.as_bool(np.tril(np.ones((stop - start, right - left), dtype=bool)))] = math.inf
            m = ops.rowmin(T)
            low = m if low is None else ops.minimum(low, m)
        out.append(ops.to_numpy(low).astype(np.float64))
    return np.concatenate(out)


def _closest_pair(Xb, sq, rows, chunk, bound, ops) -> tuple[float, int, int]:
    """``(min ||x_i - x_j||^2, i, j)`` over the rows ``i`` in ``rows`` (positions, sorted) and every ``j != i``, each
    pair's squared distance computed from its difference, as a float64 brute force would.

    The expanded form ``||x_i||^2 + ||x_j||^2 - 2 <x_i, x_j>`` (float64 matrix products, in tiles) selects the
    pairs: its error is at most ``bound`` (about ``D 2^-52 max ||x||^2``), which can exceed the smallest
    distances themselves when they are far below the norms. Every pair whose expanded value is within
    ``3 bound`` of the smallest expanded value seen so far is recomputed from its difference; a pair left
    out is more than ``2 bound`` above the smallest distance, so it cannot attain the minimum."""
    n, D = Xb.shape
    sq_np = ops.to_numpy(sq)
    batch = max(1, ops.chunk_entries // max(D, 1))  # pairs per difference batch: memory ``O(chunk^2)``
    best, pair, cut = math.inf, (-1, -1), math.inf
    for start in range(0, len(rows), chunk):
        idx = rows[start : start + chunk]
        block = Xb[ops.index(idx)]
        lifted = ops.asarray(sq_np[idx])[:, None]
        for left in range(0, n, chunk):
            right = min(left + chunk, n)
            T = (block * -2.0) @ Xb[left:right].T
            T += sq[None, left:right]
            T += lifted
            own = np.flatnonzero((idx >= left) & (idx < right))
            if own.size:  # a row against itself
                T[ops.index(own), ops.index(idx[own] - left)] = math.inf
            cut = min(cut, float(ops.to_numpy(T.min())) + 3.0 * bound)
            r, c = ops.nonzero2(T <= cut)
            rows_dev = ops.index(idx)[r]
            for b in range(0, r.shape[0], batch):
                i, j = rows_dev[b : b + batch], c[b : b + batch] + left
                diff = Xb[i] - Xb[j]
                d2 = (diff * diff).sum(1)
                at = int(ops.argmin(d2))
                if float(d2[at]) < best:
                    best, pair = float(d2[at]), (int(i[at]), int(j[at]))
    return best, pair[0], pair[1]


def separation(X, chunk: int | None = None, *, backend: str = "numpy", device=None) -> float:
    """``rho = min_{i != j} ||x_i - x_j||^2`` over the rows of ``X`` (at least two rows): the float64 minimum,
    each pair's squared distance summed from its difference, as a brute force over all pairs would.

    Never an ``n x n`` matrix: square tiles of ``chunk`` by ``chunk`` pairs (by default ``chunk^2`` is about
    :data:`CHUNK_ENTRIES`, on a GPU :data:`GPU_CHUNK_ENTRIES`), each reduced while in cache. Two passes:

    1. a float32 screen over every pair (each once) of ``||x_i||^2 + min_j (||x_j||^2 - 2 <x_i, x_j>)``. Its
       error is below ``E32 = (D + 8) 2^-23 3 max ||x||^2`` (beyond the worst-case error of a length-``D``
       dot product and of the rounding to float32), so the row of the closest pair is among the rows
       whose screened minimum is within ``2 E32`` of the smallest one;
    2. on those rows, float64 (:func:`_closest_pair`): the expanded form again (error below
       ``E64``, the same bound with ``2^-52``) picks the pairs within ``3 E64`` of the smallest, and their
       distances are summed from their differences. Without that last step the result carried an error
       ``E64`` relative to the norms, not to ``rho``: points about 157 apart at distance ``3e-4``
       (``rho = 1.2e-7``) came out ``1e-5`` off in relative terms.
    """
    return _separation(X, chunk, backend, device)[0]


def _separation(X, chunk, backend, device) -> tuple[float, int, int]:
    """:func:`separation` and the rows ``(i, j)`` of a closest pair."""
    X = _as_inputs(X)
    n, D = X.shape
    if n < 2:
        raise ValueError("separation needs at least two points")
    if backend == "numpy":  # on the CPU; a GPU takes far more
        validate.check_budget("X", 1.5 * n * n * D, validate.OPS_LIMIT, what="work", unit="operations (n^2 D)", value=X)
    ops = _backend(backend, device)
    if chunk is None:
        chunk = max(1, math.isqrt(ops.chunk_entries))
    chunk = validate.positive_int("chunk", chunk)
    Xb = X if ops.name == "numpy" else ops.asarray(X)  # read only: no copy needed
    sq = ops.row_sq_norms(Xb)
    sq_np = ops.to_numpy(sq)
    with ops.limits():
        screen = _row_minima(ops.to32(Xb), ops.to32(sq), chunk, ops) + sq_np
        bound = (D + 8) * 2.0**-23 * 3.0 * float(sq_np.max())
        candidates = np.flatnonzero(screen <= np.min(screen) + 2.0 * bound)
        bound64 = (D + 8) * 2.0**-52 * 3.0 * float(sq_np.max())
        return _closest_pair(Xb, sq, candidates, chunk, bound64, ops)


def separation_floor(k: int, D: int) -> float:
    """The smallest separation ``rho`` of the normalised inputs that the float64 construction resolves at
    width ``k`` and normalised dimension ``D``: ``4 (k + D + 8) 2^-53`` (``5.3e-15`` at ``k = D = 2``).

    Unit ``j`` of a block must tell ``alpha_j`` from every other current representation ``h``: for unit
    inputs and the isometric projection its margin ``||alpha_j||^2 - <alpha_j, h>`` is half their
    squared distance. Each of the two computed products of these near-unit vectors carries a rounding
    error below about ``(k + D + 8) 2^-53`` (a length-``k`` dot product after a length-``D`` projection
    and the normalisation), so a margin ``rho / 2`` below the floor's half can round to zero or below
    for every draw of ``A_0``: such inputs are distinct, and covered by Theorem 3.2 in exact arithmetic,
    but closer relative to their spread than float64 resolves (for lifted inputs ``rho`` is about half
    the squared ratio of the closest pair's distance to the largest distance from the mean). 1-D data of
    150 points spread over five decades had ``rho = 3.6e-17``, below float64's ``2.2e-16`` near 1: every
    draw failed.
    """
    k = validate.positive_int("k", k)
    D = validate.positive_int("D", D)
    return 4.0 * (k + D + 8) * 2.0**-53


def paper_k(n: int, rho: float, c: float = 10.0) -> int:
    """The paper's choice ``k = ceil(c log n / rho^2)`` (natural log, ``c = 10``)."""
    n = validate.positive_int("n", n)
    rho = validate.positive_float("rho", rho)
    c = validate.positive_float("c", c)
    return max(1, math.ceil(c * math.log(max(n, 2)) / rho**2))


def equidistant_points(n: int, rho: float) -> np.ndarray:
    """``n`` unit vectors in ``R^(n+1)`` at squared distance exactly ``rho`` from each other (``0 < rho <= 2``):
    ``x_i = sqrt(rho/2) e_i + sqrt(1 - rho/2) e_(n+1)``, so ``<x_i, x_j> = 1 - rho/2`` for ``i != j``.

    Every pair sits at the separation of Assumption 3.1, the data on which a width's dependence on
    ``rho`` shows most plainly; ``rho = 2`` gives orthonormal inputs.
    """
    n = validate.positive_int("n", n)
    rho = validate.finite_float("rho", rho, minimum=0.0, open_minimum=True, maximum=2.0)
    validate.check_budget("n", 8.0 * n * (n + 1), validate.memory_limit_bytes(), value=n)
    X = np.zeros((n, n + 1))
    X[np.arange(n), np.arange(n)] = math.sqrt(rho / 2)
    X[:, n] = math.sqrt(1 - rho / 2)
    return X


def union_bound_k(n: int, rho: float, delta: float = 0.5) -> int:
    """A width at which one Gaussian draw of ``A_0`` keeps the per-unit condition on all ``n`` inputs with
    probability at least ``1 - delta``: ``k = ceil(ln(n (n - 1) / delta) / I(rho))``.

    Each of the ``n (n - 1)`` ordered pairs fails with probability at most ``exp(-k I(d2)) <=
    exp(-k I(rho))`` (:func:`pair_failure_exponent`; ``I`` increases with the squared distance ``d2 >=
    rho``), so a union bound gives the width. Since ``I(rho) >= rho / 8 >= rho^2 / 16`` for ``rho <= 2``,
    it is at most ``16 ln(n^2 / delta) / rho^2 + 1``: ``O(log n / rho^2)`` like the paper's width, with a
    larger constant where ``rho`` is large (the paper's ``c = 10`` is below it once ``rho`` exceeds about
    0.7). Points already moved onto a surrogate and the output block are not covered; the builder checks
    them.
    """
    n = validate.positive_int("n", n)
    rho = validate.finite_float("rho", rho, minimum=0.0, open_minimum=True, maximum=4.0)
    delta = validate.probability("delta", delta, open_low=True, open_high=True)
    if n == 1:
        return 1
    exponent = pair_failure_exponent(rho)
    if exponent == 0.0:  # rho / 4 underflows: no finite width
        raise ValueError(f"rho = {rho!r} is too small for a finite union-bound width")
    return max(1, math.ceil(math.log(n * (n - 1) / delta) / exponent))


def default_k(n: int, rho: float | None, D: int) -> tuple[int, str]:
    """The builder's width and projection when no ``k`` is given: ``(k, projection)``.

    :func:`union_bound_k` (``delta = 1/2``: one draw keeps the per-unit condition on the inputs with
    probability at least 1/2, so the builder's few draws rarely all fail) with the Gaussian projection
    when it is below the normalised dimension ``D``; otherwise ``k = max(D, 2)`` with the exactly isometric
    projection (a wider Gaussian map cannot keep the inputs' geometry better than an isometry). Not the
    paper's ``ceil(10 log n / rho^2)``: on well-separated inputs (e.g. orthonormal ones, ``rho = 2``) almost
    no draw fits at that width (pass ``k=paper_k(n, rho)`` for it). ``rho=None`` (one point) gives the
    isometry.
    """
    n, D = validate.positive_int("n", n), validate.positive_int("D", D)
    if rho is not None and rho > 0 and pair_failure_exponent(min(rho, 4.0)) > 0:
        k = union_bound_k(n, min(rho, 4.0))
        if k < D:
            return max(k, 2), "gaussian"
    return max(D, 2), "orthonormal"


def smallest_width(
    X, y, draws: int, k_max: int, *, num_classes=None, thresholds: str = "per-unit", k_min: int = 2
) -> int | None:
    """The smallest ``k`` in ``[k_min, k_max]`` at which every one of ``draws`` single Gaussian draws
    (seeds ``0..draws-1``) fits, found by bisection; ``None`` if ``k_max`` itself does not.

    Bisection assumes that success is monotone in ``k`` (true with high probability, not surely: a
    result ``k`` is a width at which all draws fit and ``k - 1`` one at which some draw failed).
    """
    draws = validate.positive_int("draws", draws)
    k_max, k_min = validate.positive_int("k_max", k_max), validate.positive_int("k_min", k_min)
    if k_min > k_max:
        raise ValueError(f"k_min={k_min} exceeds k_max={k_max}")

    def all_fit(k):
        for seed in range(draws):
            try:
                construct_interpolating_resnet(
                    X,
                    y,
                    k=k,
                    num_classes=num_classes,
                    seed=seed,
                    projection="gaussian",
                    thresholds=thresholds,
                    attempts=1,
                )
            except ConstructionError:
                return False
        return True

    if not all_fit(k_max):
        return None
    lo, hi = k_min - 1, k_max  # hi fits; lo is below the range or fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if all_fit(mid):
            hi = mid
        else:
            lo = mid
    return hi


# --- Theorem 3.2, how wide the blocks must be: the projection step, the width needed, one pair of points ---
def projection_distortion(X, A) -> float:
    """``max | ||A (u - v)|| / ||u - v|| - 1 |`` over the pairs ``u != v`` of ``{0, x_1, .., x_n}`` (rows of ``X``).

    The proof of Theorem 3.2 asks a random ``A_0`` to keep every norm and every distance of that set within a
    factor ``1 +- rho/3``: it does exactly when this number is at most ``rho / 3``. Pairs of identical rows
    are left out. Memory ``O(n^2)`` (Gram matrices): meant for a few thousand points.
    """
    X = _as_inputs(X)
    A = validate.finite_array("A", A, ndim=2)
    if A.shape[1] != X.shape[1]:
        raise ValueError(f"A has {A.shape[1]} columns but the points have dimension {X.shape[1]}")
    P = X @ A.T
    G, H = X @ X.T, P @ P.T
    sq, sq_p = np.diag(G).copy(), np.diag(H).copy()
    worst = 0.0
    keep = sq > 0
    if keep.any():  # pairs (0, x_i): the norms
        worst = float(np.max(np.abs(np.sqrt(sq_p[keep] / sq[keep]) - 1.0)))
    d2 = sq[:, None] + sq[None, :] - 2.0 * G
    d2p = sq_p[:, None] + sq_p[None, :] - 2.0 * H
    iu = np.triu_indices(X.shape[0], 1)
    d2, d2p = d2[iu], np.maximum(d2p[iu], 0.0)
    keep = d2 > 1e-12 * max(1.0, float(sq.max()))
    if keep.any():
        worst = max(worst, float(np.max(np.abs(np.sqrt(d2p[keep] / d2[keep]) - 1.0))))
    return worst


def jl_union_width(n: int, eps: float, delta: float = 0.5) -> int:
    """A width at which a Gaussian ``A_0`` with ``N(0, 1/k)`` entries keeps every norm and distance of
    ``{0, x_1..x_n}`` within ``1 +- eps`` (squared, hence also unsquared) with probability ``>= 1 - delta``.

    For one pair, ``||A_0 u||^2 / ||u||^2`` is ``chi^2_k / k``; its Chernoff bounds give a failure
    probability at most ``2 exp(-k (eps^2/2 - eps^3/3) / 2)`` (Dasgupta & Gupta 2003, Lemma 2.2). A union
    bound over the ``n (n + 1) / 2`` pairs: ``k = ceil(2 ln(n (n + 1) / delta) / (eps^2/2 - eps^3/3))``.
    """
    n = validate.positive_int("n", n)
    eps = validate.finite_float("eps", eps, minimum=0.0, open_minimum=True, maximum=1.0, open_maximum=True)
    delta = validate.probability("delta", delta, open_low=True, open_high=True)
    return math.ceil(2.0 * math.log(n * (n + 1) / delta) / (eps**2 / 2 - eps**3 / 3))


def jl_k(n: int, rho: float, thresholds: str = "per-unit") -> int:
    """A ``k`` for which a Gaussian projection provably keeps the Lemma B.1 condition on the inputs.

    A projection that keeps squared norms and distances of ``{0, x_1..x_n}`` within a factor ``1 +- eps``
    keeps ``||alpha_i||^2 - ||alpha_j||^2 <= 2 eps`` and ``||alpha_i - alpha_j||^2 >= (1 - eps) rho``, so
    ``<alpha_j, alpha_i> < ||alpha_j||^2`` (one threshold per unit) once ``eps < rho / (2 + rho)``; one
    threshold shared by all units needs ``<alpha_i, alpha_j> <= 1 + eps - (1 - eps) rho / 2 < 1 - eps``,
    i.e. ``eps < rho / (4 + rho)``. The Johnson-Lindenstrauss bound ``k >= 4 ln(n + 1) / (eps^2/2 -
    eps^3/3)`` is evaluated at that ``eps``. (The surrogates of moved points are not covered: the builder
    checks them.)
    """
    n = validate.positive_int("n", n)
    thresholds = _check_thresholds(thresholds)
    rho = validate.finite_float("rho", rho, minimum=0.0, open_minimum=True, maximum=4.0)
    eps = rho / ((2.0 if thresholds == "per-unit" else 4.0) + rho)
    return math.ceil(4.0 * math.log(n + 1) / (eps**2 / 2 - eps**3 / 3))


def success_rate(
    X, y, k: int, seeds, *, projection: str = "gaussian", thresholds: str = "per-unit", num_classes=None
) -> float:
    """Fraction of ``seeds`` for which one draw (no retries) builds a network that fits ``(X, y)``."""
    validate.check_budget(
        "seeds",
        len(seeds) if hasattr(seeds, "__len__") else 0,
        validate.LOOP_LIMIT,
        what="work",
        unit="seeds",
        value=None,
    )
    seeds = list(seeds)
    if not seeds:
        raise ValueError("success_rate needs at least one seed")
    # the data set is checked, deduplicated and normalised once; each seed is one draw on it (as
    # construct_interpolating_resnet(..., seed=seed, attempts=1) would make it)
    prepared, _, _ = _prepare_construction(X, y, k, num_classes, seeds[0], projection, thresholds, 1, "numpy", None)
    ok = 0
    for seed in seeds:
        try:
            _draw_network(prepared, validate.non_negative_int("seed", seed), 1)
            ok += 1
        except ConstructionError:
            pass
    return ok / len(seeds)


def pair_failure_exponent(d2: float) -> float:
    """The Chernoff exponent ``I(d2) = (1/2) ln(4 / (4 - d2))`` of one pair of inputs under a Gaussian ``A_0``.

    For unit inputs ``x_j, x_i`` at squared distance ``d2`` and ``A_0`` with independent ``N(0, 1/k)``
    entries, unit ``j``'s per-unit condition fails on ``x_i`` (``<A_0 x_j, A_0 x_i> >= ||A_0 x_j||^2``) iff
    ``<A_0 x_j, A_0 (x_i - x_j)> >= 0``. That inner product is ``(1/k) sum_t g_t h_t`` over the ``k`` rows,
    with ``(g_t, h_t)`` independent centred Gaussian pairs of variances ``1`` and ``d2`` and covariance
    ``<x_j, x_i - x_j> = -d2/2``, whose moment generating function is
    ``E exp(lam g h) = [(1 + lam d2/2)^2 - lam^2 d2]^(-1/2)``. At ``lam = 2 / (4 - d2)`` the bracket is
    ``4 / (4 - d2)``, its largest value, so ``P(fail) <= exp(-k I(d2))`` (Chernoff). ``I`` increases with
    ``d2`` and ``I(d2) >= d2 / 8``; at ``d2 = 4`` (antipodal inputs) the pair never fails (``inf``).
    """
    d2 = validate.finite_float("d2", d2, minimum=0.0, open_minimum=True, maximum=4.0)
    # log1p keeps I > 0 for d2 below the rounding of 4 - d2 (near-duplicate inputs)
    return math.inf if d2 == 4.0 else -0.5 * math.log1p(-d2 / 4.0)


# --- Theorem 3.2, surrogate labels: how wide for uncorrelated ones --------------------------------------
def surrogate_width(r: int, t: float = 0.5, delta: float = 0.5) -> int:
    """A width at which ``r`` independent uniformly random unit vectors of ``R^k`` have every pairwise inner
    product below ``t`` with probability at least ``1 - delta``: ``k = ceil(2 ln(r (r - 1) / (2 delta)) / t^2)``.

    For one pair, ``P(<q_i, q_j> >= t) <= exp(-k t^2 / 2)`` (the measure of a spherical cap, e.g. Ball 1997,
    Lemma 2.2); a union bound over the ``r (r - 1) / 2`` pairs gives the width (``16 ln r`` or so for
    ``t = 1/2``, against the paper's ``4 log r``).
    """
    r = validate.integer("r", r, minimum=2)
    t = validate.finite_float("t", t, minimum=0.0, open_minimum=True, maximum=1.0, open_maximum=True)
    delta = validate.probability("delta", delta, open_low=True, open_high=True)
    return math.ceil(2.0 * math.log(r * (r - 1) / (2.0 * delta)) / t**2)


# --- Theorem 3.2, cost: the paper's parameter count -----------------------------------------------------
def paper_parameter_count(k: int, D: int, depth: int, r: int, biases: bool = False) -> int:
    """``k D + depth 2 k^2 + (k r + r^2)`` (the paper's count, weights only); ``+ depth k + r`` with biases."""
    k, D, r = validate.positive_int("k", k), validate.positive_int("D", D), validate.positive_int("r", r)
    depth = validate.non_negative_int("depth", depth)
    count = k * D + depth * 2 * k * k + k * r + r * r
    if biases:
        count += depth * k + r
    return int(count)


# --- Appendix C: Claim C.1 ------------------------------------------------------------------------------
def schur_off_block(M) -> float:
    """``max |T_ij| / ||M||`` over the entries of the real Schur form ``M = Z T Z^T`` outside its diagonal blocks
    (1 x 1, or 2 x 2 where ``T`` has a subdiagonal entry). For a normal ``M`` it is 0 up to rounding, and
    ``Z``, ``T`` are then Claim C.1's ``S``, ``D``; a non-normal ``M`` of size 3 or more leaves entries outside the
    blocks (of size 2 every real matrix is one block)."""
    M = validate.finite_array("M", M, ndim=2)
    if M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    T, _ = schur(M, output="real")
    d = T.shape[0]
    block = np.zeros(d, dtype=np.int64)  # block index of each row
    i = b = 0
    while i < d:
        size = 2 if i + 1 < d and T[i + 1, i] != 0.0 else 1
        block[i : i + size] = b
        i, b = i + size, b + 1
    off = block[:, None] != block[None, :]
    scale = max(float(np.linalg.norm(M, 2)), np.finfo(float).tiny)
    return float(np.abs(T[off]).max(initial=0.0)) / scale
