"""A chapter's parameters: its ``parameters`` cell, and the values ``-p NAME VALUE`` gives it.

Conventions for chapters: exactly one code cell tagged ``parameters`` that defines at least
``profile = "quick"`` and ``seed = 0``. The quick profile runs on a 2-core CPU in about two minutes; the
full profile is sized for a GPU.

A parameter given as ``-p NAME VALUE`` goes to every chapter whose parameters cell defines ``NAME`` (it is an
error if none does); ``-p CHAPTER:NAME VALUE`` goes to one chapter (an error if that chapter does not define
it), and wins there over ``-p NAME``, whichever comes first. Values are JSON-like: numbers, strings,
``True``/``False`` (or ``true``/``false``), ``None`` (or ``null``), lists and dicts of those, written as Python
or JSON literals (``-p depth 100``, ``-p data_dir "'/data/cifar'"``); a word that is no literal is taken as a
string (``-p data_dir /data/cifar``). Anything else (bytes, complex numbers, sets, tuples, NaN) is refused, and
so is a value whose type differs from the chapter's default (``-p seed 1.5`` where ``seed = 0``; a default of
``None`` takes any value). Every such error is raised before anything runs (by
:func:`resnet_theory.book.plan.plan_chapters`). A folder (``-p data_dir DATA``, ``-p runs_dir runs``:
:data:`resnet_theory.book.plan.FOLDER_PARAMETERS`) is relative to where the command runs, not to the chapter's
folder its kernel runs in; one the chapter writes into is refused inside the sources.
"""

from __future__ import annotations

import ast
import json
from typing import Any

from .toc import BookError

REQUIRED_PARAMETERS = ("profile", "seed")

_JSON_WORDS = {"true": True, "false": False, "null": None}


def _json_like_problem(value: Any) -> str | None:
    """Why ``value`` is not JSON-like (numbers, strings, booleans, None, lists, dicts with string keys), or None."""
    if value is None or isinstance(value, (bool, int, str)):
        return None
    if isinstance(value, float):
        return None if value == value and abs(value) != float("inf") else f"{value!r} is not a finite number"
    if isinstance(value, list):
        return next((p for p in map(_json_like_problem, value) if p), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "a dict's keys must be strings"
        return next((p for p in map(_json_like_problem, value.values()) if p), None)
    kind = {
        bytes: "bytes",
        complex: "a complex number",
        set: "a set",
        frozenset: "a set",
        tuple: "a tuple (write a list)",
    }.get(type(value), type(value).__name__)
    return f"{kind} is not a parameter value"


def parse_value(text: str) -> Any:
    """The JSON-like value ``text`` stands for: a Python or JSON literal (number, string, boolean, None/null,
    list, dict) or, when ``text`` is no literal at all, the string itself. A literal of any other kind
    (``b'...'``, ``1j``, ``{1, 2}``, a tuple, NaN) raises :class:`BookError`: papermill writes values into the
    parameters cell, and only JSON-like ones are written there as data."""
    if not isinstance(text, str):
        raise BookError(f"a parameter value must be given as text, got {type(text).__name__}")
    stripped = text.strip()
    if stripped in _JSON_WORDS:
        return _JSON_WORDS[stripped]
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        try:
            value = json.loads(stripped)
        except (ValueError, RecursionError):
            return text
    problem = _json_like_problem(value)
    if problem:
        raise BookError(f"{text!r}: {problem}; give a number, a string, True/False, None, a list or a dict")
    return value


def _type_name(value: Any) -> str:
    return {
        bool: "True or False",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        tuple: "a list",
        dict: "a dict",
    }.get(type(value), type(value).__name__)


#: The types a parameters cell may annotate (``max_depth: int = None``), as papermill shows them.
_ANNOTATION_TYPES = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "None": (type(None),),
    "list": (list,),
    "dict": (dict,),
}


def annotation_types(annotation: str) -> tuple[type, ...] | None:
    """The Python types an annotation such as ``int | None`` or ``list[int]`` admits (the outer types only), or
    None for an annotation this reader does not know (then only the default's type is checked)."""
    types: list[type] = []
    for part in annotation.split("|"):
        name = part.strip().split("[", 1)[0].strip()
        if name not in _ANNOTATION_TYPES:
            return None
        types.extend(_ANNOTATION_TYPES[name])
    return tuple(types)


def check_parameter_type(name: str, value: Any, default: Any, annotation: str | None = None) -> None:
    """Refuse a value whose type differs from the chapter's annotation of the parameter (``int``; ``None`` too
    when the default is ``None``) or,
    without one, from its default (``None``, or a default that is no literal, then takes any JSON-like value;
    an integer is accepted where a float is expected, a boolean never where a number is)."""
    allowed = annotation_types(annotation) if annotation else None
    if allowed is not None:
        if default is None:  # ``n: int = None`` (papermill's grammar has no "|"): None stays allowed
            allowed = allowed + (type(None),)
        ok = isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
        if not ok:
            raise BookError(f"-p {name} {value!r}: the chapter declares {name}: {annotation}, got {_type_name(value)}")
        return
    if default is None or value is None and not isinstance(default, (bool, int, float, str)):
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, list)
    elif isinstance(default, (str, dict)):
        ok = isinstance(value, type(default))
    else:
        return
    if not ok:
        raise BookError(
            f"-p {name} {value!r}: must be {_type_name(default)} like its default {default!r}, got {_type_name(value)}"
        )


def parameters_cell(notebook) -> Any | None:
    cells = [c for c in notebook.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", [])]
    if len(cells) > 1:
        raise BookError("more than one cell is tagged 'parameters'")
    return cells[0] if cells else None


def defined_parameters(notebook) -> dict[str, Any]:
    """Names assigned in the ``parameters`` cell, with their literal default values where they have one."""
    cell = parameters_cell(notebook)
    if cell is None:
        return {}
    names: dict[str, Any] = {}
    for node in ast.parse(cell.source).body:
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
            value = node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
            value = node.value
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    names[target.id] = ast.literal_eval(value)
                except ValueError:
                    names[target.id] = None
    return names


def parameter_annotations(notebook) -> dict[str, str]:
    """The annotations of the ``parameters`` cell's annotated assignments (``seed: int = 0`` -> ``{"seed": "int"}``)."""
    cell = parameters_cell(notebook)
    if cell is None:
        return {}
    return {
        node.target.id: ast.unparse(node.annotation)
        for node in ast.parse(cell.source).body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
