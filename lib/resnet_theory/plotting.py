"""One plotting style for the whole book, and the log-log rate fits the chapters report.

Chapters call :func:`use_book_style` once (in their first code cell) and :func:`loglog_with_fit` wherever a
rate is claimed: the fitted exponent (:func:`resnet_theory.fits.fit_power_law`) is what the text quotes.
"""

from __future__ import annotations

import numpy as np

from . import fits

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


def loglog_with_fit(ax, x, y, label: str, marker: str = "o", **kwargs) -> float:
    """Plot ``y`` against ``x`` on log-log axes with its fitted power law; returns the exponent."""
    p, c = fits.fit_power_law(x, y)
    line, = ax.loglog(x, y, marker=marker, linestyle="none", label=f"{label} (slope {p:.2f})", **kwargs)
    xs = np.geomspace(np.min(x), np.max(x), 50)
    ax.loglog(xs, c * xs ** p, color=line.get_color(), linewidth=1, alpha=0.7)
    return p
