"""One plotting style for the whole book, and the log-log rate fits the chapters report.

Chapters call :func:`use_book_style` once (in their first code cell) and :func:`loglog_with_fit` wherever a
rate is claimed: the fitted exponent (:func:`resnet_theory.fits.fit_power_law`) is what the text quotes.
"""

from __future__ import annotations

import numpy as np

from . import fits

PALETTE = ["#0b5394", "#cc4125", "#6aa84f", "#e69138", "#674ea7", "#45818e", "#a64d79", "#666666"]


#: Figure width in inches, the smallest font size in points the book's figures use, and their dpi. On a phone
#: (390 CSS pixels) the article column is 342 CSS pixels wide and a figure is scaled down to it, so text of
#: ``p`` points in a figure ``w`` inches wide shows at about ``p / 72 * 342 / w`` CSS pixels, whatever the
#: dpi: 10 points at 5 inches (5.1 with the saved margin) is 9.3 pixels. At a 1400-pixel window the column is
#: wider than the figure, which shows at its own size, ``p / 72 * dpi`` pixels (10 points at 120 dpi: 16.7).
#: ``tests/test_figures.py`` measures every figure of the built book at both widths.
FIGURE_WIDTH_IN = 5.0
SMALLEST_FONT_PT = 10.0
FIGURE_DPI = 120

#: PNG text keys under which :func:`figure_png` records the figure's smallest text, for the legibility test.
PNG_SMALLEST_TEXT_PT = "resnet_theory smallest text pt"
PNG_SMALLEST_TEXT = "resnet_theory smallest text"
PNG_DPI = "resnet_theory dpi"


def use_book_style() -> None:
    """Matplotlib defaults for every figure in the book (inline PNG, readable at page width and on a phone).

    Inside IPython it also makes :func:`figure_png` the PNG form of every figure, so that each image the book
    shows records its smallest text size and its dpi.
    """
    import matplotlib as mpl

    mpl.rcParams.update(
        {
            "figure.figsize": (FIGURE_WIDTH_IN, 3.4),
            "figure.dpi": FIGURE_DPI,
            "savefig.dpi": FIGURE_DPI,
            "savefig.pad_inches": 0.05,
            "figure.constrained_layout.use": True,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.prop_cycle": mpl.cycler(color=PALETTE),
            "legend.frameon": False,
            "font.size": 11,
            "axes.titlesize": 11,
            "axes.labelsize": 11,
            "xtick.labelsize": SMALLEST_FONT_PT,
            "ytick.labelsize": SMALLEST_FONT_PT,
            "legend.fontsize": SMALLEST_FONT_PT,
            "legend.title_fontsize": SMALLEST_FONT_PT,
            "figure.titlesize": 11,
        }
    )
    _register_png_formatter()


def smallest_text(fig) -> tuple[float, str]:
    """The smallest font size (points) of any visible, non-empty text in ``fig``, and that text.

    The figure is laid out first (without rendering), so tick labels, legends and titles all count.
    """
    from matplotlib.text import Text

    fig.draw_without_rendering()
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    if not texts:
        raise ValueError("the figure has no visible text")
    smallest = min(texts, key=lambda t: t.get_fontsize())
    return float(smallest.get_fontsize()), smallest.get_text().strip()


def figure_png(fig) -> bytes | None:
    """The figure as the inline backend shows it (PNG, tight bounding box, the figure's dpi), with its
    smallest text size, that text and the dpi recorded as PNG text chunks (:data:`PNG_SMALLEST_TEXT_PT`...)."""
    import io

    if not fig.axes and not fig.lines:
        return None
    size, text = smallest_text(fig)
    latin1 = text.replace("\u2212", "-").encode("latin-1", "replace").decode("latin-1")[:200]
    buffer = io.BytesIO()
    fig.savefig(
        buffer,
        format="png",
        dpi=fig.dpi,
        bbox_inches="tight",
        facecolor=fig.get_facecolor(),
        metadata={PNG_SMALLEST_TEXT_PT: f"{size:g}", PNG_SMALLEST_TEXT: latin1, PNG_DPI: f"{fig.dpi:g}"},
    )
    return buffer.getvalue()


def _register_png_formatter() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    import matplotlib
    from matplotlib.figure import Figure

    if "inline" in matplotlib.get_backend():
        # importing the inline backend registers its own PNG formatter, which ours must replace
        import matplotlib_inline.backend_inline  # noqa: F401

    shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


def loglog_with_fit(ax, x, y, label: str, marker: str = "o", **kwargs) -> float:
    """Plot ``y`` against ``x`` on log-log axes with its fitted power law; returns the exponent."""
    p, c = fits.fit_power_law(x, y)
    (line,) = ax.loglog(x, y, marker=marker, linestyle="none", label=f"{label} (slope {p:.2f})", **kwargs)
    xs = np.geomspace(np.min(x), np.max(x), 50)
    ax.loglog(xs, c * xs**p, color=line.get_color(), linewidth=1, alpha=0.7)
    return p
