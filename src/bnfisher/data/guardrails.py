"""Guardrails: legal tables that are probably not what the user meant, found before any work.

Each check returns plain sentences that say what was seen and what to do; the jobs
emit them once as :class:`~bnfisher.exceptions.DataWarning` and keep them on their
results (text, JSON, report).  Silence them with
``warnings.filterwarnings("ignore", category=bnfisher.DataWarning)``.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.labels import _missing_mask
from bnfisher.data.markers import COMMON_MARKERS

__all__ = ["MISSING_LOOKALIKES", "check_tables", "marker_labels", "identical_tables", "left_out_columns",
           "split_columns", "unknown_values"]

#: Values that usually mark a missing cell when they appear as text: pandas' default markers (which the readers keep
#: as labels in a column of text, :mod:`bnfisher.data.markers`) and a few more.
MISSING_LOOKALIKES = ("?", "na", "-", "", ".", *sorted(COMMON_MARKERS))

#: A column with at least this share of distinct values (and 20 rows) looks like an identifier.
IDENTIFIER_SHARE = 0.5


def check_tables(frames: list, *, na_values=(), binned: bool = False) -> list:
    """Return warnings about the columns of a job's tables (identifiers, undeclared missing markers).

    Parameters
    ----------
    frames : list of DataFrame
    na_values : sequence, default=()
        Markers already declared missing.
    binned : bool, default=False
        Whether numeric columns will be binned (then many distinct numbers are expected).

    Returns
    -------
    list of str

    Examples
    --------
    >>> frame = pd.DataFrame({"id": range(30), "x": ["?", "a", "b"] * 10})
    >>> for message in check_tables([frame]):
    ...     print(message.split(":")[0])
    Column 'id' has 30 distinct values in 30 rows (an identifier?)
    Column 'x' holds '?' in 10 rows
    """
    messages, lookalikes = [], {}
    declared = {str(v) for v in na_values}
    pooled = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    n_rows = len(pooled)
    for column in pooled.columns:
        values = pooled[column]
        counts = values.value_counts(dropna=True, sort=False)  # once per column: its distinct values and their rows
        counts = counts[counts > 0]  # a categorical's unused labels are no values
        distinct = len(counts)
        numeric = pd.api.types.is_float_dtype(values.dtype) or (binned and pd.api.types.is_numeric_dtype(values.dtype))
        if n_rows >= 20 and not numeric and distinct >= IDENTIFIER_SHARE * n_rows:
            messages.append(f"Column {column!r} has {distinct} distinct values in {n_rows} rows (an identifier?): it "
                            "makes almost every row a category of its own, and the kernel sees nothing else. Drop it.")
        lookalikes[column] = _missing_lookalikes(values.dtype, counts, declared)
    return messages + _lookalike_messages(lookalikes)


def marker_labels(frame: pd.DataFrame, *, na_values=()) -> list:
    """Return a warning per undeclared marker that looks like a missing value in a text column of ``frame``.

    Parameters
    ----------
    frame : DataFrame
    na_values : sequence, default=()
        Markers already declared missing.

    Returns
    -------
    list of str

    Examples
    --------
    >>> print(marker_labels(pd.DataFrame({"flow": ["Low", "None"]}))[0].split(":")[0])
    Column 'flow' holds 'None' in 1 rows
    """
    declared = {str(v) for v in na_values}
    return _lookalike_messages({column: _missing_lookalikes(frame[column].dtype,
                                                            frame[column].value_counts(sort=False), declared)
                                for column in frame.columns})


def _missing_lookalikes(dtype, counts: pd.Series, declared: set) -> dict:
    """Return ``{marker: rows}``: undeclared markers that look missing (``?``, ``NA``...) in a text column.

    Most rows first.  ``counts``: the column's rows per distinct value.  A table read from a file holds its text as
    categoricals: they are text too.
    """
    if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype)):
        return {}
    wanted = set(MISSING_LOOKALIKES) - declared
    found: dict = {}  # marker -> rows, in the order the column's values come (a dict, not a pandas pass per column)
    for value, count in zip(counts.index, counts.to_numpy()):
        marker = str(value).strip()
        if marker in wanted:
            found[marker] = found.get(marker, 0) + int(count)
    return dict(sorted(found.items(), key=lambda item: -item[1]))


#: Columns named in a warning about one marker; the others are counted ("and 32 more").
NAMED_COLUMNS = 3


def _lookalike_messages(found: dict) -> list:
    """Return one warning per marker, naming the columns that hold it (bnlearn's pathfinder: 'NA' in 35 columns)."""
    by_marker: dict = {}
    for column, markers in found.items():
        for marker, count in markers.items():
            by_marker.setdefault(marker, []).append((column, count))
    messages = []
    for marker, held in by_marker.items():
        fix = (f"if it marks a missing value, declare it (na_values=[{marker!r}], --na-values {marker!r}); as it is, "
               "it is a category of its own")
        if len(held) == 1:
            messages.append(f"Column {held[0][0]!r} holds {marker!r} in {held[0][1]} rows: {fix}.")
            continue
        names = ", ".join(repr(column) for column, _ in held[:NAMED_COLUMNS])
        more = f" and {len(held) - NAMED_COLUMNS} more" if len(held) > NAMED_COLUMNS else ""
        low, high = min(count for _, count in held), max(count for _, count in held)
        messages.append(f"Columns {names}{more} hold {marker!r} (in {low if low == high else f'{low}-{high}'} rows "
                        f"each): {fix} in each.")
    return messages


def split_columns(first: pd.DataFrame, second: pd.DataFrame) -> list:
    """Columns constant within each table but different between them: they alone make the tables differ.

    Parameters
    ----------
    first, second : DataFrame

    Returns
    -------
    list
        Column names.

    Examples
    --------
    >>> a = pd.DataFrame({"split": ["train"] * 3, "x": list("abc")})
    >>> b = pd.DataFrame({"split": ["test"] * 3, "x": list("cab")})
    >>> split_columns(a, b)
    ['split']
    """
    out = []
    for column in first.columns:
        if column not in second.columns:
            continue
        a, b = first[column].dropna(), second[column].dropna()
        if len(a) and len(b) and a.nunique() == 1 and b.nunique() == 1 and not np.all(a.iloc[0] == b.iloc[0]):
            out.append(column)
    return out


def left_out_columns(columns: list, variables, names: list, *, source: str, fix: str) -> list:
    """Return a warning per table with columns outside the variables compared (they are left out of the comparison).

    Parameters
    ----------
    columns : list of sequences
        Each table's columns (a DataFrame's ``columns``).
    variables : sequence
        The variables compared.
    names : list of str
        Each table's name, for the message.
    source : str
        Where the variables come from (e.g. "the first table", "the given network"), for the message.
    fix : str
        What to do instead of dropping the columns, for the message.

    Returns
    -------
    list of str

    Examples
    --------
    >>> a = pd.DataFrame({"x": list("abc")})
    >>> b = pd.DataFrame({"x": list("cab"), "batch": [7, 7, 8]})
    >>> left_out_columns([a.columns, b.columns], ["x"], ["a.csv", "b.csv"], source="a.csv", fix="add them to a.csv")
    ["Column(s) 'batch' of b.csv are not in a.csv and are left out of the comparison; drop them, or add them to a.csv."]
    """
    known = set(variables)
    out = []
    for table, name in zip(columns, names):
        extra = list(dict.fromkeys(str(c) for c in table if c not in known))
        if extra:
            shown = ", ".join(repr(c) for c in extra[:5]) + (", ..." if len(extra) > 5 else "")
            out.append(f"Column(s) {shown} of {name} are not in {source} and are left out of the comparison; drop "
                       f"them, or {fix}.")
    return out


def identical_tables(first: pd.DataFrame, second: pd.DataFrame, names: list) -> list:
    """Return a warning when the two tables hold the same rows in the same order (one table given twice?).

    Parameters
    ----------
    first, second : DataFrame
    names : list of str
        The tables' names, for the message.

    Returns
    -------
    list of str

    Examples
    --------
    >>> survey = pd.DataFrame({"answer": ["yes", "no"]})
    >>> identical_tables(survey, survey.copy(), ["a.csv", "a.csv"])[0].split(":")[0]
    'a.csv and a.csv hold the same rows in the same order (one table given twice?)'
    >>> identical_tables(survey, survey.iloc[::-1], ["a", "b"])
    []
    """
    if first.shape != second.shape or not first.equals(second):
        return []
    return [f"{names[0]} and {names[1]} hold the same rows in the same order (one table given twice?): no test can "
            "find a difference between them."]


def unknown_values(frame: pd.DataFrame, codes: np.ndarray, variables, *, na_values=()) -> list:
    """Return a warning naming the columns whose values the model does not know (coded missing, then marginalized).

    Parameters
    ----------
    frame : DataFrame
        The rows as given.
    codes : ndarray of shape (n_rows, n_variables)
        Their codes (``-1``: missing, or a value the schema does not know).
    variables : sequence
        The variable of each column of ``codes``; those ``frame`` lacks (a class the
        caller marginalizes) are not looked at.
    na_values : sequence, default=()
        The schema's missing-value markers (cells that are missing, not unknown).

    Returns
    -------
    list of str

    Examples
    --------
    >>> frame = pd.DataFrame({"x": ["a", "martian", None], "y": ["b", "b", "c"]})
    >>> codes = np.array([[0, 0], [-1, 0], [-1, 1]])
    >>> unknown_values(frame, codes, ["x", "y"])[0].split(";")[0]
    "1 of 6 value(s) unseen in fit are coded as missing and marginalized: column 'x' 1 cell(s) (e.g. 'martian')"
    """
    seen, looked = [], 0
    for i, v in enumerate(variables):
        if v not in frame.columns:
            continue
        looked += codes.shape[0]
        unknown = codes[:, i] < 0
        if unknown.any():
            unknown &= ~_missing_mask(frame[v], tuple(na_values))
        if unknown.any():
            seen.append((v, int(unknown.sum()), frame[v].iloc[int(np.argmax(unknown))]))
    if not seen:
        return []
    shown = ", ".join(f"column {v!r} {n} cell(s) (e.g. {example!r})" for v, n, example in seen[:5])
    return [f"{sum(n for _, n, _ in seen)} of {looked} value(s) unseen in fit are coded as missing and "
            f"marginalized: {shown}"
            f"{', ...' if len(seen) > 5 else ''}; refit on data that has them, or pass handle_unknown='error' to "
            "refuse them (a table whose columns are in another order shows up here too)."]
