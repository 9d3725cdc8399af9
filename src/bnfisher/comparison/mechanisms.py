r"""Which mechanisms changed: a variable whose dependence on the sample label no set of its neighbours explains.

A family's test (:mod:`bnfisher.comparison.attribution`) asks whether ``P(child |
parents)`` differs between the samples *for the parents of one learned network*.
When that network's arcs point the wrong way (a Chow-Liu tree gives each variable
one parent and orients arcs arbitrarily) an unchanged variable downstream of a
changed one sees its learned conditional move, and is flagged.  The question a
user asks -- *which conditional distribution of the data-generating process
changed* -- has an answer that does not hang on one learned structure.

**The logic** (CD-NOD, Huang, Zhang et al. 2020).  Add the sample label ``C`` as a
variable.  If ``V``'s mechanism ``P(V | Pa(V))`` is the same in both samples then
``V`` is independent of ``C`` given ``Pa(V)``; if it changed, ``C`` is a parent of
``V`` and no set of variables makes them independent (faithfulness).  So ``V`` is
declared changed when *every* candidate conditioning set ``S`` rejects
``V independent of C given S``.

**Candidate sets.**  The subsets of at most ``max_size`` of ``V``'s neighbours in a
*neighbourhood graph* (parents and children; by default a hill-climbing DAG learned
by AIC on the two samples pooled, without the label), and ``V``'s parents in that graph
whatever their number; every set holds ``V``'s compelled parents and none of its compelled
children (:func:`compelled_parents`, :func:`compelled_children`: the arcs of a v-structure,
which point one way in every DAG of the graph's equivalence class).  Conditioning on a child
can explain a changed variable away: children of many states leave its change little to show.
The true parents of an unchanged variable are among the sets
when the graph holds its arcs (in either direction, but for a v-structure's) and it has at most
``max_size`` parents, or the graph found exactly its parents.  Later rounds
(:data:`GROWTH_ROUNDS`) grow the set that came closest to explaining a variable still
flagged by one of its neighbours' neighbours at a time, and try its neighbours' small
subsets without a compelled parent that is itself flagged (a wrong v-structure takes a
changed child for a parent, and conditioning on a child opens a path to the label), and its
neighbours' small subsets with a compelled child that is itself flagged (a changed parent taken
for a child); such a set counts only while that parent or child stays flagged.

**Tests and p-values.**  Each ``(V, S)`` is tested with the exact within-configuration
permutation test of :func:`bnfisher.comparison.attribution.conditional_tests`
(statistic ``D`` of that module with ``S`` as the parents), in stages
(:func:`~bnfisher.comparison.staged.staged_tests`): 99 permutations, then 999, then the budget, a variable's tests
stopping once one of its sets gives a p-value above :data:`SEARCH_STOP` after 99 permutations, or above
``alpha`` after more (Besag & Clifford's sequential p-values [4]_: exact at every stage).  The first stage of a round is
drawn for each variable's likeliest explanation alone (its set of smallest exact
standardised excess, below), and a variable whose p-value there exceeds the stop draws
nothing for its other sets; the marginal tests, run first, are the empty set's tests, so a
variable without a compelled parent whose marginal p-value exceeds the stop is settled
before the first round.  ``V``'s p-value is the
*largest* over its candidate sets: for an unchanged ``V`` whose true parents are a
candidate, ``P(max_S p_S <= a) <= P(p_Pa <= a) <= a`` for ``a <= alpha`` (an
intersection-union test; a variable stopped early is named at no such level; Holm's bound
below needs this only up to ``alpha``).  Holm's adjustment over the
variables then controls the family-wise error of naming an unchanged mechanism,
under that condition on the graph, with no assumption on how the tests depend.
The structure is learned without the label, so the permutation tests stay exact
given it.

**Tests that need no permutation.**  Each test's null mean and variance are exact in
closed form (:mod:`bnfisher.comparison.certificate`), so Cantelli's inequality bounds its
exact p-value by ``1 / (1 + z^2)``; for a large excess Chernoff's bound, from the exact
laws of its configurations' counts, is far smaller.  A set whose bound is at most ``tau = CERTIFY_SHARE *
alpha / V`` (:func:`certify_level`, a tenth of Holm's first level) takes the bound and
draws no permutation -- a clearly changed variable's sets, which would otherwise each run
the budget to pass Holm; every other set reports its Monte-Carlo p-value plus ``tau``, so
each p-value stays valid (``P(p <= t) <= P(p_exact <= min(t, tau)) + P(p_MC <= t - tau) <= t``).

**Settled variables.**  A further set can only raise a variable's p-value (the largest over
its sets), so Holm's adjusted p-values can only rise: a variable whose adjusted p-value after
the first round already exceeds ``alpha`` is not searched further (its reported p-value is
the largest over the sets it was given).  The family-wise error bound
holds: it needs valid p-values only of the unchanged variables that are flagged.

**What cannot be oriented.**  A variable dependent on the label that a set of
*unflagged* variables explains, each of which is itself explained by it (two
variables nearly functions of one another, or too few rows to separate them),
is reported as a group "one of these changed; the data cannot tell which".

**Ranking.**  Flagged variables come first by adjusted p-value, then by the weakest
standardised excess ``(D - E_0 D) / sd_0 D`` over their candidate sets (the
evidence that survives the best explanation).

References
----------
.. [1] Huang, Zhang, Zhang, Ramsey, Sanchez-Romero, Glymour & Schölkopf (2020).
   Causal discovery from heterogeneous/nonstationary data. JMLR 21(89), 1-53.
.. [2] Berger (1982). Multiparameter hypothesis testing and acceptance sampling.
   Technometrics 24, 295-300 (the intersection-union test).
.. [3] Holm (1979). A simple sequentially rejective multiple test procedure.
   Scandinavian Journal of Statistics 6, 65-70.
.. [4] Besag & Clifford (1991). Sequential Monte Carlo p-values. Biometrika 78(2), 301-304.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from bnfisher._utils.validation import check_random_state
from bnfisher.comparison.anytime import AnytimeTest
from bnfisher.comparison.attribution import default_permutations, holm
from bnfisher.comparison.cells import cell_search
from bnfisher.comparison.staged import CHECKPOINTS, staged_tests

__all__ = ["CERTIFY_SHARE", "CHECKPOINTS", "GROWTH_ROUNDS", "MAX_SET_SIZE", "SEARCH_PERMUTATIONS", "SEARCH_STOP",
           "MechanismTests", "candidate_sets", "certify_level", "compelled_parents", "mechanism_tests",
           "neighbourhoods", "staged_tests"]

#: Largest conditioning set drawn from a variable's neighbours (its graph parents are tried whatever their number).
MAX_SET_SIZE = 2


@dataclass
class MechanismTests:
    """Outcome of :func:`mechanism_tests`: one entry per variable with two states or more.

    Attributes
    ----------
    variables : list of int
        Column index of each variable tested.
    p_value : ndarray of shape (n_variables,)
        The largest p-value over the variable's candidate conditioning sets.
    p_adjusted : ndarray of shape (n_variables,)
        Holm's adjustment of ``p_value`` over the variables.
    explained_by : list of tuple of int
        The conditioning set that gave ``p_value`` (the best explanation of the variable's
        dependence on the label; ``()``: none needed).
    z : ndarray of shape (n_variables,)
        The standardised excess of the statistic for that set.
    marginal_p : ndarray of shape (n_variables,)
        Holm's adjustment of the p-values with no conditioning set (does the variable's
        distribution differ at all?); a test stops early once its p-value exceeds
        :data:`SEARCH_STOP` after 99 permutations or ``alpha`` after 999, so values above
        ``alpha`` are those of 99 or 999 permutations.
    clearest_by : list of tuple of int
        The conditioning set under which the variable's difference is clearest (largest
        standardised excess): where a changed mechanism's cell is looked for.
    n_permutations : int
        The budget of a set's test (a test stops earlier when its p-value is plainly above
        :data:`SEARCH_STOP`, or above ``alpha`` after 99 permutations:
        :func:`~bnfisher.comparison.staged.staged_tests`).
    searched : list of list of tuple of int
        Every conditioning set tried for each variable (:attr:`n_sets` counts them).
    unoriented : list of tuple of int
        Groups of unflagged variables dependent on the label that only explain one another.
    permutations_drawn : int
        Permutations drawn over every set's test, the marginal tests included (the search's cost;
        at most ``n_permutations`` times the number of sets).
    cell : dict or None
        For the clearest flagged variable (``child``): :func:`~bnfisher.comparison.cells.cell_search` over the
        columns of the sets tried for it; None when no variable is flagged.

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> net = bf.BayesianNetwork({"a": [], "b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                          {"a": ("0", "1"), "b": ("0", "1")})
    >>> moved = bf.BayesianNetwork(dict(net.parents), {"a": [0.8, 0.2], "b": net.cpts["b"]}, dict(net.states))
    >>> X = net.encode(net.sample(3000, random_state=0)).codes
    >>> Y = moved.encode(moved.sample(3000, random_state=1)).codes
    >>> tests = mechanism_tests([2, 2], (X, np.ones(3000)), (Y, np.ones(3000)), parents=[[], [0]],
    ...                         n_permutations=199, random_state=0)
    >>> [bool(p <= 0.05) for p in tests.p_adjusted], tests.explained_by[1]   # a changed; b is explained by a
    ([True, False], (0,))
    """

    variables: list
    p_value: np.ndarray
    p_adjusted: np.ndarray
    explained_by: list
    z: np.ndarray
    marginal_p: np.ndarray
    clearest_by: list
    n_permutations: int
    unoriented: list = field(default_factory=list)
    searched: list = field(default_factory=list)
    permutations_drawn: int = 0
    cell: dict | None = None

    @property
    def n_sets(self) -> np.ndarray:
        """Conditioning sets tried for each variable."""
        return np.asarray([len(sets) for sets in self.searched], dtype=np.int64)

    def flagged(self, alpha: float = 0.05) -> list:
        """Return the columns of the variables whose mechanism changed at level ``alpha``, clearest first.

        Parameters
        ----------
        alpha : float, default=0.05

        Returns
        -------
        list of int
        """
        order = self.order()
        return [self.variables[k] for k in order if self.p_adjusted[k] <= alpha]

    def order(self) -> np.ndarray:
        """Positions sorted by adjusted p-value, then by the weakest standardised excess (largest first).

        Returns
        -------
        ndarray of int
        """
        return np.lexsort((-self.z, self.p_adjusted))


def candidate_sets(variable: int, neighbours, parents, *, max_size: int = MAX_SET_SIZE, required=()) -> list:
    """Return the conditioning sets tried for ``variable``: small subsets of its neighbours, and its parents.

    Parameters
    ----------
    variable : int
    neighbours : sequence of int
        The variable's parents and children in the neighbourhood graph.
    parents : sequence of int
        Its parents in that graph.
    max_size : int, default=2
        The most neighbours added to ``required``.
    required : sequence of int, default=()
        Columns every set holds (the variable's compelled parents, :func:`compelled_parents`).

    Returns
    -------
    list of tuple of int
        Sorted, without repeats, the smallest set first.

    Examples
    --------
    >>> candidate_sets(0, [3, 1, 2], [1, 2, 3], max_size=1)
    [(), (1,), (2,), (3,), (1, 2, 3)]
    >>> candidate_sets(0, [3, 1, 2], [1, 2], max_size=1, required=[1, 2])
    [(1, 2), (1, 2, 3)]
    """
    fixed = set(int(u) for u in required)
    pool = sorted(set(int(u) for u in neighbours) - {variable} - fixed)
    sets = [tuple(sorted(fixed | set(s))) for size in range(min(max_size, len(pool)) + 1)
            for s in combinations(pool, size)]
    own = tuple(sorted(set(int(u) for u in parents) | fixed))
    return sets + ([own] if own not in sets else [])


def compelled_parents(parents) -> list:
    """Each variable's parents that are in a v-structure at it (two parents not adjacent to each other).

    Such arcs have one direction in every DAG of the graph's Markov equivalence class: if
    the graph is right, those parents are among the variable's true parents, and every
    candidate set holds them (the empty set, which a change in a rare parent configuration
    leaves almost unmoved, is then not tried).

    Parameters
    ----------
    parents : sequence of sequence of int

    Returns
    -------
    list of set of int

    Examples
    --------
    >>> compelled_parents([[], [], [0, 1], [2]])    # 0 -> 2 <- 1, 0 and 1 not adjacent
    [set(), set(), {0, 1}, set()]
    """
    adjacent = [set(int(u) for u in ps) for ps in parents]
    for child, ps in enumerate(parents):
        for u in ps:
            adjacent[int(u)].add(child)
    out = []
    for ps in parents:
        ps = [int(u) for u in ps]
        out.append({a for a in ps for b in ps if a != b and b not in adjacent[a]})
    return out


def compelled_children(compelled: list) -> list:
    """Each variable's compelled children: those at which it is in a v-structure (:func:`compelled_parents`).

    If the graph is right they are not among its true parents, and its sets leave them out
    until they are flagged (a changed parent taken for a child by a wrong v-structure).

    Examples
    --------
    >>> compelled_children([set(), set(), {0, 1}, set()])
    [{2}, {2}, set(), set()]
    """
    children: list = [set() for _ in compelled]
    for child, ps in enumerate(compelled):
        for u in ps:
            children[int(u)].add(child)
    return children


#: The certificate's level, as a share of Holm's first level ``alpha / V``: a set whose exact Cantelli bound is at
#: most ``CERTIFY_SHARE * alpha / V`` draws no permutation (:func:`~bnfisher.comparison.staged.staged_tests`).
CERTIFY_SHARE = 0.1


def certify_level(alpha: float, n_variables: int) -> float:
    """Return the certificate's level ``tau = CERTIFY_SHARE * alpha / V`` of a search over ``V`` variables.

    A set whose exact Cantelli bound is at most ``tau`` takes it as its p-value and draws no
    permutation; every other set's Monte-Carlo p-value is reported plus ``tau``
    (:mod:`bnfisher.comparison.certificate`).

    Parameters
    ----------
    alpha : float
    n_variables : int

    Returns
    -------
    float

    Examples
    --------
    >>> round(certify_level(0.05, 37), 8)
    0.00013514
    """
    return CERTIFY_SHARE * alpha / max(int(n_variables), 1)


#: Permutations per variable of a set's test by default: a changed variable's p-value is the largest over its sets,
#: so each must stay below Holm's first level with a few exceedances to spare (``V (1 + G) / (B + 1) <= alpha`` up to
#: ``G = 3`` at ``alpha = 0.05``); the clear sets draw none (the certificate).
SEARCH_PERMUTATIONS = 100

#: Rounds after the first that grow each unsettled variable's best set by one of its neighbours' neighbours (a set
#: with more configurations than the smaller sample has rows is not tried).  More rounds explain children with many
#: true parents, but a large set of many-state columns has little power and explains a changed variable away.
GROWTH_ROUNDS = 1

#: A variable whose largest p-value over its neighbours' sets exceeds this after 99 permutations (``alpha`` after
#: more) is not searched further (it is not flagged at any level up to ``alpha``); the others are tried with their
#: best set grown by a neighbour's neighbour.
SEARCH_STOP = 0.2


def neighbourhoods(parents) -> tuple:
    """Each variable's neighbours (parents and children) and neighbours' neighbours in a DAG.

    Parameters
    ----------
    parents : sequence of sequence of int

    Returns
    -------
    near, wide : list of set of int

    Examples
    --------
    >>> neighbourhoods([[], [0], [1]])
    ([{1}, {0, 2}, {1}], [{1, 2}, {0, 2}, {0, 1}])
    """
    near = [set(int(u) for u in ps) for ps in parents]
    for child, ps in enumerate(parents):
        for u in ps:
            near[int(u)].add(child)
    wide = [(set(adjacent) | {w for u in adjacent for w in near[u]}) - {v} for v, adjacent in enumerate(near)]
    return near, wide


def mechanism_tests(cardinalities, X, Y, *, parents, max_size: int = MAX_SET_SIZE, n_permutations: int | None = None,
                    alpha: float = 0.05, random_state=None, anytime: bool = False,
                    reject_early: bool = True) -> MechanismTests:
    """Test every variable for a changed mechanism: dependent on the sample label given each candidate set.

    See the module docstring for the search, the p-values and their guarantee.  The
    search runs in rounds: the subsets of each variable's neighbours (and its parents);
    then, :data:`GROWTH_ROUNDS` times, for the variables whose largest p-value is still at
    most :data:`SEARCH_STOP` and whose Holm-adjusted p-value is still at most ``alpha``, the
    set that came closest to explaining the variable grown by one of its neighbours'
    neighbours, each of those with the compelled parents alone, and the neighbours' small
    subsets without the compelled parents that are themselves flagged.  A variable settled
    after a round reports the largest p-value found (above ``SEARCH_STOP``, or adjusted
    above ``alpha``: it is not flagged).  Inner code: trusts encoded inputs.

    Parameters
    ----------
    cardinalities : sequence of int
    X, Y : tuple of (ndarray of int, ndarray)
        Codes (``-1`` missing) and copies of each sample's rows.
    parents : sequence of sequence of int
        Each variable's parents in the neighbourhood graph (a DAG learned without the label).
    max_size : int, default=2
    n_permutations : int, optional
        Default: :data:`SEARCH_PERMUTATIONS` per variable, at least 1,000
        (:func:`~bnfisher.comparison.attribution.default_permutations`).
    alpha : float, default=0.05
        The level at which variables count as flagged: a variable settled above it after the first
        round is not searched further, the certificate's level is :func:`certify_level` of it, and
        groups that cannot be oriented are formed at it.
    random_state : None, int or Generator
    anytime : bool, default=False
        Stop every test once its decision at ``alpha / V`` (Holm's first step over the ``V``
        variables) is settled, a variable's once one of its sets settles without rejecting
        (:class:`~bnfisher.comparison.AnytimeTest`; p-values anytime-valid, at most ten times
        ``n_permutations`` each), instead of the checkpoints 99 and 999 and the budget.
    reject_early : bool, default=True
        With ``anytime``: False stops a test only to accept (then at most ``n_permutations``, the
        fixed test's p-value where it runs them all).

    Returns
    -------
    MechanismTests

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> net = bf.BayesianNetwork({"a": [], "b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                          {"a": ("0", "1"), "b": ("0", "1")})
    >>> moved = bf.BayesianNetwork(dict(net.parents), {"a": net.cpts["a"], "b": [[0.9, 0.1], [0.5, 0.5]]},
    ...                            dict(net.states))
    >>> X = net.encode(net.sample(3000, random_state=0)).codes
    >>> Y = moved.encode(moved.sample(3000, random_state=1)).codes
    >>> tests = mechanism_tests([2, 2], (X, np.ones(3000)), (Y, np.ones(3000)), parents=[[], [0]],
    ...                         n_permutations=199, random_state=0)
    >>> tests.flagged()        # b's mechanism changed; a's did not
    [1]
    """
    rng = check_random_state(random_state)
    samples = [(np.asarray(codes), np.asarray(copies, dtype=np.float64)) for codes, copies in (X, Y)]
    variables = [v for v in range(len(cardinalities)) if int(cardinalities[v]) >= 2]
    rule, cap = _budget(len(variables), n_permutations, alpha=alpha, anytime=anytime, reject_early=reject_early)
    tau = certify_level(alpha, len(variables))
    # Does the variable differ at all?  Also the empty set's test of the search, where it is a candidate.
    marginal = staged_tests(cardinalities, [(v, ()) for v in variables], samples, n_permutations=cap,
                            stop=SEARCH_STOP, later_stop=min(alpha, SEARCH_STOP), random_state=rng, anytime=rule,
                            certify=tau)
    required = compelled_parents(parents)
    compelled = (required, compelled_children(required))  # each variable's compelled parents, and children
    found, used = _search(cardinalities, samples, variables, parents, compelled, max_size=max_size, n_permutations=cap,
                          rng=rng, anytime=rule, certify=tau, alpha=alpha, marginal=marginal)
    best = _best_sets(variables, found, compelled, alpha)
    explained_by = [t[0] for t in best]  # (set, p-value, z, ...) each
    p_value, z = (np.asarray([t[k] for t in best], dtype=float) for k in (1, 2))
    p_adjusted, marginal_p = holm(p_value), holm(marginal[0])
    return MechanismTests(
        variables=variables, p_value=p_value, p_adjusted=p_adjusted, explained_by=explained_by, z=z,
        marginal_p=marginal_p, clearest_by=[max(found[v], key=lambda t: t[2])[0] for v in variables],
        n_permutations=cap, unoriented=_unoriented(variables, marginal_p, p_adjusted, explained_by, found, alpha),
        searched=[[t[0] for t in found[v]] for v in variables], permutations_drawn=used,
        cell=_clearest_cell(cardinalities, samples, variables, p_adjusted, z, found, alpha,
                            near=neighbourhoods(parents)[0]))


def _budget(n_variables: int, n_permutations: int | None, *, alpha: float, anytime: bool,
            reject_early: bool) -> tuple:
    """Return the anytime rule (None: a fixed number) and the permutations each test may draw."""
    if n_permutations is None:
        n_permutations = default_permutations(n_variables, per_family=SEARCH_PERMUTATIONS)
    if not anytime:
        return None, int(n_permutations)
    rule = AnytimeTest(alpha / max(n_variables, 1), "mmd", reject_early=reject_early)
    return rule, int(n_permutations) * (10 if reject_early else 1)


def _best_sets(variables: list, found: dict, compelled: tuple, alpha: float) -> list:
    """Return each variable's explanation: the set with the largest p-value (then the weakest excess) it may use.

    A set without one of the variable's compelled parents, or with one of its compelled children, counts
    only once that parent or child is flagged (the set was tried because a wrong v-structure may take a
    changed child for a parent, or a changed parent for a child; if it is not flagged, the graph's
    v-structure stands).  The flagged set grows until it is stable; every variable keeps its first-round
    sets, which hold its compelled parents and none of its compelled children.
    """
    required, children = compelled
    flagged: set = set()
    while True:
        best = []
        for v in variables:
            usable = [t for t in found[v] if set(required[v]) - set(t[0]) <= flagged
                      and set(t[0]) & children[v] <= flagged] or found[v]
            best.append(max(usable, key=lambda t: (t[1], -t[2])))
        now = {v for v, p in zip(variables, holm([t[1] for t in best])) if p <= alpha}
        if now <= flagged:
            return best
        flagged |= now


def _search(cardinalities, samples: list, variables: list, parents, compelled: tuple, *, max_size: int,
            n_permutations: int, rng, anytime: AnytimeTest | None, certify: float, alpha: float,
            marginal: tuple) -> tuple:
    """Run the rounds of staged tests; return every set tried, by variable, and the permutations drawn.

    ``found[v]`` lists ``(set, p, z, permutations)`` of every set tried for ``v`` (a certified
    set drew none; a set left untried, its variable explained by another, drew none and has p = 1).
    ``compelled``: each variable's compelled parents and compelled children.
    ``marginal`` (:func:`staged_tests` of each variable with the empty set) is the empty set's test
    of the variables without a compelled parent: one whose marginal p-value exceeds
    :data:`SEARCH_STOP` is settled before the first round.
    """
    near, wide = neighbourhoods(parents)
    graph = (near, parents, compelled[0], max_size, compelled[1])
    found = _marginal_found(variables, marginal, graph[2])
    used = int(marginal[2].sum())
    rows = min(float(np.sum(copies)) for _, copies in samples)
    for first, pool in enumerate((near,) + (wide,) * GROWTH_ROUNDS):
        first = first == 0
        pairs = [(v, s) for v, s in _round_pairs(variables, pool, found, graph, alpha, first=first)
                 if first or np.prod([float(cardinalities[u]) for u in s]) <= rows]
        if not pairs:
            continue
        p_values, z, drawn = staged_tests(cardinalities, pairs, samples, n_permutations=n_permutations,
                                          stop=SEARCH_STOP, later_stop=min(alpha, SEARCH_STOP), random_state=rng,
                                          anytime=anytime, certify=certify)
        used += int(drawn.sum())
        for (v, s), p, excess, b in zip(pairs, p_values, z, drawn):
            if b or p < 1.0:  # a set left untried (its variable was explained by another) is not reported as searched
                found[v].append((s, float(p), float(excess), int(b)))
    return found, used


def _marginal_found(variables: list, marginal: tuple, required: list) -> dict:
    """Return ``found`` holding the marginal test as the empty set's, for the variables without a compelled parent."""
    found: dict = {v: [] for v in variables}
    for v, p, excess, b in zip(variables, *marginal):
        if not required[v]:  # the empty set is one of its candidates
            found[v].append(((), float(p), float(excess), int(b)))
    return found


def _round_pairs(variables: list, pool, found: dict, graph: tuple, alpha: float, *, first: bool) -> list:
    """Return the ``(variable, set)`` pairs of one round: new sets of the variables not yet settled.

    A further set can only raise a variable's p-value, so one whose Holm-adjusted p-value already
    exceeds ``alpha`` (or whose p-value exceeds :data:`SEARCH_STOP`) is settled: it will not be flagged.
    """
    near, parents, required, max_size, children = graph
    chosen, flagged = _unsettled(variables, found, alpha)
    return [(v, s) for v in chosen
            for s in _round_sets(v, near, pool, found, parents, max_size, (required, children), flagged, first=first)
            if s not in {t[0] for t in found[v]}]


def _unsettled(variables: list, found: dict, alpha: float) -> tuple:
    """Return the variables not yet settled (untested, or still possibly flagged), and those flagged so far."""
    largest = {v: max((t[1] for t in found[v]), default=0.0) for v in variables}
    adjusted = dict(zip(variables, holm([largest[v] for v in variables])))
    flagged = {v for v in variables if found[v] and adjusted[v] <= alpha}
    return [v for v in variables if not found[v] or (largest[v] <= SEARCH_STOP and adjusted[v] <= alpha)], flagged


def _clearest_cell(cardinalities, samples: list, variables: list, p_adjusted, z, found: dict, alpha: float, *,
                   near: list):
    """Return the cell of the clearest flagged variable (smallest adjusted p-value, then largest z), or None."""
    flagged = [variables[k] for k in np.lexsort((-z, p_adjusted)) if p_adjusted[k] <= alpha]
    return _cell(cardinalities, samples, flagged[0], found[flagged[0]], near[flagged[0]]) if flagged else None


def _cell(cardinalities, samples: list, child: int, tried: list, near: set) -> dict:
    """Return :func:`cell_search` over the columns of the sets tried for ``child`` and its neighbours, these first.

    The neighbours include its compelled children, which its sets leave out: the cell describes, it tests nothing.
    """
    return dict(cell_search(cardinalities, samples[0], samples[1], child, set(near),
                            wider={u for t in tried for u in t[0]} - set(near)), child=child)


def _round_sets(v: int, near, pool, found: dict, parents, max_size: int, compelled: tuple, flagged: set, *,
                first: bool) -> list:
    """Return the sets of one round for ``v``: small subsets of its neighbours; then its best set grown by one.

    No set holds a compelled child (:func:`compelled_children`) that is not flagged.  From the second round on,
    a variable with a compelled parent or child that is itself flagged also gets its neighbours' small subsets
    without that parent, or with that child (the learned v-structure may be wrong: a changed child taken for a
    parent, or a changed parent for a child).
    """
    required, kids = compelled[0], compelled[1][v]  # the compelled parents, and v's compelled children
    if first:
        return candidate_sets(v, pool[v] - kids, parents[v], max_size=max_size, required=required[v])
    best = max(found[v], key=lambda t: (t[1], -t[2]))[0]  # the set that came closest to explaining v
    kept = set(required[v]) - flagged
    free = (set(candidate_sets(v, near[v] - (set(required[v]) - kept), parents[v], max_size=max_size, required=kept))
            if kept != set(required[v]) or kids & flagged else set())
    return sorted(s for s in {tuple(sorted(set(best) | {w})) for w in pool[v] - set(best)}
                  | {tuple(sorted(set(required[v]) | {w})) for w in pool[v]} | free if not set(s) & (kids - flagged))


def _unoriented(variables: list, marginal_p, p_adjusted, explained_by: list, found: dict, alpha: float) -> list:
    """Return the groups of label-dependent, unflagged variables that no set holding a flagged variable explains."""
    position = {v: k for k, v in enumerate(variables)}
    dependent = {v for v, p in zip(variables, marginal_p) if p <= alpha}
    explained = {v for v, p in zip(variables, p_adjusted) if p <= alpha}
    left = dependent - _explained(dependent, explained, found, alpha)
    # Connected through "explained by", within the unexplained variables.
    links = {u: (set(explained_by[position[u]]) & left) | {w for w in left if u in explained_by[position[w]]}
             for u in left}
    groups, seen = [], set()
    for v in sorted(left):
        if v not in seen:
            group = _component(v, links)
            seen |= group
            groups.append(tuple(sorted(group)))
    return groups


def _explained(dependent: set, explained: set, found: dict, alpha: float) -> set:
    """Return ``explained`` grown to a fixed point: a dependent variable explained by an explained one is."""
    explained = set(explained)
    grown = True
    while grown:
        grown = False
        for v in sorted(dependent - explained):
            if any(t[1] > alpha and set(t[0]) & explained for t in found[v]):
                explained.add(v)
                grown = True
    return explained


def _component(start, links: dict) -> set:
    """Return the nodes reached from ``start`` through ``links`` (node -> linked nodes)."""
    group, frontier = {start}, [start]
    while frontier:
        for w in links[frontier.pop()] - group:
            group.add(w)
            frontier.append(w)
    return group
