"""Reading conventions over the chapter sources (fast; no execution).

- code lines in code cells and in fenced code blocks of the prose are at most 88 characters (what the
  book theme shows at a 1400-pixel window without horizontal scrolling; the browser check measures the
  same on the built pages);
- every theorem-like box (``{prf:...}``) has ``:nonumber:``, so its title carries the paper's numbering only;
- bookkeeping cells (only ``ledger.claim`` / ``not_checkable`` / ``glue`` calls, and imports) are tagged
  ``hide-input`` (or removed), so the mathematics and the computations take the room;
- every code cell that draws a figure gives alternative text in its metadata (``mystnb: image: alt:``).

These tests read every page of the TOC, so a chapter being rewritten may fail them until it follows the
conventions; the failure names the page, the cell and the line.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import jupytext
import pytest

from resnet_theory.book.toc import toc_files

from conftest import ROOT

MAX_CODE_LINE = 88
PAGES = [entry for entry in toc_files(ROOT)]
BOOKKEEPING_CALLS = {"claim", "not_checkable", "skip", "glue", "glue_numbers"}
HIDDEN_INPUT_TAGS = {"hide-input", "remove-input", "remove-cell", "hide-cell"}
FIGURE_CALLS = re.compile(
    r"\b(plt\.(show|plot|figure|subplots|imshow|scatter|bar|hist|semilogy|loglog)|"
    r"loglog_with_fit|\.savefig|subplots)\s*\("
)


def code_cells(entry: str):
    nb = jupytext.read(ROOT / f"{entry}.md", fmt="md:myst")
    return [(n, c) for n, c in enumerate((c for c in nb.cells if c.cell_type == "code"), start=1)]


def is_bookkeeping(source: str) -> bool:
    """Every statement is an import, or a call of glue / .claim / .not_checkable (also inside a loop)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False

    def call_name(node) -> str | None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return None

    def bookkeeping(node) -> bool:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return True
        if isinstance(node, ast.For):
            return all(bookkeeping(n) for n in node.body) and not node.orelse
        return call_name(node) in BOOKKEEPING_CALLS

    calls = [
        n
        for n in ast.walk(ast.Module(body=body, type_ignores=[]))
        if isinstance(n, ast.Expr) and call_name(n) in BOOKKEEPING_CALLS
    ]
    return bool(calls) and all(bookkeeping(n) for n in body)


def test_is_bookkeeping_tells_bookkeeping_from_computation():
    assert is_bookkeeping("from myst_nb import glue\nglue('x', 1.0, display=False)\nledger.claim('a', b=1)")
    assert is_bookkeeping("for k, v in d.items():\n    glue(k, v, display=False)")
    assert not is_bookkeeping("x = compute()\nglue('x', x, display=False)")
    assert not is_bookkeeping("ledger.show()")
    assert not is_bookkeeping("import numpy as np")


def fenced_blocks(entry: str):
    """The fenced code blocks (```lang ... ```) of the markdown cells: (cell number, block's lines)."""
    nb = jupytext.read(ROOT / f"{entry}.md", fmt="md:myst")
    markdown = (c for c in nb.cells if c.cell_type == "markdown")
    return [
        (n, block.group(1).splitlines())
        for n, cell in enumerate(markdown, start=1)
        for block in FENCE.finditer(cell.source)
    ]


FENCE = re.compile(r"^```[ \t]*[\w-]*[ \t]*\n(.*?)^```", re.S | re.M)


def test_fenced_blocks_are_found():
    text = "Run\n\n```bash\nmake book\n" + "x" * 90 + "\n```\n\n```{note}\nnot code\n```\n"
    blocks = [b.group(1).splitlines() for b in FENCE.finditer(text)]
    assert blocks == [["make book", "x" * 90]]


@pytest.mark.parametrize("entry", PAGES)
def test_code_lines_fit_the_page(entry):
    long = [
        f"cell {n}, line {i}: {len(line)} characters"
        for n, cell in code_cells(entry)
        for i, line in enumerate(cell.source.splitlines(), start=1)
        if len(line) > MAX_CODE_LINE
    ]
    long += [
        f"markdown cell {n}, fenced block line: {len(line)} characters"
        for n, lines in fenced_blocks(entry)
        for line in lines
        if len(line) > MAX_CODE_LINE
    ]
    assert not long, f"{entry}: code lines over {MAX_CODE_LINE} characters:\n" + "\n".join(long)


@pytest.mark.parametrize("entry", PAGES)
def test_theorem_boxes_carry_no_sphinx_number(entry):
    text = (ROOT / f"{entry}.md").read_text()
    missing = []
    for match in re.finditer(r"^(`{3,}|:{3,})\{prf:(\w+)\}([^\n]*)\n((?::[^\n]*\n)*)", text, re.M):
        if ":nonumber:" not in match.group(4):
            line = text[: match.start()].count("\n") + 1
            missing.append(f"line {line}: prf:{match.group(2)}{match.group(3)}")
    assert not missing, f"{entry}: boxes without :nonumber: (their title gets a Sphinx number):\n" + "\n".join(missing)


PRF_TITLE = re.compile(r"^(?:`{3,}|:{3,})\{prf:\w+\}([^\n]*)$", re.M)
#: Inline math closing a line, and the next line opening with punctuation: the reader sees the mark stranded
#: at the start of a line (MathJax's output is a box the browser may break after).
STRANDED = re.compile(r"\$[ \t]*\n[ \t]*[.,;:!?)]")


def typographic_faults(text: str) -> list[str]:
    """Theorem titles with parentheses (the theme wraps the title in parentheses already, so "(our wording)"
    comes out doubled) and punctuation stranded on the line after inline math, each with its line number."""
    faults = []
    for match in PRF_TITLE.finditer(text):
        if set("()") & set(match.group(1)):
            line = text[: match.start()].count("\n") + 1
            faults.append(f"line {line}: parentheses in a theorem title: {match.group(1).strip()}")
    for match in STRANDED.finditer(text):
        if text[max(0, match.start() - 1)] == "$":
            continue  # the closing $$ of display math: the punctuation after it is part of the display
        line = text[: match.start()].count("\n") + 2
        stranded = text[match.end() - 1 :].split("\n")[0]
        faults.append(f"line {line}: punctuation stranded after inline math: {stranded}")
    return faults


def test_typographic_faults_are_found():
    faults = typographic_faults(
        "```{prf:theorem} Hardt and Ma, Claim 2.3 (our wording)\n:nonumber:\n```\n"
        "so the bound is $\\gamma$\n. And then $x$\n, and $y$ \n; fine $z$.\n$$\nA\n$$\n.\n"
        "```{prf:lemma} Hardt and Ma, Lemma B.1 \u2014 our wording\n```\n"
    )
    assert [f.split(":")[0] for f in faults] == ["line 1", "line 5", "line 6", "line 7"]
    assert "parentheses in a theorem title" in faults[0] and "stranded" in faults[1]


@pytest.mark.parametrize("entry", PAGES)
def test_no_doubled_parentheses_or_stranded_punctuation(entry):
    faults = typographic_faults((ROOT / f"{entry}.md").read_text())
    assert not faults, f"{entry}: typographic faults:\n" + "\n".join(faults)


@pytest.mark.parametrize("entry", PAGES)
def test_bookkeeping_cells_are_collapsed(entry):
    visible = [
        f"cell {n}: {cell.source.splitlines()[0][:70]}"
        for n, cell in code_cells(entry)
        if is_bookkeeping(cell.source) and not HIDDEN_INPUT_TAGS & set(cell.metadata.get("tags", []))
    ]
    assert not visible, f"{entry}: bookkeeping cells without hide-input:\n" + "\n".join(visible)


@pytest.mark.parametrize("entry", PAGES)
def test_figure_cells_have_alternative_text(entry):
    missing = []
    for n, cell in code_cells(entry):
        if FIGURE_CALLS.search(cell.source) and "remove-output" not in cell.metadata.get("tags", []):
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            if not str(alt).strip():
                missing.append(f"cell {n}: {cell.source.splitlines()[0][:70]}")
    assert not missing, f"{entry}: figure cells without mystnb.image.alt metadata:\n" + "\n".join(missing)


@pytest.mark.parametrize("entry", PAGES)
def test_papermill_sees_every_parameter(entry, tmp_path):
    # `papermill --help-notebook` and `inspect_notebook` list a chapter's parameters; papermill's parser
    # skips (with only a log warning) a line with more than one "=", e.g. an "=" inside the comment.
    import papermill

    nb = jupytext.read(ROOT / f"{entry}.md", fmt="md:myst")
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if not cells:
        return
    body = ast.parse(cells[0].source).body
    assigned = {t.id for node in body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}
    assigned |= {node.target.id for node in body if isinstance(node, ast.AnnAssign)}
    path = tmp_path / "chapter.ipynb"
    jupytext.write(nb, path, fmt="ipynb")
    inspected = papermill.inspect_notebook(str(path))
    assert set(inspected) == assigned, f"{entry}: papermill does not see {sorted(assigned - set(inspected))}"
    # every parameter has a type and a help text in `papermill --help-notebook` (not "Unknown type")
    untyped = [n for n, p in inspected.items() if p["inferred_type_name"] in ("None", "")]
    assert not untyped, f"{entry}: annotate these parameters (name: type = default  # help): {untyped}"
    if entry not in ("book/ledger", "book/status"):
        no_help = [n for n, p in inspected.items() if not p["help"]]
        assert not no_help, f"{entry}: parameters without a help comment: {no_help}"


@pytest.mark.parametrize("entry", PAGES)
def test_no_visible_code_cell_calls_glue(entry):
    """Gluing numbers into the prose is bookkeeping: it belongs in a removed or input-hidden cell, so a reader sees
    the computation, not the plumbing (the notebook keeps it)."""
    nb = jupytext.read(ROOT / f"{entry}.md", fmt="md:myst")
    hidden = {"hide-input", "remove-cell", "remove-input", "hide-cell"}
    offenders = []
    for n, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        if hidden & set(cell.metadata.get("tags", [])):
            continue
        calls = [
            node
            for node in ast.walk(ast.parse(cell.source))
            if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("glue", "glue_numbers")
        ]
        if calls:
            offenders.append(f"code cell {n + 1}: {cell.source.strip().splitlines()[0][:70]}")
    assert not offenders, f"{entry}: visible cells that call glue:\n  " + "\n  ".join(offenders)


#: Chapter code is linted with the library's rules (pyproject.toml) at the chapters' width, as the notebook that
#: papermill runs. Two rules are off for chapters only: E402, since a chapter imports in the cell where a reader
#: first meets a tool, and E702, since a few figure cells keep short statements on one line.
CHAPTER_LINT = ("--line-length", str(MAX_CODE_LINE), "--extend-ignore", "E402,E702")
EXECUTED_PAGES = [e for e in PAGES if "```{code-cell}" in (ROOT / f"{e}.md").read_text()]


def lint_notebook(nb, path) -> str:
    """ruff's findings on a notebook (empty when it passes)."""
    jupytext.write(nb, path, fmt="ipynb")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--no-cache",
            "--config",
            str(ROOT / "pyproject.toml"),
            *CHAPTER_LINT,
            "--output-format",
            "concise",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return "" if proc.returncode == 0 else proc.stdout


def test_the_chapter_linter_finds_what_it_should(tmp_path):
    nb = jupytext.reads("```{code-cell} ipython3\nimport os\nprint(undefined_name)\n```\n", fmt="md:myst")
    findings = lint_notebook(nb, tmp_path / "bad.ipynb")
    assert "F401" in findings and "F821" in findings
    assert (
        lint_notebook(
            jupytext.reads("```{code-cell} ipython3\nprint(1)\n```\n", fmt="md:myst"), tmp_path / "good.ipynb"
        )
        == ""
    )


@pytest.mark.parametrize("entry", EXECUTED_PAGES)
def test_chapter_code_passes_the_linter(entry, tmp_path):
    findings = lint_notebook(jupytext.read(ROOT / f"{entry}.md", fmt="md:myst"), tmp_path / "chapter.ipynb")
    assert not findings, f"{entry} (cells counted from 1, markdown cells included):\n{findings}"


# --- issue 30: chapters narrate; the claims live in the library ------------------------------------------------
MAX_HIDDEN_CLAIM_CELL = 15
CLAIM_CODE = re.compile(r"\b(ledger\.|chapter\.check|Check\.|Evidence\(|control_input)")


def hidden_claim_cells(entry: str) -> list[tuple[int, int]]:
    """(cell number, lines) of the hidden cells that run or record a claim and are longer than 15 lines."""
    return [
        (n, len(cell.source.splitlines()))
        for n, cell in code_cells(entry)
        if HIDDEN_INPUT_TAGS & set(cell.metadata.get("tags", []))
        and "install-resnet-theory" not in cell.metadata.get("tags", [])
        and CLAIM_CODE.search(cell.source)
        and len(cell.source.splitlines()) > MAX_HIDDEN_CLAIM_CELL
    ]


def test_claim_code_is_recognised():
    assert CLAIM_CODE.search('c = chapter.check("x")') and not CLAIM_CODE.search("x = np.ones(3)")


@pytest.mark.parametrize("entry", [e for e in PAGES if (ROOT / f"{e}.md").read_text().count("chapter.check(")])
def test_no_hidden_claim_cell_is_longer_than_15_lines(entry):
    assert not hidden_claim_cells(entry), f"{entry}: hidden claim cells (cell, lines): {hidden_claim_cells(entry)}"


@pytest.mark.parametrize("entry", PAGES)
def test_chapters_record_claims_only_through_the_library(entry):
    """No claim recorded in a chapter cell, no second profile resolution, no ``if quick`` branch: the claims and
    the chapter's sizes are declared in ``resnet_theory.claims.<chapter>``."""
    for n, cell in code_cells(entry):
        for pattern in ("ledger.claim(", "ledger.not_checkable(", "ledger.skip(", "resolve_profile(", "if quick"):
            assert pattern not in cell.source, f"{entry}, code cell {n}: {pattern}"
