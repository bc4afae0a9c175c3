"""Chapter tables: formatting, escaping, and clear errors for malformed rows."""

import numpy as np
import pytest

from resnet_theory.tables import ResultsTable, format_cell, html_table


def test_cells_are_formatted_by_type():
    assert format_cell(1234) == "1,234"
    assert format_cell(np.int64(7)) == "7"
    assert format_cell(0.123456789) == "0.1235"
    assert format_cell(np.float64(2.5e-9), digits=2) == "2.5\u00d710\u207b\u2079"
    assert format_cell(True) == "yes" and format_cell(np.bool_(False)) == "no"
    assert format_cell(None, none_text="none in the grid") == "none in the grid"


def test_html_table_escapes_and_checks_shapes():
    text = html_table(["a", "b"], [[1234, 0.123456789], ["x<y", True]])
    assert 'class="book-table"' in text
    assert "1,234" in text and "0.1235" in text and "x&lt;y" in text and "<td>yes</td>" in text
    with pytest.raises(ValueError, match="2 columns"):
        html_table(["a", "b"], [[1]])
    with pytest.raises(ValueError, match="at least one column"):
        html_table([], [])
    with pytest.raises(ValueError, match="digits"):
        html_table(["a"], [[1]], digits=0)


def test_results_table_columns_and_errors():
    table = ResultsTable([{"a": 1, "b": 0.123456}, {"a": 2, "b": None}], digits=3, none_text="none in the grid")
    assert list(table.column("a")) == [1, 2]
    assert "0.123" in table._repr_html_() and "none in the grid" in table._repr_html_()
    assert "a | b" in repr(table)
    with pytest.raises(ValueError, match="non-empty"):
        ResultsTable([])
    with pytest.raises(ValueError, match="same keys"):
        ResultsTable([{"a": 1}, {"b": 2}])
    with pytest.raises(ValueError, match="digits"):
        ResultsTable([{"a": 1}], digits=0)
    with pytest.raises(KeyError, match="no column"):
        table.column("c")


def test_arguments_follow_the_validation_rule():
    # a float or a bool for digits is a wrong type (it was a ValueError), numpy integers are integers
    for bad in (2.5, True, "3"):
        with pytest.raises(TypeError, match="digits must be a positive integer"):
            html_table(["a"], [[1]], digits=bad)
        with pytest.raises(TypeError, match="digits must be a positive integer"):
            ResultsTable([{"a": 1}], digits=bad)
    assert "1.23" in html_table(["a"], [[1.23456]], digits=np.int64(3))
    with pytest.raises(ValueError, match=r"digits must be a positive integer \(at least 1\), got 0"):
        html_table(["a"], [[1]], digits=0)
    with pytest.raises(TypeError, match=r"rows\[1\] must be a dict, got \[2\]"):
        ResultsTable([{"a": 1}, [2]])


def test_wide_tables_get_the_class_that_sets_them_in_smaller_type():
    from resnet_theory.tables import WIDE_COLUMNS

    narrow = html_table([f"c{i}" for i in range(WIDE_COLUMNS - 1)], [list(range(WIDE_COLUMNS - 1))])
    wide = html_table([f"c{i}" for i in range(WIDE_COLUMNS)], [list(range(WIDE_COLUMNS))])
    assert 'class="book-table"' in narrow and "book-table-wide" not in narrow
    assert 'class="book-table book-table-wide"' in wide


def test_tex_headers_and_cells_are_marked_for_mathjax():
    """The built pages ignore raw output unless it sits in an element of class ``mathjax_process``, and MathJax
    there reads ``\\(...\\)``: a TeX header is wrapped and delimited so, plain text is left as it is."""
    text = html_table([r"$\|E\Sigma^{1/2}\|_F^2$", "depth"], [[r"$\gamma^2 \sqrt{d}$", 3]])
    assert r'<th><span class="mathjax_process">\(\|E\Sigma^{1/2}\|_F^2\)</span></th>' in text
    assert r'<td><span class="mathjax_process">\(\gamma^2 \sqrt{d}\)</span></td>' in text
    assert "<th>depth</th>" in text and '<td class="num">3</td>' in text
    assert "$" not in text
    assert "mathjax_process" in ResultsTable([{"$x^2<1$": 1}])._repr_html_()
    assert r"\(x^2&lt;\) \(1\)" in ResultsTable([{"$x^2<1$": 1}])._repr_html_()  # escaped, split at the relation


def test_unsafe_tex_in_a_header_is_refused():
    from resnet_theory.ledger_html import UnsafeText

    with pytest.raises(UnsafeText, match="href"):
        html_table([r"$\href{javascript:alert(1)}{x}$"], [[1]])


def test_results_table_shows_typeset_headers_for_plain_keys():
    rows = [{"||grad f||^2": 0.5, "steps": 3}]
    table = ResultsTable(rows, headers={"||grad f||^2": r"$\|\nabla f\|^2$"})
    page = table._repr_html_()
    assert r'<th><span class="mathjax_process">\(\|\nabla f\|^2\)</span></th><th>steps</th>' in page
    assert list(table.column("||grad f||^2")) == [0.5]  # the data keep their key
    with pytest.raises(TypeError, match="headers must be a dict"):
        ResultsTable(rows, headers=[("steps", "$s$")])


def test_number_cells_are_marked_so_they_never_break_at_a_hyphen():
    """'2.20e-16' must not split as '2.20e-' / '16' on a phone: number cells (and numbers given as text) get
    the class ``num``, which book.css sets nowrap; words and TeX stay breakable."""
    import re
    from pathlib import Path

    text = html_table(["a", "b", "c", "d", "e"], [[2.2e-16, "3.41e-16", "swirl", True, "$x - 1$"]])
    cells = re.findall(r"<td([^>]*)>", text)
    assert cells == [' class="num"', ' class="num"', "", "", ""]
    assert '<td class="num">2.2\u00d710<sup>\u221216</sup></td>' in text
    css = (Path(__file__).resolve().parents[1] / "_static" / "book.css").read_text()
    rule = re.search(r"table\.book-table td\.num \{([^}]*)\}", css)
    assert rule and "white-space: nowrap" in rule.group(1)


@pytest.mark.parametrize(
    ("value", "digits", "shown"),
    [
        (-1000.0, 3, "-1,000"),  # was -1e+03
        (0.0, 3, "0"),
        (-0.0, 3, "0"),  # was -0
        (2.5e-9, 2, "2.5\u00d710<sup>\u22129</sup>"),
        (1e-6, 3, "10<sup>\u22126</sup>"),
        (1234567.8, 3, "1.23\u00d710<sup>6</sup>"),
        (0.0977, 3, "0.0977"),
        (float("inf"), 3, "\u221e"),
        (float("-inf"), 3, "-\u221e"),
        (float("nan"), 3, "n/a"),
    ],
)
def test_real_cells_never_show_a_python_number_form(value, digits, shown):
    """Issue 33: '-1e+03', '0.0e+00', '-0', 'nan', 'inf' are Python's spellings; a reader sees -1,000, 0, a power
    of ten, n/a and the infinity sign, in a cell still marked ``num`` (never broken across lines)."""
    assert html_table(["a"], [[value]], digits=digits) == (
        f'<table class="book-table"><tr><th>a</th></tr><tr><td class="num">{shown}</td></tr></table>'
    )


def test_numbers_written_as_text_are_rewritten_in_cells_and_prose():
    """Numbers a claim or chapter formatted itself ('%.1e', '%.3e') read as numbers too, outside the math only."""
    from resnet_theory.ledger_html import text_html
    from resnet_theory.tables import number_html, number_text

    row = ["0.0e+00", "-1e+03", "6.32e+00", "9.77e-02", "1.000e-09", "inf"]
    text = html_table(list("abcdef"), [row])
    shown = ["0", "-1,000", "6.32", "0.0977", "1.000\u00d710<sup>\u22129</sup>", "\u221e"]
    assert "".join(f'<td class="num">{v}</td>' for v in shown) in text
    summary = text_html(r"tightest case inf vs 1.000e-09; $x \le 10^{-6}$ at 2e-05, inference, item1e5")
    assert "case \u221e vs 1.000\u00d710<sup>\u22129</sup>" in summary and "at 2\u00d710<sup>\u22125</sup>," in summary
    assert r"\(x \le\) \(10^{-6}\)" in summary and "inference" in summary and "item1e5" in summary
    assert number_text("2.5e-09 and nan", none_text="none") == "2.5\u00d710\u207b\u2079 and none"
    assert number_html("no numbers, 1,000 and 0.5") == "no numbers, 1,000 and 0.5"


def test_book_table_headers_break_only_between_words():
    """The sizing table's headers were cut mid-word at 1400 px ('see/ds', 'neede/d'): every generated table's
    headers, wide ones included and in print, break between words only, as the status table's do."""
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[1] / "_static" / "book.css").read_text()
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    rule = re.search(r"table\.book-table th, table\.book-table-wide th \{([^}]*)\}", css)
    assert rule, "no header rule for table.book-table"
    assert all(p in rule.group(1) for p in ("overflow-wrap: normal", "word-break: normal", "hyphens: none"))
    later = css[rule.end() :]
    breaking = [
        selectors.strip()
        for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", later)
        if re.search(r"table\.book-table\S* th\b", selectors)
        and re.search(r"overflow-wrap: (anywhere|break-word)|word-break: break-all", body)
    ]
    # the one exception: sixteen header words cannot all fit the column whole (the expressivity projection table)
    assert breaking == ["table.book-table:has(th:nth-child(13)) th"], breaking


def test_a_wide_tables_cells_keep_their_words_whole():
    """The smooth-maps control table read "holde/r", "geometri/c" at 1400 px; keeping the first cell whole fixed
    "holder", not "geometric" in the second (issue 33 review). The theme lays out every output's table
    automatically (``.bd-content div.output table``, which outranks ``table.book-table-wide``), so a cell that may
    break anywhere is as narrow as a letter: every cell of a wide table breaks inside a word only where the word
    cannot fit its column, and each column is at least as wide as its longest word."""
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[1] / "_static" / "book.css").read_text()
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    screen = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*\s*\}", "", css)
    rules = dict((sel.strip(), body) for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", screen))
    assert "overflow-wrap: break-word" in rules["table.book-table-wide th, table.book-table-wide td"]
    assert "table-layout: auto" in rules["table.book-table-wide"]
    assert not re.search(r"table\.book-table(-wide)? t[dh][^{,]*\{[^}]*overflow-wrap: anywhere", screen)


def test_sequences_are_written_as_lists_not_python_reprs():
    """The profile tables showed knob values as Python prints them: "[2, 4, 8, 16, 32]", "(1.0,)",
    "[[2, 3, 0.5], [2, 4, 0.9]]" (issue 33 review): a list reads as its items, an inner one in parentheses."""
    row = [[2, 4, 8], (1.0,), [[2, 3, 0.5], [2, 4, 0.9]], (1e-6, "x<y"), []]
    text = html_table(list("abcde"), [row])
    cells = ["2, 4, 8", "1", "(2, 3, 0.5), (2, 4, 0.9)", "10<sup>\u22126</sup>, x&lt;y", "n/a"]
    assert "".join(f"<td>{c}</td>" for c in cells) in text
    assert format_cell([0.5, 1.0, 2.5e-9]) == "0.5, 1, 2.5\u00d710\u207b\u2079"
    assert "[" not in text and "(1.0,)" not in text


def test_tex_number_writes_a_constant_as_tex_never_as_python():
    from resnet_theory.tables import tex_number

    cases = {1e-6: "10^{-6}", 1e-12: "10^{-12}", 1e-4: "10^{-4}", 2.5e-7: r"2.5 \times 10^{-7}", 0.5: "0.5"}
    assert {x: tex_number(x) for x in cases} == cases
    assert tex_number(0.01) == "0.01" and tex_number(12345.0) == r"1.23 \times 10^{4}"


def test_in_words_lists_items_as_a_sentence_does():
    """The one list-joiner of the claims' texts: "a, b and c", never "a and b and c" or a Python list."""
    from resnet_theory.tables import in_words

    assert in_words((2.0,)) == "2" and in_words((2.0, 3.0, 4.5)) == "2, 3 and 4.5"
    assert in_words(["(a)", "(b)"]) == "(a) and (b)" and in_words(["a", 0.5, "c"]) == "a, 0.5 and c"
    assert in_words((30000, 50000)) == "30,000 and 50,000" and in_words((8, 10), "or") == "8 or 10"
    with pytest.raises(ValueError, match="at least one"):
        in_words(())
