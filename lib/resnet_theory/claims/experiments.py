"""The claims of the experiments chapter (``book/experiments.md``), each declared beside the function that computes
its evidence."""

from __future__ import annotations

from .context import ProfileTable
from .registry import ClaimSet

PROFILE = ProfileTable()

CLAIMS = ClaimSet("experiments", PROFILE)
