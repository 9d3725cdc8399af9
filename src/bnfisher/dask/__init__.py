"""The Dask shell: counts providers over Dask DataFrames and Parquet data sets.

Importing it registers the ``"dask"`` backend; Dask itself is imported only when Dask data arrives.
"""

from bnfisher.dask.client import concat_frames, dask_client, is_distributed, read_dask, worker_threads
from bnfisher.dask.counts import DaskCounts, embed_distributed
from bnfisher.dask.permutations import pooled_rows
from bnfisher.dask.windows import HeldWindow, dask_windows
from bnfisher.data.providers import Backend, register_provider


def _provider(data, schema, missing, **options):
    return DaskCounts(data, schema=schema, missing=missing, **options)


def _hold(rows):
    return HeldWindow.of(rows, source="the reference")


register_provider(Backend("dask", detects=is_distributed, provider=_provider, embed=embed_distributed, paths=True,
                          windows=dask_windows, pooled_rows=pooled_rows, hold=_hold, threads=worker_threads))

__all__ = [
    "DaskCounts",
    "read_dask",
    "is_distributed",
    "embed_distributed",
    "dask_client",
    "dask_windows",
    "HeldWindow",
    "concat_frames",
]
