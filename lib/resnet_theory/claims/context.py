"""What a claim's function is given: the profile's sizes, the seed, its own random numbers, shared results.

Each chapter's knobs live in one :class:`ProfileTable` in its claims module: every knob once, with its value
in each profile and what it sizes. ``tiny`` is the size the unit tests run every claim at (seconds), ``quick``
the book's default (a 2-core CPU), ``full`` a GPU-sized build. A reader overrides knobs with a dict
(``knobs={"max_depth": 200}`` in a chapter's parameters cell, ``--knob max_depth=200`` on the command line);
an unknown knob, a value of another type than the table's, or a number outside the knob's range (a knob whose
profiles are all positive, a size or a count, takes only positive finite numbers and non-empty lists; one whose
profiles are all non-negative, only non-negative ones; one with a ``minimum``, no number below it) is refused in
one line, before anything runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np

#: The profiles a claim runs at; ``tiny`` is for the unit tests (it need not reproduce a verdict).
PROFILES = ("tiny", "quick", "full")

T = TypeVar("T")


@dataclass(frozen=True)
class Knob:
    """One size knob: its value per profile and what it sizes (shown in the chapter's profile table)."""

    quick: Any
    full: Any
    doc: str
    #: The unit tests' size; default: the quick value.
    tiny: Any = None
    #: The values an override may take (a method's name), refused otherwise before anything runs; None: any value
    #: of the default's kind.
    choices: tuple | None = None
    #: The least value an override may take (every number in it), refused otherwise before anything runs; None:
    #: the range its profiles imply (see the module docstring). A count of seeds behind a standard error takes 2.
    minimum: float | None = None

    def value(self, profile: str) -> Any:
        if profile == "tiny":
            return self.quick if self.tiny is None else self.tiny
        return self.quick if profile == "quick" else self.full


def _numbers(value: Any) -> list | None:
    """Every number in ``value`` (a number, or nested lists and tuples of numbers); None where any part is not a
    number (a method's name, a bool)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            inner = _numbers(v)
            if inner is None:
                return None
            out += inner
        return out
    return None


def _has_empty(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and (not value or any(_has_empty(v) for v in value))


def _out_of_range(knob: Knob, given: Any) -> str | None:
    """Why ``given`` lies outside the range the knob's profile values imply (see the module docstring), or None."""
    profile_numbers = [_numbers(v) for v in (knob.quick, knob.full, knob.tiny) if v is not None]
    numbers = _numbers(given)
    if numbers is None or any(n is None for n in profile_numbers):
        return None
    defaults = [x for ns in profile_numbers for x in ns]
    bad = [x for x in numbers if isinstance(x, float) and not np.isfinite(x)]
    if bad:
        return f"{bad[0]!r} is not a finite number"
    if knob.minimum is not None:
        low = [x for x in numbers if not x >= knob.minimum]
        if low:
            return f"{low[0]!r} is below its minimum {knob.minimum!r}"
    if not any(_has_empty(v) for v in (knob.quick, knob.full, knob.tiny) if v is not None) and _has_empty(given):
        return "an empty list sizes nothing"
    if defaults and all(x > 0 for x in defaults):
        low = [x for x in numbers if not x > 0]
        return f"{low[0]!r} is not positive (it sizes or counts something)" if low else None
    if defaults and all(x >= 0 for x in defaults):
        low = [x for x in numbers if not x >= 0]
        return f"{low[0]!r} is negative" if low else None
    return None


def _same_kind(value: Any, default: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(default, bool)
    if isinstance(default, (int, float)) and not isinstance(default, bool):
        return isinstance(value, (int, float)) and (isinstance(default, float) or isinstance(value, int))
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple))
    return default is None or isinstance(value, type(default))


class ProfileTable:
    """A chapter's knobs: ``ProfileTable(max_depth=Knob(512, 1000, "deepest network"), ...)``."""

    def __init__(self, **knobs: Knob):
        for name, knob in knobs.items():
            if not isinstance(knob, Knob):
                raise TypeError(f"knob {name!r} must be a Knob(quick, full, doc), got {knob!r}")
            outside = [v for v in (knob.quick, knob.full, knob.tiny) if v is not None and knob.choices is not None]
            if any(v not in knob.choices for v in outside):
                raise ValueError(f"knob {name!r}: its profiles' values must be among its choices {knob.choices!r}")
            if knob.minimum is not None:
                values = [_numbers(v) for v in (knob.quick, knob.full, knob.tiny) if v is not None]
                if any(ns is None or any(not x >= knob.minimum for x in ns) for ns in values):
                    raise ValueError(f"knob {name!r}: its profiles' values must be numbers, at least {knob.minimum!r}")
        self.knobs = dict(knobs)

    def resolve(self, profile: str, overrides: Mapping[str, Any] | None = None) -> SimpleNamespace:
        """The knobs' values for ``profile``, each replaced by ``overrides[name]`` when given."""
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; use one of {', '.join(repr(p) for p in PROFILES)}")
        overrides = dict(overrides or {})
        if not isinstance(overrides, dict):
            raise TypeError(f"knobs must be a dict of knob name to value, got {type(overrides).__name__}")
        unknown = sorted(set(overrides) - set(self.knobs))
        if unknown:
            raise ValueError(f"unknown knob {unknown[0]!r}; this chapter's knobs: {', '.join(sorted(self.knobs))}")
        values = {}
        for name, knob in self.knobs.items():
            default = knob.value(profile)
            if name in overrides and overrides[name] is not None:
                given = overrides[name]
                if not _same_kind(given, default):
                    raise TypeError(
                        f"knob {name!r}: expected a value like {default!r} ({type(default).__name__}), "
                        f"got {given!r} ({type(given).__name__})"
                    )
                if knob.choices is not None and given not in knob.choices:
                    raise ValueError(
                        f"knob {name!r}: {given!r} is not one of {', '.join(repr(c) for c in knob.choices)}"
                    )
                why = _out_of_range(knob, given)
                if why is not None:
                    raise ValueError(
                        f"knob {name!r}: {why}; its profiles use {knob.quick!r} (quick), {knob.full!r} (full)"
                    )
                values[name] = given
            else:
                values[name] = default
        return SimpleNamespace(profile=profile, quick=profile != "full", **values)

    def rows(self, profile: str | None = None, overrides: Mapping[str, Any] | None = None) -> list[dict]:
        """One row per knob (name, what it sizes, quick, full and, with ``profile``, the value in use)."""
        used = self.resolve(profile, overrides) if profile else None
        out = []
        for name, knob in self.knobs.items():
            row = {"knob": name, "what it sizes": knob.doc, "quick": knob.quick, "full": knob.full}
            if used is not None:
                row["this run"] = getattr(used, name)
            out.append(row)
        return out


def _stable_seed(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little")


@dataclass
class Context:
    """What a claim's function gets: ``profile``, ``seed``, the resolved knobs ``cfg`` (attributes), a random
    generator of its own (:meth:`rng`, the same whether the claim runs alone or with its chapter) and results
    shared between claims of one chapter (:meth:`shared`)."""

    profile: str
    seed: int
    cfg: SimpleNamespace
    #: Run settings that are not sizes (a data folder, worker processes, where runs keep checkpoints): what the
    #: chapter's parameters cell passes; a claim's function reads them with defaults (``verify`` passes none).
    settings: Mapping[str, Any] = field(default_factory=dict)
    _shared: dict = field(default_factory=dict, repr=False)

    @classmethod
    def for_table(
        cls,
        table: ProfileTable,
        profile: str = "quick",
        seed: int = 0,
        knobs: Mapping | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Context:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        if settings is not None and not isinstance(settings, Mapping):
            raise TypeError(f"settings must be a dict of run settings, got {type(settings).__name__}")
        return cls(profile, seed, table.resolve(profile, knobs), dict(settings or {}))

    @property
    def quick(self) -> bool:
        return self.profile != "full"

    def rng(self, key: str) -> np.random.Generator:
        """A generator seeded by (seed, ``key``): give each claim (and each shared result) its own key, so
        that its numbers do not depend on which other claims ran before it."""
        return np.random.default_rng(_stable_seed(self.seed, key))

    def shared(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per context: a result several claims use (a training grid, a sweep)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]
