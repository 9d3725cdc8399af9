r"""Parameters from incomplete data: the EM algorithm with exact, batched E-steps.

For a fixed structure, EM alternates

- **E-step**: the expected count tables ``E[N_ijk | observed data]`` under the current
  CPTs -- complete rows count once; a row with missing values adds its exact posterior
  over each family's cells (:func:`bnfisher.bn.inference.expected_counts`, one batched
  junction-tree calibration per block of distinct rows);
- **M-step**: ``theta_ijk = (E[N_ijk] + alpha) / (E[N_ij] + r_i alpha)`` (the pseudocount
  ``alpha`` is a Dirichlet prior, so this is MAP-EM).

Each iteration cannot decrease the penalised log-likelihood

.. math::

    \ell(\theta) = \sum_{\text{rows}} \log P(x_{\text{obs}}; \theta) + \alpha \sum_{ijk} \log \theta_{ijk}

(the log-likelihood itself when ``alpha = 0``).  The search starts from the
available-case estimate (each family counted over the rows where it is complete).

EM is accelerated by SQUAREM [3]_ (scheme S3): after two EM steps from ``theta_0``,
with ``r = theta_1 - theta_0`` and ``v = theta_2 - 2 theta_1 + theta_0``, the step
``theta_0 - 2 s r + s^2 v`` with ``s = -|r| / |v|`` (halved towards -1 until every CPT
entry stays positive; rows keep summing to 1 because ``r`` and ``v`` sum to 0 per row)
is kept only when its objective is at least that of ``theta_2``, so the objective never
decreases (``benchmarks/em.py`` sets it beside plain EM on mushroom).

References
----------
.. [1] Dempster, Laird & Rubin (1977). Maximum likelihood from incomplete data via the
   EM algorithm. JRSS B 39, 1-38.
.. [2] Lauritzen (1995). The EM algorithm for graphical association models with
   missing data. Computational Statistics & Data Analysis 19, 191-201.
.. [3] Varadhan & Roland (2008). Simple and globally convergent methods for accelerating
   the convergence of any EM algorithm. Scandinavian Journal of Statistics 35, 335-353.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_nonnegative_float, check_positive_int, check_random_state
from bnfisher.bn.inference.components import plan_components
from bnfisher.bn.inference.evidence import family_cell_weights
from bnfisher.bn.network import BayesianNetwork, cpt_from_counts
from bnfisher.data.counts import configuration_index
from bnfisher.data.providers import NumpyCounts
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import ConvergenceWarning, DataError

__all__ = ["EMResult", "fit_em", "fit_em_distributed"]


@dataclass
class EMResult:
    """Outcome of :func:`fit_em`.

    Attributes
    ----------
    network : BayesianNetwork
        The fitted network.
    objective : list of float
        Penalised log-likelihood (natural log) of the observed data after each
        accepted step (EM steps and kept SQUAREM extrapolations), starting with the
        available-case start; never decreasing.
    n_iter : int
        E-steps computed (one per EM step and per extrapolation tried).
    converged : bool
    n_missing : int
        Missing cells in the data.

    Examples
    --------
    >>> import numpy as np
    >>> from bnfisher.bn import fit_em
    >>> data = load("nursery").iloc[::20].copy()
    >>> data.loc[data.index[:50], "health"] = np.nan
    >>> result = fit_em(data, dict(bf.learn(data.dropna(), "chow-liu").parents))
    >>> result.converged
    True
    """

    network: BayesianNetwork
    objective: list = field(default_factory=list)
    n_iter: int = 0
    converged: bool = False
    n_missing: int = 0


def _complete_counts(codes: np.ndarray, families: list, cards) -> tuple[np.ndarray, list]:
    """Split off the rows without missing values: their count tables do not change between EM iterations."""
    complete = ~(codes < 0).any(axis=1)
    rows = codes[complete]
    counts = []
    for family in families:
        shape = tuple(int(cards[c]) for c in family)
        cells = configuration_index(rows, family, cards)
        counts.append(np.bincount(cells, minlength=int(np.prod(shape))).astype(np.float64).reshape(shape))
    return codes[~complete], counts


def _objective(network: BayesianNetwork, incomplete: np.ndarray, fixed: list, families: list, alpha: float,
               plan=None):
    """Return the expected counts and the penalised observed-data log-likelihood of the current CPTs.

    ``fixed`` are the count tables of the complete rows (the same at every iteration); only the rows in
    ``incomplete`` need inference.  ``plan``: their components of missing values, found once
    (:func:`bnfisher.bn.inference.components.plan_components`).
    """
    cards = network.cardinalities
    triples, log_likelihood = family_cell_weights(network, incomplete, families, return_log_likelihood=True,
                                                  plan=plan)
    value = float(log_likelihood[~np.isnan(log_likelihood)].sum())
    counts = []
    penalty = 0.0
    for (v, family), (_, cells, weights), base in zip(zip(network.variables, families), triples, fixed):
        shape = tuple(int(cards[c]) for c in family)
        log_cpt = np.log(np.asarray(network.cpts[v])).reshape(shape)
        value += float(np.where(base > 0, base * log_cpt, 0.0).sum())  # complete rows: counts x log CPT
        expected = np.bincount(cells, weights=weights, minlength=int(np.prod(shape))).reshape(shape)
        counts.append(base + expected)
        if alpha:
            penalty += alpha * float(log_cpt.sum())
    return counts, value + penalty


def _extrapolate(start: dict, first: dict, second: dict) -> dict | None:
    """SQUAREM's extrapolated CPTs from three successive EM iterates, or None when it would add nothing."""
    r = {v: first[v] - start[v] for v in start}
    w = {v: second[v] - 2 * first[v] + start[v] for v in start}
    r_norm = np.sqrt(sum(float((x * x).sum()) for x in r.values()))
    w_norm = np.sqrt(sum(float((x * x).sum()) for x in w.values()))
    if w_norm == 0.0 or r_norm == 0.0:
        return None
    step = -r_norm / w_norm
    while step < -1.0:  # halve the way back towards -1 (which is the second EM iterate) until feasible
        cpts = {v: start[v] - 2 * step * r[v] + step * step * w[v] for v in start}
        if all(bool(np.all(cpts[v] >= 0) and np.all(cpts[v][second[v] > 0] > 0)) for v in cpts):
            return cpts
        step = (step - 1.0) / 2
        if step > -1.01:
            break
    return None


def _squarem(evaluate, alpha: float, state: tuple, result: EMResult, *, max_iter: int, tol: float, bar) -> None:
    """Run EM accelerated by SQUAREM (Varadhan & Roland 2008, scheme S3) from ``state``, recording into ``result``.

    A cycle takes two EM steps, then extrapolates along them (:func:`_extrapolate`); the extrapolated CPTs are
    kept only if their objective is at least that of the second EM step, so the objective never decreases.
    ``evaluate(cpts)`` returns ``(network, expected counts, objective)``; every call counts as an iteration.
    """
    network, counts, value = state

    def step(cpts: dict, *, always: bool = True) -> bool:
        """Evaluate ``cpts`` and keep them (or, unless ``always``, only if they improve); True when converged."""
        nonlocal network, counts, value
        candidate = evaluate(cpts)
        result.n_iter += 1
        if bar is not None:
            bar.update(1)
        if not always and candidate[2] < value:
            return False
        previous = value
        network, counts, value = candidate
        result.objective.append(value)
        result.network = network
        if bar is not None:
            bar.set_postfix(objective=f"{value:.6g}")
        return always and abs(value - previous) <= tol * max(abs(value), 1.0)

    def em_map() -> dict:
        return {v: cpt_from_counts(c, alpha) for v, c in zip(network.variables, counts)}

    def current() -> dict:
        return {v: np.asarray(network.cpts[v]) for v in network.variables}

    while result.n_iter < max_iter:
        start = current()
        if step(em_map()):
            result.converged = True
            return
        if result.n_iter >= max_iter:
            return
        first = current()
        if step(em_map()):
            result.converged = True
            return
        extrapolated = _extrapolate(start, first, current())
        if extrapolated is not None and result.n_iter < max_iter:
            step(extrapolated, always=False)


def _encoded_observed(data, schema, observed: set) -> EncodedData:
    """Encode the structure's observed columns (missing cells allowed); refuse a variable the data lacks."""
    if schema is None:
        if not isinstance(data, pd.DataFrame):
            raise DataError("Pass a `schema` with an array of codes that holds missing values.")
        schema = Schema.from_data(data, variables=[c for c in data.columns if c in observed], missing="allow")
    encoded = schema.encode(data, missing="allow", variables=[v for v in schema.variables if v in observed])
    absent = sorted(str(v) for v in observed if v not in encoded.variables)
    if absent:
        raise DataError(f"The structure names variable(s) {absent} absent from the data; declare them in "
                        "`hidden` (with their number of states) to fit them as hidden variables.")
    return encoded


def _encoded_with_hidden(data, parents, schema, hidden: dict) -> EncodedData:
    """Encode the structure's observed columns and append each hidden variable as a column missing in every row."""
    needed = set(parents) | {p for ps in parents.values() for p in ps}
    encoded = _encoded_observed(data, schema, needed - set(hidden))
    clash = sorted(str(v) for v in hidden if v in encoded.variables)
    if clash:
        raise DataError(f"`hidden` names {clash}, which are columns of the data.")
    if not hidden:
        return encoded
    order = list(encoded.variables) + list(hidden)
    codes = np.column_stack([encoded.codes, np.full((encoded.n_rows, len(hidden)), -1)])
    schema = Schema({**{v: encoded.states[v] for v in encoded.variables}, **hidden},
                    na_values=encoded.schema.na_values, hidden=list(hidden))
    return EncodedData(np.asfortranarray(codes), tuple(order), dict(schema.states), schema=schema)


def _same_family(one: BayesianNetwork, other: BayesianNetwork, v) -> bool:
    """Return whether ``v`` has the same parents, and they and it the same states, in both networks."""
    if v not in one.parents or tuple(one.parents[v]) != tuple(other.parents[v]):
        return False
    return all(tuple(one.states[u]) == tuple(other.states[u]) for u in (*other.parents[v], v))


def _start_network(encoded: EncodedData, parents, alpha: float, hidden: dict, rng: np.random.Generator,
                   warm_start: BayesianNetwork | None) -> BayesianNetwork:
    """Return EM's start: available-case CPTs, random ones where hidden variables are involved, or ``warm_start``'s."""
    # A tiny pseudocount when alpha = 0, so that no row starts impossible (zeros in the start would make a row's
    # observed values impossible; after one E-step, zeros only fall where no row has mass).
    start = BayesianNetwork.from_data(NumpyCounts(encoded.codes, encoded.schema, missing="available-case"), parents,
                                      pseudocount=alpha or 1e-6)
    if hidden:  # random CPTs where hidden variables are involved
        touched = set(hidden) | {v for v in start.variables if set(start.parents[v]) & set(hidden)}
        cpts = {v: (rng.dirichlet(np.ones(len(start.states[v])), size=np.asarray(start.cpts[v]).shape[:-1])
                    if v in touched else np.asarray(start.cpts[v])) for v in start.variables}
        start = start.with_cpts(cpts)
    if warm_start is not None:
        kept = {v: np.asarray(warm_start.cpts[v]) for v in start.variables if _same_family(warm_start, start, v)}
        if kept:
            start = start.with_cpts({v: kept.get(v, np.asarray(start.cpts[v])) for v in start.variables})
    return start


def fit_em(data, parents, *, schema=None, hidden=None, pseudocount: float = 1.0, max_iter: int = 100,
           tol: float = 1e-6, random_state=None, progress: bool = False,
           warm_start: BayesianNetwork | None = None) -> EMResult:
    """Fit the CPTs of a structure to data with missing values, by EM.

    Parameters
    ----------
    data : DataFrame, ndarray of int or EncodedData
        Missing values are NaN/None, the schema's ``na_values``, or -1 in codes.
    parents : mapping
        ``{variable: parents}``.  A variable absent from the data must be declared in
        ``hidden``.
    schema : Schema, optional
        Default: learned from the observed values.
    hidden : mapping, optional
        ``{variable: states}`` (a number of states, or the labels) of **hidden
        variables**: named by the structure, absent from the data, always missing.
        Their CPTs, and those of their children, start from random Dirichlet draws
        (``random_state``), since a symmetric start is a fixed point of EM; the label
        of each hidden state is arbitrary (relabelling leaves the model's fit equal).
    pseudocount : float, default=1.0
        Dirichlet pseudocount ``alpha`` (MAP-EM); 0 gives maximum likelihood.
    max_iter : int, default=100
    tol : float, default=1e-6
        Stop when the objective improves by less than ``tol`` times its magnitude.
    random_state : None, int or Generator
        Seed of the random start of hidden variables' CPTs.
    progress : bool, default=False
    warm_start : BayesianNetwork, optional
        Start each variable whose parents (in order) and states are the same in
        ``warm_start`` from its CPT there (structural EM continues from the previous
        round's parameters); the others start from available-case counts.

    Returns
    -------
    EMResult

    Raises
    ------
    DataError
        A variable of the structure absent from the data, or rows impossible under
        the current CPTs (only with ``pseudocount=0``).

    Warns
    -----
    ConvergenceWarning
        When ``max_iter`` is reached first.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> frame = pd.DataFrame({"a": list("xxyyxy"), "b": ["u", "u", "v", None, "u", "v"]})
    >>> result = fit_em(frame, {"a": [], "b": ["a"]})
    >>> result.converged, result.n_missing
    (True, 1)
    """
    alpha = check_nonnegative_float(pseudocount, "pseudocount")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_nonnegative_float(tol, "tol")
    hidden = {v: tuple(range(s)) if isinstance(s, int) else tuple(s) for v, s in (hidden or {}).items()}
    encoded = _encoded_with_hidden(data, parents, schema, hidden)
    start = _start_network(encoded, parents, alpha, hidden, check_random_state(random_state), warm_start)
    network = start
    codes = network.encode(encoded, missing="allow").codes
    families = [p + (i,) for i, p in enumerate(network.parent_indices())]
    n_missing = int((codes < 0).sum())
    incomplete, fixed = _complete_counts(codes, families, network.cardinalities)
    plan = plan_components(network, incomplete, families)  # the missing cells' components: the same every step
    counts, value = _objective(network, incomplete, fixed, families, alpha, plan)
    result = EMResult(network, [value], 0, False, n_missing)
    bar = None
    if progress:
        bar = progress_bar(total=max_iter, desc="EM", unit="iteration", leave=False)

    def evaluate(cpts: dict) -> tuple:
        candidate = network.with_cpts(cpts, validate=False)  # normalised counts, or SQUAREM's checked extrapolation
        return (candidate, *_objective(candidate, incomplete, fixed, families, alpha, plan))

    try:
        _squarem(evaluate, alpha, (network, counts, value), result, max_iter=max_iter,
                 tol=np.inf if n_missing == 0 else tol, bar=bar)  # complete data: one step is the MLE
    finally:
        if bar is not None:
            bar.close()
    if not result.converged:
        warnings.warn(f"EM stopped after max_iter={max_iter} iterations before converging; raise `max_iter` or "
                      "`tol`.", ConvergenceWarning, stacklevel=2)
    return result


def fit_em_distributed(provider, parents, *, pseudocount: float = 1.0, max_iter: int = 100,
                       tol: float = 1e-6) -> EMResult:
    """EM with distributed E-steps: expected count tables computed partition by partition.

    Parameters
    ----------
    provider : DaskCounts
        Built with ``missing="allow"`` (it gives available-case counts for the start
        and ``expected_counts`` for the E-steps).
    parents : mapping
    pseudocount : float, default=1.0
    max_iter : int, default=100
    tol : float, default=1e-6
        Stop when no CPT entry changes by more than ``tol`` (the observed-data
        likelihood is not computed here: it would take another pass).

    Returns
    -------
    EMResult
        ``objective`` holds the largest CPT change of each iteration.
    """
    alpha = check_nonnegative_float(pseudocount, "pseudocount")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_nonnegative_float(tol, "tol")
    network = BayesianNetwork.from_data(provider, parents, pseudocount=alpha or 1e-6)
    families = [p + (i,) for i, p in enumerate(network.parent_indices())]
    result = EMResult(network, [], 0, False, -1)
    for iteration in range(1, max_iter + 1):
        counts = provider.expected_counts(network, families)
        cpts = {v: cpt_from_counts(c, alpha) for v, c in zip(network.variables, counts)}
        change = max(float(np.abs(cpts[v] - network.cpts[v]).max()) for v in network.variables)
        network = network.with_cpts(cpts)
        result.network, result.n_iter = network, iteration
        result.objective.append(change)
        if change <= tol:
            result.converged = True
            break
    if not result.converged:
        warnings.warn(f"EM stopped after max_iter={max_iter} iterations before converging; raise `max_iter` or "
                      "`tol`.", ConvergenceWarning, stacklevel=2)
    return result
