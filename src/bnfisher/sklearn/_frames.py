"""Input handling shared by the scikit-learn estimators (private module).

The caller's object is never modified: every path returns a new DataFrame (or a
view pandas copies on write).
"""

from __future__ import annotations

import warnings

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.data.guardrails import unknown_values
from bnfisher.data.labels import check_column_names
from bnfisher.exceptions import DataError, DataWarning

__all__: list[str] = []


def feature_columns(estimator) -> list:
    """Return the column names the estimator was fitted with: ``feature_names_in_``, or ``x0, x1, ...`` for arrays."""
    if hasattr(estimator, "feature_names_in_"):
        return list(estimator.feature_names_in_)
    return [f"x{i}" for i in range(estimator.n_features_in_)]


def validate_frame(estimator, X, fitting: bool, reserved: tuple = ()) -> pd.DataFrame:
    """Turn ``X`` into a DataFrame of labels whose columns are the ones ``fit`` saw.

    A DataFrame keeps its columns (``feature_names_in_`` is recorded in ``fit``);
    an array goes through scikit-learn's ``check_array`` (2-D, not sparse, not
    complex) and its columns are taken by position.  Floating-point columns are
    used as labels (one state per distinct value).
    """
    from sklearn.utils.validation import check_array

    name = type(estimator).__name__
    frame = _from_frame(X, estimator, fitting, name) if isinstance(X, pd.DataFrame) else \
        _from_array(check_array, X, estimator, fitting, name)
    if fitting:
        estimator.n_features_in_ = frame.shape[1]
    else:
        _check_width(frame.shape[1], estimator, name)
    for column in reserved:
        if column in frame.columns:
            raise DataError(f"A feature may not be named {column!r}.")
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c].dtype)]
    if floats:
        frame = frame.astype({c: object for c in floats})
    return frame


def _from_frame(X: pd.DataFrame, estimator, fitting: bool, name: str) -> pd.DataFrame:
    """Return a DataFrame's columns as fitted (by name; by position when fitted on an array); record them in fit."""
    check_column_names(X.columns)
    if X.columns.has_duplicates:
        twice = sorted({str(c) for c in X.columns[X.columns.duplicated()]})
        raise DataError(f"X has duplicate column names {twice}; give every column its own name.")
    if fitting:
        estimator.feature_names_in_ = np.asarray(X.columns, dtype=object)
        return X
    if hasattr(estimator, "feature_names_in_"):
        missing = [c for c in estimator.feature_names_in_ if c not in X.columns]
        if missing:
            raise DataError(f"Columns {missing} seen during fit are absent from X.")
        return X[list(estimator.feature_names_in_)]
    _check_width(X.shape[1], estimator, name)  # fitted on an array: columns by position, under the names of fit
    return X.set_axis(feature_columns(estimator), axis=1)


def _from_array(check_array, X, estimator, fitting: bool, name: str) -> pd.DataFrame:
    """Return an array as a DataFrame of objects, its columns ``x0, x1, ...`` in fit, else the fitted names."""
    allow_nan = estimator.__sklearn_tags__().input_tags.allow_nan
    array = check_array(X, dtype=None, ensure_min_samples=1 if fitting else 0,
                        ensure_all_finite="allow-nan" if allow_nan else True)
    if fitting:
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        columns = [f"x{i}" for i in range(array.shape[1])]
    else:
        _check_width(array.shape[1], estimator, name)
        columns = feature_columns(estimator)
    return pd.DataFrame(array.astype(object), columns=columns)


def _check_width(width: int, estimator, name: str) -> None:
    if width != estimator.n_features_in_:
        raise DataError(f"X has {width} features, but {name} is expecting {estimator.n_features_in_} features "
                        "as input.")


def warn_unknown(frame: pd.DataFrame, encoded, schema) -> None:
    """Warn (DataWarning) of the values unseen in fit that ``handle_unknown="marginalize"`` coded as missing.

    ``encoded``: ``frame`` encoded with ``schema`` (its columns that ``frame`` lacks, a class the
    estimator marginalizes, are not looked at).
    """
    for message in unknown_values(frame, encoded.codes, encoded.variables, na_values=schema.na_values):
        warnings.warn(message, DataWarning, stacklevel=4)
