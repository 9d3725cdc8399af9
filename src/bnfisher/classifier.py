"""A scikit-learn classifier backed by a Bayesian network over the features and the class."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from ._frames import validate_frame
from .counts import configuration_index
from .encoding import EncodedData, encode
from .structure import learn

__all__ = ["BayesianNetworkClassifier"]

try:  # scikit-learn is optional at import time; the estimator needs it.
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_is_fitted, column_or_1d
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    BaseEstimator = object
    ClassifierMixin = object

    def check_is_fitted(estimator, attributes=None):
        if not hasattr(estimator, "network_"):
            raise AttributeError("This BayesianNetworkClassifier is not fitted yet; call `fit` first.")

    def check_classification_targets(y):
        return None

    def column_or_1d(y, warn=False):
        return np.ravel(np.asarray(y))


_CLASS = "__class__"


class ClassPosterior:
    """Exact class posteriors ``log P(C = c | x)`` of one set of rows under changing CPTs.

    Only the families that contain the class depend on it (the others add the same
    term to every class and cancel).  Their CPTs are read with the class axis moved
    last, so one row gather per family gives ``log theta`` for every class value at
    once.  The configuration indices of the rows are computed once, in the
    constructor; :meth:`log_posterior` then costs one gather per class family.

    Parameters
    ----------
    families : list of tuple
        Column indices ``parents + (child,)`` of every variable.
    cardinalities : sequence of int
    codes : ndarray of shape (n_rows, n_variables)
        The rows; the class column is ignored.
    class_position : int
    """

    def __init__(self, families: list, cardinalities, codes: np.ndarray, class_position: int):
        self.cardinalities = np.asarray(cardinalities)
        self.class_families = []
        for i, family in enumerate(families):
            if class_position not in family:
                continue
            shape = tuple(int(self.cardinalities[c]) for c in family)
            rest = tuple(c for c in family if c != class_position)
            self.class_families.append((i, family.index(class_position), shape,
                                        configuration_index(codes, rest, self.cardinalities)))

    def log_posterior(self, log_tables: list) -> np.ndarray:
        """``(n_rows, n_classes)`` log posteriors from flat log CPTs (one per family)."""
        joint = 0.0
        for i, axis, shape, index in self.class_families:
            table = np.moveaxis(np.asarray(log_tables[i]).reshape(shape), axis, -1).reshape(-1, shape[axis])
            joint = joint + table[index]
        return joint - logsumexp(joint, axis=1, keepdims=True)


class BayesianNetworkClassifier(ClassifierMixin, BaseEstimator):
    """Bayesian network classifier (naive Bayes, TAN, KDB or hill climbing).

    Parameters
    ----------
    structure : {"tan", "kdb", "naive-bayes", "hc"}, default="tan"
        How the network over the features and the class is learned (see
        :func:`bnfisher.learn`); for ``"hc"`` the class is an ordinary variable.
    k : int, default=3
        Maximum feature parents per feature for ``"kdb"``.
    structure_score : str, default="bic"
        Score of ``"hc"`` (named so as not to hide the classifier's ``score`` method).
    max_parents : int, optional
        Parent limit of ``"hc"``.
    pseudocount : float, default=1.0
        Dirichlet pseudocount of the CPTs.

    Attributes
    ----------
    network_ : BayesianNetwork
        The fitted network; the class variable is named ``"__class__"``.
    classes_ : ndarray
        Class labels, sorted.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Present when ``X`` was a DataFrame.

    Notes
    -----
    ``predict_proba`` is the exact posterior ``P(C | x) ∝ P(x, C)``, computed from
    the joint log-likelihood of every class value and normalised with
    ``logsumexp`` (log space, no underflow).  Every feature value is a label: a
    floating-point column gets one state per distinct value, so bin continuous
    features first (:func:`bnfisher.discretize`).  A value not seen during ``fit``
    is an error naming the column.

    Examples
    --------
    >>> from bnfisher.datasets import load
    >>> data = load("nursery")
    >>> X, y = data.drop(columns="class"), data["class"]
    >>> clf = BayesianNetworkClassifier("tan").fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    def __init__(self, structure: str = "tan", *, k: int = 3, structure_score: str = "bic", max_parents=None,
                 pseudocount: float = 1.0):
        self.structure = structure
        self.k = k
        self.structure_score = structure_score
        self.max_parents = max_parents
        self.pseudocount = pseudocount

    def _frame(self, X, fitting: bool) -> pd.DataFrame:
        return validate_frame(self, X, fitting, reserved=(_CLASS,))

    def fit(self, X, y):
        """Learn the network from features ``X`` and labels ``y``; returns self."""
        if y is None:
            raise ValueError("BayesianNetworkClassifier requires y to be passed, but the target y is None.")
        frame = self._frame(X, fitting=True)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        if len(y) != len(frame):
            raise ValueError(f"`y` must be 1-D with one label per row of X ({len(frame)}); got shape {y.shape}.")
        if len(frame) == 0:
            raise ValueError("Cannot fit on an empty data set.")
        features = encode(frame)
        self.classes_, class_codes = np.unique(y, return_inverse=True)
        codes = np.column_stack([features.codes, class_codes])
        states = dict(features.states)
        states[_CLASS] = tuple(c.item() if isinstance(c, np.generic) else c for c in self.classes_)
        encoded = EncodedData(np.asfortranarray(codes), features.variables + (_CLASS,), states)
        if self.structure == "hc":
            self.network_ = learn(encoded, "hc", pseudocount=self.pseudocount, score=self.structure_score,
                                  max_parents=self.max_parents)
        elif self.structure == "kdb":
            self.network_ = learn(encoded, "kdb", pseudocount=self.pseudocount, class_variable=_CLASS, k=self.k)
        elif self.structure in ("tan", "naive-bayes"):
            self.network_ = learn(encoded, self.structure, pseudocount=self.pseudocount, class_variable=_CLASS)
        else:
            raise ValueError(f"`structure` must be 'tan', 'kdb', 'naive-bayes' or 'hc'; got {self.structure!r}.")
        return self

    def predict_log_proba(self, X) -> np.ndarray:
        """``log P(C = c | x)`` for every row and class, shape (n_rows, n_classes)."""
        check_is_fitted(self, "network_")
        frame = self._frame(X, fitting=False)
        network = self.network_
        features = encode(frame, states=network.states, variables=tuple(frame.columns))
        index = {v: i for i, v in enumerate(network.variables)}
        codes = np.empty((features.n_rows, len(network.variables)), dtype=np.intp, order="F")
        for i, v in enumerate(features.variables):
            codes[:, index[v]] = features.codes[:, i]
        codes[:, index[_CLASS]] = 0  # ignored: every class value is scored at once
        families = [parents + (i,) for i, parents in enumerate(network.parent_indices())]
        posterior = ClassPosterior(families, network.cardinalities, codes, index[_CLASS])
        with np.errstate(divide="ignore"):  # log 0 = -inf for impossible classes
            log_tables = [np.log(network.cpts[v]).reshape(-1) for v in network.variables]
        return posterior.log_posterior(log_tables)

    def predict_proba(self, X) -> np.ndarray:
        """Exact class posteriors, shape (n_rows, n_classes)."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """Most probable class of every row."""
        log_proba = self.predict_log_proba(X)
        return self.classes_[np.argmax(log_proba, axis=1)]
