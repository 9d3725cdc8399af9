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

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.html import html_table
from bnfisher._utils.numeric import rounding_tolerance
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_nonnegative_float, check_option, check_positive_int, check_random_state
from bnfisher.data.providers import GroupingProvider, in_memory
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import ConvergenceWarning, DataError, OptionError, OptionTypeError
from bnfisher.kernels.base import FamilyKernel
from bnfisher.summary.baselines import _evaluate_with_progress, check_k, random_subsets
from bnfisher.summary.criteria import Chi2Criterion, Criterion, MMDCriterion, _CallableCriterion

__all__ = ["complete_candidates", 'SelectionResult', 'select_representatives']




#: Default cap on the greedy search's sweeps (a ConvergenceWarning names ``max_sweeps`` when it is reached).
DEFAULT_MAX_SWEEPS = 100


@dataclass
class SelectionResult:
    """Outcome of :func:`select_representatives`.

    Attributes
    ----------
    indices : ndarray of int
        Selected rows: their 0-based positions in the data, in data order (also for
        data beyond memory, where they are the pool rows' global row numbers).
    objective : list of float
        Criterion value at the start and after every sweep (:attr:`initial_value` and
        :attr:`final_value` are its ends).
    converged : bool
        The last sweep made no swap.
    criterion : str
    swaps_per_sweep : list of int
        Swaps accepted in each full pass over ``S`` (:attr:`n_sweeps` passes, :attr:`n_swaps` swaps).
    pool : DataFrame or None
        For data beyond memory: the in-memory candidate pool (its index holds the
        rows' global row numbers); ``pool.iloc[pool_positions]`` are the selected rows.
    pool_positions : ndarray of int or None
        For data beyond memory: the selected rows' positions in ``pool``.
    pool_target : ndarray or None
        For data beyond memory: the whole data's cell frequencies (its mean embedding's
        cells), against which the pool's subsets were measured.
    criticisms : ndarray of int
        With ``n_criticisms``: rows the prototypes represent worst (MMD-critic), in
        the order they were picked, as positions in the data; empty otherwise.
    criticism_witness : ndarray of float
        The witness ``<Phi(x), mu_data - mu_prototypes>`` of each criticism: positive
        where the data has more mass than the prototypes.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> result = bf.select_representatives(kernel, data, 20, n_init=20, random_state=0)
    >>> len(result.indices), result.converged
    (20, True)
    """

    indices: np.ndarray
    objective: list
    converged: bool
    criterion: str
    swaps_per_sweep: list = field(default_factory=list)
    pool: object = None
    criticisms: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    criticism_witness: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pool_positions: np.ndarray | None = None
    pool_target: np.ndarray | None = None

    @property
    def initial_value(self) -> float:
        """Criterion value of the starting subset (NaN when no search ran)."""
        return float(self.objective[0]) if self.objective else float("nan")

    @property
    def final_value(self) -> float:
        """Criterion value of the final subset (NaN when no search ran)."""
        return float(self.objective[-1]) if self.objective else float("nan")

    @property
    def n_sweeps(self) -> int:
        """Full passes over ``S`` (the last one made no swap when ``converged``)."""
        return len(self.swaps_per_sweep)

    @property
    def n_swaps(self) -> int:
        """Swaps accepted in total."""
        return int(sum(self.swaps_per_sweep))

    def _repr_html_(self) -> str:
        return html_table(f"Representative subset ({self.criterion})", [
            ("rows", str(len(self.indices))), ("start → final", f"{self.initial_value:.6g} → {self.final_value:.6g}"),
            ("sweeps, swaps", f"{self.n_sweeps}, {self.n_swaps}"), ("converged", str(self.converged)),
            ("criticisms", ", ".join(map(str, self.criticisms[:10])) or "-")])


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
    converged = False
    bar = None
    if progress:
        bar = progress_bar(desc=f"greedy {criterion.name}", unit="sweep", leave=False)
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
                if not best < current - rounding_tolerance(current, tol, criterion.scale):
                    continue
                # Lowest row index among the (numerically) equal best candidates.
                j = first_free(np.flatnonzero(values <= best + rounding_tolerance(best, 1e-12)))
                criterion.swap(unit, int(inverse[j]))
                member[row], member[j] = False, True
                used[unit] -= 1
                used[inverse[j]] += 1
                subset[position] = j
                current = float(values[inverse[j]])
                swapped += 1
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
    return np.sort(subset), history, converged, swaps_per_sweep


def select_representatives(
    kernel: FamilyKernel,
    data,
    k: int,
    *,
    criterion: str | Callable | Criterion = "mmd",
    init="best-random",
    n_init: int = 1000,
    max_sweeps: int | None = DEFAULT_MAX_SWEEPS,
    tol: float = 1e-10,
    random_state=None,
    progress: bool = False,
    pool_size: int = 100_000,
    n_criticisms: int = 0,
    candidates: str = "complete",
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
    criterion : {"mmd", "chi2"}, callable or Criterion, default="mmd"
        ``"mmd"``: eq. 10 against the full data under ``kernel``.  ``"chi2"``: the
        paper's heuristic (:func:`chi2_criterion`).  A callable
        ``f(indices) -> float`` (smaller is better) is evaluated once per candidate:
        ``O(N)`` calls per position, so keep it cheap.  A :class:`Criterion` built
        on the same rows (e.g. an :class:`MMDCriterion` whose kernel columns the
        caller reuses for a random baseline) is used as it is.
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
    candidates : {"complete", "all"}, default="complete"
        Which rows may be chosen.  ``"complete"``: rows without a missing cell, while
        the target stays the whole data's (expected) embedding; an incomplete row's
        expected embedding averages over its completions and lies nearer the mean, so
        ``"all"`` favours incomplete rows without their being typical (see
        ``docs/missing-data.md``).  Ignored for a :class:`Criterion` passed in.
    n_criticisms : int, default=0
        Also pick this many **criticisms** (MMD-critic, [3]_): rows where the witness
        between the data and the prototypes is largest in magnitude, with a
        log-determinant diversity term, ``argmax_c |f(c)| + log det K_{C u c}``; each
        pick costs one kernel column (``O(N n)``), never an N x N matrix.
    pool_size : int, default=100_000
        For a Dask DataFrame: data of at most this many rows is read into memory whole
        and searched exactly as in memory (the same rows); larger data is searched in
        a uniform pool of this many rows, against the full data's mean embedding from
        distributed counts (an approximation, said in ``SelectionResult.pool``).

    Returns
    -------
    SelectionResult

    Raises
    ------
    ValueError, TypeError
        Empty data, ``k`` not an integer in ``(0, n_rows)``, duplicate or
        out-of-range ``init`` rows, an unknown criterion.

    References
    ----------
    .. [1] J. Leppä-aho, T. Silander, T. Roos (2020). Bayesian network Fisher kernel for
       categorical feature spaces. Behaviormetrika 47, 81-103.
    .. [3] B. Kim, R. Khanna, O. Koyejo (2016). Examples are not enough, learn to criticize!
       Criticism for interpretability. NeurIPS 29.

    Examples
    --------
    >>> data = load("nursery").iloc[::10]
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> result = select_representatives(kernel, data, k=20, n_init=50, random_state=0)
    >>> len(result.indices), result.final_value <= result.initial_value
    (20, True)
    """
    rng = check_random_state(random_state)
    tol = check_nonnegative_float(tol, "tol")
    max_sweeps = None if max_sweeps is None else check_positive_int(max_sweeps, "max_sweeps")
    n_criticisms = check_positive_int(n_criticisms, "n_criticisms", minimum=0)
    pool, target = None, None
    if not in_memory(data):
        data, pool, target = _beyond_memory(kernel, data, pool_size=pool_size, criterion=criterion, rng=rng)
    encoded = kernel.encode(data)  # rows with missing values get their expected embedding
    # candidate_rows: positions of the candidates among the rows, when not every row is one
    encoded, candidate_rows, target = _candidates(kernel, encoded, candidates, criterion, k, target)
    if criterion == "chi2" and encoded.n_rows and encoded.codes.min() < 0:
        raise DataError("criterion='chi2' needs complete rows; use criterion='mmd', which marginalizes missing "
                        "values.")
    k = check_k(k, encoded.n_rows)
    if n_criticisms > encoded.n_rows - k:
        raise OptionError(f"`n_criticisms` must be at most n_rows - k = {encoded.n_rows - k}; got {n_criticisms}.")
    evaluator = _evaluator(criterion, kernel, encoded, target)
    start = _start(init, evaluator, n_rows=encoded.n_rows, k=k, n_init=n_init, rng=rng, progress=progress)
    indices, history, converged, per_sweep = _greedy(
        evaluator, np.sort(np.asarray(start, dtype=np.intp)), max_sweeps, progress, tol
    )
    if not converged:
        warnings.warn(f"The greedy search stopped after max_sweeps={max_sweeps} sweeps with swaps still improving; "
                      "raise `max_sweeps` (or pass None) or `tol`.", ConvergenceWarning, stacklevel=2)
    criticisms, witness = np.zeros(0, dtype=np.intp), np.zeros(0)
    if n_criticisms:
        columns = evaluator.columns if isinstance(evaluator, MMDCriterion) else kernel.columns(encoded)
        criticisms, witness = _criticisms(columns, indices, n_criticisms, target)
    pool_positions, pool_target = (None, None) if pool is None else (indices, target)
    return SelectionResult(indices=_data_positions(indices, candidate_rows, pool), objective=history,
                           converged=converged, criterion=evaluator.name, swaps_per_sweep=per_sweep, pool=pool,
                           criticisms=_data_positions(criticisms, candidate_rows, pool), criticism_witness=witness,
                           pool_positions=pool_positions, pool_target=pool_target)


def _data_positions(positions: np.ndarray, candidate_rows: np.ndarray | None, pool) -> np.ndarray:
    """Return positions among the candidates as positions among the rows (of the data, beyond memory)."""
    if candidate_rows is not None:
        positions = candidate_rows[positions]
    if pool is not None:
        positions = np.asarray(pool.index, dtype=np.int64)[positions]
    return positions


def _candidates(kernel: FamilyKernel, encoded, candidates: str, criterion, k, target) -> tuple:
    """Return the candidate rows' encoded data, their positions among the rows (None: every row), and the target.

    ``candidates='complete'`` keeps the complete rows (the target stays the mean embedding of every row).
    """
    if check_option(candidates, "candidates", ("complete", "all")) == "all" or isinstance(criterion, Criterion):
        return encoded, None, target
    encoded, candidate_rows, complete_target = complete_candidates(kernel, encoded)
    if candidate_rows is not None and not isinstance(k, bool) and isinstance(k, int) and k >= len(candidate_rows):
        raise OptionError(f"Only {len(candidate_rows)} rows are complete, too few to choose k={k} among them; "
                          "pass candidates='all' (incomplete rows may then be chosen) or a smaller k.")
    return encoded, candidate_rows, complete_target if target is None else target


def _beyond_memory(kernel: FamilyKernel, data, *, pool_size: int, criterion, rng) -> tuple:
    """Return the rows to search, the pool they were sampled into (or None) and the target's cell frequencies.

    Every row, in order, when they fit in the pool (then the search is the one in memory); else a uniform sample
    that fits, with the whole data's cell frequencies as the target.
    """
    provider = kernel.provider(data)
    pool_size = check_positive_int(pool_size, "pool_size")
    if provider.n_rows <= pool_size and isinstance(provider, GroupingProvider):
        return provider.rows(), None, None
    if criterion != "mmd":
        raise OptionError("Data beyond memory supports criterion='mmd' only.")
    pool = provider.sample(pool_size, random_state=rng)
    counts, n_target = kernel.frequency_counts(provider)
    target = np.concatenate([np.ravel(counts[i]) for i in range(len(kernel.families)) if kernel.block_width(i)])
    return pool, pool, target / n_target


def _evaluator(criterion, kernel: FamilyKernel, encoded: EncodedData, target) -> Criterion:
    """Return the criterion's evaluator on these rows: a name, a :class:`Criterion` or a callable of a subset."""
    if isinstance(criterion, Criterion) and not isinstance(criterion, str):
        return criterion  # built by the caller on these rows (e.g. to reuse its kernel columns)
    named: dict[str, Callable[[], Criterion]] = {
        "mmd": lambda: MMDCriterion(kernel, encoded, target),
        "chi2": lambda: Chi2Criterion(encoded.codes, encoded.cardinalities)}
    if isinstance(criterion, str):
        if criterion not in named:
            raise OptionError(f"`criterion` must be 'mmd', 'chi2' or a callable; got {criterion!r}.")
        return named[criterion]()
    if callable(criterion):
        return _CallableCriterion(criterion, encoded.n_rows)
    raise OptionTypeError(f"`criterion` must be 'mmd', 'chi2' or a callable; got {type(criterion).__name__}.")


def _start(init, evaluator: Criterion, *, n_rows: int, k: int, n_init: int, rng, progress: bool) -> np.ndarray:
    """Return the search's first subset: the best of ``n_init`` random ones, one random one, or the given rows."""
    if isinstance(init, str):
        if init == "best-random":
            subsets = random_subsets(n_rows, k, check_positive_int(n_init, "n_init"), random_state=rng)
            return subsets[int(np.argmin(_evaluate_with_progress(evaluator, subsets, progress)))]
        if init == "random":
            return random_subsets(n_rows, k, 1, random_state=rng)[0]
        raise OptionError(f"`init` must be 'best-random', 'random' or row positions; got {init!r}.")
    start = np.asarray(init)
    if start.ndim != 1 or start.size != k or start.dtype.kind not in "iu":
        raise OptionError(f"`init` must be {k} integer row positions; got shape {start.shape}, dtype {start.dtype}.")
    if np.unique(start).size != k or start.min() < 0 or start.max() >= n_rows:
        raise OptionError(f"`init` must hold {k} distinct row positions in [0, {n_rows}).")
    return start


def complete_candidates(kernel: FamilyKernel, encoded: EncodedData) -> tuple:
    """Candidates among the complete rows, with the whole data's cell frequencies as the target.

    Parameters
    ----------
    kernel : FamilyKernel
    encoded : EncodedData
        All rows (missing cells are -1).

    Returns
    -------
    candidates : EncodedData
        The complete rows (``encoded`` itself when every row is complete).
    rows : ndarray of int or None
        Their positions in ``encoded`` (None when every row is complete).
    target : ndarray or None
        The whole data's cell frequencies (expected ones for incomplete rows), cells as in
        ``kernel.columns(candidates)``; None when every row is complete.

    Raises
    ------
    DataError
        When no row is complete.
    """
    if not encoded.n_rows or encoded.codes.min() >= 0:
        return encoded, None, None
    rows = np.flatnonzero((encoded.codes >= 0).all(axis=1))
    if rows.size == 0:
        raise DataError("No row is complete, so no row can be chosen with candidates='complete'; pass "
                        "candidates='all' to choose among incomplete rows.")
    if kernel.normalize:  # cosine-normalised rows: the target is not a function of the counts
        columns = kernel.columns(encoded)
        return encoded.take(rows), rows, columns.weighted_cells(columns.multiplicity.astype(np.float64)) / len(
            encoded.codes)
    counts, n_rows = kernel.frequency_counts(encoded)
    target = np.concatenate([np.ravel(counts[i]) for i in range(len(kernel.families)) if kernel.block_width(i)]
                            or [np.zeros(0)])  # no family with a feature: an empty target
    return encoded.take(rows), rows, target / n_rows


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
    if target is None:
        target = columns.weighted_cells(columns.multiplicity.astype(np.float64)) / n_rows
    data_mean = P.T @ target
    prototype_mean = P.T @ columns.weighted_cells(np.bincount(inverse[prototypes], minlength=columns.n_units)
                                                  .astype(np.float64)) / prototypes.size
    witness = columns.inner(P @ (data_mean - prototype_mean))
    residual = columns.diag.copy()  # K(x, x | C), C empty
    taken = np.zeros(columns.inverse.size, dtype=bool)
    taken[prototypes] = True
    free = columns.multiplicity - np.bincount(inverse[prototypes], minlength=columns.n_units)
    basis: list = []
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
