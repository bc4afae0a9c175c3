"""Keep the build machine's paths out of the executed notebooks a reader sees and downloads.

A warning or traceback printed by a cell names the file it came from: the book's ``lib/`` on the builder's disk
(``/home/me/book/lib/resnet_theory/verdicts.py:208: RuntimeWarning: ...``), the environment's
``site-packages``, or the kernel's temporary file for the cell (``/tmp/ipykernel_1407/460918333.py:2``).
:func:`scrub_notebook` rewrites them in every text output (streams, tracebacks, plain, HTML and Markdown
results) as paths relative to the book (``lib/resnet_theory/verdicts.py``), ``site-packages/...``, ``<cell>``
and ``~``; the message itself is kept.
"""

from __future__ import annotations

import os
import re
import site
import sys
import sysconfig
import tempfile
from pathlib import Path

#: The kernel's file for a cell's code (ipykernel writes each cell to ``<tmp>/ipykernel_<pid>/<hash>.py``).
_CELL_FILE = re.compile(r"(?:/[^\s\"'<>:]*)?/ipykernel_\d+/\d+\.py")

#: The output fields that hold text a page shows.
_TEXT_MIMES = ("text/plain", "text/html", "text/markdown", "text/latex")


def machine_prefixes(root: Path) -> list[tuple[str, str]]:
    """(machine path, what a reader sees instead) pairs, longest path first so that the environment inside the
    book's folder is named as ``site-packages/`` and not as a path under the book."""
    pairs: dict[str, str] = {}
    for folder in {sysconfig.get_paths().get("purelib"), sysconfig.get_paths().get("platlib"), *site.getsitepackages()}:
        if folder:
            pairs[str(Path(folder).resolve())] = "site-packages"
            pairs[str(folder)] = "site-packages"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        pairs.setdefault(str(prefix), "<python>")
    import resnet_theory

    library = Path(resnet_theory.__file__).resolve().parent.parent  # the book's lib/ in an editable install
    pairs.setdefault(str(library), library.name)
    root = Path(root)
    pairs[str(root.resolve())] = "."
    pairs[str(root)] = "."
    home = os.path.expanduser("~")
    if home not in ("/", "~"):
        pairs.setdefault(home, "~")
    pairs.setdefault(tempfile.gettempdir(), "<tmp>")
    return sorted(((k, v) for k, v in pairs.items() if len(k) > 1), key=lambda kv: -len(kv[0]))


def scrub_text(text: str, prefixes: list[tuple[str, str]]) -> str:
    """``text`` with the kernel's cell files named ``<cell>`` and every machine prefix replaced."""
    text = _CELL_FILE.sub("<cell>", text)
    for path, shown in prefixes:
        text = text.replace(path + "/", "" if shown == "." else shown + "/").replace(path, shown)
    return text


def _scrub(value, prefixes):
    if isinstance(value, str):
        return scrub_text(value, prefixes)
    if isinstance(value, list):
        return [_scrub(v, prefixes) for v in value]
    return value


def scrub_notebook(nb, root: Path) -> int:
    """Rewrite machine paths in every text output of ``nb`` (an nbformat notebook) in place; returns how many
    output fields changed."""
    prefixes = machine_prefixes(root)
    changed = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            fields = [(output, k) for k in ("text", "traceback", "evalue") if k in output]
            data = output.get("data") or {}
            fields += [(data, mime) for mime in _TEXT_MIMES if mime in data]
            for holder, key in fields:
                new = _scrub(holder[key], prefixes)
                if new != holder[key]:
                    holder[key] = new
                    changed += 1
    return changed
