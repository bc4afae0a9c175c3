"""The status page: what the book executor recorded for each page of the last execution.

Reads ``<build>/executed/report.json`` (written by :mod:`resnet_theory.book`) and renders one row per page
(status, wall time, profile, parameters, device, and the failing cell where one failed), then the Python
version, package versions and device the book ran with.
"""

from __future__ import annotations

import html

from .book import load_report


def status_html(report: dict) -> str:
    rows = []
    for ch in report["chapters"]:
        status = ch["status"]
        colour = {"ok": "#1b7f3b", "failed": "#b00020"}.get(status, "#555")
        note = ""
        if ch.get("error"):
            err = ch["error"]
            note = html.escape(f"code cell {err.get('code_cell')}: {err.get('ename')}: {err.get('evalue')}")
        params = ", ".join(f"{k}={v!r}" for k, v in ch["parameters"].items() if k != "profile")
        seconds = f"{ch['seconds']:.1f}" if status != "static" else "n/a"
        rows.append(f"<tr><td>{html.escape(ch['chapter'])}</td><td><strong style='color:{colour}'>{status}</strong></td>"
                    f"<td>{seconds}</td><td>{html.escape(ch['profile'])}</td><td>{html.escape(params)}</td>"
                    f"<td>{html.escape(ch['device'])}</td><td>{note}</td></tr>")
    head = ("<tr><th>page</th><th>status</th><th>seconds</th><th>profile</th><th>parameters</th>"
            "<th>device</th><th>failure</th></tr>")
    env = report["environment"]
    packages = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(v))}</td></tr>"
                       for k, v in env["packages"].items())
    return (f'<table class="book-status">{head}{"".join(rows)}</table>'
            f"<p>Executed with the <strong>{html.escape(report['profile'])}</strong> profile; the last page above "
            f"finished {html.escape(report['finished'])}. This page runs last and is not in its own table.</p>"
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
