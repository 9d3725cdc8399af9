"""The ``.bnfp`` file of a reference profile: a compressed, versioned, checksummed archive, read with suspicion.

A profile file is an ``.npz`` archive of three arrays: ``header`` (UTF-8 JSON: format,
version, the bnfisher that wrote it, the rows, the schema and a SHA-256 checksum),
``codes`` (each distinct row once) and ``counts``.  The reader trusts nothing it has
not checked: every array's declared type and size is read from its own header and
checked against the available memory before its data is read (a 743-byte file cannot
declare 10^8 rows into memory), the header must be a JSON object of a version this
bnfisher reads, every code must name one of its column's labels (-1: missing), every
count must be a whole number of at least 1, and the checksum must match, so that a
hand-edited order of labels cannot relabel rows silently.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import zipfile
import zlib

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._version import __version__
from bnfisher.data.io import write_bytes
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, ResourceError, SchemaError

__all__ = ["FORMAT", "FORMAT_VERSION", "MAX_HEADER_BYTES", "read_profile_file", "write_profile_file"]

#: The file's format name and the version this bnfisher writes; it reads every version up to it (version 2 adds a
#: checksum of the schema and the rows, so a hand-edited order of labels cannot relabel rows silently).
FORMAT, FORMAT_VERSION = "bnfisher-profile", 2

#: What reading a damaged archive raises: zipfile's own error, zlib's, a truncated stream, an unsupported feature
#: (flag bits, compression methods: NotImplementedError), an encrypted member (RuntimeError), a bad structure.
_UNREADABLE = (zipfile.BadZipFile, zlib.error, ValueError, OSError, EOFError, NotImplementedError, RuntimeError,
               KeyError, struct.error)

#: The largest header a profile may hold (its schema, as JSON).
MAX_HEADER_BYTES = 64 * 1024 * 1024


def write_profile_file(path, schema: Schema, codes: np.ndarray, counts: np.ndarray) -> None:
    """Write a profile's schema and distinct rows with counts to one ``.bnfp`` file, atomically.

    Parameters
    ----------
    path : str or path-like
    schema : Schema
    codes : ndarray of shape (n_distinct, n_variables)
    counts : ndarray of int64, shape (n_distinct,)
    """
    content = schema.to_dict()
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "bnfisher": __version__,
              "rows": int(np.sum(counts)), "schema": content, "checksum": _checksum(content, codes, counts)}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, codes=codes, counts=counts,
                        header=np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8))
    write_bytes(path, buffer.getvalue())


def read_profile_file(name: str) -> tuple:
    """Read and check a ``.bnfp`` file; return its schema, codes and counts (int64).

    Parameters
    ----------
    name : str

    Returns
    -------
    schema : Schema
    codes : ndarray of int64, shape (n_distinct, n_variables)
    counts : ndarray of int64, shape (n_distinct,)

    Raises
    ------
    DataError
        Naming the file: not a profile, a version this bnfisher does not read, a damaged
        or hand-edited file (what is wrong, and the fix).
    ResourceError
        When an array it declares would not fit in memory.
    """
    arrays = _read_arrays(name)
    header = _header(name, arrays["header"])
    try:
        schema = Schema.from_dict(header["schema"])
    except (SchemaError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{name}: its schema is not a bnfisher schema ({exc}); the file is damaged.") from None
    codes, counts = arrays["codes"], arrays["counts"]
    if codes.ndim != 2 or codes.shape[1] != len(schema.variables) or counts.shape != (codes.shape[0],):
        raise DataError(f"{name}: its rows do not match its schema ({codes.shape} codes, {counts.shape} counts, "
                        f"{len(schema.variables)} columns); the file is damaged.")
    if "checksum" in header and header["checksum"] != _checksum(header["schema"], codes, counts):
        raise DataError(f"{name}: its checksum does not match its schema and rows: the file was changed after it was "
                        "written (a hand-edited order of labels would relabel rows). Profile the table again.")
    _check_rows(name, schema, codes, counts)
    return schema, codes.astype(np.int64, copy=False), counts.astype(np.int64)


def _checksum(schema: dict, codes: np.ndarray, counts: np.ndarray) -> str:
    """SHA-256 of the schema (canonical JSON) and the rows (as int64 codes and counts)."""
    digest = hashlib.sha256(json.dumps(schema, sort_keys=True).encode("utf-8"))
    digest.update(np.ascontiguousarray(codes, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(counts, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _read_arrays(name: str) -> dict:
    """Read the three arrays of a profile, checking each one's declared type and size before reading it."""
    not_profile = DataError(f"{name} is not a bnfisher profile (make one with `bnfisher profile TABLE -o "
                            f"{os.path.basename(name)}`).")
    try:
        archive = zipfile.ZipFile(name)
    except _UNREADABLE:
        raise not_profile from None
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        if not {"header.npy", "codes.npy", "counts.npy"} <= set(members):
            raise not_profile
        return {key: _read_array(name, archive, key, kind) for key, kind in
                (("header", "u"), ("codes", "iu"), ("counts", "iu"))}


def _read_array(name: str, archive: zipfile.ZipFile, key: str, kinds: str) -> np.ndarray:
    """One ``.npy`` member: its header first (type, shape), its memory checked, then its data."""
    try:
        with archive.open(f"{key}.npy") as handle:
            version = np.lib.format.read_magic(handle)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = reader(handle)
            if dtype.kind not in kinds or dtype.hasobject:
                raise DataError(f"{name}: its {key} are of type {dtype}, not whole numbers; the file is damaged.")
            size = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if key == "header" and size > MAX_HEADER_BYTES:
                raise ResourceError(f"{name}: its header declares {size:,} bytes (at most {MAX_HEADER_BYTES:,}); the "
                                    "file is damaged or not a profile.")
            # The data as stored, and as the int64 arrays it becomes.
            needed = size + (0 if key == "header" else size // dtype.itemsize * 8)
            check_allocation(needed, f"{name}: its {key} ({int(np.prod(shape, dtype=object)):,} numbers)",
                             "the profile is too large for this machine.")
            data = handle.read(size)
            if len(data) != size:
                raise DataError(f"{name}: its {key} are cut short; the file is damaged.")
    except _UNREADABLE as exc:  # zipfile's and zlib's many ways to say "damaged" (or "not supported")
        if isinstance(exc, DataError):
            raise
        raise DataError(f"{name}: its {key} cannot be read ({exc}); the file is damaged.") from None
    array = np.frombuffer(data, dtype=dtype)
    return array.reshape(shape, order="F" if fortran else "C")


def _header(name: str, raw: np.ndarray) -> dict:
    """Return the profile's header, checked: a JSON object of this format, of a version this bnfisher reads."""
    try:
        header = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        header = None
    if not isinstance(header, dict):
        raise DataError(f"{name} is not a bnfisher profile (its header is not a JSON object).")
    if header.get("format") != FORMAT:
        raise DataError(f"{name} is not a bnfisher profile (its format is {str(header.get('format'))[:40]!r}).")
    version = header.get("format_version")
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        raise DataError(f"{name} is a profile of format version {str(version)[:20]} (written by bnfisher "
                        f"{str(header.get('bnfisher'))[:20]}); this bnfisher ({__version__}) reads versions 1 to "
                        f"{FORMAT_VERSION}: use a matching bnfisher, or profile the table again.")
    if version >= 2 and not isinstance(header.get("checksum"), str):
        raise DataError(f"{name}: a profile of format version {version} has a checksum; this one has none: the file "
                        "is damaged.")
    if "schema" not in header:
        raise DataError(f"{name}: its header has no schema; the file is damaged.")
    return header


def _check_rows(name: str, schema: Schema, codes: np.ndarray, counts: np.ndarray) -> None:
    """Refuse codes outside their column's labels (-1: missing) and counts below 1 or summing past int64."""
    if len(counts) == 0:
        raise DataError(f"{name}: the profile has no row; the file is damaged.")
    cards = np.array([len(schema.states[v]) for v in schema.variables], dtype=np.int64)
    low, high = codes.min(axis=0).astype(np.int64), codes.max(axis=0).astype(np.int64)
    bad = np.flatnonzero((low < -1) | (high >= cards))
    if bad.size:
        j = int(bad[0])
        value = int(low[j]) if low[j] < -1 else int(high[j])
        raise DataError(f"{name}: column {schema.variables[j]!r} holds the code {value}, but it has {cards[j]} labels "
                        f"(codes 0 to {cards[j] - 1}, -1 missing); the file is damaged.")
    if len(codes) > 1:  # distinct rows in canonical (lexicographic) order, as profile() writes them
        step = np.diff(codes.astype(np.int64, copy=False), axis=0)
        first = np.argmax(step != 0, axis=1)
        if not (step[np.arange(len(step)), first] > 0).all():
            raise DataError(f"{name}: its rows are not distinct rows in increasing order, as a profile writes them; "
                            "the file is damaged.")
    if counts.min() < 1:
        raise DataError(f"{name}: a row has the count {int(counts.min())}; counts are at least 1. The file is damaged.")
    if int(counts.astype(object).sum()) >= 2**63:
        raise DataError(f"{name}: its counts add up past 2^63 rows; the file is damaged.")
