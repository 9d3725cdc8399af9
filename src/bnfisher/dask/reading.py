"""Reading data with Dask: paths to a Dask DataFrame, and one-line errors for the files and clusters that fail.

A corrupt Parquet part is named by its path (its footer cannot be read); a cluster that goes away mid-run is a
:class:`~bnfisher.exceptions.SchedulerError`, never a traceback.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os

from bnfisher.dask.client import parquet_row_groups, read_dask
from bnfisher.data.schema import Schema
from bnfisher.exceptions import BnfisherError, DataError, SchedulerError


@contextlib.contextmanager
def reading(source: str):
    """Turn a corrupt or unreadable part, or a cluster that went away, into a one-line error naming ``source``."""
    try:
        yield
    except BnfisherError:
        raise
    except (OSError, KeyError, ValueError, TypeError, IndexError) as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"Reading {source} failed ({type(exc).__name__}: {message}); a file may be corrupt or "
                        "lack a column. Check it (e.g. read it with pandas) or leave it out.") from None
    except Exception as exc:
        origin = type(exc).__module__.split(".")[0]
        if origin == "pyarrow":  # pyarrow raises its own classes (ArrowInvalid) for corrupt Parquet files
            part = unreadable_part(source)
            raise DataError(f"Reading {source} failed ({type(exc).__name__}: {str(exc).splitlines()[0]}); "
                            + (f"its part {part!r} is corrupt (its footer cannot be read): fix or remove it."
                               if part else "a Parquet part may be corrupt.")) from None
        if origin == "distributed" or isinstance(exc, concurrent.futures.CancelledError):
            # The scheduler or its workers went away mid-run (FutureCancelledError, KilledWorker, CommClosedError).
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise SchedulerError(f"The Dask cluster stopped while working on {source} ({type(exc).__name__}"
                                 f"{': ' + reason if reason else ''}); nothing was written. Check the scheduler and "
                                 "its workers, then run again.") from None
        raise


def unreadable_part(source: str) -> str | None:
    """Return the first Parquet file under ``source`` (a quoted path, folder or glob) whose footer cannot be read."""
    import glob

    import pyarrow.parquet as pq

    path = source.strip("'\"")
    files = sorted(glob.glob(os.path.join(path, "**", "*"), recursive=True)) if os.path.isdir(path) else \
        sorted(glob.glob(path))
    for name in files:
        if os.path.isfile(name) and not os.path.basename(name).startswith((".", "_")):
            try:
                pq.ParquetFile(name)
            except Exception:  # pyarrow's classes: any failure to read the footer names the part
                return name
    return None


def _are_paths(data) -> bool:
    """Return whether ``data`` is a path or a non-empty sequence of paths."""
    if isinstance(data, (list, tuple)):
        return bool(data) and isinstance(data[0], (str, os.PathLike))
    return isinstance(data, (str, os.PathLike))


def _unreadable(source: str, exc: Exception, part: str | None) -> DataError:
    """Return the error for files Dask cannot read, naming a corrupt part when one is found."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    where = f": its part {part!r} is corrupt (its footer cannot be read); fix or remove it." if part else "."
    return DataError(f"Cannot read {source} with Dask ({type(exc).__name__}: {message}){where}")


def read_paths(data, schema: Schema | None, na_values) -> tuple:
    """Return the source's name, the data (read by Dask when paths are given) and its Parquet row groups (or None)."""
    if not _are_paths(data):
        return "the Dask DataFrame", data, None
    paths = [os.fspath(p) for p in (data if isinstance(data, (list, tuple)) else [data])]
    source = repr(paths[0]) if len(paths) == 1 else f"{paths[0]!r} and {len(paths) - 1} more file(s)"
    try:
        frame = read_dask(data, columns=schema.variables if schema is not None else None,
                          na_values=na_values or (schema.na_values if schema is not None else None))
        # Parquet files: each pass reads their row groups with pyarrow in the tasks
        groups = parquet_row_groups(paths, list(schema.variables if schema is not None else frame.columns))
    except BnfisherError:
        raise
    except (OSError, KeyError, ValueError, TypeError) as exc:
        raise _unreadable(source, exc, unreadable_part(source) if len(paths) == 1 else None) from None
    return source, frame, groups
