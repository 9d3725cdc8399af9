"""Count tables of pooled samples, each sample counted apart and the tables added; a sample's tables kept.

A count table is a sum over rows, so the table of two samples pooled is the sum of their
tables.  A drift monitor pools the same reference with every window: counting the
reference once (:class:`KeptCounts`) and each window apart (:class:`SummedCounts`) gives
every window's pooled tables, the same numbers, for the cost of counting the window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from bnfisher._utils.validation import check_random_state
from bnfisher.exceptions import OptionError

__all__ = ["KeptCounts", "SummedCounts"]


class KeptCounts:
    """A counts provider that counts each family once and keeps its table (thread-safe).

    Parameters
    ----------
    provider : CountsProvider
        The rows to count (e.g. a :class:`~bnfisher.data.providers.NumpyCounts`).

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> from bnfisher.data.providers import NumpyCounts
    >>> kept = KeptCounts(NumpyCounts(np.array([[0, 1], [1, 1]]), bf.Schema({"a": (0, 1), "b": (0, 1)})))
    >>> kept.counts([(0, 1)])[0].tolist(), kept.n_kept
    ([[0, 1], [0, 1]], 1)
    """

    def __init__(self, provider):
        self.provider = provider
        self.schema, self.variables, self.cardinalities = provider.schema, provider.variables, provider.cardinalities
        self.missing = getattr(provider, "missing", "error")
        self._tables: dict = {}
        self._lock = threading.Lock()

    @property
    def states(self):
        """``{variable: tuple of labels}``."""
        return self.schema.states

    @property
    def n_rows(self) -> int:
        """Number of rows of the provider."""
        return self.provider.n_rows

    @property
    def n_kept(self) -> int:
        """Number of families whose tables are kept."""
        return len(self._tables)

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Return the count tables of ``families``; those not kept yet are counted in one pass (read-only arrays).

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
        """
        keys = [tuple(int(v) for v in family) for family in families]
        with self._lock:  # one thread counts what is missing; the others wait for it rather than count it again
            new = list(dict.fromkeys(key for key in keys if key not in self._tables))
            for key, table in zip(new, self.provider.counts(new) if new else ()):
                table.setflags(write=False)
                self._tables[key] = table
            return [self._tables[key] for key in keys]

    def map_rows(self, function: Callable) -> list:
        """Apply ``function(codes_block)`` to the provider's blocks of rows (its ``map_rows``).

        Parameters
        ----------
        function : callable

        Returns
        -------
        list
        """
        return self.provider.map_rows(function)

    def sample(self, n: int, *, random_state=None):
        """Return about ``n`` rows drawn uniformly by the provider (its ``sample``), as labels.

        Parameters
        ----------
        n : int
        random_state : None, int or Generator

        Returns
        -------
        DataFrame
        """
        return self.provider.sample(n, random_state=random_state)

    def __repr__(self) -> str:
        return f"KeptCounts({self.provider!r}, n_kept={self.n_kept})"


class SummedCounts:
    """The counts provider of several samples pooled: each table is the sum of the samples' tables.

    Parameters
    ----------
    *parts : CountsProvider
        The samples, in one schema (the same variables and cardinalities).

    Raises
    ------
    OptionError
        When no part is given or the parts' variables or cardinalities differ.

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> from bnfisher.data.providers import NumpyCounts
    >>> schema = bf.Schema({"a": (0, 1), "b": (0, 1)})
    >>> pooled = SummedCounts(NumpyCounts(np.array([[0, 1]]), schema), NumpyCounts(np.array([[1, 1]]), schema))
    >>> pooled.counts([(0, 1)])[0].tolist(), pooled.n_rows
    ([[0, 1], [0, 1]], 2)
    """

    def __init__(self, *parts):
        if not parts:
            raise OptionError("SummedCounts needs at least one counts provider.")
        first = parts[0]
        for k, part in enumerate(parts[1:], start=1):
            if tuple(part.variables) != tuple(first.variables) or \
                    not np.array_equal(part.cardinalities, first.cardinalities):
                raise OptionError(f"Part {k} of SummedCounts has other variables or states than part 0; pool samples "
                                  "encoded with one schema.")
        self.parts = parts
        self.schema, self.variables, self.cardinalities = first.schema, first.variables, first.cardinalities
        self.missing = "error" if all(getattr(p, "missing", "error") == "error" for p in parts) else "available-case"

    @property
    def states(self):
        """``{variable: tuple of labels}``."""
        return self.schema.states

    @property
    def n_rows(self) -> int:
        """Rows of all parts."""
        return sum(part.n_rows for part in self.parts)

    def counts(self, families: Sequence[Sequence[int]]) -> list:
        """Return the count tables of ``families``: the sum of every part's (a new array each).

        Parameters
        ----------
        families : sequence of sequence of int

        Returns
        -------
        list of ndarray
        """
        families = [tuple(family) for family in families]
        summed = [np.array(table) for table in self.parts[0].counts(families)]
        for part in self.parts[1:]:
            for k, table in enumerate(part.counts(families)):
                summed[k] = summed[k] + table
        return summed

    def map_rows(self, function: Callable) -> list:
        """Apply ``function(codes_block)`` to every part's blocks of rows, part after part.

        Parameters
        ----------
        function : callable

        Returns
        -------
        list
        """
        return [result for part in self.parts for result in part.map_rows(function)]

    def sample(self, n: int, *, random_state=None):
        """Return about ``n`` rows drawn uniformly from the pooled rows (each part's share hypergeometric), as labels.

        Parameters
        ----------
        n : int
        random_state : None, int or Generator

        Returns
        -------
        DataFrame
            Its index holds the rows' positions in the pool (the parts one after another).
        """
        import pandas as pd

        rng = check_random_state(random_state)
        sizes = np.array([part.n_rows for part in self.parts], dtype=np.int64)
        shares = rng.multivariate_hypergeometric(sizes, min(int(n), int(sizes.sum())))
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        frames = []
        for part, k, offset in zip(self.parts, shares, offsets):
            frame = part.sample(int(k), random_state=rng)
            frame.index = frame.index + int(offset)  # positions in the pooled rows
            frames.append(frame)
        return pd.concat(frames)

    def __repr__(self) -> str:
        return f"SummedCounts({', '.join(map(repr, self.parts))})"
