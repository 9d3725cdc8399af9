"""Which mechanism changed, for the comparison and drift jobs: the graph to search, the tests, the table and the cell.

The kernel's network (a Chow-Liu tree by default) measures *how much* two samples
differ; which conditional distribution of the data-generating process changed is
answered by :mod:`bnfisher.comparison.mechanisms`, whose conditioning sets come from
a hill-climbing DAG (AIC) learned on the two samples pooled (without the label, so the
tests stay exact), or from the network itself when it was given or learned by a
score search.
"""

from __future__ import annotations

import time

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.text import counted
from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.comparison.mechanisms import MechanismTests, certify_level, mechanism_tests
from bnfisher.data.providers import NumpyCounts

__all__ = ["MECHANISM_COLUMNS", "SEARCHED_STRUCTURES", "mechanism_table", "neighbourhood_graph"]

#: Structures whose learned arcs serve as the mechanism search's graph as they are (others: a hill climb on the pool).
SEARCHED_STRUCTURES = ("hc", "exact")

#: The columns of the mechanism table, in order.
MECHANISM_COLUMNS = ["variable", "changed", "p_value", "p_adjusted", "best_set", "z", "sets"]


def no_mechanisms() -> pd.DataFrame:
    """Return the mechanism table of a comparison whose search did not run: empty, with its columns.

    Returns
    -------
    DataFrame
        :data:`MECHANISM_COLUMNS`, no row; ``attrs``: ``searched`` False, ``unoriented`` [],
        ``p_floor``, ``certified``, ``budget`` and ``cell`` None.

    Examples
    --------
    >>> table = no_mechanisms()
    >>> list(table.columns) == MECHANISM_COLUMNS, table.empty, table.attrs["searched"]
    (True, True, False)
    """
    table = pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(MECHANISM_COLUMNS, (
        object, bool, float, float, object, float, "int64"))})
    table.attrs.update(searched=False, unoriented=[], p_floor=None, certified=None, budget=None, cell=None)
    return table


#: The most rows the mechanism search's graph is learned on: beyond, a uniform sample of the pooled rows.
GRAPH_ROWS = 50_000

#: The score of the mechanism search's hill climb (see :func:`neighbourhood_graph`).
GRAPH_SCORE = "aic"


def neighbourhood_graph(network: BayesianNetwork, encoded: tuple, *, random_state: np.random.Generator) -> tuple:
    """Learn the mechanism search's DAG by hill climbing (AIC) on the two samples pooled, without the label.

    On more than :data:`GRAPH_ROWS` pooled rows (a drift window beside a long reference), on a uniform sample of
    that many of them, drawn without regard to the label: the graph stays a function of the pooled rows and of
    independent draws, so the tests given it stay exact, and its cost stops growing with the reference.

    One climb from the empty graph (``search="plain"``): the search needs each variable's neighbours, and the
    order search that ``learn(..., "hc")`` adds by default changed none of the rates on 142 planted changes
    (``benchmarks/mechanisms.py``, ``verdicts.py``, ``mechanisms_peers.py``, 2026-11-29: the same runs named first;
    2 of 65 verdicts claiming an unchanged variable with either graph, not the same two) while costing about
    0.8 s of alarm's 2.9 s comparison at 5,000 rows a side.

    The score is AIC (:data:`GRAPH_SCORE`), not the BIC that :func:`bnfisher.learn` defaults to: the search needs
    a variable's parents to test it given them, and BIC's penalty drops the arcs of a variable of many states
    with several parents (6 states, 3 parents: 1,080 parameters) at a few thousand rows, where a change of its
    conditional may leave its marginal as it was. The graph is learned without the label, so every test stays
    exact; the family-wise bound needs each unchanged variable's true parents among its sets, which a denser
    graph holds more often. Measured with ``benchmarks/mechanisms_peers.py``'s random networks (RCD's protocol,
    40 planted changes, 2026-11-30): the changed variable named first in 27 against 23 of 40, no unchanged
    variable named with either; ``benchmarks/mechanisms.py``: the cell right in 85 against 82 of 90 middle
    variables and leaves of six bnlearn networks, no unchanged variable flagged (against 1 of 131).

    Parameters
    ----------
    network : BayesianNetwork
        Gives the schema (variables, states).
    encoded : tuple of DistinctRows
        The two samples in the network's schema.
    random_state : Generator
        The comparison's (one climb from the empty graph draws nothing from it; the sample of rows does).

    Returns
    -------
    parents : list of tuple of int
        Each variable's parents (positions in ``network.variables``).
    note : str
        What was learned, and in how long.
    """
    started = time.perf_counter()
    def in_schema(rows) -> np.ndarray:  # the schema's column order (a network's order is topological)
        column = {v: i for i, v in enumerate(rows.encoded.variables)}
        return rows.encoded.codes[:, [column[v] for v in network.schema.variables]]

    codes = np.concatenate([in_schema(rows) for rows in encoded])
    copies = np.concatenate([rows.copies for rows in encoded]).astype(np.float64)
    sampled = ""
    if copies.sum() > GRAPH_ROWS and np.array_equal(copies, np.rint(copies)):
        copies = random_state.multivariate_hypergeometric(copies.astype(np.int64), GRAPH_ROWS).astype(np.float64)
        codes, copies = codes[copies > 0], copies[copies > 0]
        sampled = f", on {GRAPH_ROWS:,} of them drawn uniformly"
    provider = NumpyCounts(np.asfortranarray(codes), network.schema, weights=copies, missing="available-case")
    graph = learn(provider, "hc", schema=network.schema, missing="available-case", search="plain",
                  structure_score=GRAPH_SCORE, random_state=random_state)
    note = (f"Mechanism search: conditioning sets from a hill-climbing DAG ({GRAPH_SCORE.upper()}) of the two samples "
            f"pooled{sampled} ({counted(len(graph.edges), 'arc')}, learned in {time.perf_counter() - started:.2f} s).")
    position = {v: i for i, v in enumerate(network.variables)}
    return [tuple(position[p] for p in graph.parents[v]) for v in network.variables], note


def mechanism_table(network: BayesianNetwork, samples: tuple, graph: list, *, names: tuple, random_state,
                    alpha: float = 0.05, anytime: bool = False, reject_early: bool = True) -> pd.DataFrame:
    """Run the mechanism tests and return their table, with the cell that changed most in the clearest one.

    Parameters
    ----------
    network : BayesianNetwork
        Names the variables and states (codes are in its schema).
    samples : tuple of two (ndarray of int, ndarray)
        Codes and copies of each sample's distinct rows.
    graph : list of tuple of int
        Each variable's parents in the search's DAG.
    names : tuple of str
        The two samples' names (for the cell's text).
    random_state : Generator
    alpha : float, default=0.05
    anytime : bool, default=False
        Anytime-valid tests that stop once settled (:func:`~bnfisher.comparison.mechanism_tests`).
    reject_early : bool, default=True
        With ``anytime``: False stops a test only to accept.

    Returns
    -------
    DataFrame
        :data:`MECHANISM_COLUMNS`, clearest first: ``changed`` (adjusted p at most
        ``alpha``), ``p_value`` (the largest over the sets searched), ``p_adjusted``
        (Holm over the variables), ``best_set`` (the conditioning set that gave that
        p-value: the best explanation of the variable's difference, ``-`` for none),
        ``z`` (the standardised excess there), ``sets`` (how many were searched); sorted by adjusted p-value, then by
        the weakest standardised excess; ``attrs`` hold ``p_floor`` (one over the
        permutations plus one, plus the certificate's level: the smallest p-value permutations give), ``certified``
        (that level, ``tau``: a p-value below ``p_floor`` is an exact Cantelli bound, no permutation drawn),
        ``budget`` (a test's permutations at most), ``permutations`` (drawn over every set's test: the search's
        cost), ``anytime``,
        ``unoriented`` (groups of two or more variable names, each group's variables explaining
        one another's difference; only when no variable is flagged: beside a named mechanism such a
        group is most often its echo downstream, which no set searched links to it), ``alpha`` and
        ``cell``: for the first flagged variable (None: none), ``variable``, ``given`` (names to
        labels), ``state``, ``percent_X``, ``percent_Y`` and ``text``
        (:func:`~bnfisher.comparison.cells.cell_search` over the columns of the sets searched:
        the smallest set that concentrates the change).
    """
    cards = network.cardinalities
    tests: MechanismTests = mechanism_tests(cards, *samples, parents=graph, alpha=alpha, random_state=random_state,
                                            anytime=anytime, reject_early=reject_early)
    variables = network.variables
    order = tests.order()
    table = pd.DataFrame({
        "variable": [variables[tests.variables[k]] for k in order],
        "changed": [bool(tests.p_adjusted[k] <= alpha) for k in order],
        "p_value": tests.p_value[order], "p_adjusted": tests.p_adjusted[order],
        "best_set": [", ".join(variables[u] for u in tests.explained_by[k]) or "-" for k in order],
        "z": tests.z[order], "sets": tests.n_sets[order]}, columns=MECHANISM_COLUMNS)
    flagged = tests.flagged(alpha)
    tau = certify_level(alpha, len(tests.variables))
    table.attrs.update(searched=True, p_floor=1.0 / (tests.n_permutations + 1) + tau, certified=tau,
                       budget=tests.n_permutations, alpha=alpha, anytime=anytime, permutations=tests.permutations_drawn,
                       unoriented=[] if flagged else [[variables[v] for v in group] for group in tests.unoriented
                                                      if len(group) > 1])
    table.attrs["cell"] = None if tests.cell is None else _cell(network, tests.cell, names)
    return table


def _cell(network: BayesianNetwork, found: dict, sample_names: tuple) -> dict:
    """Return the search's changed cell (:attr:`MechanismTests.cell`, in codes) in the user's labels."""
    names, states = network.variables, network.states
    where = {names[u]: states[names[u]][k] for u, k in zip(found["given"], found["configuration"])}
    variable = names[found["child"]]
    label = states[variable][found["state"]]
    condition = " & ".join(f"{u} = {k}" for u, k in where.items())
    text = (f"{variable} = {label}" + (f" where {condition}" if condition else "")
            + f": {found['percent_X']:.1f}% of {sample_names[0]}'s rows against {found['percent_Y']:.1f}% of "
            f"{sample_names[1]}'s"
            + (" (of those rows)" if condition else ""))
    return {"variable": str(variable), "given": {str(u): str(k) for u, k in where.items()}, "state": str(label),
            "percent_X": found["percent_X"], "percent_Y": found["percent_Y"], "text": text}
