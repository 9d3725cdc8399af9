"""Numerical tolerances and the hypergeometric law, shared by the searches, the bounds and the tests (private)."""

import numpy as np

__all__ = ["hypergeometric_log_pmf", "rounding_tolerance"]


def hypergeometric_log_pmf(x, total, marked, drawn) -> np.ndarray:
    """Return ``log P(X = x)`` for ``X`` the marked items among ``drawn`` of ``total``, ``marked`` of them marked.

    Elementwise (arrays broadcast), by ``gammaln``; every ``x`` must lie in the support
    ``max(0, drawn - (total - marked)) <= x <= min(drawn, marked)`` (callers mask the rest).
    """
    from scipy.special import gammaln  # scipy when the law is needed, not at import

    return (gammaln(marked + 1) - gammaln(x + 1) - gammaln(marked - x + 1) + gammaln(total - marked + 1)
            - gammaln(drawn - x + 1) - gammaln(total - marked - drawn + x + 1) - gammaln(total + 1)
            + gammaln(drawn + 1) + gammaln(total - drawn + 1))

def rounding_tolerance(value: float, tol: float = 1e-10, scale: float = 0.0) -> float:
    # Changes smaller than this are rounding noise, not improvements: relative to the value, and to the
    # criterion's own scale when the value itself is ~0 (e.g. an MMD of duplicated rows).
    return tol * max(abs(value), scale) + 1e-300
