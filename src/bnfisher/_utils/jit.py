"""Compiled functions: numba imported and each function compiled when it pays, cached on disk (private).

``@compiled()`` leaves a stand-in that imports numba only when one of the package's
compiled functions is first called, so ``import bnfisher`` does not pay for numba
(about 0.3 s).  On that first call every function declared so far is handed to
``numba.njit`` and put back in its module in place of its stand-in, so compiled
functions that call each other see numba dispatchers; each is then compiled for
its argument types on its own first call, as ``njit`` always does.

A function declared with a ``fallback`` (a NumPy version, or ``"python"`` for the
function itself run as plain Python) and a ``cost`` (the fallback's estimated
seconds for the arguments) runs the fallback instead, for as long as the estimated
work of all fallbacks stays within :data:`FALLBACK_BUDGET` seconds: a small job
(learning a network on a table of tens of thousands of rows) then never waits for
the compiler, which costs 5 s or more on a fresh install (23 s on a slow 2-core
machine for hill climbing's kernels), and a large one compiles once the work it
has done would have paid for it.  The switch is decided by the
estimates, not by the clock, so the same job takes the same path in every run.
Calls made from inside a running fallback run as plain Python.  Once numba is in
(the budget spent, or a function without a fallback called), every function is
compiled on its first call, fallback or not -- except that a function declared
``alone=True`` (one that calls no other compiled function) is compiled by itself
when it has no fallback or its estimate does not fit what is left of the budget, and
the others go on deciding by the budget: a loop that only pays compiled (the subset
search's annealing walk) compiles without taking the job's cheap fallbacks along.

The first time a process compiles (a cache miss, not a load from the cache), it says so
on stderr when stderr is a terminal, as the progress bars do: the pause that follows is
the compiler's, once per machine, not the job's (:data:`COMPILING_NOTICE`).

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

#: Estimated seconds of fallback work, over all fallbacks, after which compiling is cheaper than going on.
FALLBACK_BUDGET = 5.0

#: What a terminal is told when the process first compiles (numba's "numba:compile" event: a cache miss).
COMPILING_NOTICE = ("bnfisher: compiling its numeric kernels for this machine; this happens once, numba keeps "
                    "them in its cache ...")

_pending: list[_Deferred] = []
_swapped: list[tuple[Any, str, _Deferred]] = []  # (module, name, stand-in) of every dispatcher put in a module
_lock = threading.Lock()
_state: dict[str, Any] = {"spent": 0.0}
_inside = threading.local()


class _Deferred:
    """A function to be compiled with ``options``; calls go to its numba dispatcher, or to its fallback."""

    def __init__(self, function: Callable[..., Any], options: dict[str, Any], fallback: Any,
                 cost: Callable[..., float] | None, alone: bool = False) -> None:
        self.function = function
        self.alone = alone
        self.options = options
        self.fallback = function if fallback == "python" else fallback
        self.cost = cost
        self.dispatcher: Any = None
        self.compiled: Any = None  # its numba dispatcher once made, kept while the stand-in is back (_forget)
        functools.update_wrapper(self, function)

    def _affordable(self, args: tuple) -> bool:
        if getattr(_inside, "depth", 0):
            return True  # inside a running fallback: its cost was counted
        estimate = self.cost(*args) if self.cost is not None else 0.0
        with _lock:
            if _state["spent"] + estimate > FALLBACK_BUDGET:
                return False
            _state["spent"] += estimate
        return True

    def __call__(self, *args: Any) -> Any:
        if self.dispatcher is None:
            if self.fallback is not None and self._affordable(args):
                _inside.depth = getattr(_inside, "depth", 0) + 1
                try:
                    return self.fallback(*args)
                finally:
                    _inside.depth -= 1
            if self.alone:
                return self._by_itself()(*args)
            _materialise()
        return self.dispatcher(*args)

    def _by_itself(self) -> Any:
        """Return this function's own dispatcher, made without putting any dispatcher in the package's modules."""
        with _lock:
            if self.compiled is None:
                self.compiled = _njit(self.function, self.options)
            _notice_once()
        return self.compiled

    def __repr__(self) -> str:
        return f"<compiled function {self.function.__module__}.{self.function.__qualname__}>"


def _njit(function: Callable[..., Any], options: dict[str, Any]) -> Any:
    from numba import njit

    try:
        return njit(cache=True, **options)(function)
    except RuntimeError:  # no cache locator: read-only package folder and no writable cache directory
        return njit(**options)(function)


def _materialise() -> None:
    """Hand every declared function to numba and replace its stand-in in the package's modules.

    A compiled function that calls one imported from another module finds the dispatcher
    under the imported name too, so numba types the call.  No thread compiles against a
    stand-in: the modules are updated under numba's compiler lock, and the stand-ins learn
    their dispatchers last (a thread that calls one meanwhile runs its fallback, or waits).
    """
    with _lock:
        for deferred in _pending:
            if deferred.dispatcher is None and deferred.compiled is None:
                deferred.compiled = _njit(deferred.function, deferred.options)
        fresh = {id(deferred): (deferred, deferred.compiled) for deferred in _pending if deferred.dispatcher is None}
        if not fresh:
            return
        _notice_once()
        from numba.core.compiler_lock import global_compiler_lock

        # Another thread that reaches a new dispatcher meanwhile (through a module already updated) waits for
        # numba's compiler lock to compile it, so it types the calls in it once every module is updated.
        with global_compiler_lock:
            _swap_in(fresh)
            for deferred, dispatcher in fresh.values():  # the stand-ins last
                deferred.dispatcher = dispatcher


def _notice_once() -> None:
    """Register, once per process, a numba listener that prints :data:`COMPILING_NOTICE` on the first compile."""
    if _state.get("listening"):
        return
    from numba.core import event

    class _Notice(event.Listener):
        def on_start(self, ev) -> None:
            if not _state.get("noticed") and sys.stderr is not None and sys.stderr.isatty():
                _state["noticed"] = True
                print(COMPILING_NOTICE, file=sys.stderr, flush=True)

        def on_end(self, ev) -> None:
            pass

    event.register("numba:compile", _Notice())
    _state["listening"] = True


def _swap_in(fresh: dict) -> None:
    """Replace each stand-in in ``fresh`` (its id: stand-in, dispatcher) wherever a package module holds it."""
    package = __name__.partition(".")[0]
    for module_name, module in list(sys.modules.items()):
        if module is not None and module_name.partition(".")[0] == package:
            for name, value in list(vars(module).items()):
                if id(value) in fresh and value is fresh[id(value)][0]:
                    setattr(module, name, fresh[id(value)][1])
                    _swapped.append((module, name, value))


def _forget() -> None:
    """Put the stand-ins back in their modules, as before the first :func:`_materialise` (the budget spent stays spent).

    The dispatchers are kept: a later switch reuses them and compiles nothing twice.  The
    test suite calls it after each test, so that one test's explicit switch to compiled
    code does not decide the path of the tests after it in the same process.
    """
    with _lock:
        for module, name, deferred in _swapped:
            setattr(module, name, deferred)
        for deferred in _pending:
            deferred.dispatcher = None
        _swapped.clear()


def compiled(*, fallback: Any = None, cost: Callable[..., float] | None = None, alone: bool = False,
             **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Return a decorator that compiles with ``numba.njit(cache=True, **options)`` when it pays.

    Parameters
    ----------
    fallback : callable or "python", optional
        What runs instead while the fallbacks' estimated work stays within
        :data:`FALLBACK_BUDGET` (see the module docstring): a function of the same
        arguments and result, or ``"python"`` for the function itself, uncompiled.
        Without one, the first call compiles.
    cost : callable, optional
        ``cost(*args)``: the fallback's estimated seconds for these arguments (0 when
        not given).
    alone : bool, default=False
        For a function that calls no other compiled function: when it compiles (no
        fallback, or one that does not fit what is left of the budget), compile it by
        itself and leave the other functions to the budget (see the module docstring).
    **options
        Further ``njit`` options (``nogil=True``, ...).

    Returns
    -------
    callable
        A decorator.
    """

    def decorate(function: Callable[..., Any]) -> Any:
        deferred = _Deferred(function, options, fallback, cost, alone)
        with _lock:
            _pending.append(deferred)
        return deferred

    return decorate
