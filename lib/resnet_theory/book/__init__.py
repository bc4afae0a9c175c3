"""The book tooling: executes the chapters, caches their outputs, reports on the run, builds and checks the book.

``python -m resnet_theory.book execute`` reads ``_toc.yml``, brings every chapter's executed notebook in
``_build/executed/`` up to date (papermill over the jupytext chapters, or the outputs of an earlier execution
when nothing they depend on changed), writes ``_build/executed/report.json``, and builds HTML from the executed
notebooks with Jupyter Book (``execute_notebooks: off``, ``-W -n --keep-going``); ``python -m
resnet_theory.book run book/CHAPTER.md`` executes one chapter. The chapters do not import this package: they
import the chapter API at the top of :mod:`resnet_theory` (ledger, checks, profiles, plotting, tables).

One concept per module, in the order a run uses them:

- :mod:`~resnet_theory.book.toc`: the book's root, the pages ``_toc.yml`` lists, :class:`BookError`.
- :mod:`~resnet_theory.book.parameters`: a chapter's parameters cell and the values ``-p`` gives it.
- :mod:`~resnet_theory.book.plan`: which pages a run executes, how, with which parameters.
- :mod:`~resnet_theory.book.environment`: the device and package versions of the run.
- :mod:`~resnet_theory.book.files`: checksums, atomic writes, JSON objects read defensively.
- :mod:`~resnet_theory.book.safety`: where commands may write (never over sources), one run per build folder.
- :mod:`~resnet_theory.book.machine_paths`: executed notebooks name no path of the build machine (warnings, tracebacks).
- :mod:`~resnet_theory.book.imports`: the library modules a chapter imports, followed transitively.
- :mod:`~resnet_theory.book.cache`: a chapter's cache key and execution record; reuse of cached outputs.
- :mod:`~resnet_theory.book.execute`: one chapter executed with a kernel, outputs moved into place atomically.
- :mod:`~resnet_theory.book.side_by_side`: chapters executed several at a time (``--jobs``), longest expected first.
- :mod:`~resnet_theory.book.worker`: one chapter executed in a worker process of its own.
- :mod:`~resnet_theory.book.cpu`: CPU seconds of a chapter's kernel and the processes under it.
- :mod:`~resnet_theory.book.inprocess`: pages that gather results, executed without a kernel.
- :mod:`~resnet_theory.book.report`: one result record per page, ``report.json``, the printed summary.
- :mod:`~resnet_theory.book.build`: the ``execute`` command.
- :mod:`~resnet_theory.book.run_command`: the ``run`` command (one chapter; prints the verdicts it recorded).
- :mod:`~resnet_theory.book.html_build`: the Jupyter Book build of the executed notebooks.
- :mod:`~resnet_theory.book.jupyter_prose`: the prose's glued numbers in JupyterLab (jupyterlab-myst expressions).
- :mod:`~resnet_theory.book.partial_build`: links to the pages a partial build leaves out, as plain text.
- :mod:`~resnet_theory.book.repository`: the repository's address (buttons, launch, the install cell).
- :mod:`~resnet_theory.book.page_meta`: the Sphinx extension that writes each page's description and og: tags.
- :mod:`~resnet_theory.book.offline_mathjax`: the Sphinx extension that serves MathJax from the book itself, safely.
- :mod:`~resnet_theory.book.citations`: the Sphinx extension that cites two papers of one author-year as 2016a, 2016b.
- :mod:`~resnet_theory.book.math_punctuation`: the Sphinx extension keeping punctuation on inline math's line.
- :mod:`~resnet_theory.book.pasted_numbers`: the Sphinx extension writing glued numbers as the tables do (no ``1e-06``).
- :mod:`~resnet_theory.book.claims_files`: a build's claims files, read strictly, bound to their executed pages.
- :mod:`~resnet_theory.book.ledger_page`: the ledger page (claims with source links, re-check commands, seeds).
- :mod:`~resnet_theory.book.status`: the status page, rendered from the report.
- :mod:`~resnet_theory.book.browser`: the built book checked in headless Chromium, and its screenshots.
- :mod:`~resnet_theory.book.devtools`: headless Chromium driven over the DevTools protocol (any width).
- :mod:`~resnet_theory.book.pdf`: the book as one PDF.
- :mod:`~resnet_theory.book.verdict_diff`: the claims ledgers of several builds compared.
- :mod:`~resnet_theory.book.cli`: the command line (``__main__`` runs it).
"""
