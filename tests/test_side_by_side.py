"""Chapters executed side by side (``execute --jobs N``): they overlap, one failing leaves the other's outputs and
the report right, CPU seconds are each chapter's own, an interruption stops them all cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resnet_theory.book.cache import cache_record_path
from resnet_theory.book.files import write_atomic
from resnet_theory.book.side_by_side import LONGEST_FIRST, check_jobs, expected_cpu_seconds, start_order
from resnet_theory.book.toc import BookError
from test_executor import chapter, make_book, outputs

from conftest import run_execute

# Each chapter says it has started, then waits (at most ``patience`` seconds, a minute unless a test passes less)
# until the other one has started too: only chapters that really run at the same time get past that cell.
WAIT_FOR_OTHER = """import json, os, time
from pathlib import Path
Path(folder, me + '.started').touch()
deadline = time.monotonic() + patience
while not Path(folder, other + '.started').exists():
    assert time.monotonic() < deadline, other + ' never started while ' + me + ' ran'
    time.sleep(0.05)
"""
BURN = """t0 = time.process_time()
while time.process_time() - t0 < burn:
    sum(range(1000))
Path(folder, me + '.cpu').write_text(str(time.process_time()))
with open(os.environ['RESNET_THEORY_CLAIMS_FILE'], 'w') as f:
    json.dump([{'id': me, 'seed': seed}], f)
print(me, 'done with seed', seed)
"""


def pair_book(root: Path, folder: Path) -> Path:
    def page(me: str, other: str, burn: float, fails: str) -> str:
        params = f'profile = "quick"\nseed = 0\nfolder = {str(folder)!r}\nme = {me!r}\nother = {other!r}\nburn = {burn}'
        params += "\npatience = 60"
        return chapter(me, params, WAIT_FOR_OTHER, BURN, fails)

    return make_book(
        root,
        {
            "intro": "# Intro\n",
            "busy": page("busy", "idle", 3.0, "pass"),
            "idle": page("idle", "busy", 0.0, "time.sleep(1)\nif seed == 7:\n    raise ValueError('seed 7 fails')"),
        },
    )


def _rows(build: Path) -> tuple[dict, dict]:
    report = json.loads((build / "executed" / "report.json").read_text())
    return report, {c["chapter"]: c for c in report["chapters"]}


def start_waiting_pair(root: Path, build: Path, folder: Path, **output) -> subprocess.Popen:
    """``execute --jobs 2`` over the pair book in a subprocess (its own session), each chapter waiting for one that
    never starts: returned once both chapters have said they started, so both are mid-cell in their kernels.
    ``output``: the subprocess's stdout and stderr (``subprocess.Popen`` arguments)."""
    waits = ["-p", "busy:other", "never", "-p", "idle:other", "never"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "resnet_theory.book", "execute", "--no-html", "--jobs", "2", *waits]
        + ["--root", str(root), "--build-dir", str(build)],
        cwd=root,
        start_new_session=True,
        **output,
    )
    try:
        deadline = time.monotonic() + 60
        while not ((folder / "busy.started").exists() and (folder / "idle.started").exists()):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else proc.returncode
            assert time.monotonic() < deadline, "the chapters never started"
            time.sleep(0.1)
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise
    return proc


def test_two_chapters_overlap_and_one_failing_leaves_the_other_and_the_report_right(tmp_path, capsys):
    folder = tmp_path / "markers"
    folder.mkdir()
    root, build = pair_book(tmp_path / "src", folder), tmp_path / "build"
    # the outputs to keep: busy burns no CPU for them (it burns its 3 s in the run whose CPU seconds are checked)
    assert run_execute(root, build, "-p", "busy:burn", "0", jobs=2) == 0
    idle_before = (build / "executed" / "book" / "idle.ipynb").read_bytes()
    for marker in folder.iterdir():
        marker.unlink()
    # seed 7: both execute again (their parameters changed), side by side; idle fails after busy started
    assert run_execute(root, build, "-p", "seed", "7", jobs=2) == 1
    report, rows = _rows(build)
    assert report["state"] == "failed" and [c["chapter"] for c in report["chapters"]] == [
        "book/intro",
        "book/busy",
        "book/idle",
    ]
    busy, idle = rows["book/busy"], rows["book/idle"]
    assert busy["status"] == "ok" and busy["run"] == "executed" and busy["parameters"]["seed"] == 7
    assert "busy done with seed 7" in outputs(build / "executed" / "book" / "busy.ipynb")
    claims = json.loads((build / "executed" / "book" / "busy.claims.json").read_text())
    assert claims == [{"id": "busy", "seed": 7}]
    assert idle["status"] == "failed" and idle["error"]["ename"] == "ValueError"
    assert idle["outputs"].startswith("the previous outputs")
    assert (build / "executed" / "book" / "idle.ipynb").read_bytes() == idle_before
    assert json.loads((build / "executed" / "book" / "idle.claims.json").read_text()) == [{"id": "idle", "seed": 0}]
    # CPU seconds are each kernel's own: busy's include the 3 s it burned, idle's do not. ``burned`` is the busy
    # kernel's own CPU time when its last cell ended; the report samples /proc (1/100 s ticks, rounded to 1/100)
    burned = float((folder / "busy.cpu").read_text())
    assert burned >= 3.0
    assert burned - 0.02 <= busy["cpu_seconds"] < burned + 10.0, busy
    assert idle["cpu_seconds"] is not None and idle["cpu_seconds"] < busy["cpu_seconds"] - 2.5, (idle, busy)
    assert not list((build / "executed").rglob(".*partial*")), "temporary files left behind"
    assert "seed 7 fails" in capsys.readouterr().err


def test_one_job_runs_them_one_after_another(tmp_path):
    folder = tmp_path / "markers"
    folder.mkdir()
    root, build = pair_book(tmp_path / "src", folder), tmp_path / "build"
    # with one job the chapter that starts first waits for a second that never starts while it runs: it fails
    # after its patience (3 s here, not the minute side-by-side runs get); the second then starts after it,
    # finds the first one's marker and passes
    assert run_execute(root, build, "-p", "patience", "3", "-p", "burn", "0", jobs=1) == 1
    _, rows = _rows(build)
    failed = [name for name in ("busy", "idle") if rows[f"book/{name}"]["status"] == "failed"]
    assert len(failed) == 1, rows
    first = failed[0]
    second = "idle" if first == "busy" else "busy"
    assert rows[f"book/{first}"]["error"]["ename"] == "AssertionError"
    assert f"{second} never started" in rows[f"book/{first}"]["error"]["evalue"]
    assert rows[f"book/{second}"]["status"] == "ok", rows


@pytest.mark.parametrize("jobs", ["0", "-1", "x", "1.5"])
def test_a_bad_jobs_count_is_refused_in_one_line(tmp_path, capsys, jobs):
    root = make_book(tmp_path / "src", {"intro": "# Intro\n"})
    assert run_execute(root, tmp_path / "build", jobs=jobs) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --jobs") and len(err.splitlines()) == 1
    with pytest.raises(BookError):
        check_jobs(True)


def test_the_longest_expected_chapter_starts_first(tmp_path):
    build = tmp_path / "build"
    for entry, cpu in [("book/a", 10.0), ("book/b", 40.0)]:
        write_atomic(cache_record_path(build, entry), json.dumps({"cpu_seconds": cpu, "seconds": 99.0}))
    report = {"chapters": [{"chapter": "book/c", "run": "executed", "cpu_seconds": 25.0, "seconds": 30.0}]}
    expected = {e: expected_cpu_seconds(build, e, report) for e in ["book/a", "book/b", "book/c", "book/d"]}
    assert expected == {"book/a": 10.0, "book/b": 40.0, "book/c": 25.0, "book/d": None}
    assert start_order(["book/a", "book/b", "book/c"], expected) == ["book/b", "book/c", "book/a"]
    # never timed: first (it may be the longest), the known longest first among them
    untimed = dict(expected, **{LONGEST_FIRST[0]: None})
    assert start_order(["book/a", "book/d", LONGEST_FIRST[0]], untimed) == [LONGEST_FIRST[0], "book/d", "book/a"]
    reused = {"chapters": [{"chapter": "book/d", "run": "reused", "seconds": 0.1}]}
    assert expected_cpu_seconds(build, "book/d", reused) is None  # a reused row says nothing of its cost


def test_an_interrupted_side_by_side_run_stops_every_chapter_and_keeps_their_outputs(tmp_path):
    folder = tmp_path / "markers"
    folder.mkdir()
    root, build = pair_book(tmp_path / "src", folder), tmp_path / "build"
    # the outputs to keep (busy burns no CPU for them: what is kept matters here, not what it cost)
    assert run_execute(root, build, "-p", "busy:burn", "0", jobs=2) == 0
    before = {n: (build / "executed" / "book" / f"{n}.ipynb").read_bytes() for n in ("busy", "idle")}
    for marker in folder.iterdir():
        marker.unlink()
    # both chapters say they started, then wait for one that never does
    proc = start_waiting_pair(root, build, folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        proc.send_signal(signal.SIGTERM)  # the executor only, as `kill` does
        output, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, output
    assert output.count("interrupted (SIGTERM) while executing") == 2, output
    report, rows = _rows(build)
    assert report["state"] == "interrupted" and sorted(report["attempt"]["interrupted_chapters"]) == [
        "book/busy",
        "book/idle",
    ]
    for name in ("busy", "idle"):
        assert rows[f"book/{name}"]["status"] == "interrupted"
        assert (build / "executed" / "book" / f"{name}.ipynb").read_bytes() == before[name]
    assert not list((build / "executed").rglob(".*partial*")), "temporary files left behind"


def test_an_executor_killed_outright_leaves_no_worker_running_and_a_run_that_never_finished(tmp_path):
    """SIGKILL reaches only the executor: its workers are told by the system (Linux) and stop their kernels; the
    report still says running, with the executor's pid, so the status page says the run never finished."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux only")
    folder = tmp_path / "markers"
    folder.mkdir()
    root, build = pair_book(tmp_path / "src", folder), tmp_path / "build"
    proc = start_waiting_pair(root, build, folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == proc.pid]
    assert len(workers) == 2, workers
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30  # well before the chapters' own minute of waiting would end them
    while any(_alive(w) for w in workers):
        assert time.monotonic() < deadline, "a worker outlived its executor"
        time.sleep(0.2)
    assert not list((build / "executed").rglob(".*partial*")), "temporary files left behind"
    report, _ = _rows(build)
    assert report["state"] == "running" and report["attempt"]["pid"] == proc.pid


def _parent(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2 :].split()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"
