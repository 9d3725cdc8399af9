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

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_positive_int
from bnfisher.data.binning import interval_labels, make_bin_edges
from bnfisher.data.io import read_text
from bnfisher.data.labels import (
    _as_code_array,
    _check_no_missing,
    _check_nonnegative,
    _infer_column_states,
    as_markers,
    bin_frame,
    check_column_names,
    check_frames,
    check_markers_are_no_states,
    check_same_columns,
    checked_edges,
    columns_to_bin,
    encode_column,
    observed_cells,
    schema_labels,
    united_columns,
)
from bnfisher.data.schema_json import json_content, json_text, schema_arguments, schema_to_dict
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError

__all__ = ['Schema', 'EncodedData']


#: Largest code an integer array may hold when the states are inferred from it.
MAX_CODE = 1_000_000


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
    (('0.1~0.2', '0.2~0.8'), ('u', 'v'))
    >>> schema.encode(b).codes.tolist()
    [[1, 1], [0, 1]]
    >>> Schema.from_json(schema.to_json()) == schema
    True
    """

    def __init__(self, states: Mapping, *, bin_edges: Mapping | None = None, na_values: Sequence = (),
                 hidden: Sequence = ()):
        if not isinstance(states, Mapping):
            raise OptionTypeError(f"`states` must be a mapping of variable -> labels; got {type(states).__name__}.")
        clean = {v: schema_labels(v, labels) for v, labels in states.items()}
        edges = checked_edges(clean, bin_edges or {})
        self._states = clean
        self._bin_edges = edges
        self._variables = tuple(clean)
        self._na_values = as_markers(na_values)
        check_markers_are_no_states(clean, edges, self._na_values)
        self._hidden = tuple(v for v in self._variables if v in set(hidden or ()))
        unknown = [v for v in (hidden or ()) if v not in clean]
        if unknown:
            raise SchemaError(f"`hidden` names {unknown}, which are not variables of the schema.")

    # ------------------------------------------------------------ learning
    @classmethod
    def from_data(cls, *data, bins: int | None = None, strategy: str = "quantile", columns: Sequence | None = None,
                  categorical: Sequence | None = None,
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
            ``"quantile"``: equal-frequency bins over the rows, a block of tied
            values never split and no near-empty bin at the edges
            (:func:`bnfisher.data.binning.quantile_cuts`); ``"uniform"``: equal width.
        columns : sequence, optional
            Which numeric columns to bin.  Default, the rule: every float column and
            every integer column with more than ``max(bins, 30)`` distinct values
            (:data:`~bnfisher.data.labels.MANY_INTEGER_VALUES`); an integer column with
            fewer values is a nominal variable's codes.  Naming such a column here bins
            it, with a DataWarning.
        categorical : sequence, optional
            Columns never binned (their values are labels, whatever their type).
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
        check_option(missing, "missing", ("error", "allow"))
        check_frames(data)
        na_values = tuple(na_values or ())
        variables = tuple(data[0].columns) if variables is None else tuple(variables)
        check_column_names(variables)
        if len(set(variables)) != len(variables):
            raise DataError(f"Duplicate column names: {sorted({str(v) for v in variables if variables.count(v) > 1})}.")
        check_same_columns(data, variables)
        union = united_columns(data, variables)
        to_bin: list = []
        if bins is not None:
            bins = check_positive_int(bins, "bins", minimum=2)
            check_option(strategy, "strategy", ("quantile", "uniform"))
            to_bin = columns_to_bin(union, variables, bins, columns, categorical)
        elif columns is not None:
            raise OptionTypeError("`columns` selects columns to bin; pass `bins` too.")
        states, edges = {}, {}
        for v in variables:
            column = observed_cells(union[v], v, na_values) if missing == "allow" else union[v]
            if v in to_bin:
                _check_no_missing(column, v, na_values)
                edges[v] = make_bin_edges(column.to_numpy(dtype=np.float64), bins, strategy, v)
                states[v] = interval_labels(edges[v])
            else:
                states[v] = _infer_column_states(column, v, na_values)
        return cls(states, bin_edges=edges, na_values=na_values)

    @classmethod
    def from_codes(cls, codes: np.ndarray, variables: Sequence | None = None) -> Schema:
        """Return a schema of an array of integer codes: states ``0`` to ``max`` of each column.

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
        too_many = np.flatnonzero(highest >= MAX_CODE)
        if too_many.size:
            i = int(too_many[0])
            raise DataError(f"Column {i} ({variables[i]!r}) has code {int(highest[i])}; codes number the states "
                            f"0..r-1, so that would be more than {MAX_CODE} states. Pass a DataFrame of labels, or "
                            "bin the column.")
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

    @property
    def code_dtype(self) -> type:
        """The smallest signed integer type that holds every code (1 byte up to 127 states).

        An eighth of the memory, and of the page faults, of ``intp`` for large blocks.
        """
        largest = max((len(s) for s in self._states.values()), default=1)
        return next(t for t in (np.int8, np.int16, np.int32, np.int64) if largest - 1 <= np.iinfo(t).max)

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
            _check_encoded(data, schema, missing)
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
            if all(str(v) in set(map(str, data.columns)) for v in absent):  # e.g. 0 read back from BIF as '0'
                hint = ("; the data names them as other types (the model's names are text, as a BIF file stores "
                        "them): rename the columns, e.g. data.columns = data.columns.astype(str)")
            raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                              f"(it has {list(data.columns)}){hint}.")
        codes = np.empty((len(data), len(self._variables)), dtype=self.code_dtype, order="F")
        for i, v in enumerate(self._variables):
            if v not in data.columns:  # a hidden variable: missing in every row
                codes[:, i] = -1
                continue
            codes[:, i] = encode_column(data[v], v, self._states[v], bin_edges=self._bin_edges.get(v),
                                        na_values=self._na_values, missing=missing, handle_unknown=handle_unknown)
        return EncodedData(codes, self._variables, dict(self._states), schema=self)

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
        return bin_frame(data, self._bin_edges, self._states, self._na_values)

    # -------------------------------------------------------- serialising
    def to_dict(self) -> dict:
        """Return a JSON-serialisable dict (labels keep their int/float/bool/str type).

        Returns
        -------
        dict
        """
        return schema_to_dict(self)

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
        return cls(**schema_arguments(content))

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """Return the schema as JSON text; also written to ``path`` when given (atomically).

        Parameters
        ----------
        path : str or path-like, optional

        Returns
        -------
        str
        """
        return json_text(self.to_dict(), path)

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
        return cls.from_dict(json_content(text))

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
        return cls.from_json(read_text(path))


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

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> encoded = bf.Schema({"a": ("x", "y"), "b": ("u", "v", "w")}).encode(np.array([[0, 2], [1, 0]]))
    >>> encoded.codes.shape, encoded.variables, encoded.cardinalities.tolist()
    ((2, 2), ('a', 'b'), [2, 3])
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


def _check_encoded(data: EncodedData, schema: Schema, missing: str) -> None:
    """Refuse encoded data that lacks a variable of ``schema``, holds other states, or missing cells not allowed."""
    absent = [v for v in schema.variables if v not in data.variables]
    if absent:
        raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                          f"(it has {list(data.variables)}).")
    for v in schema.variables:
        if tuple(data.states[v]) != schema.states[v]:
            raise SchemaError(f"Column {v!r} is encoded with states {data.states[v]} but the model has "
                              f"{schema.states[v]}; encode the data with the model's schema.")
    if missing == "error" and data.n_rows and data.codes.min() < 0:
        row, column = (int(k[0]) for k in np.nonzero(data.codes < 0))
        raise DataError(f"Column {data.variables[column]!r} has missing values (first at row {row}); use "
                        "a method that marginalizes them (the Fisher kernel, EM) or drop those rows.")
