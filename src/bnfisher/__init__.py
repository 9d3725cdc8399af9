"""bnfisher: the Fisher kernel of discrete Bayesian networks for categorical data.

Main entry points: :func:`learn` (structure and parameters), :class:`BayesianNetwork`,
:class:`FisherKernel` (Gram matrix, feature map, set kernel, MMD) and
:func:`parent_marginals` (exact or sampled inference).
"""

from .bif import read_bif, write_bif
from .encoding import EncodedData, discretize, encode, infer_states
from .inference import marginal, parent_marginals
from .kernel import FisherKernel
from .network import BayesianNetwork
from .scores import score
from .structure import learn

__all__ = [
    "BayesianNetwork",
    "EncodedData",
    "FisherKernel",
    "discretize",
    "encode",
    "infer_states",
    "learn",
    "marginal",
    "parent_marginals",
    "read_bif",
    "score",
    "write_bif",
]

__version__ = "0.1.0"
