"""Discrete Bayesian networks: the model, its file formats, scores, EM, inference and structure learning."""

from bnfisher.bn.em import EMResult, fit_em
from bnfisher.bn.formats import parse_bif, read_bif, read_model, read_network, write_bif, write_model, write_network
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
    "read_model",
    "write_model",
    "read_network",
    "write_network",
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
