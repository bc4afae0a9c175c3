"""``python -m resnet_theory.claims``: list the book's claims, re-check one (or all) on its own.

- ``list [--json] [--build-dir DIR]``: every claim id in book order, where it is stated and the
  verdict the last build recorded (``-`` when there is no build).
- ``verify ID... [--profile quick|full] [--seed N] [--knob NAME=VALUE] [--json]``: runs each claim alone
  (claims of one chapter share one context, so their shared results are computed once), prints the
  statement, each check's summary, the control and the verdict. ``--all`` runs every claim, chapters in
  ``--jobs`` processes (2: one a core). ``--seeds 0 1 2`` runs each claim at every seed and says how many
  seeds give the same verdict; with ``--record`` it writes what it found to ``BUILD/claims-across-seeds.json``
  (:data:`SEEDS_FILE`), which the ledger page shows beside each claim.

Exit status: 0 when every verdict agrees with the one the last build recorded (or there is no build, or the
claim has no recorded verdict), 1 when one differs (or, with ``--seeds``, differs between seeds) or a claim's
function fails, 2 on bad input (an unknown id, profile or knob, a bad seed).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path

from ..ledger_html import evidence_part_name
from ..outputs import check_command_output
from ..record import claims_document, source_line
from .context import Context
from .registry import all_claims, chapter_claims, unknown_claim_message
from .run import run_claim, verify_command

#: What ``verify --seeds ... --record`` writes into the build folder: the profile, the seeds, and per claim its
#: verdict at each seed and how many seeds give its most common verdict.
SEEDS_FILE = "claims-across-seeds.json"


class UsageError(ValueError):
    """Bad input on the command line (exit 2)."""


def recorded_verdicts(build_dir: Path) -> dict[str, str]:
    """claim id -> the verdict the build in ``build_dir`` recorded (empty when there is no build)."""
    executed = Path(build_dir) / "executed"
    out: dict[str, str] = {}
    if not executed.is_dir():
        return out
    for path in sorted(executed.rglob("*.claims.json")):
        if path.name.startswith("."):
            continue
        try:
            claims, _ = claims_document(json.loads(path.read_bytes()))
        except (OSError, ValueError, RecursionError):
            continue  # a damaged file records nothing; the ledger page refuses it
        out.update({c.id: c.verdict for c in claims})
    return out


def _parse_knob(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(f"--knob expects NAME=VALUE, got {text!r}")
    shown = value if len(value) <= 60 else value[:57] + "..."
    try:
        parsed = json.loads(value, parse_constant=_no_constant, parse_float=_finite_float)
    except (json.JSONDecodeError, RecursionError):
        raise UsageError(f"--knob {name}: the value must be JSON (a number, a list), got {shown!r}") from None
    except _NotFinite as exc:  # JSON has no NaN or Infinity; the book's -p knobs refuses them too
        raise UsageError(f"--knob {name}: {exc} is not a finite number, got {shown!r}") from None
    return name.strip(), parsed


class _NotFinite(ValueError):
    pass


def _no_constant(text: str):
    raise _NotFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):  # 1e999
        raise _NotFinite(text)
    return value


def _chapter_job(chapter: str, ids: list[str], profile: str, seed: int, knobs: dict) -> list[dict]:
    """Run ``ids`` of one chapter in one context (a worker process's job); one result dict per claim."""
    import torch

    torch.set_num_threads(1)
    claims = chapter_claims(chapter)
    ctx = Context.for_table(claims.profile, profile, seed, knobs)
    results = []
    for cid in ids:
        start = time.perf_counter()
        try:
            run = run_claim(claims.claims[cid], ctx)
        except Exception as exc:  # reported per claim; the others still run
            results.append({"id": cid, "chapter": chapter, "error": f"{type(exc).__name__}: {exc}", "seed": seed})
            continue
        rec = run.record
        steps = {s.keys[0]: s for s in rec.proof_steps}  # a step's check: the step's key and where it is printed
        results.append(
            {
                "id": cid,
                "chapter": chapter,
                "seed": seed,
                "statement": rec.statement,
                "ref": rec.ref,
                "verdict": rec.verdict,
                "label": rec.label,
                "source": rec.source,
                "source_detail": rec.source_detail,
                "source_text": source_line(rec),
                "reason": rec.reason,
                "checks": {
                    k: {
                        "name": evidence_part_name(rec, k, with_step_key=True),
                        "holds": v["holds"],
                        "summary": v["summary"],
                        **({"key": steps[k].key} if k in steps and steps[k].key else {}),
                        **({"where": steps[k].where} if k in steps and steps[k].where else {}),
                    }
                    for k, v in rec.evidence.items()
                },
                "control": rec.control,
                "needs": rec.needs,
                "seconds": round(time.perf_counter() - start, 3),
            }
        )
    return results


def _jobs_for(ids: Sequence[str], knobs: dict) -> list[tuple[str, list[str]]]:
    by_chapter: dict[str, list[str]] = {}
    known = {d.id: d.chapter for d in all_claims()}
    for cid in ids:
        if cid not in known:
            raise UsageError(unknown_claim_message(cid))  # a retired id: where it moved
        by_chapter.setdefault(known[cid], []).append(cid)
    if knobs and len(by_chapter) > 1:
        raise UsageError("--knob names one chapter's knobs: verify claims of one chapter with it")
    for chapter in by_chapter:
        chapter_claims(chapter).profile.resolve("quick", knobs)  # an unknown knob is bad input, before running
    return list(by_chapter.items())


def _run_all(jobs, profile, seeds, knobs, processes) -> list[dict]:
    tasks = [(ch, ids, profile, s, knobs) for s in seeds for ch, ids in jobs]
    if processes <= 1 or len(tasks) == 1:
        return [r for t in tasks for r in _chapter_job(*t)]
    pool = ProcessPoolExecutor(min(processes, len(tasks)), mp_context=get_context("spawn"), initializer=_worker_started)
    try:
        # the workers start (and import torch) with SIGINT blocked, a mask they inherit: a Ctrl-C, which reaches the
        # whole process group, aborted a worker inside torch's C++ initialisation with "terminate called ..."
        # lines; a Ctrl-C in the meantime stays pending here and is raised as soon as the mask is restored
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = [pool.submit(_chapter_job, *t) for t in tasks]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        results = [r for f in futures for r in f.result()]
    except BrokenProcessPool:
        _stop_pool(pool)
        raise WorkerDied(
            "a worker process died while it ran claims (killed, or out of memory); run again (--jobs 1 shows which)"
        ) from None
    except BaseException:  # Ctrl-C, SIGTERM: the chapters still running or waiting are not waited for
        _stop_pool(pool)
        raise
    pool.shutdown()
    return results


def _worker_started() -> None:
    """A worker of :func:`_run_all`, started with SIGINT blocked: drop a Ctrl-C that came while it started (this
    process's parent stops it), then take Ctrl-C again as Python does, so that what it runs, and the processes it
    starts, behave as in a command run alone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a pending SIGINT is discarded when its action is to ignore it
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)


class WorkerDied(RuntimeError):
    """A process of ``verify --jobs N`` died (killed, out of memory): exit 1, in one line."""


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting: the claims not started are cancelled, its workers terminated (a worker
    that survived the Ctrl-C, as ``ProcessPoolExecutor`` workers do, would otherwise run its chapters to the end
    while this process waited for it, and a SIGTERM would leave them running on their own)."""
    workers = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        if worker.is_alive():
            worker.terminate()
    for worker in workers:
        worker.join(5)


def _print_result(r: dict, recorded: str | None) -> None:
    print(f"{r['id']}  ({r['chapter']}, seed {r['seed']})")
    if "error" in r:
        print(f"  error: {r['error']}")
        return
    print(f"  stated in: {r['ref']}")
    print(f"  statement:  {r['statement']}")
    print(f"  checked against: {r['source_text']}")
    for part in r["checks"].values():
        print(f"  {part['name']}: {'holds' if part['holds'] else 'fails'}: {part['summary']}")
        if part.get("where"):
            print(f"    printed at: {part['where']}")
    if r["control"]:
        c = r["control"]
        if c.get("usable", True) is False:
            state = "does not decide: no usable control"
        else:
            state = "holds: a defect" if c["holds"] else "fails, as it must"
        print(f"  control ({state}): {c['input']}")
        print(f"    {c['summary']}")
    if r["needs"]:
        print(f"  needs: {r['needs']}")
    agree = "" if recorded is None else ("  (as recorded)" if recorded == r["verdict"] else f"  (recorded: {recorded})")
    print(f"  verdict: {r['label']}{agree}  [{r['seconds']:.1f} s]")


def cmd_list(args) -> int:
    recorded = recorded_verdicts(args.build_dir)
    rows = [
        {"id": d.id, "paper": d.paper, "chapter": d.chapter, "ref": d.ref, "recorded": recorded.get(d.id)}
        for d in all_claims()
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        width = max(len(r["id"]) for r in rows)  # the columns line up whatever the longest id
        for r in rows:
            print(f"{r['id']:{width}s} {r['recorded'] or '-':19s} {r['ref']}")
        print(f"{len(rows)} claims; re-check one with: {verify_command('ID')}")
    return 0


def cmd_verify(args) -> int:
    if not args.all and not args.ids:
        raise UsageError("verify needs claim ids, or --all")
    knobs = dict(_parse_knob(k) for k in args.knob)
    ids = [d.id for d in all_claims()] if args.all else list(dict.fromkeys(args.ids))
    jobs = _jobs_for(ids, knobs)
    seeds = args.seeds or [args.seed]
    if any(s < 0 for s in seeds):
        raise UsageError(f"seeds must be integers >= 0, got {seeds}")
    seeds = list(dict.fromkeys(seeds))  # a seed given twice runs once, and counts once in how many agree
    recorded = recorded_verdicts(args.build_dir)
    results = _run_all(jobs, args.profile, seeds, knobs, args.jobs)
    order = {cid: i for i, cid in enumerate(ids)}
    results.sort(key=lambda r: (order[r["id"]], r["seed"]))
    status = 0
    summary = []
    for cid in ids:
        mine = [r for r in results if r["id"] == cid]
        verdicts = [r.get("verdict") for r in mine]
        rec = recorded.get(cid)
        counts = Counter(verdicts)
        agree_rec = rec is None or all(v == rec for v in verdicts)
        same_across = len(counts) == 1
        if any("error" in r for r in mine) or not agree_rec or not same_across:
            status = 1
        summary.append(
            {
                "id": cid,
                "verdicts": verdicts,
                "seeds": seeds,
                "recorded": rec,
                "agrees_with_recorded": agree_rec,
                # a run that failed has no verdict: it agrees with nothing
                "seeds_agreeing": max((n for v, n in counts.items() if v is not None), default=0),
            }
        )
        if not args.json:
            for r in mine:
                _print_result(r, rec)
            if len(seeds) > 1:
                print(f"  seeds {seeds}: {summary[-1]['seeds_agreeing']} of {len(seeds)} give the same verdict")
    if args.json:
        print(json.dumps({"claims": summary, "runs": results}, indent=1))
    else:
        failed = list(dict.fromkeys(r["id"] for r in results if "error" in r))
        differ = [s["id"] for s in summary if not s["agrees_with_recorded"] and s["id"] not in failed]
        parts = [f"{len(failed)} failed to run: {', '.join(failed)}"] if failed else []
        parts += [f"{len(differ)} differ from the recorded verdict: {', '.join(differ)}"] if differ else []
        if len(ids) > len(failed) + len(differ):
            parts.append("the others as recorded" if parts else "as recorded")
        print(f"{len(ids)} claims, profile {args.profile}, seeds {seeds}: " + "; ".join(parts))
    if args.record:  # after what was found is printed: a write that fails loses none of it
        try:
            write_seeds_file(args.build_dir, args.profile, seeds, summary)
        except OSError as exc:
            print(
                f"error: --record: cannot write {Path(args.build_dir) / SEEDS_FILE} ({exc.strerror or exc})",
                file=sys.stderr,
            )
            return 1
    return status


def check_record_dir(build_dir: Path) -> Path:
    """``build_dir`` resolved, if ``--record`` may write :data:`SEEDS_FILE` there; else a one-line ValueError.

    The book tooling's rule (:func:`resnet_theory.outputs.check_output`), against every book at or above the
    working directory and the folder itself: never a source folder, another build's records, or a build
    folder inside a source tree other than its ``_build``."""
    path = Path(build_dir)
    blocking = next((p for p in (path, *path.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:  # found before the seeds run, not when their verdicts are to be written
        where = "" if blocking == path else f" ({blocking} is a file)"
        raise UsageError(f"--build-dir {build_dir}: not a folder{where}")
    return check_command_output(path, "--build-dir", folder=True)


def write_seeds_file(build_dir: Path, profile: str, seeds: list[int], summary: list[dict]) -> Path:
    """Write :data:`SEEDS_FILE` into ``build_dir`` (atomically: a temporary beside it, then renamed); a folder
    :func:`check_record_dir` refuses is refused."""
    build_dir = check_record_dir(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "profile": profile,
        "seeds": list(seeds),
        "claims": {s["id"]: {"verdicts": s["verdicts"], "seeds_agreeing": s["seeds_agreeing"]} for s in summary},
    }
    target = build_dir / SEEDS_FILE
    tmp = build_dir / f".{SEEDS_FILE}.tmp"
    try:
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m resnet_theory.claims", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    ls = sub.add_parser("list", help="every claim id, its location and its recorded verdict")
    ls.add_argument("--json", action="store_true", help="the list as JSON")
    ls.add_argument("--build-dir", type=Path, default=Path("_build"), help="the build whose verdicts are shown")
    v = sub.add_parser(
        "verify",
        help="re-check claims on their own",
        description="Re-check claims on their own: each claim's statement, checks, control and verdict. Exit 0 when "
        "every verdict is the one the build recorded (or none is recorded), 1 when one differs (or differs between "
        "seeds) or a claim's function fails, 2 on bad input.",
    )
    v.add_argument("ids", nargs="*", metavar="ID", help="claim ids, e.g. hardt-ma/thm-2.1 (list shows them)")
    v.add_argument("--all", action="store_true", help="every claim")
    v.add_argument("--profile", choices=("quick", "full"), default="quick", help="the sizes to run at (default quick)")
    v.add_argument("--seed", type=_seed, default=0, help="the seed (default 0)")
    v.add_argument("--seeds", type=_seed, nargs="+", help="run at each seed; say how many agree")
    v.add_argument(
        "--knob",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a knob of the claims' chapter's profile table (a JSON value); claims of one chapter only",
    )
    v.add_argument("--jobs", type=int, default=2, help="processes (default 2, one a core)")
    v.add_argument("--json", action="store_true", help="print what was found as JSON")
    v.add_argument("--record", action="store_true", help=f"write what --seeds found to BUILD/{SEEDS_FILE}")
    v.add_argument("--build-dir", type=Path, default=Path("_build"), help="where the recorded verdicts are")
    return p


class _Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout, ``kill``) stops ``verify`` as Ctrl-C does: its worker processes with it."""


def _raise_terminated(signum, frame):
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    import signal
    import threading

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        return _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parser().parse_args(argv)
        if args.command == "verify" and args.record:
            check_record_dir(args.build_dir)  # before anything runs
        if args.command == "verify" and args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
        if args.command == "verify" and args.record and not (args.all and args.seeds):
            raise UsageError("--record writes what --all --seeds found: give both")
        return cmd_list(args) if args.command == "list" else cmd_verify(args)
    except (UsageError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except WorkerDied as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        name = "SIGTERM" if isinstance(exc, _Terminated) else "SIGINT"
        print(f"error: interrupted ({name})", file=sys.stderr)
        return 143 if name == "SIGTERM" else 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
