"""bnfisher: the Fisher kernel of discrete Bayesian networks for categorical data.

Main entry points: :class:`Schema` (the fitted data boundary), :func:`as_provider`
(any input -> counts provider), :func:`learn` (structure and parameters),
:class:`BayesianNetwork`, :class:`FisherKernel` (Gram matrix, feature map, set
kernel, MMD) and :func:`parent_marginals` (exact or sampled inference).
"""

from .bif import parse_bif, read_bif, write_bif
from .counts import as_provider
from .encoding import EncodedData, Schema, discretize, encode, infer_states
from .exceptions import BnfisherError, ConvergenceWarning
from .inference import marginal, parent_marginals
from .kernel import FisherKernel, OverlapKernel
from .network import BayesianNetwork
from .scores import score
from .structure import learn

__all__ = [
    "BayesianNetwork",
    "BnfisherError",
    "ConvergenceWarning",
    "EncodedData",
    "FisherKernel",
    "OverlapKernel",
    "Schema",
    "as_provider",
    "discretize",
    "encode",
    "infer_states",
    "learn",
    "marginal",
    "parent_marginals",
    "parse_bif",
    "read_bif",
    "score",
    "write_bif",
]

__version__ = "0.1.0"
