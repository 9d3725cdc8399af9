"""Threads over independent pieces of work (private): ``n_jobs`` as scikit-learn reads it.

The heavy steps of a comparison (NumPy's random draws, SciPy's sparse products, the
compiled loops) release the GIL, so threads use more than one core without copying the
data into other processes.
"""

from __future__ import annotations

import collections
import functools
import math
import os
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bnfisher.exceptions import DataWarning, OptionError, OptionTypeError

__all__ = ["PARALLEL_WORK", "available_cores", "map_threads", "prefetch", "resolve_jobs", "threads_for"]

_PREFIX = "bnfisher-pool"

#: Element visits (rows x families, distinct rows x families, ...) below which a job runs on one thread: threads
#: would cost more than they save.
PARALLEL_WORK = 4_000_000


def resolve_jobs(n_jobs: int | None) -> int:
    """Return the number of threads ``n_jobs`` asks for: None means 1, -1 all cores, -2 all but one.

    Parameters
    ----------
    n_jobs : int or None

    Returns
    -------
    int

    Raises
    ------
    OptionTypeError, OptionError
        For a non-integer or 0.

    Warns
    -----
    DataWarning
        For a negative number beyond the cores (``-100`` on 8 cores): 1 thread.
    """
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise OptionTypeError(f"`n_jobs` must be an integer or None; got {n_jobs!r}.")
    if n_jobs == 0:
        raise OptionError("`n_jobs` must not be 0: give 1 for one thread, -1 for all cores.")
    cores = available_cores()
    if n_jobs < -cores:  # legal (a script written for a larger machine), but it leaves no core here
        warnings.warn(f"`n_jobs` {n_jobs} asks for all cores but {-n_jobs - 1}, and this process may use {cores}: "
                      "running on 1 thread. Give -1 (all cores) or a positive number.", DataWarning, stacklevel=3)
    return n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)


def _cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """Return the CPU quota of the process's control group in cores (None: no quota, or none found).

    cgroup v2 writes ``"<quota> <period>"`` (or ``"max <period>"``) in ``cpu.max``; v1 writes the
    quota (-1: none) and the period in microseconds in ``cpu/cpu.cfs_quota_us`` and ``cpu.cfs_period_us``.
    """
    try:
        limit, interval = (root / "cpu.max").read_text().split()[:2]
        return None if limit == "max" else int(limit) / int(interval)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


@functools.lru_cache(maxsize=1)
def available_cores() -> int:
    """Return the cores this process may use: its CPU affinity, bounded by a container's CPU quota.

    ``os.cpu_count()`` counts the machine's cores; a container limited to 2 CPUs on a 64-core host
    would otherwise start 64 threads that share 2.  A fractional quota rounds up (1.5 CPUs: 2
    threads), as joblib does.  Read once per process.

    Returns
    -------
    int
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cpus()
    return max(1, min(cores, math.ceil(quota))) if quota is not None else max(1, cores)



def threads_for(work: int, n_jobs: int | None = -1) -> int:
    """Return the threads a job of ``work`` element visits gets: 1 below :data:`PARALLEL_WORK`, else ``n_jobs``'s.

    Parameters
    ----------
    work : int
    n_jobs : int or None, default=-1
        See :func:`resolve_jobs` (-1: every core).

    Returns
    -------
    int
    """
    return resolve_jobs(n_jobs) if work >= PARALLEL_WORK else 1

def map_threads(function: Callable, items: Iterable, *, n_jobs: int | None = None,
                lookahead: int | None = None) -> Iterator:
    """``function(item)`` for every item, in order, on ``n_jobs`` threads (lazily: results as they are consumed).

    Parameters
    ----------
    function : callable
    items : iterable
    n_jobs : int or None
        See :func:`resolve_jobs`.
    lookahead : int, optional
        At most this many results per thread computed ahead of the one consumed (bounds the
        memory of large results); default: every item submitted at once.

    Returns
    -------
    iterator
        The results, in the order of ``items``; the first exception raised is re-raised.

    Notes
    -----
    Called from one of its own threads, it runs serially: nested pools would only
    oversubscribe the cores (a window of ``drift`` counts its tables on its thread).
    """
    workers = resolve_jobs(n_jobs)
    if workers == 1 or threading.current_thread().name.startswith(_PREFIX):
        yield from map(function, items)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=_PREFIX) as pool:
        if lookahead is None:
            yield from pool.map(function, items)
            return
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(pool.submit(function, item))
            if len(pending) > lookahead * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def prefetch(function: Callable, items: Iterable) -> Iterator:
    """``function(item)`` for every item, in order, each computed on a second thread while the caller uses the last.

    For a producer whose results must come in order from one stream (random draws):
    the values are those of ``map(function, items)``, and at most two results exist at
    a time, so a producer may write into two buffers in turn.  Serial on one core, and
    when called from one of the package's own threads (pools do not nest).

    Parameters
    ----------
    function : callable
    items : iterable

    Returns
    -------
    iterator
        The results, in the order of ``items``; an exception is re-raised where its result would be.
    """
    items = list(items)
    if len(items) < 2 or resolve_jobs(-1) < 2 or threading.current_thread().name.startswith(_PREFIX):
        yield from map(function, items)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix=_PREFIX) as pool:
        future = pool.submit(function, items[0])
        for item in items[1:]:
            result = future.result()
            future = pool.submit(function, item)
            yield result
        yield future.result()
