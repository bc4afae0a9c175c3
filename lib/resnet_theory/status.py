"""The status page: what the book executor recorded for each page of the last execution.

Reads ``<build>/executed/report.json`` (written by :mod:`resnet_theory.book`) and renders one row per page:
its status, whether this build executed it or reused the outputs of an earlier execution (the execution
cache) and when those outputs were computed, the wall time of this build's execution (n/a for a reused page),
profile, parameters, device, and the failing cell where one failed. Then the Python version, package versions and device of the run.
A run that was interrupted or failed is said so first, with the parameters it was attempted with.
"""

from __future__ import annotations

import html

from .book import load_report

RUN_WORDS = {"executed": "executed", "reused": "reused", "converted": "no code", "not run": "not run"}


def _row(ch: dict) -> str:
    status = ch["status"]
    colour = {"ok": "#1b7f3b", "failed": "#b00020", "interrupted": "#b00020"}.get(status, "#555")
    notes = []
    if ch.get("error"):
        err = ch["error"]
        notes.append(f"code cell {err.get('code_cell')}: {err.get('ename')}: {err.get('evalue')}"
                     if status == "failed" else str(err.get("evalue")))
    if ch.get("outputs"):
        notes.append(f"the page shows {ch['outputs']}")
    params = ", ".join(f"{k}={v!r}" for k, v in ch["parameters"].items() if k != "profile")
    run = ch.get("run", "executed")
    seconds = f"{ch['seconds']:.1f}" if status != "static" and run != "reused" else "n/a"
    executed_at = ch.get("executed_at") or ("" if run == "converted" else "never")
    return (f"<tr><td>{html.escape(ch['chapter'])}</td><td><strong style='color:{colour}'>{status}</strong></td>"
            f"<td>{RUN_WORDS.get(run, html.escape(run))}</td><td>{html.escape(executed_at)}</td>"
            f"<td>{seconds}</td><td>{html.escape(ch['profile'])}</td><td>{html.escape(params)}</td>"
            f"<td>{html.escape(ch['device'])}</td><td>{html.escape('; '.join(notes))}</td></tr>")


def _attempt_note(report: dict) -> str:
    state = report.get("state")
    attempt = report.get("attempt") or {}
    if state not in ("interrupted", "failed"):
        return ""
    params = "; ".join(f"{page}: " + ", ".join(f"{k}={v!r}" for k, v in p.items())
                       for page, p in (attempt.get("parameters") or {}).items())
    what = (f"was interrupted ({attempt.get('signal', 'signal')}) while executing "
            f"{attempt.get('interrupted_chapter')}" if state == "interrupted" else "failed")
    return (f"<p><strong>The last run {html.escape(what)}.</strong> It was started "
            f"{html.escape(str(attempt.get('started', '?')))} with {html.escape(params or 'no parameters')}; "
            f"pages it did not finish keep their previous outputs.</p>")


#: The TOC entry of the page that shows this table; its own row in a report is always the previous build's.
STATUS_PAGE = "book/status"


def status_html(report: dict, own_page: str = STATUS_PAGE) -> str:
    rows = "".join(_row(ch) for ch in report["chapters"] if ch.get("chapter") != own_page)
    head = ("<tr><th>page</th><th>status</th><th>this build</th><th>outputs computed</th><th>seconds</th>"
            "<th>profile</th><th>parameters</th><th>device</th><th>notes</th></tr>")
    env = report["environment"]
    packages = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                       for k, v in env["packages"].items())
    return (f"{_attempt_note(report)}"
            f'<table class="book-status">{head}{rows}</table>'
            f"<p>Executed with the <strong>{html.escape(report['profile'])}</strong> profile. A page marked "
            f"<em>reused</em> was not executed for this build: its code, parameters, the library modules it "
            f"imports and the pinned environment are unchanged since the execution whose time is shown, so "
            f"its outputs were kept and only its prose re-rendered. This page is rendered last, from that report, "
            f"so it is not in its own table.</p>"
            f"<table class='book-environment'><tr><th>item</th><th>version</th></tr>"
            f"<tr><td>Python</td><td>{html.escape(env['python'])}</td></tr>"
            f"<tr><td>platform</td><td>{html.escape(env['platform'])}</td></tr>"
            f"<tr><td>device</td><td>{html.escape(env['device'])}</td></tr>{packages}</table>")


def render_status(build_dir=None):
    from IPython.display import HTML

    report = load_report(build_dir)
    if report is None:
        return HTML("<p><strong>No execution report was found.</strong> Build the book with <code>make book</code>; "
                    "its executor writes the report this page shows.</p>")
    return HTML(status_html(report))
