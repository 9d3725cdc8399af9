"""Small argument checks shared by the public functions (private module)."""

from __future__ import annotations

import numbers

import numpy as np

from bnfisher.exceptions import OptionError, OptionTypeError

__all__: list[str] = []


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``None``, an int, a ``SeedSequence`` or a ``Generator`` into a Generator.

    A ``numpy.random.RandomState`` is accepted too (it draws the seed of a new
    Generator, advancing its own state), so scikit-learn style seeds work everywhere.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(0, 2**31 - 1)))
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)  # type: ignore[arg-type]
    raise OptionTypeError(
        f"`random_state` must be None, an int, a numpy Generator or RandomState; got {random_state!r}."
    )


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """Return ``value`` as an int, or raise naming ``name`` when it is not an integer >= minimum."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise OptionTypeError(f"`{name}` must be an integer; got {value!r} of type {type(value).__name__}.")
    if value < minimum:
        raise OptionError(f"`{name}` must be >= {minimum}; got {value}.")
    return int(value)


def check_nonnegative_float(value, name: str, *, strictly_positive: bool = False) -> float:
    """Return ``value`` as a finite float >= 0 (or > 0), or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise OptionTypeError(f"`{name}` must be a real number; got {value!r}.")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strictly_positive and value == 0):
        rule = "> 0" if strictly_positive else ">= 0"
        raise OptionError(f"`{name}` must be finite and {rule}; got {value}.")
    return value


def check_option(value, name: str, options) -> str:
    """Raise a ValueError listing ``options`` when ``value`` is not one of them."""
    if value not in options:
        listed = ", ".join(repr(o) for o in options)
        raise OptionError(f"`{name}` must be one of {listed}; got {value!r}.")
    return value


def free_name(name: str, taken) -> str:
    """Return ``name``, or ``name`` with as many trailing ``_`` as make it differ from every name in ``taken``.

    A result's own columns (``row``, ``sample``, ``witness``, ``copies``) stand beside the
    user's columns; a user column of that name keeps its name and the result's column
    takes the next free one.

    Parameters
    ----------
    name : str
    taken : iterable
        The user's column names.

    Returns
    -------
    str

    Examples
    --------
    >>> free_name("row", ["row", "row_", "age"])
    'row__'
    """
    used = {str(t) for t in taken}
    while name in used:
        name += "_"
    return name
