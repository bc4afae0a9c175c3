"""The quick book's time, chapter by chapter: CPU seconds, wall seconds, where a chapter's seconds go, and
chapters executed side by side against one after another.

``python -m resnet_theory.benchmarks.quick_book --report _build/executed/report.json`` prints, from a build's
report, each chapter's wall and CPU seconds (the kernel and its worker processes) and, from its executed
notebook, the seconds its cells took (papermill records each cell's duration), the rest of the wall time (kernel
start, papermill, writing the notebook) and its slowest cells (``--cells N``).

``python -m resnet_theory.benchmarks.quick_book --execute book/linear book/expressivity --build-dir DIR
[--jobs 2] [--rounds 1]`` executes those chapters (``--force``, no HTML), in the same run, one after another
(``--jobs 1``, into ``DIR/one-at-a-time``) and side by side (``--jobs N``, into ``DIR/side-by-side``),
alternating which goes first from round to round, and prints both runs' figures side by side with the ratio of
their wall times and of their CPU seconds. On a shared machine the wall clock includes waiting for other work:
compare the ratio within one run, and CPU seconds across runs. These are printed figures, not a timed test.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from .. import validate


def cell_seconds(notebook: Path) -> list[tuple[float, str]]:
    """(seconds, first line of the source) of every executed code cell of ``notebook``, from papermill's record."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    cells = []
    for cell in nb.cells:
        duration = (cell.metadata.get("papermill") or {}).get("duration")
        if cell.cell_type == "code" and isinstance(duration, (int, float)):
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            cells.append((float(duration), first[:60]))
    return cells


def chapter_rows(report_path: Path) -> list[dict]:
    """One row per page of the report that was executed in its run: wall, CPU and cell seconds, slowest cells."""
    report = json.loads(Path(report_path).read_text())
    pages = report.get("chapters") if isinstance(report, dict) else None
    if not (isinstance(pages, list) and all(isinstance(p, dict) and isinstance(p.get("chapter"), str) for p in pages)):
        raise ValueError(f"{report_path} is not an execution report (a list of chapters, each naming its page)")
    rows = []
    for page in report["chapters"]:
        if page.get("run") != "executed":
            continue
        notebook = Path(report_path).parent / f"{page['chapter']}.ipynb"
        cells = cell_seconds(notebook) if notebook.is_file() else []
        cpu = page.get("cpu_seconds")
        if cpu is not None and (isinstance(cpu, bool) or not isinstance(cpu, (int, float))):
            raise ValueError(f"{report_path}: {page['chapter']}: cpu_seconds is not a number, got {cpu!r}")
        rows.append(
            {
                "chapter": page["chapter"],
                "wall": float(page.get("seconds") or 0.0),
                "cpu": cpu,
                "cells": sum(s for s, _ in cells),
                "slowest": sorted(cells, reverse=True),
            }
        )
    return rows


def print_rows(rows: list[dict], cells: int = 3, title: str = "") -> None:
    width = max([len(r["chapter"]) for r in rows] + [7])
    if title:
        print(f"# {title}")
    print(f"{'chapter':<{width}} {'wall s':>8} {'CPU s':>8} {'cells s':>8} {'other s':>8}")
    for r in rows:
        cpu = f"{r['cpu']:8.1f}" if r["cpu"] is not None else f"{'-':>8}"
        print(f"{r['chapter']:<{width}} {r['wall']:8.1f} {cpu} {r['cells']:8.1f} {r['wall'] - r['cells']:8.1f}")
        for seconds, first in r["slowest"][:cells]:
            print(f"{'':<{width}}   {seconds:6.1f} s  {first}")
    total_cpu = sum(r["cpu"] or 0.0 for r in rows)
    print(f"{'total':<{width}} {sum(r['wall'] for r in rows):8.1f} {total_cpu:8.1f}")


def execute(entries: list[str], build_dir: Path, jobs: int, root: Path | None) -> float:
    """Execute ``entries`` into ``build_dir`` with ``--jobs jobs`` (forced, no HTML); the run's wall seconds."""
    cmd = [sys.executable, "-m", "resnet_theory.book", "execute", "--force", "--no-html", "--jobs", str(jobs)]
    cmd += ["--build-dir", str(build_dir), "--only", *entries] + (["--root", str(root)] if root else [])
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
        said = [line for line in lines if line.startswith(("error: ", "[book] FAILED"))] or lines or ["no output"]
        why = said[-1].removeprefix("error: ")
        raise ExecuteFailed(f"executing with --jobs {jobs} failed (exit {done.returncode}): {why}", done.returncode)
    return seconds


class ExecuteFailed(RuntimeError):
    """A run of the executor failed; the message is one line (the executor's own error line), ``code`` its exit."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def compare(entries: list[str], build_dir: Path, jobs: int, rounds: int, root: Path | None) -> dict:
    """Both ways, ``rounds`` times, alternating which goes first; the last round's rows and every round's walls."""
    walls: dict[int, list[float]] = {1: [], jobs: []}
    for round_ in range(rounds):
        for j in (1, jobs) if round_ % 2 == 0 else (jobs, 1):
            walls[j].append(execute(entries, build_dir / _folder(j), j, root))
    rows = {j: chapter_rows(build_dir / _folder(j) / "executed" / "report.json") for j in (1, jobs)}
    return {"walls": walls, "rows": rows}


def _folder(jobs: int) -> str:
    return "one-at-a-time" if jobs == 1 else "side-by-side"


def print_comparison(result: dict, jobs: int) -> None:
    one, many = result["rows"][1], {r["chapter"]: r for r in result["rows"][jobs]}
    width = max([len(r["chapter"]) for r in one] + [7])
    many_wall, many_cpu = f"{jobs} jobs wall", f"{jobs} jobs CPU"
    print(f"{'chapter':<{width}} {'1 job wall':>11} {'1 job CPU':>10} {many_wall:>12} {many_cpu:>12}")
    for r in one:
        m = many.get(r["chapter"], {})
        print(
            f"{r['chapter']:<{width}} {r['wall']:11.1f} {r['cpu'] or 0.0:10.1f} "
            f"{m.get('wall', 0.0):12.1f} {m.get('cpu') or 0.0:12.1f}"
        )
    cpu_one = sum(r["cpu"] or 0.0 for r in one)
    cpu_many = sum(r["cpu"] or 0.0 for r in many.values())
    for label, walls in (("one at a time", result["walls"][1]), (f"{jobs} at a time", result["walls"][jobs])):
        print(f"run wall, {label}: " + ", ".join(f"{w:.1f} s" for w in walls))
    ratios = [m / o for o, m in zip(result["walls"][1], result["walls"][jobs])]
    print(f"ratio: {jobs} jobs / 1 job wall = " + ", ".join(f"{x:.2f}" for x in ratios) + " (per round)")
    print(f"ratio: {jobs} jobs / 1 job chapter CPU seconds = {cpu_many / max(cpu_one, 1e-9):.2f}")


def main(argv=None) -> dict:
    parser = validate.OneLineParser(
        prog="python -m resnet_theory.benchmarks.quick_book", description=__doc__.split("\n\n")[0]
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--report", type=Path, help="a build's executed/report.json")
    what.add_argument("--execute", nargs="+", metavar="ENTRY", help="TOC entries to execute both ways")
    parser.add_argument("--build-dir", type=Path, help="with --execute: where both runs build (two folders)")
    parser.add_argument("--root", type=Path, help="the book's root (default: found from the working directory)")
    parser.add_argument(
        "--jobs", type=validate.int_option(2), default=2, help="chapters at a time in the side-by-side run (default 2)"
    )
    parser.add_argument(
        "--rounds", type=validate.int_option(1), default=1, help="runs of each way, alternating the first (default 1)"
    )
    parser.add_argument("--cells", type=validate.int_option(0), default=3, help="slowest cells shown per chapter")
    args = parser.parse_args(argv)
    if args.report is not None and not args.report.is_file():
        parser.error(f"--report {args.report}: no such file")
    if args.execute and args.build_dir is None:
        parser.error("--execute needs --build-dir (two build folders are made under it)")
    if args.report is not None:
        try:
            rows = chapter_rows(args.report)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            parser.error(f"--report {args.report}: not an execution report ({type(exc).__name__})")
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    if args.report is not None:
        print_rows(rows, args.cells, title=str(args.report))
        return {"rows": rows}
    try:
        result = compare(args.execute, args.build_dir, args.jobs, args.rounds, args.root)
    except ExecuteFailed as exc:  # a bad entry or build folder (2), a chapter that failed (1): one line
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2 if exc.code == 2 else 1) from None
    for j in (1, args.jobs):
        print_rows(result["rows"][j], args.cells, title=f"--jobs {j}")
    print_comparison(result, args.jobs)
    print(f"# load {os.getloadavg()[0]:.2f} at the end")
    return result


if __name__ == "__main__":
    main()
