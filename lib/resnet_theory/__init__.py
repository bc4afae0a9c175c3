"""resnet_theory: the library behind *Residual Networks, Executed*.

One module per paper or concern; each module's docstring names the paper and section it implements.

- :mod:`resnet_theory.ledger`: the claims ledger (verdicts derived from computed checks).
- :mod:`resnet_theory.checks`: three witnesses for derivatives (SymPy, autograd, finite differences).
- :mod:`resnet_theory.plotting`: the book's figure style and log-log rate fits.
- :mod:`resnet_theory.book`: the book tooling (a subpackage): the executor (papermill over jupytext chapters),
  its cache and report, the HTML build, the status page, the browser check, the PDF and the verdict diff.
"""

__version__ = "0.1.0"
