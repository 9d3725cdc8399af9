"""Categorical data at the boundary: the fitted :class:`Schema`, labels in, integer codes out.

Everything inside bnfisher works on an ``(n_rows, n_variables)`` column-major
(Fortran-ordered) array of integer codes in ``[0, r_i)`` plus, per variable, the
ordered tuple of its state labels.  Column-major, because all the work is per
column: counting one family over a million rows of alarm takes a fifth of the
time it takes on a row-major array.

A :class:`Schema` is learned once -- from the training data, or from the union of
all of a command's inputs -- and then applied to every other input: every file,
every Dask partition, every ``transform``.  It holds the variables and their
order, the states of each variable, the bin edges of numeric columns and the
missing-value markers.  So two files of one comparison are binned with the same
edges, and a network read from BIF encodes new data exactly as it expects.  This
module is the only place where pandas, strings and user types become codes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from .exceptions import DataError, OptionError, OptionTypeError, SchemaError

__all__ = ["Schema", "EncodedData", "encode", "infer_states", "discretize", "MAX_INTEGER_STATES"]

#: Largest number of distinct values accepted in an integer column without states.
MAX_INTEGER_STATES = 1000

#: Separator of the two edges in a bin label: ``"0.1~0.375"`` is the bin (0.1, 0.375].
BIN_SEPARATOR = "~"


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


def _sorted_unique(values: np.ndarray, column) -> tuple:
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
        ordered = sorted(uniques)
    except TypeError:
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
            "bnfisher needs complete data here: drop or impute those rows first."
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
    return _sorted_unique(series.to_numpy(), column)


# ------------------------------------------------------------------- bins
def _bin_edges(values: np.ndarray, bins: int, strategy: str, column) -> np.ndarray:
    """Edges of at most ``bins`` bins over finite ``values`` (distinct, increasing)."""
    if not np.all(np.isfinite(values)):
        bad = values[~np.isfinite(values)][0]
        row = int(np.flatnonzero(~np.isfinite(values))[0])
        raise DataError(f"Column {column!r} has the non-finite value {bad} (row {row}); it cannot be binned. "
                        "Replace or drop it first.")
    if values.size == 0:
        raise DataError(f"Column {column!r} has no values to compute bin edges from.")
    distinct = np.unique(values)
    wanted = min(bins, distinct.size)
    if strategy == "uniform":
        edges = np.linspace(distinct[0], distinct[-1], bins + 1) if distinct.size > 1 else distinct[[0, 0]]
    else:
        edges = np.unique(np.quantile(values, np.linspace(0, 1, bins + 1)))
        if edges.size - 1 < wanted:
            # Ties (e.g. a zero-inflated column) merged quantile bins: use quantiles of the distinct values,
            # so every distinct value is not swallowed by one bin.
            edges = np.unique(np.quantile(distinct, np.linspace(0, 1, wanted + 1)))
    if edges.size < 2:  # one distinct value: one bin holding it
        edges = np.array([distinct[0], distinct[0]])
    return edges.astype(np.float64)


def _interval_labels(edges: Sequence[float]) -> tuple:
    """``"lo~hi"`` for the bin ``(lo, hi]``: short, unique, and safe in BIF files and CSV."""
    edges = np.asarray(edges, dtype=np.float64)
    for digits in range(4, 18):
        labels = [f"{lo:.{digits}g}{BIN_SEPARATOR}{hi:.{digits}g}" for lo, hi in zip(edges[:-1], edges[1:])]
        if len(set(labels)) == len(labels):
            return tuple(labels)
    return tuple(f"bin{k}" for k in range(len(edges) - 1))  # pragma: no cover - edges are distinct


def _bin_codes(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin index of each value: bin ``k`` is ``(e_k, e_{k+1}]``, the first bin also holds ``e_0``.

    Values below the first edge go to the first bin and values above the last to
    the last bin (as scikit-learn's ``KBinsDiscretizer`` does).
    """
    inner = edges[1:-1]
    return np.searchsorted(inner, values, side="left").astype(np.intp)


# ----------------------------------------------------------------- schema
class Schema:
    """The fitted data boundary: variables, their states, bin edges and missing markers.

    A schema is learned once (:meth:`from_data`) and applied to every input
    (:meth:`encode`), so that every file, partition and ``transform`` is encoded
    alike.  It serialises to JSON (:meth:`to_json`, :meth:`read_json`) and travels
    inside BIF files written by :func:`bnfisher.write_bif`.

    Parameters
    ----------
    states : mapping
        ``{variable: sequence of state labels}``, in variable order.
    bin_edges : mapping, optional
        ``{variable: increasing edges}`` for numeric columns that are binned; the
        states of such a variable must be its bin labels (``"lo~hi"``).
    na_values : sequence, optional
        Values that mean "missing" (besides NaN, None and ``pd.NA``), e.g. ``"?"``.
    hidden : sequence, optional
        Hidden variables: never in the data; when encoding with ``missing="allow"``
        they are missing in every row (and marginalized by the kernel).

    Attributes
    ----------
    variables : tuple
        Variable names in order.
    states : mapping
        Read-only ``{variable: tuple of labels}``.
    bin_edges : mapping
        Read-only ``{variable: tuple of float edges}`` of the binned variables.
    na_values : tuple
    cardinalities : ndarray of int

    Raises
    ------
    SchemaError
        Empty or duplicated states, or bin edges that do not match the states.

    Examples
    --------
    >>> import pandas as pd
    >>> a = pd.DataFrame({"x": [0.1, 0.4, 0.35], "c": ["u", "v", "u"]})
    >>> b = pd.DataFrame({"x": [0.8, 0.2], "c": ["v", "v"]})
    >>> schema = Schema.from_data(a, b, bins=2)     # learned jointly from both tables
    >>> schema.states["x"], schema.states["c"]
    (('0.1~0.35', '0.35~0.8'), ('u', 'v'))
    >>> schema.encode(b).codes.tolist()
    [[1, 1], [0, 1]]
    >>> Schema.from_json(schema.to_json()) == schema
    True
    """

    def __init__(self, states: Mapping, *, bin_edges: Mapping | None = None, na_values: Sequence = (),
                 hidden: Sequence = ()):
        if not isinstance(states, Mapping):
            raise OptionTypeError(f"`states` must be a mapping of variable -> labels; got {type(states).__name__}.")
        clean = {}
        for v, labels in states.items():
            if isinstance(labels, str):
                raise OptionTypeError(f"states[{v!r}] must be a sequence of labels, not the string {labels!r}.")
            labels = tuple(_python_scalar(label) for label in labels)
            if not labels:
                raise SchemaError(f"Variable {v!r} has no states (is the data empty?).")
            if len(set(labels)) != len(labels):
                raise SchemaError(f"Variable {v!r} has duplicate state labels: {labels}.")
            clean[v] = labels
        edges = {}
        for v, values in (bin_edges or {}).items():
            if v not in clean:
                raise SchemaError(f"`bin_edges` names {v!r}, which is not a variable of the schema.")
            values = tuple(float(e) for e in values)
            if len(values) != len(clean[v]) + 1 or any(b < a for a, b in zip(values, values[1:])):
                raise SchemaError(f"Variable {v!r}: {len(values)} bin edges do not fit its {len(clean[v])} states "
                                  "(need one more edge than states, increasing).")
            edges[v] = values
        self._states = clean
        self._bin_edges = edges
        self._variables = tuple(clean)
        self._na_values = tuple(na_values or ())
        self._hidden = tuple(v for v in self._variables if v in set(hidden or ()))
        unknown = [v for v in (hidden or ()) if v not in clean]
        if unknown:
            raise SchemaError(f"`hidden` names {unknown}, which are not variables of the schema.")

    # ------------------------------------------------------------ learning
    @classmethod
    def from_data(cls, *data, bins: int | None = None, strategy: str = "quantile", columns: Sequence | None = None,
                  na_values: Sequence = (), variables: Sequence | None = None, missing: str = "error") -> Schema:
        """Learn a schema from one or more DataFrames, jointly.

        States and bin edges come from the union of all the tables, so tables
        that are compared are encoded and binned alike.

        Parameters
        ----------
        *data : DataFrame
            One or more tables with the same columns (extra columns of later tables
            are ignored).
        bins : int, optional
            Bin numeric columns into at most this many bins (quantile bins by
            default, as in the paper).  Without it, a float column is an error.
        strategy : {"quantile", "uniform"}, default="quantile"
        columns : sequence, optional
            Which numeric columns to bin.  Default: every float column and every
            integer column with more than ``bins`` distinct values.
        na_values : sequence, optional
            Markers of missing values besides NaN/None (e.g. ``"?"``).
        variables : sequence, optional
            Which columns become variables, in order (default: all columns of the
            first table).
        missing : {"error", "allow"}, default="error"
            ``"allow"``: states and bin edges come from the observed values; missing
            cells are left for :meth:`encode` with ``missing="allow"``.

        Returns
        -------
        Schema

        Raises
        ------
        DataError
            Missing values, an absent column, a float column without ``bins``,
            non-finite values in a column to bin, mixed label types.
        """
        from ._validation import check_option, check_positive_int

        check_option(missing, "missing", ("error", "allow"))
        if not data:
            raise OptionTypeError("Schema.from_data needs at least one DataFrame.")
        for position, frame in enumerate(data):
            if not isinstance(frame, pd.DataFrame):
                raise OptionTypeError(f"Schema.from_data takes DataFrames; argument {position} is a "
                                      f"{type(frame).__name__}.")
        na_values = tuple(na_values or ())
        variables = tuple(data[0].columns) if variables is None else tuple(variables)
        if len(set(variables)) != len(variables):
            raise DataError(f"Duplicate column names: {sorted({str(v) for v in variables if variables.count(v) > 1})}.")
        for position, frame in enumerate(data):
            absent = [v for v in variables if v not in frame.columns]
            if absent:
                raise DataError(f"Table {position} lacks column(s) {absent} (it has {list(frame.columns)}).")
        union = {v: pd.concat([frame[v] for frame in data], ignore_index=True) if len(data) > 1 else data[0][v]
                 for v in variables}
        to_bin: list = []
        if bins is not None:
            bins = check_positive_int(bins, "bins", minimum=2)
            check_option(strategy, "strategy", ("quantile", "uniform"))
            if columns is None:
                to_bin = [v for v in variables if _is_numeric(union[v])
                          and (pd.api.types.is_float_dtype(union[v].dtype) or union[v].nunique() > bins)]
            else:
                for v in columns:
                    if v not in variables:
                        raise DataError(f"Column {v!r} passed in `columns` is not in the data.")
                    if not _is_numeric(union[v]):
                        raise DataError(f"Column {v!r} is not numeric ({union[v].dtype}); only numeric columns "
                                        "can be binned.")
                to_bin = list(columns)
        elif columns is not None:
            raise OptionTypeError("`columns` selects columns to bin; pass `bins` too.")
        states, edges = {}, {}
        for v in variables:
            column = union[v]
            if missing == "allow":
                column = column[~_missing_mask(column, na_values)]
                if len(column) == 0:
                    raise DataError(f"Column {v!r} has no observed value; its states cannot be learned. Declare them "
                                    "(a categorical column, or Schema(states)) or drop the column.")
            if v in to_bin:
                _check_no_missing(column, v, na_values)
                edges[v] = _bin_edges(column.to_numpy(dtype=np.float64), bins, strategy, v)
                states[v] = _interval_labels(edges[v])
            else:
                states[v] = _infer_column_states(column, v, na_values)
        return cls(states, bin_edges=edges, na_values=na_values)

    @classmethod
    def from_codes(cls, codes: np.ndarray, variables: Sequence | None = None) -> Schema:
        """Return a schema of an array of integer codes: states ``0 .. max`` of each column.

        Parameters
        ----------
        codes : array-like of int, shape (n_rows, n_variables)
        variables : sequence, optional
            Names (default ``X0, X1, ...``).

        Returns
        -------
        Schema
        """
        array = _as_code_array(codes)
        variables = tuple(variables) if variables is not None else tuple(f"X{i}" for i in range(array.shape[1]))
        if len(variables) != array.shape[1]:
            raise DataError(f"The array has {array.shape[1]} columns but {len(variables)} variables are named.")
        highest = array.max(axis=0) if array.shape[0] else np.zeros(array.shape[1], dtype=np.intp)
        _check_nonnegative(array, variables)
        return cls({v: tuple(range(int(h) + 1)) for v, h in zip(variables, highest)})

    # ---------------------------------------------------------- properties
    @property
    def variables(self) -> tuple:
        """Variable names in order."""
        return self._variables

    @property
    def states(self) -> Mapping:
        """Read-only ``{variable: tuple of state labels}``."""
        return MappingProxyType(self._states)

    @property
    def bin_edges(self) -> Mapping:
        """Read-only ``{variable: tuple of bin edges}`` of the binned numeric variables."""
        return MappingProxyType(self._bin_edges)

    @property
    def na_values(self) -> tuple:
        """Markers of missing values besides NaN/None/``pd.NA``."""
        return self._na_values

    @property
    def hidden(self) -> tuple:
        """Hidden variables (never observed)."""
        return self._hidden

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of states of each variable, in ``variables`` order."""
        return np.array([len(self._states[v]) for v in self._variables], dtype=np.intp)

    def select(self, variables: Sequence) -> Schema:
        """Return the schema of ``variables`` only, in that order.

        Raises
        ------
        SchemaError
            When a variable is not in the schema.

        Parameters
        ----------
        variables : sequence

        Returns
        -------
        Schema
        """
        absent = [v for v in variables if v not in self._states]
        if absent:
            raise SchemaError(f"Variable(s) {absent} are not in the schema (it has {list(self._variables)}).")
        return Schema({v: self._states[v] for v in variables},
                      bin_edges={v: self._bin_edges[v] for v in variables if v in self._bin_edges},
                      na_values=self._na_values, hidden=[v for v in self._hidden if v in variables])

    def __eq__(self, other) -> bool:
        return (isinstance(other, Schema) and self._variables == other._variables and self._states == other._states
                and self._bin_edges == other._bin_edges and self._na_values == other._na_values
                and self._hidden == other._hidden)

    def __hash__(self) -> int:
        return hash((self._variables, tuple(self._states.values())))

    def __repr__(self) -> str:
        binned = f", {len(self._bin_edges)} binned" if self._bin_edges else ""
        return f"Schema({len(self._variables)} variables{binned}, {int(self.cardinalities.sum())} states)"

    # ------------------------------------------------------------ applying
    def encode(self, data, *, variables: Sequence | None = None, missing: str = "error",
               handle_unknown: str = "error") -> EncodedData:
        """Encode ``data`` with this schema's states and bin edges.

        Parameters
        ----------
        data : DataFrame, ndarray of int or EncodedData
            A DataFrame holds labels (numeric values for binned variables, or their
            bin labels); extra columns are ignored.  An integer array holds codes,
            its columns in the order of ``variables``.
        variables : sequence, optional
            Which variables to encode, in order (default: the schema's).
        missing : {"error", "allow"}, default="error"
            ``"allow"``: NaN, None, ``pd.NA`` and the schema's ``na_values`` become the
            code -1 (for the marginalized kernel, EM and queries); in an array, -1
            means missing.  ``"error"``: they raise.
        handle_unknown : {"error", "marginalize"}, default="error"
            ``"marginalize"`` (needs ``missing="allow"``): a value that is not a state
            becomes missing (-1) too, instead of raising.

        Returns
        -------
        EncodedData

        Raises
        ------
        SchemaError
            An absent column, a value that is not a state (naming column, value
            and row), a code out of range, missing values.
        """
        from ._validation import check_option

        check_option(missing, "missing", ("error", "allow"))
        check_option(handle_unknown, "handle_unknown", ("error", "marginalize"))
        if handle_unknown == "marginalize" and missing != "allow":
            raise OptionError("handle_unknown='marginalize' turns unknown values into missing ones: it needs "
                              "missing='allow'.")
        variables = self._variables if variables is None else tuple(variables)
        schema = self if variables == self._variables else self.select(variables)
        if not isinstance(data, EncodedData) and isinstance(getattr(data, "encoded", None), EncodedData):
            data = data.encoded  # an in-memory counts provider
        if isinstance(data, EncodedData):
            absent = [v for v in variables if v not in data.variables]
            if absent:
                raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                                  f"(it has {list(data.variables)}).")
            for v in variables:
                if tuple(data.states[v]) != schema.states[v]:
                    raise SchemaError(f"Column {v!r} is encoded with states {data.states[v]} but the model has "
                                      f"{schema.states[v]}; encode the data with the model's schema.")
            if missing == "error" and data.n_rows and data.codes.min() < 0:
                row, column = (int(k[0]) for k in np.nonzero(data.codes < 0))
                raise DataError(f"Column {data.variables[column]!r} has missing values (first at row {row}); use "
                                "a method that marginalizes them (the Fisher kernel, EM) or drop those rows.")
            return data if data.variables == variables else data.select(variables)
        if isinstance(data, pd.Series):
            data = data.to_frame()
        # Same class: the selected schema's own private encoders.
        if isinstance(data, pd.DataFrame):
            return schema._encode_frame(data, missing, handle_unknown)  # noqa: SLF001
        return schema._encode_array(data, missing)  # noqa: SLF001

    def _encode_frame(self, data: pd.DataFrame, missing: str = "error", handle_unknown: str = "error") -> EncodedData:
        if data.columns.duplicated().any():
            raise DataError(f"The data has duplicate column names: {list(data.columns[data.columns.duplicated()])}.")
        absent = [v for v in self._variables
                  if v not in data.columns and not (v in self._hidden and missing == "allow")]
        if absent:
            hint = " (hidden variables are only marginalized with missing='allow')" if set(absent) & set(
                self._hidden) else ""
            raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                              f"(it has {list(data.columns)}){hint}.")
        largest = max((len(s) for s in self._states.values()), default=1)
        # The smallest signed integer type that holds every code (1 byte up to 127 states): an eighth
        # of the memory, and of the page faults, of intp for large blocks.
        dtype = next(t for t in (np.int8, np.int16, np.int32, np.int64) if largest - 1 <= np.iinfo(t).max)
        codes = np.empty((len(data), len(self._variables)), dtype=dtype, order="F")
        for i, v in enumerate(self._variables):
            if v not in data.columns:  # a hidden variable: missing in every row
                codes[:, i] = -1
                continue
            codes[:, i] = self._encode_column(data[v], v, missing, handle_unknown)
        return EncodedData(codes, self._variables, dict(self._states), schema=self)

    def _encode_column(self, series: pd.Series, column, missing: str = "error",
                       handle_unknown: str = "error") -> np.ndarray:
        states = self._states[column]
        if missing == "error":
            _check_no_missing(series, column, self._na_values)
            absent = None
        else:
            absent = _missing_mask(series, self._na_values)
            if absent.any():
                codes = np.full(len(series), -1, dtype=np.intp)
                present = ~absent
                if present.any():
                    codes[present] = self._encode_column(series[present], column, "error", handle_unknown)
                return codes
        if column in self._bin_edges:
            values = series if _is_numeric(series) else _as_numbers(series)
            if values is not None:
                return _bin_codes(values.to_numpy(dtype=np.float64), np.asarray(self._bin_edges[column]))
        codes = _lookup_codes(series, states)
        unknown = codes < 0
        if unknown.any():
            # A CSV gives "1" where the model holds 1 (or the reverse): match the rest by their text.
            texts = [str(s) for s in states]
            if len(set(texts)) == len(texts):
                by_text = pd.Index(texts, dtype=object).get_indexer(pd.Index(series[unknown].astype(str), dtype=object))
                codes[unknown] = by_text
                unknown = codes < 0
        if unknown.any() and handle_unknown == "error":
            position = int(np.argmax(unknown))
            bad = series.iloc[position]
            shown = ", ".join(repr(s) for s in states[:10]) + (", ..." if len(states) > 10 else "")
            raise SchemaError(
                f"Column {column!r} has value {bad!r} (row {position}) that is not one of its {len(states)} "
                f"states ({shown}); the model was fitted on data without it: refit on data that contains it, or "
                "pass handle_unknown='marginalize' to treat such values as missing."
            )
        return codes

    def _encode_array(self, data, missing: str = "error") -> EncodedData:
        array = _as_code_array(data)
        if len(self._variables) != array.shape[1]:
            raise SchemaError(
                f"The array has {array.shape[1]} columns but the model has {len(self._variables)} variables "
                f"({list(self._variables)}); an array of codes has one column per variable, in that order."
            )
        _check_nonnegative(array if missing == "error" else np.where(array == -1, 0, array), self._variables)
        if array.shape[0]:
            highest = array.max(axis=0)
            cards = self.cardinalities
            over = np.flatnonzero(highest >= cards)
            if over.size:
                i = int(over[0])
                row = int(np.argmax(array[:, i] >= cards[i]))
                raise SchemaError(
                    f"Column {i} ({self._variables[i]!r}) has code {int(highest[i])} (row {row}) but the variable "
                    f"has only {int(cards[i])} states (codes 0..{int(cards[i]) - 1})."
                )
        # Signed integer codes keep their (compact) dtype: 10^7 rows of int8 codes take 1/8 of the memory of intp.
        dtype = array.dtype if array.dtype.kind == "i" else np.intp
        return EncodedData(np.asfortranarray(array, dtype=dtype), self._variables, dict(self._states), schema=self)

    def discretize(self, data: pd.DataFrame) -> pd.DataFrame:
        """Return a copy of ``data`` in which the binned numeric columns hold their bin labels.

        Binned columns become ordered categoricals (bins in increasing order);
        every other column is left as it is.  ``data`` is not modified.

        Parameters
        ----------
        data : DataFrame

        Returns
        -------
        DataFrame
        """
        if not isinstance(data, pd.DataFrame):
            raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
        out = data.copy()
        for v, edges in self._bin_edges.items():
            if v in out.columns and _is_numeric(out[v]):
                _check_no_missing(out[v], v, self._na_values)
                codes = _bin_codes(out[v].to_numpy(dtype=np.float64), np.asarray(edges))
                out[v] = pd.Categorical.from_codes(codes, categories=list(self._states[v]), ordered=True)
        return out

    # -------------------------------------------------------- serialising
    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict (labels keep their int/float/bool/str type).

        Returns
        -------
        dict
        """
        return {
            "format": "bnfisher-schema",
            "version": 1,
            "variables": [_json_label(v) for v in self._variables],
            "states": [[_json_label(s) for s in self._states[v]] for v in self._variables],
            "bin_edges": {str(v): list(e) for v, e in self._bin_edges.items()},
            "na_values": [_json_label(v) for v in self._na_values],
            "hidden": [_json_label(v) for v in self._hidden],
        }

    @classmethod
    def from_dict(cls, content: Mapping) -> Schema:
        """Return the schema written by :meth:`to_dict`.

        Raises
        ------
        SchemaError
            When ``content`` is not such a dict.

        Parameters
        ----------
        content : mapping

        Returns
        -------
        Schema
        """
        try:
            if content.get("format") != "bnfisher-schema":
                raise KeyError("format")
            variables = list(content["variables"])
            states = {v: tuple(s) for v, s in zip(variables, content["states"])}
            if len(states) != len(variables):
                raise KeyError("states")
            by_text = {str(v): v for v in variables}
            edges = {by_text[k]: tuple(e) for k, e in content.get("bin_edges", {}).items()}
            return cls(states, bin_edges=edges, na_values=tuple(content.get("na_values", ())),
                       hidden=[by_text[str(v)] for v in content.get("hidden", ())])
        except (KeyError, TypeError, AttributeError) as exc:
            raise SchemaError(f"Not a bnfisher schema (bad or absent field {exc}).") from None

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """Return the schema as JSON text; also written to ``path`` when given (atomically).

        Parameters
        ----------
        path : str or path-like, optional

        Returns
        -------
        str
        """
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            from .io import write_text

            write_text(path, text)
        return text

    @classmethod
    def from_json(cls, text: str) -> Schema:
        """Return the schema from JSON text (see :meth:`read_json` for a file).

        Parameters
        ----------
        text : str

        Returns
        -------
        Schema
        """
        try:
            content = json.loads(text)
        except (json.JSONDecodeError, TypeError) as exc:
            raise SchemaError(f"Not a JSON schema: {exc}.") from None
        return cls.from_dict(content)

    @classmethod
    def read_json(cls, path: str | os.PathLike) -> Schema:
        """Read a schema written by :meth:`to_json`.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        Schema
        """
        from .io import read_text

        return cls.from_json(read_text(path))


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
        category_codes = pd.Index(list(states), dtype=object).get_indexer(
            pd.Index(series.cat.categories.astype(object), dtype=object))
        return np.append(category_codes, -1)[series.cat.codes.to_numpy()].astype(np.intp)
    if _integer_states(series, states):
        # Integer column and integer states: a lookup table over the value range.
        values = series.to_numpy()
        low = min(int(values.min()), min(states))
        table = np.full(max(int(values.max()), max(states)) - low + 1, -1, dtype=np.intp)
        table[np.asarray(states, dtype=np.int64) - low] = np.arange(len(states))
        return table[values - low] if low else table[values]
    # One hash lookup per row; -1 marks values that are not states.
    return pd.Index(list(states), dtype=object).get_indexer(pd.Index(series, dtype=object)).astype(np.intp)


def _integer_states(series: pd.Series, states: tuple) -> bool:
    """Return True when a lookup table can encode the column: integers in both, a modest range."""
    if not pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype) or not len(series):
        return False
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_)) for s in states):
        return False
    span = max(int(series.max()), max(states)) - min(int(series.min()), min(states))
    return span <= 10 * (len(states) + len(series))


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


# ----------------------------------------------------------- encoded data
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
    schema : Schema
        The schema the data was encoded with (built from ``states`` when not given).
    """

    codes: np.ndarray
    variables: tuple
    states: dict
    schema: Schema = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.schema is None:
            object.__setattr__(self, "schema", Schema({v: self.states[v] for v in self.variables}))

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of states of each variable, in column order."""
        return np.array([len(self.states[v]) for v in self.variables], dtype=np.intp)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return self.codes.shape[0]

    def take(self, rows) -> EncodedData:
        """Return the rows ``rows`` (positions or a boolean mask) as a new EncodedData with the same schema.

        Parameters
        ----------
        rows : array-like of int or bool

        Returns
        -------
        EncodedData
        """
        return EncodedData(np.asfortranarray(self.codes[rows]), self.variables, self.states, schema=self.schema)

    def select(self, variables: Sequence) -> EncodedData:
        """Return the columns ``variables`` (in that order) as a new EncodedData.

        Parameters
        ----------
        variables : sequence

        Returns
        -------
        EncodedData
        """
        index = {v: i for i, v in enumerate(self.variables)}
        missing = [v for v in variables if v not in index]
        if missing:
            raise SchemaError(f"Column(s) {missing} required by the model are absent from the data.")
        columns = [index[v] for v in variables]
        return EncodedData(np.asfortranarray(self.codes[:, columns]), tuple(variables),
                           {v: self.states[v] for v in variables}, schema=self.schema.select(variables))


# ------------------------------------------------------------- functions
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
    DataError
        For missing values or a floating-point column (use :func:`discretize`).

    Examples
    --------
    >>> import pandas as pd
    >>> infer_states(pd.DataFrame({"a": ["y", "x", "y"], "b": [2, 1, 2]}))
    {'a': ('x', 'y'), 'b': (1, 2)}
    """
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    return dict(Schema.from_data(data).states)


def encode(data, states: Mapping | None = None, variables: Sequence | None = None) -> EncodedData:
    """Encode categorical data as integer codes.

    Parameters
    ----------
    data : DataFrame or array-like of int of shape (n_rows, n_variables)
        A DataFrame holds state *labels* (object, string, category, bool or small
        integer columns); extra columns are ignored when ``variables`` is given.
        A NumPy array holds *codes* already: ``data[r, i]`` in ``[0, r_i)``, with
        columns in the order of ``variables``.
    states : mapping or Schema, optional
        ``{variable: sequence of labels}`` or a fitted :class:`Schema`.  When given
        (e.g. a fitted model's), values are matched against these labels and
        unknown values raise.  When omitted they are inferred
        (:meth:`Schema.from_data`; for arrays, ``range(max + 1)``).
    variables : sequence of str, optional
        Which columns to encode, in order.  Defaults to the DataFrame's columns, the
        keys of ``states``, or ``X0 .. X{n-1}`` for arrays.

    Returns
    -------
    EncodedData

    Raises
    ------
    DataError
        Naming the column and value: missing values, a value outside the states, a
        required column that is absent, a float column, or codes out of range.

    Examples
    --------
    >>> import pandas as pd
    >>> enc = encode(pd.DataFrame({"a": ["y", "x"], "b": [True, False]}))
    >>> enc.codes.tolist(), enc.states
    ([[1, 1], [0, 0]], {'a': ('x', 'y'), 'b': (False, True)})
    """
    if isinstance(data, EncodedData) and states is None:
        return data if variables is None or tuple(variables) == data.variables else data.select(variables)
    schema = _resolve_schema(data, states, variables)
    return schema.encode(data, variables=variables)


def _resolve_schema(data, states, variables) -> Schema:
    """Return the schema ``encode`` applies: the given one (or states), completed by inference for the rest."""
    if isinstance(states, Schema):
        return states
    if isinstance(data, pd.Series):
        data = data.to_frame()
    if isinstance(data, pd.DataFrame):
        names = tuple(variables) if variables is not None else (tuple(states) if states is not None
                                                                  else tuple(data.columns))
        known = {v: states[v] for v in names if states is not None and v in states}
        rest = [v for v in names if v not in known]
        absent = [v for v in rest if v not in data.columns]
        if absent:
            raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                              f"(it has {list(data.columns)}).")
        inferred = Schema.from_data(data, variables=rest).states if rest else {}
        return Schema({v: known[v] if v in known else inferred[v] for v in names})
    array = _as_code_array(data)
    names = tuple(variables) if variables is not None else (tuple(states) if states is not None
                                                             else tuple(f"X{i}" for i in range(array.shape[1])))
    if len(names) != array.shape[1]:
        raise SchemaError(f"The array has {array.shape[1]} columns but {len(names)} variables are expected "
                          f"({names}).")
    inferred = Schema.from_codes(array, names).states
    return Schema({v: tuple(states[v]) if states is not None and v in states else inferred[v] for v in names})


def discretize(data: pd.DataFrame, bins: int = 4, strategy: str = "quantile",
               columns: Sequence | None = None) -> pd.DataFrame:
    """Bin numeric columns into at most ``bins`` ordered categories.

    The paper bins continuous features into at most 4 bins before learning a
    network ([1]_, Sec. 7.1.1).  bnfisher never bins silently: call this first, or
    learn a :class:`Schema` with ``bins`` to keep the edges and apply them to other
    tables too.

    Parameters
    ----------
    data : DataFrame
        The data; it is not modified.
    bins : int, default=4
        Maximum number of bins per column.  Quantile bins that coincide (ties) are
        merged; when that leaves fewer bins than distinct values allow (e.g. a
        zero-inflated column), the quantiles of the distinct values are used.
    strategy : {"quantile", "uniform"}, default="quantile"
        Equal-frequency or equal-width bins.
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
    DataError
        For a non-numeric or absent column, non-finite values, ``bins < 2`` or an
        unknown strategy.

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
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    if columns is None:
        numeric = [c for c in data.columns if _is_numeric(data[c])]
    else:
        numeric = list(columns)
    schema = Schema.from_data(data[numeric], bins=bins, strategy=strategy, columns=columns) if numeric else None
    if schema is None:
        from ._validation import check_option, check_positive_int

        check_positive_int(bins, "bins", minimum=2)
        check_option(strategy, "strategy", ("quantile", "uniform"))
        return data.copy()
    return schema.discretize(data)
