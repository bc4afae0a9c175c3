"""What a run executes: the pages it selects from the TOC, how each of them executes, with which parameters.

A page's front matter says how it executes (:func:`execution_mode`); :func:`plan_chapters` reads every
selected page and checks every ``-p`` against the parameters cells (:mod:`resnet_theory.book.parameters`),
so a bad request is refused before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .parameters import (
    REQUIRED_PARAMETERS,
    check_parameter_type,
    defined_parameters,
    parameter_annotations,
    parse_value,
)
from .toc import BookError, chapter_source

PROFILES = ("quick", "full")

EXECUTION_MODES = ("cached", "always", "in-process")

#: Parameters that name a folder of the reader's machine, and whether the chapter reads it or writes into it. Given on
#: the command line, a relative one (``-p experiments:runs_dir runs``) means a folder relative to where the command
#: runs, as ``-o`` and ``--build-dir`` do, but a chapter's kernel runs in the chapter's folder (``book/``): the
#: executor passes it on relative to that folder (``../runs``), so that it names the folder the reader meant. One
#: the chapter writes into is an output: refused, before anything runs, inside the sources or a build's records
#: (:func:`resnet_theory.outputs.check_output`, the rule of ``train --out-dir``).
FOLDER_PARAMETERS = {"data_dir": "read", "runs_dir": "written"}


def execution_mode(notebook) -> str:
    """How a page executes, from its front matter ``resnet_theory: {execution: MODE}``.

    ``cached`` (the default): with a kernel, only when its cache key changed; ``always``: with a kernel,
    on every run; ``in-process``: on every run, in the executor's process without a kernel (pages that
    only read the other pages' results, such as the ledger and status pages).
    """
    meta = notebook.metadata.get("resnet_theory") or {}
    mode = meta.get("execution", "cached") if isinstance(meta, dict) else "cached"
    if mode not in EXECUTION_MODES:
        raise BookError(
            f"unknown execution mode {mode!r} in the front matter (resnet_theory: execution); "
            f"choose one of {', '.join(EXECUTION_MODES)}"
        )
    return mode


def data_paths(notebook, root: Path) -> list[str]:
    """The data a page reads besides its code, from its front matter ``resnet_theory: {data: [PATH, ...]}``: files
    or folders relative to the book's root (a folder may not exist yet), each inside the root. Every file in them is
    part of the page's cache key (:func:`resnet_theory.book.cache.cache_components`), so committing a new
    measurement executes the page again."""
    meta = notebook.metadata.get("resnet_theory") or {}
    paths = meta.get("data", []) if isinstance(meta, dict) else []
    if not isinstance(paths, list) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise BookError("the front matter's resnet_theory: data must be a list of paths relative to the book's root")
    root = root.resolve()
    for p in paths:
        target = (root / p).resolve()
        if Path(p).is_absolute() or not (target == root or root in target.parents):
            raise BookError(f"data path {p!r} in the front matter (resnet_theory: data) is not inside the book's root")
    return sorted(set(paths))


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
                raise BookError(
                    f"{source.relative_to(root)}: its 'parameters' cell must define "
                    f"{', '.join(REQUIRED_PARAMETERS)}; missing {', '.join(missing)}"
                )
            defined[entry] = names
            annotated[entry] = parameter_annotations(nb)
        data_paths(nb, root)  # a bad data declaration is refused before anything runs
        plans.append(
            ChapterPlan(entry, source, executes, {"profile": profile} if executes else {}, nb, execution_mode(nb))
        )
    by_stem = {Path(p.entry).stem: p for p in plans}
    # a chapter's own value (-p CHAPTER:NAME) wins over the book's (-p NAME), whichever was given first
    for name, raw in sorted(overrides, key=lambda override: ":" in override[0]):
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
                raise BookError(
                    f"-p {name}: {plan.source.relative_to(root)} does not define {pname!r} in its "
                    f"parameters cell (it defines: {', '.join(defined.get(plan.entry, {})) or 'nothing'})"
                )
            check_parameter_type(name, value, defined[plan.entry][pname], annotated[plan.entry].get(pname))
            plan.parameters[pname] = value
        else:
            if name == "profile":
                raise BookError("give the profile with --profile, not -p profile")
            targets = [p for p in plans if name in defined.get(p.entry, {})]
            if not targets and len(plans) == 1:
                only = plans[0]
                raise BookError(
                    f"-p {name}: {only.source.relative_to(root)} does not define {name!r} in its "
                    f"parameters cell (it defines: {', '.join(defined.get(only.entry, {})) or 'nothing'})"
                )
            if not targets:
                raise BookError(f"-p {name}: no chapter in this run defines {name!r} in its parameters cell")
            for plan in targets:
                check_parameter_type(name, value, defined[plan.entry][name], annotated[plan.entry].get(name))
                plan.parameters[name] = value
    for plan in plans:
        if plan.executes:
            check_chapter_values(plan, profile)
            for name in FOLDER_PARAMETERS:  # a plan's parameters are the profile and what -p gave it
                if isinstance(plan.parameters.get(name), str):
                    plan.parameters[name] = folder_parameter(root, plan, name, plan.parameters[name])
    return plans


def folder_parameter(root: Path, plan: ChapterPlan, name: str, value: str) -> str:
    """A folder parameter given on the command line (:data:`FOLDER_PARAMETERS`), as the chapter's kernel, which runs
    in the chapter's folder, must be given it: a relative path (to the working folder) made relative to the
    chapter's folder, an absolute one (or ``~/...``) kept; an empty one (none given) kept. One the chapter writes
    into is refused inside the sources or a build's records."""
    import os

    from .safety import check_output

    if not value.strip():
        return value
    given = Path(value).expanduser()
    target = Path(os.path.abspath(given))
    if FOLDER_PARAMETERS[name] == "written":
        check_output(given, root, f"-p {name}")
        if target.exists() and not target.is_dir():
            raise BookError(f"-p {name} {given}: not a folder (a file stands there)")
    if given.is_absolute():
        return str(given)
    return os.path.relpath(target, plan.source.parent.resolve())


def check_chapter_values(plan: ChapterPlan, profile: str) -> None:
    """Refuse, before a kernel starts, the values a chapter would refuse in its first cells: a profile of its own
    (``-p CHAPTER:profile``) that is not a book profile (the claims' test-only ``tiny`` profile need not reproduce
    a verdict, and its verdicts must not reach the ledger), a negative seed, and knobs its profile table does not
    have or of another type (only when ``knobs`` are given: that imports the chapter's claims module)."""
    stem = Path(plan.entry).stem
    own = plan.parameters.get("profile", profile)
    if own not in PROFILES:
        raise BookError(f"-p {stem}:profile {own!r}: unknown profile; choose one of {', '.join(PROFILES)}")
    seed = plan.parameters.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool) and seed < 0:
        raise BookError(f"-p seed {seed}: a seed is an integer >= 0")
    knobs = plan.parameters.get("knobs")
    if knobs is None:
        return
    from ..claims.registry import CHAPTER_MODULES, chapter_claims

    if stem not in CHAPTER_MODULES or not isinstance(knobs, dict):
        return  # a chapter without a claims module checks its own; the type was checked above
    try:
        chapter_claims(stem).profile.resolve(own, knobs)
    except (TypeError, ValueError) as exc:
        raise BookError(f"-p knobs: {plan.source.name}: {exc}") from None


def select_entries(root: Path, all_entries: list[str], only: list[str] | None, html: bool) -> list[str]:
    """The TOC entries a run executes: all, or those named by ``--only``. When HTML is built, an ``--only``
    selection also gets the pages the HTML needs: the in-process pages (the status page, the ledger), which
    report on the build (the HTML would otherwise show what they said of an earlier one, a chapter that has just
    failed as ok), and the pages without code (the book's root page, the references), which are only converted,
    so that a fresh build folder renders the chapter on its own (see :func:`resnet_theory.book.html_build.
    staged_toc` for the chapters it leaves out)."""
    if not only:
        return list(all_entries)
    wanted = [Path(c).with_suffix("").as_posix() for c in only]
    unknown = [c for c, w in zip(only, wanted) if c not in all_entries and w not in all_entries]
    if unknown:
        raise BookError(f"not in _toc.yml: {', '.join(unknown)}")
    if html:
        import jupytext

        for e in all_entries:
            if e not in wanted:
                nb = jupytext.read(chapter_source(root, e), fmt="md:myst")
                if e == all_entries[0] or not has_code(nb) or execution_mode(nb) == "in-process":
                    wanted.append(e)
    return [e for e in all_entries if e in wanted]
