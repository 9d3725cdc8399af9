r"""Which conditional distributions changed: one exact test per family, its null "P(child | parents) is equal".

The family blocks of the MMD² (:func:`bnfisher.comparison.explain.mmd_by_family`'s
``mmd2`` column) say *where the distance lies*, but not *what changed*: when a
family's parents shift, its block keeps a term ``(f_X,j - f_Y,j)(theta_hat - theta_j)``
(parent-configuration frequencies times the gap between the data's and the
network's conditional) although the family's conditional did not move.  The test
here removes that term and calibrates what is left under the family's own null.

**Statistic.**  For family ``i`` (a child and its parents), with ``N^X_ja`` and
``N^Y_ja`` the rows of each sample with parent configuration ``j`` and child
state ``a`` (rows observed on the whole family), ``n`` and ``m`` their totals,
``theta_ja = (N^X_ja + N^Y_ja) / (N^X_j + N^Y_j)`` the pooled maximum-likelihood
conditional and ``P_j = (N^X_j + N^Y_j) / (n + m)`` the pooled frequency of the
configuration,

.. math::

    D_i = \sum_j \frac{1}{P_j}\Big[\sum_a \frac{\Delta_{ja}^2}{\theta_{ja}} - \Big(\sum_a \Delta_{ja}\Big)^2\Big],
    \qquad \Delta_{ja} = \frac{N^X_{ja}}{n} - \frac{N^Y_{ja}}{m}:

the family's block of the Fisher-kernel MMD² (eq. 10 with Theorem 1's kernel)
when its CPT and parent probabilities sit at their pooled maximum-likelihood
values.  Writing ``Delta_ja = (f^X_j - f^Y_j) theta_ja + e_ja``, the bracket is
``sum_a e_ja^2 / theta_ja``: a shift of the parents alone (``e = 0``) adds
nothing, and ``e_ja`` is proportional to the difference of the two conditionals.

**Null and p-value.**  ``H0_i``: the conditional distribution of the child given
its parents is the same in both samples (whatever the parents' distributions and
the other families do).  Given the rows' parent configurations and sample labels,
the child values within a configuration are then exchangeable between the
samples; the p-value permutes them within each configuration (a multivariate
hypergeometric draw per configuration) and counts the observed split as one of
the permutations, so ``P(p <= alpha) <= alpha`` under ``H0_i`` exactly, for a
network structure that does not depend on which sample a row came from (a given
structure, or one learned on the pooled rows: the pool is the same under every
permutation).  Rows missing a value of the family are left out of its test,
which keeps it exact when whether a family is observed does not depend on the
child's value.

**Ranking.**  Under ``H0_i`` the statistic's mean grows with the family's number
of free parameters (about ``(1/n + 1/m)`` each), so raw statistics rank big
families first by size alone.  ``excess = D_i - E_0[D_i]`` (the permutation
mean) is centred at zero under the null, and families are ranked by p-value,
then by the standardised excess ``(D_i - E_0 D_i) / sd_0 D_i``.

**Several families.**  Holm's step-down adjustment of the per-family p-values
controls the family-wise error rate in the strong sense: whatever set of
families changed, the probability that any family whose conditional did *not*
change gets an adjusted p-value ``<= alpha`` is at most ``alpha``, with no
assumption on the dependence between the families' tests.

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103 (Theorem 1, eq. 10).
.. [2] Holm (1979). A simple sequentially rejective multiple test procedure.
   Scandinavian Journal of Statistics 6, 65-70.
.. [3] Phipson & Smyth (2010). Permutation p-values should never be zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher._utils.parallel import map_threads, threads_for
from bnfisher._utils.validation import check_positive_int, check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.comparison.certificate import certified_bounds, excesses
from bnfisher.comparison.permutation import permutation_pvalue
from bnfisher.data.counts import count_block, count_family

__all__ = ["RESOLVED_P", "FamilyTests", "conditional_family_tests", "default_permutations", "family_tables", "holm",
           "resolve_floor"]


@dataclass
class FamilyTests:
    """Outcome of :func:`conditional_family_tests`, one entry per family with a free parameter.

    Attributes
    ----------
    families : list of int
        Index of each family's child in ``network.variables``.
    statistic : ndarray of shape (n_families,)
        ``D_i`` of the module docstring.
    null_mean, null_sd : ndarray of shape (n_families,)
        Mean and standard deviation of ``D_i`` over the within-configuration permutations.
    p_value : ndarray of shape (n_families,)
        Exact permutation p-value of ``H0_i``.
    n_permutations : int
        Within-configuration permutations drawn.
    rows : ndarray of int, shape (n_families, 2)
        Rows of each sample observed on the whole family (those the test uses).

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> import numpy as np
    >>> from bnfisher.comparison import conditional_family_tests
    >>> X = (network.encode(A).codes, np.ones(len(A)))
    >>> Y = (network.encode(B).codes, np.ones(len(B)))
    >>> tests = conditional_family_tests(network, X, Y, n_permutations=99, random_state=0)
    >>> tests.n_permutations, len(tests.p_value) == len(tests.families)
    (99, True)
    """

    families: list
    statistic: np.ndarray
    null_mean: np.ndarray
    null_sd: np.ndarray
    p_value: np.ndarray
    rows: np.ndarray
    n_permutations: int = 0

    @property
    def excess(self) -> np.ndarray:
        """``D_i - E_0[D_i]``: the statistic above what chance gives a family of that size."""
        return self.statistic - self.null_mean

    @property
    def z(self) -> np.ndarray:
        """The excess in null standard deviations (0 where the null has no spread)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.null_sd > 0, self.excess / self.null_sd, 0.0)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (strong family-wise error control, any dependence).

    Parameters
    ----------
    p_values : array-like of shape (m,)

    Returns
    -------
    ndarray of shape (m,)
        ``max_{k <= rank} min(1, (m - k + 1) p_(k))`` in the original order.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (p.size - np.arange(p.size)) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def family_tables(cardinalities, families: list, samples) -> list:
    """Return each ``(child, conditioning set)``'s two count tables ``(configurations, child states)``, complete rows.

    Families whose child has one state are skipped (None).  Inner code: trusts encoded inputs.

    Parameters
    ----------
    cardinalities : sequence of int
    families : list of (int, tuple of int)
    samples : list of two (ndarray of int, ndarray)
        Codes (``-1`` missing) and copies of each sample's rows.

    Returns
    -------
    list of (ndarray, ndarray) or None
    """
    cards = np.asarray(cardinalities)
    tested = [(i, (*parents, i)) for i, parents in families if int(cards[i]) >= 2]
    counted = []
    for codes, copies in samples:  # the package's counting kernel, on every core
        weights = np.asarray(copies, dtype=np.float64)
        if codes.size == 0 or codes.min() >= 0:
            counted.append(count_block(codes, [columns for _, columns in tested], cards, weights, n_jobs=-1))
        else:  # each family over the rows observed on it
            counted.append([count_family(codes, columns, cards, weights, rows=(codes[:, list(columns)] >= 0).all(
                axis=1)) for _, columns in tested])
    tables = iter(zip(*counted))
    return [None if int(cards[i]) < 2 else tuple(np.asarray(table, dtype=np.float64).reshape(-1, int(cards[i]))
                                                 for table in next(tables)) for i, _ in families]


def _family_units(tables: list) -> tuple:
    """Count tables of the informative configurations of every ``(child, conditioning set)``, stacked as "units".

    A configuration is informative when both samples have rows in it and its rows
    hold two child states or more; any other configuration adds exactly 0 to
    ``D_i`` under every permutation (see the module docstring), so it is dropped.
    Families whose child has one state (None) are skipped (returned indices: the tested ones).
    """
    tested, units, rows = [], [], []
    for i, pair in enumerate(tables):
        if pair is None:
            continue
        count_x, count_y = (np.asarray(table, dtype=np.float64) for table in pair)
        totals = [float(count_x.sum()), float(count_y.sum())]
        tested.append(i)
        rows.append(totals)
        pooled = count_x + count_y
        keep = (count_x.sum(axis=1) > 0) & (count_y.sum(axis=1) > 0) & ((pooled > 0).sum(axis=1) >= 2)
        if totals[0] > 0 and totals[1] > 0:
            units.append((len(tested) - 1, count_x[keep], pooled[keep]))
    return tested, units, np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def default_permutations(n_families: int, *, minimum: int = 1000, per_family: int = 40) -> int:
    """Within-configuration permutations by default: at least ``minimum``, and ``per_family`` per family.

    A permutation p-value is at least ``1 / (B + 1)``, so Holm's adjustment over ``F``
    families cannot go below ``F / (B + 1)``; with ``B >= 40 F`` a family can be
    called changed at the 5% level (adjusted p down to about 0.025).

    Parameters
    ----------
    n_families : int
    minimum : int, default=1000
    per_family : int, default=40

    Returns
    -------
    int

    Examples
    --------
    >>> default_permutations(8), default_permutations(56)
    (1000, 2240)
    """
    return int(max(minimum, per_family * n_families))


def conditional_family_tests(network: BayesianNetwork, X, Y, *, n_permutations: int | None = None,
                             random_state=None, tables: list | None = None) -> FamilyTests:
    """Test every family's conditional distribution for a change between two samples (exact, per family).

    See the module docstring for the statistic, its null and its guarantees.

    Parameters
    ----------
    network : BayesianNetwork
        Gives the families (its structure); its CPTs are not used.
    X, Y : tuple of (ndarray of int, ndarray), or None
        Each sample as encoded codes (rows x variables in ``network.variables``
        order, ``-1`` where missing) and the number of copies of each row.
    n_permutations : int, optional
        Within-configuration permutations (all families share each draw).  Default:
        :func:`default_permutations` of the number of families.
    random_state : None, int or Generator
    tables : list, optional
        Instead of ``X`` and ``Y`` (then None): every family's two count tables,
        ``(parent configurations, child states)`` over the rows observed on the family, in
        ``network.variables`` order (data beyond memory: counted where the rows lie).

    Returns
    -------
    FamilyTests

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> net = bf.BayesianNetwork({"a": [], "b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                          {"a": ("0", "1"), "b": ("0", "1")})
    >>> shifted = bf.BayesianNetwork(dict(net.parents), {"a": [0.9, 0.1], "b": net.cpts["b"]}, dict(net.states))
    >>> X = net.encode(net.sample(2000, random_state=0)).codes
    >>> Y = shifted.encode(shifted.sample(2000, random_state=1)).codes
    >>> tests = conditional_family_tests(net, (X, np.ones(2000)), (Y, np.ones(2000)), random_state=0)
    >>> [bool(p <= 0.05) for p in tests.p_value]     # a changed, b | a did not
    [True, False]
    """
    rng = check_random_state(random_state)
    samples = None if tables is not None else [(np.asarray(codes), np.asarray(copies, dtype=np.float64))
                                               for codes, copies in (X, Y)]
    pairs = list(enumerate(network.parent_indices()))
    n_families = sum(int(network.cardinalities[i]) >= 2 for i, _ in pairs)
    n_permutations = default_permutations(n_families) if n_permutations is None else \
        check_positive_int(n_permutations, "n_permutations")
    return conditional_tests(network.cardinalities, pairs, samples, n_permutations=n_permutations, random_state=rng,
                             tables=tables)


#: The Holm-adjusted p-value a family's test resolves to when its first permutations leave it at their floor.
RESOLVED_P = 0.001


def resolve_floor(network: BayesianNetwork, tests: FamilyTests, X, Y, *, random_state, tables: list | None = None,
                  most: int = 100_000) -> tuple:
    """Run the clearest family again when its p-value sits at the floor, with enough permutations to resolve Holm's.

    With ``F`` families and ``B`` permutations, Holm's adjusted p-value cannot go below
    ``F / (B + 1)``.  Of the families with no permutation as extreme as the data, the one
    with the largest standardised excess (the one a family table shows first) is tested
    again on ``B' = max(10 B, F / RESOLVED_P)`` new permutations (at most ``most``), so its
    adjusted p-value can reach :data:`RESOLVED_P`; the others keep their p-values (one
    family suffices to say how clear the clearest change is, at a fraction of the cost).
    Valid: a family's reported p-value is its second test's only when the first sat at its
    floor ``f``, so for ``t >= f`` ``{p <= t}`` lies within ``{p_1 <= t}``, and for ``t < f``
    within ``{p_2 <= t}``; each run is exact, whichever family is chosen.  When the family's
    exact bound (:func:`~bnfisher.comparison.certificate.certified_bounds`: Cantelli's or
    Chernoff's, from the exact law of its counts) is already at most ``1 / (B' + 1)``, that
    value is reported and no permutation is drawn (a p-value at least an exact bound is valid).

    Parameters
    ----------
    network : BayesianNetwork
    tests : FamilyTests
        The first run (:func:`conditional_family_tests`).
    X, Y : tuple of (ndarray of int, ndarray), or None
        As for :func:`conditional_family_tests`.
    random_state : Generator
    tables : list, optional
        As for :func:`conditional_family_tests`.
    most : int, default=100_000
        The largest second budget.

    Returns
    -------
    tests : FamilyTests
        ``n_permutations`` stays the first budget: a p-value at or below its floor
        ``1 / (n_permutations + 1)`` is at most what it says.
    budget : int
        The permutations of the second run (0 when no family was run again, or its bound sufficed).

    Examples
    --------
    >>> import numpy as np, bnfisher as bf
    >>> net = bf.BayesianNetwork({"a": [], "b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                          {"a": ("0", "1"), "b": ("0", "1")})
    >>> moved = bf.BayesianNetwork(dict(net.parents), {"a": [0.9, 0.1], "b": net.cpts["b"]}, dict(net.states))
    >>> X = (net.encode(net.sample(2000, random_state=0)).codes, np.ones(2000))
    >>> Y = (net.encode(moved.sample(2000, random_state=1)).codes, np.ones(2000))
    >>> first = conditional_family_tests(net, X, Y, n_permutations=99, random_state=0)
    >>> again, budget = resolve_floor(net, first, X, Y, random_state=np.random.default_rng(0))
    >>> float(first.p_value[0]), budget, float(again.p_value[0])   # bounded exactly: no second run
    (0.01, 0, 0.0004997501249375312)
    """
    floor = 1.0 / (tests.n_permutations + 1) * (1 + 1e-9)
    at_floor = np.flatnonzero(tests.p_value <= floor)
    again = at_floor[np.argmax(tests.z[at_floor])][None] if at_floor.size else at_floor
    budget = int(min(most, max(10 * tests.n_permutations, np.ceil(len(tests.families) / RESOLVED_P))))
    if not again.size or budget <= tests.n_permutations:
        return tests, 0
    parents = network.parent_indices()
    pairs = [(tests.families[k], tuple(parents[tests.families[k]])) for k in again]
    if tables is None:
        tables = family_tables(network.cardinalities, list(enumerate(parents)), [X, Y])
    chosen = [tables[i] for i, _ in pairs]
    fields = {name: getattr(tests, name).copy() for name in ("null_mean", "null_sd", "p_value")}
    if certified_bounds(chosen, excesses(chosen), 1.0 / (budget + 1))[0] <= 1.0 / (budget + 1):
        fields["p_value"][again] = 1.0 / (budget + 1)  # what the second run could show at best, bounded exactly
        budget = 0
    else:
        rerun = conditional_tests(network.cardinalities, pairs, None, n_permutations=budget,
                                  random_state=random_state, tables=chosen)
        for name in fields:
            fields[name][again] = getattr(rerun, name)
    return FamilyTests(tests.families, tests.statistic, fields["null_mean"], fields["null_sd"], fields["p_value"],
                       tests.rows, tests.n_permutations), budget


def conditional_tests(cardinalities, pairs: list, samples: list | None, *, n_permutations: int,
                      random_state, tables: list | None = None) -> FamilyTests:
    """Test, for each ``(child, conditioning set)``, that the child's distribution given the set is equal in both.

    The engine of :func:`conditional_family_tests` (the sets are the network's parents)
    and of :func:`bnfisher.comparison.mechanisms.mechanism_tests` (the sets are searched):
    every pair is tested on the same within-configuration permutations.  Inner code:
    trusts its inputs.

    Parameters
    ----------
    cardinalities : sequence of int
        States of each column of the codes.
    pairs : list of (int, sequence of int)
        Each test's child column and conditioning columns.
    samples : list of two (ndarray of int, ndarray of float), or None
        Codes (``-1`` missing) and copies of each sample's rows.
    n_permutations : int
    random_state : Generator
    tables : list, optional
        Instead of ``samples``: each pair's two count tables ``(configurations, child states)``
        over the rows observed on the pair (None for a child of one state), e.g. counted where
        the rows lie.  The tests need nothing else of the rows.

    Returns
    -------
    FamilyTests
        ``families`` holds the position in ``pairs`` of each test run (children of one state are skipped).
    """
    rng = random_state
    tables = family_tables(cardinalities, [(i, tuple(s)) for i, s in pairs], samples) if tables is None else tables
    tested, units, rows = _family_units(tables)
    n_families = len(tested)
    families = [k for k, (i, _) in enumerate(pairs) if int(cardinalities[i]) >= 2]
    statistic = np.zeros(n_families)
    null = np.zeros((n_permutations, n_families))
    if units:
        null, statistic = _within_configurations(units, rows, n_families, n_permutations, rng)
    p_value = permutation_pvalue(statistic, null) if n_families else np.ones(0)
    return FamilyTests(families, statistic, null.mean(axis=0), null.std(axis=0), np.asarray(p_value), rows,
                       int(null.shape[0]))


def _within_configurations(units: list, rows: np.ndarray, n_families: int, n_permutations: int,
                           rng: np.random.Generator) -> tuple:
    """Return the observed statistics and ``n_permutations`` rows of their null (:func:`conditional_tests`' engine).

    The informative configurations' observed child states are stacked as one flat array of cells, a
    configuration's cells contiguous: the permutations draw and sum over the cells that hold rows only (a
    table of many sparse configurations, as a large conditioning set gives, has few of its ``states``
    columns in each).
    """
    owner = np.concatenate([np.full(len(table), k) for k, _, table in units]).astype(np.intp)
    if not owner.size:  # no informative configuration: every statistic is 0 under every permutation
        return np.zeros((n_permutations, n_families)), np.zeros(n_families)
    masks = [table > 0 for _, _, table in units]
    # Row-major: each configuration's present states, in order, its cells contiguous.
    pooled = np.concatenate([table[mask] for (_, _, table), mask in zip(units, masks)])
    first = np.concatenate([count_x[mask] for (_, count_x, _), mask in zip(units, masks)])
    present = np.concatenate([mask.sum(axis=1) for mask in masks])
    start = np.cumsum(present) - present
    cell_owner = np.repeat(np.arange(owner.size), present)
    n_x, n_y = rows[owner, 0].astype(np.float64), rows[owner, 1].astype(np.float64)
    indicator = np.zeros((owner.size, n_families))  # configuration -> family
    indicator[np.arange(owner.size), owner] = 1.0
    size = np.add.reduceat(pooled, start)
    weight = (n_x + n_y) / size  # 1 / P_j
    inverse_theta = size[cell_owner] / pooled
    # sum_a Delta is the same under every permutation (each configuration keeps its rows per sample).
    taken = np.add.reduceat(first, start)
    margin = taken / n_x - (size - taken) / n_y
    scale = (1.0 / n_x + 1.0 / n_y)[cell_owner]  # Delta = count_x (1/n_x + 1/n_y) - pooled / n_y
    shift = pooled / n_y[cell_owner]

    def family_statistics(counts: np.ndarray) -> np.ndarray:
        """Return every family's statistic for the cell counts ``counts`` (overwritten: no temporaries)."""
        counts *= scale
        counts -= shift
        np.square(counts, out=counts)
        counts *= inverse_theta
        return (weight * (np.add.reduceat(counts, start, axis=-1) - margin**2)) @ indicator

    statistic = family_statistics(first.copy())
    check_allocation(8.0 * 3 * min(n_permutations, 256) * pooled.size,
                     f"{n_permutations} within-configuration permutations", "use fewer `n_permutations`.")
    need_total = taken.astype(np.int64)
    last = start + present - 1  # a configuration's last present state takes what the others left: no draw
    counts = pooled.astype(np.int64)
    totals = size.astype(np.int64)
    width = int(present.max())
    # Batches of permutations (at most 2**23 cells, and 16 batches or more), each from its own stream spawned
    # from the seed and drawn on any thread: the batches depend on the data alone, so the p-values do not
    # depend on the number of cores.
    batch = int(max(1, min(n_permutations, (1 << 23) // max(pooled.size, 1), -(-n_permutations // 16))))
    entropy = int(rng.integers(2**63))

    def run(begin: int) -> np.ndarray:
        b = min(batch, n_permutations - begin)
        stream = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(begin,))))
        drawn = np.empty((b, pooled.size))
        need = np.broadcast_to(need_total, (b, owner.size)).copy()
        rest = np.broadcast_to(totals, (b, owner.size)).copy()
        for a in range(width - 1):  # sequential hypergeometric draws: one multivariate draw per configuration
            active = np.flatnonzero(present > a + 1)
            cells = start[active] + a
            good = np.broadcast_to(counts[cells], (b, active.size))
            take = stream.hypergeometric(good, rest[:, active] - good, need[:, active])
            drawn[:, cells] = take
            need[:, active] -= take
            rest[:, active] -= good
        drawn[:, last] = need
        return family_statistics(drawn)

    null = np.zeros((n_permutations, n_families))
    starts = range(0, n_permutations, batch)
    threads = threads_for(n_permutations * pooled.size)
    for begin, values in zip(starts, map_threads(run, starts, n_jobs=threads, lookahead=2)):
        null[begin: begin + values.shape[0]] = values
    return null, statistic
