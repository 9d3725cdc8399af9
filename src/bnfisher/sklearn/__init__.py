"""scikit-learn estimators: the Fisher embedding (a transformer) and the Bayesian-network classifier."""

from bnfisher.sklearn.classifier import BayesianNetworkClassifier
from bnfisher.sklearn.embedding import FisherEmbedding

__all__ = [
    "FisherEmbedding",
    "BayesianNetworkClassifier",
]
