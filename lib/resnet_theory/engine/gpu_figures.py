"""The measurements of real GPU runs, read back for the book: ``book/data/gpu/*.json``.

Each file is what ``python -m resnet_theory.engine.gpu_check OUTDIR`` wrote (``OUTDIR/gpu-check.json``), committed
unchanged after a run on a real GPU. :func:`read_measurement` reads and validates one file (the schema, the device's
name, the torch / CUDA / Python versions, every step's name and status, every speed figure) and refuses a malformed
one with one line naming the file and what is wrong; :func:`measurement_rows` turns a folder of them into one row
per speed figure, for a table in the experiments chapter and on the status page, and :func:`measurement_steps` into
one row per step (its status and line). No torch import: the status page can read them without it.

The files come from another machine, so what the book shows of them is checked as plain text: the device's name,
the versions, the run's date and each speed figure's precision are letters, digits, spaces and ``.,:;()+-/=_@#``
only (no ``$``, backslash or angle bracket: nothing a page would read as math or markup), and a speed figure's mode
is one the check measures (:data:`MODE_WORDS`). ``python -m resnet_theory.engine.gpu_figures add
GPU_OUT/gpu-check.json`` validates a run's file and copies it, unchanged, to
``book/data/gpu/<device>-<date>-<time>.json``, never over a file already there.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from pathlib import Path

#: The ``schema`` of the files that :mod:`resnet_theory.engine.gpu_check` writes.
SCHEMA = "resnet-theory-gpu-check/1"
STATUSES = ("PASS", "FAIL", "SKIP")
#: The book's goal for its whole CIFAR schedule (64,000 steps of 128 images: the paper's batch and rate drops, the end
#: of He et al.'s schedule, since the paper does not print its runs' length) on one H100/H200.
GOAL_MINUTES = 10.0
DEFAULT_FOLDER = Path(__file__).resolve().parents[3] / "book" / "data" / "gpu"
#: How the book names each speed step's mode.
MODE_WORDS = {
    "eager": "eager",
    "default": "torch.compile",
    "reduce-overhead": "torch.compile with CUDA graphs",
    "max-autotune": "torch.compile, max-autotune",
}


class MeasurementError(ValueError):
    """A measurement file that is not a complete, well-formed gpu_check JSON (the message names it)."""


def _need(condition: bool, path: Path, what: str) -> None:
    if not condition:
        raise MeasurementError(f"{path}: {what}")


def _text(d: dict, key: str, path: Path, where: str) -> str:
    value = d.get(key) if isinstance(d, dict) else None
    _need(isinstance(value, str) and value.strip() != "", path, f"{_name(where, key)} must be a non-empty string")
    return value


def _name(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


#: What a shown string may hold: nothing a page reads as math or markup.
PLAIN_TEXT = re.compile(r"[\w .,:;()+\-/=@#]+")


def _plain(d: dict, key: str, path: Path, where: str) -> str:
    value = _text(d, key, path, where)
    _need(
        PLAIN_TEXT.fullmatch(value) is not None,
        path,
        f"{_name(where, key)} must be plain text (letters, digits, spaces and .,:;()+-/=_@#), got {value!r}",
    )
    return value


def _finite(value) -> bool:
    """A JSON number that is finite as a float (an integer of 400 digits is not: ``float()`` overflows)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _number(d: dict, key: str, path: Path, where: str, positive: bool = False) -> float:
    value = d.get(key) if isinstance(d, dict) else None
    ok = _finite(value)
    _need(ok and (value > 0 or not positive), path, f"{where}.{key} must be a finite{' positive' * positive} number")
    return float(value)


def _speed_figures(figures: dict, path: Path, where: str) -> None:
    for key in ("images_per_second", "schedule_minutes", "batch_size", "trainable_parameters"):
        _number(figures, key, path, where, positive=True)
    mode = _text(figures, "mode", path, where)
    _need(mode in MODE_WORDS, path, f"{where}.mode must be one of {', '.join(MODE_WORDS)}, got {mode!r}")
    _plain(figures, "precision", path, where)
    spread = figures.get("spread")
    _need(isinstance(spread, dict), path, f"{where}.spread must be an object (median, min, max, relative)")
    for key in ("median", "min", "max"):
        _number(spread, key, path, f"{where}.spread", positive=True)
    _number(spread, "relative", path, f"{where}.spread")
    rounds = figures.get("rounds_images_per_second")
    _need(
        isinstance(rounds, list) and len(rounds) >= 1 and all(_finite(r) and r > 0 for r in rounds),
        path,
        f"{where}.rounds_images_per_second must be a non-empty list of finite positive numbers",
    )


def read_measurement(path) -> dict:
    """One gpu_check JSON, validated; raises :class:`MeasurementError` (one line naming the file) when it is not
    valid JSON, not of :data:`SCHEMA`, not from a CUDA device, lacks the device's name or the versions, has a step
    that is malformed, or a speed step whose figures are incomplete."""
    path = Path(path)
    return _validated(_read(path), path)


#: The largest measurement file read: a gpu_check JSON is a few kilobytes; a larger one (or /dev/zero) is no run's.
MAX_BYTES = 16 * 2**20


def _read(path: Path) -> bytes:
    """The bytes of the file at ``path``: a regular file of at most :data:`MAX_BYTES` (read once), else a
    :class:`MeasurementError`."""
    try:
        if path.exists() and not path.is_file():
            raise MeasurementError(f"{path}: not a regular file (a folder, a device or a pipe)")
        if path.stat().st_size > MAX_BYTES:
            raise MeasurementError(f"{path}: {path.stat().st_size:,} bytes, larger than a gpu_check JSON can be")
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise MeasurementError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:  # grown since its size was looked at
        raise MeasurementError(f"{path}: larger than a gpu_check JSON can be")
    return data


def _validated(data: bytes, path: Path) -> dict:
    """:func:`read_measurement` of a file's bytes (read once: what is validated is what is copied)."""
    try:
        d = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError; RecursionError: [[[[...
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise MeasurementError(f"{path}: not valid JSON ({why})") from None
    _need(isinstance(d, dict), path, "the top level must be an object")
    _need(d.get("schema") == SCHEMA, path, f"schema must be {SCHEMA!r}, got {d.get('schema')!r}")
    device = d.get("device")
    _need(isinstance(device, dict), path, "device must be an object")
    _plain(device, "name", path, "device")
    _need(
        str(device.get("type")) == "cuda", path, f"device.type must be 'cuda' (a real GPU), got {device.get('type')!r}"
    )
    versions = d.get("versions")
    for key in ("python", "torch", "cuda"):
        _plain(versions, key, path, "versions")
    if "started_utc" in d:
        _plain(d, "started_utc", path, "")
    _need(isinstance(d.get("complete"), bool), path, "complete must be true or false")
    steps = d.get("steps")
    _need(isinstance(steps, list) and len(steps) >= 1, path, "steps must be a non-empty list")
    for i, step in enumerate(steps):
        where = f"steps[{i}]"
        _plain(step, "name", path, where)  # the summary in the chapter's prose names failed and skipped steps
        _need(step.get("status") in STATUSES, path, f"{where}.status must be one of {', '.join(STATUSES)}")
        _need(isinstance(step.get("text"), str), path, f"{where}.text must be a string")  # shown escaped only
        seconds = step.get("seconds")
        _need(
            seconds is None or (_finite(seconds) and seconds >= 0),
            path,
            f"{where}.seconds must be a finite number >= 0 when given",
        )
        _need(isinstance(step.get("figures"), dict), path, f"{where}.figures must be an object")
        if step["name"].startswith("speed ") and step["status"] == "PASS":
            _speed_figures(step["figures"], path, f"{where}.figures")
    return d


def measurement_rows(folder=None) -> list[dict]:
    """One row per passed speed step of every ``*.json`` in ``folder`` (default ``book/data/gpu/``), sorted by file
    and step order: file, device, versions, when, mode, images/s (median over rounds, its range and spread), the
    projected time of the 64,000-step schedule, whether it meets :data:`GOAL_MINUTES`, and how many of the
    run's steps passed. An empty list when the folder holds none (no GPU has run the check yet); a malformed file
    raises :class:`MeasurementError`."""
    folder = DEFAULT_FOLDER if folder is None else Path(folder)
    if folder.exists() and not folder.is_dir():
        raise MeasurementError(f"{folder}: not a folder")
    rows = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        d = read_measurement(path)
        passed = sum(s["status"] == "PASS" for s in d["steps"])
        for step in d["steps"]:
            if not (step["name"].startswith("speed ") and step["status"] == "PASS"):
                continue
            f = step["figures"]
            rows.append(
                {
                    "file": path.name,
                    "device": d["device"]["name"],
                    "torch": d["versions"]["torch"],
                    "cuda": d["versions"]["cuda"],
                    "python": d["versions"]["python"],
                    "when": d.get("started_utc", ""),
                    "mode": f["mode"],
                    "model": str(f.get("model", "full")),
                    "precision": f["precision"],
                    "batch_size": int(f["batch_size"]),
                    "trainable_parameters": int(f["trainable_parameters"]),
                    "images_per_second": f["images_per_second"],
                    "images_per_second_min": f["spread"]["min"],
                    "images_per_second_max": f["spread"]["max"],
                    "spread": f["spread"]["relative"],
                    "rounds": len(f["rounds_images_per_second"]),
                    "schedule_minutes": f["schedule_minutes"],
                    "goal_met": f["schedule_minutes"] <= GOAL_MINUTES,
                    "steps_passed": f"{passed} of {len(d['steps'])}",
                    "complete": d["complete"],
                }
            )
    return rows


def measurement_steps(folder=None) -> list[dict]:
    """One row per step of every ``*.json`` in ``folder`` (default ``book/data/gpu/``): file, device, step, status
    (PASS, FAIL or SKIP), its seconds and its one-line text, for a status table; validated as in
    :func:`measurement_rows`."""
    folder = DEFAULT_FOLDER if folder is None else Path(folder)
    if folder.exists() and not folder.is_dir():
        raise MeasurementError(f"{folder}: not a folder")
    rows = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        d = read_measurement(path)
        for step in d["steps"]:
            seconds = step.get("seconds")
            rows.append(
                {
                    "file": path.name,
                    "device": d["device"]["name"],
                    "step": step["name"],
                    "status": step["status"],
                    "seconds": float(seconds) if isinstance(seconds, (int, float)) else None,
                    "text": step["text"],
                }
            )
    return rows


def table_rows(rows: list[dict]) -> list[dict]:
    """:func:`measurement_rows` as the book's table shows them: one row per passed speed step, in words."""
    return [
        {
            "device": r["device"],
            "torch, CUDA": f"{r['torch']}, {r['cuda']}",
            "mode": MODE_WORDS.get(r["mode"], r["mode"]),
            "precision": r["precision"],
            "images/s (median)": r["images_per_second"],
            "lowest round": r["images_per_second_min"],
            "highest round": r["images_per_second_max"],
            "rounds": r["rounds"],
            "64,000 steps (min)": r["schedule_minutes"],
            "goal of 10 min": "met" if r["goal_met"] else "not met",
        }
        for r in rows
    ]


def summary(rows: list[dict], steps: list[dict]) -> str:
    """One paragraph for the book's prose: what the newest whole committed run measured (its device, versions,
    date, the fastest mode and eager, the 64,000-step schedule against :data:`GOAL_MINUTES`, its steps), or, when
    ``book/data/gpu/`` holds none, that no GPU has run the check yet."""
    if not steps:
        return (
            "No GPU has run the check yet: the folder book/data/gpu/ holds no measurement, so this book shows no "
            "speed measured on a GPU. Its figures will be those of a real run of the check on one H100 or H200, "
            "committed as that run wrote them."
        )
    # the newest of the runs of the most steps (a whole run, not one of some steps again: --only), by start time; a
    # file without a passed speed step sorts by its name alone
    started = {r["file"]: r["when"] for r in rows}
    count = {f: sum(s["file"] == f for s in steps) for f in {s["file"] for s in steps}}
    newest = max(count, key=lambda f: (count[f], started.get(f, ""), f))
    own = [s for s in steps if s["file"] == newest]
    tally = f"{sum(s['status'] == 'PASS' for s in own)} of its {len(own)} steps passed"
    for status, verb in (("FAIL", "failed"), ("SKIP", "{was} skipped")):
        named = [s["step"] for s in own if s["status"] == status]
        if named:
            verb = verb.format(was="was" if len(named) == 1 else "were")
            tally += f", {len(named)} {verb} ({', '.join(named)})"
    speeds = [r for r in rows if r["file"] == newest]
    device = own[0]["device"]
    if not speeds:
        return f"The newest measurement ({newest}, on {device}) has no speed figure: {tally}."
    best = max(speeds, key=lambda r: r["images_per_second"])
    eager = next((r for r in speeds if r["mode"] == "eager"), None)
    when = best["when"][:10] or "an unrecorded date"
    network = "the paper's network" if best["model"] == "full" else "a smaller network than the paper's"
    text = (
        f"On one {device} (torch {best['torch']}, CUDA {best['cuda']}, Python {best['python']}; run of {when}, "
        f"file {newest}), {network} ({best['trainable_parameters']:,} trainable parameters) trained "
        f"fastest with {MODE_WORDS.get(best['mode'], best['mode'])}: {best['images_per_second']:,.0f} images per "
        f"second at batch {best['batch_size']} in {best['precision']} (median of {best['rounds']} rounds, "
        f"{best['images_per_second_min']:,.0f} to {best['images_per_second_max']:,.0f}), so the 64,000 "
        f"steps of the book's whole CIFAR run (the end of He et al.'s schedule) would take "
        f"{best['schedule_minutes']:.1f} minutes, "
        f"{'within' if best['goal_met'] else 'over'} the book's goal of {GOAL_MINUTES:g} minutes."
    )
    if eager is not None and eager is not best:
        text += (
            f" Eager, it trained {eager['images_per_second']:,.0f} images per second "
            f"({eager['schedule_minutes']:.1f} minutes for the schedule)."
        )
    return text + f" The check's steps: {tally}."


def file_name(d: dict) -> str:
    """Where a measurement goes in ``book/data/gpu/``: its device, the date and the time it started (UTC), one name
    per run, ``nvidia-h200-2026-11-28-1402.json`` (a second run that day, of some steps again, gets its own)."""
    device = re.sub(r"[^a-z0-9]+", "-", d["device"]["name"].lower(), flags=re.ASCII).strip("-") or "gpu"
    when = re.fullmatch(r"(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}).*", str(d.get("started_utc", "")), flags=re.ASCII)
    return f"{device}-{when[1]}-{when[2]}{when[3]}.json" if when else f"{device}.json"


def add(path, folder=None) -> Path:
    """Validate one gpu_check JSON (:func:`read_measurement`) and copy it, byte for byte, into ``folder`` (default
    ``book/data/gpu/``) under :func:`file_name`; the copy is never written over a file already there (the same
    bytes there already: nothing to do). Returns where it is; raises :class:`MeasurementError` in one line."""
    path = Path(path)
    data = _read(path)
    d = _validated(data, path)
    folder = DEFAULT_FOLDER if folder is None else Path(folder)
    if folder.exists() and not folder.is_dir():
        raise MeasurementError(f"{folder}: not a folder")
    if folder.resolve() != DEFAULT_FOLDER.resolve():  # the book's own folder is under book/ by design
        from resnet_theory.outputs import OutputRefused, check_command_output

        try:
            check_command_output(folder, "--to", folder=True)
        except OutputRefused as exc:
            raise MeasurementError(str(exc)) from None
    target = folder / file_name(d)
    if target.exists():
        if target.read_bytes() == data:
            return target
        raise MeasurementError(f"{target}: a different measurement is already there; nothing was written")
    tmp = folder / f".{target.name}.tmp{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.link(tmp, target)  # fails, writing nothing, if the name was taken meanwhile
    except FileExistsError:
        raise MeasurementError(f"{target}: a different measurement is already there; nothing was written") from None
    except OSError as exc:  # a full disk, no permission, a file where a folder of the path should be
        raise MeasurementError(f"{target}: cannot be written ({exc.strerror or exc}); nothing was written") from None
    finally:
        with contextlib.suppress(OSError):  # gone, or its folder never made
            tmp.unlink()
    return target


def main(argv: list[str] | None = None) -> int:
    from resnet_theory import validate

    parser = validate.OneLineParser(
        prog="python -m resnet_theory.engine.gpu_figures",
        description="Add a GPU check's measurement to the book (validated, copied unchanged, never over another).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    adding = sub.add_parser("add", help="validate GPU_OUT/gpu-check.json and copy it into book/data/gpu/")
    adding.add_argument("file")
    adding.add_argument("--to", help="the folder (default: book/data/gpu/ of this checkout)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        target = add(args.file, args.to)
    except MeasurementError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    d = read_measurement(target)
    passed = sum(st["status"] == "PASS" for st in d["steps"])
    print(f"{target}: {d['device']['name']}, {passed} of {len(d['steps'])} steps passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
