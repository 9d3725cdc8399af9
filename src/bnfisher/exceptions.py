"""Exception and warning classes raised by bnfisher.

Every error a user can cause by their input is one of these classes.  Each
subclasses the built-in exception a caller would catch anyway (``ValueError``,
``TypeError``, ``OSError``), so ``except ValueError`` keeps working, and the
command line turns every :class:`BnfisherError` into one line on stderr and exit
status 2.  Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "BnfisherError",
    "DataError",
    "SchemaError",
    "NetworkFileError",
    "OptionError",
    "OptionTypeError",
    "OutputError",
    "ResourceError",
    "SchedulerError",
    "ConvergenceWarning",
    "DataWarning",
]


class BnfisherError(Exception):
    """Base class of every error bnfisher raises on purpose (bad input, not a bug)."""


class DataError(BnfisherError, ValueError):
    """The data cannot be used as given: a missing column, an unknown value, a bad code.

    The message names the column, the value and the row (a 0-based row number).
    """


class SchemaError(DataError):
    """Data that does not match a fitted :class:`~bnfisher.data.Schema`."""


class NetworkFileError(BnfisherError, ValueError):
    """A network file that is not valid BIF; the message names the file and the line."""


class OptionError(BnfisherError, ValueError):
    """An argument outside its allowed values; the message names the argument and the rule."""


class OptionTypeError(BnfisherError, TypeError):
    """An argument of the wrong type; the message names the argument and what it accepts."""


class OutputError(BnfisherError, OSError):
    """An output path that cannot be written, or that would overwrite an input."""


class SchedulerError(BnfisherError, ConnectionError):
    """No Dask scheduler answered at the given address in time."""


class ResourceError(BnfisherError, MemoryError):
    """A computation that would not fit in memory; the message gives the size and an alternative."""


class ConvergenceWarning(UserWarning):
    """An iterative procedure stopped at its iteration cap before converging.

    Raised by the greedy subset search (``max_sweeps``), hill climbing
    (``max_iter``) and the HMM fit (``n_iter``); the message names the parameter
    to raise.
    """


class DataWarning(UserWarning):
    """Legal input that is probably not what the user meant; the message says what to do.

    An identifier column, undeclared missing markers, a column that defines the split,
    a family that holds most of the kernel's features.  Silence with
    ``warnings.filterwarnings("ignore", category=bnfisher.DataWarning)``.
    """
