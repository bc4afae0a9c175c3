"""Executing one chapter: papermill with a kernel (or in the executor's process), outputs moved into place.

**Atomic outputs.** A chapter's notebook and claims are written to hidden temporary files beside their
final place and moved into place only when the chapter finishes without error. A failed chapter or an
interrupted run (Ctrl-C, SIGTERM) leaves the previous good outputs; the report then says what happened
(``state``: ``failed`` or ``interrupted``, with the signal, the chapter and the parameters of the attempt),
and an interrupted run exits 130 (SIGINT) or 143 (SIGTERM) without building HTML. Temporaries of runs that
were killed outright are removed by the next run.

**A quiet interruption.** The kernel runs in a session of its own (jupyter_client starts it so), so a terminal's
Ctrl-C reaches the executor only; the executor then shuts the kernel down, and jupyter_client's shutdown
interrupts the busy kernel and at once asks it to stop, so that ipykernel, still replying to the interrupted cell,
may log a ``ZMQError`` traceback on a socket its shutdown already closed. The kernel's standard error therefore
reaches the executor's through a pipe (:class:`KernelStderr`), passed on as it comes, and dropped while a kernel is
shut down because the run was interrupted: the user sees the executor's one line, ``interrupted (SIGINT)``.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..ledger import CLAIMS_FILE_ENV
from .cache import cache_key, cache_record_path, read_cache_record, write_cache_record
from .claims_files import BUILD_DIR_ENV, ROOT_ENV
from .cpu import process_cpu_seconds
from .files import claims_path, file_sha, read_json_object, write_atomic
from .inprocess import CellError, run_in_process
from .machine_paths import scrub_notebook
from .parameters import defined_parameters
from .plan import ChapterPlan
from .report import ChapterResult, now


class BookInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal (Ctrl-C, SIGTERM); the chapter in progress keeps its old outputs."""

    def __init__(self, signal_name: str = "SIGINT"):
        super().__init__(signal_name)
        self.signal_name = signal_name


class StoppedBeforeRunning(BookInterrupted):
    """The run was stopped while its request was read and checked, before any page was executed: nothing was
    written (see :func:`stopped_before_running`)."""


@contextmanager
def stopped_before_running():
    """Within it, an interruption (Ctrl-C, SIGTERM) is a :class:`StoppedBeforeRunning`: the command says so in one
    line, not with the traceback of whatever module was being imported."""
    try:
        yield
    except StoppedBeforeRunning:
        raise
    except KeyboardInterrupt as exc:
        raise StoppedBeforeRunning(getattr(exc, "signal_name", "SIGINT")) from None


class KernelStderr:
    """A kernel's standard error, passed on to this process's (file descriptor 2) by a thread as it comes, until
    :meth:`mute` is called; then dropped. The kernel is started with :attr:`write_fd` as its standard error, and
    :meth:`start` closes this process's copy of it, so that the thread sees the end of the stream when the kernel
    (and every process it started that kept it) has exited."""

    #: Seconds :meth:`finish` waits for the stream to end once the kernel is down.
    FINISH_SECONDS = 2.0

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.muted = False
        self.thread = threading.Thread(target=self._pass_on, name="kernel-stderr", daemon=True)

    def start(self) -> None:
        os.close(self.write_fd)
        self.thread.start()

    def close(self) -> None:
        """Undo a pipe no kernel was started with."""
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def mute(self) -> None:
        self.muted = True

    def finish(self) -> None:
        """Wait (briefly) until the kernel's last words are passed on: its process is gone by now."""
        self.thread.join(self.FINISH_SECONDS)

    def _pass_on(self) -> None:
        try:
            while chunk := os.read(self.read_fd, 65536):
                while chunk and not self.muted:
                    try:
                        chunk = chunk[os.write(2, chunk) :]
                    except OSError:  # this process's standard error is closed: the text has nowhere to go
                        break
        finally:
            os.close(self.read_fd)


def kernel_manager_class(sink: dict | None = None):
    """The kernel manager papermill starts chapters with: on POSIX systems the kernel talks to the executor over
    Unix sockets in a private temporary folder of its own (absolute names, mode 0700), not over TCP ports on
    localhost, which any local user could connect to (ipykernel warns about it on every start), and not in the
    chapter's folder, where two runs would share the names; elsewhere the default TCP manager. Just before the
    kernel is shut down, the CPU seconds of its process tree are stored in ``sink["cpu_seconds"]``.

    On POSIX systems the kernel's standard error reaches this process's through a :class:`KernelStderr`, which is
    muted when the kernel is shut down because the run is being interrupted (the shutdown runs while a
    :class:`KeyboardInterrupt`, as Ctrl-C and the executor's SIGTERM raise, is propagating): the kernel's
    complaints about being stopped mid-reply are not the user's concern."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import CaselessStrEnum

    from .cpu import process_tree_cpu_seconds

    class MeasuredKernelManager(AsyncKernelManager):
        _stderr: KernelStderr | None = None

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
            if os.name != "posix" or kw.get("stderr") is not None:
                await super()._async_launch_kernel(kernel_cmd, **kw)
                return
            stderr = KernelStderr()
            try:
                await super()._async_launch_kernel(kernel_cmd, **{**kw, "stderr": stderr.write_fd})
            except BaseException:
                stderr.close()
                raise
            stderr.start()
            self._stderr = stderr

        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            stderr = self._stderr
            if stderr is not None and isinstance(sys.exc_info()[1], KeyboardInterrupt):
                stderr.mute()
            pid = getattr(self.provisioner, "pid", None)
            if sink is not None and pid:
                sink["cpu_seconds"] = process_tree_cpu_seconds(pid)
            try:
                await super().shutdown_kernel(now=now, restart=restart)
            finally:
                if stderr is not None:
                    stderr.finish()

    if os.name != "posix":
        return MeasuredKernelManager

    class UnixSocketKernelManager(MeasuredKernelManager):
        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def _ip_default(self) -> str:
            import tempfile

            self._socket_folder = tempfile.mkdtemp(prefix="rtk-")
            return os.path.join(self._socket_folder, "kernel")

        async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
            await super().shutdown_kernel(now=now, restart=restart)
            folder = getattr(self, "_socket_folder", None)
            if folder and not restart:
                import shutil

                shutil.rmtree(folder, ignore_errors=True)

    return UnixSocketKernelManager


def _kernel_env() -> None:
    # An Agg backend in the environment makes every figure vanish from executed notebooks.
    os.environ.pop("MPLBACKEND", None)


def partial_paths(output: Path, pid: int | None = None) -> tuple[Path, Path]:
    """Where an execution writes before it is moved into place: hidden files beside ``output``."""
    tag = f".{output.stem}.partial-{pid or os.getpid()}"
    return output.with_name(tag + ".ipynb"), output.with_name(tag + ".claims.json")


def remove_stale_partials(output: Path) -> list[Path]:
    """Delete the temporaries that runs which no longer exist (killed with SIGKILL, power loss) left for
    ``output``: only files named exactly as :func:`partial_paths` names them, beside ``output``; nothing else in
    its folder, and nothing in the folders below it, is looked at."""
    import re

    removed = []
    folder = output.parent
    if not folder.is_dir():
        return removed
    pattern = re.compile(r"\." + re.escape(output.stem) + r"\.partial-(\d+)\.(ipynb|claims\.json)")
    for path in folder.iterdir():
        match = pattern.fullmatch(path.name)
        if not match or path not in partial_paths(output, int(match.group(1))) or not path.is_file():
            continue
        pid = int(match.group(1))
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except (PermissionError, OverflowError):
            alive = True
        if not alive:
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def previous_outputs(output: Path, record: dict | None) -> str:
    if not output.is_file():
        return "none"
    when = (record or {}).get("executed_at")
    return f"the previous outputs (executed {when})" if when else "the previous outputs"


def execute_chapter(
    plan: ChapterPlan,
    output: Path,
    build_dir: Path | None,
    profile: str,
    device: str,
    components: dict | None = None,
    reason: str = "",
) -> ChapterResult:
    """Execute one chapter into ``output``; never raises for a failure inside the chapter.

    The notebook and the claims JSON are written to temporary files beside ``output`` and moved into place
    only when the chapter finishes without error, so a failed or interrupted execution leaves the previous
    good outputs (a failure with no previous outputs shows the failed attempt, so its page can be built).
    With ``components`` (and a ``build_dir``), a successful execution also records the chapter's cache key.
    An interruption (:class:`KeyboardInterrupt`, :class:`BookInterrupted`) is re-raised after clean-up.
    """
    import nbformat

    output.parent.mkdir(parents=True, exist_ok=True)
    nb = _chapter_notebook(plan)
    profile = plan.parameters.get("profile", profile)  # a chapter's own -p CHAPTER:profile wins
    start = time.perf_counter()
    if not plan.executes:
        write_atomic(output, nbformat.writes(nb))
        return ChapterResult(
            plan.entry, str(plan.source), "static", 0.0, profile, {}, device, str(output), run="converted"
        )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.setdefault("language_info", {"name": "python"})
    tmp_nb, tmp_claims = partial_paths(output)
    records = build_dir is not None and components is not None
    previous_record = read_cache_record(build_dir, plan.entry) if records else None
    measured: dict = {}
    cpu_start = process_cpu_seconds()
    with _chapter_environment(plan, tmp_claims, build_dir):
        error = _run_notebook(plan, nb, output.name, tmp_nb, tmp_claims, measured)
    seconds = round(time.perf_counter() - start, 2)
    if plan.in_process:
        measured["cpu_seconds"] = round(process_cpu_seconds() - cpu_start, 2)
    result = ChapterResult(
        plan.entry,
        str(plan.source),
        "ok" if error is None else "failed",
        seconds,
        profile,
        plan.parameters,
        device,
        str(output),
        error,
        reason=reason,
        cpu_seconds=measured.get("cpu_seconds"),
    )
    if error is not None:
        _keep_previous_outputs(result, output, tmp_nb, tmp_claims, previous_record)
    else:
        _move_into_place(result, plan, output, tmp_nb, tmp_claims, build_dir if records else None, components)
    return result


def _chapter_notebook(plan: ChapterPlan):
    """A copy of the chapter as read by jupytext (read again when the plan does not hold it)."""
    if plan.notebook is not None:
        import copy

        return copy.deepcopy(plan.notebook)
    import jupytext

    return jupytext.read(plan.source, fmt="md:myst")


@contextmanager
def _chapter_environment(plan: ChapterPlan, claims: Path, build_dir: Path | None):
    """The environment variables that tell the chapter's ledger where to write its claims, where the book's
    root and build folder are; restored afterwards."""
    saved = {k: os.environ.get(k) for k in (CLAIMS_FILE_ENV, BUILD_DIR_ENV, ROOT_ENV)}
    os.environ[CLAIMS_FILE_ENV] = str(claims.resolve())
    os.environ[ROOT_ENV] = str(plan.source.resolve().parents[len(Path(plan.entry).parts) - 1])
    if build_dir is not None:
        os.environ[BUILD_DIR_ENV] = str(build_dir.resolve())
    _kernel_env()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_notebook(
    plan: ChapterPlan, nb, output_name: str, tmp_nb: Path, tmp_claims: Path, measured: dict
) -> dict | None:
    """Execute ``nb`` into ``tmp_nb`` (with a kernel, or in-process): None when it finished, else what failed
    (the report's ``error``). An interruption removes the temporaries and is raised again. The kernel's CPU
    seconds go into ``measured``."""
    if plan.in_process:
        failure: type[Exception] = CellError
    else:
        import papermill

        failure = papermill.PapermillExecutionError
    try:
        if plan.in_process:
            run_in_process(nb, tmp_nb, plan.parameters, plan.source.parent)
        else:
            papermill.execute_notebook(
                nb,
                str(tmp_nb),
                parameters=plan.parameters,
                kernel_name="python3",
                cwd=str(plan.source.parent),
                progress_bar=False,
                log_output=False,
                kernel_manager_class=kernel_manager_class(measured),
            )
        hide_default_parameters(tmp_nb, plan.parameters, defined_parameters(nb))
        tidy_metadata(tmp_nb, plan.entry, output_name, plan.source.parents[len(Path(plan.entry).parts) - 1])
        return None
    except failure as exc:
        if exc.ename == "KeyboardInterrupt":  # Ctrl-C reached the kernel before it reached us
            tmp_nb.unlink(missing_ok=True)
            tmp_claims.unlink(missing_ok=True)
            raise BookInterrupted("SIGINT") from None
        return {
            "code_cell": source_code_cell(nb, exc.source),
            "execution_count": exc.exec_count,
            "ename": exc.ename,
            "evalue": exc.evalue,
            "cell_source": exc.source[:2000],
        }
    except KeyboardInterrupt:
        tmp_nb.unlink(missing_ok=True)
        tmp_claims.unlink(missing_ok=True)
        raise
    except Exception as exc:  # kernel died, notebook could not be written, ...
        failed = {
            "code_cell": None,
            "execution_count": None,
            "ename": type(exc).__name__,
            "evalue": str(exc),
            "cell_source": "",
        }
        if isinstance(exc, OSError) and exc.errno in WRITE_ERRORS:  # a full disk: the cells may all have run
            failed["while"] = "while writing its executed notebook"
        return failed


def _move_into_place(
    result: ChapterResult,
    plan: ChapterPlan,
    output: Path,
    tmp_nb: Path,
    tmp_claims: Path,
    build_dir: Path | None,
    components: dict | None,
) -> None:
    """A chapter that finished: its notebook and claims replace the previous ones, and (with a ``build_dir``)
    the cache records the key they were computed with."""
    final_claims = claims_path(output)
    if build_dir is not None:  # the old record no longer describes the files
        cache_record_path(build_dir, plan.entry).unlink(missing_ok=True)
    os.replace(tmp_nb, output)
    if tmp_claims.is_file():
        os.replace(tmp_claims, final_claims)
    else:
        final_claims.unlink(missing_ok=True)
    result.executed_at = now()
    if build_dir is not None:
        record = {
            "key": cache_key(components),
            "components": components,
            "executed_at": result.executed_at,
            "seconds": result.seconds,
            # the profile the chapter ran with (``-p CHAPTER:profile`` overrides the run's), as its parameters say
            "profile": plan.parameters.get("profile", result.profile),
            "parameters": plan.parameters,
            "device": result.device,
            "cpu_seconds": result.cpu_seconds,
            "source_sha": file_sha(plan.source),
            "notebook_sha": file_sha(output),
            "claims_sha": file_sha(final_claims),
        }
        write_cache_record(build_dir, plan.entry, record)


#: The errors of a write that did not happen (the disk or the quota full, a file too large, a read-only or failing
#: file system): a chapter that fails with one failed writing its notebook, not in a cell.
WRITE_ERRORS = frozenset(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EROFS", "EIO") if hasattr(errno, name)
)


def _keep_previous_outputs(
    result: ChapterResult, output: Path, tmp_nb: Path, tmp_claims: Path, previous_record: dict | None
) -> None:
    """A chapter that failed: the previous outputs stay (or, with none, the failed attempt is shown). A claims
    file left without its notebook (the notebook was removed by hand) is removed with the attempt: the verdicts
    of an earlier run must not stand beside the failed attempt's page, nor beside no page."""
    result.run = "not run"
    tmp_claims.unlink(missing_ok=True)
    if output.is_file():
        tmp_nb.unlink(missing_ok=True)
        result.outputs = previous_outputs(output, previous_record)
        result.executed_at = (previous_record or {}).get("executed_at")
        return
    orphan = claims_path(output)
    removed = ""
    if orphan.is_file() and not orphan.is_symlink():
        orphan.unlink()
        removed = f"; an earlier run's {orphan.name}, left without its notebook, was removed"
    if tmp_nb.is_file() and read_json_object(tmp_nb) is not None:
        os.replace(tmp_nb, output)
        result.outputs = f"the failed attempt (there were no earlier outputs{removed})"
    elif tmp_nb.is_file():  # cut short (a full disk): a notebook that does not parse is no page
        tmp_nb.unlink(missing_ok=True)
        result.outputs = f"none (the failed attempt's notebook was incomplete, and was removed{removed})"
    else:
        result.outputs = f"none{f' ({removed[2:]})' if removed else ''}"


def source_code_cell(notebook, source: str) -> int | None:
    """1-based position of the code cell with this source among the chapter's own code cells."""
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        if cell.source.strip() == source.strip():
            return number
    return None


def hide_default_parameters(path: Path, injected: dict, defaults: dict) -> None:
    """Hide papermill's injected-parameters cell when it only restates the chapter's defaults, or when the page
    hides its own parameters cell (``remove-cell``: the status and ledger pages, whose tables say what they ran
    with, receive ``-p seed 3`` as every page that defines ``seed`` does).

    A reader of the rendered page then sees the chapter's own parameters cell; a run with other values keeps
    the injected cell visible, so the page shows what it was executed with.
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    own_hidden = any(
        "parameters" in (tags := c.metadata.get("tags", [])) and "remove-cell" in tags
        for c in nb.cells
        if c.cell_type == "code"
    )
    if not own_hidden and any(defaults.get(k, object()) != v for k, v in injected.items()):
        return
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            cell.metadata["tags"] = [*tags, "remove-cell"]
    nbformat.write(nb, path)


def tidy_metadata(path: Path, entry: str, output_name: str, root: Path | None = None) -> None:
    """Keep the build machine out of the executed notebook a reader downloads: papermill records the input it was
    given (here the whole chapter, some 50-70 kB, since it is handed a notebook object) and the absolute output
    path; they become the chapter's source name and the notebook's own file name. With ``root`` (the book's),
    warnings and tracebacks in the outputs name files relative to it (:mod:`.machine_paths`)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    scrubbed = scrub_notebook(nb, root) if root is not None else 0
    record = nb.metadata.get("papermill")
    if not isinstance(record, dict):
        if scrubbed:
            nbformat.write(nb, path)
        return
    record["input_path"] = f"{entry}.md"
    record["output_path"] = output_name
    record.pop("environment_variables", None)
    nbformat.write(nb, path)
