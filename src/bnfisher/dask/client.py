"""Reaching Dask: recognising Dask data, connecting a client, reading Parquet and CSV lazily (the Dask shell).

Dask itself is imported inside the functions that need it, so ``import bnfisher`` never imports it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_positive_int
from bnfisher.data.guardrails import marker_labels
from bnfisher.data.io import TEXT_SAMPLE_ROWS
from bnfisher.data.markers import COMMON_MARKERS, number_columns, reading_options
from bnfisher.exceptions import DataError, DataWarning, OptionError, SchedulerError

__all__ = ["is_distributed", "dask_client", "read_dask", "parquet_row_groups", "concat_frames"]

#: glibc's mmap threshold (bytes) in the workers of a local cluster :func:`dask_client` starts (see there).
MMAP_THRESHOLD = 64 * 2**20


def is_distributed(data) -> bool:
    """Return True for a Dask collection (recognised by the Dask collection protocol; Dask is not imported).

    Parameters
    ----------
    data : object

    Returns
    -------
    bool

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> distributed = dd.from_pandas(data, npartitions=4)
    >>> from bnfisher.dask import is_distributed
    >>> is_distributed(distributed), is_distributed(data)
    (True, False)
    """
    return hasattr(data, "__dask_graph__")


def active_client():
    """Return the active ``distributed.Client``, or None (no distributed client: Dask's local schedulers).

    Returns
    -------
    distributed.Client or None
    """
    try:
        from distributed import default_client
    except ImportError:
        return None
    try:
        return default_client()
    except ValueError:  # no client
        return None


def worker_threads() -> int:
    """Return the threads of the active client's workers (1 without a distributed client).

    Returns
    -------
    int
    """
    client = active_client()
    if client is None:
        return 1
    return max(1, sum(int(n) for n in client.nthreads().values()))


def dask_client(scheduler: str | None = None, *, n_workers: int = 2, timeout: float = 10.0):
    """Return a Dask client: connected to ``scheduler``, or to a new local cluster of worker processes.

    Parameters
    ----------
    scheduler : str, optional
        Address such as ``"tcp://host:8786"``.
    n_workers : int, default=2
        Local worker processes (one thread each: the counting kernel holds the GIL in parts).
        Their allocator takes temporaries of up to 64 MiB from its heap
        (``MALLOC_MMAP_THRESHOLD_``, unless Dask's configuration or the environment sets it):
        with Dask's default worker environment, a pass over Parquet row groups faulted
        in every temporary's pages anew and took 1.3-1.5x as long.
    timeout : float, default=10.0
        Seconds to wait for ``scheduler`` to answer.

    Returns
    -------
    distributed.Client
        Use it as a context manager.

    Raises
    ------
    OptionError
        For an address that is not one.
    SchedulerError
        When no scheduler answers within ``timeout``.

    Examples
    --------
    >>> from bnfisher.dask import dask_client
    >>> client = dask_client(n_workers=1)
    >>> len(client.scheduler_info()["workers"])
    1
    >>> client.close()
    """
    from distributed import Client, LocalCluster


    if scheduler:
        import re

        if not isinstance(scheduler, str) or not re.fullmatch(r"(?:[a-z][a-z0-9+.-]*://)?[^\s/:]+(?::\d+)?/?",
                                                                scheduler):
            raise OptionError(f"`scheduler` must be an address such as 'tcp://host:8786'; got {scheduler!r}.")
        return _connect(Client, scheduler, timeout)
    import dask

    n_workers = check_positive_int(n_workers, "n_workers")
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    ours = "MALLOC_MMAP_THRESHOLD_" not in environ and "MALLOC_MMAP_THRESHOLD_" not in os.environ
    if ours:
        # Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which also turns off glibc's adaptive mmap threshold: every
        # temporary above 128 kB is then mapped and unmapped, and its pages faulted in anew each time (a pass over
        # Parquet row groups took 1.3-1.5x as long).  Up to 64 MiB they come from the heap; its top is still trimmed.
        environ["MALLOC_MMAP_THRESHOLD_"] = MMAP_THRESHOLD
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        client = Client(LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                     dashboard_address=None))
    if ours:  # the nanny also writes its workers' variables into this process's environment: not this one
        os.environ.pop("MALLOC_MMAP_THRESHOLD_", None)
    return client


def _connect(client_class, scheduler: str, timeout: float):
    """Connect in a helper thread with a hard deadline: a port that accepts but never speaks Dask cannot hang us."""
    import threading

    outcome: dict = {}

    def connect():
        try:
            outcome["client"] = client_class(scheduler, timeout=timeout)
        except BaseException as exc:  # reported below, in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=connect, name="bnfisher-connect", daemon=True)
    thread.start()
    thread.join(timeout + 2.0)
    if "client" in outcome:
        return outcome["client"]
    reason = type(outcome["error"]).__name__ if "error" in outcome else "no answer"
    raise SchedulerError(f"No Dask scheduler answered at {scheduler} within {timeout:g} s ({reason}); check the "
                         "address and that the scheduler runs, or raise the timeout (--scheduler-timeout).")


def read_dask(path, *, columns: Sequence[str] | None = None, na_values: Sequence | None = None,
              blocksize: str | int | None = None):
    """Return a Dask DataFrame over Parquet or CSV file(s), split into partitions that parallelise.

    A Parquet file becomes one partition per row group (not one per file), so a
    single large file still spreads over the workers; CSV files are split into
    blocks of ``blocksize`` bytes (default 64 MB), and read as text.

    Parameters
    ----------
    path : str, path-like or list of them
    columns : sequence of str, optional
    na_values : sequence, optional
        Extra missing-value markers for CSV.
    blocksize : str or int, optional

    Returns
    -------
    dask.dataframe.DataFrame

    Raises
    ------
    DataError
        For a path that is neither Parquet nor CSV.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.dask import read_dask
    >>> data.to_csv(folder / "nursery.csv", index=False)
    >>> len(read_dask(folder / "nursery.csv"))
    648
    """
    import dask.dataframe as dd

    paths = [os.fspath(p) for p in (path if isinstance(path, (list, tuple)) else [path])]
    lower = [p.lower() for p in paths]
    if all(p.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt")) for p in lower):
        return _read_text_files(paths, columns=columns, na_values=na_values, blocksize=blocksize)
    if all(p.lower().endswith((".parquet", ".pq")) or os.path.isdir(p) for p in paths):
        return dd.read_parquet(paths if len(paths) > 1 else paths[0],
                               columns=list(columns) if columns is not None else None, split_row_groups=True)
    raise DataError(f"Cannot read {paths[0]!r} with Dask: use Parquet (.parquet) or CSV (.csv) files.")


def _read_row_group(path: str, group: int, columns: list):
    """One row group of a Parquet file as a pandas DataFrame (a task: pyarrow only, no Dask reader)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).read_row_group(group, columns=columns).to_pandas()


def parquet_row_groups(paths, columns: Sequence[str]):
    """Return one delayed read per row group of Parquet files, in order, and each group's rows; None for others.

    The tasks read with pyarrow directly: a pass then skips dask-dataframe's reader and its graph layers, and
    the row counts come from the files' footers (no pass).  Directories and CSV return None (``read_dask``
    then reads them).

    Parameters
    ----------
    paths : str, path-like or list of them
    columns : sequence of str

    Returns
    -------
    (list of dask.delayed.Delayed, ndarray of int64) or None
    """
    import dask
    import numpy as np
    import pyarrow.parquet as pq

    paths = [os.fspath(p) for p in (paths if isinstance(paths, (list, tuple)) else [paths])]
    if not all(p.lower().endswith((".parquet", ".pq")) and os.path.isfile(p) for p in paths):
        return None
    parts, lengths = [], []
    read = dask.delayed(_read_row_group, pure=True)
    for path in paths:
        metadata = pq.ParquetFile(path).metadata
        for group in range(metadata.num_row_groups):
            parts.append(read(path, group, list(columns)))
            lengths.append(metadata.row_group(group).num_rows)
    return parts, np.asarray(lengths, dtype=np.int64)


def concat_frames(frames: Sequence):
    """Return Dask DataFrames stacked row-wise (``dask.dataframe.concat``), for a job that pools two data sets.

    Parameters
    ----------
    frames : sequence of dask.dataframe.DataFrame
        With the same columns.

    Returns
    -------
    dask.dataframe.DataFrame

    Examples
    --------
    >>> import dask.dataframe as dd
    >>> from bnfisher.dask import concat_frames
    >>> parts = [dd.from_pandas(data.iloc[:10], npartitions=1), dd.from_pandas(data.iloc[10:], npartitions=2)]
    >>> len(concat_frames(parts)) == len(data)
    True
    """
    import dask.dataframe as dd

    return dd.concat(list(frames))


def _read_text_files(paths: list, *, columns, na_values, blocksize):
    """Return a Dask DataFrame of CSV or TSV files, every column as text.

    Words pandas reads as missing by default (``NA``, ``None``...) are missing in a column of numbers and labels in a
    column of text (:mod:`bnfisher.data.markers`), which column is which decided from the first file's first
    :data:`~bnfisher.data.io.TEXT_SAMPLE_ROWS` rows (a column of numbers there: a marker anywhere in it is missing);
    a label that looks like a missing value is warned of there (no job sees a whole Dask table to warn of it).
    """
    import dask.dataframe as dd

    lower = [p.lower() for p in paths]
    if any(p.endswith(".gz") for p in lower):
        blocksize = None  # gzip streams cannot be split
    elif blocksize is None:
        blocksize = "64MB"
    sep = "\t" if all(".tsv" in p for p in lower) else ","
    options = dict(dtype=str, usecols=list(columns) if columns is not None else None, sep=sep,
                   **reading_options(na_values))
    frame = dd.read_csv(paths, blocksize=blocksize, **options)
    sample = pd.read_csv(paths[0], nrows=TEXT_SAMPLE_ROWS, **options)
    numbers = number_columns(sample)  # a marker anywhere in them is missing, as the pandas reader has it
    markers = sorted(COMMON_MARKERS)
    for column in numbers:
        frame[column] = frame[column].mask(frame[column].isin(markers))
    for message in marker_labels(sample.drop(columns=numbers), na_values=na_values or ()):
        warnings.warn(f"{paths[0]!r}, its first {len(sample):,} rows: {message}", DataWarning, stacklevel=3)
    return frame
