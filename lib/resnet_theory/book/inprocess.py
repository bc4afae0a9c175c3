"""Pages that only gather the other pages' results, executed in the executor's own process, without a kernel.

The ledger and status pages say ``resnet_theory: {execution: in-process}`` in their front matter: they are
executed on every run, here (:func:`run_in_process`), which takes milliseconds where starting a kernel takes
seconds.
"""

from __future__ import annotations

import ast
import os
import platform
from pathlib import Path
from typing import Any

from .files import write_atomic


class CellError(Exception):
    """A code cell of a page executed in-process raised (the counterpart of papermill's execution error)."""

    def __init__(self, exec_count: int, source: str, ename: str, evalue: str):
        super().__init__(f"{ename}: {evalue}")
        self.exec_count, self.source, self.ename, self.evalue = exec_count, source, ename, evalue


def _run_cell(source: str, namespace: dict, filename: str):
    """Execute one cell's source in ``namespace``; return the value of a final expression (None if there is
    none, or if the line ends with ``;``, as in IPython)."""
    tree = ast.parse(source, filename)
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body = tree.body[:-1] if last is not None else tree.body
    exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), namespace)
    if last is None:
        return None
    value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    return None if source.rstrip().endswith(";") else value


def run_in_process(nb, path: Path, parameters: dict, cwd: Path) -> None:
    """Execute a page's code cells in this process, without a kernel, and write it with outputs to ``path``.

    For pages that only read results the executor has already written (the ledger and status pages):
    starting a kernel for them costs seconds on every build. As papermill does, the parameters are injected
    in a cell tagged ``injected-parameters`` after the ``parameters`` cell; each cell's printed text becomes a
    stream output and the value of its last expression an ``execute_result`` with IPython's rich display
    (``_repr_html_`` and the like). The cells share one namespace and run with ``cwd`` as the working folder.
    A cell that raises stops the page: the notebook is written with the error output, and :class:`CellError`
    is raised. Not supported here: IPython magics, ``display()``, ``glue()`` (use a kernel for such pages).
    """
    import contextlib
    import io
    import traceback

    import nbformat
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    cells = []
    for cell in nb.cells:
        cells.append(cell)
        if parameters and cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            lines = "".join(f"{name} = {value!r}\n" for name, value in parameters.items())
            cells.append(
                nbformat.v4.new_code_cell("# Parameters\n" + lines, metadata={"tags": ["injected-parameters"]})
            )
    nb.cells = cells
    nb.metadata["language_info"] = {
        "name": "python",
        "version": platform.python_version(),
        "pygments_lexer": "ipython3",
        "file_extension": ".py",
        "mimetype": "text/x-python",
    }
    namespace: dict[str, Any] = {"__name__": "__main__"}
    error = None
    count = 0
    previous_cwd = os.getcwd()
    os.chdir(cwd)
    try:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            count += 1
            cell.execution_count, cell.outputs = count, []
            out, err = io.StringIO(), io.StringIO()
            value = None
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    value = _run_cell(cell.source, namespace, f"<cell {count}>")
            except (Exception, SystemExit) as exc:
                error = CellError(count, cell.source, type(exc).__name__, str(exc))
                tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
                value = None
            for name, stream in (("stdout", out), ("stderr", err)):
                if stream.getvalue():
                    cell.outputs.append(nbformat.v4.new_output("stream", name=name, text=stream.getvalue()))
            if value is not None:
                data, metadata = formatter.format(value)
                cell.outputs.append(
                    nbformat.v4.new_output("execute_result", data=data, metadata=metadata, execution_count=count)
                )
            if error is not None:
                cell.outputs.append(
                    nbformat.v4.new_output(
                        "error", ename=error.ename, evalue=error.evalue, traceback=[line.rstrip("\n") for line in tb]
                    )
                )
                break
    finally:
        os.chdir(previous_cwd)
    write_atomic(path, nbformat.writes(nb))
    if error is not None:
        raise error
