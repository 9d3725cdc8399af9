"""The drift job: a reference against each window of later data -- when did it change, where, and which rows show it.

:func:`drift` cuts the data into windows (:mod:`bnfisher.data.windows`), learns the schema
from the reference, and compares the whole reference with every window by the exact test of
:func:`bnfisher.compare` (the aggregate of the Fisher-kernel MMD, its largest block and
per-column tests), with each window's structure and CPTs learned on the pooled reference +
window rows.  Window p-values are adjusted by Holm's procedure.  A drifted window names the
mechanism that changed (:mod:`bnfisher.comparison.mechanisms`).  The result prints, renders
(HTML report with a timeline) and serialises.

Why the p-values are exact: the permutation test of one window is exact when the kernel is
the same function of the pooled rows whichever of them came from the window -- a structure
and CPTs learned on the pool are.  (A network fitted on the very reference rows it tests
favours them: on *alarm*, 5 of 11 unchanged windows gave p <= 0.02.)  And they do not hang
on the seed: no random choice but the permutations enters them.  With ``fit_fraction``, one
structure is learned on a random part of the reference and the rest is tested (the earlier
default; its p-values move with the split: 0.49 to 0.86 over ten seeds on one window).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.parallel import map_threads, resolve_jobs
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_option, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.comparison.attribution import holm
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.comparison.two_sample import statistics_pvalue
from bnfisher.comparison.validity import reference_split
from bnfisher.data.guardrails import check_tables
from bnfisher.data.profile import ReferenceProfile, tables_of
from bnfisher.data.providers import NumpyCounts, backend_for
from bnfisher.data.rows import DistinctRows
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.data.summed import KeptCounts, SummedCounts
from bnfisher.data.windows import WindowRows, split_windows
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError
from bnfisher.jobs.attribute import SEARCHED_STRUCTURES
from bnfisher.jobs.compare import ComparisonResult, compare_encoded
from bnfisher.jobs.compare_distributed import compare_held
from bnfisher.jobs.drift_result import MIN_WINDOW_ROWS, NO_SINGLE_FAMILY, DriftResult
from bnfisher.jobs.inputs import binned_note, warn

__all__ = ["DriftResult", "drift"]

def drift(reference: pd.DataFrame, data, *, time: str | None = None, window=None, structure: str = "chow-liu",
          bins: int | None = None, bin_columns=None, categorical=None, na_values=(), fit_fraction: float | None = None,
          n_permutations: int | None = None, early_stop: bool = False,
          test: str = "aggregate", alpha: float = 0.05, min_effect: float | None = None, top: int = 5,
          random_state=None,
          learn_options: dict | None = None, n_jobs: int | None = None, progress: bool = False) -> DriftResult:
    """Compare a reference table with each window of later data: which windows drifted, in which families.

    Parameters
    ----------
    reference : DataFrame or ReferenceProfile
        The reference period, as read (labels; numeric columns binned when ``bins`` is
        given), or its profile (:func:`bnfisher.profile`; a binned profile bins the
        windows' numeric columns with its edges).
    data : DataFrame, list of DataFrame, dict of name to DataFrame, or Dask DataFrame
        The data to watch: one table cut into windows (``time`` and ``window``, or
        ``window`` rows at a time), or the windows themselves.  A Dask DataFrame (e.g.
        a partitioned Parquet data set, :func:`bnfisher.dask.read_dask`) is cut into
        windows in one pass where it lies, each window kept by a worker as its distinct
        rows with counts and tested there (:func:`~bnfisher.jobs.compare_distributed.compare_held`):
        the same window table as for the table in memory.
    time : str, optional
        Column of ``data`` with each row's time; dropped from the comparison (and from
        ``reference`` when it has it).
    window : str or int, optional
        A pandas frequency with ``time`` (``"1D"``, ``"MS"``; ``"1W"`` is an ISO week, Monday
        to Sunday, and ``"W-SUN"`` pandas' week from Sunday), else rows per window.  None: a
        table is one window (labelled by the span of ``time`` when given).
    structure : str, default="chow-liu"
        How to learn the network's structure (see :func:`bnfisher.learn`), once, on the
        reference's fitting part.
    bins : int, optional
        Quantile bins for numeric columns, edges from the reference's fitting part.
    bin_columns : sequence, optional
        With ``bins``: the numeric columns to bin (default: float columns and integer
        columns with more than ``max(bins, 30)`` values).
    categorical : sequence, optional
        Columns never binned.
    na_values : sequence, default=()
        Extra missing-value markers (e.g. ``"?"``).
    fit_fraction : float, optional
        Default (None): the whole reference is compared with every window, and each
        window's structure is learned on the reference and the window pooled (without
        the label: the p-value is exact, and no random choice but the permutations
        touches it).  A fraction in (0, 1): that share of the reference, drawn at
        random, learns one structure for every window and the rest is compared with
        them (faster for a costly ``structure``; the p-value then depends on the draw).
    n_permutations : int, optional
        Permutations of each window's test.  Default: ``max(2999, 4 W / alpha - 1)`` for W
        windows, so that Holm's adjustment can reach ``alpha``: the smallest p-value a
        permutation test can give is about 1/(n_permutations + 1), and Holm multiplies
        the smallest by W.
    early_stop : bool, default=False
        Stop a window's permutations where its p-value is plainly large: after 199 when it
        is above ``max(3 alpha, 0.05)``, after 999 when above ``max(2 alpha, 0.01)``
        (:class:`~bnfisher.comparison.EarlyStop`, Besag & Clifford's sequential p-values).
        Every p-value stays valid, and a window far below ``alpha`` goes on to the last
        permutation, so the windows flagged are those of the full test up to Monte-Carlo
        error (measured in ``benchmarks/early_stop.py``); at ``alpha = 0.05`` an unchanged
        window runs about a fifth of 2,999 permutations (570 measured).  The cost: an
        unchanged window's p-value rests on 199 or 999 permutations, so it moves more with
        the seed than the default's.  For monitors with many windows; a note says where the
        windows stopped.
    test : {"aggregate", "mmd"}, default="aggregate"
        The test of each window (see :func:`bnfisher.compare`).
    alpha : float, default=0.05
        Family-wise error rate over the windows (Holm).
    min_effect : float, optional
        Flag a window only when it is significant and its unbiased MMD²_u (the effect
        size) is at least this: on large windows every change is significant, however
        small; this says how large a change must be to matter.
    top : int, default=5
        Families, cells and rows shown per window.
    random_state : None, int or Generator
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn` (``pseudocount`` also applies to each window's CPTs).
    n_jobs : int, optional
        Windows compared at once, on threads (the heavy steps release the GIL): None
        means 1, -1 all cores; on data beyond memory, at least one window per worker
        thread of the backend (the client waits on the workers).  The result does not
        depend on it (each window draws from its own random stream).
    progress : bool, default=False
        A progress bar over the windows (on a terminal).

    Returns
    -------
    DriftResult

    Raises
    ------
    OptionError, OptionTypeError, DataError, SchemaError
        Naming the argument, the window, the column or the value, and the fix.

    Notes
    -----
    Each window's p-value is exact: under no drift, the rows of the reference's test
    part and of the window are exchangeable, and the kernel is the same function of
    their pool whichever rows came from the window (structure and schema from the
    fitting part, CPTs from the pool).  Holm's adjustment over windows then bounds the
    probability of flagging any window without drift by ``alpha``.  A label or a missing
    cell in a window is marginalized (paper Sec. 8), as :func:`bnfisher.compare` does;
    labels the fitting part never showed count as ``unseen_cells``.

    Examples
    --------
    >>> data = load("nursery")
    >>> result = drift(data.iloc[:4000], data.iloc[4000:7000], window=1000, n_permutations=50, random_state=0)
    >>> list(result.windows["rows"])
    [1000, 1000, 1000]
    """
    _check_options(test, early_stop, alpha, min_effect)
    n_jobs = resolve_jobs(n_jobs)
    reference, binned, distributed, windows, how = _inputs(reference, data, time=time, window=window, bins=bins)
    rng = check_random_state(random_state)
    na = tuple(na_values or ())
    advice = check_tables([reference] + [frame for *_, frame in windows], na_values=na,
                          binned=bins is not None or binned is not None)
    fit, rest = _split(reference, fit_fraction, rng)
    schema = Schema.from_data(fit, bins=bins, columns=bin_columns, categorical=categorical, na_values=na,
                              missing="allow")
    if binned is not None:  # the profile's bins, with their edges: every window's numbers are binned with them
        schema = Schema({v: binned.schema.states[v] if v in binned.schema.bin_edges else schema.states[v]
                         for v in schema.variables}, bin_edges=dict(binned.schema.bin_edges), na_values=na)
    reference_rows, unseen_rest, shared, unseen_note = _reference_rows(schema, rest)
    if distributed is not None:  # one pass over the data: each window's distinct rows
        windows, how = distributed.windows(data, schema, time=time, window=window, shared=shared)
        if not windows:
            raise DataError("The data has no rows: there is no window to compare.")
    if n_permutations is None:
        n_permutations = _default_permutations(len(windows), alpha, advice)
    stop = EarlyStop.for_alpha(alpha, partial(statistics_pvalue, method=test)) if early_stop else None
    options = dict(learn_options or {})
    pseudocount = options.pop("pseudocount", 1.0)
    progress_structure = options.pop("progress", False)
    kept = _kept_counts(reference_rows)  # the reference's tables, counted once for every window
    network = _learn_reference(schema, fit, structure, kept if fit_fraction is None else None, options,
                               pseudocount=pseudocount, progress=progress_structure)
    parents = {v: tuple(network.parents[v]) for v in network.variables}
    notes = [f"Windows: {how}; {n_permutations} permutations per window.",
             _reference_note(len(reference), len(fit), len(rest), fit_fraction, structure, network)]
    columns = [c for c in data.columns if c != time] if distributed is not None else \
        [c for *_, frame in windows for c in frame.columns]
    _advise_extra_columns(columns, reference.columns, advice)
    notes += binned_note(schema, bins, "edges from the reference's fitting part") + unseen_note
    # One generator per window: the same answer however many threads run.
    streams = [np.random.default_rng(seed) for seed in np.random.SeedSequence(int(rng.integers(2**63))).spawn(
        len(windows))]

    how = parents if fit_fraction is not None else structure  # the structure to refit on every pool
    searched = isinstance(structure, str) and structure in SEARCHED_STRUCTURES
    held_reference = None
    if distributed is not None:  # the reference's rows go to a worker once; every window's pool is formed there
        held_reference = distributed.hold(WindowRows(schema, reference_rows.encoded.codes, reference_rows.copies,
                                                     int(rest.isna().sum().sum()), unseen_rest))
        n_jobs = max(n_jobs, distributed.threads())  # the client waits on the workers: a window per worker thread

    def compare_window(k: int) -> tuple:
        label, _, _, frame = windows[k]
        if held_reference is not None:  # a window beyond memory, held by a worker as its distinct rows
            fitted = frame.run(_fit_held, schema, how, pseudocount, options, held_reference)
            result = compare_held(fitted, held_reference, frame, pooled_rows=distributed.pooled_rows,
                                  reference_rows=reference_rows,
                                  names=("reference", label), n_permutations=n_permutations, test=test, top=top,
                                  random_state=streams[k], notes=_left_out(frame.left_out), advice=[],
                                  graph=fitted.parent_indices() if searched else None, attribute_below=alpha,
                                  early_stop=stop)
            return result, frame.missing_cells, frame.unseen_cells
        encoded, frame, missing, unseen, _, left_out = _encode(schema, frame, f"window {label!r}", shared=shared)
        window_rows = DistinctRows.of(encoded)
        fitted = _fit_pool(schema, how, pseudocount, options, reference_rows, window_rows, kept=kept)
        result = compare_encoded(fitted, (reference_rows, window_rows), (rest, frame), names=("reference", label),
                                 n_permutations=n_permutations, test=test, top=top, random_state=streams[k],
                                 notes=_left_out(left_out), advice=[],
                                 graph=fitted.parent_indices() if searched else None,
                                 attribute_below=alpha, early_stop=stop)
        return result, missing, unseen

    sizes = [len(frame) if isinstance(frame, pd.DataFrame) else frame.n_rows + frame.left_out for *_, frame in windows]
    tested = [k for k, size in enumerate(sizes) if size >= MIN_WINDOW_ROWS]
    if not tested:
        raise DataError(f"Every window has fewer than {MIN_WINDOW_ROWS} rows ({len(windows)} window(s), "
                        f"{max(sizes)} row(s) at most): there is nothing to test; use longer windows.")
    outcomes = dict(zip(tested, map_threads(compare_window, tested, n_jobs=n_jobs)))
    comparisons, table = _window_table(windows, sizes, outcomes, alpha=alpha, min_effect=min_effect, advice=advice,
                                       progress=progress)
    if stop is not None:
        notes.append(_early_stop_note(stop, comparisons, n_permutations))
    warn(advice)
    return DriftResult(windows=table, comparisons=comparisons, network=network,
                       reference={"rows": len(reference), "fit_rows": len(fit), "test_rows": len(rest),
                                  "columns": int(reference.shape[1]),
                                  "missing_cells": int(reference.isna().sum().sum())},
                       alpha=alpha, notes=notes, advice=advice, top=top, min_effect=min_effect)


def _check_options(test: str, early_stop, alpha: float, min_effect) -> None:
    check_option(test, "test", ("aggregate", "mmd"))
    if not isinstance(early_stop, (bool, np.bool_)):
        raise OptionTypeError(f"`early_stop` must be True or False; got {early_stop!r}.")
    if not 0 < alpha < 1:
        raise OptionError(f"`alpha` must be in (0, 1); got {alpha!r}.")
    if min_effect is not None and not (isinstance(min_effect, (int, float)) and np.isfinite(min_effect)):
        raise OptionError(f"`min_effect` must be a finite number (an MMD²_u) or None; got {min_effect!r}.")


def _split(reference: pd.DataFrame, fit_fraction: float | None, rng) -> tuple:
    """Return the part of the reference that learns the schema (with ``fit_fraction``: the structure) and the rest."""
    fit, rest = (reference, reference) if fit_fraction is None else \
        reference_split(reference, fraction=fit_fraction, random_state=rng)
    if len(rest) < MIN_WINDOW_ROWS:
        what = (f"{len(fit)} fit the network, leaving {len(rest)} to compare the windows with; give the reference at "
                f"least {2 * MIN_WINDOW_ROWS} rows" if fit_fraction is not None else
                f"give it at least {MIN_WINDOW_ROWS} rows")
        raise DataError(f"The reference has {len(reference)} rows: {what}.")
    return fit, rest


def _reference_note(rows: int, fit: int, rest: int, fit_fraction, structure, network: BayesianNetwork) -> str:
    """Return the note saying which reference rows learn what and which are compared."""
    if fit_fraction is None:
        return (f"Reference: {rows} rows, each compared with every window; each window's structure ({structure}) and "
                "CPTs are learned on it and the reference pooled, so each p-value is exact (on the reference alone: "
                f"{len(network.edges)} arcs).")
    return (f"Reference: {rows} rows; {fit} (fraction {fit_fraction:g}, at random) fit the schema and the structure "
            f"({structure}: {len(network.edges)} arcs), the other {rest} are compared with every window; each window's "
            "CPTs are refitted on it and those rows pooled, so each p-value is exact.")


#: The fewest permutations a window's test gets by default: the aggregate p-value's Monte-Carlo error is then small
#: enough that ten seeds give p-values within 0.10 of one another on an unchanged window (benchmarks/drift_seeds.py).
MIN_PERMUTATIONS = 2999


def _default_permutations(n_windows: int, alpha: float, advice: list) -> int:
    """``max(2999, 4 W / alpha - 1)``: Holm's adjustment over W windows can then reach ``alpha``; say when it grows."""
    n_permutations = max(MIN_PERMUTATIONS, int(np.ceil(4 * n_windows / alpha)) - 1)
    if n_permutations > MIN_PERMUTATIONS:
        advice.append(f"The default permutations grow with the windows ({n_permutations} per window for {n_windows} "
                      "windows, so that Holm's adjustment can reach alpha), so the work grows as the square of the "
                      f"windows: {n_permutations * n_windows:,} permutations in all. Pass n_permutations "
                      "(--permutations) to bound it, at the cost of a coarser p-value floor.")
    return n_permutations


def _early_stop_note(stop: EarlyStop, comparisons: list, n_permutations: int) -> str:
    """Return the note saying where the windows' permutations stopped."""
    done = [len(result.test.null_distribution) for result in comparisons if result is not None]
    if not stop.stages(n_permutations):
        return (f"Early stop: no checkpoint comes before the {n_permutations} permutations per window (the first is "
                f"at {stop.checkpoints[0][0]}), so every window ran all of them.")
    where = ", ".join(f"{done.count(b)} after {b} (p above {c:g})" for b, c in stop.checkpoints if b < n_permutations)
    return (f"Early stop: of {len(done)} windows tested, {where}; {done.count(n_permutations)} ran all "
            f"{n_permutations} permutations ({sum(done):,} in all). Each p-value is valid (Besag & Clifford's "
            "sequential rule); a stopped window's rests on fewer permutations.")


def _advise_extra_columns(columns, reference_columns, advice: list) -> None:
    """Warn about the data's columns that the reference lacks (left out of the comparison)."""
    extra = sorted({str(c) for c in columns if c not in reference_columns})
    if extra:
        advice.append(f"Column(s) {', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''} of the data are not in "
                      "the reference and are left out of the comparison; drop them, or add them to the reference.")


def _window_table(windows: list, sizes: list, outcomes: dict, *, alpha: float, min_effect: float | None, advice: list,
                  progress: bool) -> tuple:
    """Return each window's comparison (None: too small to test) and the window table; append the warnings."""
    comparisons: list = []
    rows: list = []
    bar = progress_bar(enumerate(windows), total=len(windows), desc="drift", unit="window", leave=False,
                       disable=None if progress else True)
    for k, (label, start, end, _) in bar:
        row = {"window": label, "start": start, "end": end, "rows": sizes[k]}
        if k not in outcomes:  # too few rows to test: reported, not tested
            comparisons.append(None)
            rows.append(row | {"missing_cells": 0, "unseen_cells": 0, "mmd2": np.nan, "mmd2_u": np.nan,
                               "mmd2_u_low": np.nan, "mmd2_u_high": np.nan, "p_value": np.nan,
                               "family": "", "parents": "", "share": 0.0, "family_p_adjusted": np.nan,
                               "mechanism": "", "mechanism_p_adjusted": np.nan})
            continue
        result, missing, unseen = outcomes[k]
        comparisons.append(result)
        lead = result.families.iloc[0] if len(result.families) else None
        changed = lead is not None and bool(lead["p_adjusted"] <= alpha)
        clearest = {"family": NO_SINGLE_FAMILY, "parents": "", "share": 0.0, "family_p_adjusted": np.nan}
        if lead is not None:
            clearest["family_p_adjusted"] = float(lead["p_adjusted"])
            if changed:
                clearest.update(family=str(lead["variable"]), share=float(lead["share"]),
                                parents=str(lead["parents"]) if lead["parents"] not in ("", "-") else "")
        rows.append(row | {"missing_cells": missing, "unseen_cells": unseen, "mmd2": result.test.statistic,
                           "mmd2_u": result.test.unbiased, "mmd2_u_low": result.test.unbiased_ci[0],
                           "mmd2_u_high": result.test.unbiased_ci[1], "p_value": result.test.p_value}
                    | clearest | _mechanism(result, MECHANISM_ALPHA))
    table = pd.DataFrame(rows)
    adjusted = np.full(len(table), np.nan)
    tested = sorted(outcomes)
    adjusted[tested] = holm(table["p_value"].to_numpy()[tested])  # over the windows tested
    table.insert(table.columns.get_loc("p_value") + 1, "p_adjusted", adjusted)
    large = table["mmd2_u"] >= min_effect if min_effect is not None else True
    table.insert(table.columns.get_loc("p_adjusted") + 1, "drift", (table["p_adjusted"] <= alpha) & large)
    # A window that did not drift has no "clearest family": its family tests are not looked at.
    table.loc[~table["drift"], ["family", "parents", "mechanism"]] = ""
    table.loc[~table["drift"], "share"] = 0.0
    untested = [str(windows[k][0]) for k in range(len(windows)) if k not in outcomes]
    if untested:
        advice.append(f"{len(untested)} window(s) have fewer than {MIN_WINDOW_ROWS} rows and were not tested "
                      f"({', '.join(untested[:3])}{', ...' if len(untested) > 3 else ''}): their p-values are "
                      "empty; use longer windows, or leave such windows out.")
    unseen = table.loc[table["unseen_cells"] > 0]
    if len(unseen):
        advice.append(f"{len(unseen)} window(s) hold labels the reference never showed ("
                      + ", ".join(f"{w}: {c} cells" for w, c in zip(unseen["window"][:3], unseen["unseen_cells"][:3]))
                      + (", ..." if len(unseen) > 3 else "") + "): a window's rows holding one are left out of its "
                      "test (kept, they would make it inexact), so the test cannot see a new label; a new label is a "
                      "change by itself (column unseen_cells).")
    small = table.loc[(table["rows"] < 30) & (table["rows"] >= MIN_WINDOW_ROWS), "window"].tolist()
    if small:
        advice.append(f"{len(small)} window(s) have fewer than 30 rows ({', '.join(small[:3])}"
                      f"{', ...' if len(small) > 3 else ''}): their tests are exact but can only see large changes; "
                      "use longer windows.")
    return comparisons, table


#: The level at which a drifted window's mechanisms are named (Holm over the variables, within the window).
MECHANISM_ALPHA = 0.05


def _mechanism(result: ComparisonResult, alpha: float) -> dict:
    """Return a window's clearest changed mechanism ("A or B": cannot be oriented; "": none found)."""
    table = result.mechanisms
    if table.empty:
        return {"mechanism": "", "mechanism_p_adjusted": np.nan}
    changed = table[table["p_adjusted"] <= alpha]
    if changed.empty:
        groups = table.attrs.get("unoriented", [])
        return {"mechanism": " or ".join(groups[0]) if groups else "", "mechanism_p_adjusted": np.nan}
    return {"mechanism": str(changed["variable"].iloc[0]), "mechanism_p_adjusted": float(changed["p_adjusted"].iloc[0])}


def _inputs(reference, data, *, time, window, bins) -> tuple:
    """Resolve the reference (a table or a profile) and the windows of tables in memory (checked).

    Returns the reference table, the binned profile (or None), the backend that will cut data
    beyond memory into windows once the schema is known (or None), the windows and how.
    """
    binned = reference if isinstance(reference, ReferenceProfile) and reference.schema.bin_edges else None
    if isinstance(reference, ReferenceProfile):
        (reference,) = tables_of([reference], bins=bins)
        # Its labels as a table's: the fitting part learns the labels it holds (unused categories are not labels).
        unbinned = [v for v in reference.columns if v not in (binned.schema.bin_edges if binned is not None else ())]
        reference = reference.astype({v: object for v in unbinned})
    if not isinstance(reference, pd.DataFrame):
        raise OptionTypeError(f"`reference` must be a pandas DataFrame or a ReferenceProfile; got "
                              f"{type(reference).__name__}.")
    if binned is None:  # a table's labels are those it holds, as its profile's are: the two give one answer
        declared = [c for c in reference.columns if isinstance(reference[c].dtype, pd.CategoricalDtype)
                    and not reference[c].dtype.ordered]  # ordered: bins (every bin a state), kept as declared
        reference = reference.astype({c: object for c in declared}) if declared else reference
    distributed = _backend(data)
    windows, how = ([], "") if distributed is not None else split_windows(data, time=time, window=window)
    if time is not None and time in reference.columns:
        reference = reference.drop(columns=[time])
    return canonical_rows(reference), binned, distributed, windows, how


def canonical_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Return the rows in an order that depends only on their multiset (a hash of each row's values, types aside).

    The reference's random split then depends on the reference only as a multiset of rows: a table and its
    profile (which keeps no row order) split alike, so they give one answer.

    Parameters
    ----------
    frame : DataFrame

    Returns
    -------
    DataFrame
        The same rows, reordered, with a fresh index.
    """
    keys = pd.util.hash_pandas_object(pd.DataFrame({k: _as_objects(frame.iloc[:, k]) for k in range(frame.shape[1])},
                                                   index=frame.index), index=False).to_numpy()
    return frame.iloc[np.argsort(keys, kind="stable")].reset_index(drop=True)


def _as_objects(column: pd.Series):
    """Return a column whose row hashes are those of its values as Python objects (types aside).

    Its distinct values as objects, each hashed once (a categorical of them: 4x faster than a
    column of objects on 10^6 rows); dates and durations as objects themselves.
    """
    if column.dtype.kind in "mM":
        return column.astype(object)
    codes, uniques = pd.factorize(column, sort=False, use_na_sentinel=True)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(pd.Index(np.asarray(uniques, dtype=object),
                                                                               dtype=object)))


def _backend(data):
    """Return the backend that cuts ``data`` into windows in one pass (Dask data); None for tables in memory."""
    if isinstance(data, (pd.DataFrame, Mapping)) or (isinstance(data, Sequence) and not isinstance(data, str)):
        return None
    backend = backend_for(data)
    if backend is not None and backend.windows is None:
        raise OptionTypeError(f"`data` of the {backend.name!r} engine cannot be cut into windows; pass a DataFrame.")
    return backend


def _reference_rows(schema: Schema, rest: pd.DataFrame) -> tuple:
    """Return the reference's test part as distinct rows (once: every window uses them), its unseen cells and labels."""
    encoded, _, _, unseen, labels, _ = _encode(schema, rest, "the reference's test part")
    note = [f"{unseen} cells of the reference's test part hold labels its fitting part never showed: marginalized, "
            "like missing cells."] if unseen else []
    return DistinctRows.of(encoded), unseen, labels, note


def _learn_reference(schema: Schema, fit: pd.DataFrame, structure, kept: KeptCounts | None, options: dict, *,
                     pseudocount: float, progress) -> BayesianNetwork:
    """Learn the reference's network: from its kept count tables when they are the fitting part's, else its rows.

    ``kept`` (the whole reference compared, no missing cell) holds the counts every window's refit adds to: the
    same tables as counting ``fit`` again, from its distinct rows, once.  Options that need rows (EM, hidden
    variables) learn from the rows.
    """
    if kept is not None and not {"missing", "hidden"} & set(options):
        return learn(kept, structure, schema=schema, pseudocount=pseudocount, progress=progress, **options)
    return learn(schema.encode(fit, missing="allow"), structure, schema=schema, pseudocount=pseudocount,
                 progress=progress, **options)


def _fit_pool(schema: Schema, how, pseudocount: float, options: dict, *samples: DistinctRows,
              kept: KeptCounts | None = None) -> BayesianNetwork:
    """Learn the window's network on the reference and the window pooled: ``how`` a structure name or parents.

    ``kept``: the first sample's count tables, kept across windows (each window then counts only its own rows).
    """
    pooled = _pooled(schema, *samples, kept=kept)
    if isinstance(how, dict):
        return learn(pooled, how, schema=schema, pseudocount=pseudocount)
    return learn(pooled, how, schema=schema, pseudocount=pseudocount, **options)


def _fit_held(schema: Schema, how, pseudocount: float, options: dict, *pieces: WindowRows) -> BayesianNetwork:
    """:func:`_fit_pool` on a worker, from the distinct rows it holds (the reference's, then the window's)."""
    samples = [DistinctRows(EncodedData(rows.codes, schema.variables, dict(schema.states), schema), rows.counts, None)
               for rows in pieces]
    return _fit_pool(schema, how, pseudocount, options, *samples, kept=_held_counts(pieces[0], samples[0]))


#: The count tables of the references a worker holds, by the reference's id while it lives: every window a worker
#: tests is pooled with the same reference, whose tables are then counted once per worker.
_HELD_COUNTS: dict = {}


def _held_counts(piece: WindowRows, rows: DistinctRows) -> KeptCounts | None:
    """Return the kept count tables of a held reference (made on first use, dropped with the reference)."""
    key = id(piece)
    kept = _HELD_COUNTS.get(key)
    if kept is None and (kept := _kept_counts(rows)) is not None:
        kept = _HELD_COUNTS.setdefault(key, kept)
        weakref.finalize(piece, _HELD_COUNTS.pop, key, None)
    return kept


def _kept_counts(rows: DistinctRows) -> KeptCounts | None:
    """Return a reference's count tables, to be counted once for every window (None: it has missing cells, EM)."""
    if rows.encoded.codes.size and rows.encoded.codes.min() < 0:
        return None
    return KeptCounts(_counts(rows.encoded.schema, rows))


def _pooled(schema: Schema, *samples: DistinctRows, kept: KeptCounts | None = None):
    """Return the pooled rows to refit on: each sample's counts added up, or all rows (EM) if cells are missing."""
    if any(rows.encoded.codes.size and rows.encoded.codes.min() < 0 for rows in samples):
        every = [rows.encoded.codes[rows.inverse] if rows.inverse is not None else
                 np.repeat(rows.encoded.codes, rows.copies, axis=0) for rows in samples]
        return EncodedData(np.asfortranarray(np.vstack(every)), schema.variables, dict(schema.states), schema)
    first = kept if kept is not None else _counts(schema, samples[0])
    return SummedCounts(first, *(_counts(schema, rows) for rows in samples[1:]))


def _counts(schema: Schema, rows: DistinctRows) -> NumpyCounts:
    """Return a sample's distinct rows as a counts provider (each row weighted by its copies)."""
    return NumpyCounts(rows.encoded.codes, schema, weights=rows.copies.astype(np.float64))


def _left_out(rows: int) -> list:
    """Return the note of a window whose rows with a label the reference lacks were left out of its test."""
    return [f"{rows} row(s) with a label the reference lacks left out of this window's test (kept, the test would "
            "not be exact); they are counted in unseen_cells."] if rows else []


def _encode(schema: Schema, frame: pd.DataFrame, where: str, *, shared: dict | None = None) -> tuple:
    """Encode rows with the reference's schema; a window's rows with a label the reference lacks are left out.

    Returns the encoded rows tested, the frame they come from, the missing cells, the cells
    with a label the schema lacks (unseen), the unseen labels by column, and the rows left out.
    With ``shared`` (the unseen labels the reference's test part holds, by column) a window's
    row is left out when it holds an unseen label the reference's test part lacks too: such
    rows are all in the window by construction, so marginalising the cell (as a missing one)
    would keep rows of another law on one side only; given that the reference lacks the label,
    the window's other rows and the reference's are exchangeable under no drift, and the test
    on them is exact.  An unseen label the reference's test part holds too is marginalised on
    both sides alike.
    """
    try:
        encoded = schema.encode(frame, missing="allow", handle_unknown="marginalize")
    except SchemaError as exc:
        raise SchemaError(f"In {where}: {exc}") from None
    columns = frame[list(schema.variables)]
    absent = (columns.isna() | columns.isin(list(schema.na_values))).to_numpy()
    column = {v: i for i, v in enumerate(encoded.variables)}
    unseen = (encoded.codes[:, [column[v] for v in schema.variables]] < 0) & ~absent
    labels = {v: set(columns[v].to_numpy()[unseen[:, j]].tolist()) for j, v in enumerate(schema.variables)
              if unseen[:, j].any()}
    rows = np.zeros(len(frame), dtype=bool)
    if shared is not None:
        for j, v in enumerate(schema.variables):
            if v in labels:
                rows |= unseen[:, j] & ~columns[v].isin(list(shared.get(v, ()))).to_numpy()
    if rows.all():  # nothing would be left: the window is tested as it is (its unseen cells marginalised)
        rows[:] = False
    if rows.any():
        frame = frame.loc[~rows]
        encoded = schema.encode(frame, missing="allow", handle_unknown="marginalize")
    return encoded, frame, int(absent.sum()), int(unseen.sum()), labels, int(rows.sum())
