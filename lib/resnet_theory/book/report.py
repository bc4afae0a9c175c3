"""The run's report: one :class:`ChapterResult` per page, ``report.json``, and the summary printed at the end.

The report is written while the run goes on (``state`` ``running``, with the pages ``finished`` so far) and
again when it ends; the status page (:mod:`resnet_theory.book.status`) renders it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .claims_files import BUILD_DIR_ENV
from .files import read_json_object, write_atomic
from .toc import BookError


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
    #: CPU seconds of the execution (the kernel and its worker processes, user and system time together);
    #: None where nothing was executed or it could not be measured.
    cpu_seconds: float | None = None


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def describe_failure(result: ChapterResult) -> str:
    err = result.error or {}
    if isinstance(err.get("while"), str):  # not in a cell: writing the executed notebook (a full disk)
        return f"chapter {result.source} failed {err['while']}: {err.get('ename')}: {err.get('evalue')}"
    where = (
        f"code cell {err.get('code_cell')}"
        if err.get("code_cell") is not None
        else "a cell"
        if err.get("execution_count") is not None
        else "before any cell ran"
    )
    if err.get("execution_count") is not None:
        where += f" (execution count {err['execution_count']})"
    source = (err.get("cell_source") or "").strip().splitlines()
    first = f"\n    cell begins: {source[0][:120]}" if source else ""
    return f"chapter {result.source} failed in {where}: {err.get('ename')}: {err.get('evalue')}{first}"


def summary_table(results: list[ChapterResult]) -> str:
    """A plain-text table of the run: one line per page (status, executed or reused, wall and CPU seconds),
    then the totals."""
    width = max((len(r.chapter) for r in results), default=4)
    lines = [f"{'page':<{width}}  {'status':<11} {'run':<9} {'seconds':>8} {'CPU s':>8}"]
    for r in results:
        timed = r.run == "executed" or r.status in ("failed", "interrupted")
        seconds = f"{r.seconds:8.1f}" if timed else f"{'-':>8}"
        cpu = f"{r.cpu_seconds:8.1f}" if timed and r.cpu_seconds is not None else f"{'-':>8}"
        lines.append(f"{r.chapter:<{width}}  {r.status:<11} {r.run:<9} {seconds} {cpu}")
    total = sum(r.seconds for r in results if r.run != "reused")
    cpu_total = sum(r.cpu_seconds or 0.0 for r in results if r.run != "reused")
    lines.append(f"{'total':<{width}}  {'':<11} {'':<9} {total:8.1f} {cpu_total:8.1f}")
    return "\n".join(lines)


def is_report(report) -> bool:
    """Whether ``report`` (parsed JSON) has the shape the executor writes: an object whose ``chapters`` are
    objects each naming its page, with an ``environment`` object and an ``attempt`` object."""
    return (
        isinstance(report, dict)
        and isinstance(report.get("chapters"), list)
        and all(isinstance(c, dict) and isinstance(c.get("chapter"), str) for c in report["chapters"])
        and all(isinstance(c.get("error"), dict | None) for c in report["chapters"])
        and _is_environment(report.get("environment"))
        and _is_attempt(report.get("attempt", {}))
    )


def _is_attempt(attempt) -> bool:
    """The run's attempt as the executor writes it, field by field where the status page reads one: its pages
    (``chapters``, ``finished``, ``interrupted_chapters``) lists of names, its ``parameters`` an object of pages'
    objects, its ``pid`` and ``html_exit`` integers, ``started`` and ``interrupted_chapter`` text (an edited
    report with a list for ``parameters`` is damaged, not a page that fails with a traceback)."""

    def names(value) -> bool:
        return value is None or isinstance(value, list) and all(isinstance(v, str) for v in value)

    def whole(value) -> bool:
        return value is None or isinstance(value, int) and not isinstance(value, bool)

    if attempt is None:
        return True
    if not isinstance(attempt, dict):
        return False
    parameters = attempt.get("parameters")
    by_page = parameters is None or (
        isinstance(parameters, dict) and all(isinstance(v, dict) for v in parameters.values())
    )
    return (
        all(names(attempt.get(key)) for key in ("chapters", "finished", "interrupted_chapters"))
        and by_page
        and all(whole(attempt.get(key)) for key in ("pid", "html_exit"))
        and all(isinstance(attempt.get(key), str | None) for key in ("started", "interrupted_chapter", "signal"))
    )


def _is_environment(env) -> bool:
    """The environment the status page shows: its Python, platform and device as text, its packages an object
    of names and versions (an edited report that lacks one is damaged, not a page that fails with a traceback)."""
    return (
        isinstance(env, dict)
        and all(isinstance(env.get(key), str) for key in ("python", "platform", "device"))
        and isinstance(env.get("packages"), dict)
        and all(isinstance(k, str) for k in env["packages"])
    )


def damaged_report(path: Path) -> BookError:
    return BookError(
        f"{path} is not an execution report (damaged, truncated or edited?); it is not trimmed or replaced: "
        f"move it aside (or delete it) and run again, which writes a new one"
    )


def check_report(path: Path) -> None:
    """Refuse (one-line :class:`BookError`) a report at ``path`` that exists but is not one the executor wrote;
    called before a run starts, so a damaged report never silently loses the rows of the pages it describes."""
    if path.exists() and not is_report(read_json_object(path)):
        raise damaged_report(path)


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


def write_report(
    path: Path,
    results: list[ChapterResult],
    profile: str,
    env: dict,
    *,
    state: str = "complete",
    attempt: dict | None = None,
    order: list[str] | None = None,
) -> None:
    """Write ``report.json``: this run's pages merged into the previous report's (a partial run keeps the rest).

    ``state`` says how the run ended: ``running``, ``complete``, ``failed`` or ``interrupted``; ``attempt``
    records what was asked (command, chapters, profile, parameters, and the signal for an interruption).
    Pages are listed in ``order`` (the TOC) when given.
    """
    with _ReportLock(path):
        check_report(path)  # a damaged report is refused, never trimmed to the rows that still read
        previous = read_json_object(path) or {}
        chapters: dict[str, dict] = {c["chapter"]: c for c in previous.get("chapters", [])}
        for r in results:
            chapters[r.chapter] = asdict(r)
        names = list(chapters)
        if order is not None:
            names = [n for n in order if n in chapters]
        data = {
            "profile": profile,
            "environment": env,
            "finished": now(),
            "state": state,
            "attempt": attempt or {},
            "chapters": [chapters[n] for n in names],
        }
        write_atomic(path, json.dumps(data, indent=1, default=str))


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
    if not is_report(report):
        raise damaged_report(path)
    return report
