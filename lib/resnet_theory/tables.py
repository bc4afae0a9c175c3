"""Tables of computed numbers for the chapters (the book does not depend on pandas).

:func:`html_table` renders rows under headers; :class:`ResultsTable` keeps rows as dicts, gives columns back
as arrays, and renders itself in a notebook. Both use the book's table style (``_static/book.css``).
"""

from __future__ import annotations

import html
import math
import numbers
import re

import numpy as np

from . import validate


def format_cell(value, digits: int = 4, none_text: str = "n/a") -> str:
    """One cell as text: integers with thousands separators, reals to ``digits`` significant digits as a reader
    writes them (``-1,000``, ``0``, ``2.5×10⁻⁹``, ``∞``; never Python's ``-1e+03``, ``-0`` or ``nan``), truth values
    as yes / no."""
    if value is None:
        return none_text
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        return number_text(real_text(value, digits), none_text)
    if isinstance(value, (list, tuple)):
        return _items(value, lambda v: format_cell(v, digits, none_text), none_text)
    return str(value)


def _items(values, cell, none_text: str) -> str:
    """A list or tuple as a reader writes one: its items comma-separated, an inner sequence in parentheses
    (``[2, 4, 8]`` is "2, 4, 8", ``(1.0,)`` is "1", ``[[2, 3], [2, 4]]`` is "(2, 3), (2, 4)"), never Python's repr."""
    if not values:
        return none_text
    return ", ".join(f"({_items(v, cell, none_text)})" if isinstance(v, (list, tuple)) else cell(v) for v in values)


def real_text(value, digits: int = 4) -> str:
    """A real to ``digits`` significant digits in Python's ``g`` form, except that a whole number below 10^15 is
    written out whole (``-1000.0`` is ``-1,000``, not ``-1e+03``) and zero has no sign."""
    x = float(value)
    if x == 0:
        return "0"
    if np.isfinite(x) and x == round(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:.{digits}g}"


def in_words(items, conjunction: str = "and") -> str:
    """Items as a sentence lists them: ``2``, ``2 and 3``, ``2, 3 and 4.5`` (``conjunction`` "or": ``8 or 10``);
    numbers written with ``:g`` (integers with thousands separators), strings as they are. The one list-joiner of
    the claims' statements, controls and glued phrases."""
    words = [x if isinstance(x, str) else f"{x:,}" if isinstance(x, int) else f"{x:g}" for x in items]
    if not words:
        raise ValueError("in_words needs at least one item")
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def tex_number(x: float, digits: int = 3) -> str:
    """A real as TeX (inside ``$...$``) to ``digits`` significant digits, an exponent written as a power of ten:
    ``10^{-6}``, ``2.5 \\times 10^{-7}``, ``0.5``, never Python's ``1e-06``. Used where a claim's statement, control
    or check label writes one of the book's constants. A power of ten from ``10^{-3}`` down, or from ``10^3`` up, is
    written as one (``1e-4`` is ``10^{-4}``, not ``0.0001``)."""
    x = float(x)
    if x > 0 and math.isfinite(x) and abs(k := round(math.log10(x))) >= 3 and x == 10.0**k:
        return f"10^{{{k}}}"
    mantissa, _, exponent = f"{x:.{digits}g}".partition("e")
    if not exponent:
        return mantissa
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else rf"{mantissa} \times {power}"


#: A number as Python writes it in exponent form ("1.5e-06", "-1e+03", "0.0e+00"), or ``inf`` / ``nan`` on their
#: own: what a reader should see written as a number (:func:`number_html`).
PYTHON_NUMBER = re.compile(
    r"(?<![\w.\\])(?P<sign>[-+]?)(?:(?P<mant>\d+(?:\.\d*)?)[eE](?P<exp>[-+]?\d+)|(?P<word>inf|nan)(?![\w(]))(?![\w.])"
)
_SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


def _number_parts(match: re.Match, none_text: str) -> tuple[str, str | None]:
    """A :data:`PYTHON_NUMBER` match as (what stands before the power of ten, the power or None)."""
    sign = "-" if match.group("sign") == "-" else ""
    if match.group("word"):
        return (none_text, None) if match.group("word") == "nan" else (f"{sign}\u221e", None)
    mantissa, exponent = match.group("mant"), int(match.group("exp"))
    if float(mantissa) == 0:
        return "0", None
    if -3 <= exponent <= 5:  # 9.77e-02 is 0.0977, 6.32e+00 is 6.32, -1e+03 is -1,000: written out
        decimals = max(0, len(mantissa.partition(".")[2]) - exponent)
        return f"{sign}{float(mantissa) * 10.0**exponent:,.{decimals}f}", None
    if mantissa == "1":
        return sign, str(exponent)  # 1e-06 is 10^-6
    return f"{sign}{mantissa}\u00d7", str(exponent)


def number_html(text: str, none_text: str = "n/a") -> str:
    """``text`` (HTML) with each Python number form in it (:data:`PYTHON_NUMBER`) written as a reader writes it:
    ``2.5e-09`` as 2.5×10<sup>−9</sup>, ``-1e+03`` as -1,000, ``0.0e+00`` as 0, ``inf`` as ∞, ``nan`` as
    ``none_text``."""

    def write(match: re.Match) -> str:
        before, power = _number_parts(match, none_text)
        if power is None:
            return before
        return f"{before}10<sup>{power.replace('-', chr(0x2212))}</sup>"

    return PYTHON_NUMBER.sub(write, text)


def number_text(text: str, none_text: str = "n/a") -> str:
    """:func:`number_html` for plain text: the power of ten in superscript characters (``2.5×10⁻⁹``)."""

    def write(match: re.Match) -> str:
        before, power = _number_parts(match, none_text)
        return before if power is None else f"{before}10{power.translate(_SUPERSCRIPT)}"

    return PYTHON_NUMBER.sub(write, text)


#: Tables with this many columns or more get the class ``book-table-wide`` (smaller type in ``book.css``), so
#: that they fit the article column at a 1400-pixel window.
WIDE_COLUMNS = 9


def typeset_html(text) -> str:
    """``text`` escaped for HTML; its ``$...$`` spans become math that MathJax typesets on the built page.

    The book's pages tell MathJax to ignore raw output (MyST marks each page ``mathjax_ignore`` and processes
    only its own math), so a header like ``$\\|E\\Sigma^{1/2}\\|_F^2$`` would stay ASCII; wrapped in the class
    MathJax processes (as :func:`resnet_theory.ledger_html.text_html` does for claim statements) it is typeset.
    """
    from .ledger_html import text_html

    return text_html(str(text))


def html_table(headers, rows, digits: int = 4, none_text: str = "n/a") -> str:
    """An HTML table; every row needs one entry per header. A table of :data:`WIDE_COLUMNS` columns or more is
    set in smaller type (class ``book-table-wide``). Headers and text cells may hold TeX as ``$...$``
    (:func:`typeset_html`)."""
    headers = list(headers)
    digits = validate.positive_int("digits", digits)
    if not headers:
        raise ValueError("html_table needs at least one column")
    classes = "book-table book-table-wide" if len(headers) >= WIDE_COLUMNS else "book-table"
    out = [f'<table class="{classes}"><tr>' + "".join(f"<th>{typeset_html(h)}</th>" for h in headers) + "</tr>"]
    for row in rows:
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"a row has {len(row)} entries for {len(headers)} columns")
        out.append("<tr>" + "".join(_cell_td(v, digits, none_text) for v in row) + "</tr>")
    return "".join(out) + "</table>"


#: A number written out as text ("2.20e-16", "-3", "1,000", "inf"): shown whole like a number cell.
NUMBER_TEXT = re.compile(r"^[-+\u2212]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+\u2212]?\d+)?$|^[-+\u2212]?(inf|nan)$")


def _cell_td(value, digits: int, none_text: str) -> str:
    """A ``<td>``; a number's cell has the class ``num`` (``book.css``: never broken across lines, so that
    "2.20e-16" cannot split at its hyphen on a phone; a wide table scrolls in its own box instead)."""
    number = isinstance(value, numbers.Number) and not isinstance(value, (bool, np.bool_))
    if isinstance(value, str):
        number = bool(NUMBER_TEXT.match(value.strip()))
    cls = ' class="num"' if number else ""
    return f"<td{cls}>{_cell_html(value, digits, none_text)}</td>"


def _cell_html(value, digits: int, none_text: str) -> str:
    if isinstance(value, str):
        return typeset_html(value)
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_, numbers.Integral)):
        return number_html(html.escape(real_text(value, digits)), none_text)
    if isinstance(value, (list, tuple)):
        return _items(value, lambda v: _cell_html(v, digits, none_text), html.escape(none_text))
    return html.escape(format_cell(value, digits, none_text))


class ResultsTable:
    """Rows of computed numbers (dicts with the same keys, in the same order) shown as an HTML table.

    ``column(name)`` returns one column as a numpy array, so a chapter can compute from what it shows.
    ``headers`` maps a key to the header shown for it (TeX as ``$...$``, see :func:`html_table`), so that data
    keep plain keys while the reader sees typeset ones; keys it does not name are shown as they are.
    """

    def __init__(self, rows, digits: int = 4, none_text: str = "n/a", headers=None):
        rows = [validate.instance(f"rows[{i}]", r, dict, what="a dict") for i, r in enumerate(rows)]
        if not rows:
            raise ValueError("ResultsTable needs a non-empty list of dicts, got no rows")
        keys = list(rows[0])
        if any(list(r) != keys for r in rows):
            raise ValueError("every row of a ResultsTable must have the same keys in the same order")
        self.rows, self.keys = rows, keys
        self.digits, self.none_text = validate.positive_int("digits", digits), none_text
        self.headers = dict(
            validate.instance("headers", {} if headers is None else headers, dict, what="a dict of key: header")
        )

    def column(self, name) -> np.ndarray:
        if name not in self.keys:
            raise KeyError(f"no column {name!r}; columns: {self.keys}")
        return np.asarray([r[name] for r in self.rows])

    def _repr_html_(self) -> str:
        shown = [self.headers.get(k, k) for k in self.keys]
        return html_table(shown, ([r[k] for k in self.keys] for r in self.rows), self.digits, self.none_text)

    def __repr__(self) -> str:
        cell = lambda v: format_cell(v, self.digits, self.none_text)  # noqa: E731
        return "\n".join(
            [" | ".join(map(str, self.keys))] + [" | ".join(cell(r[k]) for k in self.keys) for r in self.rows]
        )
