"""Rebalance planning on several cores (ganeti.htools.parallel): the plan
is the serial one, and the worker processes never outlive it."""

import copy
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ganeti import errors
from ganeti.htools import balance, parallel, simu

pytestmark = pytest.mark.unit

_MIGRATION = "htools:migration:hv"


def _Cluster(seed: int) -> tuple[dict, dict | None]:
    """A random skewed cluster (drbd, externally mirrored, diskless and
    plain instances), per seed with exclusion tags and locations,
    migration classes, offline nodes and the instances' dynamic load;
    and the load, if any."""
    rnd = random.Random(seed)
    msg = simu.Message(rnd.randint(14, 24), rnd.randint(90, 160),
                       memory=32768, seed=seed, skew=0.5,
                       templates=("drbd", "diskless", "rbd", "plain"))
    nodes = list(msg["nodes"].values())
    names = sorted(msg["instances"])
    if seed % 4 == 1:
        msg["cluster_tags"] = ["htools:nlocation:rack", "htools:iextags:svc",
                               "htools:desiredlocation:rack"]
        for data in nodes:
            data["tags"] = ["rack:%d" % rnd.randint(0, 2)]
        for name in rnd.sample(names, len(names) // 3):
            msg["instances"][name]["tags"] = [
                "svc:%d" % rnd.randint(0, 3), "rack:%d" % rnd.randint(0, 2)]
    if seed % 4 == 2:
        msg["cluster_tags"] = [_MIGRATION,
                               "htools:allowmigration:hv:v2::hv:v1"]
        for data in nodes:
            data["tags"] = ["hv:v%d" % rnd.randint(1, 3)]
    if seed % 4 == 3:
        for data in rnd.sample(nodes, 2):
            data["offline"] = True
    util = None
    if seed % 2:
        util = {name: tuple(rnd.uniform(0.0, 2.0) for _ in range(4))
                for name in rnd.sample(names, len(names) // 2)}
    return msg, util


def _Plan(msg: dict, util: dict | None, workers: int,
          opts: balance.Options = balance.Options()) -> balance.Plan:
    return balance.PlanBalance(copy.deepcopy(msg), opts=opts, util=util,
                               workers=workers)


@pytest.mark.parametrize("seed", range(8))
def test_parallel_plan_is_the_serial_plan(seed):
    """Same moves in the same order, same scores, same job sets, whatever
    the number of processes (and with several the victims' shares shift
    from step to step)."""
    msg, util = _Cluster(seed)
    variants = [balance.Options()]
    if seed < 4:
        variants.append(balance.Options(no_disk_moves=True,
                                        min_gain=0.001))
    if seed % 4 == 3:
        variants.append(balance.Options(evac_mode=True))
    for opts in variants:
        serial = _Plan(msg, util, 1, opts)
        assert serial.steps or opts.evac_mode, opts
        for workers in (2, 3):
            assert _Plan(msg, util, workers, opts) == serial, \
                (opts, workers)


def test_pinned_cluster_plan_in_parallel():
    """The plan of the pinned test (``test_plan_pinned_for_fixed_cluster``)
    and of a larger cluster of the benchmark's kind, on two processes."""
    for count, insts in ((20, 160), (50, 400)):
        msg = simu.Message(count, insts, templates=("drbd", "diskless"),
                           skew=0.5)
        assert _Plan(msg, None, 2) == _Plan(msg, None, 1)


def test_worker_count():
    assert parallel.Count(3, False) == 3
    assert parallel.Count(0, True) == 1
    assert parallel.Count(None, False) == 1
    assert parallel.Count(None, True) == (
        len(os.sched_getaffinity(0)) if threading.active_count() == 1 else 1)
    # another thread: forking is unsafe, whatever the size
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert parallel.Count(None, True) == 1
    finally:
        stop.set()
        thread.join()


def test_share_keeps_groups_and_balances_new_ones():
    owners: dict = {}
    groups = {"a": [1, 2, 3], "b": [4], "c": [5, 6]}
    shares = [parallel.Share(groups, (index, 2), dict(owners))
              for index in range(2)]
    # the largest group to the last share, then the others to the least
    # loaded one
    assert shares == [[4, 5, 6], [1, 2, 3]]
    parallel.Share(groups, (0, 2), owners)
    # known groups stay where they are, a new one balances the shares
    groups = {"d": [7, 8], "b": [4], "a": [1, 2, 3]}
    assert parallel.Share(groups, (0, 2), dict(owners)) == [7, 8, 4]
    assert parallel.Share(groups, (1, 2), dict(owners)) == [1, 2, 3]


def _ChildrenOf(pid: int) -> set[int]:
    """The pids of the process's children, from /proc."""
    result = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            result.add(int(entry))
    return result


def _Children() -> set[int]:
    return _ChildrenOf(os.getpid())


_BIG = simu.Message(50, 400, templates=("drbd", "diskless"), skew=0.5)


def _FailIn(monkeypatch, method: str, action, in_parent: bool = False,
            after: int = 3) -> list[int]:
    """Make ``balance._State``'s method run ``action`` from its
    ``after``-th call on, in the workers (or in the parent); the pids of
    the workers it ran in are listed."""
    parent = os.getpid()
    original = getattr(balance._State, method)
    seen: list[int] = []
    calls = [0]

    def wrapper(self, *args, **kwargs):
        calls[0] += 1
        if (os.getpid() == parent) == in_parent and calls[0] >= after:
            seen.append(os.getpid())
            action()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(balance._State, method, wrapper)
    return seen


def _Boom() -> None:
    raise RuntimeError("boom in a worker")


@pytest.mark.parametrize("method", ["Best", "Apply"])
def test_worker_failure_is_an_error_and_leaves_no_process(monkeypatch,
                                                          method):
    before = _Children()
    _FailIn(monkeypatch, method, _Boom)
    with pytest.raises(errors.WorkerError) as err:
        balance.PlanBalance(copy.deepcopy(_BIG), workers=2)
    text = str(err.value)
    assert "Planning worker 1 failed" in text
    # the worker's traceback
    assert "RuntimeError: boom in a worker" in text
    assert "Traceback" in text
    assert _Children() == before


def test_serial_by_default(monkeypatch):
    """Daemons (maintd) plan with the default: never in a worker."""
    _FailIn(monkeypatch, "Best", _Boom, after=1)
    before = _Children()
    assert balance.PlanBalance(copy.deepcopy(_BIG)).steps
    assert _Children() == before
    with pytest.raises(errors.WorkerError):
        balance.PlanBalance(copy.deepcopy(_BIG), workers=2)


def test_worker_exit_is_an_error_and_leaves_no_process(monkeypatch):
    before = _Children()
    _FailIn(monkeypatch, "Best", lambda: os._exit(3))
    with pytest.raises(errors.WorkerError,
                       match=r"Planning worker 1 exited \(exit code 3\)"):
        balance.PlanBalance(copy.deepcopy(_BIG), workers=2)
    assert _Children() == before


def test_interrupt_in_the_parent_leaves_no_process(monkeypatch):
    before = _Children()

    def interrupt() -> None:
        assert len(_Children() - before) == 2
        raise KeyboardInterrupt

    _FailIn(monkeypatch, "Best", interrupt, in_parent=True, after=5)
    with pytest.raises(KeyboardInterrupt):
        balance.PlanBalance(copy.deepcopy(_BIG), workers=3)
    assert _Children() == before


_KILLED_PARENT = textwrap.dedent("""
    import sys
    from ganeti.htools import balance, simu
    msg = simu.Message(100, 1000, templates=("drbd", "diskless"), skew=0.5)
    for _ in range(100):
        balance.PlanBalance(msg, workers=2)
""")


def _Alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_workers_exit_when_the_parent_is_killed():
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_PARENT])
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while not workers and time.monotonic() < deadline:
            time.sleep(0.1)
            workers = _ChildrenOf(proc.pid)
        assert workers, "no worker started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while any(map(_Alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_Alive, workers))
