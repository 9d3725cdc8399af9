r"""Representative subsets (Algorithm 1) and kernel two-sample tests.

Greedy swap search (Algorithm 1, [1]_ Sec. 6.4)
------------------------------------------------
Start from ``S``, ``|S| = k``.  Visit each position of ``S`` in turn and replace its
row ``i`` by the row ``j`` outside ``S`` that gives the smallest criterion, if that
is strictly smaller than the current value; stop after a full pass without a swap.

For the MMD criterion (eq. 10, ``d(X_S, X) = ||mu_S - mu_X||^2`` in the exact
feature map) the search keeps ``delta = mu_S - mu_X`` and ``g_j = <delta, phi(x_j)>``
for every row, so the value after swapping ``i`` for ``j`` is

.. math::

    d' = d + \frac{2}{k}(g_j - g_i) + \frac{K(x_j, x_j) - 2K(x_i, x_j) + K(x_i, x_i)}{k^2},

which needs one kernel column ``K(., x_i)`` per position -- ``O(N n)`` work and no
``N x N`` matrix.  The chi-square criterion ([1]_ Sec. 7.1) changes in two cells per
variable, so all candidates are scored from per-state lookup tables.

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103.
.. [2] Gretton, Borgwardt, Rasch, Schölkopf & Smola (2012). A kernel two-sample
   test. JMLR 13, 723-773.
.. [3] Kim, Khanna & Koyejo (2016). Examples are not enough, learn to criticize!
   Criticism for interpretability. NeurIPS 29.
"""

from __future__ import annotations

import numbers
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import chi2 as chi2_distribution

from ._validation import check_nonnegative_float, check_positive_int, check_random_state
from .counts import in_memory
from .encoding import EncodedData
from .exceptions import ConvergenceWarning, DataError, OptionError, OptionTypeError
from .kernel import FamilyKernel

__all__ = [
    "SelectionResult",
    "select_representatives",
    "chi2_criterion",
    "random_baseline",
    "random_mmd_baseline",
    "random_subsets",
    "MMDCriterion",
    "Chi2Criterion",
    "TwoSampleResult",
    "mmd_test",
    "PermutationStatistics",
    "permutation_statistics",
    "split_draws",
    "ConvergenceWarning",
]

#: Memory for kernel columns kept between sweeps of the MMD search (bytes).
COLUMN_CACHE_BYTES = 2**28

#: Default cap on the greedy search's sweeps (a ConvergenceWarning names ``max_sweeps`` when it is reached).
DEFAULT_MAX_SWEEPS = 100


@dataclass
class SelectionResult:
    """Outcome of :func:`select_representatives`.

    Attributes
    ----------
    indices : ndarray of int
        Selected row positions (0-based), in data order.
    objective : list of float
        Criterion value at the start and after every sweep.
    n_swaps : int
        Swaps accepted in total.
    initial_value, final_value : float
        Criterion value of the starting and the final subset.
    n_sweeps : int
        Full passes over ``S`` (the last one made no swap when ``converged``).
    converged : bool
    criterion : str
    swaps_per_sweep : list of int
    pool : DataFrame or None
        For data beyond memory: the in-memory candidate pool; ``indices`` are
        positions in it and ``pool.iloc[indices]`` are the selected rows.
    criticisms : ndarray of int
        With ``n_criticisms``: rows the prototypes represent worst (MMD-critic), in
        the order they were picked; empty otherwise.
    criticism_witness : ndarray of float
        The witness ``<Phi(x), mu_data - mu_prototypes>`` of each criticism: positive
        where the data has more mass than the prototypes.
    """

    indices: np.ndarray
    objective: list
    n_swaps: int
    initial_value: float
    final_value: float
    n_sweeps: int
    converged: bool
    criterion: str
    swaps_per_sweep: list = field(default_factory=list)
    pool: object = None
    criticisms: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    criticism_witness: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def _repr_html_(self) -> str:
        return _html_table(f"Representative subset ({self.criterion})", [
            ("rows", str(len(self.indices))), ("start → final", f"{self.initial_value:.6g} → {self.final_value:.6g}"),
            ("sweeps, swaps", f"{self.n_sweeps}, {self.n_swaps}"), ("converged", str(self.converged)),
            ("criticisms", ", ".join(map(str, self.criticisms[:10])) or "-")])


def _html_table(title: str, rows: list) -> str:
    """Return a small HTML table for notebooks (values escaped)."""
    import html

    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                   for k, v in rows)
    return f"<table><caption>{html.escape(title)}</caption>{body}</table>"


# ------------------------------------------------------------------- criteria
class MMDCriterion:
    """``d(X_S, X)`` of eq. 10 (the squared MMD of a subset to the data) with incremental updates.

    The search runs on *units*, the distinct candidate rows (:class:`~bnfisher.kernel.KernelColumns`):
    identical rows have identical candidate values, so each is scored once, and a
    kernel column costs ``n`` gathers over the units -- ``O(N n)`` time and memory,
    never the ``N x sum_i r_i`` embedding.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    encoded : EncodedData
        The candidate rows (encoded with ``kernel.schema``).
    target : ndarray of shape (n_features_,), optional
        Mean embedding to approach (default: the candidates' own mean).

    Attributes
    ----------
    inverse : ndarray of int, shape (n_rows,)
        The unit of every candidate row.
    multiplicity : ndarray of int, shape (n_units,)
        Rows per unit.

    Notes
    -----
    :meth:`evaluate_many` scores many subsets of rows at once; ``start``,
    ``candidates``, ``swap`` and ``refresh`` are the steps of the greedy search, on units.
    """

    name = "mmd"

    def __init__(self, kernel: FamilyKernel, encoded, target: np.ndarray | None = None):
        self.columns = kernel.columns(encoded)
        self.inverse, self.multiplicity = self.columns.inverse, self.columns.multiplicity
        self.n_rows = self.columns.n_units
        self.features = self.columns.cell_features  # cells -> features
        n_rows = max(self.columns.n_rows, 1)
        # The target is the mean embedding of the data to summarise: the candidates' own mean, or (for data beyond
        # memory) the full data's, computed from distributed counts.
        if target is None:
            target = self.features.T @ self.columns.weighted_cells(self.multiplicity.astype(np.float64)) / n_rows
        self.target = target
        self.diagonal = self.columns.diag
        # The scale of the criterion: a swap must improve it by more than tol times this.
        self.scale = float(self.diagonal @ self.multiplicity / n_rows) if self.n_rows else 1.0
        # Columns of the subset's members are reused sweep after sweep: keep the most recent ones (LRU), as many
        # as COLUMN_CACHE_BYTES holds.
        self._cache = OrderedDict()
        self._cache_size = COLUMN_CACHE_BYTES // max(8 * self.n_rows, 1)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Criterion of each row of ``subsets`` (shape (m, k), row positions) via sparse subset means.

        Parameters
        ----------
        subsets : ndarray of int, shape (m, k)

        Returns
        -------
        ndarray of shape (m,)
        """
        m, k = subsets.shape
        out = np.empty(m)
        columns = self.columns
        # Blocks of subsets whose dense count tables and means take ~32 MB.
        block = max(1, 2**22 // max(columns.n_cells + self.features.shape[1], k * columns.cells.shape[1], 1))
        transposed = self.features.T.tocsr()
        for start in range(0, m, block):
            counts = columns.cell_counts(self.inverse[subsets[start : start + block]]) / k
            means = transposed @ counts.T  # (features, subsets)
            # ||m - t||^2 = ||m||^2 - 2 m.t + ||t||^2
            out[start : start + block] = (np.einsum("fb,fb->b", means, means) - 2 * (self.target @ means)
                                          + self.target @ self.target)
        return np.maximum(out, 0.0)

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset`` (units, repeats allowed); return its criterion value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        self.k = subset.size
        counts = np.bincount(subset, minlength=self.n_rows).astype(np.float64)
        self.delta = self.features.T @ self.columns.weighted_cells(counts) / self.k - self.target
        self.inner = self.columns.inner(self.features @ self.delta)
        return float(self.delta @ self.delta)

    def column(self, unit: int) -> np.ndarray:
        """Return the kernel column ``K(., u)`` over all units.

        Parameters
        ----------
        unit : int

        Returns
        -------
        ndarray of shape (n_units,)
        """
        cached = self._cache.get(unit)
        if cached is not None:
            self._cache.move_to_end(unit)
            return cached
        column = self.columns.column(unit)
        if self._cache_size:
            self._cache[unit] = column
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return column

    def candidates(self, current: float, unit: int) -> np.ndarray:
        """Return the criterion after swapping ``unit`` out for each unit (``current``: the value now).

        Parameters
        ----------
        current : float
        unit : int
            The member of the subset to swap out.

        Returns
        -------
        ndarray of shape (n_units,)
        """
        self._column = self.column(unit)
        k = self.k
        # d' = d + 2/k (g_j - g_i) + (K_jj - 2 K_ij + K_ii) / k^2   (eq. 10 after one swap)
        return (current + (2.0 / k) * (self.inner - self.inner[unit])
                + (self.diagonal - 2.0 * self._column + self.diagonal[unit]) / k**2)

    def swap(self, out_unit: int, in_unit: int) -> None:
        """Apply the swap of ``out_unit`` for ``in_unit`` to the running state.

        Parameters
        ----------
        out_unit, in_unit : int
        """
        k = self.k
        for unit, sign in ((in_unit, 1.0), (out_unit, -1.0)):
            cells, weights = self.columns.unit_weights(unit)
            self.delta += sign * (self.features[cells].T @ weights) / k
        self.inner += (self.column(in_unit) - self._column) / k

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        return self.start(subset)


def chi2_criterion(codes: np.ndarray, subset: np.ndarray) -> float:
    """Return the paper's chi-square heuristic ``-sum_i log p_i`` ([1]_ Sec. 7.1).

    Per variable, a chi-square goodness-of-fit test of the subset's state counts
    against ``k`` times the full data's frequencies, over the states that occur in
    the full data (degrees of freedom: their number minus 1); p-values in log
    space (``chi2.logsf``), so the sum does not underflow.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    subset : array-like of int
        Row positions.

    Returns
    -------
    float
    """
    return Chi2Criterion(codes).evaluate_many(np.asarray(subset)[None, :])[0]


class Chi2Criterion:
    """The paper's chi-square heuristic ``-sum_i log p_i`` over subsets ([1]_ Sec. 7.1), vectorised.

    Parameters
    ----------
    codes : ndarray of shape (n_rows, n_variables)
    cardinalities : sequence of int, optional
    """

    name = "chi2"
    scale = 1.0

    def __init__(self, codes: np.ndarray, cardinalities=None):
        self.codes = np.asfortranarray(codes)
        self.n_rows, self.n_vars = codes.shape
        if cardinalities is None:
            cardinalities = codes.max(axis=0) + 1 if self.n_rows else np.ones(self.n_vars, dtype=int)
        self.cards = [int(r) for r in cardinalities]
        self.frequencies = [np.bincount(self.codes[:, v], minlength=r) / self.n_rows for v, r in enumerate(self.cards)]
        self.df = [int(np.count_nonzero(f)) - 1 for f in self.frequencies]
        self.inverse, self.multiplicity = np.arange(self.n_rows), np.ones(self.n_rows, dtype=np.intp)
        self._flat = None

    def _objective(self, statistics: list) -> float:
        return float(-sum(chi2_distribution.logsf(s, df) if df > 0 else 0.0 for s, df in zip(statistics, self.df)))

    def _statistic(self, observed: np.ndarray, v: int) -> np.ndarray:
        expected = self.k * self.frequencies[v]
        used = expected > 0
        return (((observed[..., used] - expected[used]) ** 2) / expected[used]).sum(axis=-1)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Return the criterion of each row of ``subsets`` (shape (m, k)).

        Parameters
        ----------
        subsets : ndarray of int, shape (m, k)

        Returns
        -------
        ndarray of shape (m,)
        """
        m, self.k = subsets.shape
        total = np.zeros(m)
        for v, r in enumerate(self.cards):
            if self.df[v] <= 0:
                continue
            states = self.codes[subsets, v]  # (m, k)
            observed = np.zeros((m, r))
            np.add.at(observed, (np.repeat(np.arange(m), self.k), states.ravel()), 1.0)
            total -= chi2_distribution.logsf(self._statistic(observed, v), self.df[v])
        return total

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset``; return its criterion value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        self.k = subset.size
        self.observed = [np.bincount(self.codes[subset, v], minlength=r).astype(float)
                         for v, r in enumerate(self.cards)]
        self.statistics = [float(self._statistic(o, v)) for v, o in enumerate(self.observed)]
        return self._objective(self.statistics)

    def candidates(self, current: float, row: int) -> np.ndarray:
        """Return the criterion after swapping ``row`` out for each candidate (``current``: the value now).

        One ``chi2.logsf`` call over every state of every variable, then one gather per variable.

        Parameters
        ----------
        current : float
        row : int
            The member of the subset to swap out.

        Returns
        -------
        ndarray of shape (n_rows,)
        """
        if self._flat is None:
            self._prepare()
        expected = self.k * self._frequency  # every state of every variable, concatenated
        observed = np.concatenate(self.observed)
        out = self._flat[row]  # the removed row's state of each variable (global state index)
        # Remove row i: one cell per variable moves from O_a to O_a - 1.
        change = (observed[out] - 1 - expected[out]) ** 2 - (observed[out] - expected[out]) ** 2
        removed = np.asarray(self.statistics) + change / expected[out]
        observed[out] -= 1
        with np.errstate(divide="ignore", invalid="ignore"):  # states absent from X have no candidates
            added = np.where(expected > 0, (2 * (observed - expected) + 1) / expected, 0.0)
        # Add row j in state b: the statistic becomes removed + added[b]; one logsf for every state at once.
        per_state = chi2_distribution.logsf(removed[self._variable_of] + added, self._df_of)
        per_state[~self._tested] = 0.0
        per_state = np.append(per_state, 0.0)
        total = np.zeros(self.n_rows)
        buffer = np.empty(self.n_rows)
        for v in self._tested_variables:
            np.take(per_state, self._flat[:, v], out=buffer)
            total -= buffer
        return total

    def _prepare(self) -> None:
        offsets = np.concatenate([[0], np.cumsum(self.cards)])
        self._flat = np.asfortranarray(self.codes + offsets[:-1])  # global state index of every cell
        self._frequency = np.concatenate(self.frequencies)
        self._variable_of = np.repeat(np.arange(self.n_vars), self.cards)
        df = np.asarray(self.df)
        self._df_of = np.maximum(df[self._variable_of], 1)
        self._tested = df[self._variable_of] > 0
        self._tested_variables = [v for v in range(self.n_vars) if self.df[v] > 0]

    def swap(self, out_row: int, in_row: int) -> None:
        """Apply the swap of ``out_row`` for ``in_row`` to the running state.

        Parameters
        ----------
        out_row, in_row : int
        """
        for v in range(self.n_vars):
            self.observed[v][self.codes[out_row, v]] -= 1
            self.observed[v][self.codes[in_row, v]] += 1
            self.statistics[v] = float(self._statistic(self.observed[v], v))

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value.

        Parameters
        ----------
        subset : ndarray of int

        Returns
        -------
        float
        """
        return self.start(subset)


class _CallableCriterion:
    name = "callable"

    def __init__(self, function: Callable, n_rows: int):
        self.function = function
        self.n_rows = n_rows
        self.scale = 0.0  # relative tolerance only
        self.inverse, self.multiplicity = np.arange(n_rows), np.ones(n_rows, dtype=np.intp)

    def evaluate_many(self, subsets: np.ndarray) -> np.ndarray:
        """Return the criterion of each row of ``subsets`` (shape (m, k))."""
        return np.array([float(self.function(np.sort(s))) for s in subsets])

    def start(self, subset: np.ndarray) -> float:
        """Begin the search at ``subset``; return its criterion value."""
        self.subset = subset.copy()
        return float(self.function(np.sort(self.subset)))

    def candidates(self, current: float, row: int) -> np.ndarray:
        """Return the criterion after swapping ``row`` out for each candidate (``current``: the value now)."""
        position = int(np.flatnonzero(self.subset == row)[0])
        values = np.full(self.n_rows, np.inf)
        trial = self.subset.copy()
        for j in range(self.n_rows):
            trial[position] = j
            values[j] = float(self.function(np.sort(trial)))
        return values

    def swap(self, out_row: int, in_row: int) -> None:
        """Apply the swap of ``out_row`` for ``in_row`` to the running state."""
        self.subset[self.subset == out_row] = in_row

    def refresh(self, subset: np.ndarray) -> float:
        """Recompute the state of ``subset`` from scratch (drops accumulated rounding); return its value."""
        return self.start(subset)


# ---------------------------------------------------------------------- search
def _check_k(k, n_rows: int) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise OptionTypeError(f"`k` must be an integer; got {k!r}.")
    if n_rows == 0:
        raise DataError("Cannot select representatives from empty data.")
    if not 0 < k < n_rows:
        raise OptionError(f"`k` must satisfy 0 < k < n_rows = {n_rows}; got {k}.")
    return int(k)


def random_subsets(n_rows: int, k: int, count: int, *, random_state=None) -> np.ndarray:
    """``count`` uniform k-subsets of ``range(n_rows)`` (each without replacement), one per row.

    Parameters
    ----------
    n_rows, k, count : int
    random_state : None, int or Generator

    Returns
    -------
    ndarray of shape (count, k)
    """
    rng = check_random_state(random_state)
    if count == 0:
        return np.empty((0, k), dtype=np.intp)
    return np.stack([rng.choice(n_rows, size=k, replace=False) for _ in range(count)])


def _tolerance(value: float, tol: float = 1e-10, scale: float = 0.0) -> float:
    # Changes smaller than this are rounding noise, not improvements: relative to the value, and to the
    # criterion's own scale when the value itself is ~0 (e.g. an MMD of duplicated rows).
    return tol * max(abs(value), scale) + 1e-300


def _greedy(criterion, subset: np.ndarray, max_sweeps, progress: bool, tol: float = 1e-10):
    """Algorithm 1 over the criterion's units (distinct rows); ``subset`` and the result are row positions.

    A swap brings in the lowest-numbered row among the best candidates that is not in the
    subset, exactly as a search over rows would: identical rows have identical values.
    """
    inverse, multiplicity = criterion.inverse, criterion.multiplicity
    n_rows = inverse.size
    by_unit = np.argsort(inverse, kind="stable")  # rows of unit u: by_unit[bounds[u]:bounds[u + 1]], increasing
    bounds = np.concatenate([[0], np.cumsum(multiplicity)])
    subset = subset.copy()
    member = np.zeros(n_rows, dtype=bool)
    member[subset] = True
    used = np.bincount(inverse[subset], minlength=multiplicity.size)

    def first_free(units: np.ndarray) -> int:
        rows = by_unit[bounds[units]]
        for position in np.flatnonzero(member[rows]):  # a unit whose first row is taken: its next free row
            unit = units[position]
            block = by_unit[bounds[unit] : bounds[unit + 1]]
            rows[position] = block[np.argmin(member[block])]
        return int(rows.min())

    current = criterion.start(inverse[subset])
    history, swaps_per_sweep = [current], []
    n_swaps = 0
    converged = False
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(desc=f"greedy {criterion.name}", unit="sweep", leave=False)
    sweep = 0
    try:
        while max_sweeps is None or sweep < max_sweeps:
            sweep += 1
            swapped = 0
            for position in range(subset.size):
                row = int(subset[position])
                unit = int(inverse[row])
                values = criterion.candidates(current, unit)
                values[used >= multiplicity] = np.inf  # j ranges over [N] \ S (row i itself included in S)
                best = float(values.min())
                if not best < current - _tolerance(current, tol, criterion.scale):
                    continue
                # Lowest row index among the (numerically) equal best candidates.
                j = first_free(np.flatnonzero(values <= best + _tolerance(best, 1e-12)))
                criterion.swap(unit, int(inverse[j]))
                member[row], member[j] = False, True
                used[unit] -= 1
                used[inverse[j]] += 1
                subset[position] = j
                current = float(values[inverse[j]])
                swapped += 1
            n_swaps += swapped
            swaps_per_sweep.append(swapped)
            current = criterion.refresh(inverse[subset])  # drop accumulated rounding once per sweep
            history.append(current)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(value=f"{current:.6g}", swaps=swapped)
            if swapped == 0:
                converged = True
                break
    finally:
        if bar is not None:
            bar.close()
    return np.sort(subset), history, n_swaps, sweep, converged, swaps_per_sweep


def select_representatives(
    kernel: FamilyKernel,
    data,
    k: int,
    *,
    criterion: str | Callable = "mmd",
    init="best-random",
    n_init: int = 1000,
    max_sweeps: int | None = DEFAULT_MAX_SWEEPS,
    tol: float = 1e-10,
    random_state=None,
    progress: bool = False,
    pool_size: int = 100_000,
    n_criticisms: int = 0,
) -> SelectionResult:
    """Pick ``k`` rows whose MMD to the whole data is small (Algorithm 1 of [1]_).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Usually built from a network learned on ``data``.
    data : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The rows to summarise (encoded with ``kernel.schema``).
    k : int
        Subset size, ``0 < k < n_rows``.
    criterion : {"mmd", "chi2"} or callable, default="mmd"
        ``"mmd"``: eq. 10 against the full data under ``kernel``.  ``"chi2"``: the
        paper's heuristic (:func:`chi2_criterion`).  A callable
        ``f(indices) -> float`` (smaller is better) is evaluated once per candidate:
        ``O(N)`` calls per position, so keep it cheap.
    init : {"best-random", "random"} or array of int, default="best-random"
        Start from the best of ``n_init`` uniform random subsets under the
        criterion (as in the paper), one random subset, or given row positions.
    n_init : int, default=1000
    max_sweeps : int or None, default=100
        Stop after this many passes (a ConvergenceWarning says so); None: until a
        pass makes no swap.
    tol : float, default=1e-10
        A swap must lower the criterion by more than ``tol`` times its value (or,
        for the MMD, times the mean ``K(x, x)``, when the value is ~0): smaller
        changes are rounding noise, so the search always ends.
    random_state : None, int or Generator
    progress : bool, default=False
        tqdm bars for the random starts and the sweeps.
    n_criticisms : int, default=0
        Also pick this many **criticisms** (MMD-critic, [3]_): rows where the witness
        between the data and the prototypes is largest in magnitude, with a
        log-determinant diversity term, ``argmax_c |f(c)| + log det K_{C u c}``; each
        pick costs one kernel column (``O(N n)``), never an N x N matrix.
    pool_size : int, default=100_000
        For a Dask DataFrame (data beyond memory): the size of the uniform
        candidate pool drawn into memory; the MMD target is the full data's mean
        embedding from distributed counts.

    Returns
    -------
    SelectionResult

    Raises
    ------
    ValueError, TypeError
        Empty data, ``k`` not an integer in ``(0, n_rows)``, duplicate or
        out-of-range ``init`` rows, an unknown criterion.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::10]
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> result = select_representatives(kernel, data, k=20, n_init=50, random_state=0)
    >>> len(result.indices), result.final_value <= result.initial_value
    (20, True)
    """
    rng = check_random_state(random_state)
    tol = check_nonnegative_float(tol, "tol")
    if max_sweeps is not None:
        max_sweeps = check_positive_int(max_sweeps, "max_sweeps")
    pool, target = None, None
    if not in_memory(data):
        if criterion != "mmd":
            raise OptionError("Data beyond memory supports criterion='mmd' only.")
        # Candidates: a uniform sample that fits in memory; target: the full data's mean embedding.
        provider = kernel.provider(data)
        pool = provider.sample(check_positive_int(pool_size, "pool_size"), random_state=rng)
        target = kernel.mean_embedding(provider)
        data = pool
    encoded = kernel.encode(data)  # rows with missing values get their expected embedding
    if criterion == "chi2" and encoded.n_rows and encoded.codes.min() < 0:
        raise DataError("criterion='chi2' needs complete rows; use criterion='mmd', which marginalizes missing "
                        "values.")
    n_rows = encoded.n_rows
    k = _check_k(k, n_rows)
    if isinstance(criterion, str):
        if criterion == "mmd":
            evaluator = MMDCriterion(kernel, encoded, target)
        elif criterion == "chi2":
            evaluator = Chi2Criterion(encoded.codes, encoded.cardinalities)
        else:
            raise OptionError(f"`criterion` must be 'mmd', 'chi2' or a callable; got {criterion!r}.")
    elif callable(criterion):
        evaluator = _CallableCriterion(criterion, n_rows)
    else:
        raise OptionTypeError(f"`criterion` must be 'mmd', 'chi2' or a callable; got {type(criterion).__name__}.")
    if isinstance(init, str):
        if init == "best-random":
            n_init = check_positive_int(n_init, "n_init")
            subsets = random_subsets(n_rows, k, n_init, random_state=rng)
            values = _evaluate_with_progress(evaluator, subsets, progress)
            start = subsets[int(np.argmin(values))]
        elif init == "random":
            start = random_subsets(n_rows, k, 1, random_state=rng)[0]
        else:
            raise OptionError(f"`init` must be 'best-random', 'random' or row positions; got {init!r}.")
    else:
        start = np.asarray(init)
        if start.ndim != 1 or start.size != k or start.dtype.kind not in "iu":
            raise OptionError(f"`init` must be {k} integer row positions; got shape {start.shape}, "
                              f"dtype {start.dtype}.")
        if np.unique(start).size != k or start.min() < 0 or start.max() >= n_rows:
            raise OptionError(f"`init` must hold {k} distinct row positions in [0, {n_rows}).")
    indices, history, n_swaps, n_sweeps, converged, per_sweep = _greedy(
        evaluator, np.sort(np.asarray(start, dtype=np.intp)), max_sweeps, progress, tol
    )
    if not converged:
        warnings.warn(f"The greedy search stopped after max_sweeps={max_sweeps} sweeps with swaps still improving; "
                      "raise `max_sweeps` (or pass None) or `tol`.", ConvergenceWarning, stacklevel=2)
    result = SelectionResult(indices, history, n_swaps, history[0], history[-1], n_sweeps, converged,
                             evaluator.name, per_sweep, pool)
    n_criticisms = check_positive_int(n_criticisms, "n_criticisms", minimum=0)
    if n_criticisms:
        if n_criticisms > n_rows - k:
            raise OptionError(f"`n_criticisms` must be at most n_rows - k = {n_rows - k}; got {n_criticisms}.")
        columns = evaluator.columns if isinstance(evaluator, MMDCriterion) else kernel.columns(encoded)
        result.criticisms, result.criticism_witness = _criticisms(columns, indices, n_criticisms, target)
    return result


def _criticisms(columns, prototypes: np.ndarray, count: int, target) -> tuple[np.ndarray, np.ndarray]:
    """Greedy MMD-critic: maximise ``sum |witness| + log det K_C`` one row at a time.

    The log-determinant gain of adding ``c`` is ``log`` of its conditional variance given the
    criticisms so far, kept for every candidate by a rank-one update per pick (an incremental
    Cholesky factorisation), so a pick costs one kernel column (``O(N n)`` by gathers, on the
    distinct rows).
    """
    P = columns.cell_features
    n_rows = max(columns.n_rows, 1)
    inverse = columns.inverse
    data_mean = P.T @ columns.weighted_cells(columns.multiplicity.astype(np.float64)) / n_rows
    if target is not None:
        data_mean = target
    prototype_mean = P.T @ columns.weighted_cells(np.bincount(inverse[prototypes], minlength=columns.n_units)
                                                  .astype(np.float64)) / prototypes.size
    witness = columns.inner(P @ (data_mean - prototype_mean))
    residual = columns.diag.copy()  # K(x, x | C), C empty
    taken = np.zeros(columns.inverse.size, dtype=bool)
    taken[prototypes] = True
    free = columns.multiplicity - np.bincount(inverse[prototypes], minlength=columns.n_units)
    basis = []
    chosen = []
    for _ in range(count):
        with np.errstate(divide="ignore"):  # a row already spanned by the criticisms has log 0 = -inf
            gain = np.abs(witness) + np.log(np.maximum(residual, 0.0))
        gain[(free <= 0) | (residual <= 1e-12 * max(residual.max(), 1e-300))] = -np.inf
        if not np.isfinite(gain).any():
            break
        c = int(np.argmax(gain))
        column = columns.column(c)  # K(., x_c)
        for vector in basis:
            column -= vector * vector[c]
        vector = column / np.sqrt(residual[c])
        basis.append(vector)
        residual = residual - vector**2
        free[c] -= 1
        row = int(np.flatnonzero((inverse == c) & ~taken)[0])  # the unit's first row that is not a prototype
        taken[row] = True
        chosen.append((row, witness[c]))
    rows = np.array([r for r, _ in chosen], dtype=np.intp)
    return rows, np.array([w for _, w in chosen], dtype=np.float64)


def _evaluate_with_progress(evaluator, subsets: np.ndarray, progress: bool) -> np.ndarray:
    if not progress:
        return evaluator.evaluate_many(subsets)
    from tqdm.auto import tqdm

    values = []
    with tqdm(total=len(subsets), desc=f"random starts ({evaluator.name})", unit="subset", leave=False) as bar:
        for start in range(0, len(subsets), 100):
            values.append(evaluator.evaluate_many(subsets[start : start + 100]))
            bar.update(len(values[-1]))
    return np.concatenate(values)


def random_baseline(evaluate: Callable, n_rows: int, k: int, *, n: int = 1000, random_state=None):
    """Mean and standard deviation of ``evaluate(indices)`` over ``n`` random k-subsets.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(sorted row positions) -> float``.
    n_rows, k, n : int
    random_state : None, int or Generator

    Returns
    -------
    mean, std : float
    values : ndarray of shape (n,)
    """
    k = _check_k(k, n_rows)
    n = check_positive_int(n, "n")
    rng = check_random_state(random_state)
    values = np.array([float(evaluate(np.sort(s))) for s in random_subsets(n_rows, k, n, random_state=rng)])
    return float(values.mean()), float(values.std(ddof=1) if n > 1 else 0.0), values


def random_mmd_baseline(kernel: FamilyKernel, data, k: int, *, n: int = 1000, random_state=None):
    """Mean and standard deviation of the MMD of ``n`` random k-subsets to ``data`` (vectorised).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    data : DataFrame, ndarray of int or EncodedData
    k, n : int
    random_state : None, int or Generator

    Returns
    -------
    mean, std : float
    values : ndarray of shape (n,)
    """
    encoded = kernel.encode(data)
    k = _check_k(k, encoded.n_rows)
    rng = check_random_state(random_state)
    values = MMDCriterion(kernel, encoded).evaluate_many(random_subsets(encoded.n_rows, k, n, random_state=rng))
    return float(values.mean()), float(values.std(ddof=1) if n > 1 else 0.0), values


# ------------------------------------------------------------------ two-sample
@dataclass
class TwoSampleResult:
    """Outcome of :func:`mmd_test`.

    Attributes
    ----------
    statistic : float
        The biased MMD^2 of eq. 10 (the test statistic).
    p_value : float
        ``(1 + #{T_b >= T}) / (1 + B)`` over ``B`` permutations.
    unbiased : float
        The unbiased estimate MMD^2_u of [2]_ (eq. 3 there).
    null_distribution : ndarray
        The permutation statistics ``T_b``.
    full_statistic : float or None
        For Dask data: eq. 10 between the *whole* samples, from distributed counts
        (the test itself runs on in-memory uniform subsamples).
    """

    statistic: float
    p_value: float
    unbiased: float
    null_distribution: np.ndarray = field(repr=False)
    full_statistic: float | None = None

    @classmethod
    def from_statistics(cls, outcome) -> TwoSampleResult:
        """Return the test of the total MMD² from per-family permutation statistics.

        Parameters
        ----------
        outcome : PermutationStatistics
            From :func:`permutation_statistics` (which :func:`mmd_test` calls).

        Returns
        -------
        TwoSampleResult
        """
        observed = float(outcome.observed.sum())
        null = outcome.null.sum(axis=1)
        # Ties within rounding count as "at least as extreme".
        exceed = int(np.sum(null >= observed - _tolerance(observed, 1e-12)))
        return cls(observed, (1 + exceed) / (1 + len(null)), outcome.unbiased, null, outcome.full_statistic)

    def _repr_html_(self) -> str:
        rows = [("MMD² (eq. 10)", f"{self.statistic:.6g}"), ("unbiased MMD²_u", f"{self.unbiased:.6g}"),
                ("p-value", f"{self.p_value:.4g}"), ("permutations", f"{len(self.null_distribution)}")]
        if self.full_statistic is not None:
            rows.append(("MMD² of the whole samples", f"{self.full_statistic:.6g}"))
        return _html_table("Two-sample test", rows)


def mmd_test(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
             max_rows: int = 10_000_000) -> TwoSampleResult:
    """Permutation two-sample test with the Fisher-kernel MMD, from count tables.

    A random re-split of the pooled rows only decides how many copies of each
    *distinct* row go to the first sample -- a multivariate hypergeometric draw
    over the distinct rows with their multiplicities, the same null distribution
    as row permutations.  eq. 10 is a function of the resulting count tables, so a
    batch of draws costs one sparse (cells x distinct rows) times dense (distinct
    rows x batch) product per family (:func:`permutation_statistics`).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize`` (the MMD must be a function of counts).
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The two samples (encoded with ``kernel.schema``).
    n_permutations : int, default=1000
    random_state : None, int or Generator
    max_rows : int, default=10_000_000
        For Dask DataFrames (data beyond memory): the test needs only each
        sample's distinct rows and their counts, from a distributed group-by, and
        is then exact on all rows.  When a sample has more than ``max_rows``
        distinct rows (too many for memory) a UserWarning says so and the test
        runs on uniform subsamples of ``max_rows`` rows instead, with
        ``full_statistic`` holding eq. 10 of the whole samples.

    Returns
    -------
    TwoSampleResult

    Notes
    -----
    The Fisher kernel's RKHS is finite-dimensional, hence not universal: the
    population MMD is zero for any two distributions whose expected feature maps
    agree -- those that share, per variable and parent configuration, the
    parent-configuration-weighted conditional frequencies the network sees.  The
    test therefore has power against differences *the network's families can
    express* (the paper's caveat, [1]_ Sec. 6.3), not against every difference.
    The permutation p-value is valid (exact level) whatever the kernel.
    """
    outcome = permutation_statistics(kernel, X, Y, n_permutations=n_permutations, random_state=random_state,
                                     max_rows=max_rows)
    return TwoSampleResult.from_statistics(outcome)


@dataclass
class PermutationStatistics:
    """Per-family MMD² of the observed split and of every permutation (see :func:`permutation_statistics`).

    Attributes
    ----------
    families : list of int
        Indices (in ``kernel.families``) of the families with features.
    observed : ndarray of shape (n_families,)
        Each family's contribution ``||mu_X,f - mu_Y,f||^2``; they sum to eq. 10.
    null : ndarray of shape (n_permutations, n_families)
        The same for every permutation.
    unbiased : float
        ``MMD^2_u`` of the observed split.
    full_statistic : float or None
        For data beyond memory: eq. 10 between the whole samples.
    mean_x, mean_y : ndarray
        The observed samples' mean embeddings.
    """

    families: list
    observed: np.ndarray
    null: np.ndarray
    unbiased: float
    full_statistic: float | None
    mean_x: np.ndarray
    mean_y: np.ndarray


def permutation_statistics(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, random_state=None,
                           max_rows: int = 10_000_000) -> PermutationStatistics:
    """Per-family MMD² of two samples and of ``n_permutations`` random re-splits, from count tables.

    The engine of :func:`mmd_test` and :func:`bnfisher.explain.mmd_by_family`: with the
    same ``random_state`` both see the same permutations.  The pooled rows are
    compressed to distinct rows with multiplicities; a permutation is the number of
    copies of each distinct row sent to the first sample (a multivariate
    hypergeometric draw: the same null as permuting rows), and every family's count
    table is a weighted sum over distinct rows (one cell per complete family, the
    posterior where values are missing).  A batch of draws is one sparse x dense
    product per family, and yields every family's statistic at once.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize``.
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
    n_permutations : int, default=1000
    random_state : None, int or Generator
    max_rows : int, default=10_000_000
        For data beyond memory: the most distinct rows a sample may have for the
        exact test (see :func:`mmd_test`).

    Returns
    -------
    PermutationStatistics

    Raises
    ------
    OptionError
        For a normalized kernel.
    DataError
        When a sample has fewer than 2 rows.
    """
    if kernel.normalize:
        raise OptionError("mmd_test needs a kernel without normalize=True (the MMD must come from counts).")
    rng = check_random_state(random_state)
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    full_statistic = None
    limit = check_positive_int(max_rows, "max_rows")
    samples = []  # per sample: (codes in the kernel's order, copies of each of those rows)
    for data in (X, Y):
        if in_memory(data):
            codes = kernel.encode(data).codes
            samples.append((codes, np.ones(codes.shape[0], dtype=np.int64)))
            continue
        # Distributed rows: a group-by to distinct rows and counts, which is all the test needs.
        provider = kernel.provider(data)
        grouped = provider.distinct(max_rows=limit) if hasattr(provider, "distinct") else None
        if grouped is None:
            warnings.warn(f"A sample has more than max_rows={limit} distinct rows, too many to hold in memory: "
                          f"the permutation test runs on a uniform subsample of {limit} rows of each sample "
                          "(`full_statistic` holds eq. 10 of the whole samples). Raise `max_rows` if memory allows.",
                          UserWarning, stacklevel=3)
            full_statistic = kernel.mmd(kernel.provider(X) if not in_memory(X) else X,
                                        kernel.provider(Y) if not in_memory(Y) else Y)
            codes = kernel.encode(provider.sample(limit, random_state=rng)).codes
            samples.append((codes, np.ones(codes.shape[0], dtype=np.int64)))
        else:
            distinct, copies = grouped  # columns in the declared order: encode puts them in the kernel's
            samples.append((kernel.encode(distinct).codes, copies))
    n_x, n_y = (int(copies.sum()) for _, copies in samples)
    if n_x < 2 or n_y < 2:
        raise DataError(f"Each sample needs at least 2 rows; got {n_x} and {n_y}.")
    # Statistics depend on the rows only through how many copies of each distinct row each side holds: work on
    # distinct rows (one inference per distinct row when values are missing) with their multiplicities.
    (codes_x, copies_x), (codes_y, copies_y) = samples
    pooled = EncodedData(np.vstack([codes_x, codes_y]), kernel.network.variables, dict(kernel.network.states),
                         schema=kernel.schema)
    del samples, codes_x, codes_y
    units = kernel.columns(pooled)
    del pooled
    multiplicity = np.bincount(units.inverse, weights=np.concatenate([copies_x, copies_y]),
                               minlength=units.n_units).astype(np.int64)
    observed = np.bincount(units.inverse[: copies_x.size], weights=copies_x, minlength=units.n_units).astype(np.int64)
    self_kernel = units.diag  # K(x, x) of every distinct row (its expected features' squared norm if incomplete)
    # Counts are sums of 0/1 weights below 2**24 for complete rows: exact in float32, at half the memory traffic.
    exact32 = units.incomplete.size == 0 and n_x + n_y < 2**24
    # cells x distinct rows, by columns: the product reads each draw row once (cache friendly, ~10x CSR).
    matrix = units.cell_matrix(np.float32 if exact32 else np.float64).tocsc()
    # Distinct rows in order of multiplicity: split_draws then fills contiguous blocks.
    order = np.argsort(multiplicity, kind="stable")
    matrix, multiplicity, observed, self_kernel = matrix[:, order], multiplicity[order], observed[order], \
        self_kernel[order]
    pooled_counts = (matrix @ multiplicity.astype(matrix.dtype)).astype(np.float64)
    active = units.active
    cards = kernel.network.cardinalities
    tables = [kernel.cell_features(i).reshape(-1, int(cards[i]), kernel.block_width(i)) for i in active]

    def parts(draws: np.ndarray) -> np.ndarray:
        """Per-family MMD² of every column of ``draws`` (copies of each distinct row on the first side)."""
        counts_x = (matrix @ np.ascontiguousarray(draws, dtype=matrix.dtype)).astype(np.float64)  # cells x batch
        size = counts_x.shape[1]
        difference = counts_x * (1 / n_x + 1 / n_y) - (pooled_counts / n_y)[:, None]  # counts_x/n_x - counts_y/n_y
        out = np.empty((size, len(active)))
        for k, table in enumerate(tables):
            block = difference[units.offsets[k]: units.offsets[k + 1]].reshape(-1, table.shape[1], size)
            projected = np.einsum("jab,jad->jdb", block, table)
            out[:, k] = np.einsum("jdb,jdb->b", projected, projected)
        return out

    observed_parts = parts(observed[:, None])[0]
    counts_x, counts_y = [None] * len(kernel.families), [None] * len(kernel.families)
    observed_counts = (matrix @ observed.astype(matrix.dtype)).astype(np.float64)  # no float64 copy of the matrix
    for k, i in enumerate(active):
        counts_x[i] = observed_counts[units.offsets[k]: units.offsets[k + 1]]
        counts_y[i] = pooled_counts[units.offsets[k]: units.offsets[k + 1]] - counts_x[i]
    mean_x = kernel.mean_embedding_from_counts(counts_x, n_x)
    mean_y = kernel.mean_embedding_from_counts(counts_y, n_y)
    trace_x = float(self_kernel @ observed)
    trace_y = float(self_kernel @ (multiplicity - observed))
    # sum_{i != j} k(x_i, x_j) = ||sum_i phi(x_i)||^2 - sum_i k(x_i, x_i)
    within_x = (n_x**2 * float(mean_x @ mean_x) - trace_x) / (n_x * (n_x - 1))
    within_y = (n_y**2 * float(mean_y @ mean_y) - trace_y) / (n_y * (n_y - 1))
    unbiased = within_x + within_y - 2 * float(mean_x @ mean_y)
    # Random re-splits: the copies of each distinct row sent first follow a multivariate hypergeometric law (the
    # same null as permuting rows); a batch of draws is one sparse x dense product.
    null_parts = np.empty((n_permutations, len(active)))
    batch = int(max(1, min(n_permutations, (1 << 25) // max(units.n_units, 1))))
    for start in range(0, n_permutations, batch):
        size = min(batch, n_permutations - start)
        null_parts[start:start + size] = parts(split_draws(multiplicity, n_x, size, random_state=rng))
    return PermutationStatistics(list(active), observed_parts, null_parts, unbiased, full_statistic, mean_x, mean_y)


#: Distinct rows with at most this many copies are split by Bernoulli draws, the others by binomials.
_BERNOULLI_COPIES = 16


def split_draws(multiplicity: np.ndarray, n_first: int, size: int, *, random_state=None) -> np.ndarray:
    """Random splits of pooled rows, as copies of each distinct row sent to the first sample.

    Each column is one uniformly random ``n_first``-subset of the pooled rows, counted by
    distinct row: a multivariate hypergeometric draw, the null of a permutation test.
    It is drawn in ``O(n_distinct)``: every row joins the first sample independently
    with probability ``n_first / N`` (a binomial per distinct row), then the excess
    or shortfall, ``O(sqrt(N))`` rows, is removed from or added to it uniformly at
    random.  The result is exchangeable over the rows and always has ``n_first`` of
    them, hence uniform over the ``n_first``-subsets.

    Parameters
    ----------
    multiplicity : ndarray of int, shape (n_distinct,)
        Copies of each distinct row in the pooled sample.
    n_first : int
        Rows of the first sample, ``0 <= n_first <= multiplicity.sum()``.
    size : int
        Number of splits.
    random_state : None, int or Generator

    Returns
    -------
    ndarray of int32, shape (n_distinct, size)
        (A transposed view: each split is contiguous.)

    Examples
    --------
    >>> import numpy as np
    >>> draws = split_draws(np.array([3, 1, 2]), 4, 5, random_state=0)
    >>> draws.sum(axis=0).tolist(), bool((draws <= [[3], [1], [2]]).all())
    ([4, 4, 4, 4, 4], True)
    """
    rng = check_random_state(random_state)
    multiplicity = np.asarray(multiplicity, dtype=np.int64)
    n_total = int(multiplicity.sum())
    # Every row's inclusion probability: a multiple of 2**-24, so that a float32 uniform below it has exactly that
    # probability, the same as each row's in the binomials (rows must be exchangeable; any common p will do).
    p = np.floor(n_first / n_total * 2**24) / 2**24 if n_total else 0.0
    # Draw in order of multiplicity (contiguous blocks of equal copies); sorted input needs no reordering.
    order = np.argsort(multiplicity, kind="stable")
    ordered = multiplicity[order]
    rows = np.empty((size, multiplicity.size), dtype=np.int32)  # one split per row of this array, contiguous
    bounds = np.searchsorted(ordered, np.arange(_BERNOULLI_COPIES + 2))
    for copies in range(1, _BERNOULLI_COPIES + 1):
        # Few copies: a sum of Bernoulli draws from float32 uniforms (faster than numpy's binomial).
        begin, end = bounds[copies], bounds[copies + 1]
        if end > begin:
            uniforms = rng.random((size, end - begin, copies), dtype=np.float32)
            rows[:, begin:end] = (uniforms < np.float32(p)).sum(axis=2, dtype=np.int32)
    rows[:, : bounds[1]] = 0  # rows with no copies (an empty unit) never move
    begin = bounds[_BERNOULLI_COPIES + 1]
    if begin < ordered.size:
        rows[:, begin:] = rng.binomial(ordered[begin:], p, size=(size, ordered.size - begin))
    if np.any(np.diff(order) != 1):
        rows = rows[:, np.argsort(order)]
        ordered = multiplicity
    for draw in rows:
        excess = int(draw.sum(dtype=np.int64)) - n_first
        if excess == 0:
            continue
        # Remove |excess| rows of the first sample, or add them from the rest, uniformly among those rows.
        cumulative = np.cumsum(draw if excess > 0 else ordered - draw)
        picked = rng.choice(int(cumulative[-1]), size=abs(excess), replace=False)
        np.add.at(draw, np.searchsorted(cumulative, picked, side="right"), -1 if excess > 0 else 1)
    return rows.T
