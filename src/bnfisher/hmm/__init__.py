"""The Fisher kernel of Gaussian hidden Markov models: forward-backward, scores and information (the pure core).

The scikit-learn estimator built on it is :class:`bnfisher.sklearn.HMMFisherKernel`.
"""

from bnfisher.hmm._forward_backward import log_emissions, sequence_statistics
from bnfisher.hmm.scores import complete_information, forward_backward, hmm_scores

__all__ = [
    "complete_information",
    "forward_backward",
    "hmm_scores",
    "log_emissions",
    "sequence_statistics",
]
