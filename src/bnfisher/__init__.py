"""bnfisher: the Fisher kernel of discrete Bayesian networks for categorical data.

The jobs, each returning a result object that prints, renders and serialises: :func:`summarize`
(representative rows, Algorithm 1), :func:`compare` (is B different from A, and where),
:func:`drift` (a reference against each window of later data: when it changed, and where) and
:func:`monitor` (drift run after run, its windows kept in a store, alarms with a stated rate;
:func:`history` reads the store). The building blocks: :class:`Schema` (the fitted data boundary),
:func:`learn` (structure and parameters), :class:`BayesianNetwork`, :class:`FisherKernel` (Gram
matrix, feature map, set kernel, MMD), :func:`select_representatives`, :func:`mmd_test` and
:func:`mmd_by_family`.

Where things live: ``bnfisher.data`` (schema, counts, providers, I/O),
``bnfisher.bn`` (the network, formats, scores, EM, inference, structure learning),
``bnfisher.kernels``, ``bnfisher.summary``, ``bnfisher.comparison``, ``bnfisher.store``,
``bnfisher.hmm``, and the shells ``bnfisher.sklearn``, ``bnfisher.dask``,
``bnfisher.viz`` and ``bnfisher.cli``.
"""

from . import dask as _dask  # noqa: F401 - registers the Dask backend (Dask itself is imported only for Dask data)
from ._version import __version__
from .bn import (
    BayesianNetwork,
    learn,
    marginal,
    parent_marginals,
    parse_bif,
    read_bif,
    read_model,
    read_network,
    score,
    write_bif,
    write_model,
    write_network,
)
from .comparison import mmd_by_family, mmd_test
from .data import (
    Binning,
    EncodedData,
    ReferenceProfile,
    Schema,
    as_provider,
    discretize,
    encode,
    infer_states,
    merge_profiles,
    profile,
    read_profile,
)
from .exceptions import BnfisherError, ConvergenceWarning
from .jobs import (
    ComparisonResult,
    DriftResult,
    HistoryResult,
    MonitorResult,
    SummaryResult,
    compare,
    drift,
    history,
    monitor,
    summarize,
)
from .kernels import FisherKernel, OverlapKernel
from .summary import select_representatives

__all__ = [
    "BayesianNetwork",
    "BnfisherError",
    "ComparisonResult",
    "ConvergenceWarning",
    "DriftResult",
    "EncodedData",
    "FisherKernel",
    "HistoryResult",
    "MonitorResult",
    "OverlapKernel",
    "ReferenceProfile",
    "Binning",
    "Schema",
    "SummaryResult",
    "__version__",
    "as_provider",
    "compare",
    "discretize",
    "drift",
    "encode",
    "history",
    "infer_states",
    "learn",
    "marginal",
    "merge_profiles",
    "mmd_by_family",
    "mmd_test",
    "monitor",
    "parent_marginals",
    "parse_bif",
    "profile",
    "read_bif",
    "read_model",
    "read_network",
    "read_profile",
    "score",
    "select_representatives",
    "summarize",
    "write_bif",
    "write_model",
    "write_network",
]
