"""The executor's ``execute`` command: the book, or the pages named by ``--only`` (``run``: :mod:`.run_command`).

``execute`` reads ``_toc.yml``, brings every chapter's executed notebook in ``_build/executed/`` up to date
(reused from the cache or executed: :func:`reuse_or_execute`), writes ``_build/executed/report.json``, and
builds HTML from the executed notebooks (:mod:`resnet_theory.book.html_build`). Pages without code cells are
converted, not executed. ``book/ledger.md`` and ``book/status.md`` come last in the TOC, so they see every
chapter's claims and times. The claims file of a chapter that is no longer in the TOC is moved aside, to
``_build/removed/``, so the ledger does not refuse it.

**The run's own outcome on the status page.** While the run goes on, the report's ``state`` is ``running``
and its ``attempt`` lists the pages ``finished`` so far, so a page rendered mid-run (the status page) can
say which pages had failed by then and which had not yet been executed. The in-process pages are rendered
again at the end of the run, after the report has its final state, when that matters: when a page failed
(the status page then says the run failed, and which pages) or when pages that are not in-process came
after them in the run, executed, reused or converted (they then gather those pages' results too, and the
status page no longer names them as not yet executed).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import repository
from .cache import (
    cache_components,
    cache_key,
    load_cache_record,
    read_cache_record,
    rerender_from_cache,
    what_changed,
    write_cache_record,
)
from .environment import environment
from .execute import execute_chapter, previous_outputs, remove_stale_partials, stopped_before_running
from .files import file_sha, read_json_object
from .html_build import build_html
from .imports import ModuleIndex
from .plan import ChapterPlan, plan_chapters, select_entries
from .report import ChapterResult, check_report, describe_failure, now, summary_table, write_report
from .safety import BuildLock
from .side_by_side import SideBySide, check_jobs, default_jobs
from .toc import BookError, toc_files


def reuse_or_execute(
    root: Path,
    build_dir: Path,
    plan: ChapterPlan,
    output: Path,
    profile: str,
    device: str,
    force: bool,
    modules: ModuleIndex,
    execute=execute_chapter,
) -> ChapterResult | None:
    """Reuse the chapter's cached outputs when its key matches (re-rendering changed prose), else execute it with
    a kernel by calling ``execute`` (:func:`execute_chapter`, or :meth:`SideBySide.submit`, which queues it and
    returns None)."""
    if not plan.executes:
        return execute_chapter(plan, output, build_dir, profile, device)
    if plan.in_process:
        return execute_chapter(
            plan,
            output,
            build_dir,
            profile,
            device,
            reason="executed in the executor's process, without a kernel (it gathers the other pages' results)",
        )
    components = cache_components(root, plan.notebook, plan.parameters, device, modules)
    if plan.always:
        return execute(
            plan,
            output,
            build_dir,
            profile,
            device,
            components,
            reason="always executed (it gathers the other pages' results)",
        )
    key = cache_key(components)
    record = load_cache_record(build_dir, plan.entry, output)
    if force:
        reason = "forced (--force)"
    elif record is not None and record.get("key") == key:
        start = time.perf_counter()
        prose = "unchanged"
        if record.get("source_sha") != file_sha(plan.source):
            if rerender_from_cache(plan.source, output):
                record = {**record, "source_sha": file_sha(plan.source), "notebook_sha": file_sha(output)}
                write_cache_record(build_dir, plan.entry, record)
                prose = "re-rendered"
            else:
                record = None
        if record is not None:
            return ChapterResult(
                plan.entry,
                str(plan.source),
                "ok",
                round(time.perf_counter() - start, 2),
                plan.parameters.get("profile", profile),
                plan.parameters,
                record.get("device", device),
                str(output),
                run="reused",
                executed_at=record.get("executed_at"),
                reason=f"code, parameters, modules and environment unchanged; prose {prose}",
            )
        reason = "cached notebook does not match the code cells"
    else:
        old = read_cache_record(build_dir, plan.entry)
        reason = what_changed((old or {}).get("components"), components)
        if old is not None and record is None and old.get("key") == key:
            reason = "cached outputs were changed or removed since they were recorded"
    return execute(plan, output, build_dir, profile, device, components, reason=reason)


def _interrupted_result(
    plan: ChapterPlan, output: Path, build_dir: Path, profile: str, device: str, signal_name: str, seconds: float
) -> ChapterResult:
    record = read_cache_record(build_dir, plan.entry)
    return ChapterResult(
        plan.entry,
        str(plan.source),
        "interrupted",
        round(seconds, 2),
        plan.parameters.get("profile", profile),
        plan.parameters,
        device,
        str(output),
        {
            "ename": signal_name,
            "evalue": "interrupted by " + signal_name,
            "code_cell": None,
            "execution_count": None,
            "cell_source": "",
        },
        run="not run",
        executed_at=(record or {}).get("executed_at") if output.is_file() else None,
        outputs=previous_outputs(output, record),
    )


def _finished(results: list[ChapterResult]) -> list[str]:
    """The pages this run has finished (whatever their status), as the report's ``attempt["finished"]``."""
    return [r.chapter for r in results]


def _attempt(command: str, plans: list[ChapterPlan], profile: str, force: bool) -> dict:
    """What a run was asked to do, as the report's ``attempt``; ``pid`` is the executor's process, by which the
    status page tells a run still going on from one that was killed before it could say how it ended."""
    return {
        "command": command,
        "profile": profile,
        "force": force,
        "pid": os.getpid(),
        "started": now(),
        "chapters": [p.entry for p in plans],
        "parameters": {p.entry: p.parameters for p in plans if p.executes},
    }


def execute_book(
    root: Path,
    build_dir: Path,
    profile: str,
    overrides: list[tuple[str, str]],
    html: bool = True,
    only: list[str] | None = None,
    force: bool = False,
    jobs: int | None = None,
) -> int:
    with stopped_before_running():
        if html:
            check_html_folder(root, build_dir)
        jobs = default_jobs() if jobs is None else check_jobs(jobs)
        all_entries = toc_files(root)
        entries = select_entries(root, all_entries, only, html)
        plans = plan_chapters(root, entries, profile, overrides)
        if html:
            repository.from_environment(root)  # a malformed repository address is refused before anything runs
    with BuildLock(build_dir):
        return _execute_plans(root, build_dir, profile, plans, all_entries, html, force, jobs)


def _execute_plans(
    root: Path,
    build_dir: Path,
    profile: str,
    plans: list[ChapterPlan],
    all_entries: list[str],
    html: bool,
    force: bool,
    jobs: int = 1,
) -> int:
    """``execute`` once its request is checked and it holds the build folder: the report first says the run
    has started (a run killed outright is then seen as started and never finished), then each page."""
    executed = build_dir / "executed"
    check_report(executed / "report.json")
    executed.mkdir(parents=True, exist_ok=True)
    for plan in plans:
        remove_stale_partials(executed / f"{plan.entry}.ipynb")
    set_aside_removed_claims(build_dir, all_entries)
    run = _BookRun(root, build_dir, profile, environment(), all_entries, _attempt("execute", plans, profile, force))
    run.write_report([], "running")
    modules = ModuleIndex(root)
    results: list[ChapterResult] = []
    if jobs == 1:
        for plan in plans:
            output = executed / f"{plan.entry}.ipynb"
            start = time.perf_counter()
            try:
                result = reuse_or_execute(root, build_dir, plan, output, profile, run.device, force, modules)
            except KeyboardInterrupt as exc:
                signal_name = getattr(exc, "signal_name", "SIGINT")
                return _stop(run, results, [(plan, output, time.perf_counter() - start)], signal_name)
            results.append(result)
            run.write_report(results, "running")
            _say_done(root, plan, result)
    elif (code := _execute_side_by_side(run, plans, results, modules, force, jobs)) is not None:
        return code
    results.sort(key=lambda r: [p.entry for p in plans].index(r.chapter))
    during = "after the pages were executed, while the ledger and status pages were rendered again"
    try:
        failures = _render_gathering_pages_again(run, plans, results)
        run.write_report(results, "failed" if failures else "complete")
        during = "while the HTML was built"
        code = _build_html(root, build_dir) if html else 0
    except KeyboardInterrupt as exc:  # every page's outputs are whole; the run says where it stopped
        return _stop(run, results, [], getattr(exc, "signal_name", "SIGINT"), during=during)
    if code:
        _html_failed(run, plans, results, code)
    print(summary_table(results))
    for r in failures:
        print(f"[book] FAILED: {describe_failure(r)}", file=sys.stderr)
    if code:
        print(f"[book] FAILED: the HTML build (exit {code}); the status page says so", file=sys.stderr)
    print(f"[book] report: {run.report.resolve()}")
    return 1 if failures or code else 0


@dataclass
class _BookRun:
    """One ``execute``: where and with what it writes its report as it goes."""

    root: Path
    build_dir: Path
    profile: str
    env: dict
    #: The TOC's entries: the report lists its pages in this order.
    order: list[str]
    attempt: dict

    @property
    def device(self) -> str:
        return self.env["device"]

    @property
    def report(self) -> Path:
        return self.build_dir / "executed" / "report.json"

    def write_report(self, results: list[ChapterResult], state: str, **attempt) -> None:
        write_report(
            self.report,
            results,
            self.profile,
            self.env,
            state=state,
            attempt={**self.attempt, "finished": _finished(results), **attempt},
            order=self.order,
        )


def _execute_side_by_side(
    run: _BookRun, plans: list[ChapterPlan], results: list[ChapterResult], modules: ModuleIndex, force: bool, jobs: int
) -> int | None:
    """The pages of ``plans`` with up to ``jobs`` chapters executing at once (:mod:`.side_by_side`); the pages
    executed in this process (in-process, converted) wait for the chapters before them. Fills ``results`` as
    pages finish; returns the exit code of an interrupted run, else None."""
    executed = run.build_dir / "executed"

    def done(plan: ChapterPlan, result: ChapterResult) -> None:
        results.append(result)
        run.write_report(results, "running")
        _say_done(run.root, plan, result)

    with SideBySide(run.build_dir, jobs, read_json_object(run.report)) as pool:
        here = None  # the page this process is executing itself
        try:
            for plan in plans:
                output = executed / f"{plan.entry}.ipynb"
                if plan.in_process:
                    pool.drain(done)
                here = (plan, output, time.perf_counter())
                args = (run.root, run.build_dir, plan, output, run.profile, run.device, force, modules)
                result = reuse_or_execute(*args, execute=pool.submit)
                here = None
                if result is not None:
                    done(plan, result)
            pool.drain(done)
        except KeyboardInterrupt as exc:
            signal_name = getattr(exc, "signal_name", "SIGINT")
            stopped, finished = pool.stop(signal_name)
            for plan, result in finished:
                done(plan, result)
            if here is not None:
                stopped.append((here[0], here[1], time.perf_counter() - here[2]))
            return _stop(run, results, stopped, signal_name)
    return None


def _stop(
    run: _BookRun,
    results: list[ChapterResult],
    stopped: list[tuple[ChapterPlan, Path, float]],
    signal_name: str,
    during: str = "between pages",
) -> int:
    """The run was interrupted while executing the pages ``stopped`` (plan, output, seconds), or, with none,
    ``during`` what: report it, say so, build no HTML."""
    for plan, output, seconds in stopped:
        result = _interrupted_result(plan, output, run.build_dir, run.profile, run.device, signal_name, seconds)
        results.append(result)
        print(
            f"[book] interrupted ({signal_name}) while executing {plan.source.relative_to(run.root)}; "
            f"its page keeps {result.outputs}; no HTML built",
            file=sys.stderr,
            flush=True,
        )
    names = [plan.entry for plan, _, _ in stopped]
    run.write_report(
        results,
        "interrupted",
        signal=signal_name,
        interrupted_chapter=names[0] if names else None,
        interrupted_chapters=names,
        **({} if names else {"interrupted_during": during}),
    )
    if not names:
        print(f"[book] interrupted ({signal_name}) {during}; no HTML built", file=sys.stderr, flush=True)
    print(summary_table(results))
    print(f"[book] report: {run.report.resolve()}")
    return 130 if signal_name == "SIGINT" else 143


def _say_done(root: Path, plan: ChapterPlan, result: ChapterResult) -> None:
    verb = {"executed": "executed", "reused": "reused", "converted": "converted"}.get(result.run, result.status)
    print(
        f"[book] {plan.source.relative_to(root)}: {verb}"
        + (f" in {result.seconds:.1f} s" if result.run == "executed" else "")
        + (f" ({result.cpu_seconds:.1f} CPU s)" if result.run == "executed" and result.cpu_seconds is not None else "")
        + (f" ({result.reason})" if result.reason else ""),
        flush=True,
    )
    if result.status == "failed":
        print(f"[book]   {describe_failure(result)}; the page shows {result.outputs}", file=sys.stderr, flush=True)


def _render_gathering_pages_again(
    run: _BookRun, plans: list[ChapterPlan], results: list[ChapterResult]
) -> list[ChapterResult]:
    """Render the in-process pages again where their first rendering is out of date; the failures of the run.

    The in-process pages (the status page, the ledger) were rendered from a report that said "running",
    and before the pages after them: render them again, one at a time, each from the report as it stands
    then (the run's final state, with the pages rendered again before it). A page is rendered again once
    more when one rendered again after it fails (the status page must then say the run failed); one that
    failed keeps its failure and the outputs it showed.
    """
    failures = [r for r in results if r.status == "failed"]
    rendered_with: dict[int, int] = {}  # page index -> how many pages had failed when it was rendered again
    while stale := [
        i
        for i, plan in enumerate(plans)
        if plan.in_process
        and results[i].status == "ok"
        and rendered_with.get(i) != len(failures)
        and (failures or any(not later.in_process for later in plans[i + 1 :]))
    ]:
        i, plan = stale[0], plans[stale[0]]
        run.write_report(results, "failed" if failures else "complete")
        rendered_with[i] = len(failures)
        results[i] = execute_chapter(
            plan,
            run.build_dir / "executed" / f"{plan.entry}.ipynb",
            run.build_dir,
            run.profile,
            run.device,
            reason="rendered again at the end of the run, from its final report",
        )
        print(f"[book] {plan.source.relative_to(run.root)}: {results[i].status}, {results[i].reason}", flush=True)
        failures = [r for r in results if r.status == "failed"]
    return failures


def _html_failed(run: _BookRun, plans: list[ChapterPlan], results: list[ChapterResult], code: int) -> None:
    """The HTML build failed after the status page was rendered from a run that had not failed (yet): the
    report says the run failed and why (``attempt["html_exit"]``), the in-process pages are rendered again from
    it, and the HTML is built again, so that the status page it holds never says ok for a run that failed."""
    run.attempt["html_exit"] = code
    run.write_report(results, "failed")
    for i, plan in enumerate(plans):
        if plan.in_process and results[i].status == "ok":
            results[i] = execute_chapter(
                plan,
                run.build_dir / "executed" / f"{plan.entry}.ipynb",
                run.build_dir,
                run.profile,
                run.device,
                reason="rendered again after the HTML build failed",
            )
    run.write_report(results, "failed")
    print("[book] the HTML build failed: the status page is rendered again to say so, and the HTML built again")
    _build_html(run.root, run.build_dir)


#: What a build folder may hold before its first ``execute``: the lock, and what ``claims verify --record`` writes.
_BEFORE_A_BUILD = {".lock", "claims-across-seeds.json", "claims-across-seeds.log"}


def check_html_folder(root: Path, build_dir: Path) -> None:
    """Refuse, before anything runs, a ``--build-dir`` that is an existing folder of something else than builds
    (neither the book's ``_build`` nor a folder with ``executed/`` or ``cache/``, and not empty): its ``html/`` would
    be deleted and replaced by the HTML build, its other files mixed with the build's."""
    build_dir = Path(build_dir)
    if build_dir.resolve() == (root / "_build").resolve() or not build_dir.is_dir():
        return
    if (build_dir / "executed").is_dir() or (build_dir / "cache").is_dir():
        return
    others = sorted(p.name for p in build_dir.iterdir() if p.name not in _BEFORE_A_BUILD)
    if others:
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise BookError(
            f"--build-dir {build_dir}: a folder holding other files ({shown}), not a build: the HTML build would "
            f"replace its html/ and mix its files with the build's; give a new or empty folder"
        )


def _build_html(root: Path, build_dir: Path) -> int:
    start = time.perf_counter()
    code, index = build_html(root, build_dir)
    if code == 0:
        print(f"[book] HTML built in {time.perf_counter() - start:.1f} s: {index.resolve()}")
    else:
        print(f"[book] the HTML build failed (exit {code}); see the warnings above", file=sys.stderr)
    return code


def set_aside_removed_claims(build_dir: Path, entries: list[str]) -> list[Path]:
    """Move the claims file of every chapter that is no longer in the TOC (a removed or renamed chapter) from
    ``<build>/executed`` to ``<build>/removed``, saying so; return where they went.

    The ledger refuses the claims of a chapter that is not in the book; moved aside, the file is kept for a
    look (a chapter that comes back is executed again: its execution record no longer matches)."""
    executed = build_dir / "executed"
    moved = []
    for path in sorted(executed.rglob("*.claims.json")):
        if path.name.startswith("."):  # a chapter's temporaries (see remove_stale_partials), not its claims
            continue
        entry = path.relative_to(executed).as_posix()[: -len(".claims.json")]
        if entry in entries:
            continue
        target = build_dir / "removed" / path.relative_to(executed)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
        print(f"[book] {entry} is no longer in _toc.yml: its claims file moved from {path} to {target}", flush=True)
        moved.append(target)
    return moved
