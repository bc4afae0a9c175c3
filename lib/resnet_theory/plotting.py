"""One plotting style for the whole book, and the log-log rate fits the chapters report.

Chapters call :func:`use_book_style` once (in their first code cell) and :func:`fit_power_law` /
:func:`loglog_with_fit` wherever a rate is claimed: the fitted exponent is what the text quotes (via glue).
"""

from __future__ import annotations

import numpy as np

from . import validate

PALETTE = ["#0b5394", "#cc4125", "#6aa84f", "#e69138", "#674ea7", "#45818e", "#a64d79", "#666666"]


def use_book_style() -> None:
    """Matplotlib defaults for every figure in the book (inline PNG, readable at page width)."""
    import matplotlib as mpl

    mpl.rcParams.update({
        "figure.figsize": (7.0, 3.6),
        "figure.dpi": 110,
        "savefig.dpi": 110,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": mpl.cycler(color=PALETTE),
        "legend.frameon": False,
        "font.size": 10,
    })


def fit_power_law(x, y) -> tuple[float, float]:
    """Least-squares fit of ``y = c x^p`` on log-log axes; returns ``(p, c)``."""
    x = validate.finite_array("x", x, ndim=1, positive=True)
    y = validate.finite_array("y", y, ndim=1, positive=True)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if x.size < 2:
        raise ValueError(f"fit_power_law needs at least 2 points, got {x.size}")
    p, logc = np.polyfit(np.log(x), np.log(y), 1)
    return float(p), float(np.exp(logc))


def loglog_with_fit(ax, x, y, label: str, marker: str = "o", **kwargs) -> float:
    """Plot ``y`` against ``x`` on log-log axes with its fitted power law; returns the exponent."""
    p, c = fit_power_law(x, y)
    line, = ax.loglog(x, y, marker=marker, linestyle="none", label=f"{label} (slope {p:.2f})", **kwargs)
    xs = np.geomspace(np.min(x), np.max(x), 50)
    ax.loglog(xs, c * xs ** p, color=line.get_color(), linewidth=1, alpha=0.7)
    return p
