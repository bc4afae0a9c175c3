"""CPU seconds of a chapter: the kernel process and every process under it, user and system time together.

Wall time depends on what else the machine is doing; CPU seconds much less, so they are the figure to compare
builds by. A chapter's kernel is sampled just before it is shut down (:func:`process_tree_cpu_seconds`): its
own time, the time of the worker processes it has already waited for, and that of those still running. A page
executed in the executor's own process is measured with :func:`process_cpu_seconds` before and after.
"""

from __future__ import annotations

import os


def process_cpu_seconds() -> float:
    """User and system CPU seconds of this process and of the children it has waited for."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _with_psutil(pid: int) -> float | None:
    try:
        import psutil
    except ImportError:
        return None
    try:
        top = psutil.Process(pid)
        processes = [top, *top.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for process in processes:
        try:
            t = process.cpu_times()
        except psutil.Error:  # a worker that ended meanwhile: its time is in its parent's children times
            continue
        total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    return total


def _proc_stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds incl. waited-for children) of one process from ``/proc``; None if it is gone."""
    try:
        text = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), sum(int(f) for f in fields[11:15]) / ticks


def _with_proc(pid: int) -> float | None:
    stats = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (stat := _proc_stat(int(name))) is not None:
            stats[int(name)] = stat
    if pid not in stats:
        return None
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, (ppid, _) in stats.items() if ppid == parent and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(stats[p][1] for p in tree)


def process_tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) of process ``pid`` and all its descendants, including the descendants that
    have ended and were waited for; None when the process is gone or cannot be read on this system."""
    seconds = _with_psutil(pid)
    if seconds is None and os.path.isdir("/proc"):
        seconds = _with_proc(pid)
    return None if seconds is None else round(seconds, 2)
