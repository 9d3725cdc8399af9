"""The comparison job: is B different from A, and where?  One call, one result object.

:func:`compare` resolves its inputs once (one schema for both tables, each table
encoded once), learns or takes the network, runs the permutations once, and
returns a :class:`ComparisonResult` from which the text (``str``), the HTML report
(:meth:`~ComparisonResult.to_html`), the JSON (:meth:`~ComparisonResult.to_json`)
and the notebook display are all rendered without computing anything again.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.text import counted
from bnfisher._utils.validation import check_option, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.comparison.anytime import AnytimeTest
from bnfisher.comparison.attribution import conditional_family_tests, family_tables, resolve_floor
from bnfisher.comparison.attribution import default_permutations as family_permutations
from bnfisher.comparison.explain import cells_from_counts, family_profiles, family_table
from bnfisher.comparison.permutation import PermutationStatistics, permutation_statistics
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.comparison.staged import anytime_tests
from bnfisher.comparison.two_sample import TwoSampleResult, effect_interval
from bnfisher.comparison.validity import fitted_on_one_sample, one_sample_warning
from bnfisher.data.binning import Binning
from bnfisher.data.guardrails import identical_tables, left_out_columns, split_columns
from bnfisher.data.profile import tables_of
from bnfisher.data.rows import DistinctRows
from bnfisher.exceptions import OptionTypeError
from bnfisher.jobs.attribute import SEARCHED_STRUCTURES, mechanism_table, neighbourhood_graph, no_mechanisms
from bnfisher.jobs.compare_result import ComparedSamples, ComparisonResult, Witness
from bnfisher.jobs.inputs import feature_advice, prepare, warn
from bnfisher.kernels.base import FamilyKernel
from bnfisher.kernels.fisher import FisherKernel

__all__ = ["ComparisonResult", "compare", "compare_encoded", "sequential_options"]


def compare(A, B, *, network: BayesianNetwork | None = None, structure: str = "chow-liu", bins: int | None = None,
            bin_columns=None, categorical=None, na_values=(), n_permutations: int = 1000, test: str = "aggregate",
            stopping: str = "fixed", top: int = 10,
            names: tuple = ("A", "B"), random_state=None, learn_options: dict | None = None) -> ComparisonResult:
    """Compare two tables: an exact permutation test of the Fisher-kernel MMD, and where the difference lies.

    Parameters
    ----------
    A, B : DataFrame or ReferenceProfile
        The two samples, as read (labels; numeric columns are binned when ``bins`` is given),
        or a profile of one (:func:`bnfisher.profile`; a binned profile bins the other
        table's numeric columns with its edges).
    network : BayesianNetwork, optional
        The model whose Fisher kernel compares them.  Default: learned from A and B
        pooled (then the p-value is exact: the kernel does not favour either side).
    structure : str, default="chow-liu"
        How to learn the network (see :func:`bnfisher.learn`) when ``network`` is not given.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Bin numeric columns into at most this many quantile bins, with the
        same edges for both tables.
    n_permutations : int, default=1000
    test : {"aggregate", "mmd"}, default="aggregate"
        Which p-value decides: the aggregate test (:mod:`bnfisher.comparison.aggregate`:
        the Fisher MMD, its largest standardised block and per-column tests on the
        same permutations, exact) or the Fisher-kernel MMD alone.
    stopping : {"fixed", "anytime"}, default="fixed"
        ``"fixed"``: every one of ``n_permutations`` permutations, the exact p-value.  ``"anytime"``:
        the test, the family tests and the mechanism tests each stop once their decision at 0.05
        is settled (:class:`~bnfisher.comparison.AnytimeTest`, as :func:`bnfisher.drift` does by
        default): ``n_permutations`` is then the test's cap, and every p-value is valid at its
        stop, a bound rather than an estimate.
    top : int, default=10
        Families, cells and rows shown.
    names : tuple of str, default=("A", "B")
        The two tables' names, in the text, the warnings and the reports.
    random_state : None, int or Generator
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.

    Returns
    -------
    ComparisonResult

    Examples
    --------
    >>> data = load("nursery")
    >>> result = compare(data.iloc[:600], data.iloc[600:1200], n_permutations=50, random_state=0)
    >>> 0 < result.test.p_value <= 1
    True
    """
    _check_options(test, stopping, names)
    A, B = tables_of([A, B], bins=bins)
    for name, frame in (("A", A), ("B", B)):
        if not isinstance(frame, pd.DataFrame):
            kind = f"{type(frame).__module__.split('.')[0]}.{type(frame).__name__}"
            raise OptionTypeError(f"`{name}` must be a pandas DataFrame or a ReferenceProfile; got {kind}"
                                  + (": compute it first (.compute()), or compare on a Dask engine with mmd_test."
                                     if kind.startswith("dask") else "."))
    given = network is not None
    network, (encoded_a, encoded_b), notes, advice = prepare([A, B], network=network, structure=structure,
                                                             binning=Binning(bins, bin_columns, categorical,
                                                                             na_values),
                                                             learn_options=learn_options)
    advice += _columns_advice(A, B, names, network.variables, given=given)
    sample = fitted_on_one_sample(network, encoded_a.codes, encoded_b.codes) if given else None
    if sample is not None:
        advice.append(one_sample_warning(sample, tuple(names)))
    elif given:
        notes.append("The p-value is exact if the given network does not depend on which table a row came from "
                     "(learned on other data, or on both tables pooled).")
    searched = given or (isinstance(structure, str) and structure in SEARCHED_STRUCTURES)
    result = compare_encoded(network, (DistinctRows.of(encoded_a), DistinctRows.of(encoded_b)), (A, B),
                             names=tuple(names),
                             n_permutations=n_permutations, test=test, top=top,
                             random_state=check_random_state(random_state), notes=notes, advice=advice,
                             graph=network.parent_indices() if searched else None,
                             early_stop=AnytimeTest(0.05, test) if stopping == "anytime" else None)
    families, advice = result.families, result.advice  # the result's own list: the warnings so far
    for column in split_columns(A, B):
        share = float(families.loc[families["variable"] == column, "share"].sum())
        advice.append(f"Column {column!r} is constant within each table ({names[0]}: {A[column].dropna().iloc[0]!r}, "
                      f"{names[1]}: {B[column].dropna().iloc[0]!r}) and carries {100 * share:.0f}% of the MMD²: it "
                      "alone makes the tables differ. Drop it to see what else does.")
    warn(advice)
    return result


def _check_options(test: str, stopping: str, names) -> None:
    """Refuse an unknown ``test`` or ``stopping``, and ``names`` that are not two names."""
    check_option(test, "test", ("aggregate", "mmd"))
    check_option(stopping, "stopping", ("fixed", "anytime"))
    if isinstance(names, str) or len(names) != 2:
        raise OptionTypeError(f"`names` must be two names, one per table; got {names!r}.")


def _columns_advice(A, B, names, variables, *, given: bool) -> list:
    """Warnings about the tables' columns: those outside the variables compared; one table given twice."""
    source, fix = ("the given network", "give a network that has them") if given else \
        (names[0], f"add them to {names[0]}")
    return left_out_columns([A.columns, B.columns], variables, list(names), source=source, fix=fix) + \
        identical_tables(A, B, list(names))


def compare_encoded(network: BayesianNetwork, encoded: tuple, samples: tuple, *, names: tuple,
                    n_permutations: int, test: str, top: int, random_state: np.random.Generator, notes: list,
                    advice: list, graph: list | None = None, attribute_below: float = 0.05,
                    early_stop: EarlyStop | AnytimeTest | None = None) -> ComparisonResult:
    """Compare two tables already encoded with the network's schema (the core of :func:`compare` and of drift).

    Inner code: trusts its inputs (encoded once at the boundary).  Runs the permutations of
    the two-sample test and the families' conditional tests once, and returns the result.

    Parameters
    ----------
    network : BayesianNetwork
    encoded : tuple of DistinctRows
        The two samples, encoded with ``network``'s schema and reduced to distinct rows.
    samples : tuple of DataFrame
        The same rows as the user gave them (shown as typical rows).
    names : tuple of str
    n_permutations : int
    test : {"aggregate", "mmd"}
    top : int
    random_state : Generator
        Resolved by the public caller (:func:`compare`, :func:`~bnfisher.drift`): drawn from as it is.
    notes, advice : list of str
        What was done so far, and the warnings so far (extended here).
    graph : list of tuple of int, optional
        The mechanism search's DAG (each variable's parents); default: learned by
        :func:`~bnfisher.jobs.attribute.neighbourhood_graph` on the two samples pooled.
    attribute_below : float, default=0.05
        Search for the changed mechanisms only when the test's p-value is at most this (when
        the samples do not differ there is no mechanism to name, and the search is the
        costliest step on wide networks).
    early_stop : AnytimeTest or EarlyStop, optional
        Stop the permutations once the decision is settled (:class:`~bnfisher.comparison.AnytimeTest`,
        whose p-value is then the test's) or where the p-value is plainly large
        (:class:`~bnfisher.comparison.EarlyStop`); default: all of them.

    Returns
    -------
    ComparisonResult
    """
    kernel = FisherKernel(network)
    # New lists: the caller's notes and advice are read, not written.
    notes = [*notes, f"Fisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}."]
    advice = [*advice, *feature_advice(kernel)]
    statistics = permutation_statistics(kernel, *encoded, n_permutations=n_permutations,
                                        random_state=random_state, witness=True, early_stop=early_stop)
    samples_codes = [(kernel.encode(rows.encoded).codes, rows.copies) for rows in encoded]
    sequential = sequential_options(early_stop)
    tests, note = resolved_family_tests(network, *samples_codes, random_state=random_state, alpha=attribute_below,
                                        **sequential)
    notes.append(note)
    result = two_sample_test(kernel, statistics, test, ((statistics.x.witness, encoded[0].copies),
                                                        (statistics.y.witness, encoded[1].copies)),
                             stopping=early_stop)
    mechanisms, searched = find_mechanisms(kernel, encoded, graph=graph, names=names, random_state=random_state,
                                           **sequential) \
        if result.p_value <= attribute_below else (None, [])
    return _result(kernel, statistics, tests, result, encoded, samples, names=names, notes=notes + searched,
                   advice=advice, mechanisms=mechanisms, top=top)


def sequential_options(rule) -> dict:
    """Return how a comparison's family and mechanism tests stop, from its test's rule (anytime, and how).

    Parameters
    ----------
    rule : AnytimeTest, EarlyStop or None

    Returns
    -------
    dict
        ``anytime`` and ``reject_early``, the keywords of :func:`resolved_family_tests` and
        :func:`find_mechanisms`.
    """
    return {"anytime": isinstance(rule, AnytimeTest), "reject_early": getattr(rule, "reject_early", True)}



def two_sample_test(kernel: FamilyKernel, statistics: PermutationStatistics, method: str, moments: tuple, *,
                    stopping=None):
    """Return the two-sample test of the permutation statistics, its effect's interval and its components named.

    Parameters
    ----------
    kernel : FamilyKernel
    statistics : PermutationStatistics
    method : {"aggregate", "mmd"}
    moments : tuple of two (values, weights)
        Each sample's witness values and their weights (:func:`~bnfisher.comparison.effect_interval`).
    stopping : AnytimeTest or EarlyStop, optional
        The rule that ended the permutations (:meth:`~bnfisher.comparison.TwoSampleResult.from_statistics`).

    Returns
    -------
    TwoSampleResult
    """
    result = TwoSampleResult.from_statistics(statistics, method=method, stopping=stopping)
    components = result.components
    if components is not None:
        components = components.copy()
        for name in ("blocks", "columns"):  # name the variables, not their indices
            column = components.loc[name, "column"]
            if column is not None:
                components.loc[name, "column"] = kernel.network.variables[int(column)]
    return dataclasses.replace(result, components=components,
                               unbiased_ci=effect_interval(result.unbiased, result.null_distribution, *moments))


def find_mechanisms(kernel: FamilyKernel, encoded: tuple, *, graph: list | None, names: tuple,
                    random_state, anytime: bool = False, reject_early: bool = True) -> tuple:
    """Search for the changed mechanisms of a comparison: their table (the cell in its ``attrs``) and notes.

    Parameters
    ----------
    kernel : FamilyKernel
        Its network names the variables; it encodes the samples in the network's order.
    encoded : tuple of DistinctRows
        The two samples, encoded with the network's schema.
    graph : list of tuple of int, optional
        The search's DAG; default :func:`~bnfisher.jobs.attribute.neighbourhood_graph` on the samples pooled.
    names : tuple of str
        The samples' names (for the cell's text).
    random_state : Generator
    anytime : bool, default=False
        Anytime-valid tests that stop once settled (:func:`~bnfisher.comparison.mechanism_tests`).
    reject_early : bool, default=True
        With ``anytime``: False stops a test only to accept.

    Returns
    -------
    table : DataFrame
        :func:`~bnfisher.jobs.attribute.mechanism_table`.
    notes : list of str
        What the search learned and how many permutations it drew.
    """
    network, notes = kernel.network, []
    samples_codes = tuple((kernel.encode(rows.encoded).codes, rows.copies) for rows in encoded)
    if graph is None:
        graph, note = neighbourhood_graph(network, encoded, random_state=random_state)
        notes.append(note)
    table = mechanism_table(network, samples_codes, graph, names=names, random_state=random_state, anytime=anytime,
                            reject_early=reject_early)
    budget = table.attrs["budget"]
    how = ("each test stops once settled, anytime-valid, at most " if anytime else
           "a variable's tests stop once one set explains it, at 99 or 999 permutations; the others run ")
    notes.append(f"Mechanism tests: {int(table['sets'].sum())} conditioning sets, "
                 f"{table.attrs['permutations']:,} permutations in all ({how}{budget}; a set whose exact null "
                 f"moments bound its p-value below {table.attrs['certified']:.2g} draws none).")
    return table, notes


def resolved_family_tests(network: BayesianNetwork, X, Y, *, random_state, alpha: float = 0.05,
                          tables: list | None = None, anytime: bool = False, reject_early: bool = True) -> tuple:
    """Return the family tests, those at the p-value floor run again (:func:`~bnfisher.comparison.resolve_floor`).

    Parameters
    ----------
    network : BayesianNetwork
    X, Y : tuple of (ndarray of int, ndarray), or None
        Codes and copies of each sample's distinct rows.
    random_state : Generator
    alpha : float, default=0.05
    tables : list, optional
        Instead of ``X`` and ``Y``: every family's two count tables
        (:func:`~bnfisher.comparison.conditional_family_tests`).
    anytime : bool, default=False
        Instead of a fixed budget and a second run at the floor: every family's test stops once
        its decision at ``alpha / F`` (Holm's first step over ``F`` families) is settled, its
        p-value anytime-valid (:class:`~bnfisher.comparison.AnytimeTest`), at most ten times the
        fixed budget.
    reject_early : bool, default=True
        With ``anytime``: False stops a family's test only to accept (:class:`~bnfisher.comparison.AnytimeTest`).

    Returns
    -------
    tests : FamilyTests
    note : str
        How many permutations the tests took, and why.
    """
    if tables is None:
        tables = family_tables(network.cardinalities, list(enumerate(network.parent_indices())), [X, Y])
    if anytime:
        n_families = max(sum(int(r) >= 2 for r in network.cardinalities), 1)
        # Stopping for futility alone, a test that might reject runs the fixed budget (its floor resolved below).
        cap = (10 if reject_early else 1) * family_permutations(n_families)
        tests, drawn = anytime_tests(network.cardinalities, list(enumerate(network.parent_indices())), None,
                                     n_permutations=cap, random_state=random_state, tables=tables,
                                     rule=AnytimeTest(alpha / n_families, "mmd", reject_early=reject_early))
        if not reject_early:
            tests, budget = resolve_floor(network, tests, None, None, random_state=random_state, tables=tables)
            cap = max(cap, budget)
        how = "anytime-valid" if reject_early else "stopped only to accept; the clearest at the floor run again"
        families = counted(len(tests.families), "family", "families")
        return tests, (f"Family tests: {int(drawn.sum()):,} permutations within parent configurations in all "
                       f"({families}, each stopped once settled at {alpha:g} / {n_families}, {how}; at most {cap} "
                       "each).")
    first = conditional_family_tests(network, None, None, random_state=random_state, tables=tables)
    tests, budget = resolve_floor(network, first, None, None, random_state=random_state, tables=tables)
    again = f"; the clearest, at the floor of the p-values, run again with {budget}" if budget else (
        "; the clearest, at the floor of the p-values, resolved by its exact bound (no permutation)"
        if not np.array_equal(tests.p_value, first.p_value) else "")
    return tests, (f"Family tests: {first.n_permutations} permutations within parent configurations "
                   f"({counted(len(tests.families), 'family', 'families')}){again}.")


def _result(kernel: FamilyKernel, statistics: PermutationStatistics, tests, test: TwoSampleResult, encoded: tuple,
            samples: tuple, *, names: tuple, notes: list, advice: list, mechanisms, top: int) -> ComparisonResult:
    assert statistics.x.witness is not None and statistics.y.witness is not None  # set by permutation_statistics
    # Each row's witness; a sample known only by its distinct rows keeps one value per distinct row (and its copies).
    witness = tuple(values if rows.inverse is None else values[rows.inverse]
                    for values, rows in zip((statistics.x.witness, statistics.y.witness), encoded))
    families = family_table(kernel, statistics, tests)
    counts = ((statistics.x.counts, statistics.x.n), (statistics.y.counts, statistics.y.n))
    return ComparisonResult(names=names, test=test, families=families,
                            cells=cells_from_counts(kernel, *counts, n=top, names=names), witness=Witness(witness),
                            kernel=kernel, notes=notes, top=top, advice=advice,
                            mechanisms=no_mechanisms() if mechanisms is None else mechanisms,
                            profiles=family_profiles(kernel, counts, families, top),
                            samples=ComparedSamples(samples, tuple(rows.copies if rows.inverse is None else None
                                                                   for rows in encoded)))
