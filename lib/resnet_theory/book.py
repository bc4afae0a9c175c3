"""The book executor: papermill over the jupytext chapters, then a Jupyter Book build of the results.

Usage (from the repository root, inside the project's environment)::

    python -m resnet_theory.book execute [--profile quick|full] [--force] [-p NAME VALUE]... [-p CHAPTER:NAME VALUE]...
    python -m resnet_theory.book run book/CHAPTER.md [--profile quick|full] [-p NAME VALUE]... [-o out.ipynb]

``execute`` reads ``_toc.yml``, brings every chapter's executed notebook in ``_build/executed/`` up to date,
writes ``_build/executed/report.json``, and builds HTML from the executed notebooks with
``execute_notebooks: off`` and ``-W -n --keep-going``. Pages without code cells are converted, not executed.
``book/ledger.md`` and ``book/status.md`` come last in the TOC, so they see every chapter's claims and times.

**Execution cache.** A chapter is executed only when something its outputs depend on has changed since its
outputs were computed: its code cells (source, and the tags that change execution), its parameters and
profile, the source of every module of ``resnet_theory`` (or of any package inside the book's root) that
its code cells import, found statically with ``ast`` and followed transitively through the modules, and the
pinned environment (``requirements.lock``, ``pyproject.toml``, the Python version, the device). The key is
recorded in ``_build/cache/<entry>.json`` with checksums of the notebook and claims files it describes.
When the key matches, the chapter is *reused*: if its prose changed, the new markdown cells are merged with
the cached code cells' outputs (the code cells are the same by construction) and the claims JSON is kept.
Pages whose front matter says ``resnet_theory: {execution: always}`` execute on every run. Pages that only
gather the other chapters' results (the ledger and status pages) say ``resnet_theory: {execution:
in-process}``: they are executed on every run too, but in the executor's own Python process, without a
kernel (see :func:`run_in_process`), which takes milliseconds where starting a kernel takes seconds.
``--force`` executes everything. ``run`` always
executes its chapter (and, writing into the build folder, records its key for later ``execute`` runs).

**Atomic outputs.** A chapter's notebook and claims are written to hidden temporary files beside their
final place and moved into place only when the chapter finishes without error. A failed chapter or an
interrupted run (Ctrl-C, SIGTERM) leaves the previous good outputs; the report then says what happened
(``state``: ``failed`` or ``interrupted``, with the signal, the chapter and the parameters of the attempt),
and an interrupted run exits 130 (SIGINT) or 143 (SIGTERM) without building HTML. Temporaries of runs that
were killed outright are removed by the next run.

**The run's own outcome on the status page.** While the run goes on, the report's ``state`` is ``running``
and its ``attempt`` lists the pages ``finished`` so far, so a page rendered mid-run (the status page) can
say which pages had failed by then and which had not yet been executed. The in-process pages are rendered
again at the end of the run, after the report has its final state, when that matters: when a page failed
(the status page then says the run failed, and which pages) or when pages that are not in-process came
after them in the run, executed, reused or converted (they then gather those pages' results too, and the
status page no longer names them as not yet executed).

Conventions for chapters: exactly one code cell tagged ``parameters`` that defines at least
``profile = "quick"`` and ``seed = 0``. The quick profile runs on a 2-core CPU in about two minutes; the
full profile is sized for a GPU.

A parameter given as ``-p NAME VALUE`` goes to every chapter whose parameters cell defines ``NAME`` (it is
an error if none does); ``-p CHAPTER:NAME VALUE`` goes to one chapter (an error if that chapter does not
define it). Values are JSON-like: numbers, strings, ``True``/``False`` (or ``true``/``false``), ``None`` (or
``null``), lists and dicts of those, written as Python or JSON literals (``-p depth 100``,
``-p data_dir "'/data/cifar'"``); a word that is no literal is taken as a string (``-p data_dir /data/cifar``).
Anything else (bytes, complex numbers, sets, tuples, NaN) is refused, and so is a value whose type differs
from the chapter's default (``-p seed 1.5`` where ``seed = 0``; a default of ``None`` takes any value). Every
such error is raised before anything runs.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .ledger import BUILD_DIR_ENV, CLAIMS_FILE_ENV, ROOT_ENV
from . import repository

PROFILES = ("quick", "full")
REQUIRED_PARAMETERS = ("profile", "seed")
#: Packages whose versions the status page reports.
REPORTED_PACKAGES = ("torch", "numpy", "scipy", "sympy", "matplotlib", "jupyter-book", "sphinx", "myst-nb",
                     "papermill", "jupytext", "scikit-learn", "hypothesis")


class BookError(Exception):
    """A problem with the book or the request, found before anything runs."""


# --- the table of contents ------------------------------------------------------------------------
def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``_toc.yml``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "_config.yml").is_file():
            return folder
    raise BookError(f"no _toc.yml and _config.yml found at or above {here}; run from the book's root or pass --root")


def toc_files(root: Path) -> list[str]:
    """Every file named in ``_toc.yml`` (root first), as paths relative to ``root`` without suffix."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    files.append(str(node[key]))
            for key in ("parts", "chapters", "sections"):
                for child in node.get(key, []) or []:
                    walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(toc)
    return [f[:-3] if f.endswith(".md") else f for f in files]


def chapter_source(root: Path, entry: str) -> Path:
    path = root / f"{entry}.md"
    if not path.is_file():
        raise BookError(f"{entry} is in _toc.yml but {path} does not exist")
    return path


# --- parameters -----------------------------------------------------------------------------------
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
    kind = {bytes: "bytes", complex: "a complex number", set: "a set", frozenset: "a set",
            tuple: "a tuple (write a list)"}.get(type(value), type(value).__name__)
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
    return {bool: "True or False", int: "an integer", float: "a number", str: "a string", list: "a list",
            tuple: "a list", dict: "a dict"}.get(type(value), type(value).__name__)


#: The types a parameters cell may annotate (``max_depth: int = None``), as papermill shows them.
_ANNOTATION_TYPES = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,), "None": (type(None),),
                     "list": (list,), "dict": (dict,)}


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
        if default is None:   # ``n: int = None`` (papermill's grammar has no "|"): None stays allowed
            allowed = allowed + (type(None),)
        ok = isinstance(value, allowed) and not (isinstance(value, bool) and bool not in allowed)
        if not ok:
            raise BookError(f"-p {name} {value!r}: the chapter declares {name}: {annotation}, "
                            f"got {_type_name(value)}")
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
        raise BookError(f"-p {name} {value!r}: must be {_type_name(default)} like its default {default!r}, "
                        f"got {_type_name(value)}")


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
    return {node.target.id: ast.unparse(node.annotation) for node in ast.parse(cell.source).body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}


def kernel_manager_class():
    """The kernel manager papermill starts chapters with: on POSIX systems the kernel talks to the executor over
    Unix sockets in the Jupyter runtime folder (private to this user), not over TCP ports on localhost, which any
    local user could connect to (ipykernel warns about it on every start); elsewhere the default TCP manager."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum

    if os.name != "posix":
        return AsyncKernelManager

    class UnixSocketKernelManager(AsyncKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

    return UnixSocketKernelManager


def has_code(notebook) -> bool:
    return any(c.cell_type == "code" and c.source.strip() for c in notebook.cells)


@dataclass
class ChapterPlan:
    entry: str
    source: Path
    executes: bool
    parameters: dict[str, Any] = field(default_factory=dict)
    #: The chapter as read by jupytext (for the cache key), and how it executes (see :func:`execution_mode`).
    notebook: Any = None
    mode: str = "cached"

    @property
    def always(self) -> bool:
        """Executed on every run with a kernel."""
        return self.mode == "always"

    @property
    def in_process(self) -> bool:
        """Executed on every run in the executor's process, without a kernel."""
        return self.mode == "in-process"


def plan_chapters(root: Path, entries: list[str], profile: str, overrides: list[tuple[str, str]]) -> list[ChapterPlan]:
    """Check everything that can be checked before running; return what will run with which parameters."""
    import jupytext

    if profile not in PROFILES:
        raise BookError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    plans = []
    defined: dict[str, dict[str, Any]] = {}
    annotated: dict[str, dict[str, str]] = {}
    for entry in entries:
        source = chapter_source(root, entry)
        nb = jupytext.read(source, fmt="md:myst")
        executes = has_code(nb)
        if executes:
            names = defined_parameters(nb)
            missing = [n for n in REQUIRED_PARAMETERS if n not in names]
            if missing:
                raise BookError(f"{source.relative_to(root)}: its 'parameters' cell must define "
                                f"{', '.join(REQUIRED_PARAMETERS)}; missing {', '.join(missing)}")
            defined[entry] = names
            annotated[entry] = parameter_annotations(nb)
        plans.append(ChapterPlan(entry, source, executes, {"profile": profile} if executes else {}, nb,
                                 execution_mode(nb)))
    by_stem = {Path(p.entry).stem: p for p in plans}
    for name, raw in overrides:
        try:
            value = parse_value(raw)
        except BookError as exc:
            raise BookError(f"-p {name} {exc}") from None
        if ":" in name:
            stem, pname = name.split(":", 1)
            plan = by_stem.get(stem)
            if plan is None:
                raise BookError(f"-p {name}: no chapter {stem!r} in this run (chapters: {', '.join(by_stem)})")
            if pname not in defined.get(plan.entry, {}):
                raise BookError(f"-p {name}: {plan.source.relative_to(root)} does not define {pname!r} in its "
                                f"parameters cell (it defines: {', '.join(defined.get(plan.entry, {})) or 'nothing'})")
            check_parameter_type(name, value, defined[plan.entry][pname], annotated[plan.entry].get(pname))
            plan.parameters[pname] = value
        else:
            if name == "profile":
                raise BookError("give the profile with --profile, not -p profile")
            targets = [p for p in plans if name in defined.get(p.entry, {})]
            if not targets and len(plans) == 1:
                only = plans[0]
                raise BookError(f"-p {name}: {only.source.relative_to(root)} does not define {name!r} in its "
                                f"parameters cell (it defines: {', '.join(defined.get(only.entry, {})) or 'nothing'})")
            if not targets:
                raise BookError(f"-p {name}: no chapter in this run defines {name!r} in its parameters cell")
            for plan in targets:
                check_parameter_type(name, value, defined[plan.entry][name], annotated[plan.entry].get(name))
                plan.parameters[name] = value
    return plans


# --- environment ----------------------------------------------------------------------------------
def _no_gpu_driver() -> bool:
    """True where no GPU can be visible to torch, known without importing it: Linux with none of the NVIDIA
    driver (``/proc/driver/nvidia``, ``/dev/nvidia*``), ROCm's ``/dev/kfd`` and WSL's ``/dev/dxg``.
    Importing torch only to learn that takes seconds on every run of the executor, cached or not."""
    if not sys.platform.startswith("linux"):
        return False
    if any(Path(p).exists() for p in ("/proc/driver/nvidia", "/dev/kfd", "/dev/dxg")):
        return False
    return not any(Path("/dev").glob("nvidia*"))


def device_name() -> str:
    """The device chapters compute on (part of every chapter's cache key): the GPU torch sees, else the CPU."""
    if not _no_gpu_driver():
        try:
            import torch

            if torch.cuda.is_available():
                return f"GPU: {torch.cuda.get_device_name(0)} (x{torch.cuda.device_count()})"
        except Exception:  # pragma: no cover - torch missing or broken CUDA
            pass
    return f"CPU: {platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def environment() -> dict[str, Any]:
    from importlib import metadata

    versions = {}
    for name in REPORTED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(), "device": device_name(),
            "packages": versions}


# --- the execution cache --------------------------------------------------------------------------
#: Bump when the cache record or the key's recipe changes: every chapter is then executed once again.
CACHE_VERSION = 1
#: Packages whose modules a chapter's key covers even when they are installed outside the book's root.
TRACKED_PACKAGES = ("resnet_theory",)
#: Files of the pinned environment that every chapter's key covers (when they exist at the root).
ENVIRONMENT_FILES = ("requirements.lock", "pyproject.toml")
#: Cell tags that change what papermill executes (display tags such as hide-input do not).
EXECUTION_TAGS = ("parameters", "raises-exception", "skip-execution")


def _sha256(data: bytes | str) -> str:
    import hashlib

    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def _file_sha(path: Path) -> str | None:
    return _sha256(path.read_bytes()) if path.is_file() else None


EXECUTION_MODES = ("cached", "always", "in-process")


def execution_mode(notebook) -> str:
    """How a page executes, from its front matter ``resnet_theory: {execution: MODE}``.

    ``cached`` (the default): with a kernel, only when its cache key changed; ``always``: with a kernel,
    on every run; ``in-process``: on every run, in the executor's process without a kernel (pages that
    only read the other pages' results, such as the ledger and status pages).
    """
    meta = notebook.metadata.get("resnet_theory") or {}
    mode = meta.get("execution", "cached") if isinstance(meta, dict) else "cached"
    if mode not in EXECUTION_MODES:
        raise BookError(f"unknown execution mode {mode!r} in the front matter (resnet_theory: execution); "
                        f"choose one of {', '.join(EXECUTION_MODES)}")
    return mode


def imported_names(source: str, package: str | None = None) -> set[str] | None:
    """Every dotted module name that ``source`` may import, found statically (``ast``), or None if unparsable.

    ``import a.b`` gives ``a.b``; ``from a import b, c`` gives ``a``, ``a.b`` and ``a.c`` (the latter two
    count only if they turn out to be modules); relative imports are resolved against ``package``. Imports
    inside functions count too (a conservative superset), as do ``importlib.import_module("a.b")`` and
    ``__import__("a")`` with a literal name. IPython magics and shell lines are ignored.
    """
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue
                parts = package.split(".")
                if node.level > 1:
                    parts = parts[: -(node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                names.add(base)
            names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if fname in ("import_module", "__import__"):
                names.add(node.args[0].value)
    return names


class ModuleIndex:
    """Finds the source files of the modules a chapter imports, within the tracked packages only."""

    def __init__(self, root: Path, tracked: tuple[str, ...] = TRACKED_PACKAGES):
        self.root = root.resolve()
        self.tracked = tracked
        self._tops: dict[str, tuple[Path, bool] | None] = {}
        self._deps: dict[str, list[tuple[str, Path]]] = {}
        self._shas: dict[Path, str | None] = {}

    def _top(self, name: str) -> tuple[Path, bool] | None:
        """(location, is_package) of a tracked top-level module, None for anything else (numpy, torch...)."""
        if name not in self._tops:
            import importlib.util

            found = None
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            if spec is not None:
                if spec.submodule_search_locations:
                    location, is_package = Path(list(spec.submodule_search_locations)[0]), True
                elif spec.origin and spec.origin.endswith(".py"):
                    location, is_package = Path(spec.origin), False
                else:
                    location = None
                if location is not None:
                    location = location.resolve()
                    inside = (location == self.root or self.root in location.parents) and not (
                        {"site-packages", "dist-packages"} & set(location.parts))
                    if name in self.tracked or inside:
                        found = (location, is_package)
            self._tops[name] = found
        return self._tops[name]

    def files(self, dotted: str) -> list[tuple[str, Path]]:
        """(module name, file) for ``dotted`` and every package ``__init__`` that importing it runs."""
        parts = dotted.split(".")
        top = self._top(parts[0])
        if top is None:
            return []
        location, is_package = top
        if not is_package:
            return [(parts[0], location)] if len(parts) == 1 else []
        out = [(parts[0], location / "__init__.py")] if (location / "__init__.py").is_file() else []
        folder = location
        for i, part in enumerate(parts[1:], start=1):
            name = ".".join(parts[: i + 1])
            if (folder / part / "__init__.py").is_file():
                folder = folder / part
                out.append((name, folder / "__init__.py"))
            elif (folder / f"{part}.py").is_file():
                out.append((name, folder / f"{part}.py"))
                break
            else:
                break  # an attribute, not a module
        return out

    def all_files(self) -> list[tuple[str, Path]]:
        """Every module of every tracked package (the fallback when a cell cannot be parsed)."""
        out = []
        for name in self.tracked:
            top = self._top(name)
            if top is None:
                continue
            location, is_package = top
            if not is_package:
                out.append((name, location))
                continue
            for path in sorted(location.rglob("*.py")):
                rel = path.relative_to(location).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                out.append((".".join([name, *parts]), path))
        return out

    def _imports(self, source: str, package: str | None) -> list[tuple[str, Path]]:
        names = imported_names(source, package)
        return self.all_files() if names is None else [p for n in sorted(names) for p in self.files(n)]

    def _module_imports(self, module: str, path: Path) -> list[tuple[str, Path]]:
        """The tracked modules one module imports directly (each module parsed once per index)."""
        if module not in self._deps:
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            self._deps[module] = self._imports(path.read_text(encoding="utf-8"), package)
        return self._deps[module]

    def closure(self, sources: list[str]) -> dict[str, Path]:
        """Module name -> file for every tracked module the sources import, transitively."""
        found: dict[str, Path] = {}
        pending = [pair for source in sources for pair in self._imports(source, None)]
        while pending:
            module, path = pending.pop()
            if module in found:
                continue
            found[module] = path
            pending.extend(self._module_imports(module, path))
        return found

    def sha(self, path: Path) -> str | None:
        """The checksum of a module's file (computed once per index: one run of the executor)."""
        if path not in self._shas:
            self._shas[path] = _file_sha(path)
        return self._shas[path]


def cache_components(root: Path, notebook, parameters: dict, device: str,
                     modules: ModuleIndex | None = None) -> dict[str, Any]:
    """Everything a chapter's outputs depend on, in a form that is hashed into its cache key.

    Its code cells (source and the tags that change execution, not the prose or display tags), the
    parameters and profile it runs with, the source of every tracked module it imports (transitively),
    and the pinned environment: the lock file, ``pyproject.toml``, the Python version and the device.
    """
    modules = modules or ModuleIndex(root)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    cells = [{"source": c.source,
              "tags": sorted(t for t in c.metadata.get("tags", []) if t in EXECUTION_TAGS)} for c in code]
    closure = modules.closure([c.source for c in code])
    return {
        "version": CACHE_VERSION,
        "code": _sha256(json.dumps(cells, sort_keys=True)),
        "parameters": json.loads(json.dumps(parameters, sort_keys=True, default=repr)),
        "modules": {name: modules.sha(path) for name, path in sorted(closure.items())},
        "environment": {"python": platform.python_version(), "device": device,
                        **{name: _file_sha(root / name) for name in ENVIRONMENT_FILES}},
    }


def cache_key(components: dict[str, Any]) -> str:
    return _sha256(json.dumps(components, sort_keys=True))


def what_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """A short reason for executing: which of the key's components differ from the cached record's."""
    if not old:
        return "no cached outputs"
    reasons = []
    if old.get("version") != new["version"]:
        return "the cache format changed"
    if old.get("code") != new["code"]:
        reasons.append("code cells changed")
    if old.get("parameters") != new["parameters"]:
        reasons.append("parameters changed")
    old_modules, new_modules = old.get("modules", {}), new["modules"]
    changed = sorted(m for m in set(old_modules) | set(new_modules) if old_modules.get(m) != new_modules.get(m))
    if changed:
        reasons.append("modules changed: " + ", ".join(changed))
    if old.get("environment") != new["environment"]:
        keys = sorted(k for k in new["environment"] if old.get("environment", {}).get(k) != new["environment"][k])
        reasons.append("environment changed: " + ", ".join(keys))
    return "; ".join(reasons) or "cached outputs could not be verified"


def cache_record_path(build_dir: Path, entry: str) -> Path:
    return build_dir / "cache" / f"{entry}.json"


def claims_path(notebook_path: Path) -> Path:
    return notebook_path.with_name(notebook_path.stem + ".claims.json")


def read_json_object(path: Path) -> dict | None:
    """The JSON object stored at ``path``; None when there is none, it cannot be read, or it holds anything but
    an object (``null``, a list, a number: a damaged or hand-made file)."""
    try:
        data = json.loads(Path(path).read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def read_cache_record(build_dir: Path, entry: str) -> dict | None:
    """The cache record of a chapter as written (None if there is none or it cannot be read), unverified."""
    return read_json_object(cache_record_path(build_dir, entry))


def load_cache_record(build_dir: Path, entry: str, notebook_path: Path) -> dict | None:
    """The cache record of a chapter, if its notebook and claims files are the ones it describes."""
    record = read_cache_record(build_dir, entry)
    if record is None:
        return None
    if record.get("notebook_sha") != _file_sha(notebook_path):
        return None
    if record.get("claims_sha") != _file_sha(claims_path(notebook_path)):
        return None
    return record


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def rerender_from_cache(plan: "ChapterPlan", notebook_path: Path) -> bool:
    """Merge the chapter's current prose with its cached code-cell outputs, without executing anything.

    The code cells are the same by construction of the key (checked again here); markdown cells and
    display metadata (tags, alt text) come from the current source. Returns False when the cached
    notebook does not match, so the caller executes instead.
    """
    import jupytext
    import nbformat

    fresh = jupytext.read(plan.source, fmt="md:myst")
    cached = nbformat.read(notebook_path, as_version=4)
    injected = [c for c in cached.cells if "injected-parameters" in c.metadata.get("tags", [])]
    cached_code = [c for c in cached.cells
                   if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]
    fresh_code = [c for c in fresh.cells if c.cell_type == "code"]
    if len(cached_code) != len(fresh_code) or any(a.source != b.source for a, b in zip(cached_code, fresh_code)):
        return False
    cells, code = [], iter(cached_code)
    for cell in fresh.cells:
        if cell.cell_type == "code":
            old = next(code)
            cell = nbformat.from_dict(dict(cell))
            metadata = {k: v for k, v in old.metadata.items() if k in ("papermill", "execution")}
            cell.metadata = nbformat.from_dict({**metadata, **cell.metadata})
            cell.outputs, cell.execution_count = old.outputs, old.execution_count
            if "id" in old:
                cell["id"] = old["id"]
            cells.append(cell)
            if injected and "parameters" in cell.metadata.get("tags", []):
                cells.extend(injected)
        else:
            cells.append(cell)
    merged = nbformat.from_dict(dict(cached))
    merged.cells = cells
    if merged.get("nbformat_minor", 0) >= 5:  # cell ids required: give new prose cells fresh ones
        import uuid

        for cell in merged.cells:
            cell.setdefault("id", uuid.uuid4().hex[:8])
    else:
        for cell in merged.cells:
            cell.pop("id", None)
    _write_atomic(notebook_path, nbformat.writes(merged))
    return True


# --- execution ------------------------------------------------------------------------------------
class BookInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal (Ctrl-C, SIGTERM); the chapter in progress keeps its old outputs."""

    def __init__(self, signal_name: str = "SIGINT"):
        super().__init__(signal_name)
        self.signal_name = signal_name


@dataclass
class ChapterResult:
    chapter: str
    source: str
    status: str  # "ok", "failed", "interrupted" or "static" (no code cells)
    seconds: float
    profile: str
    parameters: dict
    device: str
    notebook: str
    error: dict | None = None
    #: "executed" (this run), "reused" (outputs of an earlier execution, prose re-rendered), "converted"
    #: (no code), "not run" (failed or interrupted: see ``outputs``).
    run: str = "executed"
    #: When the outputs on the page were computed (None when there are none).
    executed_at: str | None = None
    #: Why the chapter was executed (what changed since its cached outputs), or why it was reused.
    reason: str = ""
    #: For a failed or interrupted chapter: which outputs the page shows instead.
    outputs: str = ""


def _kernel_env() -> None:
    # An Agg backend in the environment makes every figure vanish from executed notebooks.
    os.environ.pop("MPLBACKEND", None)


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def partial_paths(output: Path, pid: int | None = None) -> tuple[Path, Path]:
    """Where an execution writes before it is moved into place: hidden files beside ``output``."""
    tag = f".{output.stem}.partial-{pid or os.getpid()}"
    return output.with_name(tag + ".ipynb"), output.with_name(tag + ".claims.json")


def remove_stale_partials(folder: Path) -> list[Path]:
    """Delete the temporaries of runs that no longer exist (killed with SIGKILL, power loss)."""
    import re

    removed = []
    if not folder.is_dir():
        return removed
    for path in folder.rglob(".*.partial-*"):
        match = re.search(r"\.partial-(\d+)\.", path.name)
        if not match:
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        if not alive:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _previous_outputs(output: Path, record: dict | None) -> str:
    if not output.is_file():
        return "none"
    when = (record or {}).get("executed_at")
    return f"previous outputs kept (executed {when})" if when else "previous outputs kept"


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
            cells.append(nbformat.v4.new_code_cell("# Parameters\n" + lines,
                                                   metadata={"tags": ["injected-parameters"]}))
    nb.cells = cells
    nb.metadata["language_info"] = {"name": "python", "version": platform.python_version(),
                                    "pygments_lexer": "ipython3", "file_extension": ".py",
                                    "mimetype": "text/x-python"}
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
                cell.outputs.append(nbformat.v4.new_output("execute_result", data=data, metadata=metadata,
                                                           execution_count=count))
            if error is not None:
                cell.outputs.append(nbformat.v4.new_output("error", ename=error.ename, evalue=error.evalue,
                                                           traceback=[line.rstrip("\n") for line in tb]))
                break
    finally:
        os.chdir(previous_cwd)
    _write_atomic(path, nbformat.writes(nb))
    if error is not None:
        raise error


def execute_chapter(plan: ChapterPlan, output: Path, build_dir: Path | None, profile: str, device: str,
                    components: dict | None = None, reason: str = "") -> ChapterResult:
    """Execute one chapter into ``output``; never raises for a failure inside the chapter.

    The notebook and the claims JSON are written to temporary files beside ``output`` and moved into place
    only when the chapter finishes without error, so a failed or interrupted execution leaves the previous
    good outputs (a failure with no previous outputs shows the failed attempt, so its page can be built).
    With ``components`` (and a ``build_dir``), a successful execution also records the chapter's cache key.
    An interruption (:class:`KeyboardInterrupt`, :class:`BookInterrupted`) is re-raised after clean-up.
    """
    import copy

    import nbformat

    output.parent.mkdir(parents=True, exist_ok=True)
    if plan.notebook is not None:
        nb = copy.deepcopy(plan.notebook)
    else:
        import jupytext

        nb = jupytext.read(plan.source, fmt="md:myst")
    start = time.perf_counter()
    if not plan.executes:
        _write_atomic(output, nbformat.writes(nb))
        return ChapterResult(plan.entry, str(plan.source), "static", 0.0, profile, {}, device, str(output),
                             run="converted")
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    if plan.in_process:
        papermill = None
        failure: type[Exception] = CellError
    else:
        import papermill

        failure = papermill.PapermillExecutionError
    tmp_nb, tmp_claims = partial_paths(output)
    final_claims = claims_path(output)
    record_path = (cache_record_path(build_dir, plan.entry)
                   if build_dir is not None and components is not None else None)
    previous_record = read_cache_record(build_dir, plan.entry) if record_path is not None else None
    saved = {k: os.environ.get(k) for k in (CLAIMS_FILE_ENV, BUILD_DIR_ENV, ROOT_ENV)}
    os.environ[CLAIMS_FILE_ENV] = str(tmp_claims.resolve())
    os.environ[ROOT_ENV] = str(plan.source.resolve().parents[len(Path(plan.entry).parts) - 1])
    if build_dir is not None:
        os.environ[BUILD_DIR_ENV] = str(build_dir.resolve())
    _kernel_env()
    error = None
    try:
        if plan.in_process:
            run_in_process(nb, tmp_nb, plan.parameters, plan.source.parent)
        else:
            papermill.execute_notebook(nb, str(tmp_nb), parameters=plan.parameters, kernel_name="python3",
                                       cwd=str(plan.source.parent), progress_bar=False, log_output=False,
                                       kernel_manager_class=kernel_manager_class())
        status = "ok"
        hide_default_parameters(tmp_nb, plan.parameters, defined_parameters(nb))
        tidy_metadata(tmp_nb, plan.entry, output.name)
    except failure as exc:
        if exc.ename == "KeyboardInterrupt":  # Ctrl-C reached the kernel before it reached us
            tmp_nb.unlink(missing_ok=True)
            tmp_claims.unlink(missing_ok=True)
            raise BookInterrupted("SIGINT") from None
        status = "failed"
        error = {"code_cell": source_code_cell(nb, exc.source), "execution_count": exc.exec_count,
                 "ename": exc.ename, "evalue": exc.evalue, "cell_source": exc.source[:2000]}
    except KeyboardInterrupt:
        tmp_nb.unlink(missing_ok=True)
        tmp_claims.unlink(missing_ok=True)
        raise
    except Exception as exc:  # kernel died, notebook could not be written, ...
        status = "failed"
        error = {"code_cell": None, "execution_count": None, "ename": type(exc).__name__, "evalue": str(exc),
                 "cell_source": ""}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    seconds = round(time.perf_counter() - start, 2)
    result = ChapterResult(plan.entry, str(plan.source), status, seconds, profile, plan.parameters, device,
                           str(output), error, reason=reason)
    if status == "ok":
        if record_path is not None:
            record_path.unlink(missing_ok=True)  # the old record no longer describes the files
        os.replace(tmp_nb, output)
        if tmp_claims.is_file():
            os.replace(tmp_claims, final_claims)
        else:
            final_claims.unlink(missing_ok=True)
        result.executed_at = _now()
        if components is not None and record_path is not None:
            record = {"key": cache_key(components), "components": components, "executed_at": result.executed_at,
                      "seconds": seconds, "profile": profile, "parameters": plan.parameters, "device": device,
                      "source_sha": _file_sha(plan.source), "notebook_sha": _file_sha(output),
                      "claims_sha": _file_sha(final_claims)}
            _write_atomic(record_path, json.dumps(record, indent=1, default=str))
        return result
    result.run = "not run"
    tmp_claims.unlink(missing_ok=True)
    if output.is_file():
        tmp_nb.unlink(missing_ok=True)
        result.outputs = _previous_outputs(output, previous_record)
        result.executed_at = (previous_record or {}).get("executed_at")
    elif tmp_nb.is_file():
        os.replace(tmp_nb, output)
        result.outputs = "the failed attempt (there were no earlier outputs)"
    else:
        result.outputs = "none"
    return result


def source_code_cell(notebook, source: str) -> int | None:
    """1-based position of the code cell with this source among the chapter's own code cells."""
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        if cell.source.strip() == source.strip():
            return number
    return None


def hide_default_parameters(path: Path, injected: dict, defaults: dict) -> None:
    """Hide papermill's injected-parameters cell when it only restates the chapter's defaults.

    A reader of the rendered page then sees the chapter's own parameters cell; a run with other values keeps
    the injected cell visible, so the page shows what it was executed with.
    """
    import nbformat

    if any(defaults.get(k, object()) != v for k, v in injected.items()):
        return
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, path)


def tidy_metadata(path: Path, entry: str, output_name: str) -> None:
    """Keep the build machine out of the executed notebook a reader downloads: papermill records the input it was
    given (here the whole chapter, some 50-70 kB, since it is handed a notebook object) and the absolute output
    path; they become the chapter's source name and the notebook's own file name."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    record = nb.metadata.get("papermill")
    if not isinstance(record, dict):
        return
    record["input_path"] = f"{entry}.md"
    record["output_path"] = output_name
    record.pop("environment_variables", None)
    nbformat.write(nb, path)


def describe_failure(result: ChapterResult) -> str:
    err = result.error or {}
    where = (f"code cell {err.get('code_cell')}" if err.get("code_cell") is not None
             else "a cell" if err.get("execution_count") is not None else "before any cell ran")
    if err.get("execution_count") is not None:
        where += f" (execution count {err['execution_count']})"
    source = (err.get("cell_source") or "").strip().splitlines()
    first = f"\n    cell begins: {source[0][:120]}" if source else ""
    return f"chapter {result.source} failed in {where}: {err.get('ename')}: {err.get('evalue')}{first}"


def summary_table(results: list[ChapterResult]) -> str:
    """A plain-text table of the run: one line per page (status, executed or reused), then the total time."""
    width = max((len(r.chapter) for r in results), default=4)
    lines = [f"{'page':<{width}}  {'status':<11} {'run':<9} {'seconds':>8}"]
    for r in results:
        seconds = f"{r.seconds:8.1f}" if r.run == "executed" or r.status in ("failed", "interrupted") else f"{'-':>8}"
        lines.append(f"{r.chapter:<{width}}  {r.status:<11} {r.run:<9} {seconds}")
    total = sum(r.seconds for r in results if r.run != "reused")
    lines.append(f"{'total':<{width}}  {'':<11} {'':<9} {total:8.1f}")
    return "\n".join(lines)


class _ReportLock:
    """An exclusive lock on the report while it is read, merged and rewritten (chapters run side by side)."""

    def __init__(self, path: Path):
        self.path = path.with_name("." + path.name + ".lock")

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a")
        try:
            import fcntl

            fcntl.flock(self.handle, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover - not POSIX
            pass
        return self

    def __exit__(self, *exc):
        self.handle.close()


def write_report(path: Path, results: list[ChapterResult], profile: str, env: dict, *, state: str = "complete",
                 attempt: dict | None = None, order: list[str] | None = None) -> None:
    """Write ``report.json``: this run's pages merged into the previous report's (a partial run keeps the rest).

    ``state`` says how the run ended: ``running``, ``complete``, ``failed`` or ``interrupted``; ``attempt``
    records what was asked (command, chapters, profile, parameters, and the signal for an interruption).
    Pages are listed in ``order`` (the TOC) when given.
    """
    with _ReportLock(path):
        chapters: dict[str, dict] = {}
        previous = (read_json_object(path) or {}).get("chapters")
        if isinstance(previous, list):    # rows of a damaged or hand-made report are dropped, not a traceback
            chapters = {c["chapter"]: c for c in previous if isinstance(c, dict) and isinstance(c.get("chapter"), str)}
        for r in results:
            chapters[r.chapter] = asdict(r)
        names = list(chapters)
        if order is not None:
            names = [n for n in order if n in chapters]
        data = {"profile": profile, "environment": env, "finished": _now(), "state": state,
                "attempt": attempt or {}, "chapters": [chapters[n] for n in names]}
        _write_atomic(path, json.dumps(data, indent=1, default=str))


def load_report(build_dir: str | os.PathLike | None = None) -> dict | None:
    """The last execution report (``<build>/executed/report.json``), or None if there is none."""
    if build_dir is None:
        build_dir = os.environ.get(BUILD_DIR_ENV)
        if not build_dir:
            return None
    path = Path(build_dir) / "executed" / "report.json"
    if not path.exists():
        return None
    report = read_json_object(path)
    if report is None or not isinstance(report.get("chapters"), list) \
            or not all(isinstance(c, dict) for c in report["chapters"]) \
            or not isinstance(report.get("environment"), dict) or not isinstance(report.get("attempt", {}), dict):
        raise BookError(f"{path} is not an execution report (damaged or edited?): execute the book again "
                        f"(make book), which rewrites it")
    return report


BOOK_FILES = ("_config.yml", "_toc.yml", "references.bib")
BOOK_FOLDERS = ("_static",)


def stage_book(root: Path, executed: Path) -> None:
    """Copy the configuration and any non-chapter assets of ``book/`` next to the executed notebooks."""
    for name in BOOK_FILES:
        if (root / name).is_file():
            shutil.copy2(root / name, executed / name)
    for name in BOOK_FOLDERS:
        if (root / name).is_dir():
            shutil.copytree(root / name, executed / name, dirs_exist_ok=True)
    book = root / "book"
    if book.is_dir():
        for path in book.rglob("*"):
            if path.is_file() and path.suffix not in (".md", ".ipynb", ".py") and "__pycache__" not in path.parts:
                target = executed / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, target)


def html_dir(build_dir: Path) -> Path:
    """Where the HTML goes: ``<build>/html`` (Jupyter Book always writes into ``<path-output>/_build/html``)."""
    return build_dir / "html"


def build_html(root: Path, build_dir: Path) -> tuple[int, Path]:
    """Jupyter Book over the executed notebooks, warnings as errors; returns (exit code, index.html)."""
    executed = build_dir / "executed"
    stage_book(root, executed)
    # Repository, issue, edit and launch buttons where the repository's address is known (see repository.py).
    repo, site = repository.from_environment(root)
    print(f"[book] {repository.configure(executed / '_config.yml', repo, site)}", flush=True)
    # Jupyter Book writes to <path-output>/_build/html; build in a scratch folder and move the result.
    scratch = build_dir / "jb"
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(executed), "--path-output", str(scratch),
           "-W", "-n", "--keep-going", "--all"]
    proc = subprocess.run(cmd)
    target = html_dir(build_dir)
    if (scratch / "_build" / "html").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(scratch / "_build" / "html"), str(target))
        repository.fill_install_cells(target / "_sources", repo)  # the downloads' install cells
    return proc.returncode, target / "index.html"


def reuse_or_execute(root: Path, build_dir: Path, plan: ChapterPlan, output: Path, profile: str, device: str,
                     force: bool, modules: ModuleIndex) -> ChapterResult:
    """Reuse the chapter's cached outputs when its key matches (re-rendering changed prose), else execute it."""
    if not plan.executes:
        return execute_chapter(plan, output, build_dir, profile, device)
    if plan.in_process:
        return execute_chapter(plan, output, build_dir, profile, device,
                               reason="executed in the executor's process, without a kernel "
                                      "(it gathers the other pages' results)")
    components = cache_components(root, plan.notebook, plan.parameters, device, modules)
    if plan.always:
        return execute_chapter(plan, output, build_dir, profile, device, components,
                               reason="always executed (it gathers the other pages' results)")
    key = cache_key(components)
    record = load_cache_record(build_dir, plan.entry, output)
    if force:
        reason = "forced (--force)"
    elif record is not None and record.get("key") == key:
        start = time.perf_counter()
        prose = "unchanged"
        if record.get("source_sha") != _file_sha(plan.source):
            if rerender_from_cache(plan, output):
                record = {**record, "source_sha": _file_sha(plan.source), "notebook_sha": _file_sha(output)}
                _write_atomic(cache_record_path(build_dir, plan.entry), json.dumps(record, indent=1, default=str))
                prose = "re-rendered"
            else:
                record = None
        if record is not None:
            return ChapterResult(plan.entry, str(plan.source), "ok", round(time.perf_counter() - start, 2),
                                 profile, plan.parameters, record.get("device", device), str(output), run="reused",
                                 executed_at=record.get("executed_at"),
                                 reason=f"code, parameters, modules and environment unchanged; prose {prose}")
        reason = "cached notebook does not match the code cells"
    else:
        old = read_cache_record(build_dir, plan.entry)
        reason = what_changed((old or {}).get("components"), components)
        if old is not None and record is None and old.get("key") == key:
            reason = "cached outputs were changed or removed since they were recorded"
    return execute_chapter(plan, output, build_dir, profile, device, components, reason=reason)


def _interrupted_result(plan: ChapterPlan, output: Path, build_dir: Path, profile: str, device: str,
                        signal_name: str, seconds: float) -> ChapterResult:
    record = read_cache_record(build_dir, plan.entry)
    return ChapterResult(plan.entry, str(plan.source), "interrupted", round(seconds, 2), profile, plan.parameters,
                         device, str(output), {"ename": signal_name, "evalue": "interrupted by " + signal_name,
                                               "code_cell": None, "execution_count": None, "cell_source": ""},
                         run="not run", executed_at=(record or {}).get("executed_at") if output.is_file() else None,
                         outputs=_previous_outputs(output, record))


def _finished(results: list[ChapterResult]) -> list[str]:
    """The pages this run has finished (whatever their status), as the report's ``attempt["finished"]``."""
    return [r.chapter for r in results]


def _attempt(command: str, plans: list[ChapterPlan], profile: str, force: bool) -> dict:
    return {"command": command, "profile": profile, "force": force, "started": _now(),
            "chapters": [p.entry for p in plans],
            "parameters": {p.entry: p.parameters for p in plans if p.executes}}


def select_entries(root: Path, all_entries: list[str], only: list[str] | None, html: bool) -> list[str]:
    """The TOC entries a run executes: all, or those named by ``--only``. When HTML is built, the in-process
    pages (the status page, the ledger) are added to an ``--only`` selection: they report on the build, and
    the HTML would otherwise show what they said of an earlier one (a chapter that has just failed as ok)."""
    if not only:
        return list(all_entries)
    wanted = [Path(c).with_suffix("").as_posix() for c in only]
    unknown = [c for c, w in zip(only, wanted) if c not in all_entries and w not in all_entries]
    if unknown:
        raise BookError(f"not in _toc.yml: {', '.join(unknown)}")
    if html:
        import jupytext

        wanted += [e for e in all_entries if e not in wanted
                   and execution_mode(jupytext.read(chapter_source(root, e), fmt="md:myst")) == "in-process"]
    return [e for e in all_entries if e in wanted]


def execute_book(root: Path, build_dir: Path, profile: str, overrides: list[tuple[str, str]], html: bool = True,
                 only: list[str] | None = None, force: bool = False) -> int:
    all_entries = toc_files(root)
    entries = select_entries(root, all_entries, only, html)
    plans = plan_chapters(root, entries, profile, overrides)
    if html:
        repository.from_environment(root)  # a malformed repository address is refused before anything runs
    executed = build_dir / "executed"
    executed.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(executed)
    env = environment()
    modules = ModuleIndex(root)
    results: list[ChapterResult] = []
    report = executed / "report.json"
    attempt = _attempt("execute", plans, profile, force)
    for plan in plans:
        output = executed / f"{plan.entry}.ipynb"
        start = time.perf_counter()
        try:
            result = reuse_or_execute(root, build_dir, plan, output, profile, env["device"], force, modules)
        except KeyboardInterrupt as exc:
            signal_name = getattr(exc, "signal_name", "SIGINT")
            result = _interrupted_result(plan, output, build_dir, profile, env["device"], signal_name,
                                         time.perf_counter() - start)
            results.append(result)
            write_report(report, results, profile, env, state="interrupted",
                         attempt={**attempt, "finished": _finished(results), "signal": signal_name,
                                  "interrupted_chapter": plan.entry},
                         order=all_entries)
            print(f"[book] interrupted ({signal_name}) while executing {plan.source.relative_to(root)}; "
                  f"its page keeps {result.outputs}; no HTML built", file=sys.stderr, flush=True)
            print(summary_table(results))
            print(f"[book] report: {report.resolve()}")
            return 130 if signal_name == "SIGINT" else 143
        results.append(result)
        write_report(report, results, profile, env, state="running",
                     attempt={**attempt, "finished": _finished(results)}, order=all_entries)
        verb = {"executed": "executed", "reused": "reused", "converted": "converted"}.get(result.run, result.status)
        print(f"[book] {plan.source.relative_to(root)}: {verb}"
              + (f" in {result.seconds:.1f} s" if result.run == "executed" else "")
              + (f" ({result.reason})" if result.reason else ""), flush=True)
        if result.status == "failed":
            print(f"[book]   {describe_failure(result)}; the page shows {result.outputs}", file=sys.stderr,
                  flush=True)
    failures = [r for r in results if r.status == "failed"]
    # The in-process pages (the status page, the ledger) were rendered from a report that said "running",
    # and before the pages after them: render them again, one at a time, each from the report as it stands
    # then (the run's final state, with the pages rendered again before it). A page is rendered again once
    # more when one rendered again after it fails (the status page must then say the run failed); one that
    # failed keeps its failure and the outputs it showed.
    rendered_with: dict[int, int] = {}  # page index -> how many pages had failed when it was rendered again
    while stale := [i for i, plan in enumerate(plans) if plan.in_process and results[i].status == "ok"
                    and rendered_with.get(i) != len(failures)
                    and (failures or any(not later.in_process for later in plans[i + 1:]))]:
        i, plan = stale[0], plans[stale[0]]
        write_report(report, results, profile, env, state="failed" if failures else "complete",
                     attempt={**attempt, "finished": _finished(results)}, order=all_entries)
        rendered_with[i] = len(failures)
        results[i] = execute_chapter(plan, executed / f"{plan.entry}.ipynb", build_dir, profile,
                                     env["device"], reason="rendered again at the end of the run, from "
                                                           "its final report")
        print(f"[book] {plan.source.relative_to(root)}: {results[i].status}, {results[i].reason}", flush=True)
        failures = [r for r in results if r.status == "failed"]
    write_report(report, results, profile, env, state="failed" if failures else "complete",
                 attempt={**attempt, "finished": _finished(results)}, order=all_entries)
    code = 0
    if html:
        start = time.perf_counter()
        code, index = build_html(root, build_dir)
        if code == 0:
            print(f"[book] HTML built in {time.perf_counter() - start:.1f} s: {index.resolve()}")
        else:
            print(f"[book] the HTML build failed (exit {code}); see the warnings above", file=sys.stderr)
    print(summary_table(results))
    for r in failures:
        print(f"[book] FAILED: {describe_failure(r)}", file=sys.stderr)
    print(f"[book] report: {report.resolve()}")
    return 1 if failures or code else 0


def run_chapter(root: Path, chapter: str, profile: str, overrides: list[tuple[str, str]], output: Path | None,
                build_dir: Path) -> int:
    """Execute one chapter (always, whatever the cache holds). Into the build folder (no ``-o``), it also
    records the chapter's cache key and updates the report, so a later ``execute`` can reuse it."""
    path = Path(chapter)
    if not path.is_absolute() and (root / path).exists():
        path = root / path                    # relative to the book's root first, then to the working folder
    if path.is_absolute() or path.exists():
        if not path.resolve().is_relative_to(root):
            raise BookError(f"{chapter} is not inside the book's root {root}")
        path = path.resolve().relative_to(root)
    entry = path.with_suffix("").as_posix()
    entries = toc_files(root)
    if entry not in entries:
        raise BookError(f"{chapter} is not a chapter in {root / '_toc.yml'}")
    (plan,) = plan_chapters(root, [entry], profile, overrides)
    if output is not None and output.exists() and not output.is_file():
        raise BookError(f"-o {output}: not a file (a folder stands there); give the notebook's path")
    if output is not None and output.parent.exists() and not output.parent.is_dir():
        raise BookError(f"-o {output}: {output.parent} is not a folder")
    default = build_dir / "executed" / f"{entry}.ipynb"
    in_build = output is None or output.resolve() == default.resolve()
    output = output or default
    remove_stale_partials(output.parent)
    env = environment()
    device = env["device"]
    components = cache_components(root, plan.notebook, plan.parameters, device) if in_build and plan.executes else None
    report = build_dir / "executed" / "report.json"
    attempt = _attempt("run", [plan], profile, False)
    start = time.perf_counter()
    try:
        result = execute_chapter(plan, output, build_dir, profile, device, components,
                                 reason="run on request")
    except KeyboardInterrupt as exc:
        signal_name = getattr(exc, "signal_name", "SIGINT")
        if in_build:
            result = _interrupted_result(plan, output, build_dir, profile, device, signal_name,
                                         time.perf_counter() - start)
            write_report(report, [result], profile, env, state="interrupted",
                         attempt={**attempt, "finished": [entry], "signal": signal_name,
                                  "interrupted_chapter": entry}, order=entries)
        print(f"[book] {plan.source.relative_to(root)}: interrupted ({signal_name}); {output} keeps "
              f"{_previous_outputs(output, None)}", file=sys.stderr)
        return 130 if signal_name == "SIGINT" else 143
    if in_build and plan.in_process and result.status == "ok" and report.is_file():
        # Re-rendering the status page (or the ledger) reports on the last run: its state and attempt (a
        # failure, an interruption, the pages not reached) stay; only the page's own row is updated.
        previous = read_json_object(report) or {}
        write_report(report, [result], previous.get("profile", profile), previous.get("environment", env),
                     state=previous.get("state", "complete"), attempt=previous.get("attempt"), order=entries)
    elif in_build:
        write_report(report, [result], profile, env, state="failed" if result.status == "failed"
                     else "complete", attempt={**attempt, "finished": [entry]}, order=entries)
    print(f"[book] {plan.source.relative_to(root)}: {result.status} in {result.seconds:.1f} s -> {output}")
    if result.status == "failed":
        print(f"[book] FAILED: {describe_failure(result)}; {output} keeps {result.outputs}", file=sys.stderr)
        return 1
    return 0


def _raise_on_signal(signum, frame):
    import signal

    raise BookInterrupted(signal.Signals(signum).name)


def main(argv: list[str] | None = None) -> int:
    import signal

    parser = argparse.ArgumentParser(prog="python -m resnet_theory.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("execute", "run"):
        p = sub.add_parser(name)
        if name == "run":
            p.add_argument("chapter", help="a chapter source, e.g. book/linear.md")
            p.add_argument("-o", "--output", type=Path, help="where to write the executed notebook")
        else:
            p.add_argument("--no-html", action="store_true", help="execute only; do not build HTML")
            p.add_argument("--only", nargs="+", help="execute only these TOC entries (e.g. book/linear)")
            p.add_argument("--force", action="store_true",
                           help="execute every chapter, even those whose cached outputs are up to date")
        p.add_argument("--profile", default="quick", help="quick (CPU, minutes) or full (GPU-sized)")
        p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
        p.add_argument("--root", type=Path, help="the book's root (default: found from the working directory)")
        p.add_argument("--build-dir", type=Path, help="default: <root>/_build")
    args = parser.parse_args(argv)
    # SIGTERM (a CI timeout, `kill`) stops the run like Ctrl-C: old outputs kept, the report says so.
    previous = signal.getsignal(signal.SIGTERM)
    in_main_thread = __import__("threading").current_thread() is __import__("threading").main_thread()
    if in_main_thread:
        signal.signal(signal.SIGTERM, _raise_on_signal)
    try:
        root = (args.root or find_root()).resolve()
        if args.root is not None and not root.is_dir():
            raise BookError(f"--root {args.root}: {'not a folder' if root.exists() else 'no such folder'}")
        if args.root is not None and not ((root / "_toc.yml").is_file() and (root / "_config.yml").is_file()):
            raise BookError(f"--root {args.root}: no _toc.yml and _config.yml there (not a book's root)")
        build_dir = (args.build_dir or root / "_build").resolve()
        if build_dir.exists() and not build_dir.is_dir():
            raise BookError(f"--build-dir {args.build_dir or build_dir}: not a folder")
        try:
            build_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BookError(f"--build-dir {args.build_dir or build_dir}: cannot create it "
                            f"({exc.strerror or exc})") from None
        overrides = [tuple(p) for p in args.parameter]
        if args.command == "execute":
            return execute_book(root, build_dir, args.profile, overrides, html=not args.no_html, only=args.only,
                                force=args.force)
        return run_chapter(root, args.chapter, args.profile, overrides, args.output, build_dir)
    except (BookError, repository.RepositoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
