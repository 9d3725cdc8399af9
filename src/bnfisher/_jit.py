"""Compiled functions with numba's on-disk cache when there is somewhere to keep it (private).

``@compiled()`` raises "cannot cache function: no locator available" at import for
a read-only install without a writable home (containers, service accounts, CI): then
the function is compiled without the cache, silently, and works the same.
"""

from __future__ import annotations

from numba import njit

__all__ = ["compiled"]


def compiled(**options):
    """Return ``numba.njit(cache=True, **options)``, falling back to no cache where none can be kept.

    Parameters
    ----------
    **options
        Further ``njit`` options (``nogil=True``, ...).

    Returns
    -------
    callable
        A decorator.
    """

    def decorate(function):
        try:
            return njit(cache=True, **options)(function)
        except RuntimeError:  # no cache locator: read-only package folder and no writable cache directory
            return njit(**options)(function)

    return decorate
