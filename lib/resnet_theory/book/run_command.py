"""The executor's ``run`` command: one chapter, always executed, into the build folder or to ``-o x.ipynb``.

Into the build folder (no ``-o``) it records the chapter's cache key and updates the report, as ``execute``
does (:mod:`resnet_theory.book.build`); with ``-o`` it writes the notebook and, beside it, the chapter's claims
file ``x.claims.json``, refusing before anything runs a claims file there that an earlier run of the chapter
did not write. After the chapter finishes it prints the verdicts it recorded, one line per claim.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..outputs import file_in_the_way
from .build import _attempt, _interrupted_result
from .cache import cache_components
from .claims_files import ClaimsFileError, read_claims_file
from .environment import environment
from .execute import execute_chapter, previous_outputs, remove_stale_partials, stopped_before_running
from .files import claims_path, read_json_object
from .plan import ChapterPlan, plan_chapters
from .report import ChapterResult, check_report, describe_failure, load_report, write_report
from .safety import BuildLock, check_output
from .toc import BookError, toc_files


def _chapter_entry(root: Path, chapter: str) -> tuple[str, list[str]]:
    """The TOC entry of ``chapter`` (a path relative to the book's root or to the working folder), and the TOC."""
    path = Path(chapter)
    if not path.is_absolute() and (root / path).exists():
        path = root / path  # relative to the book's root first, then to the working folder
    if path.is_absolute() or path.exists():
        if not path.resolve().is_relative_to(root):
            raise BookError(f"{chapter} is not inside the book's root {root}")
        path = path.resolve().relative_to(root)
    entry = path.with_suffix("").as_posix()
    entries = toc_files(root)
    if entry not in entries:
        raise BookError(f"{chapter} is not a chapter in {root / '_toc.yml'}")
    return entry, entries


def _check_run_output(root: Path, output: Path | None, default: Path, build_dir: Path, entry: str = "") -> None:
    """``run -o``: a notebook file, somewhere that holds no source and no other chapter's outputs, and whose
    claims file beside it (``x.claims.json`` for ``x.ipynb``, which the run writes, or removes when the chapter
    records no claims) is absent or was written by an earlier run of this chapter."""
    if output is None:
        return
    if output.exists() and not output.is_file():
        what = "a folder" if output.is_dir() else "a device or other special file"
        raise BookError(f"-o {output}: not a regular file ({what} stands there); give the notebook's path")
    if blocked := file_in_the_way(output):  # the folder above it, or one further up, is a file
        raise BookError(f"-o {output}: {blocked}")
    check_output(output, root, "-o", suffix=".ipynb", own=default, build_dirs=(build_dir,))
    _check_claims_beside(claims_path(output), entry)


def _check_claims_beside(claims: Path, entry: str) -> None:
    """Refuse a run whose claims file would replace a file the executor did not write: one is taken as the
    executor's when it parses as a claims file (:func:`~resnet_theory.book.claims_files.read_claims_file`) whose
    ``chapter`` is this chapter's name (what its ledger writes)."""
    if not claims.exists() and not claims.is_symlink():
        return
    why = "it is not a file"
    if claims.is_file() and not claims.is_symlink():
        try:
            read_claims_file(claims)
            data = read_json_object(claims) or {}
            if data.get("chapter") == Path(entry).name:
                return
            why = f"it is a claims file of chapter {data.get('chapter')!r}, not of {Path(entry).name!r}"
        except ClaimsFileError:
            why = "it is not a claims file"
    raise BookError(
        f"-o: the run writes its claims to {claims}, which exists and was not written by an earlier run of "
        f"{entry} ({why}): move it aside or give another -o"
    )


def print_verdicts(claims: Path) -> None:
    """One line per claim the chapter recorded (``id  verdict``), from its claims file; a line saying there are
    none when it recorded none."""
    if not claims.is_file():
        print("[book] verdicts: the chapter recorded no claims")
        return
    try:
        recorded, _ = read_claims_file(claims)
    except ClaimsFileError as exc:
        print(f"[book] verdicts: {exc}", file=sys.stderr)
        return
    print(f"[book] verdicts recorded in {claims} ({len(recorded)} claims):")
    width = max((len(c.id) for c in recorded), default=0)
    for c in recorded:
        print(f"  {c.id:<{width}}  {c.verdict}")


def run_chapter(
    root: Path, chapter: str, profile: str, overrides: list[tuple[str, str]], output: Path | None, build_dir: Path
) -> int:
    """Execute one chapter (always, whatever the cache holds). Into the build folder (no ``-o``), it also
    records the chapter's cache key and updates the report, so a later ``execute`` can reuse it; the build
    folder is then locked for the length of the run."""
    with stopped_before_running():
        entry, entries = _chapter_entry(root, chapter)
        (plan,) = plan_chapters(root, [entry], profile, overrides)
        default = build_dir / "executed" / f"{entry}.ipynb"
        _check_run_output(root, output, default, build_dir, entry)
    in_build = output is None or output.resolve() == default.resolve()
    output = output or default
    if not in_build:  # two runs to one -o would leave one's notebook beside the other's claims
        with BuildLock(output.parent, output=output):
            return _run_one(root, plan, output, build_dir, profile, entries, in_build=False)
    with BuildLock(build_dir):
        check_report(build_dir / "executed" / "report.json")
        return _run_one(root, plan, output, build_dir, profile, entries, in_build=True)


def _run_one(
    root: Path, plan: ChapterPlan, output: Path, build_dir: Path, profile: str, entries: list[str], in_build: bool
) -> int:
    remove_stale_partials(output)
    env = environment()
    device = env["device"]
    components = cache_components(root, plan.notebook, plan.parameters, device) if in_build and plan.executes else None
    report = build_dir / "executed" / "report.json"
    attempt = _attempt("run", [plan], profile, False)
    if in_build and not plan.in_process:  # the report says the run started: a run killed outright shows
        write_report(report, [], profile, env, state="running", attempt={**attempt, "finished": []}, order=entries)
    start = time.perf_counter()
    try:
        result = execute_chapter(plan, output, build_dir, profile, device, components, reason="run on request")
    except KeyboardInterrupt as exc:
        signal_name = getattr(exc, "signal_name", "SIGINT")
        if in_build:
            result = _interrupted_result(
                plan, output, build_dir, profile, device, signal_name, time.perf_counter() - start
            )
            write_report(
                report,
                [result],
                profile,
                env,
                state="interrupted",
                attempt={**attempt, "finished": [plan.entry], "signal": signal_name, "interrupted_chapter": plan.entry},
                order=entries,
            )
        print(
            f"[book] {plan.source.relative_to(root)}: interrupted ({signal_name}); "
            f"{_kept(output, previous_outputs(output, None))}",
            file=sys.stderr,
        )
        return 130 if signal_name == "SIGINT" else 143
    if in_build:
        _report_run(report, result, plan, profile, env, attempt, entries)
    print(f"[book] {plan.source.relative_to(root)}: {result.status} in {result.seconds:.1f} s -> {output}")
    if result.status == "ok" and plan.executes:
        print_verdicts(claims_path(output))
    if result.status == "failed":
        print(f"[book] FAILED: {describe_failure(result)}; {_kept(output, result.outputs)}", file=sys.stderr)
        return 1
    return 0


def _kept(output: Path, outputs: str) -> str:
    """What a stopped or failed run left at ``output``: ``X keeps the previous outputs (...)``, or, where there
    were none, ``nothing was written to X``."""
    if outputs.startswith("none"):
        return f"nothing was written to {output}{outputs[4:]}"
    return f"{output} keeps {outputs}"


def _report_run(
    report: Path, result: ChapterResult, plan: ChapterPlan, profile: str, env: dict, attempt: dict, entries: list[str]
) -> None:
    previous = load_report(report.parent.parent) if report.is_file() else None
    if plan.in_process and result.status == "ok" and previous is not None:
        # Re-rendering the status page (or the ledger) reports on the last run: its state and attempt (a
        # failure, an interruption, the pages not reached) stay; only the page's own row is updated.
        write_report(
            report,
            [result],
            previous.get("profile", profile),
            previous.get("environment", env),
            state=previous.get("state", "complete"),
            attempt=previous.get("attempt"),
            order=entries,
        )
    else:
        write_report(
            report,
            [result],
            profile,
            env,
            state="failed" if result.status == "failed" else "complete",
            attempt={**attempt, "finished": [plan.entry]},
            order=entries,
        )
