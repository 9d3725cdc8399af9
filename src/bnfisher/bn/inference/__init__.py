"""Inference in a discrete Bayesian network.

Prior marginals, class posteriors, and posteriors given rows with missing cells.
"""

from bnfisher.bn.inference.evidence import (
    expected_counts,
    family_cell_weights,
    posterior_modes,
    posteriors_given_rows,
    query,
)
from bnfisher.bn.inference.exact import DEFAULT_MAX_TABLE_SIZE, INFERENCE_METHODS
from bnfisher.bn.inference.marginals import marginal, parent_marginals
from bnfisher.bn.inference.posterior import ClassPosterior

__all__ = [
    "INFERENCE_METHODS",
    "DEFAULT_MAX_TABLE_SIZE",
    "parent_marginals",
    "marginal",
    "ClassPosterior",
    "query",
    "posteriors_given_rows",
    "posterior_modes",
    "family_cell_weights",
    "expected_counts",
]
