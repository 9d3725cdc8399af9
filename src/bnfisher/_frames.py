"""Input handling shared by the scikit-learn estimators (private module)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__: list[str] = []


def validate_frame(estimator, X, fitting: bool, reserved: tuple = ()) -> pd.DataFrame:
    """Turn ``X`` into a DataFrame of labels and check it against what ``fit`` saw.

    A DataFrame keeps its columns (``feature_names_in_`` is recorded in ``fit``);
    an array goes through scikit-learn's ``check_array`` (2-D, finite, not sparse,
    not complex) and every value becomes a label.  Floating-point columns are
    used as labels too (one state per distinct value).
    """
    if isinstance(X, pd.DataFrame):
        frame = X
        if fitting:
            estimator.feature_names_in_ = np.asarray(X.columns, dtype=object)
        elif hasattr(estimator, "feature_names_in_") and list(X.columns) != list(estimator.feature_names_in_):
            missing = [c for c in estimator.feature_names_in_ if c not in X.columns]
            if missing:
                raise ValueError(f"Columns {missing} seen during fit are absent from X.")
            frame = X[list(estimator.feature_names_in_)]
    else:
        from sklearn.utils.validation import check_array

        array = check_array(X, dtype=None, ensure_min_samples=1 if fitting else 0)
        frame = pd.DataFrame(array.astype(object), columns=[f"x{i}" for i in range(array.shape[1])])
        if fitting and hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
    name = type(estimator).__name__
    if fitting:
        estimator.n_features_in_ = frame.shape[1]
    elif frame.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {frame.shape[1]} features, but {name} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    for column in reserved:
        if column in frame.columns:
            raise ValueError(f"A feature may not be named {column!r}.")
    floats = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c].dtype)]
    if floats:
        frame = frame.astype({c: object for c in floats})
    return frame
