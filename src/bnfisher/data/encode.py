"""Module-level conveniences over :class:`~bnfisher.data.Schema`: ``encode``, ``infer_states``, ``discretize``.

Each is one call of a schema method; the schema is the one encoder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_positive_int
from bnfisher.data.labels import _as_code_array, _is_numeric
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import OptionTypeError, SchemaError

__all__ = ['encode', 'infer_states', 'discretize']


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
    given = dict(states) if states is not None else {}
    if isinstance(data, pd.DataFrame):
        return _frame_schema(data, given, _names(variables, states, tuple(data.columns)))
    array = _as_code_array(data)
    names = _names(variables, states, tuple(f"X{i}" for i in range(array.shape[1])))
    if len(names) != array.shape[1]:
        raise SchemaError(f"The array has {array.shape[1]} columns but {len(names)} variables are expected "
                          f"({names}).")
    inferred = Schema.from_codes(array, names).states
    return Schema({v: tuple(given[v]) if v in given else inferred[v] for v in names})


def _names(variables, states, default: tuple) -> tuple:
    """Return the variables: those given, else the states' names, else ``default``."""
    if variables is not None:
        return tuple(variables)
    return tuple(states) if states is not None else default


def _frame_schema(data: pd.DataFrame, given: dict, names: tuple) -> Schema:
    """Return a table's schema: the given states, the others inferred from its columns."""
    rest = [v for v in names if v not in given]
    absent = [v for v in rest if v not in data.columns]
    if absent:
        raise SchemaError(f"Column(s) {absent} required by the model are absent from the data "
                          f"(it has {list(data.columns)}).")
    inferred = Schema.from_data(data, variables=rest).states if rest else {}
    return Schema({v: given[v] if v in given else inferred[v] for v in names})


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
    ['0.1~0.35', '0.35~0.8']
    """
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    if columns is None:
        numeric = [c for c in data.columns if _is_numeric(data[c])]
    else:
        numeric = list(columns)
    schema = Schema.from_data(data[numeric], bins=bins, strategy=strategy, columns=columns) if numeric else None
    if schema is None:
        check_positive_int(bins, "bins", minimum=2)
        check_option(strategy, "strategy", ("quantile", "uniform"))
        return data.copy()
    return schema.discretize(data)
