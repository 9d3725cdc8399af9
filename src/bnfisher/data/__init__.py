"""The data boundary: the fitted :class:`Schema`, labels to codes, counting, providers, profiles, file I/O."""

from bnfisher.data.binning import Binning
from bnfisher.data.counts import configuration_index, count_block, count_family, distinct_rows, n_configurations
from bnfisher.data.encode import discretize, encode, infer_states
from bnfisher.data.io import check_outputs, read_table, write_table
from bnfisher.data.profile import ReferenceProfile, merge_profiles, profile, read_profile
from bnfisher.data.providers import CountsProvider, NumpyCounts, as_provider, register_provider
from bnfisher.data.schema import EncodedData, Schema

__all__ = [
    "Binning",
    "Schema",
    "EncodedData",
    "encode",
    "infer_states",
    "discretize",
    "CountsProvider",
    "NumpyCounts",
    "as_provider",
    "register_provider",
    "configuration_index",
    "count_family",
    "count_block",
    "distinct_rows",
    "n_configurations",
    "read_table",
    "write_table",
    "check_outputs",
    "ReferenceProfile",
    "profile",
    "merge_profiles",
    "read_profile",
]
