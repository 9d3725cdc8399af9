"""Compiled functions: numba imported and each function compiled on first call, cached on disk (private).

``@compiled()`` leaves a stand-in that imports numba only when one of the package's
compiled functions is first called, so ``import bnfisher`` does not pay for numba
(about 0.3 s).  On that first call every function declared so far is handed to
``numba.njit`` and put back in its module in place of its stand-in, so compiled
functions that call each other see numba dispatchers; each is then compiled for
its argument types on its own first call, as ``njit`` always does.

numba's on-disk cache is used when there is somewhere to keep it: ``njit(cache=True)``
raises "cannot cache function: no locator available" for a read-only install without
a writable home (containers, service accounts, CI), and then the function is compiled
without the cache, silently, and works the same.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["compiled"]

_pending: list[_Deferred] = []
_lock = threading.Lock()


class _Deferred:
    """A function to be compiled with ``options``; calls go to its numba dispatcher."""

    def __init__(self, function: Callable[..., Any], options: dict[str, Any]) -> None:
        self.function = function
        self.options = options
        self.dispatcher: Any = None
        functools.update_wrapper(self, function)

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            _materialise()
        return self.dispatcher(*args)

    def __repr__(self) -> str:
        return f"<compiled function {self.function.__module__}.{self.function.__qualname__}>"


def _njit(function: Callable[..., Any], options: dict[str, Any]) -> Any:
    from numba import njit

    try:
        return njit(cache=True, **options)(function)
    except RuntimeError:  # no cache locator: read-only package folder and no writable cache directory
        return njit(**options)(function)


def _materialise() -> None:
    """Hand every declared function to numba and replace its stand-in in its module."""
    with _lock:
        for deferred in _pending:
            if deferred.dispatcher is None:
                deferred.dispatcher = _njit(deferred.function, deferred.options)
                module = sys.modules[deferred.function.__module__]
                name = deferred.function.__name__
                if getattr(module, name, None) is deferred:
                    setattr(module, name, deferred.dispatcher)


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Return a decorator that compiles with ``numba.njit(cache=True, **options)`` on first call.

    Parameters
    ----------
    **options
        Further ``njit`` options (``nogil=True``, ...).

    Returns
    -------
    callable
        A decorator.
    """

    def decorate(function: Callable[..., Any]) -> Any:
        deferred = _Deferred(function, options)
        with _lock:
            _pending.append(deferred)
        return deferred

    return decorate
