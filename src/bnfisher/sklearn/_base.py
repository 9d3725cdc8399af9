"""The one scikit-learn import guard of bnfisher (private module).

scikit-learn is an optional extra (``pip install "bnfisher[sklearn]"``): the
estimators subclass its base classes when it is installed, and plain ``object``
otherwise, so that ``import bnfisher`` never needs it.  Using an estimator
without it raises an ImportError naming the extra.
"""

from __future__ import annotations

__all__ = ["BaseEstimator", "TransformerMixin", "ClassifierMixin", "check_is_fitted", "HAVE_SKLEARN",
           "require_sklearn"]

#: What a user without scikit-learn is told.
MISSING = "bnfisher's estimators need scikit-learn: pip install 'bnfisher[sklearn]'."


def require_sklearn() -> None:
    """Raise an ImportError naming the extra when scikit-learn is not installed (the estimators' first step)."""
    if not HAVE_SKLEARN:
        raise ImportError(MISSING)

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
    from sklearn.utils.validation import check_is_fitted

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    HAVE_SKLEARN = False

    # Stand-ins: a class of its own each (a base list naming object before BaseEstimator would have no consistent
    # method order).
    class BaseEstimator:  # type: ignore[no-redef]
        def __init__(self, *args, **kwargs):
            raise ImportError("bnfisher's estimators need scikit-learn: pip install 'bnfisher[sklearn]'.")

    class ClassifierMixin:  # type: ignore[no-redef]
        pass

    class TransformerMixin:  # type: ignore[no-redef]
        pass

    def check_is_fitted(estimator, attributes=None):
        raise ImportError("bnfisher's estimators need scikit-learn: pip install 'bnfisher[sklearn]'.")
