"""``FisherEmbedding``: the exact Fisher-kernel feature map as a scikit-learn transformer.

A linear model on ``FisherEmbedding().fit_transform(X)`` is a kernel machine with
the Fisher kernel, at linear cost in the number of rows: the feature map is exact
(``Phi Phi^T`` is the Gram matrix of Theorem 1) and sparse (``sum_i r_i`` non-zeros
per row).
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher.bn.structure.learn import learn
from bnfisher.data.providers import as_provider, backend_for
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError
from bnfisher.kernels.fisher import FisherKernel
from bnfisher.sklearn._base import BaseEstimator, TransformerMixin, check_is_fitted, require_sklearn
from bnfisher.sklearn._frames import feature_columns, validate_frame, warn_unknown

__all__ = ["FisherEmbedding"]

#: The column that carries ``y`` when a supervised structure learns with it.
_CLASS = "__class__"


def _numbers_as_numbers(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns that hold only numbers (arrays arrive as objects) as floats, so that ``bins`` can bin them."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if values.dtype == object:
            numbers = pd.to_numeric(values, errors="coerce")
            if bool((numbers.notna() | values.isna()).all()) and numbers.notna().any():
                out[column] = numbers.astype(np.float64)
    return out


class FisherEmbedding(TransformerMixin, BaseEstimator):
    """Fisher-kernel feature map of a Bayesian network learned from categorical data.

    Parameters
    ----------
    structure : str, default="chow-liu"
        Learner passed to :func:`bnfisher.learn` ("chow-liu", "forest", "hc",
        "tan", "kdb", "naive-bayes").
    structure_score : str, default="bic"
        Score for "hc" and "forest" (not ``score``: scikit-learn reserves that name
        for a method).
    pseudocount : float, default=1.0
    normalize : bool, default=False
        Cosine-normalised kernel (unit-length rows).
    information : {"fisher", "identity"}, default="fisher"
    class_variable : str, optional
        Column used as the class by "tan", "kdb" and "naive-bayes" (it must be a
        column of ``X``).
    k : int, default=3
        KDB's feature-parent limit.
    max_parents : int, optional
        Hill climbing's parent limit.
    inference : str, default="auto"
        Engine for the parent marginals.
    random_state : None or int
        Seed of the sampling engine.
    missing : {"em", "available-case", "error"}, default="em"
        Missing values in ``fit`` (see :func:`bnfisher.learn`).  In ``transform``,
        rows with missing values always get their expected embedding (the
        marginalized kernel, paper Sec. 8).
    handle_unknown : {"marginalize", "error"}, default="marginalize"
        A value not seen in ``fit`` (e.g. a rare category that fell in another
        cross-validation fold) is treated as missing, or raises.
    bins : int, optional
        Bin numeric columns into at most this many quantile bins, with edges learned
        in ``fit`` (inside a Pipeline: from the training fold only) and applied in
        ``transform``.

    Attributes
    ----------
    network_ : BayesianNetwork
    kernel_ : FisherKernel
    parent_marginals_ : dict
    n_features_in_ : int
    feature_names_in_ : ndarray
        When ``X`` was a DataFrame.

    Examples
    --------
    >>> X = load("nursery").drop(columns="class")
    >>> embedding = FisherEmbedding().fit(X)
    >>> Phi = embedding.transform(X.iloc[:5])
    >>> Phi.shape[0], Phi.nnz // 5 == sum(len(c) for c in embedding.network_.states.values())
    (5, True)
    """

    def __init__(self, *, structure="chow-liu", structure_score: str = "bic", pseudocount: float = 1.0,
                 normalize: bool = False, information: str = "fisher", class_variable=None, k: int = 3,
                 max_parents=None, inference: str = "auto", random_state=None, missing: str = "em",
                 bins: int | None = None,
                 handle_unknown: str = "marginalize"):
        self.structure = structure
        self.structure_score = structure_score
        self.pseudocount = pseudocount
        self.normalize = normalize
        self.information = information
        self.class_variable = class_variable
        self.k = k
        self.max_parents = max_parents
        self.inference = inference
        self.random_state = random_state
        self.missing = missing
        self.handle_unknown = handle_unknown
        self.bins = bins

    def _options(self) -> dict:
        if self.structure == "hc":
            return {"structure_score": self.structure_score, "max_parents": self.max_parents}
        if self.structure == "forest":
            return {"structure_score": self.structure_score}
        if self.structure in ("tan", "naive-bayes"):
            return {"class_variable": self.class_variable}
        if self.structure == "kdb":
            return {"class_variable": self.class_variable, "k": self.k}
        return {}

    def fit(self, X, y=None):
        """Learn the network and its parent marginals from ``X``.

        Parameters
        ----------
        X : DataFrame, array-like or Dask DataFrame
            Categorical data (a Dask DataFrame: the network is learned from
            distributed count tables).
        y : array-like of shape (n_samples,), optional
            Class labels.  With a supervised structure ("tan", "kdb", "naive-bayes")
            and no ``class_variable``, the network is learned with ``y`` as its class;
            ``transform`` (which never sees labels) then marginalizes the class, so the
            embedding is that of the features under the class-conditional model.

        Returns
        -------
        self
        """
        require_sklearn()
        if backend_for(X) is not None:  # a registered backend's data (Dask): it stays where it lies
            self.n_features_in_ = len(X.columns)
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
            self.network_ = learn(as_provider(X), self.structure, pseudocount=self.pseudocount, **self._options())
            return self._fit_kernel()
        frame = validate_frame(self, X, fitting=True, reserved=(_CLASS,))
        if len(frame) == 0:
            raise DataError("Cannot fit on an empty data set.")
        options = self._options()
        supervised = self.structure in ("tan", "kdb", "naive-bayes") and self.class_variable is None
        if supervised:
            if y is None:
                raise DataError(f"structure={self.structure!r} needs a class: pass y to fit, or class_variable.")
            labels = np.asarray(y, dtype=object).ravel()
            if len(labels) != len(frame):
                raise DataError(f"`y` must have one label per row of X ({len(frame)}); got {len(labels)}.")
            frame = frame.assign(**{_CLASS: labels})
            options["class_variable"] = _CLASS
        if self.bins is not None:
            frame = _numbers_as_numbers(frame)
        schema = Schema.from_data(frame, missing="allow", bins=self.bins)
        if supervised:  # the class is not a feature: transform marginalizes it (it is never observed there)
            schema = Schema(schema.states, bin_edges=schema.bin_edges, na_values=schema.na_values, hidden=[_CLASS])
        encoded = schema.encode(frame, missing="allow")
        missing = self.missing if encoded.codes.min() < 0 else "error"
        self.network_ = learn(encoded, self.structure, pseudocount=self.pseudocount, schema=schema, missing=missing,
                              **options)
        return self._fit_kernel()

    def _fit_kernel(self):
        self.kernel_ = FisherKernel(self.network_, inference=self.inference, information=self.information,
                                    normalize=bool(self.normalize), random_state=self.random_state,
                                    handle_unknown=self.handle_unknown)
        self.parent_marginals_ = self.kernel_.parent_marginals_
        return self

    def _encode(self, X):
        check_is_fitted(self, "kernel_")
        frame = validate_frame(self, X, fitting=False)
        encoded = self.kernel_.encode(frame)  # missing/unknown: marginalized
        if self.handle_unknown == "marginalize":
            warn_unknown(frame, encoded, self.kernel_.schema)
        return encoded

    def transform(self, X):
        """Return the exact sparse feature map.

        Parameters
        ----------
        X : DataFrame, array-like or Dask DataFrame

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_rows, n_features)
            A Dask DataFrame gives a Dask array of CSR blocks (one per partition).
        """
        if backend_for(X) is not None:  # a registered backend's data (Dask): it stays where it lies
            check_is_fitted(self, "kernel_")
            return self.kernel_.embed(X[feature_columns(self)])
        return self.kernel_.embed(self._encode(X))

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """``"variable[parent=value,...]=state"`` for every output column.

        Parameters
        ----------
        input_features : ignored
            Present for scikit-learn's API.

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "kernel_")
        names = []
        for variable, config, state in self.kernel_.feature_names():
            given = ",".join(f"{p}={v}" for p, v in config.items())
            names.append(f"{variable}[{given}]={state}" if given else f"{variable}={state}")
        return np.asarray(names, dtype=object)

    def gram(self, X, Y=None) -> np.ndarray:
        """Fisher kernel matrix between the rows of ``X`` and ``Y`` (default ``X``).

        Parameters
        ----------
        X, Y : DataFrame or array-like

        Returns
        -------
        ndarray of shape (n_rows_X, n_rows_Y)
        """
        codes_x = self._encode(X)
        return self.kernel_.gram(codes_x, None if Y is None else self._encode(Y))

    def mmd(self, X, Y) -> float:
        """Squared MMD (eq. 10) between two sets of rows (Dask DataFrames: from distributed counts).

        Parameters
        ----------
        X, Y : DataFrame, array-like or Dask DataFrame

        Returns
        -------
        float
        """
        def prepare(data):
            return data if backend_for(data) is not None else self._encode(data)

        return self.kernel_.mmd(prepare(X), prepare(Y))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = self.missing != "error"  # missing values: EM in fit, marginalized after
        tags.transformer_tags.preserves_dtype = []
        return tags
