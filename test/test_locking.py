"""Tests for ganeti.locking: SharedLock, LockSet and GanetiLockManager.

Lock ownership is per thread, so each test drives its lock owners through
``_Actor`` threads. Waiters signal through ``test_notify`` once they are
queued, which makes the ordering tests deterministic instead of timed.
"""

import queue
import random
import threading
import time
from concurrent.futures import Future

import pytest

from ganeti import constants
from ganeti import errors
from ganeti import locking

WAIT = 5.0


class _Actor:
    """A named thread running submitted calls one after the other."""

    def __init__(self, name: str):
        self._calls: queue.Queue = queue.Queue()
        self._busy = 0
        self._busy_lock = threading.Lock()
        self.thread = threading.Thread(target=self._Run, name=name,
                                       daemon=True)
        self.thread.start()

    def _Run(self) -> None:
        while True:
            item = self._calls.get()
            if item is None:
                return
            (fn, args, kwargs, future) = item
            future.set_running_or_notify_cancel()
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as err:  # handed over to the test
                future.set_exception(err)
            finally:
                with self._busy_lock:
                    self._busy -= 1

    def submit(self, fn, *args, **kwargs) -> Future:
        future: Future = Future()
        with self._busy_lock:
            self._busy += 1
        self._calls.put((fn, args, kwargs, future))
        return future

    def call(self, fn, *args, **kwargs):
        return self.submit(fn, *args, **kwargs).result(timeout=WAIT)

    def stop(self) -> None:
        """Let the thread end; one still blocked in a call (a test may
        leave waiters queued) is left behind as a daemon."""
        self._calls.put(None)
        if not self._busy:
            self.thread.join(WAIT)


@pytest.fixture
def actor():
    """Factory of actors, all stopped at the end of the test."""
    actors = []

    def make(name: str = "actor") -> _Actor:
        new = _Actor(name)
        actors.append(new)
        return new

    yield make
    for one in actors:
        one.stop()


def _WaitFor(predicate, timeout: float = WAIT) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "condition not reached in time"
        time.sleep(0.005)


def _QueueWaiter(who: _Actor, fn, *args, **kwargs) -> Future:
    """Start a blocking acquire in ``who`` and return once it is queued."""
    queued = threading.Event()
    future = who.submit(fn, *args, test_notify=lambda *_: queued.set(),
                        **kwargs)
    assert queued.wait(WAIT)
    return future


def _AcquireLogRelease(lock: locking.SharedLock, log: list, tag,
                       **kwargs) -> bool:
    ok = lock.acquire(**kwargs)
    log.append(tag)
    lock.release()
    return ok


# SharedLock -----------------------------------------------------------------

def test_exclusive_excludes_everyone(actor):
    lock = locking.SharedLock("l")
    (a, b) = (actor("a"), actor("b"))
    assert a.call(lock.acquire) is True
    assert b.call(lock.acquire, shared=1, timeout=0) is False
    assert b.call(lock.acquire, timeout=0) is False
    a.call(lock.release)
    assert b.call(lock.acquire, timeout=0) is True


def test_shared_is_shared(actor):
    lock = locking.SharedLock("l")
    (a, b, c) = (actor("a"), actor("b"), actor("c"))
    assert a.call(lock.acquire, shared=1)
    assert b.call(lock.acquire, shared=1, timeout=0)
    assert c.call(lock.acquire, timeout=0) is False
    assert a.call(lock.is_owned, shared=1)
    assert not a.call(lock.is_owned, shared=0)
    assert not c.call(lock.is_owned)


def test_is_owned_modes():
    lock = locking.SharedLock("l")
    assert not lock.is_owned()
    lock.acquire()
    assert lock.is_owned() and lock.is_owned(shared=0)
    assert not lock.is_owned(shared=1)
    lock.release()
    assert not lock.is_owned()


def test_misuse_is_a_programmer_error():
    lock = locking.SharedLock("l")
    with pytest.raises(errors.ProgrammerError):
        lock.release()
    with pytest.raises(errors.ProgrammerError):
        lock.downgrade()
    for shared in (0, 1):
        lock.acquire(shared=shared)
        with pytest.raises(errors.ProgrammerError):
            lock.acquire(shared=1 - shared)
        with pytest.raises(errors.ProgrammerError):
            lock.acquire(shared=shared, timeout=0)
        lock.release()


def test_waiters_are_served_in_fifo_order(actor):
    lock = locking.SharedLock("l")
    holder = actor("holder")
    holder.call(lock.acquire)
    log = []
    futures = [_QueueWaiter(actor("w%d" % i), _AcquireLogRelease, lock, log,
                            i, shared=(i == 4))
               for i in range(6)]
    holder.call(lock.release)
    assert all(f.result(WAIT) for f in futures)
    assert log == list(range(6))


def test_shared_does_not_overtake_waiting_exclusive(actor):
    lock = locking.SharedLock("l")
    (holder, writer, reader) = (actor("h"), actor("x"), actor("s"))
    holder.call(lock.acquire, shared=1)
    wfut = _QueueWaiter(writer, lock.acquire)
    assert reader.call(lock.acquire, shared=1, timeout=0) is False
    rfut = _QueueWaiter(reader, lock.acquire, shared=1)
    holder.call(lock.release)
    assert wfut.result(WAIT) is True
    assert not rfut.done()
    writer.call(lock.release)
    assert rfut.result(WAIT) is True


def test_consecutive_shared_waiters_granted_together(actor):
    lock = locking.SharedLock("l")
    holder = actor("h")
    holder.call(lock.acquire)
    (s1, s2, x, s3) = (actor("s1"), actor("s2"), actor("x"), actor("s3"))
    f1 = _QueueWaiter(s1, lock.acquire, shared=1)
    f2 = _QueueWaiter(s2, lock.acquire, shared=1)
    fx = _QueueWaiter(x, lock.acquire)
    f3 = _QueueWaiter(s3, lock.acquire, shared=1)
    holder.call(lock.release)
    assert f1.result(WAIT) and f2.result(WAIT)
    assert not fx.done() and not f3.done()
    s1.call(lock.release)
    assert not fx.done()
    s2.call(lock.release)
    assert fx.result(WAIT)
    assert not f3.done()
    x.call(lock.release)
    assert f3.result(WAIT)


def test_higher_priority_served_first(actor):
    lock = locking.SharedLock("l")
    holder = actor("h")
    holder.call(lock.acquire)
    log = []
    futures = []
    for (tag, prio) in [("low", constants.OP_PRIO_LOW),
                        ("normal1", constants.OP_PRIO_NORMAL),
                        ("high", constants.OP_PRIO_HIGH),
                        ("normal2", constants.OP_PRIO_NORMAL)]:
        futures.append(_QueueWaiter(actor(tag), _AcquireLogRelease, lock,
                                    log, tag, priority=prio))
    holder.call(lock.release)
    assert all(f.result(WAIT) for f in futures)
    assert log == ["high", "normal1", "normal2", "low"]


def test_higher_priority_shared_passes_lower_priority_exclusive(actor):
    lock = locking.SharedLock("l")
    (holder, writer, reader) = (actor("h"), actor("x"), actor("s"))
    holder.call(lock.acquire, shared=1)
    wfut = _QueueWaiter(writer, lock.acquire,
                        priority=constants.OP_PRIO_LOW)
    assert reader.call(lock.acquire, shared=1, timeout=0,
                       priority=constants.OP_PRIO_HIGH)
    assert not wfut.done()


def test_timeout_returns_false_and_leaves_queue(actor):
    lock = locking.SharedLock("l")
    (holder, waiter) = (actor("h"), actor("w"))
    holder.call(lock.acquire)
    start = time.monotonic()
    assert waiter.call(lock.acquire, timeout=0.1) is False
    assert time.monotonic() - start >= 0.09
    assert lock.GetLockInfo(["pending"]) == [[]]
    assert not waiter.call(lock.is_owned)


def test_timed_out_exclusive_head_lets_shared_proceed(actor):
    lock = locking.SharedLock("l")
    (holder, writer, reader) = (actor("h"), actor("x"), actor("s"))
    holder.call(lock.acquire, shared=1)
    wfut = _QueueWaiter(writer, lock.acquire, timeout=0.2)
    rfut = _QueueWaiter(reader, lock.acquire, shared=1)
    # Only the writer's timeout can unblock the reader: the holder stays
    assert wfut.result(WAIT) is False
    assert rfut.result(WAIT) is True
    assert sorted(lock.GetLockInfo(["owner"])[0]) == ["h", "s"]


def test_delete_fails_pending_and_later_acquires(actor):
    lock = locking.SharedLock("l")
    holder = actor("h")
    holder.call(lock.acquire)
    f1 = _QueueWaiter(actor("w1"), lock.acquire, shared=1)
    f2 = _QueueWaiter(actor("w2"), lock.acquire, timeout=30)
    assert holder.call(lock.delete) is True
    for future in (f1, f2):
        with pytest.raises(errors.LockError):
            future.result(WAIT)
    with pytest.raises(errors.LockError):
        lock.acquire(timeout=0)
    with pytest.raises(errors.LockError):
        lock.delete()
    assert not holder.call(lock.is_owned)


def test_delete_acquires_first(actor):
    lock = locking.SharedLock("l")
    (holder, deleter) = (actor("h"), actor("d"))
    holder.call(lock.acquire, shared=1)
    assert deleter.call(lock.delete, timeout=0.05) is False
    with pytest.raises(errors.ProgrammerError):
        holder.call(lock.delete)
    dfut = deleter.submit(lock.delete)
    _WaitFor(lambda: lock.GetLockInfo(["pending"]) == [[["exclusive",
                                                         ["d"]]]])
    holder.call(lock.release)
    assert dfut.result(WAIT) is True
    with pytest.raises(errors.LockError):
        holder.call(lock.acquire, shared=1)


def test_downgrade_lets_shared_waiters_in(actor):
    lock = locking.SharedLock("l")
    (holder, reader) = (actor("h"), actor("s"))
    holder.call(lock.acquire)
    rfut = _QueueWaiter(reader, lock.acquire, shared=1)
    assert holder.call(lock.downgrade) is True
    assert rfut.result(WAIT) is True
    assert holder.call(lock.is_owned, shared=1)
    assert holder.call(lock.downgrade) is True


def test_get_lock_info(actor):
    lock = locking.SharedLock("instance/x")
    fields = ["name", "mode", "owner", "pending"]
    assert lock.GetLockInfo(fields) == ["instance/x", None, [], []]
    (b, a) = (actor("job/2"), actor("job/1"))
    a.call(lock.acquire, shared=1)
    b.call(lock.acquire, shared=1)
    _QueueWaiter(actor("job/3"), lock.acquire)
    _QueueWaiter(actor("job/4"), lock.acquire, shared=1)
    assert lock.GetLockInfo(fields) == [
        "instance/x", "shared", ["job/1", "job/2"],
        [["exclusive", ["job/3"]], ["shared", ["job/4"]]]]
    with pytest.raises(errors.ProgrammerError):
        lock.GetLockInfo(["bogus"])


def test_ssynchronized():
    lock = locking.SharedLock("l")

    class Holder:
        attr_lock = locking.SharedLock("attr")

        @locking.ssynchronized("attr_lock", shared=1)
        def Shared(self):
            return self.attr_lock.is_owned(shared=1)

    @locking.ssynchronized(lock)
    def Exclusive():
        return lock.is_owned(shared=0)

    assert Exclusive() and not lock.is_owned()
    assert Holder().Shared() and not Holder.attr_lock.is_owned()


def test_shared_lock_counter_under_contention():
    lock = locking.SharedLock("l")
    state = {"value": 0, "readers": 0}
    errors_seen = []

    def Work(seed):
        rng = random.Random(seed)
        for _ in range(1500):
            shared = rng.random() < 0.5
            lock.acquire(shared=shared)
            try:
                if shared:
                    state["readers"] += 1
                    if state["value"] % 2:
                        errors_seen.append("reader saw a writer")
                    state["readers"] -= 1
                else:
                    state["value"] += 1
                    if state["readers"]:
                        errors_seen.append("writer saw a reader")
                    state["value"] += 1
            finally:
                lock.release()

    threads = [threading.Thread(target=Work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
        assert not thread.is_alive(), "deadlock or lost wake-up"
    assert not errors_seen
    assert lock.GetLockInfo(["mode", "pending"]) == [None, []]


# LockSet ---------------------------------------------------------------------

def _Set(members=("a", "b", "c")) -> locking.LockSet:
    return locking.LockSet(list(members), "test")


def test_lockset_acquire_release():
    ls = _Set()
    assert ls._names() == {"a", "b", "c"}
    assert ls.acquire(["c", "a"]) == {"a", "c"}
    assert ls.list_owned() == {"a", "c"}
    assert ls.is_owned() and not ls.owning_all()
    assert ls.check_owned(["a", "c"], shared=0)
    assert not ls.check_owned("a", shared=1)
    assert not ls.check_owned(["a", "b"])
    assert not ls.check_owned("nonexisting")
    with pytest.raises(errors.ProgrammerError):
        ls.acquire("b")
    with pytest.raises(errors.ProgrammerError):
        ls.release("b")
    ls.release("a")
    assert ls.list_owned() == {"c"}
    ls.release()
    assert not ls.is_owned()
    ls.release()  # owning nothing: nothing to do
    assert ls.acquire("b", shared=1) == {"b"}
    assert ls.check_owned("b", shared=1)
    ls.release()


def test_lockset_nonexisting_name_raises_and_holds_nothing():
    ls = _Set()
    with pytest.raises(errors.LockError, match="zz"):
        ls.acquire(["a", "zz"])
    assert not ls.is_owned()
    assert ls.acquire(["a"]) == {"a"}
    ls.release()


def test_lockset_members_acquired_in_sorted_order(actor):
    ls = _Set(["a", "b", "c", "d"])
    holder = actor("h")
    holder.call(ls.acquire, ["a", "b", "c"])
    notified = []
    blocked = threading.Event()

    def Notify(name):
        notified.append(name)
        blocked.set()

    future = actor("w").submit(ls.acquire, ["d", "c", "b", "a"],
                               test_notify=Notify)
    for name in ["a", "b", "c"]:
        assert blocked.wait(WAIT)
        blocked.clear()
        assert notified[-1] == name
        holder.call(ls.release, name)
    assert future.result(WAIT) == {"a", "b", "c", "d"}
    assert notified == ["a", "b", "c"]


def test_lockset_overall_timeout_releases_partial(actor):
    ls = _Set()
    (holder, waiter) = (actor("h"), actor("w"))
    holder.call(ls.acquire, "c")
    start = time.monotonic()
    assert waiter.call(ls.acquire, ["a", "b", "c"], timeout=0.1) is None
    assert time.monotonic() - start < 2
    assert not waiter.call(ls.is_owned)
    assert actor("x").call(ls.acquire, ["a", "b"], timeout=0) == {"a", "b"}


def test_lockset_removed_while_waiting_fails_cleanly(actor):
    ls = _Set()
    (holder, waiter) = (actor("h"), actor("w"))
    holder.call(ls.acquire, "b")
    future = _QueueWaiter(waiter, ls.acquire, ["a", "b", "c"])
    assert holder.call(ls.remove, "b") == ["b"]
    with pytest.raises(errors.LockError, match="b"):
        future.result(WAIT)
    assert not waiter.call(ls.is_owned)
    assert holder.call(ls.acquire, ["a", "c"], timeout=0) == {"a", "c"}
    assert ls._names() == {"a", "c"}


def test_lockset_all_set_blocks_add(actor):
    ls = _Set()
    (owner, adder) = (actor("o"), actor("a"))
    assert owner.call(ls.acquire, locking.ALL_SET, shared=1) == \
        {"a", "b", "c"}
    assert owner.call(ls.owning_all)
    future = adder.submit(ls.add, "d")
    _WaitFor(lambda: ls._GetLocks()[0].GetLockInfo(["pending"])[0])
    assert not future.done()
    assert "d" not in ls._names()
    owner.call(ls.release)
    future.result(WAIT)
    assert ls._names() == {"a", "b", "c", "d"}
    assert not adder.call(ls.is_owned)


def test_lockset_all_set_shared_is_shared(actor):
    ls = _Set()
    assert actor("1").call(ls.acquire, locking.ALL_SET, shared=1)
    assert actor("2").call(ls.acquire, locking.ALL_SET, shared=1,
                           timeout=0) == {"a", "b", "c"}
    assert actor("3").call(ls.acquire, locking.ALL_SET, timeout=0) is None


def test_lockset_all_set_exclusive_owner_may_add_and_remove():
    ls = _Set()
    ls.acquire(locking.ALL_SET)
    ls.add("d")
    ls.add(["e"], acquired=True)
    assert ls.list_owned() == {"a", "b", "c", "e"}
    assert ls.remove(["d", "e", "a", "missing"]) == ["d", "e", "a"]
    assert ls._names() == {"b", "c"}
    assert ls.list_owned() == {"b", "c"}
    ls.release()
    assert not ls.is_owned()


def test_lockset_add_errors(actor):
    ls = _Set()
    with pytest.raises(errors.LockError, match="a"):
        ls.add(["x", "a"])
    with pytest.raises(errors.LockError):
        ls.add(["x", "x"])
    assert ls._names() == {"a", "b", "c"}
    ls.acquire("a")
    with pytest.raises(errors.ProgrammerError):
        ls.add("x")
    ls.release()
    ls.acquire(locking.ALL_SET, shared=1)
    with pytest.raises(errors.ProgrammerError):
        ls.add("x")
    ls.release()
    ls.add("x", acquired=True, shared=1)
    assert ls.check_owned("x", shared=1)
    assert not actor("o").call(ls.acquire, "x", timeout=0)


def test_lockset_remove_requires_exclusive_ownership(actor):
    ls = _Set()
    with pytest.raises(errors.ProgrammerError):
        ls.remove("a")
    ls.acquire(["a", "b"], shared=1)
    with pytest.raises(errors.ProgrammerError):
        ls.remove("a")
    ls.release()
    ls.acquire(["a", "b"])
    assert ls.remove("a") == ["a"]
    assert ls.list_owned() == {"b"}
    assert ls._names() == {"b", "c"}
    with pytest.raises(errors.LockError):
        actor("o").call(ls.acquire, "a")


def test_lockset_all_set_skips_members_removed_meanwhile(actor):
    ls = _Set()
    holder = actor("h")
    holder.call(ls.acquire, "b")
    future = _QueueWaiter(actor("w"), ls.acquire, locking.ALL_SET)
    holder.call(ls.remove, "b")
    assert future.result(WAIT) == {"a", "c"}


def test_lockset_opportunistic(actor):
    ls = _Set()
    actor("h").call(ls.acquire, "b")
    start = time.monotonic()
    assert ls.acquire(["a", "b", "c"], opportunistic=True) == {"a", "c"}
    assert time.monotonic() - start < 1
    assert ls.list_owned() == {"a", "c"}
    ls.release()
    assert ls.acquire(locking.ALL_SET, opportunistic=True) == {"a", "c"}
    assert ls.owning_all()
    ls.release()


def test_lockset_partial_release_drops_set_lock(actor):
    ls = _Set()
    ls.acquire(locking.ALL_SET)
    ls.release("a")
    assert not ls.owning_all()
    assert ls.list_owned() == {"b", "c"}
    # add is no longer blocked by us (we only hold members)
    actor("o").call(ls.add, "d")
    ls.release()


def test_lockset_downgrade(actor):
    ls = _Set()
    with pytest.raises(errors.ProgrammerError):
        ls.downgrade()
    ls.acquire(locking.ALL_SET)
    ls.downgrade(["a"])
    assert ls.check_owned("a", shared=1) and ls.check_owned("b", shared=0)
    assert ls._GetLocks()[0].GetLockInfo(["mode"]) == ["exclusive"]
    ls.downgrade()
    assert ls.check_owned(["a", "b", "c"], shared=1)
    assert ls._GetLocks()[0].GetLockInfo(["mode"]) == ["shared"]
    assert actor("o").call(ls.acquire, locking.ALL_SET, shared=1,
                           timeout=0) == {"a", "b", "c"}
    with pytest.raises(errors.ProgrammerError):
        ls.downgrade("zz")


# GanetiLockManager -----------------------------------------------------------

def _Manager() -> locking.GanetiLockManager:
    return locking.GanetiLockManager(["n1", "n2"], ["g1"], ["i1", "i2"],
                                     ["net1"])


def test_level_constants():
    assert locking.LEVELS == [0, 1, 2, 3, 4, 5]
    assert [locking.LEVEL_NAMES[i] for i in locking.LEVELS] == [
        "cluster", "instance", "nodegroup", "node", "node-res", "network"]
    assert locking.LEVEL_CLUSTER not in locking.LEVELS_MOD
    assert locking.ALL_SET is None and locking.BGL == "BGL"


def test_manager_level_order_enforced():
    glm = _Manager()
    with pytest.raises(errors.ProgrammerError):
        glm.acquire(locking.LEVEL_INSTANCE, ["i1"])
    assert glm.acquire(locking.LEVEL_CLUSTER, [locking.BGL],
                       shared=1) == {"BGL"}
    assert glm.acquire(locking.LEVEL_NODE, ["n1"]) == {"n1"}
    with pytest.raises(errors.ProgrammerError):
        glm.acquire(locking.LEVEL_INSTANCE, ["i1"])
    with pytest.raises(errors.ProgrammerError):
        glm.release(locking.LEVEL_CLUSTER)
    with pytest.raises(errors.ProgrammerError):
        glm.add(locking.LEVEL_INSTANCE, "i3")
    with pytest.raises(errors.ProgrammerError):
        glm.acquire(7, ["x"])
    assert glm.acquire(locking.LEVEL_NODE_RES, ["n1", "n2"]) == {"n1", "n2"}
    glm.release(locking.LEVEL_NODE_RES)
    glm.release(locking.LEVEL_NODE)
    assert glm.acquire(locking.LEVEL_INSTANCE, locking.ALL_SET) == \
        {"i1", "i2"}
    assert glm.owning_all(locking.LEVEL_INSTANCE)
    glm.release(locking.LEVEL_INSTANCE)
    glm.release(locking.LEVEL_CLUSTER)
    assert not any(glm.is_owned(level) for level in locking.LEVELS)


def test_manager_add_remove():
    glm = _Manager()
    with pytest.raises(errors.ProgrammerError):
        glm.add(locking.LEVEL_INSTANCE, "i3")
    glm.acquire(locking.LEVEL_CLUSTER, locking.BGL, shared=1)
    with pytest.raises(errors.ProgrammerError):
        glm.add(locking.LEVEL_CLUSTER, "other")
    glm.add(locking.LEVEL_INSTANCE, "i3", acquired=True)
    assert glm.list_owned(locking.LEVEL_INSTANCE) == {"i3"}
    assert glm.check_owned(locking.LEVEL_INSTANCE, "i3", shared=0)
    glm.downgrade(locking.LEVEL_INSTANCE)
    assert glm.check_owned(locking.LEVEL_INSTANCE, "i3", shared=1)
    glm.release(locking.LEVEL_INSTANCE)
    glm.acquire(locking.LEVEL_INSTANCE, "i3")
    assert glm.remove(locking.LEVEL_INSTANCE, "i3") == ["i3"]
    assert not glm.is_owned(locking.LEVEL_INSTANCE)
    glm.acquire(locking.LEVEL_NODE, "n1")
    with pytest.raises(errors.ProgrammerError):
        glm.remove(locking.LEVEL_INSTANCE, "i1")
    glm.release(locking.LEVEL_NODE)
    glm.release(locking.LEVEL_CLUSTER)


def test_manager_query_locks(actor):
    glm = _Manager()
    (j1, j2, j3) = (actor("job/1"), actor("job/2"), actor("job/3"))
    for job in (j1, j2, j3):
        job.call(glm.acquire, locking.LEVEL_CLUSTER, locking.BGL, shared=1)
    j1.call(glm.acquire, locking.LEVEL_INSTANCE, ["i1"])
    future = j2.submit(glm.acquire, locking.LEVEL_INSTANCE, ["i1"], shared=1)
    j3.call(glm.acquire, locking.LEVEL_NODE, locking.ALL_SET, shared=1)

    def Pending():
        result = glm.QueryLocks(["name", "pending"])
        return dict((row[0][1], row[1][1]) for row in result["data"])

    _WaitFor(lambda: Pending()["instance/i1"])
    result = glm.QueryLocks(["name", "mode", "owner", "pending", "bogus"])
    assert result["fields"][:4] == [
        {"name": "name", "title": "Name", "kind": constants.QFT_TEXT,
         "doc": "Lock name"},
        {"name": "mode", "title": "Mode", "kind": constants.QFT_OTHER,
         "doc": "Mode in which the lock is currently acquired"
                " (exclusive or shared)"},
        {"name": "owner", "title": "Owner", "kind": constants.QFT_OTHER,
         "doc": "Current lock owner(s)"},
        {"name": "pending", "title": "Pending", "kind": constants.QFT_OTHER,
         "doc": "Threads waiting for the lock"},
    ]
    assert result["fields"][4]["kind"] == constants.QFT_UNKNOWN
    assert result["fields"][4]["name"] == "bogus"
    for row in result["data"]:
        assert row[4] == [constants.RS_UNKNOWN, None]
        assert all(status == constants.RS_NORMAL for (status, _) in row[:4])
    rows = {row[0][1]: [value for (_, value) in row[1:4]]
            for row in result["data"]}
    names = [row[0][1] for row in result["data"]]
    assert names == sorted(names)
    assert set(names) == {
        "cluster/BGL", "cluster/[lockset]",
        "instance/[lockset]", "instance/i1", "instance/i2",
        "nodegroup/[lockset]", "nodegroup/g1",
        "node/[lockset]", "node/n1", "node/n2",
        "node-res/[lockset]", "node-res/n1", "node-res/n2",
        "network/[lockset]", "network/net1"}
    assert rows["cluster/BGL"] == ["shared", ["job/1", "job/2", "job/3"], []]
    assert rows["instance/i1"] == ["exclusive", ["job/1"],
                                   [["shared", ["job/2"]]]]
    assert rows["instance/i2"] == [None, [], []]
    assert rows["node/[lockset]"] == ["shared", ["job/3"], []]
    assert rows["node/n2"] == ["shared", ["job/3"], []]
    assert rows["node-res/n1"] == [None, [], []]
    j1.call(glm.release, locking.LEVEL_INSTANCE)
    assert future.result(WAIT) == {"i1"}


def test_manager_stress():
    """Random overlapping acquires from many threads must neither deadlock,
    lose wake-ups, starve anyone nor break mutual exclusion."""
    instances = ["inst%02d" % i for i in range(8)]
    nodes = ["node%d" % i for i in range(4)]
    glm = locking.GanetiLockManager(nodes, ["g1"], instances, ["net1"])
    nthreads = 16
    rounds = 300
    guard = threading.Lock()
    holders: dict = {}
    failures: list = []
    completed = [0] * nthreads
    successes = [0] * nthreads
    blocking_rounds = [0] * nthreads

    def Hold(level, names, shared):
        with guard:
            for name in names:
                (exc, shr) = holders.get((level, name), (0, 0))
                if exc or (not shared and shr):
                    failures.append("conflict on %s/%s" % (level, name))
                holders[(level, name)] = (exc, shr + 1) if shared \
                    else (1, shr)

    def Unhold(level, names, shared):
        with guard:
            for name in names:
                (exc, shr) = holders[(level, name)]
                holders[(level, name)] = (exc, shr - 1) if shared \
                    else (0, shr)

    def Round(idx, rng, rnd, timeout):
        held = []
        bgl_shared = rng.random() < 0.9
        if glm.acquire(locking.LEVEL_CLUSTER, locking.BGL, shared=bgl_shared,
                       timeout=timeout) is None:
            return False
        try:
            held.append((locking.LEVEL_CLUSTER, [locking.BGL], bgl_shared))
            Hold(*held[-1])
            if rng.random() < 0.05:
                tmp = "tmp-%d-%d" % (idx, rnd)
                glm.add(locking.LEVEL_INSTANCE, tmp, acquired=True)
                Hold(locking.LEVEL_INSTANCE, [tmp], False)
                Unhold(locking.LEVEL_INSTANCE, [tmp], False)
                if glm.remove(locking.LEVEL_INSTANCE, tmp) != [tmp]:
                    failures.append("could not remove %s" % tmp)
                return True
            for (level, pool) in [(locking.LEVEL_INSTANCE, instances),
                                  (locking.LEVEL_NODE, nodes)]:
                if rng.random() < 0.3:
                    continue
                shared = rng.random() < 0.4
                if rng.random() < 0.1:
                    names = locking.ALL_SET
                else:
                    names = rng.sample(pool, rng.randint(1, 3))
                got = glm.acquire(level, names, shared=shared,
                                  timeout=timeout)
                if got is None:
                    if timeout is None:
                        failures.append("blocking acquire returned None")
                    return False
                if names is locking.ALL_SET:
                    if not got.issuperset(pool):
                        failures.append("whole set incomplete: %s" % got)
                elif got != set(names):
                    failures.append("got %s for %s" % (got, names))
                if glm.list_owned(level) != got:
                    failures.append("list_owned mismatch")
                held.append((level, sorted(got), shared))
                Hold(*held[-1])
            if rng.random() < 0.3:
                time.sleep(rng.choice([0, 0.0002, 0.001]))
            return True
        finally:
            for (level, names, shared) in reversed(held):
                Unhold(level, names, shared)
                glm.release(level)
            if any(glm.is_owned(level) for level in locking.LEVELS):
                failures.append("locks left owned after release")

    def Worker(idx):
        rng = random.Random(idx)
        try:
            for rnd in range(rounds):
                timeout = rng.choice([None, None, 0, 0.001, 0.005, 0.02])
                if Round(idx, rng, rnd, timeout):
                    successes[idx] += 1
                if timeout is None:
                    blocking_rounds[idx] += 1
                completed[idx] += 1
        except BaseException as err:  # reported by the main thread
            failures.append("thread %d: %r" % (idx, err))

    threads = [threading.Thread(target=Worker, args=(i,), name="job/%d" % i,
                                daemon=True)
               for i in range(nthreads)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not any(thread.is_alive() for thread in threads), \
        "deadlock or lost wake-up: %s" % glm.QueryLocks(
            ["name", "mode", "owner", "pending"])["data"]
    assert not failures, failures[:10]
    assert completed == [rounds] * nthreads
    for idx in range(nthreads):
        assert successes[idx] >= blocking_rounds[idx] > 0
    assert all(value == (0, 0) for value in holders.values())
    for row in glm.QueryLocks(["mode", "owner", "pending"])["data"]:
        assert [value for (_, value) in row] == [None, [], []]
    assert glm._keyring[locking.LEVEL_INSTANCE]._names() == set(instances)


def test_interrupted_waiter_leaves_no_trace(actor):
    lock = locking.SharedLock("l")
    holder = actor("h")
    holder.call(lock.acquire)

    def Interrupt():
        raise KeyboardInterrupt()

    with pytest.raises(KeyboardInterrupt):
        actor("w").call(lock.acquire, test_notify=Interrupt)
    assert lock.GetLockInfo(["pending"]) == [[]]
    holder.call(lock.release)
    assert lock.acquire(timeout=0)
