"""Granular locking of cluster resources for the master daemon.

Logical units declare the resources they touch and the processor acquires
the matching locks here before running them (design-2.0 "Granular
locking"). Three layers build on each other:

* ``SharedLock``: one lock with shared and exclusive modes, priorities,
  timeouts and deletion. Waiters queue in (priority, arrival) order and the
  releasing thread hands the lock over to the head of the queue, so no
  waiter can be overtaken by a newcomer of equal or lower priority and no
  wake-up can be lost.
* ``LockSet``: a named, growable set of ``SharedLock`` plus a set-level lock.
  Members are always taken in sorted order; taking the whole set
  (``ALL_SET``) first takes the set-level lock, which keeps ``add`` out.
* ``GanetiLockManager``: one ``LockSet`` per level (BGL, instances, node
  groups, nodes, node resources, networks) and the rule that levels are
  taken in increasing order, the BGL first.

Together the fixed order (level, set-level lock, sorted member names) makes
deadlocks impossible as long as every thread goes through this module.

Owners are threads. Misuse that is a programming bug (re-acquiring a lock
already owned, releasing or downgrading a lock not owned, wrong level
order, adding while holding part of a set) raises
``errors.ProgrammerError``. Conditions a correct caller must handle (a lock
that does not exist or was deleted, adding a name that exists) raise
``errors.LockError``. A timeout is not an error: ``acquire`` returns
``False`` (``SharedLock``) or ``None`` (``LockSet``, manager).
"""

import bisect
import functools
import itertools
import threading
import time
from typing import Any, Callable, Iterable

from ganeti import constants
from ganeti import errors

LEVEL_CLUSTER = 0
LEVEL_INSTANCE = 1
LEVEL_NODEGROUP = 2
LEVEL_NODE = 3
LEVEL_NODE_RES = 4
LEVEL_NETWORK = 5

LEVELS = [
    LEVEL_CLUSTER,
    LEVEL_INSTANCE,
    LEVEL_NODEGROUP,
    LEVEL_NODE,
    LEVEL_NODE_RES,
    LEVEL_NETWORK,
]

LEVEL_NAMES = {
    LEVEL_CLUSTER: "cluster",
    LEVEL_INSTANCE: "instance",
    LEVEL_NODEGROUP: "nodegroup",
    LEVEL_NODE: "node",
    LEVEL_NODE_RES: "node-res",
    LEVEL_NETWORK: "network",
}

# Levels whose locks follow the configuration (added and removed at run time)
LEVELS_MOD = frozenset([LEVEL_NODE_RES, LEVEL_NODE, LEVEL_NODEGROUP,
                        LEVEL_INSTANCE, LEVEL_NETWORK])

BGL = "BGL"

# Passed instead of a list of names to mean every member of a set
ALL_SET = None

_MODE_SHARED = "shared"
_MODE_EXCLUSIVE = "exclusive"
_SET_LOCK_SUFFIX = "[lockset]"

LockNames = Iterable[str] | str | None


class _Waiter:
    """One blocked ``SharedLock.acquire`` call.

    Each waiter has its own pre-acquired ``threading.Lock`` as a binary
    semaphore: the granting thread releases it, so a waiter is woken
    exactly when it has been made an owner (or the lock was deleted) and
    never needs to re-check a shared condition.
    """

    __slots__ = ("shared", "priority", "seq", "thread", "wakeup", "granted",
                 "failed")

    def __init__(self, shared: bool, priority: int, seq: int,
                 thread: threading.Thread):
        self.shared = shared
        self.priority = priority
        self.seq = seq
        self.thread = thread
        self.wakeup = threading.Lock()
        self.wakeup.acquire()
        self.granted = False
        self.failed = False


def _WaiterKey(waiter: _Waiter) -> tuple[int, int]:
    return (waiter.priority, waiter.seq)


class SharedLock:
    """A non-recursive lock with shared and exclusive modes.

    Waiters are served by priority (lower number first), then in arrival
    order. An acquire that finds the lock compatible is granted at once
    only if no waiter of the same or higher priority is queued; otherwise
    it queues, which keeps a stream of shared acquirers from starving a
    waiting exclusive one. Whenever the lock state changes, the head of the
    queue is granted as far as compatible (all consecutive shared waiters,
    or one exclusive waiter).
    """

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._exc: threading.Thread | None = None
        self._shr: set[threading.Thread] = set()
        self._pending: list[_Waiter] = []
        self._seq = itertools.count()
        self._deleted = False

    def __repr__(self) -> str:
        return "<%s %r>" % (self.__class__.__name__, self.name)

    def _owned_unlocked(self, me: threading.Thread, shared: int) -> bool:
        if shared < 0:
            return self._exc is me or me in self._shr
        if shared:
            return me in self._shr
        return self._exc is me

    def _grant_unlocked(self) -> None:
        """Hand the lock to as many queued waiters as the state allows."""
        pending = self._pending
        while pending:
            waiter = pending[0]
            if waiter.shared:
                if self._exc is not None:
                    return
                self._shr.add(waiter.thread)
            else:
                if self._exc is not None or self._shr:
                    return
                self._exc = waiter.thread
            del pending[0]
            waiter.granted = True
            waiter.wakeup.release()
            if not waiter.shared:
                return

    def is_owned(self, shared: int = -1) -> bool:
        """Whether the current thread owns the lock (-1 any mode, 0
        exclusively, 1 shared).

        No internal lock is taken: whether the calling thread is an owner
        changes only through its own calls (others can grant the lock to
        it only while it blocks in ``acquire``), and single reads of the
        attribute and set are atomic.
        """
        return self._owned_unlocked(threading.current_thread(), shared)

    def acquire(self, shared: int = 0, timeout: float | None = None,
                priority: int = constants.OP_PRIO_DEFAULT,
                test_notify: Callable[[], Any] | None = None) -> bool:
        """Acquire the lock, waiting at most ``timeout`` seconds.

        A ``timeout`` of zero or less never waits. Returns False on timeout.
        ``test_notify``, if given, is called (without any internal lock
        held) once this call has been queued and is about to block, which
        lets tests order concurrent waiters deterministically.
        """
        me = threading.current_thread()
        with self._lock:
            if self._deleted:
                raise errors.LockError("Lock %s has been deleted" % self.name)
            if self._exc is me or me in self._shr:
                raise errors.ProgrammerError("Lock %s is already owned by"
                                             " this thread" % self.name)
            if (self._exc is None and (shared or not self._shr) and
                    (not self._pending or
                     self._pending[0].priority > priority)):
                if shared:
                    self._shr.add(me)
                else:
                    self._exc = me
                return True
            if timeout is not None and timeout <= 0:
                return False
            waiter = _Waiter(bool(shared), priority, next(self._seq), me)
            bisect.insort(self._pending, waiter, key=_WaiterKey)

        try:
            if test_notify is not None:
                test_notify()
            if timeout is None:
                waiter.wakeup.acquire()
            else:
                waiter.wakeup.acquire(True, timeout)
        except BaseException:
            # Interrupted (e.g. KeyboardInterrupt): leave no trace behind
            self._Abandon(waiter, me)
            raise

        with self._lock:
            if waiter.failed:
                raise errors.LockError("Lock %s has been deleted" % self.name)
            if waiter.granted:
                return True
            # Timed out: leave the queue and let those behind us move up
            self._pending.remove(waiter)
            self._grant_unlocked()
            return False

    def _Abandon(self, waiter: _Waiter, me: threading.Thread) -> None:
        """Withdraw a waiter whose thread stopped waiting abnormally."""
        with self._lock:
            if waiter.granted:
                if self._exc is me:
                    self._exc = None
                else:
                    self._shr.discard(me)
            elif not waiter.failed:
                self._pending.remove(waiter)
            self._grant_unlocked()

    def release(self) -> None:
        """Release the lock, in whichever mode it is owned."""
        me = threading.current_thread()
        with self._lock:
            if self._exc is me:
                self._exc = None
            elif me in self._shr:
                self._shr.remove(me)
            else:
                raise errors.ProgrammerError("Lock %s is not owned by this"
                                             " thread" % self.name)
            if self._pending:
                self._grant_unlocked()

    def downgrade(self) -> bool:
        """Turn exclusive ownership into shared; shared stays shared."""
        me = threading.current_thread()
        with self._lock:
            if self._exc is me:
                self._exc = None
                self._shr.add(me)
                self._grant_unlocked()
            elif me not in self._shr:
                raise errors.ProgrammerError("Lock %s is not owned by this"
                                             " thread" % self.name)
        return True

    def delete(self, timeout: float | None = None,
               priority: int = constants.OP_PRIO_DEFAULT) -> bool:
        """Delete the lock, acquiring it exclusively first if needed.

        Every queued waiter, and every later acquire, fails with LockError.
        Returns False if the lock could not be acquired within ``timeout``.
        """
        if self.is_owned(shared=1):
            raise errors.ProgrammerError("Cannot delete lock %s owned in"
                                         " shared mode" % self.name)
        if not self.is_owned(shared=0):
            if not self.acquire(shared=0, timeout=timeout, priority=priority):
                return False
        with self._lock:
            self._deleted = True
            self._exc = None
            for waiter in self._pending:
                waiter.failed = True
                waiter.wakeup.release()
            self._pending = []
        return True

    def GetLockInfo(self, fields: Iterable[str]) -> list:
        """Values of the lock query fields ``fields`` (name, mode, owner,
        pending), read consistently under the internal lock."""
        with self._lock:
            result: list[Any] = []
            for field in fields:
                if field == "name":
                    result.append(self.name)
                elif field == "mode":
                    if self._exc is not None:
                        result.append(_MODE_EXCLUSIVE)
                    elif self._shr:
                        result.append(_MODE_SHARED)
                    else:
                        result.append(None)
                elif field == "owner":
                    owners = self._shr if self._exc is None else [self._exc]
                    result.append(sorted(t.name for t in owners))
                elif field == "pending":
                    result.append([[_MODE_SHARED if w.shared
                                    else _MODE_EXCLUSIVE, [w.thread.name]]
                                   for w in self._pending])
                else:
                    raise errors.ProgrammerError("Unknown lock field %r" %
                                                 field)
            return result


def ssynchronized(mylock: SharedLock | str, shared: int = 0) -> Callable:
    """Decorator running a function with ``mylock`` held.

    ``mylock`` is a ``SharedLock`` or the name of an attribute of the first
    argument (``self``) holding one, for per-object locks.
    """
    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def sync_function(*args, **kwargs):
            lock = getattr(args[0], mylock) if isinstance(mylock, str) \
                else mylock
            lock.acquire(shared=shared)
            try:
                return fn(*args, **kwargs)
            finally:
                lock.release()
        return sync_function
    return wrap


def _NameList(names: Iterable[str] | str) -> list[str]:
    """Accept a single name where a list is expected."""
    if isinstance(names, str):
        return [names]
    return list(names)


class _Deadline:
    """Turns an overall timeout into per-step remaining timeouts."""

    __slots__ = ("_end",)

    def __init__(self, timeout: float | None):
        self._end = None if timeout is None else time.monotonic() + timeout

    def remaining(self) -> float | None:
        if self._end is None:
            return None
        return max(0.0, self._end - time.monotonic())


class _OwnerState(threading.local):
    """What the current thread owns in one ``LockSet``.

    Kept per thread so ownership checks, which the manager makes on every
    call for every level, need no lock at all.
    """

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()
        self.whole = False


class LockSet:
    """A set of named ``SharedLock`` that can grow and shrink.

    A thread may acquire locks of a set only once before releasing them
    (acquiring more while owning some could break the sorted order). The
    set-level lock is held by whoever acquired ``ALL_SET`` and, exclusively
    and briefly, by ``add``; members can thus not appear under the feet of
    a whole-set owner, while removal needs the member itself exclusively.
    """

    def __init__(self, members: Iterable[str], name: str):
        self.name = name
        self._lock = SharedLock(self._LockName(_SET_LOCK_SUFFIX))
        self._map_lock = threading.Lock()
        self._lockdict = {member: SharedLock(self._LockName(member))
                          for member in members}
        self._owners = _OwnerState()

    def __repr__(self) -> str:
        return "<%s %r>" % (self.__class__.__name__, self.name)

    def _LockName(self, member: str) -> str:
        return "%s/%s" % (self.name, member)

    def _names(self) -> set[str]:
        """Names of the current members."""
        with self._map_lock:
            return set(self._lockdict)

    def _GetLocks(self) -> list[SharedLock]:
        """The set-level lock and the current members, for lock queries."""
        with self._map_lock:
            return [self._lock] + list(self._lockdict.values())

    def list_owned(self) -> set[str]:
        """Names of the members owned by the current thread."""
        return set(self._owners.names)

    def is_owned(self) -> bool:
        """Whether the current thread owns any lock of the set."""
        state = self._owners
        return state.whole or bool(state.names)

    def owning_all(self) -> bool:
        """Whether the current thread acquired the whole set."""
        return self._owners.whole

    def check_owned(self, names: Iterable[str] | str,
                    shared: int = -1) -> bool:
        """Whether every one of ``names`` is owned in mode ``shared``
        (-1 any, 0 exclusive, 1 shared); unknown names are not owned."""
        names = _NameList(names)
        owned = self._owners.names
        if not names or not owned.issuperset(names):
            return False
        with self._map_lock:
            locks = [self._lockdict.get(name) for name in names]
        return all(lock is not None and lock.is_owned(shared=shared)
                   for lock in locks)

    def acquire(self, names: LockNames, timeout: float | None = None,
                shared: int = 0, priority: int = constants.OP_PRIO_DEFAULT,
                opportunistic: bool = False,
                test_notify: Callable[[str | None], Any] | None = None
                ) -> set[str] | None:
        """Acquire ``names`` (or ``ALL_SET``) in sorted order.

        ``timeout`` bounds the whole call; on timeout nothing acquired by
        this call stays held and None is returned. A name that does not
        exist, or is deleted while we wait for it, raises LockError naming
        it (except with ``ALL_SET``, where removed members are skipped).
        With ``opportunistic`` only the members free right now are taken.
        ``test_notify`` is called with the member name (``ALL_SET`` for
        the set-level lock) whenever this call is about to block.
        """
        if self.is_owned():
            raise errors.ProgrammerError("Locks of set %s are already owned"
                                         " by this thread" % self.name)
        deadline = _Deadline(timeout)
        if names is ALL_SET:
            notify = None if test_notify is None else \
                functools.partial(test_notify, ALL_SET)
            if not self._lock.acquire(shared=shared,
                                      timeout=deadline.remaining(),
                                      priority=priority, test_notify=notify):
                return None
            try:
                result = self._AcquireMembers(sorted(self._names()), True,
                                              shared, priority, deadline,
                                              opportunistic, test_notify)
            except BaseException:
                self._lock.release()
                raise
            if result is None:
                self._lock.release()
            else:
                self._owners.whole = True
            return result
        return self._AcquireMembers(sorted(set(_NameList(names))), False,
                                    shared, priority, deadline,
                                    opportunistic, test_notify)

    def _AcquireMembers(self, names: list[str], whole_set: bool, shared: int,
                        priority: int, deadline: _Deadline,
                        opportunistic: bool,
                        test_notify: Callable[[str | None], Any] | None
                        ) -> set[str] | None:
        with self._map_lock:
            locks = []
            for name in names:
                lock = self._lockdict.get(name)
                if lock is not None:
                    locks.append((name, lock))
                elif not whole_set:
                    raise errors.LockError("Non-existing lock %s in set %s" %
                                           (name, self.name))
        acquired: list[tuple[str, SharedLock]] = []
        try:
            for (name, lock) in locks:
                notify = None if test_notify is None else \
                    functools.partial(test_notify, name)
                try:
                    ok = lock.acquire(shared=shared,
                                      timeout=0 if opportunistic
                                      else deadline.remaining(),
                                      priority=priority, test_notify=notify)
                except errors.LockError:
                    if whole_set or opportunistic:
                        continue
                    raise errors.LockError("Lock %s in set %s was removed"
                                           " while waiting for it" %
                                           (name, self.name))
                if ok:
                    acquired.append((name, lock))
                elif not opportunistic:
                    for (_, held) in reversed(acquired):
                        held.release()
                    return None
        except BaseException:
            for (_, held) in reversed(acquired):
                held.release()
            raise
        result = {name for (name, _) in acquired}
        self._owners.names.update(result)
        return result

    def release(self, names: LockNames = None) -> None:
        """Release ``names`` or, with None, everything owned in the set.

        Releasing part of the set also drops the set-level lock, since the
        thread no longer holds the whole set.
        """
        owned = self._owners.names
        if names is None:
            names = set(owned)
        else:
            names = set(_NameList(names))
            if not owned.issuperset(names):
                raise errors.ProgrammerError(
                    "Releasing locks not owned in set %s: %s" %
                    (self.name, ", ".join(sorted(names - owned))))
        if self._owners.whole:
            self._owners.whole = False
            self._lock.release()
        with self._map_lock:
            locks = [self._lockdict[name] for name in names]
        for lock in locks:
            lock.release()
        owned.difference_update(names)

    def downgrade(self, names: LockNames = None) -> bool:
        """Downgrade ``names`` (default: all owned) to shared mode; the
        set-level lock follows once no member is held exclusively."""
        if not self.is_owned():
            raise errors.ProgrammerError("Downgrading set %s without owning"
                                         " any of its locks" % self.name)
        owned = self._owners.names
        names = set(owned) if names is None else set(_NameList(names))
        if not owned.issuperset(names):
            raise errors.ProgrammerError(
                "Downgrading locks not owned in set %s: %s" %
                (self.name, ", ".join(sorted(names - owned))))
        with self._map_lock:
            locks = {name: self._lockdict[name] for name in owned}
        for name in names:
            locks[name].downgrade()
        if (self._lock.is_owned(shared=0) and
                not any(lock.is_owned(shared=0) for lock in locks.values())):
            self._lock.downgrade()
        return True

    def add(self, names: Iterable[str] | str, acquired: bool = False,
            shared: int = 0) -> None:
        """Create locks for ``names``, optionally owned at once.

        Waits while another thread holds the whole set. A thread holding
        the whole set exclusively may add; one holding only part of the set
        (or the whole set shared) may not, as that would reverse the lock
        order.
        """
        names = _NameList(names)
        holds_set = self._lock.is_owned(shared=0)
        if not holds_set and self.is_owned():
            raise errors.ProgrammerError("Cannot add to set %s while owning"
                                         " only part of it or owning it"
                                         " shared" % self.name)
        if len(set(names)) != len(names):
            raise errors.LockError("Duplicate names to add to set %s: %s" %
                                   (self.name, ", ".join(names)))
        if not holds_set:
            self._lock.acquire()
        try:
            with self._map_lock:
                existing = set(names).intersection(self._lockdict)
                if existing:
                    raise errors.LockError(
                        "Locks already exist in set %s: %s" %
                        (self.name, ", ".join(sorted(existing))))
                for name in names:
                    lock = SharedLock(self._LockName(name))
                    if acquired:
                        lock.acquire(shared=shared)
                    self._lockdict[name] = lock
            if acquired:
                self._owners.names.update(names)
        finally:
            if not holds_set:
                self._lock.release()

    def remove(self, names: Iterable[str] | str) -> list[str]:
        """Delete the locks ``names``; pending acquires of them fail.

        Each name must be owned exclusively, unless the whole set is owned
        exclusively, in which case members not owned are acquired first.
        Names that do not exist (any more) are skipped; the names actually
        removed are returned.
        """
        names = _NameList(names)
        owned = self._owners.names
        holds_set = self._lock.is_owned(shared=0)
        with self._map_lock:
            locks = [(name, self._lockdict.get(name)) for name in names]
        for (name, lock) in locks:
            if name in owned:
                if lock is None or not lock.is_owned(shared=0):
                    raise errors.ProgrammerError(
                        "Lock %s in set %s must be owned exclusively to be"
                        " removed" % (name, self.name))
            elif not holds_set and lock is not None:
                raise errors.ProgrammerError(
                    "Lock %s in set %s must be owned to be removed" %
                    (name, self.name))
        removed = []
        for (name, lock) in locks:
            if lock is None:
                continue
            try:
                if not lock.delete():
                    continue
            except errors.LockError:
                continue
            with self._map_lock:
                if self._lockdict.get(name) is lock:
                    del self._lockdict[name]
            owned.discard(name)
            removed.append(name)
        return removed


_LOCK_FIELDS = {
    "name": {"name": "name", "title": "Name", "kind": constants.QFT_TEXT,
             "doc": "Lock name"},
    "mode": {"name": "mode", "title": "Mode", "kind": constants.QFT_OTHER,
             "doc": "Mode in which the lock is currently acquired"
                    " (exclusive or shared)"},
    "owner": {"name": "owner", "title": "Owner", "kind": constants.QFT_OTHER,
              "doc": "Current lock owner(s)"},
    "pending": {"name": "pending", "title": "Pending",
                "kind": constants.QFT_OTHER,
                "doc": "Threads waiting for the lock"},
}


class GanetiLockManager:
    """The locks of a cluster, one ``LockSet`` per level.

    Enforces the global order: the BGL before anything else, then levels
    in increasing order, never going back to a lower level while holding a
    higher one.
    """

    def __init__(self, nodes: Iterable[str], nodegroups: Iterable[str],
                 instances: Iterable[str], networks: Iterable[str]):
        nodes = list(nodes)
        members = {
            LEVEL_CLUSTER: [BGL],
            LEVEL_INSTANCE: instances,
            LEVEL_NODEGROUP: nodegroups,
            LEVEL_NODE: nodes,
            LEVEL_NODE_RES: nodes,
            LEVEL_NETWORK: networks,
        }
        self._keyring = {level: LockSet(members[level], LEVEL_NAMES[level])
                         for level in LEVELS}

    def _Set(self, level: int) -> LockSet:
        try:
            return self._keyring[level]
        except KeyError:
            raise errors.ProgrammerError("Invalid lock level %r" % (level,))

    def _UpperOwned(self, level: int) -> list[int]:
        return [other for other in LEVELS
                if other > level and self._keyring[other].is_owned()]

    def _CheckBGL(self, level: int) -> None:
        if not self._keyring[LEVEL_CLUSTER].is_owned():
            raise errors.ProgrammerError(
                "The BGL must be owned before working on level %s" %
                LEVEL_NAMES[level])

    def _CheckModifiable(self, level: int) -> None:
        self._Set(level)
        if level not in LEVELS_MOD:
            raise errors.ProgrammerError("Locks of level %s cannot be added"
                                         " or removed" % LEVEL_NAMES[level])
        self._CheckBGL(level)

    def acquire(self, level: int, names: LockNames,
                timeout: float | None = None, shared: int = 0,
                priority: int = constants.OP_PRIO_DEFAULT,
                opportunistic: bool = False) -> set[str] | None:
        """Acquire locks at ``level``; see ``LockSet.acquire``."""
        lockset = self._Set(level)
        if level != LEVEL_CLUSTER:
            self._CheckBGL(level)
        upper = self._UpperOwned(level)
        if upper:
            raise errors.ProgrammerError(
                "Cannot acquire level %s while owning locks at level(s) %s" %
                (LEVEL_NAMES[level],
                 ", ".join(LEVEL_NAMES[i] for i in upper)))
        return lockset.acquire(names, timeout=timeout, shared=shared,
                               priority=priority, opportunistic=opportunistic)

    def release(self, level: int, names: LockNames = None) -> None:
        """Release locks at ``level``; the BGL goes last."""
        lockset = self._Set(level)
        if level == LEVEL_CLUSTER and self._UpperOwned(level):
            raise errors.ProgrammerError("Cannot release the BGL while owning"
                                         " locks at other levels")
        lockset.release(names)

    def add(self, level: int, names: Iterable[str] | str,
            acquired: bool = False, shared: int = 0) -> None:
        """Create locks at a modifiable level; see ``LockSet.add``."""
        self._CheckModifiable(level)
        if self._UpperOwned(level):
            raise errors.ProgrammerError("Cannot add locks at level %s while"
                                         " owning locks at a higher level" %
                                         LEVEL_NAMES[level])
        self._keyring[level].add(names, acquired=acquired, shared=shared)

    def remove(self, level: int, names: Iterable[str] | str) -> list[str]:
        """Delete locks at a modifiable level; see ``LockSet.remove``."""
        self._CheckModifiable(level)
        if not self._keyring[level].is_owned() and self._UpperOwned(level):
            raise errors.ProgrammerError("Cannot remove locks at level %s"
                                         " without owning it while owning a"
                                         " higher level" % LEVEL_NAMES[level])
        return self._keyring[level].remove(names)

    def downgrade(self, level: int, names: LockNames = None) -> bool:
        """Downgrade owned locks at ``level`` to shared mode."""
        return self._Set(level).downgrade(names)

    def list_owned(self, level: int) -> set[str]:
        return self._Set(level).list_owned()

    def is_owned(self, level: int) -> bool:
        return self._Set(level).is_owned()

    def owning_all(self, level: int) -> bool:
        return self._Set(level).owning_all()

    def check_owned(self, level: int, names: Iterable[str] | str,
                    shared: int = -1) -> bool:
        return self._Set(level).check_owned(names, shared=shared)

    def QueryLocks(self, fields: list[str]) -> dict:
        """Answer a LUXI ``Query`` for the ``lock`` resource.

        Rows are sorted by lock name; every lock is read under its own
        internal lock, so a row is consistent but rows are not a snapshot
        of the whole manager.
        """
        fielddefs = []
        for field in fields:
            fdef = _LOCK_FIELDS.get(field)
            if fdef is None:
                fdef = {"name": field, "title": field,
                        "kind": constants.QFT_UNKNOWN,
                        "doc": "Unknown field '%s'" % field}
            fielddefs.append(dict(fdef))
        known = [field for field in fields if field in _LOCK_FIELDS]
        wanted = ["name"] + known
        infos = []
        for level in LEVELS:
            for lock in self._keyring[level]._GetLocks():
                infos.append(dict(zip(wanted, lock.GetLockInfo(wanted))))
        infos.sort(key=lambda info: info["name"])
        data = []
        for info in infos:
            data.append([[constants.RS_NORMAL, info[field]]
                         if field in _LOCK_FIELDS
                         else [constants.RS_UNKNOWN, None]
                         for field in fields])
        return {"fields": fielddefs, "data": data}
