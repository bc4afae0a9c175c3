"""The book executor: papermill over the jupytext chapters, then a Jupyter Book build of the results.

Usage (from the repository root, inside the project's environment)::

    python -m resnet_theory.book execute [--profile quick|full] [--force] [-p NAME VALUE]... [-p CHAPTER:NAME VALUE]...
    python -m resnet_theory.book run book/CHAPTER.md [--profile quick|full] [-p NAME VALUE]... [-o out.ipynb]

What the commands do: :mod:`resnet_theory.book.build` and :mod:`resnet_theory.book.run_command`. A problem
found before anything runs (:class:`~resnet_theory.book.toc.BookError`) is printed as one ``error:`` line,
exit 2; SIGTERM stops a run as Ctrl-C does (exit 143 and 130).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..validate import OneLineParser
from .build import execute_book
from .execute import BookInterrupted, StoppedBeforeRunning, stopped_before_running
from .repository import RepositoryError
from .run_command import run_chapter
from .safety import check_output
from .side_by_side import parse_jobs
from .toc import BookError, find_root


def _raise_on_signal(signum, frame):
    import signal

    raise BookInterrupted(signal.Signals(signum).name)


_COMMANDS = {
    "execute": "execute the book's chapters (those whose inputs changed since their outputs were computed; all with "
    "--force) and build the HTML",
    "run": "execute one chapter (always) and print the verdicts it recorded: into the build folder, or to -o "
    "FILE.ipynb with its claims beside it (FILE.claims.json)",
}


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m resnet_theory.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name in ("execute", "run"):
        p = sub.add_parser(name, help=_COMMANDS[name], description=_COMMANDS[name])
        if name == "run":
            p.add_argument("chapter", help="a chapter source, e.g. book/linear.md")
            p.add_argument(
                "-o",
                "--output",
                type=Path,
                help="the executed notebook (.ipynb) to write, and its claims beside it (FILE.claims.json); "
                "default: BUILD/executed/book/CHAPTER.ipynb, which a later execute reuses",
            )
        else:
            p.add_argument("--no-html", action="store_true", help="execute only; do not build HTML")
            p.add_argument("--only", nargs="+", help="execute only these TOC entries (e.g. book/linear)")
            p.add_argument(
                "--jobs",
                default=None,
                help="chapters executed at once, each with its own kernel (default: 2 with two cores or more; "
                "1 executes them one after another)",
            )
            p.add_argument(
                "--force",
                action="store_true",
                help="execute every chapter, even those whose cached outputs are up to date",
            )
        p.add_argument("--profile", default="quick", help="quick (CPU, minutes) or full (GPU-sized)")
        p.add_argument(
            "-p",
            "--parameter",
            nargs=2,
            action="append",
            default=[],
            metavar=("NAME", "VALUE"),
            help="a value for the chapters' parameters cells, for every chapter that defines NAME (CHAPTER:NAME: "
            "for one); VALUE a Python or JSON literal of the default's type (-p seed 3, -p knobs "
            "'{\"max_depth\": 200}'), a word a string; a folder (data_dir, runs_dir) is relative to where this "
            "command runs; repeatable",
        )
        p.add_argument("--root", type=Path, help="the book's root (default: found from the working directory)")
        p.add_argument(
            "--build-dir", type=Path, help="the build folder, locked while the run uses it (default: ROOT/_build)"
        )
    return parser


def main(argv: list[str] | None = None) -> int:
    import signal

    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a bad option (2, one line already printed)
        return int(exc.code or 0)
    # SIGTERM (a CI timeout, `kill`) stops the run like Ctrl-C: old outputs kept, the report says so.
    previous = signal.getsignal(signal.SIGTERM)
    in_main_thread = __import__("threading").current_thread() is __import__("threading").main_thread()
    if in_main_thread:
        signal.signal(signal.SIGTERM, _raise_on_signal)
    created = None
    try:
        with stopped_before_running():
            root, build_dir, created = _folders(args)
        overrides = [tuple(p) for p in args.parameter]
        if args.command == "execute":
            jobs = None if args.jobs is None else parse_jobs(args.jobs)
            return execute_book(
                root,
                build_dir,
                args.profile,
                overrides,
                html=not args.no_html,
                only=args.only,
                force=args.force,
                jobs=jobs,
            )
        return run_chapter(root, args.chapter, args.profile, overrides, args.output, build_dir)
    except (BookError, RepositoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if created is not None:  # refused input leaves no new, empty build folder behind
            _remove_if_unused(created)
        return 2
    except KeyboardInterrupt as exc:  # a page's execution reports its own interruption: this one came outside one
        name = getattr(exc, "signal_name", "SIGINT")
        if isinstance(exc, StoppedBeforeRunning):
            print(f"[book] interrupted ({name}) before any page was executed; nothing was written", file=sys.stderr)
        else:
            print(f"[book] interrupted ({name}); no page was cut short (the report says what ran)", file=sys.stderr)
        if created is not None:
            _remove_if_unused(created)
        return 130 if name == "SIGINT" else 143
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _folders(args) -> tuple[Path, Path, Path | None]:
    """The book's root and build folder, checked (one :class:`BookError` line each) and the build folder made;
    the third item is the build folder when this command made it (removed again if a refusal leaves it empty)."""
    root = (args.root or find_root()).resolve()
    if args.root is not None and not root.is_dir():
        raise BookError(f"--root {args.root}: {'not a folder' if root.exists() else 'no such folder'}")
    if args.root is not None and not ((root / "_toc.yml").is_file() and (root / "_config.yml").is_file()):
        raise BookError(f"--root {args.root}: no _toc.yml and _config.yml there (not a book's root)")
    build_dir = (args.build_dir or root / "_build").resolve()
    if build_dir.exists() and not build_dir.is_dir():
        raise BookError(f"--build-dir {args.build_dir or build_dir}: not a folder")
    # never a build folder among the sources (book/, lib/, tests/) or elsewhere in the source tree but _build
    check_output(args.build_dir or build_dir, root, "--build-dir", folder=True)
    created = build_dir if not build_dir.exists() else None
    try:
        build_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BookError(
            f"--build-dir {args.build_dir or build_dir}: cannot create it ({exc.strerror or exc})"
        ) from None
    return root, build_dir, created


def _remove_if_unused(folder: Path) -> None:
    """Remove ``folder`` (made by this command) if it holds nothing but the run's lock file."""
    try:
        entries = {entry.name for entry in folder.iterdir()}
        if entries <= {".lock"}:
            (folder / ".lock").unlink(missing_ok=True)
            folder.rmdir()
    except OSError:
        pass
