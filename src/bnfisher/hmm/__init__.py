"""The Fisher kernel of Gaussian hidden Markov models (a model family of its own, beside the Bayesian-network code)."""

from bnfisher.hmm._forward_backward import log_emissions
from bnfisher.hmm.kernel import HMMFisherKernel
from bnfisher.hmm.scores import complete_information, forward_backward, hmm_scores

__all__ = [
    "HMMFisherKernel",
    "complete_information",
    "forward_backward",
    "hmm_scores",
    "log_emissions",
]
