"""Discrete Bayesian networks: the model, its file formats, scores, EM, inference and structure learning."""

from bnfisher.bn.em import EMResult, fit_em
from bnfisher.bn.formats.bif import parse_bif, read_bif, write_bif
from bnfisher.bn.inference.evidence import expected_counts, query
from bnfisher.bn.inference.marginals import marginal, parent_marginals
from bnfisher.bn.network import BayesianNetwork, topological_order
from bnfisher.bn.scores import SCORES, local_score, score
from bnfisher.bn.structure.learn import STRUCTURES, learn

__all__ = [
    "BayesianNetwork",
    "topological_order",
    "read_bif",
    "parse_bif",
    "write_bif",
    "SCORES",
    "score",
    "local_score",
    "EMResult",
    "fit_em",
    "parent_marginals",
    "marginal",
    "query",
    "expected_counts",
    "STRUCTURES",
    "learn",
]
