"""Numerical tolerances shared by the searches and the tests (private)."""

__all__ = ["rounding_tolerance"]

def rounding_tolerance(value: float, tol: float = 1e-10, scale: float = 0.0) -> float:
    # Changes smaller than this are rounding noise, not improvements: relative to the value, and to the
    # criterion's own scale when the value itself is ~0 (e.g. an MMD of duplicated rows).
    return tol * max(abs(value), scale) + 1e-300
