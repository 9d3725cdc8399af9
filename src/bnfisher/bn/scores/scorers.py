"""Decomposable network scores from count tables (natural log).

For a variable with ``r`` states and ``q`` parent configurations, counts ``N_jk``,
``N_j = sum_k N_jk`` and ``N`` rows:

===========  ======================================================================
``"ll"``     ``sum_jk N_jk log(N_jk / N_j)``  (maximised log-likelihood)
``"bic"``    ``ll - 0.5 log(N) q (r - 1)``
``"aic"``    ``ll - q (r - 1)``
``"bdeu"``   ``sum_j [lgamma(a_j) - lgamma(a_j + N_j)] + sum_jk [lgamma(a_jk + N_jk) - lgamma(a_jk)]``
             with ``a_jk = ess / (q r)``, ``a_j = ess / q`` (equivalent sample size ``ess``)
``"k2"``     the same with ``a_jk = 1`` (Cooper & Herskovits)
===========  ======================================================================

``q`` counts every parent configuration, observed or not (as R bnlearn does).
An optional structure prior ``P(G) ∝ c^{|E|}`` adds ``|parents| log c`` to each
local score.  The total score of a DAG is the sum of its local scores
(decomposability, [1]_ Def. 9.1).

References
----------
.. [1] D. Pornnopparath, Lecture 9: Bayesian scores and structure search
   (``shared/papers/bn-scores-and-structure-search.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from bnfisher._utils.validation import check_nonnegative_float, check_option
from bnfisher.bn.network import BayesianNetwork, topological_order
from bnfisher.bn.scores._bits import row_bits
from bnfisher.bn.scores._family import family_scores
from bnfisher.bn.scores._pair import pair_scores
from bnfisher.bn.scores._projected import projected_scores
from bnfisher.bn.scores.formulas import SCORES, _segment_scores, local_score
from bnfisher.data.counts import n_configurations
from bnfisher.data.providers import NumpyCounts, as_provider
from bnfisher.exceptions import DataError, OptionError, OptionTypeError

__all__ = ["SCORES", "local_score", "score", "LocalScorer", "ProviderScorer", "make_scorer"]


def _check_prior(structure_prior) -> float:
    if structure_prior is None:
        return 0.0
    value = check_nonnegative_float(structure_prior, "structure_prior", strictly_positive=True)
    if value > 1:
        raise OptionError(f"`structure_prior` c must be in (0, 1]; got {value}.")
    return math.log(value)


def _bit(parent) -> int:
    """Return the bit of a parent in a parent set's cache key (a Python integer: the set's bits, summed)."""
    return 1 << int(parent)


#: The bits of the first 512 columns, looked up rather than shifted (the scorer's keys are built per family).
_BITS = [1 << u for u in range(512)]


class _CachedScorer:
    """The scorer protocol shared by both scorers: a cache of local scores filled by ``prefetch``.

    ``family_scores`` (and ``prefetch``, ``__call__``, ``scores_adding`` through it)
    scores every uncached ``(child, parents)`` family of a request in one batch, by
    the subclass's ``_score_new``.  The cache is keyed by ``(child, mask)``, ``mask``
    the parents' bits (plain integers, which the garbage collector does not track);
    every value includes the structure prior ``|parents| log c``.
    """

    def __init__(self, cardinalities: Sequence[int], n_rows: int, score: str, ess: float,
                 structure_prior: float | None):
        check_option(score, "structure_score", SCORES)
        self.cardinalities = np.asarray(cardinalities, dtype=np.int64)
        self.score_name = score
        self.ess = check_nonnegative_float(ess, "ess", strictly_positive=True)
        self.log_prior = _check_prior(structure_prior)
        self.n_rows = int(n_rows)
        self.cache: dict = {}
        self.n_evaluations = 0

    def _n_configurations(self, parents) -> int:
        # A Python int: the product of many cardinalities must not wrap around in int64.
        return n_configurations(self.cardinalities, parents)

    def _score_new(self, families: list) -> np.ndarray:  # pragma: no cover - abstract
        """Local scores (without the structure prior) of uncached families, in one batch."""
        raise NotImplementedError

    def _table_score(self, child: int, parents: tuple, table) -> float:
        """Return a family's local score from its (available-case) count table; None: a table of zeros."""
        r = int(self.cardinalities[child])
        table = np.zeros((1, r)) if table is None else np.asarray(table).reshape(-1, r)
        observed = float(table.sum())
        if 0 < observed < self.n_rows:
            # Available-case counts (missing values): score the family on the rows where it is observed, with
            # its own N in the penalty, and scale to all rows -- so families seen in fewer rows neither gain
            # (a smaller log-likelihood) nor lose (a noisier one) against the others.
            return local_score(table, self.score_name, n_rows=observed, ess=self.ess,
                               n_configurations=self._n_configurations(parents)) * (self.n_rows / observed)
        return local_score(table, self.score_name, n_rows=self.n_rows, ess=self.ess,
                           n_configurations=self._n_configurations(parents))

    def family_scores(self, families) -> np.ndarray:
        """Return the local scores of ``(child, parents)`` families, scoring the uncached ones in one batch.

        Parameters
        ----------
        families : sequence of (int, iterable of int)

        Returns
        -------
        ndarray of shape (len(families),)
        """
        cache = self.cache
        keys = self._keys(families)
        values = list(map(cache.get, keys))
        if None in values:  # score the uncached families (each once) in one batch
            todo = {key: (family[0], tuple(family[1])) for key, family, value in zip(keys, families, values)
                    if value is None}
            self._remember(todo, self._score_new(list(todo.values())).tolist())
            values = list(map(cache.__getitem__, keys))
        return np.array(values, dtype=np.float64)

    def _keys(self, families) -> list:
        """Return the cache keys of ``(child, parents)`` families: the child and the sum of its parents' bits."""
        bit = _BITS.__getitem__ if self.cardinalities.size <= len(_BITS) else _bit
        return [(child, sum(map(bit, parents))) for child, parents in families]

    def _remember(self, todo: dict, scores: list) -> None:
        """Cache the scores (without the prior) of the families ``todo`` maps keys to, adding the structure prior."""
        for (key, (_, parents)), value in zip(todo.items(), scores):
            self.cache[key] = value + self.log_prior * len(parents)
        self.n_evaluations += len(todo)

    def grouped_scores(self, groups) -> list:
        """Return the local scores of groups of families, each group's variables among a few columns.

        Here one batch of all the families (a provider's one pass); :class:`LocalScorer` counts each
        group on the distinct rows of its columns.

        Parameters
        ----------
        groups : sequence of (families, columns)
            ``families``: (child, parents) pairs whose variables all lie in ``columns``.

        Returns
        -------
        list of ndarray
            The scores of each group's families.
        """
        values = self.family_scores([family for families, _ in groups for family in families])
        bounds = np.cumsum([0] + [len(families) for families, _ in groups])
        return [values[bounds[g]:bounds[g + 1]] for g in range(len(groups))]

    def pair_scores(self) -> np.ndarray:
        """Return every variable's local score alone and with each single parent, without caching them.

        For wide tables, where caching all ``n^2`` families would cost more than
        scoring them: the families are scored in batches of whole columns, about a
        million families each (one pass of a provider over the data per batch).

        Returns
        -------
        ndarray of shape (n_variables, n_variables)
            ``[u, v]``: the score of ``v`` with the parent ``u``; ``[v, v]``: with no parent.
        """
        n = self.cardinalities.size
        out = np.empty((n, n))
        step = max(1, (1 << 20) // max(n, 1))  # children per batch: about a million families
        for first in range(0, n, step):
            stop = min(first + step, n)
            out[:, first:stop] = self._pair_block(first, stop).reshape(stop - first, n).T
        self.n_evaluations += n * n
        return out

    def _pair_block(self, first: int, stop: int) -> np.ndarray:
        """Scores (with the prior) of ``(v, (u,))`` for ``v`` in ``first:stop`` and every ``u`` (``u == v``: none)."""
        n = self.cardinalities.size
        families = [(v, (u,) if u != v else ()) for v in range(first, stop) for u in range(n)]
        return self._score_new(families) + self.log_prior * np.array([len(ps) for _, ps in families])

    def cache_pairs(self) -> None:
        """Score and cache every family of at most one parent (a climb from the empty graph starts with these)."""
        n = self.cardinalities.size
        self.prefetch([(i, (j,)) for i in range(n) for j in range(n) if i != j] + [(i, ()) for i in range(n)])

    def prefetch(self, families) -> None:
        """Score every uncached ``(child, parents)`` family of ``families`` in one batch (one pass over the data).

        Parameters
        ----------
        families : sequence of (child, parents)
        """
        self.family_scores(families)

    def __call__(self, child: int, parents) -> float:
        """Return the (cached) local score of ``child`` with ``parents`` (column indices)."""
        value = self.cache.get(self._keys([(child, parents)])[0])
        return self.family_scores([(child, parents)])[0] if value is None else value

    def scores_adding(self, child: int, parents, candidates) -> np.ndarray:
        """Local scores of ``child`` with ``parents | {c}`` for every ``c`` in ``candidates`` (one batch).

        Parameters
        ----------
        child : int
        parents : iterable of int
        candidates : sequence of int

        Returns
        -------
        ndarray of shape (len(candidates),)
        """
        base = tuple(parents)
        return self.family_scores([(child, base + (c,)) for c in candidates])


class LocalScorer(_CachedScorer):
    """Cached local scores of families over integer codes, computed by a compiled loop.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
        -1 marks a missing cell: a family over such columns is scored on the rows
        where it is observed and scaled to all rows, as :class:`ProviderScorer`
        scores available-case count tables.
    cardinalities : sequence of int
    score : str, default="bic"
    ess : float, default=1.0
    structure_prior : float, optional
        ``c`` in ``P(G) ∝ c^{|E|}``.

    Notes
    -----
    Scores are cached by child and parent set.  A batch of uncached
    families is scored by one call of a compiled loop (:mod:`bnfisher.bn.scores._family`):
    on complete codes a family whose table has at most 1,024 cells is counted from bit
    sets of the rows (:attr:`bits`); otherwise densely when its table is small next to
    the data, and by one sort of its rows beyond that; all give the same score.  With
    missing cells, one call per set of incomplete columns the families hold.

    Examples
    --------
    >>> codes = np.array([[0, 0], [0, 0], [1, 1], [1, 0]])
    >>> scorer = LocalScorer(codes, [2, 2], "ll")
    >>> bool(np.isclose(scorer(1, (0,)), 2 * np.log(0.5)))  # b given a: certain for a=0, a coin for a=1
    True
    """

    def __init__(self, codes: np.ndarray, cardinalities: Sequence[int], score: str = "bic", ess: float = 1.0,
                 structure_prior: float | None = None):
        # The smallest signed type that holds every code: one compiled variant of the kernel for most tables (a
        # new integer type would compile another, about 3 s), and less memory to stream.
        largest = int(max(cardinalities, default=1))
        dtype = np.int8 if largest <= 127 else np.int16 if largest <= 32_767 else np.int32
        self.codes = np.asfortranarray(codes, dtype=dtype)
        super().__init__(cardinalities, self.codes.shape[0], score, ess, structure_prior)
        #: Columns with missing cells (-1): families over them are scored on the rows where they are observed.
        self.holes = frozenset(np.flatnonzero((self.codes < 0).any(axis=0)).tolist() if self.codes.size else ())
        self._bits: tuple | None = None

    @property
    def bits(self) -> tuple | None:
        """The bit sets of every (column, state) of complete codes, built on first use (or None).

        :func:`bnfisher.bn.scores._bits.row_bits`; None with missing cells, or when they would take
        more memory than both the codes and 64 MiB.
        """
        if self._bits is None and not self.holes and self.codes.size:
            size = 8 * int(self.cardinalities.sum()) * ((self.n_rows + 63) // 64)
            if size <= max(self.codes.nbytes, 1 << 26):
                self._bits = row_bits(self.codes.T, self.cardinalities)
        return self._bits

    def pair_scores(self) -> np.ndarray:
        """As :meth:`_CachedScorer.pair_scores`; on complete codes each pair of columns counted once, for both families.

        (:func:`bnfisher.bn.scores._pair.pair_scores`: the same scores, from half the passes.)

        Returns
        -------
        ndarray of shape (n_variables, n_variables)
        """
        if self.holes:
            return super().pair_scores()
        self.n_evaluations += self.cardinalities.size ** 2
        return pair_scores(self.codes.T, self.cardinalities, score=self.score_name, ess=self.ess,
                           log_prior=self.log_prior, bits=self.bits)

    def cache_pairs(self) -> None:
        """As :meth:`_CachedScorer.cache_pairs`, from :meth:`pair_scores` on complete codes."""
        if self.holes:
            return super().cache_pairs()
        n = self.cardinalities.size
        bits = [1 << u for u in range(n)]
        self.cache.update({(v, bits[u] if u != v else 0): value
                           for u, row in enumerate(self.pair_scores().tolist()) for v, value in enumerate(row)})
        return None

    def grouped_scores(self, groups) -> list:
        """As :meth:`_CachedScorer.grouped_scores`; on complete codes, each group counted on its columns' distinct rows.

        The uncached families are scored by :func:`bnfisher.bn.scores._projected.projected_scores`:
        the same scores, bit for bit, from fewer rows (a variable's candidate parent sets lie
        among 9 columns, which hold 300 distinct rows of alarm's 5,000 in the median, 2,000 of
        insurance's 50,000), the groups on every core.

        Parameters
        ----------
        groups : sequence of (families, columns)

        Returns
        -------
        list of ndarray
        """
        if self.holes:
            return super().grouped_scores(groups)
        cache = self.cache
        keys = [self._keys(families) for families, _ in groups]
        work = []
        for (families, columns), group_keys in zip(groups, keys):
            todo = {key: (family[0], tuple(family[1])) for key, family in zip(group_keys, families) if key not in cache}
            if todo:
                work.append((todo, columns))
        scored = projected_scores(self.codes.T, self.cardinalities, [(list(todo.values()), columns)
                                                                      for todo, columns in work],
                                  score=self.score_name, ess=self.ess).tolist()
        first = 0
        for todo, _ in work:
            self._remember(todo, scored[first:first + len(todo)])
            first += len(todo)
        return [np.array(list(map(cache.__getitem__, group_keys)), dtype=np.float64) for group_keys in keys]

    def _score_new(self, families: list) -> np.ndarray:
        if not self.holes:
            return family_scores(self.codes.T, self.cardinalities, families, score=self.score_name, ess=self.ess,
                                 bits=self.bits)
        # Available-case scores: families grouped by the incomplete columns they hold, each group scored in one
        # batch on the rows where those columns are observed (as ProviderScorer scores the available-case tables).
        groups: dict = {}
        for k, (child, parents) in enumerate(families):
            groups.setdefault(self.holes.intersection((child, *parents)), []).append(k)
        out = np.empty(len(families))
        for columns, members in groups.items():
            codes_t = self.codes.T
            if columns:
                codes_t = np.ascontiguousarray(codes_t[:, (self.codes[:, sorted(columns)] >= 0).all(axis=1)])
            observed = codes_t.shape[1]
            if observed == 0:  # no row observes the family: its score is the penalty of an empty table
                out[members] = [self._table_score(families[k][0], families[k][1], None) for k in members]
                continue
            values = family_scores(codes_t, self.cardinalities, [families[k] for k in members],
                                   score=self.score_name, ess=self.ess)
            out[members] = values * (self.n_rows / observed)
        return out


class ProviderScorer(_CachedScorer):
    """Cached local scores computed from a counts provider (e.g. a Dask one).

    Same interface as :class:`LocalScorer`; every batch of families asks the
    provider for all their count tables in one pass over the data.

    Parameters
    ----------
    provider : CountsProvider
    score : {"ll", "bic", "aic", "bdeu", "k2"}, default="bic"
    ess : float, default=1.0
    structure_prior : float, optional

    Examples
    --------
    >>> provider = bf.as_provider(data, network.schema)
    >>> in_memory = LocalScorer(provider.codes, provider.cardinalities)
    >>> bool(abs(ProviderScorer(provider)(0, (1,)) - in_memory(0, (1,))) < 1e-9)
    True
    """

    #: Cells of count tables one pass may hold (256 MiB of 8-byte counts).  A level of exact learning over
    #: variables with many states asks for thousands of large tables at once; beyond this they come in
    #: several passes instead of exhausting memory.
    PASS_CELLS = 1 << 25

    def __init__(self, provider, score: str = "bic", ess: float = 1.0, structure_prior: float | None = None):
        self.provider = provider
        weights = getattr(provider, "weights", None)  # distinct rows with their copies: the rows are the copies
        rows = provider.n_rows if weights is None else round(float(np.sum(weights)))
        super().__init__(provider.cardinalities, rows, score, ess, structure_prior)

    def _score_new(self, families: list) -> np.ndarray:
        values: list = []
        start, cells = 0, 0
        for end, (child, parents) in enumerate(families):
            size = int(self.cardinalities[child]) * math.prod(int(self.cardinalities[p]) for p in parents)
            if end > start and cells + size > self.PASS_CELLS:
                values.extend(self._score_pass(families[start:end]))
                start, cells = end, 0
            cells += size
        values.extend(self._score_pass(families[start:]))
        return np.array(values)

    def _score_pass(self, families: list) -> list:
        """Score ``families`` from one pass of the provider over the data."""
        if not families:
            return []
        tables = self.provider.counts([ps + (c,) for c, ps in families])
        return self._tables_scores(families, tables)

    def _tables_scores(self, families: list, tables: list) -> list:
        """Score families from their count tables: those observed on every row stacked, by child cardinality."""
        scores: list = [None] * len(families)
        stacks: dict = {}
        for k, ((child, parents), table) in enumerate(zip(families, tables)):
            r = int(self.cardinalities[child])
            if table is None or float(np.sum(table)) != self.n_rows:  # zeros or available-case: one at a time
                scores[k] = self._table_score(child, parents, table)
            else:
                stacks.setdefault(r, []).append((k, np.asarray(table, dtype=np.float64).reshape(-1, r),
                                                 self._n_configurations(parents)))
        for members in stacks.values():
            starts = np.cumsum([0] + [len(table) for _, table, _ in members[:-1]])
            q = np.array([float(q) for _, _, q in members])
            values = _segment_scores(np.concatenate([table for _, table, _ in members]), starts, q,
                                     self.score_name, float(self.n_rows), self.ess)
            for (k, _, _), value in zip(members, values):
                scores[k] = float(value)
        return scores


def make_scorer(provider, *, structure_score: str = "bic", ess: float = 1.0,
                structure_prior: float | None = None):
    """Return the cached local scorer for a counts provider: the codes-based one in memory, batched passes otherwise.

    Parameters
    ----------
    provider : CountsProvider
    structure_score : {"ll", "bic", "aic", "bdeu", "k2"}, default="bic"
    ess : float, default=1.0
    structure_prior : float, optional

    Returns
    -------
    LocalScorer or ProviderScorer

    Examples
    --------
    >>> scorer = make_scorer(bf.as_provider(data, network.schema))
    >>> type(scorer).__name__, bool(scorer(0, (1,)) <= 0)
    ('LocalScorer', True)
    """
    complete = provider.missing == "error" or provider.codes.min(initial=0) >= 0 if isinstance(provider, NumpyCounts) \
        else False
    if isinstance(provider, NumpyCounts) and provider.weights is None and complete:
        return LocalScorer(provider.codes, provider.cardinalities, structure_score, ess, structure_prior)
    return ProviderScorer(provider, structure_score, ess, structure_prior)


def _as_parent_index(network_or_parents, variables: Sequence[str]) -> list:
    if isinstance(network_or_parents, BayesianNetwork):
        parents = {v: network_or_parents.parents[v] for v in network_or_parents.variables}
    elif isinstance(network_or_parents, Mapping):
        parents = {v: tuple(network_or_parents.get(v, ())) for v in variables}
    else:
        raise OptionTypeError("`network_or_parents` must be a BayesianNetwork or a mapping {variable: parents}.")
    index = {v: i for i, v in enumerate(variables)}
    unknown = sorted({str(p) for v, ps in parents.items() for p in (*ps, v) if p not in index})
    if unknown:
        raise DataError(f"The structure names variable(s) {unknown} absent from the data.")
    for v, ps in parents.items():
        if len(set(ps)) < len(ps):
            raise DataError(f"Variable {v!r} lists a parent twice: {tuple(ps)!r}; give each parent once.")
    topological_order({v: parents.get(v, ()) for v in variables}, list(variables))  # raises on cycles
    return [tuple(index[p] for p in parents.get(v, ())) for v in variables]


def score(network_or_parents, data, structure_score: str = "bic", *, ess: float = 1.0,
          structure_prior: float | None = None, by_variable: bool = False):
    """Total (decomposable) score of a DAG on data.

    Parameters
    ----------
    network_or_parents : BayesianNetwork or mapping
        The structure (a network's CPTs are ignored; the score maximises over them).
    data : DataFrame, ndarray of int, EncodedData or counts provider
        With a network, encoded with the network's schema (arrays of codes follow
        ``network.variables``).
    structure_score : {"ll", "bic", "aic", "bdeu", "k2"}, default="bic"
    ess : float, default=1.0
        Equivalent sample size of BDeu.
    structure_prior : float, optional
        ``c`` in ``P(G) ∝ c^{|E|}`` (``0 < c <= 1``).
    by_variable : bool, default=False
        Return ``{variable: local score}`` instead of the total.

    Returns
    -------
    float or dict

    Raises
    ------
    DataError
        A variable of the structure absent from the data; a parent listed twice; a cycle.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": list("xxyy"), "b": list("xxyx")})
    >>> round(score({"a": [], "b": ["a"]}, df, "ll"), 4)  # 4 log(1/2) + 2 log(1/2)
    -4.1589
    """
    if isinstance(network_or_parents, BayesianNetwork):
        provider = as_provider(data, network_or_parents.schema)
    else:
        provider = as_provider(data)
    is_network = isinstance(network_or_parents, BayesianNetwork)
    variables = network_or_parents.variables if is_network else provider.variables
    index = {v: i for i, v in enumerate(provider.variables)}
    parent_index = _as_parent_index(network_or_parents, variables)
    scorer = make_scorer(provider, structure_score=structure_score, ess=ess, structure_prior=structure_prior)
    values = {v: scorer(index[v], tuple(index[variables[p]] for p in parent_index[i]))
              for i, v in enumerate(variables)}
    return values if by_variable else float(sum(values.values()))
