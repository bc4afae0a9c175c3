"""One chapter executed in a process of its own, for chapters run side by side (:mod:`.side_by_side`).

``python -m resnet_theory.book.worker JOB.json RESULT.json``: the executor writes what to execute (the chapter
as planned, its output, build folder, cache components and reason) to ``JOB.json``; this process executes it
with :func:`~resnet_theory.book.execute.execute_chapter`, exactly as the executor does when it runs one chapter
at a time (temporaries beside the output named by this process's id, moved into place only on success, the
cache record written), and writes the :class:`~resnet_theory.book.report.ChapterResult` to ``RESULT.json``.

Each worker gets its own environment variables (the chapter's claims file) and its own CPU-time accounting, so
two chapters never see each other's settings. SIGINT and SIGTERM (passed on by the executor) interrupt the
chapter's kernel as a terminal's Ctrl-C does, so its cell stops and the kernel is shut down in order; the
chapter's temporaries are removed, no result is written, exit 130 (or 143 when the worker had to stop waiting
for the kernel after SIGTERM). On Linux a worker is also sent SIGTERM when the
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

#: Seconds an interrupted kernel has to stop its cell before the worker stops waiting for it.
KERNEL_GRACE_SECONDS = 10


def _raise_on_signal(signum, frame):
    raise BookInterrupted(signal.Signals(signum).name)


def _interrupt_kernel(signum, frame):
    """The first SIGINT or SIGTERM: interrupt the kernel(s) this worker started (SIGINT, as a terminal's Ctrl-C
    does), so the running cell stops with KeyboardInterrupt and papermill shuts the kernel down in order; the
    chapter then ends as interrupted. Later signals are ignored; if the kernel has not stopped within
    :data:`KERNEL_GRACE_SECONDS` (or there is none yet), the worker stops waiting (:class:`BookInterrupted`)."""
    from .cpu import _proc_stat

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    children = [int(n) for n in os.listdir("/proc") if n.isdigit() and (_proc_stat(int(n)) or (0,))[0] == os.getpid()]
    if not children:
        raise BookInterrupted(signal.Signals(signum).name)
    for pid in children:
        try:
            os.kill(pid, signal.SIGINT)
        except OSError:
            pass
    signal.signal(signal.SIGALRM, lambda *_: _raise_on_signal(signum, None))
    signal.alarm(KERNEL_GRACE_SECONDS)


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
    handler = _interrupt_kernel if os.path.isdir("/proc") else _raise_on_signal
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    try:
        _die_with_parent()
        if len(argv) != 2:
            print("usage: python -m resnet_theory.book.worker JOB.json RESULT.json", file=sys.stderr)
            return 2
        spec = json.loads(Path(argv[0]).read_text())
        Path(argv[0]).unlink()  # read once; a run killed outright leaves no job behind it
        write_atomic(Path(argv[1]), json.dumps(run_job(spec), default=str))
        return 0
    except BookInterrupted as exc:
        return 130 if exc.signal_name == "SIGINT" else 143
    finally:
        signal.alarm(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
