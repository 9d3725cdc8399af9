"""An encoded table reduced to its distinct rows with their copies: what the tests and the witness need of it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher.data.counts import distinct_rows
from bnfisher.data.providers import GroupingProvider
from bnfisher.data.schema import EncodedData

__all__ = ["DistinctRows"]


@dataclass(frozen=True)
class DistinctRows:
    """The distinct rows of an encoded table, how many copies of each it holds, and where each row went.

    Every statistic of a two-sample comparison depends on a sample only through how many
    copies of each distinct row it holds; the witness of a row is that of its distinct
    row.  Reducing a table once (a reference compared with many windows) saves the work
    on every later comparison.

    Attributes
    ----------
    encoded : EncodedData
        The distinct rows, in order of first occurrence (missing cells, code -1, are a value of their own).
    copies : ndarray of int64, shape (n_distinct,)
    inverse : ndarray of intp, shape (n_rows,), or None
        Each row's distinct row: ``encoded.codes[inverse]`` is the table (None when only
        the distinct rows are known: a window of data beyond memory, or when not asked for).

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> from bnfisher.data.rows import DistinctRows
    >>> table = bf.Schema({"a": ("x", "y"), "b": ("u", "v")}).encode(np.array([[0, 1], [1, 0], [0, 1]]))
    >>> rows = DistinctRows.of(table)
    >>> rows.encoded.codes.tolist(), rows.copies.tolist(), rows.n_rows
    ([[0, 1], [1, 0]], [2, 1], 3)
    """

    encoded: EncodedData
    copies: np.ndarray
    inverse: np.ndarray | None

    @classmethod
    def of(cls, encoded: EncodedData, *, with_inverse: bool = True) -> DistinctRows:
        """Reduce an encoded table to its distinct rows (sorts of packed row keys, :func:`distinct_rows`).

        Parameters
        ----------
        encoded : EncodedData
        with_inverse : bool, default=True
            Whether to keep each row's distinct row (8 bytes a row).

        Returns
        -------
        DistinctRows
        """
        first, inverse, copies = distinct_rows(encoded.codes, encoded.cardinalities, with_inverse=with_inverse)
        codes = np.asfortranarray(encoded.codes[first])
        return cls(EncodedData(codes, encoded.variables, dict(encoded.states), encoded.schema),
                   copies.astype(np.int64), inverse)

    @classmethod
    def from_provider(cls, provider, *, max_rows: int, random_state=None) -> tuple[DistinctRows, bool]:
        """Reduce data beyond memory to its distinct rows, grouped where it lies; or sample it when they are too many.

        Parameters
        ----------
        provider : CountsProvider
            Grouped where it lies when it is a :class:`~bnfisher.data.providers.GroupingProvider`.
        max_rows : int
            The most distinct rows to bring into memory; beyond them (or without grouping), a
            uniform sample of ``max_rows`` rows, each once.
        random_state : None, int or Generator
            Draws the sample.

        Returns
        -------
        rows : DistinctRows
            In the provider's schema (``inverse`` is None).
        sampled : bool
            Whether ``rows`` are a sample rather than the whole data.
        """
        schema = provider.schema
        grouped = provider.distinct(max_rows=max_rows) if isinstance(provider, GroupingProvider) else None
        if grouped is not None:
            codes, copies = grouped
            encoded = EncodedData(np.asfortranarray(codes), schema.variables, dict(schema.states), schema)
            return cls(encoded, np.asarray(copies, dtype=np.int64), None), False
        encoded = schema.encode(provider.sample(max_rows, random_state=random_state), missing="allow")
        return cls(encoded, np.ones(encoded.n_rows, dtype=np.int64), None), True

    @property
    def n_rows(self) -> int:
        """Rows of the table (the sum of ``copies``)."""
        return int(self.copies.sum())
