"""Posteriors given rows with missing cells: batched junction-tree calibration, queries, expected counts."""

from __future__ import annotations

import math

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher.bn.inference.components import missing_components, plan_components
from bnfisher.bn.inference.exact import _einsum, _elimination_tree, _junction_tree_plan
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.counts import configuration_index, count_block
from bnfisher.exceptions import DataError, OptionError, SchemaError

__all__ = ['query', 'posteriors_given_rows', 'posterior_modes', 'family_cell_weights', 'expected_counts']


# ------------------------------------------------------------- evidence, batched
_BATCH = "batch"  # the einsum label of the row axis


def _evidence_blocks(network: BayesianNetwork, n_rows: int, plan) -> int:
    """Rows per block: keep the batched clique tables (partial, belief, up) near 256 MiB."""
    cells = sum(plan[2]) + 1
    return int(max(1, min(n_rows, (256 << 20) // (8 * 3 * cells))))


def _batched_junction_tree(network: BayesianNetwork, plan, codes: np.ndarray, queries: list):
    """Posteriors of ``queries`` given each row's observed values, and each row's log P(observed).

    ``codes`` (rows x variables, ``network.variables`` order) holds -1 where a value is
    missing.  One Hugin calibration runs for the whole block: every clique table carries a
    leading row axis, an observed value enters as an indicator factor on its variable, and
    every table of the upward pass is rescaled per row (its log scale carried upwards), so
    long rows do not underflow.

    Returns
    -------
    posteriors : list of ndarray
        ``(rows, *query cardinalities)``, each row summing to 1 (NaN where the evidence is impossible).
    log_likelihood : ndarray of shape (rows,)
        ``log P(x_obs)``; ``-inf`` for impossible evidence.
    """
    cards = network.cardinalities
    order = plan[0]
    n_rows = codes.shape[0]
    position, clique_vars, parent, children, assigned = _elimination_tree(network, plan)
    for v in range(codes.shape[1]):
        column = codes[:, v]
        observed = column >= 0
        if observed.any():
            indicator = np.ones((n_rows, int(cards[v])))
            indicator[observed] = 0.0
            indicator[np.flatnonzero(observed), column[observed]] = 1.0
            assigned[position[v]].append(((_BATCH, v), indicator))
    partial: list = [None] * len(order)
    up: list = [None] * len(order)
    log_scale: list = [None] * len(order)
    for k, members in enumerate(clique_vars):
        scope = (_BATCH,) + members
        factors = assigned[k] + [((_BATCH,) + clique_vars[c][1:], up[c]) for c in children[k]]
        covered = {v for f in factors for v in f[0]}
        factors += [((v,), np.ones(int(cards[v]))) for v in members if v not in covered]
        if _BATCH not in covered:
            factors.append(((_BATCH,), np.ones(n_rows)))
        table = _einsum(factors, scope)
        # Rescale per row; the scale travels up with the message.
        peak = table.reshape(n_rows, -1).max(axis=1)
        peak = np.where(peak > 0, peak, 1.0)
        table = table / peak.reshape((-1,) + (1,) * len(members))
        log_scale[k] = np.log(peak) + sum((log_scale[c] for c in children[k]), np.zeros(n_rows))
        partial[k] = table
        up[k] = table.sum(axis=1)
    belief: list = [None] * len(order)
    log_likelihood = np.zeros(n_rows)
    for k in reversed(range(len(order))):
        if parent[k] < 0:
            belief[k] = partial[k]
            with np.errstate(divide="ignore"):  # impossible evidence: log 0 = -inf
                log_likelihood += np.log(partial[k].reshape(n_rows, -1).sum(axis=1)) + log_scale[k]
            continue
        p = parent[k]
        separator = (_BATCH,) + clique_vars[k][1:]
        projected = _einsum([((_BATCH,) + clique_vars[p], belief[p])], separator)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0/0: both are zero there, the ratio is 0
            ratio = np.where(up[k] > 0, projected / up[k], 0.0)
        belief[k] = partial[k] * ratio[:, None, ...]
    posteriors = []
    for query in queries:
        host = min(position[v] for v in query)
        table = _einsum([((_BATCH,) + clique_vars[host], belief[host])], (_BATCH,) + tuple(query))
        total = table.reshape(n_rows, -1).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):  # impossible evidence gives NaN rows
            posteriors.append(table / total.reshape((-1,) + (1,) * len(query)))
    return posteriors, log_likelihood


def posteriors_given_rows(network: BayesianNetwork, codes: np.ndarray, queries: list):
    """Exact posteriors of variable sets given each row's observed values, batched and deduplicated.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        In ``network.variables`` order; -1 marks a missing value.
    queries : list of tuple of int
        Variable sets (column indices); each must lie in one junction-tree clique
        (a single variable, or a family, always does).

    Returns
    -------
    posteriors : list of ndarray
        ``posteriors[q][row]`` is ``P(query q | row's observed values)``, shaped by the
        query's cardinalities.
    log_likelihood : ndarray of shape (n_rows,)
        ``log P(observed values)`` of each row (``-inf`` when impossible).

    Raises
    ------
    ResourceError
        When a clique of the junction tree is too large for memory.

    Notes
    -----
    Distinct rows are computed once; blocks of rows share one calibration, so the cost
    is a few batched ``einsum`` calls per clique and block, never a Python loop over rows.

    Examples
    --------
    >>> from bnfisher.bn.inference import posteriors_given_rows
    >>> codes = network.encode(data.iloc[:3]).codes.copy()
    >>> codes[:, 1] = -1  # class missing in every row
    >>> posteriors, log_likelihood = posteriors_given_rows(network, codes, [(1,)])
    >>> posteriors[0].shape, log_likelihood.shape
    ((3, 5), (3,))
    """
    plan = _junction_tree_plan(network)
    check_allocation(8.0 * 3 * max(plan[2]), "The junction tree's largest clique",
                     "use a network with fewer parents per variable.")
    codes = np.asarray(codes)
    if codes.shape[0] == 0:
        cards = network.cardinalities
        return [np.zeros((0,) + tuple(int(cards[v]) for v in q)) for q in queries], np.zeros(0)
    distinct, inverse = np.unique(codes, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    block = _evidence_blocks(network, distinct.shape[0], plan)
    parts, likelihoods = [], []
    for start in range(0, distinct.shape[0], block):
        posts, ll = _batched_junction_tree(network, plan, distinct[start:start + block], queries)
        parts.append(posts)
        likelihoods.append(ll)
    posteriors = [np.concatenate([p[q] for p in parts])[inverse] for q in range(len(queries))]
    return posteriors, np.concatenate(likelihoods)[inverse]


def query(network: BayesianNetwork, targets, evidence):
    """Posterior distributions of target variables given evidence, labelled.

    Parameters
    ----------
    network : BayesianNetwork
    targets : variable name or sequence of them
        Variables whose posterior marginals are wanted.
    evidence : mapping or DataFrame
        One ``{variable: label}`` dict, or a DataFrame with one row of evidence per row
        (extra columns ignored; a missing column or a missing cell means "not
        observed").  Rows are deduplicated and computed in batches: one junction-tree
        calibration per block of rows.

    Returns
    -------
    DataFrame or dict of DataFrame
        For one target: a DataFrame with one column per state (one row per evidence
        row).  For several: ``{target: DataFrame}``.

    Raises
    ------
    SchemaError
        An unknown variable or label.
    DataError
        Evidence that has probability 0 under the network (naming the row).

    Examples
    --------
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({"rain": [], "wet": ["rain"]},
    ...                       {"rain": [0.2, 0.8], "wet": [[0.9, 0.1], [0.1, 0.9]]},
    ...                       {"rain": ["yes", "no"], "wet": ["yes", "no"]})
    >>> query(net, "rain", {"wet": "yes"}).round(4)
          yes      no
    0  0.6923  0.3077
    """
    import pandas as pd

    targets, single = _targets(network, targets)
    frame = _evidence_frame(network, evidence)
    full = frame.reindex(columns=list(network.schema.variables))
    codes = network.schema.encode(full, missing="allow").select(network.variables).codes
    index = {v: i for i, v in enumerate(network.variables)}
    posteriors, log_likelihood = posteriors_given_rows(network, codes, [(index[t],) for t in targets])
    impossible = ~np.isfinite(log_likelihood)
    if impossible.any():
        raise DataError(f"The evidence of row {int(np.argmax(impossible))} has probability 0 under the network.")
    out = {t: pd.DataFrame(p, index=frame.index, columns=list(network.states[t])) for t, p in zip(targets, posteriors)}
    return out[targets[0]] if single else out


def _targets(network: BayesianNetwork, targets) -> tuple:
    """Return the target variables as a list, and whether one was named (0, True and a tuple are names too)."""
    import pandas as pd

    if isinstance(targets, tuple):
        single = targets in network.states  # a tuple may itself be a name
    else:
        single = not isinstance(targets, (list, np.ndarray, pd.Index))
    targets = [targets] if single else list(targets)
    unknown = [t for t in targets if t not in network.states]
    if unknown:
        raise SchemaError(f"`targets` names {unknown}, which are not variables of the network.")
    return targets, single


def _evidence_frame(network: BayesianNetwork, evidence):
    """Return the evidence as a DataFrame of the network's variables (a dict naming another one is refused)."""
    import pandas as pd

    if isinstance(evidence, pd.DataFrame):
        frame = evidence
    elif isinstance(evidence, dict):
        frame = pd.DataFrame({k: [v] for k, v in evidence.items()})
    else:
        raise OptionError(f"`evidence` must be a dict or a DataFrame; got {type(evidence).__name__}.")
    absent = [c for c in frame.columns if c not in network.states]
    if absent and isinstance(evidence, dict):
        raise SchemaError(f"`evidence` names {absent}, which are not variables of the network.")
    return frame[[c for c in frame.columns if c in network.states]]


def family_cell_weights(network: BayesianNetwork, codes: np.ndarray, families: list, *,
                        return_log_likelihood: bool = False, plan=None):
    """Each row's distribution over the cells of each family, given its observed values.

    A family whose variables are all observed in a row puts weight 1 on one cell; for
    the others the weights are the exact posterior ``P(family cell | observed values)``:
    enumerated over the completions of the row's component of missing values that
    holds the family's (:mod:`bnfisher.bn.inference.components`), or, for rows with a
    large or rare component, from :func:`posteriors_given_rows`.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families : list of tuple of int
        Column indices, parents first and the child last (as a kernel's ``families``).

    return_log_likelihood : bool, default=False
        Also return ``log P(observed values)`` of the rows that needed inference
        (NaN for the others).
    plan : ComponentPlan, optional
        :func:`~bnfisher.bn.inference.components.plan_components` of these ``codes`` and
        ``families`` for this network's structure, made once when the weights are asked
        for many CPTs of one structure (EM).

    Returns
    -------
    list of (rows, cells, weights)
        Per family, three arrays of equal length: row position, cell (mixed radix over
        the family), and weight; the weights of each row sum to 1.
    log_likelihood : ndarray of shape (n_rows,)
        Only with ``return_log_likelihood``.

    Raises
    ------
    DataError
        When a row's observed values have probability 0 under the network.

    Examples
    --------
    >>> from bnfisher.bn.inference import family_cell_weights
    >>> codes = network.encode(data.iloc[:3]).codes.copy()
    >>> codes[0, 0] = -1  # one missing cell
    >>> weights = family_cell_weights(network, codes, [(0,)])  # the family of variable 0 (no parents)
    >>> len(weights)
    1
    """
    codes = np.asarray(codes)
    cards = network.cardinalities
    # Each row's missing values split into components that are independent given its observed values; small
    # ones are enumerated (bnfisher.bn.inference.components).  Rows with a large one use the junction tree.
    plan = plan if plan is not None else plan_components(network, codes, families)
    components = plan.evaluate(network)
    need, complete_rows, complete_cells, touching = _cell_layout(plan, codes, families, cards)
    fallback = components.fallback
    row_log_likelihood = components.log_likelihood
    asked = [k for k, flags in enumerate(need) if flags[fallback].any()]
    posteriors = {}
    if asked:
        found, log_likelihood = posteriors_given_rows(network, codes[fallback], [tuple(families[k]) for k in asked])
        row_log_likelihood[fallback] = log_likelihood
        posteriors = dict(zip(asked, found))
    impossible = np.isinf(row_log_likelihood)
    if impossible.any():
        raise DataError(f"Row {int(np.argmax(impossible))} has observed values with probability 0 "
                        "under the network; nothing can be inferred for its missing values.")
    slot = np.full(codes.shape[0], -1, dtype=np.intp)
    slot[fallback] = np.arange(fallback.size)
    in_fallback = slot >= 0
    out = []
    for k, family in enumerate(families):
        parts = [(complete_rows[k], complete_cells[k], np.ones(complete_rows[k].size))]
        if k in posteriors:
            partial = np.flatnonzero(need[k] & in_fallback)
            table = posteriors[k][slot[partial]].reshape(partial.size, -1)
            row, cell = np.nonzero(table > 0)
            parts.append((partial[row], cell.astype(np.intp), table[row, cell]))
        parts += [_group_cells(components.groups[g], components.filled, family, cards) for g in touching[k]]
        out.append(tuple(np.concatenate(part) for part in zip(*parts)))
    return (out, row_log_likelihood) if return_log_likelihood else out


def _cell_layout(plan, codes: np.ndarray, families: list, cards) -> tuple:
    """Return what does not depend on the CPTs, made once per plan.

    Which rows need a family's posterior, the complete rows and their cells, and the groups that hold a family's
    missing variables (elsewhere the family is observed).
    """
    if "cell_layout" not in plan.memo:
        missing = codes < 0
        need = [missing[:, list(f)].any(axis=1) for f in families]
        complete = [np.flatnonzero(~flags) for flags in need]
        complete_cells = [configuration_index(codes, f, cards)[rows] for f, rows in zip(families, complete)]
        touching = [[g for g, group in enumerate(plan.groups) if not group.variables_set.isdisjoint(family)]
                    for family in families]
        plan.memo["cell_layout"] = need, complete, complete_cells, touching
    return plan.memo["cell_layout"]


def _group_cells(group, filled, family, cards) -> tuple:
    """(rows, cells, weights) of one enumerated group of missing values for one family."""
    cell = group.cells(filled, family, cards)
    if group.possible:
        return np.repeat(group.rows, cell.shape[1]), cell.ravel(), group.posterior.ravel()
    keep = group.posterior > 0
    return np.broadcast_to(group.rows[:, None], cell.shape)[keep], cell[keep], group.posterior[keep]


def posterior_modes(network: BayesianNetwork, codes: np.ndarray) -> np.ndarray:
    """Return ``codes`` with each missing value replaced by its most probable state given the row's observed values.

    Each missing value gets the mode of its own posterior marginal (as structural EM imputes).  The marginals
    come from enumerating each component of a row's missing values
    (:mod:`bnfisher.bn.inference.components`); rows with a large or rare component use one batched pass of
    :func:`posteriors_given_rows`.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        In ``network.variables`` order; -1 marks a missing value.

    Returns
    -------
    ndarray of int, shape (n_rows, n_variables)
        A completed copy (a row whose observed values are impossible gets state 0).

    Examples
    --------
    >>> from bnfisher.bn.inference import posterior_modes
    >>> codes = network.encode(data.iloc[:4]).codes.copy()
    >>> codes[:, 1] = -1
    >>> bool((posterior_modes(network, codes) >= 0).all())
    True
    """
    holes = codes < 0
    completed = np.array(codes, copy=True)
    components = missing_components(network, codes)
    for group in components.groups:
        shape = tuple(int(network.cardinalities[v]) for v in group.variables)
        joint = group.posterior.reshape((-1,) + shape)
        for axis, variable in enumerate(group.variables):
            marginal = joint.sum(axis=tuple(a + 1 for a in range(len(shape)) if a != axis))
            completed[group.rows, variable] = np.argmax(marginal, axis=1)
    rows = components.fallback
    if rows.size:
        columns = [i for i in range(codes.shape[1]) if holes[rows, i].any()]
        posteriors, _ = posteriors_given_rows(network, codes[rows], [(i,) for i in columns])
        for i, posterior in zip(columns, posteriors):
            here = holes[rows, i]
            completed[rows[here], i] = np.argmax(posterior[here], axis=1)
    return completed


def expected_counts(network: BayesianNetwork, codes: np.ndarray, families: list) -> list:
    """Return the expected count tables of families: complete rows count once, the others by their posterior.

    ``E[N_f(cell) | observed data] = sum over rows of P(cell | row's observed values)``: the
    sufficient statistics of the EM algorithm and of the marginalized kernel's mean embedding.

    Parameters
    ----------
    network : BayesianNetwork
    codes : ndarray of int, shape (n_rows, n_variables)
        ``network.variables`` order; -1 marks a missing value.
    families : list of tuple of int

    Returns
    -------
    list of ndarray
        Float tables shaped by each family's cardinalities.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher import BayesianNetwork
    >>> net = BayesianNetwork({"b": ["a"]}, {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]]},
    ...                       {"a": [0, 1], "b": [0, 1]})
    >>> expected_counts(net, np.array([[0, 0], [-1, 1]]), [(0, 1)])[0].round(3).tolist()
    [[1.0, 0.111], [0.0, 0.889]]
    """
    cards = network.cardinalities
    if codes.shape[0] == 0 or codes.min() >= 0:  # complete rows: plain counts, one pass
        return [table.astype(np.float64) for table in count_block(codes, families, cards)]
    out = []
    for family, (_, cells, weights) in zip(families, family_cell_weights(network, codes, families)):
        shape = tuple(int(cards[c]) for c in family)
        out.append(np.bincount(cells, weights=weights, minlength=math.prod(shape)).reshape(shape))
    return out
