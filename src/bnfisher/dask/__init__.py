"""The Dask shell: counts providers over Dask DataFrames and Parquet data sets.

Importing it registers the ``"dask"`` backend; Dask itself is imported only when Dask data arrives.
"""

from bnfisher.dask.client import concat_frames, dask_client, is_distributed, read_dask
from bnfisher.dask.counts import DaskCounts, embed_distributed
from bnfisher.dask.permutations import pooled_rows
from bnfisher.dask.windows import dask_windows
from bnfisher.data.providers import Backend, register_provider


def _provider(data, schema, missing, **options):
    return DaskCounts(data, schema=schema, missing=missing, **options)


register_provider(Backend("dask", detects=is_distributed, provider=_provider, embed=embed_distributed, paths=True,
                          windows=dask_windows, pooled_rows=pooled_rows))

__all__ = [
    "DaskCounts",
    "read_dask",
    "is_distributed",
    "embed_distributed",
    "dask_client",
    "dask_windows",
    "concat_frames",
]
