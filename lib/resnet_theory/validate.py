"""Argument checking for every public function and command-line tool of the book's library.

One rule everywhere:

- a value of the wrong *type* raises :class:`TypeError` (a float where an integer is meant, a string where a
  number is meant, a complex number where a real one is meant, ``True`` where an integer is meant);
- a value of the right type but a bad *value* raises :class:`ValueError` (a negative size, NaN where a finite
  number is meant, an array of the wrong shape, an option that is not on the list);
- numpy scalars (``np.int64(3)``, ``np.float32(0.5)``, ``np.True_``) and 0-d arrays are accepted exactly like
  the Python numbers they stand for; ``bool`` is not an integer;
- every message names the argument and shows the value as it was given.

Numerical procedures that leave the finite numbers (gradient descent blowing up, a Newton iteration that does
not converge) raise :class:`DivergenceError`, a :class:`FloatingPointError`. Sizes whose memory or work would
exceed what the machine can do are refused up front by :func:`check_budget`, with the estimate in the message.

Every checker returns the value converted to its plain Python / numpy type, so a caller writes
``depth = positive_int("depth", depth)``.
"""

from __future__ import annotations

import argparse
import errno
import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "BudgetError",
    "DivergenceError",
    "boolean",
    "callable_arg",
    "check_budget",
    "choice",
    "finite_array",
    "finite_float",
    "human_bytes",
    "increasing",
    "instance",
    "integer",
    "integer_array",
    "memory_limit_bytes",
    "non_negative_float",
    "non_negative_int",
    "path",
    "positive_float",
    "positive_int",
    "probability",
    "square_matrix",
    "show",
    "tensor",
    "torch_device",
]


class DivergenceError(FloatingPointError):
    """A numerical procedure left the finite numbers or failed to converge (loss became NaN/inf, ...)."""


class BudgetError(ValueError):
    """A requested size needs more memory or work than this machine can give; the message has the estimate."""


# --- display ---------------------------------------------------------------------------------------------
def show(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters; arrays are described by shape and dtype instead."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return f"array of shape {value.shape} and dtype {value.dtype}"
    if type(value).__module__.startswith("torch") and hasattr(value, "shape") and len(value.shape) > 0:
        return f"tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _got(value: Any) -> str:
    return f"got {show(value)} ({type(value).__name__})"


def _unwrap(value: Any) -> Any:
    """A 0-d numpy array stands for its scalar."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


# --- scalars ---------------------------------------------------------------------------------------------
def boolean(name: str, value: Any) -> bool:
    """``True`` or ``False`` (``np.True_``/``np.False_`` accepted); anything else, ``1`` and ``"False"``
    included, is a :class:`TypeError`."""
    value = _unwrap(value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, {_got(value)}")


def integer(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (Python or numpy; not ``bool``, not a float even if integral) in ``[minimum, maximum]``."""
    value = _unwrap(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, "an integer")
        raise TypeError(f"{name} must be {kind}, {_got(value)}")
    out = int(value)
    if minimum is not None and out < minimum:
        kind = {0: "a non-negative integer (at least 0)", 1: "a positive integer (at least 1)"}.get(
            minimum, f"at least {minimum}"
        )
        raise ValueError(f"{name} must be {kind}, {_got(value)}")
    if maximum is not None and out > maximum:
        raise ValueError(f"{name} must be at most {maximum}, {_got(value)}")
    return out


def positive_int(name: str, value: Any, *, maximum: int | None = None) -> int:
    """An integer ``>= 1`` (and ``<= maximum`` if given)."""
    return integer(name, value, minimum=1, maximum=maximum)


def non_negative_int(name: str, value: Any, *, maximum: int | None = None) -> int:
    """An integer ``>= 0`` (and ``<= maximum`` if given)."""
    return integer(name, value, minimum=0, maximum=maximum)


def _real(name: str, value: Any) -> float:
    value = _unwrap(value)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, {_got(value)}")
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, numbers.Complex):
        raise TypeError(f"{name} must be a real number, not complex; {_got(value)}")
    # exact real constants from sympy (pi, sqrt(2), ...) are numbers too
    if getattr(value, "is_number", False) and getattr(value, "is_real", False):
        return float(value)
    raise TypeError(f"{name} must be a real number, {_got(value)}")


def finite_float(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    open_minimum: bool = False,
    open_maximum: bool = False,
) -> float:
    """A finite real number in the interval given by ``minimum``/``maximum`` (closed unless ``open_*``)."""
    out = _real(name, value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be a finite number, {_got(value)}")
    if minimum is not None and (out < minimum or (open_minimum and out == minimum)):
        rel = ">" if open_minimum else ">="
        raise ValueError(f"{name} must be {rel} {minimum}, {_got(value)}")
    if maximum is not None and (out > maximum or (open_maximum and out == maximum)):
        rel = "<" if open_maximum else "<="
        raise ValueError(f"{name} must be {rel} {maximum}, {_got(value)}")
    return out


def positive_float(name: str, value: Any, *, maximum: float | None = None) -> float:
    """A finite real number ``> 0``."""
    return finite_float(name, value, minimum=0.0, open_minimum=True, maximum=maximum)


def non_negative_float(name: str, value: Any, *, maximum: float | None = None) -> float:
    """A finite real number ``>= 0``."""
    return finite_float(name, value, minimum=0.0, maximum=maximum)


def probability(name: str, value: Any, *, open_low: bool = False, open_high: bool = False) -> float:
    """A real number in ``[0, 1]`` (ends excluded with ``open_low``/``open_high``)."""
    return finite_float(name, value, minimum=0.0, maximum=1.0, open_minimum=open_low, open_maximum=open_high)


def _same_option(value: Any, option: Any) -> bool:
    if isinstance(option, str) or isinstance(value, str):
        return isinstance(value, str) and isinstance(option, str) and str(value) == option
    if isinstance(option, (bool, np.bool_)) or isinstance(value, (bool, np.bool_)):
        return isinstance(value, (bool, np.bool_)) and isinstance(option, (bool, np.bool_)) and value == option
    try:
        return bool(value == option)
    except (TypeError, ValueError):
        return False


def choice(name: str, value: Any, options: Sequence[Any]) -> Any:
    """``value`` if it is one of ``options``. A value of another type than all the options is a TypeError
    (``loss=3`` where the options are strings); one of the right type but not listed is a ValueError."""
    options = tuple(options)
    value = _unwrap(value)
    for option in options:
        if _same_option(value, option):
            return option
    listed = ", ".join(repr(o) for o in options)
    if options and all(isinstance(o, str) for o in options) and not isinstance(value, str):
        raise TypeError(f"{name} must be one of {listed}, {_got(value)}")
    raise ValueError(f"{name} must be one of {listed}, {_got(value)}")


def callable_arg(name: str, value: Any, *, what: str = "a callable") -> Any:
    """``value`` if it can be called."""
    if not callable(value):
        raise TypeError(f"{name} must be {what}, {_got(value)}")
    return value


def instance(name: str, value: Any, types: type | tuple[type, ...], *, what: str | None = None) -> Any:
    """``value`` if it is an instance of ``types`` (``what`` describes them in the message)."""
    if not isinstance(value, types):
        if what is None:
            names = [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]
            what = "a " + " or a ".join(names)
        raise TypeError(f"{name} must be {what}, {_got(value)}")
    return value


def path(name: str, value: Any) -> str | os.PathLike:
    """A file or folder name: a non-empty ``str`` or an ``os.PathLike`` (``pathlib.Path``)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path (str or pathlib.Path), {_got(value)}")
    if not os.fspath(value):
        raise ValueError(f"{name} must be a path, got an empty name {value!r}")
    return value


def torch_device(name: str, value: Any):
    """``value`` as a ``torch.device`` that exists here: an unknown name, or CUDA on a machine without it, is a
    ValueError; something that is not a device name a TypeError."""
    import torch

    if not isinstance(value, (str, torch.device)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a device name such as 'cpu' or 'cuda', {_got(value)}")
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be 'cpu' or a CUDA device, {_got(value)}: {exc}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={show(value)} was requested but CUDA is not available here")
    return device


# --- arrays ----------------------------------------------------------------------------------------------
def _shape_text(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("*" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _as_numpy(name: str, x: Any, ndim: int | None = None) -> np.ndarray:
    if x is None or isinstance(x, (str, bytes, dict, set)):
        what = f"a {ndim}-D array" if ndim is not None else "an array"
        raise TypeError(f"{name} must be {what} of numbers, {_got(x)}")
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} could not be read as an array (ragged?): {exc}") from None
    except TypeError as exc:
        raise TypeError(f"{name} must be an array of numbers, {_got(x)}: {exc}") from None
    return arr


def finite_array(
    name: str,
    x: Any,
    *,
    shape: Sequence[int | None] | None = None,
    ndim: int | None = None,
    allow_complex: bool = False,
    allow_empty: bool = False,
    dtype: Any = np.float64,
    positive: bool = False,
) -> np.ndarray:
    """``x`` as a numpy array of ``dtype`` (float64; complex128 with ``allow_complex``), checked finite (and
    every entry ``> 0`` with ``positive``, the first offender named with its index).

    ``shape`` may hold ``None`` for a free axis; ``ndim`` fixes only the number of axes. Booleans count as
    numbers; strings, objects and (unless ``allow_complex``) complex values are a TypeError.
    """
    arr = _as_numpy(name, x, ndim)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype} ({type(x).__name__})")
    if np.iscomplexobj(arr):
        if not allow_complex:
            raise TypeError(f"{name} must be real, got complex values ({show(arr)})")
        dtype = np.complex128
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {show(arr)}")
    if shape is not None:
        shape = tuple(shape)
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            raise ValueError(f"{name} must have shape {_shape_text(shape)}, got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    arr = arr.astype(dtype, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} contains NaN or inf ({int(bad.sum())} entries; the first at index {first})")
    if positive and (arr <= 0).any():
        i = tuple(int(j) for j in np.argwhere(arr <= 0)[0])
        raise ValueError(f"{name} must be positive; found {arr[i].item()!r} at index {i}")
    return arr


def square_matrix(name: str, M: Any, *, size: int | None = None, allow_complex: bool = False) -> np.ndarray:
    """A finite real ``d x d`` matrix with ``d >= 1`` (``d == size`` if given), as float64."""
    arr = finite_array(name, M, ndim=2, allow_complex=allow_complex)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must be {size} x {size}, got shape {arr.shape}")
    return arr


def increasing(name: str, arr: np.ndarray, *, strict: bool = True) -> np.ndarray:
    """``arr`` (a 1-D array already checked by :func:`finite_array` or :func:`integer_array`) if it increases
    (strictly unless ``strict=False``); otherwise a ValueError naming the first pair out of order."""
    step = np.diff(arr)
    bad = step <= 0 if strict else step < 0
    if bad.any():
        i = int(np.argmax(bad))
        word = "increasing" if strict else "non-decreasing"
        raise ValueError(
            f"{name} must be {word}; found {arr[i].item()!r} then {arr[i + 1].item()!r} at indices {i} and {i + 1}"
        )
    return arr


def tensor(
    name: str,
    x: Any,
    *,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    floating: bool = False,
    shape_text: str | None = None,
):
    """``x`` if it is a torch tensor (with ``ndim`` axes, or of ``shape`` with ``None`` for a free axis; of a
    floating dtype with ``floating``): anything else is a TypeError, a tensor of the wrong shape or dtype a
    ValueError. ``shape_text`` describes the axes, e.g. ``"(N, C, H, W)"``."""
    import torch

    if shape is not None:
        shape = tuple(shape)
        shape_text = shape_text or _shape_text(shape)
    axes = f" of shape {shape_text}" if shape_text else (f" with {ndim} axes" if ndim is not None else "")
    kind = "float " if floating else ""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a {kind}torch tensor{axes}, {_got(x)}")
    if (ndim is not None and x.dim() != ndim) or (
        shape is not None and (x.dim() != len(shape) or any(s is not None and s != a for s, a in zip(shape, x.shape)))
    ):
        raise ValueError(f"{name} must be a {kind}torch tensor{axes}, got shape {tuple(x.shape)}")
    if floating and not x.is_floating_point():
        raise ValueError(f"{name} must be a {kind}torch tensor{axes}, got dtype {x.dtype}")
    return x


_INT64 = np.iinfo(np.int64)


def integer_array(
    name: str,
    x: Any,
    *,
    ndim: int | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_empty: bool = False,
) -> np.ndarray:
    """``x`` as an int64 array. Floats are accepted when integral and within int64 (``1e20`` is refused with
    its own value, never wrapped around); values outside ``[minimum, maximum]`` are named with their index."""
    arr = _as_numpy(name, x)
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold integers, got complex values ({show(arr)})")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype} ({type(x).__name__})")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {show(arr)}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty (shape {arr.shape})")
    if np.issubdtype(arr.dtype, np.floating):
        finite = np.isfinite(arr)
        if not finite.all():
            i = tuple(int(j) for j in np.argwhere(~finite)[0])
            raise ValueError(f"{name} contains NaN or inf; found {arr[i].item()!r} at index {i}")
        frac = arr != np.round(arr)
        if frac.any():
            i = tuple(int(j) for j in np.argwhere(frac)[0])
            raise ValueError(f"{name} must hold integers; found {arr[i].item()!r} at index {i}")
        # float(2**63) rounds up to 2**63 itself, which does not fit: compare with a strict bound
        huge = (arr >= 2.0**63) | (arr < -(2.0**63))
        if huge.any():
            i = tuple(int(j) for j in np.argwhere(huge)[0])
            raise ValueError(f"{name} holds {arr[i].item()!r} at index {i}, outside the 64-bit integer range")
    elif arr.dtype == np.uint64 and arr.size and int(arr.max()) > _INT64.max:
        i = tuple(int(j) for j in np.argwhere(arr > _INT64.max)[0])
        raise ValueError(f"{name} holds {arr[i].item()!r} at index {i}, outside the 64-bit integer range")
    out = arr.astype(np.int64)
    if out.size and minimum is not None and out.min() < minimum:
        i = tuple(int(j) for j in np.argwhere(out < minimum)[0])
        raise ValueError(f"{name} must be >= {minimum}; found {out[i]} at index {i}")
    if out.size and maximum is not None and out.max() > maximum:
        i = tuple(int(j) for j in np.argwhere(out > maximum)[0])
        raise ValueError(f"{name} must be <= {maximum}; found {out[i]} at index {i}")
    return out


# --- disk errors -----------------------------------------------------------------------------------------
_STORAGE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
}


def storage_problem(exc: BaseException) -> str | None:
    """What a failed write means, in words, when the storage is at fault (a full disk, an exceeded quota,
    missing permissions, a read-only file system); ``None`` for any other error."""
    return _STORAGE_ERRNOS.get(getattr(exc, "errno", None)) if isinstance(exc, OSError) else None


def describe_os_error(exc: BaseException) -> str:
    """:func:`storage_problem` when the storage is at fault, else the error's own text, for one-line messages."""
    return storage_problem(exc) or str(exc)


# --- budgets ---------------------------------------------------------------------------------------------
def human_bytes(n: float) -> str:
    """``n`` bytes as ``'14.2 GB'`` (powers of 1000)."""
    n = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1000
    raise AssertionError("unreachable")


def memory_limit_bytes(fraction: float = 0.5) -> int:
    """``fraction`` of this machine's physical memory (what one computation may reasonably take).

    ``RESNET_THEORY_MEMORY_LIMIT`` (bytes) overrides it.
    """
    override = os.environ.get("RESNET_THEORY_MEMORY_LIMIT")
    if override:
        return int(float(override))
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        total = 8 * 10**9
    return int(total * fraction)


#: Work (elementary floating-point operations, or loop iterations times their cost) one call may take: about
#: an hour on one CPU core. Larger requests are refused rather than left to run for days.
OPS_LIMIT = 1e13

#: Iterations of a Python-level loop one call may take (each costs microseconds): about a minute at most.
LOOP_LIMIT = 1e7


def check_budget(
    name: str, estimate: float, limit: float, *, what: str = "memory", value: Any = None, unit: str | None = None
) -> float:
    """Refuse (:class:`BudgetError`, a ValueError) when ``estimate`` exceeds ``limit``.

    ``what`` says what is estimated ("memory" is shown in bytes; anything else as a count of ``unit``, e.g.
    ``what="work", unit="operations"``); ``value`` is the argument's value as given, shown in the message.
    """
    estimate = float(estimate)
    if not estimate <= limit:  # also refuses a NaN estimate
        given = f"{name}={show(value)}" if value is not None else name
        if what == "memory" and unit is None:
            need, have = human_bytes(estimate), human_bytes(limit)
        else:
            u = f" {unit}" if unit else ""
            need, have = f"{estimate:.3g}{u}", f"{float(limit):.3g}{u}"
        raise BudgetError(
            f"{given} needs about {need} of {what}, more than this machine allows ({have}); choose a smaller size"
        )
    return estimate


# --- command lines ---------------------------------------------------------------------------------------
class OneLineParser(argparse.ArgumentParser):
    """Bad options end with one line ``error: ...`` and status 2 (no usage dump)."""

    def error(self, message: str):
        self.exit(2, f"error: {message}\n")


def int_option(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    return parse


def float_option(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def ints_option(minimum: int, allow_empty: bool):
    one = int_option(minimum)

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(one(v) for v in text.split(",") if v.strip())
        if not values and not allow_empty:
            raise argparse.ArgumentTypeError(f"expected comma-separated integers >= {minimum}, got {text!r}")
        return values

    return parse
