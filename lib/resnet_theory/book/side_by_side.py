"""Chapters executed side by side: ``execute --jobs N`` (default: two on a machine with two cores or more).

The executor decides in its own process, page by page in TOC order, which chapters must be executed (the cache,
:func:`~resnet_theory.book.build.reuse_or_execute`); those it hands to :class:`SideBySide`, which runs up to
``jobs`` of them at once, each in a worker process of its own (:mod:`.worker`): its own kernel, its own
environment variables, its own temporaries and CPU-time accounting. The longest expected chapter starts first
(:func:`expected_cpu_seconds`: its CPU seconds in the last execution record or report; a chapter never timed
before counts as longest, the experiments chapter first among those), so that the short ones fill the other
core while it runs. A page executed in the executor's process (the ledger, the status page) waits for every
chapter before it, as it gathers their results.

The guarantees of one-at-a-time runs hold: the executor alone holds the build folder's lock and writes the
report (at the start, and again each time a chapter finishes); a chapter's outputs are moved into place only
when it succeeds, by its worker; a chapter that fails leaves the others' outputs alone. A worker runs in a
session of its own, so a terminal's Ctrl-C reaches the executor only, which passes the signal on, once, to each
worker still running (SIGINT or SIGTERM, as it received), waits for them to remove their temporaries, and
reports every chapter it interrupted. A worker whose executor dies is sent SIGTERM by the system (Linux).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from .cache import read_cache_record
from .execute import previous_outputs, remove_stale_partials
from .files import read_json_object
from .plan import ChapterPlan
from .report import ChapterResult
from .toc import BookError
from .worker import job_spec

#: Chapters known to take longest: among the chapters never timed before, these start first.
LONGEST_FIRST = ("book/experiments",)

#: How long an interrupted worker may take to remove its temporaries before it is killed.
STOP_GRACE_SECONDS = 60.0


def default_jobs() -> int:
    """Two chapters at a time where there are two cores or more, else one."""
    return max(1, min(2, os.cpu_count() or 1))


def check_jobs(jobs: int) -> int:
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise BookError(f"--jobs {jobs!r}: give a whole number of chapters at a time, 1 or more")
    return jobs


def parse_jobs(text: str) -> int:
    """``--jobs TEXT`` as a number of chapters at a time; a one-line :class:`BookError` for anything else."""
    try:
        return check_jobs(int(str(text).strip()))
    except ValueError:
        raise BookError(f"--jobs {text!r}: give a whole number of chapters at a time, 1 or more") from None


def expected_cpu_seconds(build_dir: Path, entry: str, report: dict | None) -> float | None:
    """The CPU seconds (else wall seconds) of the chapter's last execution, from its cache record or, without
    one, from the previous report; None when it was never timed."""
    record = read_cache_record(build_dir, entry) or {}
    rows = {c.get("chapter"): c for c in (report or {}).get("chapters", []) if isinstance(c, dict)}
    for source in (record, rows.get(entry) or {}):
        if source.get("run", "executed") != "executed":
            continue
        for key in ("cpu_seconds", "seconds"):
            value = source.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                return float(value)
    return None


def start_order(entries: list[str], expected: dict[str, float | None]) -> list[str]:
    """``entries`` longest expected first: never-timed chapters (:data:`LONGEST_FIRST` first among them, then in
    the given order), then the timed ones by their seconds, most first."""
    untimed = [e for e in entries if expected.get(e) is None]
    untimed.sort(key=lambda e: e not in LONGEST_FIRST)
    timed = sorted((e for e in entries if expected.get(e) is not None), key=lambda e: -expected[e])
    return untimed + timed


def worker_environment(jobs: int) -> dict:
    """The workers' environment: the executor's, unchanged. Thread pools are not resized for running side by side
    (OMP_NUM_THREADS would change how numpy's BLAS splits its sums, and so the last digits of a chapter's numbers
    between ``--jobs 1`` and ``--jobs 2``); the chapters set torch's threads themselves."""
    return dict(os.environ)


@dataclass
class _Job:
    plan: ChapterPlan
    output: Path
    spec: dict
    expected: float | None
    process: subprocess.Popen | None = None
    started: float = 0.0
    files: tuple[Path, Path] = field(default=(Path(), Path()))


class SideBySide:
    """Up to ``jobs`` chapters executing at once in worker processes; :meth:`submit` queues one, :meth:`drain`
    runs the queue to its end. Use as a context manager: its private folder of job files is removed at exit."""

    def __init__(self, build_dir: Path, jobs: int, report: dict | None):
        self.build_dir, self.jobs, self.report = build_dir, check_jobs(jobs), report
        self.queue: list[_Job] = []
        self.running: list[_Job] = []
        self.started = 0  # workers started so far: names each one's job and result files
        self.env = worker_environment(jobs)

    def __enter__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="book-jobs-"))
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.folder, ignore_errors=True)

    def submit(
        self,
        plan: ChapterPlan,
        output: Path,
        build_dir: Path,
        profile: str,
        device: str,
        components: dict | None = None,
        reason: str = "",
    ) -> None:
        spec = job_spec(plan, output, build_dir, profile, device, components, reason)
        expected = expected_cpu_seconds(self.build_dir, plan.entry, self.report)
        self.queue.append(_Job(plan, output, spec, expected))

    def _start_next(self) -> None:
        order = start_order([j.plan.entry for j in self.queue], {j.plan.entry: j.expected for j in self.queue})
        job = next(j for j in self.queue if j.plan.entry == order[0])
        self.queue.remove(job)
        index = self.started = self.started + 1
        job.files = (self.folder / f"job-{index}.json", self.folder / f"result-{index}.json")
        job.files[0].write_text(json.dumps(job.spec, default=str))
        cmd = [sys.executable, "-m", "resnet_theory.book.worker", str(job.files[0]), str(job.files[1])]
        job.process = subprocess.Popen(cmd, env=self.env, start_new_session=True)
        job.started = time.perf_counter()
        self.running.append(job)

    def drain(self, on_done) -> None:
        """Run every queued chapter, ``jobs`` at a time; ``on_done(plan, result)`` as each one finishes. An
        interruption (:class:`KeyboardInterrupt`) stops the workers still running (:meth:`stop`) and is raised
        again."""
        while self.queue or self.running:
            while self.queue and len(self.running) < self.jobs:
                self._start_next()
            finished = [j for j in self.running if j.process.poll() is not None]
            for job in finished:
                self.running.remove(job)
                on_done(job.plan, self._result(job))
            if not finished:
                time.sleep(0.05)

    def _result(self, job: _Job) -> ChapterResult:
        data = read_json_object(job.files[1])
        if data is not None:
            return ChapterResult(**data)
        seconds = round(time.perf_counter() - job.started, 2)
        code = job.process.returncode
        error = {"code_cell": None, "execution_count": None, "ename": "WorkerDied", "cell_source": ""}
        error["evalue"] = f"the chapter's worker process ended with exit code {code} before it reported"
        return ChapterResult(
            job.plan.entry, str(job.plan.source), "failed", seconds, job.spec["profile"], job.plan.parameters,
            job.spec["device"], str(job.output), error, run="not run",
            outputs=previous_outputs(job.output, read_cache_record(self.build_dir, job.plan.entry)),
        )  # fmt: skip

    def stop(self, signal_name: str) -> tuple[list, list]:
        """Pass ``signal_name`` on to each running worker and wait for it (killed, and its temporaries removed
        by name, after :data:`STOP_GRACE_SECONDS`). Returns the chapters interrupted (plan, output, seconds) and
        those that finished before the signal reached them (plan, result); queued chapters are dropped."""
        sig = signal.SIGINT if signal_name == "SIGINT" else signal.SIGTERM
        for job in self.running:
            if job.process.poll() is None:
                job.process.send_signal(sig)
        interrupted, finished = [], []
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for job in self.running:
            try:
                job.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                job.process.kill()
                job.process.wait()
                remove_stale_partials(job.output)
            data = read_json_object(job.files[1]) if job.process.returncode == 0 else None
            if data is not None:
                finished.append((job.plan, ChapterResult(**data)))
            else:
                interrupted.append((job.plan, job.output, time.perf_counter() - job.started))
        self.running, self.queue = [], []
        return interrupted, finished
