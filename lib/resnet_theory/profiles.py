"""Chapter profiles: one place that checks a chapter's ``profile`` parameter and resolves its defaults.

Every chapter's parameters cell defines ``profile`` (``"quick"``: a 2-core CPU, minutes; ``"full"``: sized
for a GPU) and leaves size knobs at ``None``. The chapter's first cell then calls::

    cfg = resolve_profile(profile, max_depth=(max_depth, 512, 1000), big_dim=(big_dim, 9, 256))

which refuses an unknown profile (papermill's ``-p profile Quick`` is an error, not a silent full run) and
gives each knob the value a reader passed, else the profile's default: ``cfg.max_depth``, ``cfg.quick``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

PROFILES = ("quick", "full")


def check_profile(profile: Any) -> str:
    """``profile`` itself if it is one of :data:`PROFILES`; otherwise a clear error."""
    if not isinstance(profile, str):
        raise TypeError(f"profile must be a string, one of {PROFILES}; got {profile!r} ({type(profile).__name__})")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; use one of {', '.join(repr(p) for p in PROFILES)}")
    return profile


def resolve_profile(profile: Any, **knobs: tuple[Any, Any, Any]) -> SimpleNamespace:
    """Resolve each knob ``name=(given, quick_default, full_default)``: ``given`` unless it is ``None``.

    The result has one attribute per knob, plus ``profile`` and ``quick`` (``profile == "quick"``).
    """
    profile = check_profile(profile)
    resolved: dict[str, Any] = {"profile": profile, "quick": profile == "quick"}
    for name, spec in knobs.items():
        if not (isinstance(spec, tuple) and len(spec) == 3):
            raise TypeError(f"knob {name!r}: expected (given, quick_default, full_default), got {spec!r}")
        given, quick_default, full_default = spec
        resolved[name] = given if given is not None else (quick_default if profile == "quick" else full_default)
    return SimpleNamespace(**resolved)
