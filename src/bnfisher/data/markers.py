"""Words that often mean "missing" in a text file: missing in a column of numbers, labels in a column of text.

pandas' ``read_csv`` turns ``NA``, ``None``, ``NULL``, ``N/A``, ``nan`` and a dozen more spellings into missing
values by default.  In categorical data these are often labels: bnlearn's ``child`` network has a state ``None``
(no duct flow), a survey answer may be ``N/A`` (not applicable), and a region ``NA``.  Read as missing, such a
label silently leaves the data.  bnfisher reads text files with only empty fields (and the markers the user
passes, ``na_values``) as missing, then decides per column:

- in a column whose other values are all numbers (or all ``True``/``False``), a marker is missing, as pandas has
  it (an R export's ``NA`` in a column of ages);
- in a column of text, a marker is a label; every job warns of it (:func:`bnfisher.data.guardrails.check_tables`:
  the column, the marker, its rows, and how to read it as missing instead, ``na_values`` or ``--na-values``).
"""

from __future__ import annotations

from collections.abc import Iterable

from bnfisher._utils.lazy import pandas as pd

__all__ = ["COMMON_MARKERS", "reading_options", "numbers_with_markers", "number_columns", "markers_as_missing"]

#: The strings pandas reads as missing by default besides an empty field (``pandas.read_csv``, ``na_values``).
COMMON_MARKERS = frozenset({"#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                            "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
_BOOLEANS = frozenset({"True", "False", "TRUE", "FALSE", "true", "false", True, False})


def reading_options(na_values: Iterable | None) -> dict:
    """Return ``read_csv``'s options for missing values: an empty field and the user's markers, nothing else.

    Parameters
    ----------
    na_values : iterable or None
        The user's markers of missing values.

    Returns
    -------
    dict
        ``keep_default_na`` and ``na_values`` for ``pandas.read_csv`` (or ``dask.dataframe.read_csv``).
    """
    return dict(keep_default_na=False, na_values=[""] + [str(m) for m in (na_values or ())])


def _distinct(column: pd.Series) -> list:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return list(column.cat.categories)
    return list(pd.unique(column.dropna().to_numpy()))


def _is_number(value) -> bool:
    if isinstance(value, bool):
        return False
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def numbers_with_markers(frame: pd.DataFrame) -> dict:
    """Return the columns of numbers (or booleans) that hold a common marker, with the markers they hold.

    Parameters
    ----------
    frame : DataFrame
        Read with :func:`reading_options` (markers still present as strings).

    Returns
    -------
    dict
        ``{column: markers}`` of the columns of :func:`number_columns` holding one: there the markers mean missing
        (in a column of text they are labels).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"age": ["31", "NA", "40"], "flow": ["Low", "None", "High"]}, dtype=object)
    >>> numbers_with_markers(frame)
    {'age': ['NA']}
    """
    found = {c: sorted(v for v in values if _is_marker(v)) for c, values in _number_values(frame).items()}
    return {c: markers for c, markers in found.items() if markers}


def _among_numbers(rest: list) -> bool:
    """Return whether a column's values other than markers are all numbers, or all booleans (and there are some)."""
    return bool(rest) and (all(map(_is_number, rest)) or all(v in _BOOLEANS for v in rest))


def number_columns(frame: pd.DataFrame) -> list:
    """Return the columns whose values, markers aside, are all numbers (or all booleans), markers or not.

    For a reader that sees a sample of the rows: a marker further down such a column is missing too.

    Parameters
    ----------
    frame : DataFrame
        Read with :func:`reading_options`.

    Returns
    -------
    list

    Examples
    --------
    >>> import pandas as pd
    >>> number_columns(pd.DataFrame({"age": ["31", "40"], "n": ["1", "NA"], "flow": ["Low", "None"]}, dtype=object))
    ['age', 'n']
    """
    return list(_number_values(frame))


def _number_values(frame: pd.DataFrame) -> dict:
    """Return ``{column: distinct values}`` of :func:`number_columns`' columns (each column's values read once)."""
    distinct = {c: _distinct(frame[c]) for c in frame.columns if _may_hold_text(frame[c].dtype)}
    return {c: values for c, values in distinct.items() if _among_numbers([v for v in values if not _is_marker(v)])}


def _may_hold_text(dtype) -> bool:
    return (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


def _is_marker(value) -> bool:
    return isinstance(value, str) and value in COMMON_MARKERS


def markers_as_missing(frame: pd.DataFrame, numbers: dict) -> pd.DataFrame:
    """Return ``frame`` with the markers of its columns of numbers missing, those columns read as numbers.

    A column of booleans keeps its labels, without the markers.  ``frame`` is not modified.

    Parameters
    ----------
    frame : DataFrame
    numbers : dict
        ``{column: markers}`` from :func:`numbers_with_markers`.

    Returns
    -------
    DataFrame
    """
    if not numbers:
        return frame
    frame = frame.copy()
    for column, markers in numbers.items():
        values = frame[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.cat.remove_categories(markers)
            if not all(_is_number(v) for v in values.cat.categories):  # booleans: labels without the markers
                frame[column] = values
                continue
            values = values.astype(object)
        else:
            values = values.mask(values.isin(markers))
        kept = pd.unique(values.dropna().to_numpy())
        if all(_is_number(v) for v in kept):
            values = pd.to_numeric(values.where(values.notna(), None), errors="coerce").astype("float64")
        frame[column] = values
    return frame

