"""Threads over independent pieces of work (private): ``n_jobs`` as scikit-learn reads it.

The heavy steps of a comparison (NumPy's random draws, SciPy's sparse products, the
compiled loops) release the GIL, so threads use more than one core without copying the
data into other processes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

from bnfisher.exceptions import OptionError, OptionTypeError

__all__ = ["map_threads", "resolve_jobs"]

_PREFIX = "bnfisher-pool"


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
    """
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise OptionTypeError(f"`n_jobs` must be an integer or None; got {n_jobs!r}.")
    if n_jobs == 0:
        raise OptionError("`n_jobs` must not be 0: give 1 for one thread, -1 for all cores.")
    cores = os.cpu_count() or 1
    return n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)


def map_threads(function: Callable, items: Iterable, *, n_jobs: int | None = None) -> Iterator:
    """``function(item)`` for every item, in order, on ``n_jobs`` threads (lazily: results as they are consumed).

    Parameters
    ----------
    function : callable
    items : iterable
    n_jobs : int or None
        See :func:`resolve_jobs`.

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
        yield from pool.map(function, items)
