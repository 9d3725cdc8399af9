"""Files at the boundary: reading tables, and writing outputs safely.

Every output is written atomically (a temporary file in the destination's folder,
then a rename), so a failed or interrupted run never leaves a half-written file,
and :func:`check_outputs` refuses, before any computation, a destination that is
missing its folder, is a folder, or is one of the command's inputs.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import stat
import sys
import tempfile
import warnings
import zlib
from collections.abc import Iterable, Sequence

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.labels import sorted_states
from bnfisher.data.markers import markers_as_missing, numbers_with_markers, reading_options
from bnfisher.exceptions import DataError, OutputError, ResourceError

__all__ = ["read_table", "read_text", "write_text", "write_bytes", "write_table", "check_outputs",
           "TABLE_SUFFIXES"]

#: Rows read first to find a CSV file's text columns, which are then read as categories: each label is held once,
#: not once a row (10^7 rows of 37 text columns: a fraction of the memory of Python or Arrow strings).
TEXT_SAMPLE_ROWS = 10_000
TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".parquet", ".pq")


def _suffix(path: str) -> str:
    lower = path.lower()
    return next((s for s in sorted(TABLE_SUFFIXES, key=len, reverse=True) if lower.endswith(s)), "")


def _sniff(sample: str) -> str:
    """``,``, ``;``, tab or ``|``, from the first lines of a text table (csv.Sniffer on a sample)."""
    if not sample.strip():
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def _sample(path: str, compressed: bool) -> str:
    opener = gzip.open if compressed else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        return handle.read(64 * 1024)


def _first_longer_line(lines: list, width: int) -> int | None:
    """Return the first line (1-based; the last one of a sample may be cut) with more fields than ``width``."""
    body = lines[1:-1] if len(lines) > 2 else lines[1:]
    return next((k for k, row in enumerate(body, start=2) if len(row) > width), None)


def _check_header(sample: str, sep: str, source: str) -> None:
    """Refuse what pandas would misread silently: duplicate names (renamed x.1) and a short header (an index)."""
    try:
        lines = [row for row in csv.reader(io.StringIO(sample, newline=""), delimiter=sep) if row]
    except csv.Error:  # e.g. a bare carriage return: pandas reads it, or says what is wrong
        return
    if not lines:
        return
    header = [name.strip() for name in lines[0]]
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise DataError(f"{source}: the header names column(s) {twice} more than once; give every column its own "
                        "name.")
    longer = _first_longer_line(lines, len(header))
    if longer is not None:
        raise DataError(f"{source}: the header has {len(header)} names but line {longer} has "
                        f"{len(lines[longer - 1])} fields; name every column (pandas would turn the first into "
                        "an index and drop it).")


@contextlib.contextmanager
def _reading(source: str, suffix: str):
    """Turn a file that cannot be read as a table into a one-line error naming it."""
    try:
        yield
    except (FileNotFoundError, DataError):
        raise
    except MemoryError:
        raise ResourceError(f"{source!r} does not fit in memory once read (a very large or highly compressed "
                            "file); read it with Dask (--engine dask, bnfisher.dask.DaskCounts).") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, OSError,
            zlib.error, gzip.BadGzipFile, ValueError, KeyError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"Cannot read {source!r} as a {suffix} table: {message}") from None
    except Exception as exc:  # pyarrow raises its own classes for corrupt Parquet files
        if type(exc).__module__.startswith("pyarrow"):
            raise DataError(f"Cannot read {source!r} as a Parquet table: {str(exc).splitlines()[0]}") from None
        raise


def read_table(path: str | os.PathLike, *, na_values: Sequence | None = None,
               columns: Sequence | None = None) -> pd.DataFrame:
    r"""Read a CSV (optionally gzip-compressed), TSV or Parquet file as a DataFrame.

    The delimiter of a text file is detected (comma, semicolon, tab or bar).
    Numeric columns are read as numbers; bin them with a
    :class:`~bnfisher.data.Schema` learned with ``bins`` (the command line's
    ``--bins``), which bins every input of a command with the same edges.

    Parameters
    ----------
    path : str or path-like
        ``.csv``, ``.csv.gz``, ``.tsv``, ``.tsv.gz``, ``.txt`` or ``.parquet``.
    na_values : sequence, optional
        Markers of missing values besides an empty field (e.g. ``["?"]``).
        Words such as ``NA``, ``None`` or ``NULL`` that pandas reads as
        missing by default are missing in a column of numbers and labels in a
        column of text, as the file spells them (:mod:`bnfisher.data.markers`;
        every job warns of them); list them here to read them as missing.
    columns : sequence, optional
        Read only these columns.

    Returns
    -------
    DataFrame

    Raises
    ------
    FileNotFoundError
        For a missing file.
    DataError
        For an unknown extension, an empty or corrupt file, or a file with no
        columns; the message names the file.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "t.csv")
    >>> _ = open(path, "w").write("a;b\nx;1\ny;2\n")
    >>> read_table(path).columns.tolist()
    ['a', 'b']
    """
    path = os.fspath(path)
    suffix = _suffix(path)
    source = "standard input" if path == "-" else path
    if _is_stream(path):
        raw = _read_stream(path, source)
        target: io.BytesIO | str = io.BytesIO(raw)
        suffix = suffix.removesuffix(".gz") or ".csv"
        sample = raw[: 64 * 1024].decode("utf-8", errors="replace")
    elif not suffix:
        raise DataError(f"Cannot read {path!r}: use a .csv, .csv.gz, .tsv or .parquet file, or - for standard "
                        "input.")
    else:
        target, sample = path, None
    with _reading(source, suffix):
        if suffix in (".parquet", ".pq"):
            frame = _read_parquet(target, columns)
        else:
            sample = sample if sample is not None else _sample(path, suffix.endswith(".gz"))
            frame = _read_delimited(target, sample, suffix, source, na_values, columns)
    if frame.shape[1] == 0:
        raise DataError(f"{source!r} has no columns.")
    if na_values and suffix in (".parquet", ".pq"):
        frame = frame.mask(frame.isin(list(na_values)))
    return frame


def _read_delimited(source, sample: str, suffix: str, name: str, na_values, columns) -> pd.DataFrame:
    """Read a CSV or TSV table (its separator sniffed from ``sample``), text columns as labels in order."""
    sep = "\t" if suffix.startswith(".tsv") else _sniff(sample)
    _check_header(sample, sep, name)
    options = dict(sep=sep, **reading_options(na_values), usecols=list(columns) if columns is not None else None,
                   skipinitialspace=True)
    text = _text_columns(source, options)
    with warnings.catch_warnings():  # pandas' DtypeWarning: the columns it names are read again as text below
        warnings.simplefilter("ignore", pd.errors.DtypeWarning)
        frame = _read_csv_chunks(source, text, options)
    mixed = _mixed_columns(frame)
    if mixed:  # numbers in the first rows and text further down: the whole column as text, as the file spells it
        if hasattr(source, "seek"):
            source.seek(0)
        again = pd.read_csv(source, dtype=dict.fromkeys(mixed, "category"), **(options | {"usecols": mixed}))
        frame = frame.assign(**{c: again[c] for c in mixed})
        text = [*text, *mixed]
    numbers = numbers_with_markers(frame)  # "NA", "None"...: missing among numbers, labels among text
    frame = markers_as_missing(frame, numbers)
    text = [c for c in text if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    return _integer_codes_with_gaps(_labels_in_order(frame, text))


def _mixed_columns(frame: pd.DataFrame) -> list:
    """Return the columns pandas' parser read as numbers in some rows and as text in others."""
    return [c for c in frame.columns if pd.api.types.is_object_dtype(frame[c].dtype)
            and len({isinstance(v, str) for v in pd.unique(frame[c].dropna().to_numpy())}) == 2]


def _is_stream(path: str) -> bool:
    """Say whether ``path`` is standard input or a pipe (read once), after refusing a missing path or a folder."""
    stream = path == "-" or (os.path.exists(path) and not os.path.isdir(path)
                             and not stat.S_ISREG(os.stat(path).st_mode))
    if not stream and not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    if os.path.isdir(path):
        raise DataError(f"{path!r} is a folder, not a table file.")
    return stream


def _read_parquet(source, columns) -> pd.DataFrame:
    """Read a Parquet file, its text decoded now (Arrow decodes lazily: a corrupt file fails here, with its name)."""
    frame = pd.read_parquet(source, columns=list(columns) if columns is not None else None)
    text = [c for c in frame.columns if pd.api.types.is_string_dtype(frame[c].dtype)]
    return frame.astype({c: object for c in text}) if text else frame


def _read_stream(path: str, source: str) -> bytes:
    """Read standard input, a pipe or <(zcat x.csv.gz) once into memory (it cannot be read twice), gunzipped."""
    if path == "-":
        raw = sys.stdin.buffer.read()
    else:
        with open(path, "rb") as pipe:
            raw = pipe.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except MemoryError:
            raise ResourceError(f"{source!r} does not fit in memory once decompressed.") from None
    return raw


def _text_columns(source, options: dict) -> list:
    """Return the columns the first :data:`TEXT_SAMPLE_ROWS` rows hold as text (read as categories: a label once)."""
    head = pd.read_csv(source, nrows=TEXT_SAMPLE_ROWS, **options)
    if hasattr(source, "seek"):
        source.seek(0)
    return [c for c in head.columns if pd.api.types.is_object_dtype(head[c].dtype)
            or pd.api.types.is_string_dtype(head[c].dtype)]


#: Rows the CSV parser reads at a time: its working memory (every cell as a Python object for a moment) is bounded by
#: a chunk, not the file; the chunks' columns are joined (text as categories) at the end.
CSV_CHUNK_ROWS = 4_000_000


def _read_csv_chunks(source, text: list, options: dict) -> pd.DataFrame:
    """Read a CSV :data:`CSV_CHUNK_ROWS` rows at a time, ``text`` columns as categories, and join the chunks.

    A column read as different kinds in different chunks (numbers in one, text in another) is read again from
    the whole file, so the result is always what one ``read_csv`` of the file gives.
    """
    chunks = list(pd.read_csv(source, dtype=dict.fromkeys(text, "category"), chunksize=CSV_CHUNK_ROWS, **options))
    if len(chunks) == 1:
        return chunks[0]
    if not chunks or _mixed_kinds(chunks):
        # No rows, or numbers in one chunk and text (or booleans) in another: as the whole file reads.
        if hasattr(source, "seek"):
            source.seek(0)
        del chunks
        return pd.read_csv(source, dtype=dict.fromkeys(text, "category"), **options)
    columns = {}
    for column in chunks[0].columns:
        parts = [chunk.pop(column) for chunk in chunks]  # each chunk's column freed as it is joined
        columns[column] = (_union(parts) if column in text else pd.concat(parts, ignore_index=True))
        del parts
    return pd.DataFrame(columns)


def _mixed_kinds(chunks: list) -> bool:
    """Return whether a column holds numbers in one chunk and text (or booleans) in another."""
    kinds = [{_kind(chunk[c]) for chunk in chunks} - {None} for c in chunks[0].columns]
    return any(len(k) > 1 and not k <= {"i", "f"} for k in kinds)


def _kind(column: pd.Series) -> str | None:
    """Return the type of a column's values (of its categories; None for a categorical chunk with no label)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        return f"c{categories.dtype}" if len(categories) else None
    return column.dtype.kind


def _union(parts: list) -> pd.Categorical:
    """Join the chunks of a text column; a chunk with no label (every cell empty) takes the others' label type."""
    labelled = [part for part in parts if len(part.cat.categories)]
    if not labelled:
        return pd.api.types.union_categoricals(parts)
    empty = labelled[0].cat.categories[:0]
    parts = [part if len(part.cat.categories) else pd.Series(pd.Categorical.from_codes(
        np.full(len(part), -1), categories=empty)) for part in parts]
    return pd.api.types.union_categoricals(parts, ignore_order=True)


def _labels_in_order(frame: pd.DataFrame, text: list) -> pd.DataFrame:
    """Put text read as categories in the order the labels of a text column take (numbers by value)."""
    for column in text:
        categories = frame[column].cat.categories
        frame[column] = frame[column].cat.reorder_categories(
            list(sorted_states(np.asarray(categories, dtype=object), column)))
    return frame


def _integer_codes_with_gaps(frame: pd.DataFrame) -> pd.DataFrame:
    """Integer columns that pandas read as float because of empty cells: integers with missing values (Int64)."""
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_float_dtype(values.dtype) and values.isna().any():
            present = values.dropna()
            if len(present) and bool((present == np.round(present)).all()) and present.abs().max() < 2**53:
                frame[column] = values.astype("Int64")
    return frame


def read_text(path: str | os.PathLike) -> str:
    """Return the text of a UTF-8 file, gzip-compressed when its name ends in ``.gz``.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        For a missing file.
    DataError
        For a folder, a binary file or a corrupt gzip stream.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    if os.path.isdir(path):
        raise DataError(f"{path!r} is a folder, not a file.")
    opener = gzip.open if path.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise DataError(f"{path!r} is not a UTF-8 text file.") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path!r} cannot be read: {exc}") from None


def check_outputs(outputs: Iterable, inputs: Iterable = ()) -> None:
    """Refuse output paths before any work: a missing folder, a folder, an input, a repeated path.

    Parameters
    ----------
    outputs : iterable of str or path-like (None entries are skipped)
    inputs : iterable of str or path-like (None entries are skipped)

    Raises
    ------
    OutputError
        Naming the path and the fix.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.data import check_outputs
    >>> check_outputs([folder / "out.csv"], [folder / "in.csv"])
    >>> try:
    ...     check_outputs([folder / "in.csv"], [folder / "in.csv"])
    ... except OSError as error:
    ...     print(type(error).__name__)
    OutputError
    """
    seen: dict = {}
    resolved_inputs = {os.path.realpath(os.fspath(p)): os.fspath(p) for p in inputs if p is not None}
    for output in outputs:
        if output is None:
            continue
        text = os.fspath(output)
        real = os.path.realpath(text)
        if real in resolved_inputs:
            raise OutputError(f"Output {text!r} is the input {resolved_inputs[real]!r}; refusing to overwrite an "
                              "input. Choose another output path.")
        if real in seen:
            raise OutputError(f"Output {text!r} is given twice (also as {seen[real]!r}); choose distinct paths.")
        seen[real] = text
        if os.path.isdir(real):
            raise OutputError(f"Output {text!r} is a folder; give a file path.")
        folder = os.path.dirname(real) or "."
        if not os.path.isdir(folder):
            raise OutputError(f"Output {text!r}: the folder {os.path.dirname(text) or '.'!r} does not exist; "
                              "create it first.")
        if not os.access(folder, os.W_OK):
            raise OutputError(f"Output {text!r}: the folder is not writable.")


def write_bytes(path: str | os.PathLike, content: bytes) -> None:
    """Write ``content`` to ``path`` atomically (temporary file in the same folder, then rename).

    Raises
    ------
    OutputError
        When the folder is missing or not writable, ``path`` is a folder, or the write
        fails (a full disk), naming ``path``; the file is then left as it was.

    Parameters
    ----------
    path : str or path-like
    content : bytes
    """
    check_outputs([path])
    text = os.fspath(path)
    target = os.path.realpath(text)
    try:
        if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
            # A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe): stream into it, as every Unix tool
            # does; a rename would replace the node itself by a regular file.
            with open(target, "wb") as stream:
                stream.write(content)
            return
        with _interruptible():
            _write_replace(os.path.dirname(target) or ".", target, content)
    except OSError as exc:  # a full disk, a quota, a folder gone read-only: name the output (nothing was replaced)
        reason = exc.strerror or type(exc).__name__
        raise OutputError(f"Output {text!r} could not be written ({reason}); it is left as it was. Free some space "
                          "or choose another folder.") from None


class _Terminated(BaseException):
    """SIGTERM or SIGHUP during a write: unwind (removing the temporary file), then end as the signal asks."""


@contextlib.contextmanager
def _interruptible():
    """While writing, SIGTERM and SIGHUP unwind like Ctrl-C (so the temporary file is removed), then re-raise."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = {}

    def handler(number, frame):
        caught["signal"] = number
        raise _Terminated(number)

    # A signal the process ignores (SIGHUP under nohup) stays ignored, and the write goes on: catching it would
    # abandon the write, and the ignored signal would then not end the process.
    names = [name for name in ("SIGTERM", "SIGHUP")
             if hasattr(signal, name) and signal.getsignal(getattr(signal, name)) is not signal.SIG_IGN]
    previous = {name: signal.signal(getattr(signal, name), handler) for name in names}
    try:
        yield
    except _Terminated:
        pass
    finally:
        for name, old in previous.items():
            signal.signal(getattr(signal, name), old)
    if caught:  # the write was abandoned and cleaned up: now die of the signal, as the sender asked
        os.kill(os.getpid(), caught["signal"])


def _write_replace(folder: str, target: str, content: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".bnfisher-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
            stream.flush()
            os.fsync(stream.fileno())  # the content is on disk before the rename makes it visible
        # mkstemp creates the file 0600: give it the mode an ordinary write would (the old file's, or the umask's).
        if os.path.exists(target):
            mode = os.stat(target).st_mode & 0o777
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temporary, mode)
        os.replace(temporary, target)
        _fsync_folder(folder)  # and the rename itself survives a crash
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def _fsync_folder(folder: str) -> None:
    """Make a rename in ``folder`` durable (where the platform allows opening a folder)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(descriptor)
    except OSError:  # pragma: no cover - some file systems refuse fsync on folders
        pass
    finally:
        os.close(descriptor)


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write UTF-8 ``text`` to ``path`` atomically (see :func:`write_bytes`).

    Parameters
    ----------
    path : str or path-like
    text : str
    """
    write_bytes(path, text.encode("utf-8"))


def write_table(frame: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write a DataFrame atomically: Parquet for ``.parquet``/``.pq``, otherwise CSV (gzip for ``.gz``).

    Parameters
    ----------
    frame : DataFrame
    path : str or path-like

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.data import read_table, write_table
    >>> write_table(data, folder / "nursery.csv")
    >>> read_table(folder / "nursery.csv").shape
    (648, 9)
    """
    text = os.fspath(path)
    lower = text.lower()
    if lower.endswith((".parquet", ".pq")):
        import io as _io

        buffer = _io.BytesIO()
        frame.to_parquet(buffer, index=False)
        write_bytes(path, buffer.getvalue())
    elif lower.endswith(".gz"):
        write_bytes(path, gzip.compress(frame.to_csv(index=False).encode("utf-8")))
    else:
        write_text(path, frame.to_csv(index=False))
