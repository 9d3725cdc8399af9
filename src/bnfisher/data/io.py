"""Files at the boundary: reading tables, and writing outputs safely.

Every output is written atomically (a temporary file in the destination's folder,
then a rename), so a failed or interrupted run never leaves a half-written file,
and :func:`check_outputs` refuses, before any computation, a destination that is
missing its folder, is a folder, or is one of the command's inputs.
"""

from __future__ import annotations

import csv
import gzip
import os
import stat
import tempfile
import zlib
from collections.abc import Iterable, Sequence

import pandas as pd

from bnfisher.exceptions import DataError, OutputError

__all__ = ["read_table", "read_text", "write_text", "write_bytes", "write_table", "check_outputs",
           "TABLE_SUFFIXES"]

TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".txt", ".parquet", ".pq")


def _suffix(path: str) -> str:
    lower = path.lower()
    return next((s for s in sorted(TABLE_SUFFIXES, key=len, reverse=True) if lower.endswith(s)), "")


def _sniff_delimiter(path: str, compressed: bool) -> str:
    """``,``, ``;``, tab or ``|``, from the first lines of the file (csv.Sniffer on a sample)."""
    opener = gzip.open if compressed else open
    with opener(path, "rt", encoding="utf-8", errors="replace", newline="") as handle:
        sample = handle.read(64 * 1024)
    if not sample.strip():
        return ","
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


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
        Extra markers of missing values (e.g. ``["?"]``).
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
    if not os.path.exists(path):
        raise FileNotFoundError(f"No such file: {path!r}.")
    if os.path.isdir(path):
        raise DataError(f"{path!r} is a folder, not a table file.")
    suffix = _suffix(path)
    if not suffix:
        raise DataError(f"Cannot read {path!r}: use a .csv, .csv.gz, .tsv or .parquet file.")
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path, columns=list(columns) if columns is not None else None)
            # Arrow-backed text is decoded lazily; decode it here, so a corrupt file fails here, with its name.
            text = [c for c in frame.columns if pd.api.types.is_string_dtype(frame[c].dtype)]
            if text:
                frame = frame.astype({c: object for c in text})
        else:
            compressed = suffix.endswith(".gz")
            sep = "\t" if suffix.startswith(".tsv") else _sniff_delimiter(path, compressed)
            frame = pd.read_csv(path, sep=sep, na_values=list(na_values) if na_values else None,
                                usecols=list(columns) if columns is not None else None, skipinitialspace=True)
    except FileNotFoundError:
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, EOFError, OSError,
            zlib.error, gzip.BadGzipFile, ValueError, KeyError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"Cannot read {path!r} as a {suffix} table: {message}") from None
    except Exception as exc:  # pyarrow raises its own classes for corrupt Parquet files
        if type(exc).__module__.startswith("pyarrow"):
            raise DataError(f"Cannot read {path!r} as a Parquet table: {str(exc).splitlines()[0]}") from None
        raise
    if frame.shape[1] == 0:
        raise DataError(f"{path!r} has no columns.")
    if na_values and suffix in (".parquet", ".pq"):
        frame = frame.mask(frame.isin(list(na_values)))
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
        When the folder is missing or not writable, or ``path`` is a folder.

    Parameters
    ----------
    path : str or path-like
    content : bytes
    """
    check_outputs([path])
    text = os.fspath(path)
    target = os.path.realpath(text)
    if os.path.exists(target) and not stat.S_ISREG(os.stat(target).st_mode):
        # A device, FIFO or socket (/dev/null, /dev/stdout, a named pipe): stream into it, as every Unix tool
        # does; a rename would replace the node itself by a regular file.
        with open(target, "wb") as stream:
            stream.write(content)
        return
    folder = os.path.dirname(target) or "."
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
