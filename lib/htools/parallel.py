"""Scoring a planning step's candidate moves on several cores, as hbal
does with ``parMap`` over its victims.

Worker processes are forked once per plan, after the planner has built
its model, so each starts with a copy of it (and of its warm caches),
and runs the planner's rounds as the parent does (``Run``): per level,
every process scores a deterministic share of the victims (``Share``),
stopping as soon as the bound of a candidate is above the best score
any of them has found (kept in shared memory), and the parent merges
the shares' best moves (``Rank``: exactly the move the serial planner
finds) and sends the result back. So all processes accept the same
moves and their copies stay identical to the parent's, bit for bit (the
model's arithmetic is exact, see ``model.UTIL_QUANTUM``), and the
parent's own work between the steps runs in every process at once.

Forking is only safe in a single-threaded process (a lock held by
another thread stays held in the child forever): planning is serial
unless the caller asks (the daemons, which run threads, never do), and
``Count`` falls back to serial when another thread runs. Workers never
outlive the plan: on any error or interruption the parent terminates
them, and a worker whose parent is gone reads the end of its pipe and
exits.
"""

import ctypes
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Callable, Hashable, TypeVar

from ganeti import errors
from ganeti.htools.moves import Move, TieKey

Found = tuple[float, Move] | None
_K = TypeVar("_K", bound=Hashable)
_T = TypeVar("_T")
_R = TypeVar("_R")
# How long a worker may take to exit once its pipe is closed
_EXIT_TIMEOUT = 5.0
# How long a process polls for the next message before blocking (a step
# takes a few milliseconds on 100 nodes)
_SPIN = 0.002


# A planning process's body: called with its share (index, count), the
# lowest score of all shares in the current step (shared memory, None
# when serial) and the function exchanging each step's best move of the
# share for the best of all; the parent's result is the plan
Merge = Callable[[Found], Found]
Body = Callable[[tuple[int, int], ctypes.c_double | None, Merge], _R]


def Rank(found: tuple[float, Move]) -> tuple[float, tuple]:
    """The order of ``Evaluator.Best``'s results: the lower score first,
    ties as hbal breaks them (``moves.TieKey``)."""
    value, move = found
    return value, TieKey(move)


def Share(groups: dict[_K, list[_T]], share: tuple[int, int],
          owners: dict[_K, int]) -> list[_T]:
    """The victims of the share (index, count), given in groups that
    share the targets' parts and bounds (``movescore``), which are kept
    from step to step: a group goes to the share that first had it (in
    ``owners``; measured: cheaper than balancing each step anew), a new
    group, the largest first, to the share with the fewest victims so far
    (the last of those: the first share is the parent's, which also
    merges the shares' answers). The same in every process as long as
    the groups come in the same order: each process sees the same steps."""
    index, count = share
    sizes = [0] * count
    for key, group in groups.items():
        if key in owners:
            sizes[owners[key]] += len(group)
    for key, group in sorted(groups.items(),
                             key=lambda item: len(item[1]), reverse=True):
        if key not in owners:
            owners[key] = count - 1 - sizes[::-1].index(min(sizes))
            sizes[owners[key]] += len(group)
    return [item for key, group in groups.items() if owners[key] == index
            for item in group]


def Cores() -> int:
    """The number of cores this process may run on."""
    return len(os.sched_getaffinity(0))


def Count(workers: int | None, worth: bool) -> int:
    """How many processes plan: ``workers`` when given (forking is then
    the caller's choice), otherwise every core when ``worth`` it (the
    steps' work outweighs the messages) and the process runs no other
    thread (forking is safe)."""
    if workers is not None:
        return max(1, workers)
    if not worth or threading.active_count() > 1:
        return 1
    return Cores()


def Run(count: int, body: Body[_R]) -> _R:
    """Run the planning ``body`` in ``count`` processes: the parent's
    result. Each worker runs it on its copy of the parent's state, to
    the same end: the processes see the same moves."""
    if count < 2:
        return body((0, 1), None, lambda found: found)
    with _Pool(count, body) as pool:
        return body((0, count), pool.shared, pool.Merge)


def _Await(conn: Connection) -> None:
    """Wait a step's time for a message by polling before ``recv`` blocks:
    a process woken from a blocking read starts late (measured on 2
    cores: 100 nodes planned in 1.92 s instead of 2.13, median of 5
    alternating runs)."""
    deadline = time.perf_counter() + _SPIN
    while not conn.poll() and time.perf_counter() < deadline:
        pass


class _ParentGone(Exception):
    """The parent closed its end of the worker's pipe."""


class _Pool:
    """The ``count - 1`` forked workers of ``Run``, as a context manager
    (the workers exit or are stopped when it is left)."""

    def __init__(self, count: int, body: Body) -> None:
        self._count = count
        self._body = body
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        # the lowest score found by any process in the current step: a
        # double in shared memory (its loads and stores are atomic;
        # racing stores may lose a lower value, which only costs time)
        self.shared: ctypes.c_double | None = None

    def __enter__(self) -> "_Pool":
        context = multiprocessing.get_context("fork")
        self.shared = context.RawValue(ctypes.c_double, math.inf)
        # the child would write the parent's buffered output again
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        try:
            for index in range(1, self._count):
                parent_end, child_end = context.Pipe()
                self._conns.append(parent_end)
                proc = context.Process(
                    target=_Serve, name="planner-%d" % index, daemon=True,
                    args=(self._body, child_end, (index, self._count),
                          self.shared, list(self._conns)))
                proc.start()
                self._procs.append(proc)
                child_end.close()
        except BaseException:
            self._Stop(True)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._Stop(exc_type is not None)

    def _Stop(self, failed: bool) -> None:
        """Close the pipes and reap the workers (done, or idle: they exit
        on the end of their pipe); after a failure they may be busy:
        terminate them."""
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            if failed:
                proc.terminate()
            proc.join(_EXIT_TIMEOUT)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self._conns = []
        self._procs = []

    def Merge(self, own: Found) -> Found:
        """The best of the parent's and the workers' moves (``Rank``),
        sent to the workers; the shared score reset for the next step
        (no process scores before it has the answer)."""
        assert self.shared is not None
        results = [own]
        results.extend(self._Receive(index, conn)
                       for index, conn in enumerate(self._conns, 1))
        found = [result for result in results if result is not None]
        best = min(found, key=Rank) if found else None
        self.shared.value = math.inf
        for index, conn in enumerate(self._conns, 1):
            try:
                conn.send(best)
            except OSError:
                # the worker is gone: its last words, if any, are in the
                # pipe
                self._Receive(index, conn)
                raise errors.WorkerError("Planning worker %d stopped"
                                         " reading" % index)
        return best

    def _Receive(self, index: int, conn: Connection) -> Found:
        try:
            _Await(conn)
            status, value = conn.recv()
        except (EOFError, OSError):
            proc = self._procs[index - 1]
            proc.join(_EXIT_TIMEOUT)
            raise errors.WorkerError("Planning worker %d exited (exit code"
                                     " %s)" % (index, proc.exitcode))
        if status != "ok":
            raise errors.WorkerError("Planning worker %d failed: %s" %
                                     (index, value))
        return value


def _Serve(body: Body, conn: Connection, share: tuple[int, int],
           shared: ctypes.c_double, inherited: list[Connection]) -> None:
    """A worker: run the body, exchanging its moves with the parent's
    through the pipe; on an error, send its traceback."""
    # the parent handles ^C (and stops the workers)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the parent's ends: the parent's exit must close the pipes
    for other in inherited:
        other.close()

    def merge(found: Found) -> Found:
        conn.send(("ok", found))
        try:
            _Await(conn)
            return conn.recv()
        except EOFError:
            raise _ParentGone() from None

    try:
        body(share, shared, merge)
    except (_ParentGone, BrokenPipeError):
        pass
    except Exception:  # pylint: disable=broad-except
        try:
            conn.send(("error", traceback.format_exc().rstrip()))
        except OSError:
            # the parent is gone
            pass
