"""The claims of the linear_predictors chapter (``book/linear_predictors.md``), each declared beside the
function that computes its evidence."""

from __future__ import annotations

from .context import ProfileTable
from .registry import ClaimSet

PROFILE = ProfileTable()

CLAIMS = ClaimSet("linear_predictors", PROFILE)
