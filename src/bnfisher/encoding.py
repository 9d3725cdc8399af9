"""Categorical data at the boundary: labels in, integer codes out.

Everything inside bnfisher works on an ``(n_rows, n_variables)`` column-major
(Fortran-ordered) array of integer codes in ``[0, r_i)`` plus, per variable, the
ordered tuple of its state labels.  Column-major, because all the work is per
column: counting one family over a million rows of alarm takes a fifth of the
time it takes on a row-major array.  This module is the only place where pandas, strings and user types are
turned into codes (``encode``) and where numeric columns are binned (``discretize``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["EncodedData", "encode", "infer_states", "discretize"]

#: Largest number of distinct values accepted in an integer column without states.
MAX_INTEGER_STATES = 1000


@dataclass(frozen=True)
class EncodedData:
    """Integer-coded categorical data.

    Attributes
    ----------
    codes : ndarray of shape (n_rows, n_variables), signed integers, column-major
        ``codes[r, i]`` is the index of row ``r``'s value in ``states[variables[i]]``
        (the smallest signed integer type that holds them when encoded from a
        DataFrame; intp for arrays of codes).
    variables : tuple of str
        Column names, in the order of the columns of ``codes``.
    states : dict
        ``states[v]`` is the ordered tuple of state labels of variable ``v``.
    """

    codes: np.ndarray
    variables: tuple
    states: dict

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of states of each variable, in column order."""
        return np.array([len(self.states[v]) for v in self.variables], dtype=np.intp)

    @property
    def n_rows(self) -> int:
        return self.codes.shape[0]

    def select(self, variables: Sequence) -> EncodedData:
        """Return the columns ``variables`` (in that order) as a new EncodedData."""
        index = {v: i for i, v in enumerate(self.variables)}
        missing = [v for v in variables if v not in index]
        if missing:
            raise ValueError(f"Column(s) {missing} required by the model are absent from the data.")
        columns = [index[v] for v in variables]
        return EncodedData(
            np.asfortranarray(self.codes[:, columns]), tuple(variables), {v: self.states[v] for v in variables}
        )


def _sorted_unique(values: np.ndarray, column) -> tuple:
    try:
        uniques = pd.unique(values)
    except TypeError as exc:  # e.g. dicts or lists in an object column
        raise TypeError(
            f"Column {column!r} holds unhashable values ({exc}); each value must be a label: "
            "argument must be a string or a number."
        ) from None
    try:
        ordered = sorted(uniques)
    except TypeError:
        # Mixed types (e.g. 1 and "a"): order by type name, then by text.
        ordered = sorted(uniques, key=lambda v: (type(v).__name__, str(v)))
    return tuple(_python_scalar(v) for v in ordered)


def _python_scalar(value):
    """numpy scalars -> Python scalars, so labels print and compare plainly."""
    return value.item() if isinstance(value, np.generic) else value


def _check_no_missing(series: pd.Series, column) -> None:
    missing = series.isna().to_numpy()
    if missing.any():
        row = series.index[int(np.argmax(missing))]
        raise ValueError(
            f"Column {column!r} has {int(missing.sum())} missing value(s) (first at row {row!r}); "
            "bnfisher needs complete data: drop or impute those rows first."
        )


def _infer_column_states(series: pd.Series, column) -> tuple:
    _check_no_missing(series, column)
    if isinstance(series.dtype, pd.CategoricalDtype):
        # Categorical order is the user's order; unused categories are kept on purpose.
        return tuple(_python_scalar(c) for c in series.cat.categories)
    if pd.api.types.is_float_dtype(series.dtype):
        raise ValueError(
            f"Column {column!r} is floating point ({series.dtype}); bnfisher models categorical data. "
            "Bin it explicitly with bnfisher.discretize(df, bins=4) (command line: --bins 4) or convert it to a "
            "categorical column."
        )
    if pd.api.types.is_integer_dtype(series.dtype):
        n_unique = series.nunique()
        if n_unique > MAX_INTEGER_STATES:
            raise ValueError(
                f"Column {column!r} is integer with {n_unique} distinct values; that is not a categorical "
                "variable. Bin it with bnfisher.discretize(df, columns=[...]) first."
            )
    return _sorted_unique(series.to_numpy(), column)


def infer_states(data: pd.DataFrame) -> dict:
    """Infer the ordered states of every column of a DataFrame.

    Categorical columns keep their category order (unused categories included);
    other columns (object, string, bool or integer) get their sorted distinct values.

    Parameters
    ----------
    data : DataFrame
        Categorical data without missing values.

    Returns
    -------
    dict
        ``{column: tuple of states}`` in column order.

    Raises
    ------
    ValueError
        For missing values or a floating-point column (use :func:`discretize`).

    Examples
    --------
    >>> import pandas as pd
    >>> infer_states(pd.DataFrame({"a": ["y", "x", "y"], "b": [2, 1, 2]}))
    {'a': ('x', 'y'), 'b': (1, 2)}
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    return {column: _infer_column_states(data[column], column) for column in data.columns}


def _encode_column(series: pd.Series, column, states: tuple) -> np.ndarray:
    _check_no_missing(series, column)
    if isinstance(series.dtype, pd.CategoricalDtype):
        # Map the (few) categories, then index by the integer category codes: no per-row hashing.
        category_codes = pd.Index(list(states), dtype=object).get_indexer(
            pd.Index(series.cat.categories.astype(object), dtype=object))
        codes = category_codes[series.cat.codes.to_numpy()]
    elif _integer_states(series, states):
        # Integer column and integer states: a lookup table over the value range.
        values = series.to_numpy()
        low = min(int(values.min()), min(states))
        table = np.full(max(int(values.max()), max(states)) - low + 1, -1, dtype=np.intp)
        table[np.asarray(states, dtype=np.int64) - low] = np.arange(len(states))
        codes = table[values - low] if low else table[values]
    else:
        # One hash lookup per row; -1 marks values that are not states.
        codes = pd.Index(list(states), dtype=object).get_indexer(pd.Index(series, dtype=object))
    unknown = codes < 0
    if unknown.any():
        position = int(np.argmax(unknown))
        bad = series.iloc[position]
        shown = ", ".join(repr(s) for s in states[:10]) + (", ..." if len(states) > 10 else "")
        raise ValueError(
            f"Column {column!r} has value {bad!r} (row {series.index[position]!r}) that is not one of "
            f"its {len(states)} states ({shown}); refit the model on data that contains it."
        )
    return codes.astype(np.intp, copy=False)


def _integer_states(series: pd.Series, states: tuple) -> bool:
    """True when a lookup table can encode the column: integers in both, a modest range."""
    if not pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype) or not len(series):
        return False
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in states):
        return False
    span = max(int(series.max()), max(states)) - min(int(series.min()), min(states))
    return span <= 10 * (len(states) + len(series))


def encode(
    data,
    states: Mapping | None = None,
    variables: Sequence | None = None,
) -> EncodedData:
    """Encode categorical data as integer codes.

    Parameters
    ----------
    data : DataFrame or array-like of int of shape (n_rows, n_variables)
        A DataFrame holds state *labels* (object, string, category, bool or small
        integer columns); extra columns are ignored when ``variables`` is given.
        A NumPy array holds *codes* already: ``data[r, i]`` in ``[0, r_i)``, with
        columns in the order of ``variables``.
    states : mapping, optional
        ``{variable: sequence of labels}``.  When given (e.g. a fitted model's
        states), values are matched against these labels and unknown values raise.
        When omitted they are inferred (:func:`infer_states`; for arrays,
        ``range(max + 1)``).
    variables : sequence of str, optional
        Which columns to encode, in order.  Defaults to the DataFrame's columns, the
        keys of ``states``, or ``X0 .. X{n-1}`` for arrays.

    Returns
    -------
    EncodedData

    Raises
    ------
    ValueError
        Naming the column and value: missing values, a value outside the states, a
        required column that is absent, a float column, or codes out of range.

    Examples
    --------
    >>> import pandas as pd
    >>> enc = encode(pd.DataFrame({"a": ["y", "x"], "b": [True, False]}))
    >>> enc.codes.tolist(), enc.states
    ([[1, 1], [0, 0]], {'a': ('x', 'y'), 'b': (False, True)})
    """
    if isinstance(data, EncodedData):
        if variables is None or tuple(variables) == data.variables:
            return data
        return data.select(variables)
    if isinstance(data, pd.DataFrame):
        return _encode_frame(data, states, variables)
    if isinstance(data, pd.Series):
        return _encode_frame(data.to_frame(), states, variables)
    return _encode_array(data, states, variables)


def _encode_frame(data: pd.DataFrame, states: Mapping | None, variables: Sequence | None) -> EncodedData:
    if variables is None:
        variables = list(states) if states is not None else list(data.columns)
    variables = tuple(variables)
    if len(set(variables)) != len(variables):
        raise ValueError(f"`variables` has duplicate names: {variables}.")
    missing = [v for v in variables if v not in data.columns]
    if missing:
        raise ValueError(
            f"Column(s) {missing} required by the model are absent from the data "
            f"(it has {list(data.columns)})."
        )
    if data.columns.duplicated().any():
        raise ValueError(f"The data has duplicate column names: {list(data.columns[data.columns.duplicated()])}.")
    resolved_states = {}
    columns = []
    for v in variables:
        if states is not None and v in states:
            resolved_states[v] = tuple(states[v])
        else:
            resolved_states[v] = _infer_column_states(data[v], v)
        columns.append(_encode_column(data[v], v, resolved_states[v]))
    # The smallest signed integer type that holds every code (1 byte up to 127 states): an eighth
    # of the memory, and of the page faults, of intp for large blocks.
    largest = max((len(resolved_states[v]) for v in variables), default=1)
    dtype = next(t for t in (np.int8, np.int16, np.int32, np.int64) if largest - 1 <= np.iinfo(t).max)
    codes = np.empty((len(data), len(columns)), dtype=dtype, order="F")
    for i, column in enumerate(columns):
        codes[:, i] = column
    return EncodedData(codes, variables, resolved_states)


def _encode_array(data, states: Mapping | None, variables: Sequence | None) -> EncodedData:
    array = np.asarray(data)
    if array.ndim != 2:
        raise ValueError(f"Integer-coded data must be 2-D (n_rows, n_variables); got shape {array.shape}.")
    if array.dtype.kind == "b":
        array = array.astype(np.intp)
    if array.dtype.kind not in "iu":
        if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
            array = array.astype(np.intp)
        else:
            raise TypeError(
                "An array is read as integer codes and must have an integer dtype; got "
                f"{array.dtype}. Pass a pandas DataFrame to use labels."
            )
    if variables is None:
        variables = list(states) if states is not None else [f"X{i}" for i in range(array.shape[1])]
    variables = tuple(variables)
    if len(variables) != array.shape[1]:
        raise ValueError(
            f"The array has {array.shape[1]} columns but {len(variables)} variables are expected ({variables})."
        )
    codes = np.asfortranarray(array, dtype=np.intp)
    # One pass for all columns' ranges.
    lowest = codes.min(axis=0) if codes.shape[0] else np.zeros(codes.shape[1], dtype=np.intp)
    highest = codes.max(axis=0) if codes.shape[0] else np.zeros(codes.shape[1], dtype=np.intp)
    resolved_states = {}
    for i, v in enumerate(variables):
        if lowest[i] < 0:
            raise ValueError(f"Column {i} ({v!r}) has negative code {int(lowest[i])}; codes start at 0.")
        if states is not None and v in states:
            resolved_states[v] = tuple(states[v])
            if highest[i] >= len(resolved_states[v]):
                raise ValueError(
                    f"Column {i} ({v!r}) has code {int(highest[i])} but the variable has only "
                    f"{len(resolved_states[v])} states (codes 0..{len(resolved_states[v]) - 1})."
                )
        else:
            resolved_states[v] = tuple(range(int(highest[i]) + 1))
    return EncodedData(codes, variables, resolved_states)




def discretize(
    data: pd.DataFrame,
    bins: int = 4,
    strategy: str = "quantile",
    columns: Sequence | None = None,
) -> pd.DataFrame:
    """Bin numeric columns into at most ``bins`` ordered categories.

    The paper bins continuous features into at most 4 bins before learning a
    network ([1]_, Sec. 7.1.1).  bnfisher never bins silently: call this first.

    Parameters
    ----------
    data : DataFrame
        The data; it is not modified.
    bins : int, default=4
        Maximum number of bins per column.  Quantile bins that coincide (ties) are
        merged, so a column may end with fewer.
    strategy : {"quantile", "uniform"}, default="quantile"
        Equal-frequency (``pandas.qcut``) or equal-width (``pandas.cut``) bins.
    columns : sequence, optional
        Columns to bin.  Default: every float column and every integer column with
        more than ``bins`` distinct values.

    Returns
    -------
    DataFrame
        A copy in which the binned columns are ordered categoricals whose labels
        name the bins: ``"-0.5~1.25"`` is the interval (-0.5, 1.25] (the first
        bin also holds its lower edge).

    Raises
    ------
    ValueError
        For a non-numeric or absent column, ``bins < 2`` or an unknown strategy.

    References
    ----------
    .. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.

    Examples
    --------
    >>> import pandas as pd
    >>> out = discretize(pd.DataFrame({"x": [0.1, 0.4, 0.35, 0.8]}), bins=2)
    >>> out["x"].cat.categories.tolist()
    ['0.1~0.375', '0.375~0.8']
    """
    from ._validation import check_option, check_positive_int

    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    bins = check_positive_int(bins, "bins", minimum=2)
    check_option(strategy, "strategy", ("quantile", "uniform"))
    if columns is None:
        columns = [
            c
            for c in data.columns
            if pd.api.types.is_float_dtype(data[c].dtype)
            or (
                pd.api.types.is_integer_dtype(data[c].dtype)
                and not pd.api.types.is_bool_dtype(data[c].dtype)
                and data[c].nunique() > bins
            )
        ]
    out = data.copy()
    for column in columns:
        if column not in data.columns:
            raise ValueError(f"Column {column!r} passed in `columns` is not in the data.")
        series = data[column]
        if not pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
            raise ValueError(f"Column {column!r} is not numeric ({series.dtype}); only numeric columns can be binned.")
        _check_no_missing(series, column)
        if strategy == "quantile":
            codes, edges = pd.qcut(series, q=bins, duplicates="drop", labels=False, retbins=True)
        else:
            codes, edges = pd.cut(series, bins=bins, labels=False, retbins=True)
        labels = _interval_labels(edges)
        out[column] = pd.Categorical.from_codes(np.asarray(codes, dtype=np.intp), categories=labels, ordered=True)
    return out


def _interval_labels(edges: np.ndarray) -> list:
    """``"lo~hi"`` for the bin ``(lo, hi]``: short, unique, and safe in BIF files and CSV."""
    for digits in range(4, 18):
        labels = [f"{lo:.{digits}g}~{hi:.{digits}g}" for lo, hi in zip(edges[:-1], edges[1:])]
        if len(set(labels)) == len(labels):
            return labels
    return [f"bin{k}" for k in range(len(edges) - 1)]  # pragma: no cover - edges are distinct
