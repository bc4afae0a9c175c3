"""The claims of the smooth_maps chapter (``book/smooth_maps.md``), each declared beside the function that computes
its evidence."""

from __future__ import annotations

from .context import ProfileTable
from .registry import ClaimSet

PROFILE = ProfileTable()

CLAIMS = ClaimSet("smooth_maps", PROFILE)
