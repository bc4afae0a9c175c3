"""Where the book's commands may write, and one run per build folder.

Every command that writes (``run -o``, ``execute``/``run --build-dir``, ``pdf -o``, ``browser --screenshots``)
checks its output with :func:`check_output` before anything runs. The rule is
:func:`resnet_theory.outputs.check_output`, shared with ``python -m resnet_theory.claims verify --record``: an
output is never a chapter source, a file under ``book/``, ``lib/`` or ``tests/``, a file inside a build's
``executed/`` or ``cache/`` folder (another chapter's outputs: only the executor writes there, each chapter to
its own place), nor a build folder inside the source tree other than the default ``_build`` (and folders under
it, as ``_build/seed-1``). Paths are compared after resolving symbolic links and ``..``.

:class:`BuildLock` holds an exclusive lock on a build folder while a run uses it, so that a second run on the
same build stops at once with one line instead of overwriting the first one's files.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import outputs
from ..outputs import RECORD_FOLDERS, SOURCE_FOLDERS  # noqa: F401 (this module's API)
from .toc import BookError


def check_output(
    path: Path,
    root: Path,
    option: str,
    *,
    folder: bool = False,
    suffix: str | None = None,
    own: Path | None = None,
    build_dirs: tuple[Path, ...] = (),
) -> Path:
    """The resolved ``path`` if a command may write there (a file, or with ``folder`` a folder it fills); else a
    one-line :class:`BookError` naming ``option`` and why (:func:`resnet_theory.outputs.check_output`, the rule
    the claims command line shares). ``own`` is the one place inside a build folder this output may be (a
    chapter's own executed notebook); ``build_dirs`` are the run's build folders."""
    try:
        return outputs.check_output(path, root, option, folder=folder, suffix=suffix, own=own, build_dirs=build_dirs)
    except outputs.OutputRefused as exc:
        raise BookError(str(exc)) from None


class BuildLock:
    """An exclusive, non-blocking lock on a build folder (``<build>/.lock``) for the length of a run.

    A second run on the same build raises :class:`BookError` at once, naming the process that holds it. The
    lock is the kernel's (``flock``): it goes with the process, so a run killed outright leaves none behind. An
    output's hidden lock file is removed when its run ends (a run killed outright leaves the file, unlocked).
    """

    def __init__(self, build_dir: Path, output: Path | None = None):
        """Lock ``build_dir``; or, with ``output`` (``run -o FILE`` outside a build folder), that one output, by
        the hidden file ``.FILE.lock`` beside it (runs of other outputs in the same folder go on side by side)."""
        self.output = output
        self.path = Path(build_dir) / ".lock" if output is None else output.with_name(f".{output.name}.lock")
        self.handle = None

    def __enter__(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            self.handle = open(self.path, "a+")
            return self
        while True:
            handle = open(self.path, "a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                self._refuse(handle)
            # An output's lock file is removed by the run that held it (:meth:`__exit__`): a file opened before
            # that removal is locked in vain, so the lock counts only while its file is still the one at the path.
            if self._still_at_path(handle):
                break
            handle.close()
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self.handle = handle
        return self

    def _still_at_path(self, handle) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(handle.fileno()).st_ino
        except FileNotFoundError:
            return False

    def _refuse(self, handle):
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        if self.output is not None:
            raise BookError(
                f"-o {self.output} is being written by another run ({holder}); wait for it to finish or give another -o"
            ) from None
        raise BookError(
            f"the build folder {self.path.parent} is in use by another run ({holder}); wait for it to "
            f"finish or give another --build-dir"
        ) from None

    def __exit__(self, *exc):
        if self.handle is not None:
            if self.output is not None:  # the hidden .FILE.lock beside an -o output goes with the run
                self.path.unlink(missing_ok=True)
            self.handle.close()
            self.handle = None
