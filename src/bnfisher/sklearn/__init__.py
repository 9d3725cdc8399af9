"""scikit-learn estimators: the Fisher embedding (a transformer), the Bayesian-network classifier, the HMM kernel."""

from bnfisher.sklearn.classifier import BayesianNetworkClassifier
from bnfisher.sklearn.embedding import FisherEmbedding
from bnfisher.sklearn.hmm import HMMFisherKernel

__all__ = [
    "FisherEmbedding",
    "BayesianNetworkClassifier",
    "HMMFisherKernel",
]
