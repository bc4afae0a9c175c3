"""One chapter executed in a process of its own, for chapters run side by side (:mod:`.side_by_side`).

``python -m resnet_theory.book.worker JOB.json RESULT.json``: the executor writes what to execute (the chapter
as planned, its output, build folder, cache components and reason) to ``JOB.json``; this process executes it
with :func:`~resnet_theory.book.execute.execute_chapter`, exactly as the executor does when it runs one chapter
at a time (temporaries beside the output named by this process's id, moved into place only on success, the
cache record written), and writes the :class:`~resnet_theory.book.report.ChapterResult` to ``RESULT.json``.

Each worker gets its own environment variables (the chapter's claims file) and its own CPU-time accounting, so
two chapters never see each other's settings. SIGINT and SIGTERM end it as they end the executor: the chapter's
temporaries are removed, no result is written, exit 130 or 143. On Linux a worker is also sent SIGTERM when the
executor dies (``PR_SET_PDEATHSIG``), so a killed run leaves no chapter executing behind it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict
from pathlib import Path

from .execute import BookInterrupted, execute_chapter
from .files import write_atomic
from .plan import ChapterPlan


def _raise_on_signal(signum, frame):
    raise BookInterrupted(signal.Signals(signum).name)


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGTERM when the process that started it ends (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the executor died before the request took effect
        raise BookInterrupted("SIGTERM")


def job_spec(
    plan: ChapterPlan, output: Path, build_dir: Path, profile: str, device: str, components: dict | None, reason: str
) -> dict:
    """What a worker needs to execute ``plan`` as the executor would, as JSON."""
    return {
        "entry": plan.entry,
        "source": str(plan.source),
        "parameters": plan.parameters,
        "notebook": plan.notebook,
        "mode": plan.mode,
        "output": str(output),
        "build_dir": str(build_dir),
        "profile": profile,
        "device": device,
        "components": components,
        "reason": reason,
    }


def run_job(spec: dict) -> dict:
    """Execute the chapter ``spec`` describes; its result as a dict (the fields of ``ChapterResult``)."""
    import nbformat

    notebook = nbformat.from_dict(spec["notebook"]) if spec.get("notebook") is not None else None
    plan = ChapterPlan(spec["entry"], Path(spec["source"]), True, spec["parameters"], notebook, spec["mode"])
    result = execute_chapter(
        plan,
        Path(spec["output"]),
        Path(spec["build_dir"]),
        spec["profile"],
        spec["device"],
        spec["components"],
        reason=spec["reason"],
    )
    return asdict(result)


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _raise_on_signal)
    signal.signal(signal.SIGINT, _raise_on_signal)
    try:
        _die_with_parent()
        if len(argv) != 2:
            print("usage: python -m resnet_theory.book.worker JOB.json RESULT.json", file=sys.stderr)
            return 2
        spec = json.loads(Path(argv[0]).read_text())
        write_atomic(Path(argv[1]), json.dumps(run_job(spec), default=str))
        return 0
    except BookInterrupted as exc:
        return 130 if exc.signal_name == "SIGINT" else 143


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
