"""A small book as a reader meets it, built once in a temporary folder for the dark-mode and PDF tests: the real
book's configuration and style sheet (``_config.yml``, ``_static/``, ``references.bib``), a chapter with a chapter
table, a wide table, a ledger-style table with hand-made claims, an erratum, a claim's evidence table, a theorem
box, a figure and a code cell whose input is hidden,
and prose quoting glued numbers. Never the real book."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from conftest import MYST_HEADER, ROOT

#: Text only the hidden input holds: it must not reach the PDF.
HIDDEN_MARKER = "HIDDENINPUTMARKER"
#: Text only the wide table's last column holds, in every row (the code that writes it spells it in two pieces): it
#: must be printed, inside the page, once per row.
WIDE_MARKER = "LASTCOLUMNMARKER"

CLAIMS = textwrap.dedent("""\
    from IPython.display import HTML
    from resnet_theory.ledger import Ledger
    from resnet_theory.ledger_html import claims_table_html, counts_table_html, errata_html
    from resnet_theory.verdicts import Check
    ledger = Ledger("reader")
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    ci = "an input the claim rules out, for the test"
    ledger.claim("hardt-ma/thm-2.1", paper="hardt-ma", ref="Theorem 2.1, Section 2 (proof: Appendix A.1)",
                 statement=r"Suppose $\\ell \\ge 3\\gamma$. Then $\\max_i \\|A^*_i\\| \\le 2 (\\sqrt{\\pi} + "
                 r"\\sqrt{3\\gamma})^2 / \\ell$ for every invertible target, whatever its determinant.",
                 section="reader-claims", printed=bad, corrected=ok, control=bad, control_input=ci,
                 corrected_statement=r"With $\\det R > 0$ added, the bound holds.")
    ledger.claim("shamir/thm-1", paper="shamir", ref="Theorem 1", statement="Every local minimum is good enough.",
                 section="reader-claims", printed=ok, control=bad, control_input=ci)
    HTML(errata_html(ledger.claims) + counts_table_html(ledger.claims) + claims_table_html(ledger.claims))""")

#: A ledger of 20 claims, each with its evidence, on a page of its own (book/printed): tests/test_pdf.py counts the
#: pages it prints on.
LONG_LEDGER = textwrap.dedent("""\
    from IPython.display import HTML
    from resnet_theory.ledger import Ledger
    from resnet_theory.ledger_html import claims_table_html
    from resnet_theory.verdicts import Check
    ledger = Ledger("printed")
    ok, bad = Check.equal(1, 1, what="holds"), Check.equal(1, 2, what="fails")
    for i in range(20):
        ledger.claim(f"shamir/lemma-{i}", paper="shamir", ref=f"Lemma {i}, Section 3 (proof: Appendix B)",
                     statement=rf"For every $n \\ge {i}$ the risk of the residual net is at most the linear one's; "
                     "every local minimum is at least as good as the best linear predictor, whatever the data.",
                     section="printed-claims", printed=ok, control=bad,
                     control_input="an input the claim rules out, for the test")
    HTML(claims_table_html(ledger.claims))""")

EVIDENCE = textwrap.dedent("""\
    from IPython.display import HTML
    HTML("<table class='claim-evidence'><caption>hardt-ma/thm-2.1</caption>"
         "<tr><th>statement</th><td>the bound</td></tr><tr><th>statement (our reconstruction): holds</th>"
         "<td>the bound, recomputed</td></tr><tr><th>verdict</th><td>corrected</td></tr></table>")""")

TABLES = textwrap.dedent("""\
    from resnet_theory.tables import ResultsTable
    ResultsTable([{"depth": 4, "worst ratio": 0.5}, {"depth": 8, "worst ratio": 0.25}])""")

WIDE = textwrap.dedent(f"""\
    from resnet_theory.tables import ResultsTable
    ResultsTable([{{f"column number {{i}}": f"a long cell of words number {{i}} in row {{r}}" for i in range(11)}}
                  | {{"last": "{WIDE_MARKER[:4]}" + "{WIDE_MARKER[4:]}"}} for r in range(3)])""")

#: A number the chapter glues and its prose quotes, before and after the cell that computes it, and the kernel's
#: process id (new at every run): the JupyterLab test (tests/test_jupyter_prose.py) reads them in the rendered prose.
GLUED = textwrap.dedent("""\
    import os
    from myst_nb import glue
    glue("reader_answer", 0.1234567, display=False)
    glue("reader_pid", os.getpid(), display=False)
    glue("reader_tiny", 3.4e-16, display=False)
    print("kernel process", os.getpid())""")
QUOTED_BEFORE = "Quoted before the cell that computes it: process {glue:text}`reader_pid`.\n"
QUOTED_AFTER = (
    "The answer is {glue:text}`reader_answer:.3f`, computed by process {glue:text}`reader_pid`. "
    "Its error is {glue:text}`reader_tiny:.1e`.\n"
)

HIDDEN = f":tags: [hide-input]\n{HIDDEN_MARKER} = 1\nprint('the output of a cell whose input is hidden')"

FIGURE = textwrap.dedent("""\
    ---
    mystnb:
      image:
        alt: "A line falling from 1 to 0."
    ---
    import matplotlib.pyplot as plt
    plt.plot([0, 1], [1, 0])
    plt.title("a falling line")
    plt.show()""")

THEOREM = """
(reader-claims)=
## A theorem box

```{prf:theorem} Hardt and Ma, Theorem 2.1 (our wording)
:label: reader-thm
:nonumber:

For $\\ell \\ge 3\\gamma$ there is a global optimum with
$\\max_i \\|A_i\\| \\le 2(\\sqrt{\\pi}+\\sqrt{3\\gamma})^2/\\ell$.
```
"""


def _cell(source: str) -> str:
    return f"```{{code-cell}} ipython3\n{source}\n```\n"


def reader_chapter() -> str:
    cells = [
        MYST_HEADER,
        "# Reader\n\nA chapter with every kind of box the book shows.\n",
        QUOTED_BEFORE,
        "```{code-cell} ipython3\n:tags: [parameters]\nprofile = 'quick'\nseed = 0\n```\n",
        _cell(GLUED),
        QUOTED_AFTER,
        _cell(HIDDEN),
        _cell(TABLES),
        THEOREM,
        _cell(CLAIMS),
        _cell(EVIDENCE),
        _cell(WIDE),
        _cell(FIGURE),
    ]
    return "\n".join(cells)


def build_reader_book(base: Path) -> Path:
    """The small book built under ``base``; returns its HTML folder."""
    from resnet_theory.book.cli import main

    root = base / "src"
    (root / "book").mkdir(parents=True)
    for name in ("_config.yml", "references.bib"):
        shutil.copy(ROOT / name, root / name)
    shutil.copytree(ROOT / "_static", root / "_static")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/reader\n  - file: book/printed\n"
    )
    (root / "book" / "intro.md").write_text("# Intro\n\nA small book for the readers' checks.\n")
    (root / "book" / "reader.md").write_text(reader_chapter())
    parameters = "```{code-cell} ipython3\n:tags: [parameters]\nprofile = 'quick'\nseed = 0\n```\n"
    printed = f"{MYST_HEADER}\n# A printed ledger\n\n{parameters}\n(printed-claims)=\n## Claims\n\n{_cell(LONG_LEDGER)}"
    (root / "book" / "printed.md").write_text(printed)
    build = base / "build"
    code = main(["execute", "--root", str(root), "--build-dir", str(build)])
    if code != 0:
        raise RuntimeError(f"the reader book did not build (exit {code})")
    return build / "html"
