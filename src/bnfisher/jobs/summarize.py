"""The summarize job: representative rows of a table (Algorithm 1), with what they are worth.

:func:`summarize` resolves its input once, learns or takes the network, builds the
kernel columns once (the search and the random baseline share them) and returns a
:class:`SummaryResult`: the text, the report, the JSON, the plot and the subset file
are all rendered from it.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_positive_int, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.data.binning import Binning
from bnfisher.data.io import read_table
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import OptionError, OptionTypeError
from bnfisher.jobs.inputs import binned_note, feature_advice, prepare, warn
from bnfisher.jobs.summarize_result import SummaryResult
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.fisher import FisherKernel
from bnfisher.summary.balance import balance_margins
from bnfisher.summary.baselines import random_subsets
from bnfisher.summary.criteria import MMDCriterion, chi2_criterion
from bnfisher.summary.fidelity import column_fidelity, cpt_distances, pair_tv
from bnfisher.summary.margins import margin_pairs
from bnfisher.summary.search import SelectionResult, complete_candidates, select_representatives

__all__ = ["SummaryResult", "summarize", "summarize_distributed"]


def summarize(data, k: int, *, network: BayesianNetwork | None = None, structure: str = "chow-liu",
              bins: int | None = None, bin_columns=None, categorical=None, na_values=(), criterion: str = "mmd",
              n_init: int = 1000,
              n_random: int = 1000, n_criticisms: int = 0, source: str = "data", random_state=None,
              progress: bool = False, learn_options: dict | None = None, candidates: str = "auto",
              pool_size: int | None = None, refine: str | None = "margins") -> SummaryResult:
    """Pick ``k`` representative rows of a table (Algorithm 1) and say how representative they are.

    Parameters
    ----------
    data : DataFrame
        The table, as read (labels; numeric columns are binned when ``bins`` is given).
    k : int
        Rows to pick.
    network : BayesianNetwork, optional
        The model whose Fisher kernel measures representativeness.  Default: learned from ``data``.
    structure : str, default="chow-liu"
        How to learn the network (see :func:`bnfisher.learn`) when ``network`` is not given.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Bin numeric columns into at most this many quantile bins.
    criterion : {"mmd", "chi2"}, default="mmd"
        The objective of the greedy search (eq. 10, or the paper's chi-square heuristic).
    refine : {"margins", None}, default="margins"
        ``"margins"``: after Algorithm 1, swap rows to bring each column's labels and each
        pair of columns' joint labels nearer the table's (mean total-variation distance,
        :func:`~bnfisher.summary.refine_margins`, restarted from random perturbations where
        that is cheap; for ``k <= 256`` also two annealing walks,
        :func:`~bnfisher.summary.anneal_margins`, the lowest product of the column and pair
        distances kept: :func:`~bnfisher.summary.balance_margins`) while the Fisher MMD² stays
        within 1.45 times Algorithm 1's: the
        Fisher kernel weighs a cell by ``1 / theta``, so Algorithm 1 alone buys rare cells at
        the expense of common labels.  None: Algorithm 1 alone, the
        paper's selection.  (With ``criterion="chi2"``, None.)
    n_init : int, default=1000
        Random subsets the search starts from the best of.
    n_random : int, default=1000
        Random subsets of size ``k`` for the baseline.
    n_criticisms : int, default=0
        Rows the subset represents worst (MMD-critic), reported beside it.
    source : str, default="data"
        The data's name, for reports.
    candidates : {"auto", "all", "complete"}, default="auto"
        Which rows may be chosen.  ``"auto"``: on a table with missing cells, the complete
        rows and the rows with a missing cell are chosen apart, in the table's proportions,
        each set chosen to represent its own rows (incomplete rows by their expected
        embedding, paper Sec. 8), so the subset keeps the labels that live only in
        incomplete rows and the table's share of them; every row otherwise.  ``"complete"``:
        only complete rows, against the whole table's mean embedding.  ``"all"``: every row,
        in one search (incomplete rows' expected embeddings sit near the mean, so the search
        favours them).  ``criterion="chi2"`` is defined on complete rows: ``"auto"`` then
        means ``"complete"``.
    random_state : None, int or Generator
    progress : bool, default=False
        Show progress of the search.
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.
    pool_size : int, optional
        On a table of more rows, the search chooses among a uniform pool of this many rows
        (default :data:`POOL_SIZE`), still against the whole table's mean embedding; the
        subset is measured against the whole table and random subsets of it.  A search's
        sweep costs a kernel column over the candidates per chosen row, so a pool keeps
        large ``k`` on large tables fast; give a larger value (or the row count) for the
        search over every row.

    Returns
    -------
    SummaryResult

    Examples
    --------
    >>> result = summarize(load("nursery").iloc[:2000], 20, n_init=50, n_random=50, random_state=0)
    >>> len(result.indices), bool(result.mmd2 < result.random_mmd2.mean())
    (20, True)
    """
    if not isinstance(data, pd.DataFrame):
        raise OptionTypeError(f"`data` must be a pandas DataFrame; got {type(data).__name__}.")
    if criterion not in ("mmd", "chi2"):
        raise OptionError(f"`criterion` must be 'mmd' or 'chi2'; got {criterion!r}.")
    n_random = check_positive_int(n_random, "n_random")
    check_option(refine, "refine", REFINE)
    rng = check_random_state(random_state)
    network, (encoded,), notes, advice = prepare([data], network=network, structure=structure,
                                                 binning=Binning(bins, bin_columns, categorical, na_values),
                                                 learn_options=learn_options)
    kernel = FisherKernel(network)
    notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
    advice += feature_advice(kernel)
    warn(advice)
    encoded = kernel.encode(encoded)  # the network's column order
    check_option(candidates, "candidates", CANDIDATES)
    candidates = "complete" if criterion == "chi2" and candidates == "auto" else candidates
    search: dict[str, Any] = dict(criterion=criterion, n_init=n_init, random_state=rng, progress=progress,
                                  n_criticisms=n_criticisms)
    mmd = MMDCriterion(kernel, encoded)  # the whole table: the target, and the yardstick of every subset
    pool = _pool(encoded.n_rows, k, POOL_SIZE if pool_size is None else pool_size, rng)
    searched = encoded if pool is None else encoded.take(pool)
    if pool is not None:
        notes.append(f"The search chose among a uniform pool of {len(pool):,} of the {encoded.n_rows:,} rows "
                     "(pool_size), against the whole table's mean embedding.")
    selection, note = _select(kernel, searched, k, candidates=candidates, criterion=criterion, mmd=mmd,
                              pooled=pool is not None, search=search)
    notes += note
    table, sampled = _table_rows(encoded)
    notes += sampled
    if refine == "margins" and criterion == "mmd":
        selection, refined = _refine(kernel, table, searched, selection, mmd, pooled=pool is not None,
                                     complete_only=candidates == "complete", rng=rng)
        notes.append(refined)
    if pool is not None:  # back to positions in the data
        selection = dataclasses.replace(selection, indices=pool[selection.indices],
                                        criticisms=pool[selection.criticisms])
    subset_mmd = float(mmd.evaluate_many(np.sort(selection.indices)[None, :])[0])
    baseline = random_subsets(encoded.n_rows, len(selection.indices), n_random, random_state=rng)
    random_chi2 = _random_chi2(encoded, len(selection.indices), n_random, rng) if criterion == "chi2" else None
    fidelity = _fidelity(kernel, encoded, np.asarray(selection.indices), baseline[:FIDELITY_SUBSETS], table)
    result = SummaryResult(data=data, selection=selection, mmd2=subset_mmd, random_mmd2=mmd.evaluate_many(baseline),
                           encoded=encoded, kernel=kernel, source=source, notes=notes,
                           random_chi2=random_chi2, advice=advice, fidelity=fidelity)
    later = result.fidelity_advice()
    warn(later)
    return dataclasses.replace(result, advice=advice + later)


def _table_rows(encoded: EncodedData) -> tuple:
    """Return the rows the shares of pairs and CPTs are taken over (every row, or a uniform sample of a large table).

    Also returns the notes that say so (none when every row is used).
    """
    if encoded.n_rows <= TABLE_ROWS:
        return encoded.codes, []
    rows = np.sort(np.random.default_rng(0).choice(encoded.n_rows, TABLE_ROWS, replace=False))
    return encoded.codes[rows], [f"Pairs of columns and CPTs measured against a uniform {TABLE_ROWS:,} of the "
                                 f"{encoded.n_rows:,} rows (each share's standard error at most 0.001)."]


def _refine(kernel, table: np.ndarray, searched, selection, mmd, *, pooled: bool, complete_only: bool, rng) -> tuple:
    """Bring Algorithm 1's subset nearer per column and per pair (``refine="margins"``); return it and the note.

    ``table``: the table's codes (or a uniform sample of them), whose shares a pooled search approaches.
    """
    criterion = MMDCriterion(kernel, searched, mmd.target_cells) if pooled else mmd
    found, note = balance_margins(kernel, searched, np.asarray(selection.indices, dtype=np.intp), criterion,
                                  target_codes=table if pooled else None, complete_only=complete_only,
                                  random_state=rng)
    return dataclasses.replace(selection, indices=found.indices), note


def _fidelity(kernel, encoded, positions: np.ndarray, random_sets: np.ndarray, table: np.ndarray):
    """Measure what a user checks: each column, each pair of columns (every pair, or the arcs and others), each CPT.

    ``table``: the rows the pairs' and the CPTs' shares are taken from (every row, or a sample of a large table).
    """
    codes, cardinalities = encoded.codes, encoded.cardinalities
    arcs = [(parent, family[-1]) for family in kernel.families for parent in family[:-1]]
    checked = margin_pairs(codes.shape[1], arcs, random_state=0)
    both = pair_tv(codes, cardinalities, checked, np.vstack([positions[None, :], random_sets]), table=table)
    return dataclasses.replace(column_fidelity(codes, cardinalities, positions, random_sets), pair_tv=both[0],
                               random_pair_tv=both[1:],
                               cpt_tv=cpt_distances(codes, cardinalities, kernel.families, positions, table=table))


def _select(kernel, searched, k, *, candidates: str, criterion: str, mmd, pooled: bool, search: dict) -> tuple:
    """Run the search over the rows ``candidates`` allows; return the selection (positions in ``searched``) and notes.

    ``auto`` with missing cells: stratified by missingness pattern; ``all``: every row; otherwise the complete rows
    (every row when all are complete), measured against every row.
    """
    if candidates == "auto" and searched.n_rows and searched.codes.min() < 0:
        selection, strata = _stratified(kernel, searched, k, search)
        return selection, [strata]
    candidate_set, candidate_rows, target = (complete_candidates(kernel, searched) if candidates != "all"
                                             else (searched, None, None))
    if candidate_rows is None:  # every row is a candidate
        within = mmd if not pooled else MMDCriterion(kernel, searched, mmd.target_cells)
        return _search(kernel, searched, k, within, criterion, search), []
    if isinstance(k, int) and k >= len(candidate_rows):
        raise OptionError(f"Only {len(candidate_rows)} rows are complete, too few to choose k={k} among them; "
                          "choose a smaller k, or candidates='auto' or 'all'.")
    within = MMDCriterion(kernel, candidate_set, mmd.target_cells if pooled else target)
    selection = _search(kernel, candidate_set, k, within, criterion, search)
    # Back to positions in the searched rows.
    return dataclasses.replace(selection, indices=candidate_rows[selection.indices],
                               criticisms=candidate_rows[selection.criticisms]), []


def _search(kernel, encoded, k, within: MMDCriterion, criterion: str, search: dict) -> SelectionResult:
    """Return the selection among every row of ``encoded``: by the MMD to ``within``'s target, or by chi-square."""
    return select_representatives(kernel, encoded, k, candidates="all",
                                  **dict(search, criterion=within if criterion == "mmd" else "chi2"))


def _random_chi2(encoded, k: int, n_random: int, rng) -> np.ndarray:
    """Return the chi-square criterion of random subsets of the complete rows (where that criterion is defined)."""
    complete = np.flatnonzero((encoded.codes >= 0).all(axis=1))
    subsets = random_subsets(complete.size, k, min(n_random, 200), random_state=rng)
    return np.array([chi2_criterion(encoded.codes[complete], np.sort(s)) for s in subsets])


#: Rows a search chooses among at most, by default (``summarize``'s and ``summarize_distributed``'s ``pool_size``).
POOL_SIZE = 100_000


def _pool(n_rows: int, k, pool_size, rng) -> np.ndarray | None:
    """Return the sorted positions of a uniform pool of ``pool_size`` rows, or None when the table is no larger."""
    pool_size = check_positive_int(pool_size, "pool_size")
    if n_rows <= pool_size:
        return None
    if isinstance(k, int) and k >= pool_size:
        raise OptionError(f"k={k} is not below pool_size={pool_size}; give a larger pool_size (at most the "
                          f"{n_rows} rows) or a smaller k.")
    return np.sort(rng.choice(n_rows, size=pool_size, replace=False))


#: What ``summarize`` does after Algorithm 1 (its ``refine`` parameter): bring the columns and pairs nearer, or nothing.
REFINE = ("margins", None)
#: How ``summarize`` chooses its candidates (see its ``candidates`` parameter).
CANDIDATES = ("auto", "all", "complete")
#: Rows the pairs' and the CPTs' shares are taken from, at most (a uniform sample of a larger table).
TABLE_ROWS = 250_000
#: Random subsets the per-column fidelity is compared with (their per-column tables cost more than their MMD).
FIDELITY_SUBSETS = 200


def _stratified(kernel: FamilyKernel, encoded: EncodedData, k: int, search: dict) -> tuple:
    """Choose the complete and the incomplete rows' shares of ``k`` apart, each representing its own stratum.

    The table's mean embedding is the share-weighted mean of its two strata's, so a subset whose strata
    are in the table's proportions and each close to its own stratum's mean is close to the table's;
    and each stratum keeps its labels (a label that lives only in incomplete rows is among the candidates).
    Returns the merged selection (positions in ``encoded``) and a note.
    """
    incomplete = (encoded.codes < 0).any(axis=1)
    strata = [np.flatnonzero(~incomplete), np.flatnonzero(incomplete)]
    k = check_positive_int(k, "k")
    if k > encoded.n_rows:
        raise OptionError(f"k={k} is more than the {encoded.n_rows} rows of the data; choose a smaller k.")
    wanted = int(round(k * incomplete.mean()))
    wanted = min(max(wanted, k - strata[0].size), strata[1].size)
    sizes = [k - wanted, wanted]
    parts, first = [], None
    for rows, size in zip(strata, sizes):
        if size == 0:
            continue
        if size == rows.size:  # the whole stratum
            parts.append(rows)
            continue
        stratum = encoded.take(rows)
        found = select_representatives(kernel, stratum, size, candidates="all", **(search | (
            {"criterion": MMDCriterion(kernel, stratum)} if search["criterion"] == "mmd" else {})))
        parts.append(rows[found.indices])
        if first is None:
            first = dataclasses.replace(found, criticisms=rows[found.criticisms])
    indices = np.concatenate(parts)
    if first is None:  # every stratum taken whole
        first = SelectionResult(indices=indices, objective=[], converged=True, criterion=search["criterion"]
                                if isinstance(search["criterion"], str) else "mmd")
    first = dataclasses.replace(first, indices=indices)
    note = (f"Candidates by stratum: {sizes[0]} of the {strata[0].size} complete rows and {sizes[1]} of the "
            f"{strata[1].size} rows with a missing cell (the table's proportions), each chosen to represent its "
            "own stratum (incomplete rows by their expected embedding, paper Sec. 8).")
    return first, note


def summarize_distributed(path, k: int, *, scheduler: str | None = None, n_workers: int = 2, timeout: float = 10.0,
                          pool_size: int = POOL_SIZE, network: BayesianNetwork | None = None,
                          structure: str = "chow-liu", bins: int | None = None, bin_columns=None,
                          categorical=None, na_values=(), n_init: int = 1000,
                          n_random: int = 1000, random_state=None, progress: bool = False,
                          learn_options: dict | None = None) -> SummaryResult:
    """Pick ``k`` representative rows of data that stays where it lies (Parquet or CSV, read by Dask).

    Data of at most ``pool_size`` rows is read whole and summarized as :func:`summarize` does (the same
    search and the same rows).  Larger data: the network is learned from distributed counts, the
    search runs on a uniform pool of ``pool_size`` rows against the whole data's mean embedding (an
    approximation of the search over every row, said in the verdict), and the random baseline draws
    its subsets from the pool.

    Parameters
    ----------
    path : str, path-like or list of them
        Parquet or CSV file(s), or a folder of Parquet parts.
    k : int
    scheduler : str, optional
        A Dask scheduler's address; default a local cluster of ``n_workers`` processes.
    n_workers : int, default=2
    timeout : float, default=10.0
        Seconds to wait for the scheduler.
    pool_size : int, default=100_000
    network, structure, bins, na_values, n_init, n_random, random_state, progress, learn_options
        As in :func:`summarize`.
    bin_columns, categorical : None
        Refused (the data is binned where it lies, by the rule: float columns, and integer
        columns with more than ``max(bins, 30)`` values).

    Returns
    -------
    SummaryResult
        With ``n_rows`` set and ``data`` the pool when the data exceeds the pool.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "nursery.parquet"
    >>> load("nursery").iloc[::5].astype(str).to_parquet(path)
    >>> result = summarize_distributed(path, 10, pool_size=1000, n_init=20, n_random=20, random_state=0,
    ...                                n_workers=1)  # doctest: +SKIP
    >>> len(result.indices), result.n_rows  # doctest: +SKIP
    (10, 2592)
    """
    from bnfisher.dask.client import dask_client  # Dask: a heavy optional dependency
    from bnfisher.dask.counts import DaskCounts

    if bin_columns is not None or categorical is not None:
        raise OptionError("`bin_columns` and `categorical` apply to tables in memory; data read by Dask is binned by "
                          "the rule (float columns, and integer columns with more than max(bins, 30) values).")
    rng = check_random_state(random_state)
    n_random = check_positive_int(n_random, "n_random")
    source = ", ".join(map(str, path)) if isinstance(path, (list, tuple)) else str(path)
    with dask_client(scheduler, n_workers=n_workers, timeout=timeout):
        provider = (DaskCounts(path, network.schema, missing="allow") if network is not None else
                    DaskCounts(path, bins=bins, na_values=tuple(na_values or ()), missing="allow"))
        if provider.n_rows <= pool_size:  # one file is read as the in-memory job reads it (same types, same rows)
            data = read_table(path, na_values=na_values or None) if os.path.isfile(str(path)) else provider.rows()
            result = summarize(data, k, network=network, structure=structure, bins=bins, na_values=na_values,
                               n_init=n_init, n_random=n_random, source=source, random_state=rng,
                               progress=progress, learn_options=learn_options)
            result.notes.insert(0, f"{source}: {provider.n_rows} rows, at most pool_size={pool_size}: read whole "
                                   "and summarized in memory (the same search, and rows, as in memory)")
            return result
        notes = [f"{source}: {provider.n_rows} rows in {provider.frame.npartitions} partitions"]
        if network is None:
            started = time.perf_counter()
            if provider.schema.bin_edges:
                notes += binned_note(provider.schema, bins, "with edges over the whole data")
            network = learn(provider, structure, missing="em", **(learn_options or {}))
            notes.append(f"Network ({structure}, learned from distributed counts in "
                         f"{time.perf_counter() - started:.2f} s): {network}")
        kernel = FisherKernel(network)
        notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
        notes.append("Beyond memory the subset is Algorithm 1's (the paper's), not refined per column and pair "
                     "(refine='margins' needs the table in memory).")
        selection = select_representatives(kernel, provider, k, n_init=n_init, random_state=rng,
                                           pool_size=pool_size, progress=progress)
    pool = selection.pool
    encoded = kernel.encode(pool)
    baseline = random_subsets(encoded.n_rows, k, n_random, random_state=rng)
    random_mmd2 = MMDCriterion(kernel, encoded, selection.pool_target).evaluate_many(baseline)
    return SummaryResult(data=pool, selection=selection, mmd2=float(selection.final_value), random_mmd2=random_mmd2,
                         encoded=encoded, kernel=kernel, source=source, notes=notes,
                         n_rows=int(provider.n_rows))
