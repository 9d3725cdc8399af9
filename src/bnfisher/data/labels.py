"""Labels in, codes out: how one column's values become states and integer codes.

Private helpers of :class:`~bnfisher.data.Schema`; every other module gets codes, never labels.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.binning import bin_codes, check_bin_edges
from bnfisher.exceptions import DataError, DataWarning, OptionTypeError, SchemaError

__all__ = ['MANY_INTEGER_VALUES', 'MAX_INTEGER_STATES']


#: Largest number of distinct values accepted in an integer column without states.
MAX_INTEGER_STATES = 1000


# ----------------------------------------------------------------- labels
def _python_scalar(value):
    """Numpy scalars -> Python scalars, so labels print, compare and serialise plainly."""
    return value.item() if isinstance(value, np.generic) else value


def _check_label_types(values: np.ndarray, column) -> None:
    """Refuse object columns where ``1``, ``True`` and ``1.0`` would merge into one state."""
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if not kind.startswith("mixed"):
        return
    plain = len(pd.unique(values))
    typed = pd.Series(values, dtype=object).map(lambda v: (type(v).__name__, v)).nunique()
    if typed > plain:
        kinds = sorted({type(v).__name__ for v in values})
        raise DataError(
            f"Column {column!r} mixes value types ({', '.join(kinds)}) whose values compare equal "
            "(e.g. 1, True and 1.0); they would merge into one state. Convert the column to one type first."
        )


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


def _all_whole_number_text(uniques) -> bool:
    """Whether every label is text spelling a whole number ("0", "17", "-1"): codes kept as text."""
    return len(uniques) > 0 and all(isinstance(v, str) and _WHOLE_NUMBER.fullmatch(v) for v in uniques)


def _whole_number_text(label: str) -> tuple:
    """Order text codes by their number, then their spelling ("7" before "07"): as the numbers would be."""
    return int(label), label


def sorted_states(values: np.ndarray, column) -> tuple:
    """Return a column's distinct labels in order: numbers and text by value; codes kept as text by their number.

    Parameters
    ----------
    values : ndarray
    column : object
        Named in errors.

    Returns
    -------
    tuple
    """
    try:
        uniques = pd.unique(values)
    except TypeError as exc:  # e.g. dicts or lists in an object column
        raise OptionTypeError(
            f"Column {column!r} holds unhashable values ({exc}); each value must be a label: "
            "argument must be a string or a number."
        ) from None
    if values.dtype == object:
        _check_label_types(values, column)
    try:
        ordered = sorted(uniques, key=_whole_number_text) if _all_whole_number_text(uniques) else sorted(uniques)
    except (TypeError, ValueError):  # ValueError: numpy scalars compared with tuples
        # Mixed types (e.g. 1 and "a"): order by type name, then by text.
        ordered = sorted(uniques, key=lambda v: (type(v).__name__, str(v)))
    return tuple(_python_scalar(v) for v in ordered)


def _missing_mask(series: pd.Series, na_values: tuple) -> np.ndarray:
    missing = series.isna().to_numpy()
    if na_values:
        missing = missing | series.isin(na_values).to_numpy()
    return missing


def _check_no_missing(series: pd.Series, column, na_values: tuple = ()) -> None:
    missing = _missing_mask(series, na_values)
    if missing.any():
        row = int(np.argmax(missing))
        raise DataError(
            f"Column {column!r} has {int(missing.sum())} missing value(s) (first at row {row}); "
            "this step needs complete data: pass missing=\"em\" (learn) or missing=\"allow\" (Schema.encode, "
            "as_provider), which keep them, or drop those rows."
        )


def _is_numeric(series: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)


def _infer_column_states(series: pd.Series, column, na_values: tuple = ()) -> tuple:
    _check_no_missing(series, column, na_values)
    if isinstance(series.dtype, pd.CategoricalDtype):
        # Categorical order is the user's order; unused categories are kept on purpose.
        return tuple(_python_scalar(c) for c in series.cat.categories)
    if pd.api.types.is_float_dtype(series.dtype):
        raise DataError(
            f"Column {column!r} is floating point ({series.dtype}); bnfisher models categorical data. "
            "Bin it explicitly: bnfisher.discretize(df, bins=4), Schema.from_data(df, bins=4), or --bins 4 on "
            "the command line; or convert it to a categorical column."
        )
    if pd.api.types.is_integer_dtype(series.dtype):
        n_unique = series.nunique()
        if n_unique > MAX_INTEGER_STATES:
            raise DataError(
                f"Column {column!r} is integer with {n_unique} distinct values; that is not a categorical "
                "variable. Bin it with bnfisher.discretize(df, columns=[...]) (command line: --bins 4) first."
            )
    if isinstance(series.dtype, pd.StringDtype):  # text (Arrow-backed as read): no Python string per row
        return sorted_states(np.asarray(series.unique(), dtype=object), column)
    return sorted_states(series.to_numpy(), column)


def _json_label(value):
    value = _python_scalar(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _as_numbers(series: pd.Series) -> pd.Series | None:
    """Text that is all numbers (a CSV read as text) as floats; None when it holds labels (e.g. bin labels)."""
    if isinstance(series.dtype, pd.CategoricalDtype) or not len(series):
        return None
    numbers = pd.to_numeric(series, errors="coerce")
    return numbers if bool(numbers.notna().all()) else None


def _lookup_codes(series: pd.Series, states: tuple) -> np.ndarray:
    """Codes of ``series`` in ``states``, -1 for values that are not states."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        # Map the (few) categories, then index by the integer category codes: no per-row hashing.
        category_codes = _positions(series.cat.categories.astype(object), states)
        codes = series.cat.codes.to_numpy()
        if np.array_equal(category_codes, np.arange(len(category_codes))):  # the states' order: codes as they are
            return codes.copy()  # a copy: the caller may write to it, and the user's column stays as it is
        # The table in the smallest type that holds the states: 10^6 rows give 1 MB of codes, not 8.
        table = np.append(category_codes, -1).astype(np.min_scalar_type(-len(states) - 1))
        return table[codes]
    if isinstance(series.dtype, pd.StringDtype) or series.dtype == object:
        # Text or objects: number the distinct values (one hash per row), then look up only those (5x faster than
        # looking every row up in an object index: 4 ms against 21 ms for 10^5 rows).
        value_codes, uniques = pd.factorize(series)
        found = _positions(np.asarray(uniques, dtype=object), states)
        return np.append(found, -1)[value_codes].astype(np.intp)
    if _integer_states(series, states):
        # Integer column and integer states: a lookup table over the value range.
        values = series.to_numpy()
        low = min(int(values.min()), min(states))
        table = np.full(max(int(values.max()), max(states)) - low + 1, -1, dtype=np.intp)
        table[np.asarray(states, dtype=np.int64) - low] = np.arange(len(states))
        return table[values - low] if low else table[values]
    # One hash lookup per row; -1 marks values that are not states.
    return pd.Index(list(states), dtype=object).get_indexer(pd.Index(series, dtype=object)).astype(np.intp)


def _positions(values, states: tuple) -> np.ndarray:
    """Position of each of the (distinct) ``values`` among ``states``, -1 for none.

    A dict for a few values (a column's labels: 4-5x faster than building two indexes),
    pandas' hash table for many; both match by hash and ``==``.
    """
    if len(values) > 1024:
        return pd.Index(list(states), dtype=object).get_indexer(pd.Index(values, dtype=object))
    position = {state: k for k, state in enumerate(states)}
    return np.fromiter((position.get(value, -1) for value in values), dtype=np.intp, count=len(values))


def _integer_states(series: pd.Series, states: tuple) -> bool:
    """Return True when a lookup table can encode the column: integers in both, a modest range."""
    if not pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype) or not len(series):
        return False
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in states):
        return False
    low, high = min(int(series.min()), min(states)), max(int(series.max()), max(states))
    if low < -(2**62) or high > 2**62:  # beyond int64 arithmetic (uint64 >= 2**63): hash lookup instead
        return False
    return high - low <= 10 * (len(states) + len(series))


def _as_code_array(data) -> np.ndarray:
    array = np.asarray(data)
    if array.ndim != 2:
        raise DataError(f"Integer-coded data must be 2-D (n_rows, n_variables); got shape {array.shape}.")
    if array.dtype.kind == "b":
        return array.astype(np.intp)
    if array.dtype.kind in "iu":
        return array
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        return array.astype(np.intp)
    raise OptionTypeError(
        "An array is read as integer codes and must have an integer dtype; got "
        f"{array.dtype}. Pass a pandas DataFrame to use labels."
    )


def _check_nonnegative(array: np.ndarray, variables: Sequence) -> None:
    if array.shape[0] == 0:
        return
    lowest = array.min(axis=0)
    negative = np.flatnonzero(lowest < 0)
    if negative.size:
        i = int(negative[0])
        row = int(np.argmax(array[:, i] < 0))
        raise DataError(f"Column {i} ({variables[i]!r}) has negative code {int(lowest[i])} (row {row}); "
                        "codes start at 0.")


def encode_column(series: pd.Series, column, states: tuple, *, bin_edges=None, na_values: tuple = (),
                  missing: str = "error", handle_unknown: str = "error") -> np.ndarray:
    """Codes of one column's values in ``states`` (bins by ``bin_edges``); -1 for missing (and unknown) values."""
    if missing == "error":
        _check_no_missing(series, column, na_values)
    else:
        codes = _codes_with_missing(series, column, states, bin_edges, na_values, handle_unknown)
        if codes is not None:
            return codes
    return _codes_of_present(series, column, states, bin_edges, handle_unknown)


def _codes_with_missing(series: pd.Series, column, states: tuple, bin_edges, na_values: tuple,
                        handle_unknown: str) -> np.ndarray | None:
    """Codes with -1 for the missing cells, or None when the column has none."""
    if not na_values and bin_edges is None and (series.dtype == object
                                                or isinstance(series.dtype, (pd.StringDtype, pd.CategoricalDtype))):
        # Look every value up first: a missing value is no state, so only the values not found need the
        # missing-value test (slow on text).  Values that are neither take the general path.
        codes = _lookup_codes(series, states)
        others = np.flatnonzero(codes < 0)
        if not others.size or bool(series.iloc[others].isna().all()):
            return codes
    absent = _missing_mask(series, na_values)
    if not absent.any():
        return None
    codes = np.full(len(series), -1, dtype=np.intp)
    present = ~absent
    if present.any():
        codes[present] = _codes_of_present(series[present], column, states, bin_edges, handle_unknown)
    return codes


def _codes_of_present(series: pd.Series, column, states: tuple, bin_edges, handle_unknown: str) -> np.ndarray:
    """Codes of a column without missing cells: binned, or looked up (then by text); unknown values -1 or refused."""
    if bin_edges is not None:
        values = series if _is_numeric(series) else _as_numbers(series)
        if values is not None:
            return bin_codes(values.to_numpy(dtype=np.float64), np.asarray(bin_edges))
    codes = _lookup_codes(series, states)
    unknown = codes < 0
    if unknown.any():
        unknown = _match_by_text(series, states, codes, unknown)
    if unknown.any() and handle_unknown == "error":
        _refuse_unknown(series, column, states, int(np.argmax(unknown)))
    return codes


def _match_by_text(series: pd.Series, states: tuple, codes: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """Match the values not found by their text, in place; return the values still unknown.

    A CSV gives "1" where the model holds 1 (or the reverse).
    """
    texts = [str(s) for s in states]
    if len(set(texts)) == len(texts):
        codes[unknown] = pd.Index(texts, dtype=object).get_indexer(pd.Index(series[unknown].astype(str), dtype=object))
    return codes < 0


def _refuse_unknown(series: pd.Series, column, states: tuple, position: int):
    bad = series.iloc[position]
    shown = ", ".join(repr(s) for s in states[:10]) + (", ..." if len(states) > 10 else "")
    raise SchemaError(
        f"Column {column!r} has value {bad!r} (row {position}) that is not one of its {len(states)} "
        f"states ({shown}); the model was fitted on data without it: refit on data that contains it, or "
        "pass handle_unknown='marginalize' to treat such values as missing."
    )


def _declared(column: pd.Series) -> bool:
    """Say whether a column is categorical with categories not all text: declared labels, never re-read as numbers.

    (Text columns of a CSV file are read as categories of strings; they are text here.)
    """
    return isinstance(column.dtype, pd.CategoricalDtype) and not all(
        isinstance(c, str) for c in column.cat.categories)


def harmonise_labels(columns: list) -> list:
    """One column from several tables: where some hold numbers and others text, read numeric text as numbers.

    A CSV column with one odd cell (``"unknown"`` among integers) is read as text, so
    ``"1"`` in one table and ``1`` in another would become two states and every row of
    one table would look different.  Text that is a number becomes that number (an
    int when it is integral); other text stays a label.  Categories of text count as
    text (a CSV file's text columns are read as categories).
    """
    kinds = [_is_numeric(c) for c in columns if not _declared(c)]
    if not (any(kinds) and not all(kinds)):
        return columns
    out = []
    for column in columns:
        if _is_numeric(column) or _declared(column):
            out.append(column)
            continue
        numbers = pd.to_numeric(column.astype(object).where(column.notna(), None), errors="coerce")
        parsed = numbers.notna() & column.notna()
        values = column.astype(object).copy()
        as_numbers = numbers[parsed]
        integral = as_numbers == np.round(as_numbers)
        values[parsed] = [int(x) if i else float(x) for x, i in zip(as_numbers, integral)]
        out.append(values)
    return out


def check_column_names(names) -> None:
    """Refuse column names that pandas cannot select by (booleans read as masks) or that name nothing (None, NaN)."""
    for position, name in enumerate(names):
        if name is None or (isinstance(name, float) and name != name):
            raise DataError(f"Column {position} has no name ({name!r}); give every column a name.")
        if isinstance(name, (bool, np.bool_)):
            raise DataError(f"Column {position} is named {name!r}, a boolean: pandas would read a list of such "
                            f"names as a row mask. Rename it (e.g. to {str(name)!r}).")


def bin_frame(data: pd.DataFrame, bin_edges, states, na_values: tuple) -> pd.DataFrame:
    """Return a copy of ``data`` whose binned numeric columns hold their bin labels (ordered categoricals)."""
    out = data.copy()
    for v, edges in bin_edges.items():
        if v in out.columns and _is_numeric(out[v]):
            _check_no_missing(out[v], v, na_values)
            codes = bin_codes(out[v].to_numpy(dtype=np.float64), np.asarray(edges))
            out[v] = pd.Categorical.from_codes(codes, categories=list(states[v]), ordered=True)
    return out


def schema_labels(v, labels) -> tuple:
    """Return a variable's labels as Python scalars: a non-empty sequence without duplicates."""
    if isinstance(labels, str):
        raise OptionTypeError(f"states[{v!r}] must be a sequence of labels, not the string {labels!r}.")
    labels = tuple(_python_scalar(label) for label in labels)
    if not labels:
        raise SchemaError(f"Variable {v!r} has no states (is the data empty?).")
    if len(set(labels)) != len(labels):
        raise SchemaError(f"Variable {v!r} has duplicate state labels: {labels}.")
    return labels


def as_markers(na_values) -> tuple:
    """Return the missing-value markers as a tuple of Python scalars (one marker, not a string's characters)."""
    if na_values is None:
        return ()
    if isinstance(na_values, (str, bytes)) or not isinstance(na_values, Iterable):
        na_values = (na_values,)
    return tuple(_python_scalar(m) for m in na_values)


def check_same_columns(data: tuple, variables: tuple) -> None:
    """Refuse a table that lacks one of the variables, naming the table and the columns."""
    for position, frame in enumerate(data):
        absent = [v for v in variables if v not in frame.columns]
        if absent:
            which = ("first", "second", "third")[position] if position < 3 else f"number {position + 1}"
            raise DataError(f"The {which} table lacks column(s) {absent} (it has {list(frame.columns)}); every "
                            "table of a comparison needs the same columns.")


#: An integer column is binned by default only with more distinct values than this (and than ``bins``): codes of a
#: nominal variable (relationship, schooling, state) rarely run so high; ages, counts and amounts do.
MANY_INTEGER_VALUES = 30


def columns_to_bin(union: dict, variables: tuple, bins: int, columns, categorical=()) -> list:
    """Return the columns to bin: those named in ``columns`` (numeric), or by the rule.

    The rule: every float column, and every integer column with more than
    ``max(bins, MANY_INTEGER_VALUES)`` distinct values; never a column named in
    ``categorical``.  An integer column with few values named in ``columns`` is binned,
    with a :class:`~bnfisher.exceptions.DataWarning` (its values are probably codes).
    """
    categorical = set(categorical or ())
    unknown = sorted(str(v) for v in categorical if v not in variables)
    if unknown:
        raise DataError(f"Column(s) {unknown} passed in `categorical` are not in the data.")
    if columns is None:
        many = max(bins, MANY_INTEGER_VALUES)
        return [v for v in variables if v not in categorical and _is_numeric(union[v])
                and (pd.api.types.is_float_dtype(union[v].dtype) or union[v].nunique() > many)]
    _check_columns_to_bin(union, variables, columns, categorical)
    return list(columns)


def _check_columns_to_bin(union: dict, variables: tuple, columns, categorical: set) -> None:
    """Refuse a named column that is absent, categorical or not numeric; warn of one that holds a few integers."""
    both = sorted(str(v) for v in set(columns) & categorical)
    if both:
        raise DataError(f"Column(s) {both} are both to bin (`columns`) and `categorical`; name each in one of them.")
    for v in columns:
        if v not in variables:
            raise DataError(f"Column {v!r} passed in `columns` is not in the data.")
        if not _is_numeric(union[v]):
            raise DataError(f"Column {v!r} is not numeric ({union[v].dtype}); only numeric columns can be binned.")
        distinct = union[v].nunique()
        if not pd.api.types.is_float_dtype(union[v].dtype) and distinct <= MANY_INTEGER_VALUES:
            warnings.warn(f"Column {v!r} holds whole numbers with only {distinct} distinct values, probably the codes "
                          "of categories: binning it merges categories by the order of their codes. Leave it out of "
                          "the columns to bin (--bin-columns) to keep its categories.", DataWarning, stacklevel=5)


def checked_edges(states: dict, bin_edges: Mapping) -> dict:
    """Return each binned variable's edges, checked against its states; refuse an edge set for no variable."""
    edges = {}
    for v, values in bin_edges.items():
        if v not in states:
            raise SchemaError(f"`bin_edges` names {v!r}, which is not a variable of the schema.")
        edges[v] = check_bin_edges(v, values, len(states[v]))
    return edges


def check_markers_are_no_states(states: dict, edges: dict, na_values: tuple) -> None:
    """Refuse a missing-value marker that is also a state of a column that is not binned."""
    for v, labels in states.items():
        clash = [m for m in na_values if any(type(m) is type(x) and m == x for x in labels)]
        if clash and v not in edges:
            raise SchemaError(f"{clash[0]!r} is both a state of {v!r} and a missing-value marker; drop it from "
                              "`na_values` or rename the state.")


def check_frames(data: tuple) -> None:
    """Refuse no table, or an argument that is not a DataFrame (naming its position)."""
    if not data:
        raise OptionTypeError("Schema.from_data needs at least one DataFrame.")
    for position, frame in enumerate(data):
        if not isinstance(frame, pd.DataFrame):
            raise OptionTypeError(f"Schema.from_data takes DataFrames; argument {position} is a "
                                  f"{type(frame).__name__}.")


def observed_cells(column: pd.Series, v, na_values: tuple) -> pd.Series:
    """Return the column's observed cells; refuse a column with none (its states cannot be learned)."""
    column = column[~_missing_mask(column, na_values)]
    if len(column) == 0:
        raise DataError(f"Column {v!r} has no observed value; its states cannot be learned. Declare them "
                        "(a categorical column, or Schema(states)) or drop the column.")
    return column


def united_columns(data: tuple, variables: tuple) -> dict:
    """Each column's values over the tables: "1" in one and 1 in another are one state (``harmonise_labels``)."""
    if len(data) == 1:
        return {v: data[0][v] for v in variables}
    return {v: pd.concat(harmonise_labels([frame[v] for frame in data]), ignore_index=True) for v in variables}
