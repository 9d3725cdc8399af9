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

import warnings
from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.parallel import map_threads, resolve_jobs
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_option, check_random_state
from bnfisher.comparison.anytime import AnytimeTest
from bnfisher.comparison.attribution import holm
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.comparison.two_sample import statistics_pvalue
from bnfisher.data.binning import Binning
from bnfisher.data.guardrails import check_tables, left_out_columns
from bnfisher.data.profile import ReferenceProfile, tables_of
from bnfisher.data.providers import backend_for
from bnfisher.data.windows import split_windows
from bnfisher.exceptions import DataError, OptionError, OptionTypeError
from bnfisher.jobs.compare_result import ComparisonResult
from bnfisher.jobs.drift_result import MIN_WINDOW_ROWS, NO_SINGLE_FAMILY, DriftResult
from bnfisher.jobs.inputs import warn
from bnfisher.jobs.reference import Reference

__all__ = ["STOPPING", "DriftResult", "check_level", "clearest_changes", "default_permutations", "drift",
           "permutations_used", "resolve_stopping"]


def drift(reference: pd.DataFrame, data, *, time: str | None = None, window=None, structure: str = "chow-liu",
          bins: int | None = None, bin_columns=None, categorical=None, na_values=(), fit_fraction: float | None = None,
          n_permutations: int | None = None, stopping="futility", early_stop: bool | None = None,
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
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Quantile bins for numeric columns, edges from the reference's
        fitting part.
    fit_fraction : float, optional
        Default (None): the whole reference is compared with every window, and each
        window's structure is learned on the reference and the window pooled (without
        the label: the p-value is exact, and no random choice but the permutations
        touches it).  A fraction in (0, 1): that share of the reference, drawn at
        random, learns one structure for every window and the rest is compared with
        them (faster for a costly ``structure``; the p-value then depends on the draw).
    n_permutations : int, optional
        The most permutations of each window's test.  Default: ``max(2999, 4 W / alpha - 1)``
        for W windows, so that Holm's adjustment can reach ``alpha`` (the smallest p-value a
        permutation test can give is about 1/(n_permutations + 1), and Holm multiplies the
        smallest by W); twice that for ``stopping="anytime"``.
    stopping : {"futility", "anytime", "fixed", "checkpoints"} or AnytimeTest, default="futility"
        When a window's permutations stop.  ``"futility"``: as soon as a rejection at
        ``alpha / W`` (Holm's first step) has become implausible -- an unchanged window after a
        few dozen permutations, its p-value then 1 -- and otherwise at ``n_permutations``, with
        the exact p-value of them all: the fixed test's power, at a fraction of its work where
        nothing changed.  ``"anytime"``: also stop to reject, by betting against the null
        (:class:`~bnfisher.comparison.AnytimeTest`, Fischer & Ramdas): a clear change after about
        ``1.4 W / alpha`` permutations, each p-value valid whenever its test stopped but a bound,
        not an estimate, and less power near the level (``docs/drift.md``).  ``"fixed"``: every
        permutation, the exact p-value.  ``"checkpoints"``: Besag & Clifford's stops at 199 and
        999 where the p-value is plainly large (:class:`~bnfisher.comparison.EarlyStop`).  An
        :class:`~bnfisher.comparison.AnytimeTest` sets the level and the rule itself
        (:func:`bnfisher.monitor` passes ``alpha / horizon``).  The window table's
        ``permutations`` column says how many each p-value rests on; the futility and anytime
        forms of the aggregate test score each split alone
        (:func:`~bnfisher.comparison.aggregate.split_scores`).
    early_stop : bool, optional
        Deprecated: ``stopping="checkpoints"`` (True) or ``"fixed"`` (False).
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
    stopping = resolve_stopping(stopping, early_stop)
    _check_options(test, alpha, min_effect)
    n_jobs = resolve_jobs(n_jobs)
    table, binned, distributed, windows, how = _inputs(reference, data, time=time, window=window, bins=bins)
    rng = check_random_state(random_state)
    binning = Binning(bins, bin_columns, categorical, na_values)
    advice = check_tables([table] + [frame for *_, frame in windows], na_values=binning.markers,
                          binned=bins is not None or binned is not None)
    prepared = Reference(table, binning=binning, binned=binned, structure=structure, fit_fraction=fit_fraction,
                         learn_options=learn_options, random_state=rng)
    if distributed is not None:
        windows, how, n_jobs = _held_windows(distributed, prepared, data, time=time, window=window, n_jobs=n_jobs)
    if n_permutations is None:
        n_permutations = default_permutations(len(windows), alpha) * (2 if stopping == "anytime" else 1)
        if stopping in ("fixed", "checkpoints"):  # an anytime window runs the cap only near its level
            advice += _growing_permutations(n_permutations, len(windows))
    stop = _stopping_rule(stopping, test, alpha, len(windows))
    notes = [f"Windows: {how}; {_permutations_note(stop, n_permutations)} per window.", *prepared.notes]
    advice += _extra_columns(data if distributed is not None else windows, time, table.columns)
    # One generator per window: the same answer however many threads run.
    streams = [np.random.default_rng(seed) for seed in np.random.SeedSequence(int(rng.integers(2**63))).spawn(
        len(windows))]
    sizes, tested = _tested_windows(windows)

    def compare_window(k: int) -> tuple:
        return prepared.compare(windows[k][0], windows[k][3], n_permutations=n_permutations, test=test, top=top,
                                alpha=alpha, early_stop=stop, random_state=streams[k])

    # The bar advances as each window's comparison comes back (in order), not after the last one.
    compared = progress_bar(map_threads(compare_window, tested, n_jobs=n_jobs), total=len(tested), desc="drift",
                            unit="window", leave=False, disable=None if progress else True)
    outcomes = dict(zip(tested, compared))
    comparisons, table = _window_table(windows, sizes, outcomes, alpha=alpha, min_effect=min_effect)
    advice += _window_advice(table, windows, outcomes)
    notes += _stopping_notes(stop, comparisons, n_permutations)
    warn(advice)
    return DriftResult(windows=table, comparisons=comparisons, network=prepared.network, reference=prepared.sizes,
                       alpha=alpha, notes=notes, advice=advice, top=top, min_effect=min_effect)


def _held_windows(distributed, prepared: Reference, data, *, time, window, n_jobs: int) -> tuple:
    """Return the windows of data beyond memory, how they were cut, and the threads to wait on them with.

    One pass over the data gives each window's distinct rows; the reference is held by the workers once.
    """
    windows, how = distributed.windows(data, prepared.schema, time=time, window=window, shared=prepared.shared)
    if not windows:
        raise DataError("The data has no rows: there is no window to compare.")
    prepared.hold(distributed)
    return windows, how, max(n_jobs, distributed.threads())  # the client waits on the workers: a window per thread


def _tested_windows(windows: list) -> tuple:
    """Return each window's rows and the windows large enough to test (refused when none is)."""
    sizes = [len(frame) if isinstance(frame, pd.DataFrame) else frame.n_rows + frame.left_out for *_, frame in windows]
    tested = [k for k, size in enumerate(sizes) if size >= MIN_WINDOW_ROWS]
    if not tested:
        raise DataError(f"Every window has fewer than {MIN_WINDOW_ROWS} rows ({len(windows)} window(s), "
                        f"{max(sizes)} row(s) at most): there is nothing to test; use longer windows.")
    return sizes, tested


def _stopping_notes(stop, comparisons: list, n_permutations: int) -> list:
    """Return the note on where the windows' tests stopped (none for a fixed number of permutations)."""
    if isinstance(stop, EarlyStop):
        return [_early_stop_note(stop, comparisons, n_permutations)]
    return [] if stop is None else [_anytime_note(stop, comparisons)]


def _check_options(test: str, alpha: float, min_effect) -> None:
    check_option(test, "test", ("aggregate", "mmd"))
    check_level(alpha)
    if min_effect is not None and not (isinstance(min_effect, (int, float)) and np.isfinite(min_effect)):
        raise OptionError(f"`min_effect` must be a finite number (an MMD²_u) or None; got {min_effect!r}.")


#: The fewest permutations a window's test gets by default: the aggregate p-value's Monte-Carlo error is then small
#: enough that ten seeds give p-values within 0.10 of one another on an unchanged window (benchmarks/drift_seeds.py).
MIN_PERMUTATIONS = 2999


def default_permutations(n_tests: int, level: float) -> int:
    """Return ``max(2999, 4 n_tests / level - 1)``: Holm's (or Bonferroni's) adjustment over ``n_tests`` can reach it.

    The smallest p-value a permutation test gives is ``1 / (n_permutations + 1)``; four times
    the level's share of each test leaves room for Monte-Carlo error.  :func:`drift` uses it
    over its windows at ``alpha``, :func:`bnfisher.monitor` for one window at ``alpha / horizon``.

    Parameters
    ----------
    n_tests : int
    level : float

    Returns
    -------
    int
    """
    return max(MIN_PERMUTATIONS, int(np.ceil(4 * n_tests / level)) - 1)


def check_level(alpha: float) -> float:
    """Return ``alpha`` checked to lie in (0, 1).

    Parameters
    ----------
    alpha : float

    Returns
    -------
    float

    Raises
    ------
    OptionError
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise OptionError(f"`alpha` must be in (0, 1); got {alpha!r}.")
    return float(alpha)


def _growing_permutations(n_permutations: int, n_windows: int) -> list:
    """Return the warning that the default permutations grew with the windows (none when they did not)."""
    if n_permutations <= MIN_PERMUTATIONS:
        return []
    return [f"The default permutations grow with the windows ({n_permutations} per window for {n_windows} windows, "
            "so that Holm's adjustment can reach alpha), so the work grows as the square of the windows: "
            f"{n_permutations * n_windows:,} permutations in all. Pass n_permutations (--permutations) to bound it, "
            "at the cost of a coarser p-value floor."]


#: How a window's permutations may stop (``stopping``).
STOPPING = ("futility", "anytime", "fixed", "checkpoints")


def resolve_stopping(stopping, early_stop: bool | None):
    """Return ``stopping`` checked (:data:`STOPPING` or an AnytimeTest), the deprecated ``early_stop`` turned into it.

    Parameters
    ----------
    stopping : str or AnytimeTest
    early_stop : bool or None
        Deprecated; when given, it decides (with a FutureWarning).

    Returns
    -------
    str or AnytimeTest

    Raises
    ------
    OptionError, OptionTypeError
    """
    if early_stop is not None:
        if not isinstance(early_stop, (bool, np.bool_)):
            raise OptionTypeError(f"`early_stop` must be True or False; got {early_stop!r}.")
        if not (isinstance(stopping, str) and stopping == "futility"):
            raise OptionError(f"Give `stopping` alone: `early_stop` (deprecated) would override stopping="
                              f"{stopping!r}.")
        stopping = "checkpoints" if early_stop else "fixed"
        warnings.warn(f"`early_stop` is deprecated and will be removed: pass stopping={stopping!r} (the default, "
                      "'futility', stops each unchanged window once a rejection is implausible).", FutureWarning,
                      stacklevel=3)
    if isinstance(stopping, AnytimeTest):
        return stopping
    return check_option(stopping, "stopping", STOPPING)


def _stopping_rule(stopping, test: str, alpha: float, n_windows: int):
    """Return the windows' stopping rule: an anytime test at Holm's first level, Besag-Clifford's, or none."""
    if isinstance(stopping, AnytimeTest):
        if stopping.method != test:
            raise OptionError(f"The anytime test's method ({stopping.method!r}) is not the test ({test!r}): give "
                              "them alike.")
        return stopping
    if stopping in ("anytime", "futility"):
        return AnytimeTest(alpha / max(n_windows, 1), test, reject_early=stopping == "anytime")
    if stopping == "checkpoints":
        return EarlyStop.for_alpha(alpha, partial(statistics_pvalue, method=test))
    return None


def _permutations_note(stop, n_permutations: int) -> str:
    """Return how many permutations a window runs, in words."""
    if isinstance(stop, AnytimeTest) and stop.reject_early:
        return (f"permutations until the decision at {stop.alpha:.3g} is settled (anytime-valid, at most "
                f"{n_permutations})")
    if isinstance(stop, AnytimeTest):
        return (f"{n_permutations} permutations, fewer where a rejection at {stop.alpha:.3g} became implausible "
                "(stopped for futility)")
    return f"{n_permutations} permutations" if stop is None else f"at most {n_permutations} permutations"


def permutations_used(test) -> int:
    """Return the permutations a test's p-value rests on: an anytime test's stopping time, else all of them.

    Parameters
    ----------
    test : TwoSampleResult

    Returns
    -------
    int
    """
    return int(test.sequential.permutations if test.sequential is not None else len(test.null_distribution))


def _anytime_note(stop: AnytimeTest, comparisons: list) -> str:
    """Return the note saying where the windows' sequential tests stopped."""
    outcomes = [result.test.sequential for result in comparisons if result is not None]
    used = np.array([o.permutations for o in outcomes])
    settled = sum(o.settled for o in outcomes)
    median, total = (int(np.median(used)) if used.size else 0), int(used.sum())
    if not stop.reject_early:
        return (f"Stopped for futility (level {stop.alpha:.3g} per window): {settled} of {len(outcomes)} windows "
                f"stopped once a rejection was implausible (p-value 1), the other {len(outcomes) - settled} ran every "
                f"permutation (exact p-values); median {median} permutations, {total:,} in all.")
    return (f"Anytime-valid tests (Fischer & Ramdas' betting, level {stop.alpha:.3g} per window): of {len(outcomes)} "
            f"windows, {sum(o.rejected for o in outcomes)} rejected and {settled} stopped once settled "
            f"(median {median} permutations, {total:,} in all); {len(outcomes) - settled} ran to the cap. A window's "
            "p-value is valid at its stop, a bound (1 for most unchanged windows) rather than an estimate; "
            "stopping='fixed' gives the exact p-value of every permutation.")


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


def _extra_columns(data, time, reference_columns) -> list:
    """Return the warning about the data's columns that the reference lacks (left out of the comparison), if any.

    ``data``: the windows in memory (a list of ``(label, start, end, frame)``), or data beyond memory.
    """
    columns = [c for *_, frame in data for c in frame.columns] if isinstance(data, list) else list(data.columns)
    return left_out_columns([[c for c in columns if c != time]], reference_columns, ["the data"],
                            source="the reference", fix="add them to the reference")


def _window_table(windows: list, sizes: list, outcomes: dict, *, alpha: float, min_effect: float | None) -> tuple:
    """Return each window's comparison (None: too small to test) and the window table."""
    comparisons: list = []
    rows: list = []
    for k, (label, start, end, _) in enumerate(windows):
        row = {"window": label, "start": start, "end": end, "rows": sizes[k]}
        if k not in outcomes:  # too few rows to test: reported, not tested
            comparisons.append(None)
            rows.append(row | {"missing_cells": 0, "unseen_cells": 0, "mmd2": np.nan, "mmd2_u": np.nan,
                               "mmd2_u_low": np.nan, "mmd2_u_high": np.nan, "p_value": np.nan, "permutations": 0,
                               "family": "", "parents": "", "share": 0.0, "family_p_adjusted": np.nan,
                               "mechanism": "", "mechanism_p_adjusted": np.nan})
            continue
        result, missing, unseen = outcomes[k]
        comparisons.append(result)
        rows.append(row | {"missing_cells": missing, "unseen_cells": unseen, "mmd2": result.test.statistic,
                           "mmd2_u": result.test.unbiased, "mmd2_u_low": result.test.unbiased_ci[0],
                           "mmd2_u_high": result.test.unbiased_ci[1], "p_value": result.test.p_value,
                           "permutations": permutations_used(result.test)} | clearest_changes(result, alpha))
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
    return comparisons, table


def _window_advice(table: pd.DataFrame, windows: list, outcomes: dict) -> list:
    """Return the warnings about the windows: untested, holding unseen labels, small."""
    advice = []
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
    return advice


#: The level at which a drifted window's mechanisms are named (Holm over the variables, within the window).
MECHANISM_ALPHA = 0.05


def clearest_changes(result: ComparisonResult, alpha: float) -> dict:
    """Return a window's clearest changed family (Holm at ``alpha``) and mechanism (at :data:`MECHANISM_ALPHA`).

    Parameters
    ----------
    result : ComparisonResult
    alpha : float

    Returns
    -------
    dict
        ``family``, ``parents``, ``share``, ``family_p_adjusted`` (:data:`NO_SINGLE_FAMILY` when
        no family is changed), ``mechanism`` ("A or B": cannot be oriented; "": none found) and
        ``mechanism_p_adjusted``.
    """
    lead = result.families.iloc[0] if len(result.families) else None
    clearest = {"family": NO_SINGLE_FAMILY, "parents": "", "share": 0.0, "family_p_adjusted": np.nan}
    if lead is not None:
        clearest["family_p_adjusted"] = float(lead["p_adjusted"])
        if bool(lead["p_adjusted"] <= alpha):
            clearest.update(family=str(lead["variable"]), share=float(lead["share"]),
                            parents=str(lead["parents"]) if lead["parents"] not in ("", "-") else "")
    return clearest | _mechanism(result.mechanisms)


def _mechanism(table: pd.DataFrame) -> dict:
    """Return the clearest changed mechanism of a mechanism table ("A or B": cannot be oriented; "": none found)."""
    alpha = MECHANISM_ALPHA
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
    reference = _reference_table(reference, binned, bins)
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


def _reference_table(reference, binned: ReferenceProfile | None, bins) -> pd.DataFrame:
    """Return the reference as a table whose labels are those it holds, as its profile's are (one answer for both).

    A profile's table takes its labels as a table's (unused categories are not labels); a table's unordered
    categoricals become their labels; ordered ones (bins: every bin a state) and a binned profile's bins are kept.
    """
    if isinstance(reference, ReferenceProfile):
        (reference,) = tables_of([reference], bins=bins)
        edges = binned.schema.bin_edges if binned is not None else ()
        reference = reference.astype({v: object for v in reference.columns if v not in edges})
    if not isinstance(reference, pd.DataFrame):
        raise OptionTypeError(f"`reference` must be a pandas DataFrame or a ReferenceProfile; got "
                              f"{type(reference).__name__}.")
    if binned is not None:
        return reference
    declared = [c for c in reference.columns if isinstance(reference[c].dtype, pd.CategoricalDtype)
                and not reference[c].dtype.ordered]
    return reference.astype({c: object for c in declared}) if declared else reference


def _backend(data):
    """Return the backend that cuts ``data`` into windows in one pass (Dask data); None for tables in memory."""
    if isinstance(data, (pd.DataFrame, Mapping)) or (isinstance(data, Sequence) and not isinstance(data, str)):
        return None
    backend = backend_for(data)
    if backend is not None and backend.windows is None:
        raise OptionTypeError(f"`data` of the {backend.name!r} engine cannot be cut into windows; pass a DataFrame.")
    return backend
