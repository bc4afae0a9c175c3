"""resnet_theory: the library behind *Residual Networks, Executed*. The map, one line per module.

The papers (each module in the order its chapter reads; the docstring names the paper and section):

- :mod:`resnet_theory.linear`: Hardt & Ma Section 2 (linear residual networks), Bartlett, Helmbold & Long.
- :mod:`resnet_theory.expressivity`: Hardt & Ma Section 3 and Appendix B (the interpolating ReLU network).
- :mod:`resnet_theory.smooth`: Bartlett, Evans & Long (smooth invertible maps as near-identity compositions).
- :mod:`resnet_theory.shamir`: Shamir (are ResNets provably better than linear predictors?).

The chapter API (what a chapter imports besides its paper module):

- :mod:`resnet_theory.ledger`: a chapter's claims ledger (Ledger: claims, controls, the chapter's table and glue).
- :mod:`resnet_theory.verdicts`: the verdict rules, no I/O (Check and its constructors, the verdict they imply).
- :mod:`resnet_theory.record`: the claim record declared once (Claim, its fields' types, papers, defects).
- :mod:`resnet_theory.ledger_html`: the ledger as HTML (errata, counts, every claim, typeset statements).
- :mod:`resnet_theory.checks`: three witnesses for every derivative (SymPy, autograd, finite differences).
- :mod:`resnet_theory.profiles`: a chapter's ``profile`` parameter and its size defaults.
- :mod:`resnet_theory.fits`: rate fits (power law on log-log axes, power law against exponential).
- :mod:`resnet_theory.plotting`: the book's figure style and the log-log plot with its fitted line.
- :mod:`resnet_theory.tables`: HTML tables of computed numbers.
- :mod:`resnet_theory.power`: how many seeds a statistical check needs to decide (a power calculation).
- :mod:`resnet_theory.validate`: argument checks shared by every public function and command.
- :mod:`resnet_theory.outputs`: where commands may write (never a source or another build's records).

Subpackages (each ``__init__`` is its own map):

- :mod:`resnet_theory.engine`: the training engine of the experiments chapter (network, data, training,
  ensembles, ablation runs, devices, throughput benchmark, GPU check).
- :mod:`resnet_theory.claims`: every claim of the book as a library object (declaration, evidence function,
  profile table) by chapter; ``python -m resnet_theory.claims list|verify`` re-checks one claim on its own.
- :mod:`resnet_theory.book`: the book tooling (executor, cache, report, HTML build, status page, browser
  check, PDF, verdict diff); ``python -m resnet_theory.book`` is its command line.
- :mod:`resnet_theory.benchmarks`: benchmarks of the paper modules that print figures.
"""

__version__ = "0.1.0"
