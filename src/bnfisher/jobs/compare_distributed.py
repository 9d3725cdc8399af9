"""The comparison job for data beyond memory: ``compare`` on a Dask cluster, every step where the rows lie.

The schema and the network come from distributed counts of the two tables pooled; the
exact test draws its permutations on the workers (:mod:`bnfisher.dask.permutations`);
the family tests need only each family's two count tables, counted where the rows lie;
the witness is summarised on the workers (moments, histograms, the most typical
distinct rows).  The client holds the model, ``cells x permutations`` numbers and a few
rows, never the tables; only when the test rejects do the two data sets' distinct rows
come to it for the mechanism search (at most :data:`MECHANISM_ROWS` each).
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_positive_int, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.comparison.anytime import AnytimeTest
from bnfisher.comparison.explain import cells_from_counts, family_profiles, family_table
from bnfisher.comparison.permutation import cell_witness, pooled_statistics
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.data.rows import DistinctRows
from bnfisher.data.schema import EncodedData
from bnfisher.exceptions import DataError, OptionError
from bnfisher.jobs.attribute import SEARCHED_STRUCTURES, no_mechanisms
from bnfisher.jobs.compare import find_mechanisms, resolved_family_tests, sequential_options, two_sample_test
from bnfisher.jobs.compare_result import ComparedSamples, ComparisonResult, Witness
from bnfisher.jobs.inputs import feature_advice, warn
from bnfisher.kernels.fisher import FisherKernel

__all__ = ["compare_distributed", "compare_held"]

#: A drifted window held by the workers comes to the client for the mechanism search (which searches conditioning
#: sets over its rows) when it has at most this many distinct rows; beyond, a note says the search was not run.
MECHANISM_ROWS = 1_000_000


def compare_distributed(first, second, *, scheduler: str | None = None, n_workers: int = 2, timeout: float = 10.0,
                        network: BayesianNetwork | None = None, structure: str = "chow-liu", bins: int | None = None,
                        bin_columns=None, categorical=None, na_values=(), n_permutations: int = 1000,
                        test: str = "aggregate", top: int = 10, names: tuple = ("A", "B"), random_state=None,
                        learn_options: dict | None = None) -> ComparisonResult:
    """Compare two data sets beyond memory (Parquet or CSV) on a Dask cluster: :func:`~bnfisher.compare`'s answer.

    The same test, p-value, family tests and mechanism search as :func:`~bnfisher.compare` on
    the same rows with the same network and seed; the typical rows are each sample's most
    typical *distinct* rows (with their copies).  The mechanism search runs on the two data
    sets' distinct rows, brought to the client, when neither has more than
    :data:`MECHANISM_ROWS` (else a note says it was not run).

    Parameters
    ----------
    first, second : str, path-like or list of them
        Parquet or CSV file(s), a folder or a glob (:func:`bnfisher.dask.read_dask`).
    scheduler : str, optional
        A running Dask scheduler's address; default a local cluster of ``n_workers`` processes.
    n_workers : int, default=2
    timeout : float, default=10.0
        Seconds to wait for ``scheduler``.
    network : BayesianNetwork, optional
        Default: learned from the two data sets pooled (distributed counts, EM for missing cells).
    structure : str, default="chow-liu"
    bins : int, optional
        Bin numeric columns (edges from both data sets pooled), by the rule (float columns, and
        integer columns with more than ``max(bins, 30)`` values).
    bin_columns, categorical : None
        Apply to tables in memory (:func:`~bnfisher.compare`); refused here.
    na_values : sequence, default=()
    n_permutations : int, default=1000
    test : {"aggregate", "mmd"}, default="aggregate"
    top : int, default=10
    names : tuple of str, default=("A", "B")
    random_state : None, int or Generator
    learn_options : dict, optional

    Returns
    -------
    ComparisonResult

    Raises
    ------
    DataError
        When the two data sets do not have the same columns.
    OptionError
        For ``bin_columns`` or ``categorical``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> table = load("nursery").astype(str).sample(frac=0.5, random_state=0)
    >>> table.iloc[::2].to_parquet(folder / "a.parquet"); table.iloc[1::2].to_parquet(folder / "b.parquet")
    >>> result = compare_distributed(folder / "a.parquet", folder / "b.parquet", n_permutations=199,
    ...                              random_state=0, n_workers=1)  # doctest: +SKIP
    >>> 0 < result.test.p_value <= 1  # doctest: +SKIP
    True
    """
    from bnfisher.dask import DaskCounts, concat_frames, dask_client, read_dask
    from bnfisher.dask.permutations import DaskPool

    if bin_columns is not None or categorical is not None:
        raise OptionError("`bin_columns` and `categorical` apply to tables in memory; data read by Dask is binned by "
                          "the rule (float columns, and integer columns with more than max(bins, 30) values).")
    check_option(test, "test", ("aggregate", "mmd"))
    top = check_positive_int(top, "top")
    rng = check_random_state(random_state)
    notes: list = []
    with dask_client(scheduler, n_workers=n_workers, timeout=timeout):
        frames = [read_dask(path, na_values=list(na_values) or None) for path in (first, second)]
        if set(frames[0].columns) != set(frames[1].columns):
            only = [sorted(set(a.columns) - set(b.columns)) for a, b in (frames, frames[::-1])]
            raise DataError(f"{names[0]} and {names[1]} must have the same columns; only {names[0]} has {only[0]}, "
                            f"only {names[1]} has {only[1]}. Drop the extra columns or compare matching files.")
        frames[1] = frames[1][list(frames[0].columns)]
        network_graph = network is not None or structure in SEARCHED_STRUCTURES  # as compare: the search's DAG
        if network is None:
            pooled = DaskCounts(concat_frames(frames), bins=bins, na_values=tuple(na_values), missing="allow")
            network = learn(pooled, structure, missing="em", **(learn_options or {}))
            notes.append(f"Network ({structure}, learned from the two data sets pooled, by distributed counts): "
                         f"{network}")
        kernel = FisherKernel(network)
        notes.append(f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
        advice = list(feature_advice(kernel))
        pool = DaskPool(kernel, *frames)
        notes.insert(0, f"{names[0]}: {pool.n_x} rows, {names[1]}: {pool.n_y} rows; the permutations drawn where "
                        "the rows lie (hash buckets of distinct rows on the workers).")
        statistics = pooled_statistics(pool, check_positive_int(n_permutations, "n_permutations"), rng)
        tables = _family_tables(network, [DaskCounts(frame, network.schema, missing="allow") for frame in frames])
        tests, note = resolved_family_tests(network, None, None, random_state=rng, tables=tables)
        notes.append(note)
        summary = pool.witness_summary(cell_witness(kernel, statistics.x.mean - statistics.y.mean), top=5)
        tested = two_sample_test(kernel, statistics, test, _moments(summary))
        mechanisms, searched = _searched(kernel, frames, (pool.n_x, pool.n_y), names=tuple(names), random_state=rng,
                                         graph=network.parent_indices() if network_graph else None) \
            if tested.p_value <= 0.05 else (None, [])
    result = _result(kernel, statistics, tests, tested, summary, names=tuple(names), notes=notes + searched,
                     advice=advice, top=top, mechanisms=mechanisms)
    warn(advice)
    return result


def _searched(kernel: FisherKernel, frames: list, sizes: tuple, *, names: tuple, random_state,
              graph: list | None) -> tuple:
    """Return the mechanism search of two data sets held by the workers and its notes (as :func:`find_mechanisms`).

    Each data set's distinct rows, with their copies, come to the client when neither has more
    than :data:`MECHANISM_ROWS`; the search then runs as :func:`~bnfisher.compare` runs it.
    """
    from bnfisher.dask.windows import dask_windows

    held = [dask_windows(frame, kernel.network.schema, window=max(int(n), 1))[0][0][3]
            for frame, n in zip(frames, sizes)]
    distinct = max(rows.n_distinct for rows in held)
    if distinct > MECHANISM_ROWS:
        return None, [f"Mechanism search: not run on {distinct} distinct rows (more than {MECHANISM_ROWS} would come "
                      "to the client); the family tests say which conditionals changed."]
    gathered = tuple(_gathered(one) for one in held)
    mechanisms, notes = find_mechanisms(kernel, gathered, graph=graph, names=names, random_state=random_state)
    return mechanisms, [f"Mechanism search: on the two data sets' distinct rows ({held[0].n_distinct} and "
                        f"{held[1].n_distinct}), brought to the client.", *notes]


def compare_held(network: BayesianNetwork, reference, window, *, pooled_rows, reference_rows, names: tuple,
                 n_permutations: int, test: str, top: int, random_state, notes: list, advice: list,
                 graph: list | None = None, attribute_below: float = 0.05,
                 early_stop: EarlyStop | AnytimeTest | None = None) -> ComparisonResult:
    """Compare two samples held where they lie (a reference and a drift window): compare_encoded's answer.

    The test, its p-value and the family tests are those of
    :func:`~bnfisher.jobs.compare.compare_encoded` on the same rows with the same network and
    random state; the permutations, family tables and witness are computed where the rows
    lie.  A window whose test is at most ``attribute_below`` comes to the client for the
    mechanism search when it has at most :data:`MECHANISM_ROWS` distinct rows.

    Parameters
    ----------
    network : BayesianNetwork
    reference, window : HeldRows
        Both encoded with ``network``'s schema (:class:`~bnfisher.data.windows.HeldRows`).
    pooled_rows : callable
        The backend's :attr:`~bnfisher.data.providers.Backend.pooled_rows`.
    reference_rows : DistinctRows
        The reference's distinct rows, in memory (for the mechanism search).
    names : tuple of str
    n_permutations : int
    test : {"aggregate", "mmd"}
    top : int
    random_state : Generator
    notes, advice : list of str
        Extended here.
    graph : list of tuple of int, optional
        The mechanism search's DAG (:func:`~bnfisher.jobs.compare.find_mechanisms`).
    attribute_below : float, default=0.05
    early_stop : AnytimeTest or EarlyStop, optional
        As :func:`~bnfisher.jobs.compare.compare_encoded`.

    Returns
    -------
    ComparisonResult
        Its typical rows are each sample's most typical distinct rows, with their copies.
    """
    kernel = FisherKernel(network)
    # New lists: the caller's notes and advice are read, not written.
    notes = [*notes, f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}."]
    advice = [*advice, *feature_advice(kernel)]
    pool = pooled_rows(kernel, reference, window)
    statistics = pooled_statistics(pool, n_permutations, random_state, early_stop=early_stop)
    tables = _family_tables(network, [reference, window])
    tests, note = resolved_family_tests(network, None, None, random_state=random_state, tables=tables,
                                        alpha=attribute_below, **sequential_options(early_stop))
    notes.append(note)
    summary = pool.witness_summary(cell_witness(kernel, statistics.x.mean - statistics.y.mean), top=5)
    del pool  # its shards leave the workers
    sizes = tuple({"rows": held.n_rows, "missing_cells": held.missing_cells + held.unseen_cells - held.left_out_cells}
                  for held in (reference, window))
    result = two_sample_test(kernel, statistics, test, _moments(summary), stopping=early_stop)
    mechanisms = no_mechanisms()
    if result.p_value <= attribute_below and window.n_distinct <= MECHANISM_ROWS:
        mechanisms, searched = find_mechanisms(kernel, (reference_rows, _gathered(window)),
                                               graph=graph, names=names, random_state=random_state,
                                               **sequential_options(early_stop))
        notes += searched
    elif result.p_value <= attribute_below:
        notes.append(f"Mechanism search: not run on a window of {window.n_distinct} distinct rows (more than "
                     f"{MECHANISM_ROWS} would come to the client); the family tests say which conditionals changed.")
    return _result(kernel, statistics, tests, result, summary, names=names, notes=notes, advice=advice, top=top,
                   sizes=sizes, mechanisms=mechanisms)


def _gathered(held) -> DistinctRows:
    """Return held rows' distinct rows with their copies, brought to the client (for the mechanism search)."""
    rows = held.gather()
    encoded = EncodedData(rows.codes, rows.schema.variables, dict(rows.schema.states), rows.schema)
    return DistinctRows(encoded, rows.counts, None)


def _family_tables(network: BayesianNetwork, providers: list) -> list:
    """Every family's two count tables ``(parent configurations, child states)``, counted where the rows lie."""
    position = {v: i for i, v in enumerate(providers[0].variables)}
    cards = network.cardinalities
    families = [tuple(position[network.variables[j]] for j in (*parents, i))
                for i, parents in enumerate(network.parent_indices())]
    counted = [provider.counts(families) for provider in providers]
    return [None if int(cards[i]) < 2 else tuple(np.asarray(side[i], dtype=np.float64).reshape(-1, int(cards[i]))
                                                 for side in counted) for i in range(len(families))]


def _moments(summary: dict) -> tuple:
    """Each side's witness as a two-point law with its mean and variance: all the first-order variance needs."""
    return tuple((np.array([mean - np.sqrt(variance), mean + np.sqrt(variance)]), np.array([n / 2, n / 2]))
                 for n, mean, variance in summary["moments"])


def _result(kernel, statistics, tests, test, summary: dict, *, names: tuple, notes: list, advice: list, top: int,
            sizes: tuple | None = None, mechanisms=None) -> ComparisonResult:
    """Assemble the comparison from the distributed statistics (typical rows: distinct rows with copies)."""
    network = kernel.network
    families = family_table(kernel, statistics, tests)
    samples = []
    for codes in summary["codes"]:
        frame = pd.DataFrame({v: pd.Categorical.from_codes(codes[:, i], categories=list(network.states[v]))
                              for i, v in enumerate(network.variables)})
        samples.append(frame[list(network.schema.variables)])
    counts = ((statistics.x.counts, statistics.x.n), (statistics.y.counts, statistics.y.n))
    sizes = sizes or tuple({"rows": int(n), "missing_cells": None} for n in (statistics.x.n, statistics.y.n))
    return ComparisonResult(names=names, test=test, families=families, advice=advice,
                            mechanisms=no_mechanisms() if mechanisms is None else mechanisms,
                            cells=cells_from_counts(kernel, *counts, n=top, names=names),
                            witness=Witness(tuple(summary["values"]), (summary["edges"], summary["counts"])),
                            kernel=kernel, samples=ComparedSamples(tuple(samples), tuple(summary["copies"]), sizes),
                            notes=notes, top=top, profiles=family_profiles(kernel, counts, families, top))
