"""The tasks of a step's process tree, as ``/proc`` shows them: state and time on the CPU.

A step is the process the twin started and everything it started: found by each task's
``children`` file (Linux 3.5+), and every process once seen stays in the tree while it lives
(a daemon that left its parent is still the step's). A sample maps each thread id to its
state letter (``R`` running or runnable, ``S``/``D`` asleep, ``Z`` a zombie...) and its
nanoseconds on the CPU (``schedstat``), enough to tell a task that waits from one that works.
"""

from __future__ import annotations

import os

__all__ = ["ProcessTree", "Sample", "sample_threads"]

Sample = dict[int, tuple[str, int]]


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("ascii", "replace")
    except OSError:
        return None


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process, or None if it is gone."""
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return fields[0], int(fields[19])


def _threads(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def _task(base: str) -> tuple[str, int] | None:
    stat = _read(f"{base}/stat")
    if stat is None:
        return None
    sched = _read(f"{base}/schedstat")
    return stat[stat.rfind(")") + 2:][:1], int(sched.split()[0]) if sched else -1


def sample_threads(tids: tuple[int, ...]) -> Sample:
    """Threads of this process (native ids) sampled as ``ProcessTree.sample`` samples tasks."""
    out: Sample = {}
    for tid in tids:
        got = _task(f"/proc/self/task/{tid}")
        if got is not None:
            out[tid] = got
    return out


class ProcessTree:
    """The step started as ``root``: its live processes, and a sample of their threads."""

    def __init__(self, root: int) -> None:
        self.root = root
        self._seen: dict[int, int] = {}
        got = _stat(root)
        if got is not None:
            self._seen[root] = got[1]

    def root_ended(self) -> bool:
        """Whether the root process has exited (a zombie, or reaped)."""
        got = _stat(self.root)
        return got is None or got[0] in "ZX"

    def pids(self) -> list[int]:
        """Every live process of the step (the root's descendants and those once seen)."""
        todo, found = [self.root], set()
        while todo:
            pid = todo.pop()
            if pid in found:
                continue
            found.add(pid)
            for tid in _threads(pid):
                text = _read(f"/proc/{pid}/task/{tid}/children")
                if text:
                    todo.extend(int(c) for c in text.split())
        for pid in found:
            if pid not in self._seen:
                got = _stat(pid)
                if got is not None:
                    self._seen[pid] = got[1]
        alive = []
        for pid, started in list(self._seen.items()):
            got = _stat(pid)
            if got is None or got[1] != started:
                del self._seen[pid]  # gone (or its id reused)
            else:
                alive.append(pid)
        return sorted(alive)

    def sample(self) -> Sample:
        """Each thread of the step: its state letter and its ns on the CPU so far."""
        out: Sample = {}
        for pid in self.pids():
            for name in _threads(pid):
                got = _task(f"/proc/{pid}/task/{name}")
                if got is not None:
                    out[int(name)] = got
        return out
