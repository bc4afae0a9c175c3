"""The numbers in a chapter's prose where a reader opens or runs it in JupyterLab (issue 33, item 3).

The chapters quote computed numbers with myst-nb's ``{glue:text}`name:fmt``` role, which the book's HTML build
fills in from the glued outputs; JupyterLab knows no such role and shows it raw. `jupyterlab-myst
<https://github.com/jupyter-book/jupyterlab-myst>`_, the MyST renderer for JupyterLab, renders the MyST inline
expression ``{eval}`expr``` instead: when a markdown cell is run it asks the kernel for ``expr`` (the Jupyter
``user_expressions`` of an execute request) and keeps the result in the cell's ``metadata.user_expressions``, which
it shows from then on, also in a notebook opened without a kernel.

So a *reader's notebook* (:func:`reader_notebook`) is the chapter with

- each ``{glue:text}`name:fmt``` written as ``{eval}`glued("name:fmt")```;
- for an executed chapter, each such markdown cell's ``metadata.user_expressions`` filled from the glued outputs,
  formatted as the book formats them (myst-nb's own ``format_plain_text``): the numbers show as soon as the
  notebook is opened;
- one small cell (tagged ``remove-cell``) after the install cell: ``from resnet_theory.book.jupyter_prose import
  glued``. Importing this module in a kernel records every value the chapter glues (:func:`watch`, a hook on the
  kernel's display publisher: the chapters' ``glue`` calls are unchanged), and :func:`glued` formats one. A reader
  who runs the notebook again (Run All) sees the prose's numbers from that run. A sentence that quotes a number
  computed further down (the Overview quotes the ledger's summary, glued by the last cell) shows an inline error
  saying so on the first pass: run that cell again (Shift+Enter) once the chapter has run.

The HTML build writes its downloadable notebooks (``_build/html/_sources``) this way, Binder's ``postBuild`` its
notebooks, and ``make jupyter`` the executed chapters into ``_build/jupyter``. On the command line:
``python -m resnet_theory.book.jupyter_prose NOTEBOOK_OR_MD... -o FOLDER`` (a MyST ``.md`` is read with jupytext:
the result has no outputs, its numbers appear when it is run).
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

from ..validate import OneLineParser
from .files import write_atomic

#: The glue role the chapters quote numbers with (a role inside backticks, its content ``name`` or ``name:fmt``).
GLUE_TEXT_ROLE = re.compile(r"\{glue:text\}`([^`]+)`")
#: Any other glue role or directive: a reader's notebook cannot show it, so it is refused with its cell.
OTHER_GLUE = re.compile(r"\{glue(?::(?!text\})[a-z]*)?\}")
#: The cell the reader's notebook runs before any glue: it records the glued values and defines ``glued``.
IMPORT_CELL = "from resnet_theory.book.jupyter_prose import glued  # the prose's numbers, for JupyterLab"
IMPORT_TAGS = ["remove-cell", "jupyter-prose"]
#: The prefix myst-nb gives the MIME types of a value glued with ``display=False``.
GLUE_PREFIX = "application/papermill.record/"

_VALUES: dict[str, dict] = {}


class GluedError(ValueError):
    """A chapter a reader's notebook cannot be written for: a glue form it cannot show, or a glued name missing."""


# --- in the kernel: record what the chapter glues, format one value for the prose -----------------------------------
class _Text(str):
    """Text the kernel reports as it is (no quotes around it), as the book prints a glued value."""

    def __repr__(self) -> str:
        return str(self)


def _record(msg: dict) -> dict:
    """The display publisher's hook: keep the data of every glued value (``metadata.scrapbook.name``)."""
    content = msg.get("content") or {}
    scrapbook = (content.get("metadata") or {}).get("scrapbook")
    if msg.get("msg_type") == "display_data" and isinstance(scrapbook, dict) and "name" in scrapbook:
        prefix = scrapbook.get("mime_prefix", "")
        _VALUES[scrapbook["name"]] = {key[len(prefix) :]: v for key, v in (content.get("data") or {}).items()}
    return msg


def watch() -> bool:
    """Record every value glued in this kernel from now on; False where there is no Jupyter kernel to watch."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the book
        return False
    publisher = getattr(get_ipython(), "display_pub", None)
    if publisher is None or not hasattr(publisher, "register_hook"):
        return False
    if _record not in getattr(publisher, "_hooks", []):
        publisher.register_hook(_record)
    return True


def split_spec(spec: str) -> tuple[str, str]:
    """``"name:.3g"`` -> ``("name", ".3g")``, ``"name"`` -> ``("name", "")``, as myst-nb reads the role."""
    if not isinstance(spec, str) or not spec.strip():
        raise GluedError(f"a glue role needs a name, got {spec!r}")
    if "::" in spec:
        raise GluedError(f"{spec!r} glues from another notebook, which a reader's notebook cannot show")
    key, _, fmt = spec.rpartition(":") if ":" in spec else (spec, "", "")
    return key.strip(), fmt


def format_value(data: dict, spec: str) -> str:
    """The text the book prints for ``{glue:text}`spec``` given the glued value's MIME ``data``: myst-nb's format,
    then each Python number form written as the HTML pages write it (``book/pasted_numbers.py``), in plain text:
    ``3.4e-16`` as ``3.4×10⁻¹⁶``, ``inf`` as ``∞`` (:func:`resnet_theory.tables.number_text`)."""
    from myst_nb.core.variables import format_plain_text

    from ..tables import number_text

    key, fmt = split_spec(spec)
    if "text/plain" not in data:
        raise GluedError(f"{key!r} was glued without a text/plain form, which {{glue:text}} needs")
    try:
        return number_text(format_plain_text(data["text/plain"], fmt))
    except (ValueError, TypeError) as exc:
        raise GluedError(f"{key!r} cannot be formatted as {fmt!r}: {exc}") from None


def glued(spec: str) -> _Text:
    """The prose's ``{glue:text}`spec``` in a running kernel: the value the chapter glued last under that name."""
    key, _ = split_spec(spec)
    if key not in _VALUES:
        raise LookupError(f"{key!r} is not computed yet: run the chapter's cells, then this cell again")
    return _Text(format_value(_VALUES[key], spec))


# --- the reader's notebook -------------------------------------------------------------------------------------------
def expression(spec: str) -> str:
    """The inline expression a reader's notebook writes for ``{glue:text}`spec```."""
    split_spec(spec)
    if '"' in spec or "\\" in spec:
        raise GluedError(f"a glue name with a quote or a backslash cannot become an expression: {spec!r}")
    return f'glued("{spec}")'


def glued_values(nb) -> dict[str, dict]:
    """Every value an executed notebook glued: name -> MIME data (myst-nb's prefix removed)."""
    values: dict[str, dict] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            scrapbook = output.get("metadata", {}).get("scrapbook")
            if isinstance(scrapbook, dict) and "name" in scrapbook:
                prefix = scrapbook.get("mime_prefix", "")
                values[scrapbook["name"]] = {k[len(prefix) :]: v for k, v in output.get("data", {}).items()}
    return values


def _user_expression(spec: str, data: dict) -> dict:
    text = format_value(data, spec)
    return {
        "expression": expression(spec),
        "result": {"status": "ok", "data": {"text/plain": text}, "metadata": {}},
    }


def _rewrite_cell(cell, index: int, values: dict[str, dict], executed: bool) -> int:
    """Write one markdown cell's glue roles as inline expressions (with their results where executed)."""
    other = OTHER_GLUE.search(cell.source)
    if other:
        raise GluedError(f"markdown cell {index}: {other.group(0)} cannot be shown in JupyterLab; use {{glue:text}}")
    specs = list(dict.fromkeys(GLUE_TEXT_ROLE.findall(cell.source)))
    if not specs:
        return 0
    if executed:
        missing = [s for s in specs if split_spec(s)[0] not in values]
        if missing:
            raise GluedError(f"markdown cell {index} quotes {', '.join(missing)}, which no cell glued")
        cell.metadata["user_expressions"] = [_user_expression(s, values[split_spec(s)[0]]) for s in specs]
    cell.source = GLUE_TEXT_ROLE.sub(lambda m: "{eval}`" + expression(m.group(1)) + "`", cell.source)
    return len(specs)


def reader_notebook(nb):
    """A copy of the chapter ``nb`` (nbformat v4) that JupyterLab with jupyterlab-myst shows with its numbers; the
    notebook is returned unchanged (a copy) when its prose quotes no glued value."""
    import nbformat

    nb = copy.deepcopy(nb)
    values = glued_values(nb)
    executed = any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
    quoted = sum(_rewrite_cell(c, i, values, executed) for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
    already = any(c.cell_type == "code" and c.source == IMPORT_CELL for c in nb.cells)
    if quoted and not already:
        from .repository import INSTALL_TAG

        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        install = [i for i in code if INSTALL_TAG in nb.cells[i].metadata.get("tags", [])]
        at = install[0] + 1 if install else (code[0] if code else len(nb.cells))
        cell = nbformat.v4.new_code_cell(IMPORT_CELL, metadata={"tags": list(IMPORT_TAGS)})
        if (nb.nbformat, nb.get("nbformat_minor", 0)) < (4, 5):
            cell.pop("id", None)  # cell ids came with nbformat 4.5
        nb.cells.insert(at, cell)
    return nb


def quoted_numbers(nb) -> int:
    """How many inline expressions of a reader's notebook quote a glued number."""
    return sum(c.source.count('{eval}`glued("') for c in nb.cells if c.cell_type == "markdown")


def read_chapter(path: Path):
    """A chapter as an nbformat notebook: an ``.ipynb`` as it is, a MyST ``.md`` through jupytext; a file that is
    neither, or that cannot be read as one (truncated JSON, not a notebook), raises :class:`GluedError`."""
    import nbformat

    path = Path(path)
    if path.suffix not in (".ipynb", ".md"):
        raise GluedError(f"{path}: not a notebook (.ipynb) or a MyST chapter (.md)")
    try:
        if path.suffix == ".ipynb":
            return nbformat.read(path, as_version=4)
        import jupytext

        return jupytext.read(path)
    except Exception as exc:  # NotJSONError, a validation error, bad UTF-8, RecursionError: the file, not this code
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise GluedError(f"{path}: cannot be read as a notebook ({type(exc).__name__}: {first})") from None


#: Where a reader's notebook records the digest of what was written (:func:`written_digest`), so that a later
#: write can tell the notebook it wrote from one a reader has since edited or run.
DIGEST_KEY = "jupyter_prose"


def written_digest(nb_json: dict) -> str:
    """The SHA-256 of a notebook's JSON (as ``nbformat`` writes it) without its :data:`DIGEST_KEY` metadata."""
    import hashlib
    import json

    d = dict(nb_json)
    d["metadata"] = {k: v for k, v in (d.get("metadata") or {}).items() if k != DIGEST_KEY}
    return hashlib.sha256(json.dumps(d, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def write_reader_notebook(source: Path, output: Path, reader=None) -> int:
    """Write the reader's notebook of ``source`` (``reader``, when already made from it) to ``output``, with the
    digest of what was written in its metadata (:data:`DIGEST_KEY`); returns how many glue roles it rewrote."""
    import json

    import nbformat

    if reader is None:
        nb = read_chapter(source)
        reader = reader_notebook(nb)
        changed = reader != nb
    else:
        changed = True
    if changed or Path(output) != Path(source):
        reader.metadata.pop(DIGEST_KEY, None)
        reader.metadata[DIGEST_KEY] = {"written_sha256": written_digest(json.loads(nbformat.writes(reader)))}
        write_atomic(Path(output), nbformat.writes(reader))  # a notebook cut short by a full disk is never left
    return quoted_numbers(reader)


def existing_target(target: Path) -> str:
    """What stands at ``target``: ``"none"``; ``"written"`` (a reader's notebook as this module wrote it, which may
    be written again); ``"edited"`` (a reader's notebook changed since, by hand or by running it: kept, moved
    aside); ``"other"`` (anything else, such as a notebook paired with its chapter by jupytext: never replaced)."""
    import json

    if not target.exists() and not target.is_symlink():
        return "none"
    if not target.is_file() or target.is_symlink():
        return "other"
    try:
        d = json.loads(target.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return "other"
    if not isinstance(d, dict) or not isinstance(d.get("metadata"), dict) or not isinstance(d.get("cells"), list):
        return "other"
    recorded = d["metadata"].get(DIGEST_KEY)
    if isinstance(recorded, dict) and recorded.get("written_sha256") == written_digest(d):
        return "written"
    ours = any(
        isinstance(c, dict) and c.get("cell_type") == "code" and "".join(c.get("source") or "") == IMPORT_CELL
        for c in d["cells"]
    )
    return "edited" if ours else "other"


def _beside_its_chapter(target: Path) -> bool:
    """Whether ``target`` is ``book/NAME.ipynb`` of a book whose ``book/NAME.md`` exists (Binder's notebooks)."""
    from ..outputs import book_roots

    resolved = target.absolute().resolve()  # as written: a ~ the shell left is a folder named ~
    return any(
        resolved.parent == (root / "book").resolve() and (resolved.parent / f"{resolved.stem}.md").is_file()
        for root in book_roots(resolved)
    )


def check_target(source: Path, target: Path) -> str:
    """Why ``target`` may not be written (one line), or ``""`` when it may: never its source, never a file under
    ``lib/`` or ``tests/`` or a build's records (:func:`resnet_theory.outputs.check_command_output`); under
    ``book/`` only a chapter's own ``NAME.ipynb`` beside its ``NAME.md`` (what Binder opens); and a file already
    there only when :func:`existing_target` says this module wrote it or a reader edited it (moved aside)."""
    from ..outputs import OutputRefused, check_command_output

    if target.resolve() == source.resolve():
        return f"{target} would overwrite its source; choose another -o folder"
    try:
        check_command_output(target, "-o", suffix=".ipynb")
    except OutputRefused as exc:
        if not _beside_its_chapter(target):
            return str(exc)
    if existing_target(target) == "other":
        return (
            f"{target} exists and is not a reader's notebook this command wrote (a notebook paired with its "
            f"chapter, another file); it is not replaced: move it or choose another -o folder"
        )
    return ""


def move_aside(target: Path) -> Path:
    """Rename an edited reader's notebook to ``NAME.edited-YYYYmmdd-HHMMSS[-N].ipynb`` beside it; returns where."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(target.stat().st_mtime))
    for n in range(1000):
        aside = target.with_name(f"{target.stem}.edited-{stamp}{f'-{n}' if n else ''}.ipynb")
        if not aside.exists():
            target.rename(aside)
            return aside
    raise GluedError(f"{target}: too many edited copies beside it; move some away")


def rewrite_folder(folder: Path) -> int:
    """Rewrite every ``.ipynb`` under ``folder`` in place as a reader's notebook (the HTML's downloads); returns
    how many notebooks quote glued numbers."""
    return sum(1 for path in sorted(Path(folder).rglob("*.ipynb")) if write_reader_notebook(path, path))


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(
        prog="python -m resnet_theory.book.jupyter_prose",
        description="Write chapters as notebooks whose prose shows its numbers in JupyterLab (with jupyterlab-myst).",
    )
    parser.add_argument("chapters", nargs="+", type=Path, help="executed notebooks (.ipynb) or MyST chapters (.md)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the folder to write NAME.ipynb into")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return int(exc.code or 0)
    blocking = next((p for p in (args.output, *args.output.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        where = "" if blocking == args.output else f" ({blocking} is a file)"
        print(f"error: -o {args.output}: not a folder{where}", file=sys.stderr)
        return 2
    targets: dict[Path, Path] = {}
    for source in args.chapters:  # every source and target checked before anything is written
        if not source.is_file():
            print(f"error: {source}: no such file", file=sys.stderr)
            return 2
        target = args.output / (source.stem + ".ipynb")
        if target.resolve() in {t.resolve() for t in targets.values()}:
            print(f"error: {source} and another chapter would both be written to {target}", file=sys.stderr)
            return 2
        problem = check_target(source, target)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        targets[source] = target
    for source, target in targets.items():
        try:
            reader = reader_notebook(read_chapter(source))  # refused (a glue it cannot show) before anything moves
            aside = move_aside(target) if existing_target(target) == "edited" else None
            count = write_reader_notebook(source, target, reader)
        except GluedError as exc:
            message = str(exc)
            print(f"error: {message if message.startswith(str(source)) else f'{source}: {message}'}", file=sys.stderr)
            return 1
        except OSError as exc:  # a full disk, no permission: the notebook there (if any) is kept whole
            print(f"error: {target}: cannot be written ({exc.strerror or exc})", file=sys.stderr)
            return 1
        kept = f" (your edited copy kept as {aside.name})" if aside else ""
        print(f"{target}: {count} numbers in the prose{kept}")
    return 0


# Imported in a kernel (the reader's notebook's import cell), start recording what the chapter glues; elsewhere (the
# HTML build, the tests) there is no kernel and this does nothing.
watch()


if __name__ == "__main__":
    sys.exit(main())
