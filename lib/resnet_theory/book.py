"""The book executor: papermill over the jupytext chapters, then a Jupyter Book build of the results.

Usage (from the repository root, inside the project's environment)::

    python -m resnet_theory.book execute [--profile quick|full] [-p NAME VALUE]... [-p CHAPTER:NAME VALUE]...
    python -m resnet_theory.book run book/CHAPTER.md [--profile quick|full] [-p NAME VALUE]... [-o out.ipynb]

``execute`` reads ``_toc.yml``, runs every chapter once through papermill (``jupytext.read`` then
``papermill.execute_notebook``) into ``_build/executed/``, writes ``_build/executed/report.json``, and
builds HTML from the executed notebooks with ``execute_notebooks: off`` and ``-W -n --keep-going``.
Pages without code cells are converted, not executed. ``book/ledger.md`` and ``book/status.md`` come last
in the TOC, so they see every chapter's claims and times.

Conventions for chapters: exactly one code cell tagged ``parameters`` that defines at least
``profile = "quick"`` and ``seed = 0``. The quick profile runs on a 2-core CPU in about two minutes; the
full profile is sized for a GPU.

A parameter given as ``-p NAME VALUE`` goes to every chapter whose parameters cell defines ``NAME`` (it is
an error if none does); ``-p CHAPTER:NAME VALUE`` goes to one chapter (an error if that chapter does not
define it). Values are Python literals (``-p depth 100``, ``-p data_dir "'/data/cifar'"``) or, failing that,
strings. Every such error is raised before anything runs.
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

from .ledger import BUILD_DIR_ENV, CLAIMS_FILE_ENV

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
def parse_value(text: str) -> Any:
    """A Python literal if ``text`` is one, else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


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


def has_code(notebook) -> bool:
    return any(c.cell_type == "code" and c.source.strip() for c in notebook.cells)


@dataclass
class ChapterPlan:
    entry: str
    source: Path
    executes: bool
    parameters: dict[str, Any] = field(default_factory=dict)


def plan_chapters(root: Path, entries: list[str], profile: str, overrides: list[tuple[str, str]]) -> list[ChapterPlan]:
    """Check everything that can be checked before running; return what will run with which parameters."""
    import jupytext

    if profile not in PROFILES:
        raise BookError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILES)}")
    plans = []
    defined: dict[str, dict[str, Any]] = {}
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
        plans.append(ChapterPlan(entry, source, executes, {"profile": profile} if executes else {}))
    by_stem = {Path(p.entry).stem: p for p in plans}
    for name, raw in overrides:
        value = parse_value(raw)
        if ":" in name:
            stem, pname = name.split(":", 1)
            plan = by_stem.get(stem)
            if plan is None:
                raise BookError(f"-p {name}: no chapter {stem!r} in this run (chapters: {', '.join(by_stem)})")
            if pname not in defined.get(plan.entry, {}):
                raise BookError(f"-p {name}: {plan.source.relative_to(root)} does not define {pname!r} in its "
                                f"parameters cell (it defines: {', '.join(defined.get(plan.entry, {})) or 'nothing'})")
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
                plan.parameters[name] = value
    return plans


# --- environment ----------------------------------------------------------------------------------
def device_name() -> str:
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


# --- execution ------------------------------------------------------------------------------------
@dataclass
class ChapterResult:
    chapter: str
    source: str
    status: str  # "ok", "failed" or "static" (no code cells)
    seconds: float
    profile: str
    parameters: dict
    device: str
    notebook: str
    error: dict | None = None


def _kernel_env() -> None:
    # An Agg backend in the environment makes every figure vanish from executed notebooks.
    os.environ.pop("MPLBACKEND", None)


def execute_chapter(plan: ChapterPlan, output: Path, build_dir: Path | None, profile: str, device: str) -> ChapterResult:
    """Execute one chapter into ``output``; never raises for a failure inside the chapter."""
    import jupytext
    import nbformat
    import papermill

    output.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(plan.source, fmt="md:myst")
    start = time.perf_counter()
    if not plan.executes:
        nbformat.write(nb, output)
        return ChapterResult(plan.entry, str(plan.source), "static", 0.0, profile, {}, device, str(output))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    claims_file = output.with_name(output.stem + ".claims.json")
    claims_file.unlink(missing_ok=True)
    saved = {k: os.environ.get(k) for k in (CLAIMS_FILE_ENV, BUILD_DIR_ENV)}
    os.environ[CLAIMS_FILE_ENV] = str(claims_file.resolve())
    if build_dir is not None:
        os.environ[BUILD_DIR_ENV] = str(build_dir.resolve())
    _kernel_env()
    error = None
    try:
        papermill.execute_notebook(nb, str(output), parameters=plan.parameters, kernel_name="python3",
                                   cwd=str(plan.source.parent), progress_bar=False, log_output=False)
        status = "ok"
        hide_default_parameters(output, plan.parameters, defined_parameters(nb))
    except papermill.PapermillExecutionError as exc:
        status = "failed"
        error = {"code_cell": source_code_cell(nb, exc.source), "execution_count": exc.exec_count,
                 "ename": exc.ename, "evalue": exc.evalue, "cell_source": exc.source[:2000]}
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
    seconds = time.perf_counter() - start
    return ChapterResult(plan.entry, str(plan.source), status, round(seconds, 2), profile, plan.parameters, device,
                         str(output), error)


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
    """A plain-text table of the run: one line per page, then the total time."""
    width = max((len(r.chapter) for r in results), default=4)
    lines = [f"{'page':<{width}}  {'status':<7} {'seconds':>8}"]
    for r in results:
        seconds = f"{r.seconds:8.1f}" if r.status != "static" else f"{'-':>8}"
        lines.append(f"{r.chapter:<{width}}  {r.status:<7} {seconds}")
    lines.append(f"{'total':<{width}}  {'':<7} {sum(r.seconds for r in results):8.1f}")
    return "\n".join(lines)


def write_report(path: Path, results: list[ChapterResult], profile: str, env: dict) -> None:
    data = {"profile": profile, "environment": env, "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "chapters": [asdict(r) for r in results]}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


def load_report(build_dir: str | os.PathLike | None = None) -> dict | None:
    """The last execution report (``<build>/executed/report.json``), or None if there is none."""
    if build_dir is None:
        build_dir = os.environ.get(BUILD_DIR_ENV)
        if not build_dir:
            return None
    path = Path(build_dir) / "executed" / "report.json"
    return json.loads(path.read_text()) if path.is_file() else None


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
    # Jupyter Book writes to <path-output>/_build/html; build in a scratch folder and move the result.
    scratch = build_dir / "jb"
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(executed), "--path-output", str(scratch),
           "-W", "-n", "--keep-going", "--all"]
    proc = subprocess.run(cmd)
    target = html_dir(build_dir)
    if (scratch / "_build" / "html").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(scratch / "_build" / "html"), str(target))
    return proc.returncode, target / "index.html"


def execute_book(root: Path, build_dir: Path, profile: str, overrides: list[tuple[str, str]], html: bool = True,
                 only: list[str] | None = None) -> int:
    entries = toc_files(root)
    if only:
        unknown = [c for c in only if c not in entries and Path(c).with_suffix("").as_posix() not in entries]
        if unknown:
            raise BookError(f"not in _toc.yml: {', '.join(unknown)}")
        entries = [e for e in entries if e in [Path(c).with_suffix("").as_posix() for c in only]]
    plans = plan_chapters(root, entries, profile, overrides)
    executed = build_dir / "executed"
    executed.mkdir(parents=True, exist_ok=True)
    env = environment()
    results: list[ChapterResult] = []
    report = executed / "report.json"
    for plan in plans:
        print(f"[book] {'executing' if plan.executes else 'converting'} {plan.source.relative_to(root)}", flush=True)
        result = execute_chapter(plan, executed / f"{plan.entry}.ipynb", build_dir, profile, env["device"])
        results.append(result)
        write_report(report, results, profile, env)
        print(f"[book]   {result.status} in {result.seconds:.1f} s", flush=True)
        if result.status == "failed":
            print(f"[book]   {describe_failure(result)}", file=sys.stderr, flush=True)
    failures = [r for r in results if r.status == "failed"]
    code = 0
    if html:
        code, index = build_html(root, build_dir)
        if code == 0:
            print(f"[book] HTML built: {index.resolve()}")
        else:
            print(f"[book] the HTML build failed (exit {code}); see the warnings above", file=sys.stderr)
    print(summary_table(results))
    for r in failures:
        print(f"[book] FAILED: {describe_failure(r)}", file=sys.stderr)
    print(f"[book] report: {report.resolve()}")
    return 1 if failures or code else 0


def run_chapter(root: Path, chapter: str, profile: str, overrides: list[tuple[str, str]], output: Path | None,
                build_dir: Path) -> int:
    path = Path(chapter)
    entry = (path.resolve().relative_to(root) if path.is_absolute() or path.exists() else path).with_suffix("").as_posix()
    if entry not in toc_files(root):
        raise BookError(f"{chapter} is not a chapter in {root / '_toc.yml'}")
    (plan,) = plan_chapters(root, [entry], profile, overrides)
    output = output or build_dir / "executed" / f"{entry}.ipynb"
    result = execute_chapter(plan, output, build_dir, profile, device_name())
    print(f"[book] {plan.source.relative_to(root)}: {result.status} in {result.seconds:.1f} s -> {output}")
    if result.status == "failed":
        print(f"[book] FAILED: {describe_failure(result)}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
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
        p.add_argument("--profile", default="quick", help="quick (CPU, minutes) or full (GPU-sized)")
        p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
        p.add_argument("--root", type=Path, help="the book's root (default: found from the working directory)")
        p.add_argument("--build-dir", type=Path, help="default: <root>/_build")
    args = parser.parse_args(argv)
    try:
        root = (args.root or find_root()).resolve()
        build_dir = (args.build_dir or root / "_build").resolve()
        overrides = [tuple(p) for p in args.parameter]
        if args.command == "execute":
            return execute_book(root, build_dir, args.profile, overrides, html=not args.no_html, only=args.only)
        return run_chapter(root, args.chapter, args.profile, overrides, args.output, build_dir)
    except BookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
