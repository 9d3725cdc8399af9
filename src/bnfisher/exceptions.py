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
    "StoreError",
    "ConvergenceWarning",
    "DataWarning",
]


class BnfisherError(Exception):
    """Base class of every error bnfisher raises on purpose (bad input, not a bug).

    Examples
    --------
    >>> try:
    ...     bf.learn(load("nursery"), "no-such-structure")
    ... except bf.BnfisherError as error:
    ...     print(type(error).__name__)
    OptionError
    """


class DataError(BnfisherError, ValueError):
    """The data cannot be used as given: a missing column, an unknown value, a bad code.

    The message names the column, the value and the row (a 0-based row number).

    Examples
    --------
    >>> import pandas as pd
    >>> try:
    ...     bf.learn(pd.DataFrame({"a": ["x", "y"]}), {"a": ["b"]})
    ... except ValueError as error:
    ...     print(type(error).__name__)
    DataError
    """


class SchemaError(DataError):
    """Data that does not match a fitted :class:`~bnfisher.data.Schema`.

    Examples
    --------
    >>> from bnfisher.exceptions import SchemaError
    >>> issubclass(SchemaError, (bf.BnfisherError, ValueError))
    True
    """


class NetworkFileError(BnfisherError, ValueError):
    """A network file that is not valid BIF; the message names the file and the line.

    Examples
    --------
    >>> try:
    ...     bf.parse_bif("variable a {")
    ... except ValueError as error:
    ...     print(type(error).__name__)
    NetworkFileError
    """


class OptionError(BnfisherError, ValueError):
    """An argument outside its allowed values; the message names the argument and the rule.

    Examples
    --------
    >>> try:
    ...     bf.summarize(load("nursery"), 0)
    ... except ValueError as error:
    ...     print(type(error).__name__)
    OptionError
    """


class OptionTypeError(BnfisherError, TypeError):
    """An argument of the wrong type; the message names the argument and what it accepts.

    Examples
    --------
    >>> try:
    ...     bf.learn(load("nursery"), "chow-liu", max_parents=2)
    ... except TypeError as error:
    ...     print(type(error).__name__)
    OptionTypeError
    """


class OutputError(BnfisherError, OSError):
    """An output path that cannot be written, or that would overwrite an input.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from bnfisher.data import check_outputs
    >>> table = pathlib.Path(tempfile.mkdtemp()) / "table.csv"
    >>> try:
    ...     check_outputs([table], [table])  # an output that would overwrite an input
    ... except OSError as error:
    ...     print(type(error).__name__)
    OutputError
    """


class SchedulerError(BnfisherError, ConnectionError):
    """No Dask scheduler answered at the given address in time.

    Examples
    --------
    >>> from bnfisher.exceptions import SchedulerError
    >>> issubclass(SchedulerError, (bf.BnfisherError, ConnectionError))
    True
    """


class StoreError(BnfisherError, OSError):
    """A monitoring store that cannot be opened, read or written: the server, the file, a lock, its tables.

    Every driver's error (sqlite3's, psycopg's) reaches a caller as this class, with the
    store's location shown without its password and what to do.

    Examples
    --------
    >>> from bnfisher.exceptions import StoreError
    >>> issubclass(StoreError, (bf.BnfisherError, OSError))
    True
    """


class ResourceError(BnfisherError, MemoryError):
    """A computation that would not fit in memory; the message gives the size and an alternative.

    Examples
    --------
    >>> from bnfisher.exceptions import ResourceError
    >>> issubclass(ResourceError, (bf.BnfisherError, MemoryError))
    True
    """


class ConvergenceWarning(UserWarning):
    """An iterative procedure stopped at its iteration cap before converging.

    Raised by the greedy subset search (``max_sweeps``), hill climbing
    (``max_iter``) and the HMM fit (``n_iter``); the message names the parameter
    to raise.

    Examples
    --------
    >>> import warnings
    >>> data = load("nursery").iloc[::10]
    >>> kernel = bf.FisherKernel(bf.learn(data, "chow-liu"))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = bf.select_representatives(kernel, data, 50, n_init=1, max_sweeps=1, random_state=0)
    >>> [w.category.__name__ for w in caught]
    ['ConvergenceWarning']
    """


class DataWarning(UserWarning):
    """Legal input that is probably not what the user meant; the message says what to do.

    An identifier column, undeclared missing markers, a column that defines the split,
    a family that holds most of the kernel's features.  Silence with
    ``warnings.filterwarnings("ignore", category=bnfisher.DataWarning)``.

    Examples
    --------
    >>> import warnings
    >>> data = load("nursery").iloc[::40].reset_index(drop=True)
    >>> data["id"] = [f"row-{i}" for i in range(len(data))]  # an identifier column
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = bf.compare(data.iloc[::2], data.iloc[1::2], n_permutations=19, random_state=0)
    >>> "DataWarning" in [w.category.__name__ for w in caught]
    True
    """
