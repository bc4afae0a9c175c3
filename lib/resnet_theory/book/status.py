"""The status page: what the book executor recorded for each page of the last execution.

Reads ``<build>/executed/report.json`` (written by :mod:`resnet_theory.book.report`) and renders one row per page:
its status, whether this build executed it, reused the outputs of an earlier execution (the execution
cache) or did not run it at all (a row kept from an earlier build, e.g. after ``execute --only``: a page is
this build's only if the report's ``attempt["finished"]`` names it), and when those outputs were computed, the
wall time of this build's execution (n/a for a reused page or one this build did not run), profile,
parameters, device, and the failing cell where one failed; a column whose value is the same in every row (the
device, the profile, no parameters, no notes) is said once, in the table's caption (:func:`_table`), so that the
table fits the page's column at 1400 px; on a phone it scrolls inside its own box (``book.css``). Then the Python
version, package versions and device of the run, and the GPU check's committed measurements (:func:`gpu_html`).
A run that was interrupted or failed is said so first, with the pages that failed or were not reached (or
that its HTML build failed) and the parameters it was attempted with; a page rendered while its run was still
going on (the executor renders this page during the run, and again at its end when a page failed or pages came
after it) says so, with the pages that had failed by then and those not yet executed.
"""

from __future__ import annotations

import html

from .report import load_report

#: The TOC entry of the page that shows this table; its own row in a report is always the previous build's.
STATUS_PAGE = "book/status"

RUN_WORDS = {"executed": "executed", "reused": "reused", "converted": "no code", "not run": "not run"}


def _this_build(report: dict) -> set[str] | None:
    """The pages whose rows this build wrote: its attempt's ``finished`` (else, from an executor that did not
    record it, the attempt's ``chapters``); None for a report with no attempt at all (rows taken as they are)."""
    attempt = report.get("attempt") or {}
    pages = attempt.get("finished")
    if pages is None:
        pages = attempt.get("chapters")
    return None if pages is None else set(pages)


def _row(ch: dict, this_build: set[str] | None = None, pending: set[str] = frozenset()) -> list[str]:
    """One page's row: its cells (HTML, escaped), in the order of :data:`COLUMNS`. A page not in ``this_build``
    keeps a row from an earlier build: it is said to be not run in this build (not yet, when ``pending``), with when
    it was last executed, and no time of this build."""
    status = str(ch.get("status"))
    colour = {"ok": "ok", "failed": "failed", "interrupted": "failed"}.get(status, "other")  # book.css, both themes
    notes = []
    if ch.get("error"):
        err = ch["error"]
        notes.append(
            f"code cell {err.get('code_cell')}: {err.get('ename')}: {err.get('evalue')}"
            if status == "failed"
            else str(err.get("evalue"))
        )
    if ch.get("outputs"):
        notes.append(f"the page shows {ch['outputs']}")
    given = ch.get("parameters") if isinstance(ch.get("parameters"), dict) else {}
    params = ", ".join(f"{k}={v!r}" for k, v in given.items() if k != "profile")
    run = ch.get("run", "executed")
    executed_at = ch.get("executed_at") or ("" if run == "converted" else "never")
    word = RUN_WORDS.get(run, html.escape(str(run)))
    if this_build is not None and ch["chapter"] not in this_build:
        if run == "converted":
            last = "no code"
        else:
            last = f"last executed {html.escape(str(executed_at))}"
            if run != "executed" and run != "reused":  # an earlier build's attempt that failed or was stopped
                last = f"an earlier build's attempt: {html.escape(str(status))}; " + last
        word = f"{'not yet run' if ch['chapter'] in pending else 'not run'} in this build ({last})"
        seconds = "n/a"
        cpu = "n/a"
    else:
        timed = status != "static" and run != "reused"
        seconds = _seconds(ch.get("seconds")) if timed else "n/a"
        cpu = _seconds(ch.get("cpu_seconds")) if timed else "n/a"
    cells = [ch["chapter"], status, None, executed_at, seconds, cpu, ch.get("profile"), params, ch.get("device")]
    cells = ["" if c is None else html.escape(str(c)) for c in cells]
    cells[1] = f"<strong class='book-status-{colour}'>{cells[1]}</strong>"
    cells[2] = word  # built above from escaped parts
    return [*cells, html.escape("; ".join(notes))]


#: The status table's columns; those of :data:`SHARED` are shown once above the table when every row has the same
#: value (a build's device, its profile, its parameters), and left out when every row's is empty (no notes).
COLUMNS = (
    "page",
    "status",
    "this build",
    "outputs computed",
    "seconds",
    "CPU seconds",
    "profile",
    "parameters",
    "device",
    "notes",
)
SHARED = ("profile", "parameters", "device", "notes")


def _table(rows: list[list[str]]) -> str:
    """The status table (HTML) with the columns of :data:`SHARED` whose value is the same in every row left out and
    said once, in its caption above the rows: a device repeated in every row wrapped into four lines per row and
    widened the table past the page's column."""
    shared = {
        COLUMNS.index(name)
        for name in SHARED
        if rows and all(row[COLUMNS.index(name)] == rows[0][COLUMNS.index(name)] for row in rows)
    }
    said = []
    for i in sorted(shared):
        value = rows[0][i]
        if COLUMNS[i] == "parameters":
            said.append(f"parameters {value}" if value else "no parameters besides the profile")
        elif COLUMNS[i] != "notes" and value:
            said.append(f"{COLUMNS[i]} {value}")
    caption = f"<caption>Every page below: {'; '.join(said)}.</caption>" if said else ""
    keep = [i for i in range(len(COLUMNS)) if i not in shared]
    head = "<tr>" + "".join(f"<th>{html.escape(COLUMNS[i])}</th>" for i in keep) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{row[i]}</td>" for i in keep) + "</tr>" for row in rows)
    return f'<table class="book-status">{caption}{head}{body}</table>'


def _seconds(value) -> str:
    """A time in seconds to one decimal; n/a where none was recorded (or the report holds something else)."""
    return f"{value:.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "n/a"


def _pages(names: list[str], rows: dict[str, dict], why: bool = False) -> str:
    """``book/a, book/b`` (with each failure's cell and error when ``why``), escaped."""

    def one(name: str) -> str:
        err = (rows.get(name) or {}).get("error") or {}
        if why and err:
            return f"{name} (code cell {err.get('code_cell')}: {err.get('ename')}: {err.get('evalue')})"
        return name

    return html.escape(", ".join(one(n) for n in names))


def _attempt_note(report: dict, own_page: str = STATUS_PAGE) -> str:
    """What the run as a whole came to, said first: never that a run succeeded when it did not.

    A report written while the run goes on (``state`` ``running``: this page is rendered during the run)
    says so, with the pages that had failed by then and those not yet executed (their rows are an earlier
    execution's); a failed or interrupted run, with the pages that failed or were not reached. The pages of
    the run are the attempt's ``chapters``; those it had finished, its ``finished`` list (a report without
    one, from an older executor, names no page as pending, and a running one says its rows may be old).
    """
    state = report.get("state")
    attempt = report.get("attempt") or {}
    rows = {c.get("chapter"): c for c in report.get("chapters", [])}
    planned = [c for c in attempt.get("chapters") or [] if c != own_page]
    finished = attempt.get("finished")
    if finished is None:  # a report from an executor that did not record it: nothing can be said pending
        finished = planned
    failed = [c for c in planned if c in finished and rows.get(c, {}).get("status") == "failed"]
    pending = [c for c in planned if c not in finished]
    if state not in ("running", "interrupted", "failed") and not failed:
        return ""
    if state == "running" and not failed and not pending and attempt.get("finished") is not None:
        return ""  # every other page of the run had finished, none failed: the rows say it all
    started = html.escape(str(attempt.get("started", "?")))
    params = "; ".join(
        f"{page}: " + ", ".join(f"{k}={v!r}" for k, v in p.items())
        for page, p in (attempt.get("parameters") or {}).items()
    )
    if state == "running" and _gone(attempt.get("pid")):
        parts = [
            f"<strong>The last run (started {started}) never finished:</strong> its process "
            f"({html.escape(str(attempt.get('pid')))}) is gone without saying how the run ended (killed, or the "
            f"machine stopped)."
        ]
        if failed:
            parts.append(f"Failed before it stopped: {_pages(failed, rows, why=True)}.")
        if pending:
            parts.append(
                f"Not finished: {_pages(pending, rows)}; their rows below are from an earlier execution, or missing."
            )
        return f"<p class='book-run-note'>{' '.join(parts)}</p>"
    if state == "running":
        parts = [f"<strong>This page was rendered while its run (started {started}) was still in progress.</strong>"]
        if failed:
            parts.append(f"By then the run had failed: {_pages(failed, rows, why=True)} failed.")
        if pending:
            parts.append(
                f"Not yet executed or not yet finished: {_pages(pending, rows)}; their rows below "
                f"are from an earlier execution, or missing."
            )
        if attempt.get("finished") is None:
            parts.append("Which pages it had finished is not recorded: a row may be an earlier execution's.")
        return f"<p class='book-run-note'>{' '.join(parts)}</p>"
    if state == "interrupted":
        stopped = [c for c in attempt.get("interrupted_chapters") or [attempt.get("interrupted_chapter")] if c]
        where = f"while executing {', '.join(map(str, stopped))}" if stopped else None
        what = f"was interrupted ({attempt.get('signal', 'signal')}) " + (
            where or str(attempt.get("interrupted_during") or "between pages")
        )
    else:
        what = "failed"
    parts = [f"<strong>The last run {html.escape(what)}.</strong>"]
    if failed:
        parts.append(f"Failed: {_pages(failed, rows, why=True)}.")
    if attempt.get("html_exit"):
        parts.append(
            f"Its HTML build failed (exit {html.escape(str(attempt['html_exit']))}; the command's output names the "
            f"warnings), so the run failed although the rows below may all say ok: they are how each page executed."
        )
    stopped = attempt.get("interrupted_chapters") or [attempt.get("interrupted_chapter")]
    not_reached = [c for c in pending if c not in stopped]
    if not_reached:
        parts.append(f"Not reached: {_pages(not_reached, rows)}.")
    parts.append(
        f"It was started {started} with {html.escape(params or 'no parameters')}; "
        f"pages it did not finish keep their previous outputs."
    )
    return f"<p class='book-run-note'>{' '.join(parts)}</p>"


def _gone(pid) -> bool:
    """Whether the executor process ``pid`` recorded by a run is gone (not this process, and no process with that
    id exists); False when no pid was recorded or it cannot be told."""
    import os

    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):
        return False
    return False


def _profiles_note(report: dict) -> str:
    """The pages that ran with another profile than the run's (``-p CHAPTER:profile ...``), escaped; or ''."""
    this_build = _this_build(report)
    other = [
        f"{c['chapter']}: {c.get('profile')}"
        for c in report["chapters"]
        if c.get("profile") not in (None, report.get("profile"))
        and c.get("status") != "static"
        and (this_build is None or c["chapter"] in this_build)
    ]
    return f" (pages with a profile of their own: {html.escape('; '.join(other))})" if other else ""


def gpu_html(folder=None) -> str:
    """The GPU check's committed measurements (``book/data/gpu/``, :mod:`resnet_theory.engine.gpu_figures`): what
    the newest measured, with its device and versions, then every step of every file; or that there is none yet.
    A malformed file is said so in one line, naming it (the experiments chapter, which reads the same files,
    fails on it)."""
    from resnet_theory.engine import gpu_figures

    try:
        rows, steps = gpu_figures.measurement_rows(folder), gpu_figures.measurement_steps(folder)
    except gpu_figures.MeasurementError as exc:
        return f"<p><strong>GPU check.</strong> A committed measurement is refused: {html.escape(str(exc))}</p>"
    out = f"<p><strong>GPU check.</strong> {html.escape(gpu_figures.summary(rows, steps))}</p>"
    if not steps:
        return out
    head = "".join(f"<th>{h}</th>" for h in ("file", "device", "step", "status", "seconds", "what it measured"))
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(v))}</td>"
            for v in (s["file"], s["device"], s["step"], s["status"], _seconds(s["seconds"]), s["text"])
        )
        + "</tr>"
        for s in steps
    )
    return out + f'<table class="book-status book-gpu-check"><tr>{head}</tr>{body}</table>'


def status_html(report: dict, own_page: str = STATUS_PAGE, gpu_folder=None) -> str:
    this_build = _this_build(report)
    attempt = report.get("attempt") or {}
    pending = set(attempt.get("chapters") or []) - (this_build or set()) if report.get("state") == "running" else set()
    table = _table([_row(ch, this_build, pending) for ch in report["chapters"] if ch.get("chapter") != own_page])
    env = report["environment"]
    packages = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>" for k, v in env["packages"].items()
    )
    return (
        f"{_attempt_note(report, own_page)}"
        f"{table}"
        f"<p>This build ran with the <strong>{html.escape(str(report.get('profile')))}</strong> profile"
        f"{_profiles_note(report)}. "
        f"A page marked "
        f"<em>reused</em> was not executed for this build: its code, parameters, the library modules it "
        f"imports and the pinned environment are unchanged since the execution whose time is shown, so "
        f"its outputs were kept and only its prose re-rendered. A page marked <em>not run in this "
        f"build</em> was left out of it (for instance by <code>execute --only</code>): its row, with its "
        f"profile, parameters and device, is from the earlier build that last ran it. "
        f"This page is rendered last, from that report, "
        f"so it is not in its own table. <em>Seconds</em> are wall time; <em>CPU seconds</em> are the user and "
        f"system time of the chapter's kernel and every process under it, which a busy machine distorts much "
        f"less: the figure to compare builds by.</p>"
        f"<table class='book-environment'><tr><th>item</th><th>version</th></tr>"
        f"<tr><td>Python</td><td>{html.escape(env['python'])}</td></tr>"
        f"<tr><td>platform</td><td>{html.escape(env['platform'])}</td></tr>"
        f"<tr><td>device</td><td>{html.escape(env['device'])}</td></tr>{packages}</table>"
        f"{gpu_html(gpu_folder)}"
    )


def render_status(build_dir=None):
    from IPython.display import HTML

    report = load_report(build_dir)
    if report is None:
        return HTML(
            "<p><strong>No execution report was found.</strong> Build the book with <code>make book</code>; "
            "its executor writes the report this page shows.</p>"
        )
    return HTML(status_html(report))
