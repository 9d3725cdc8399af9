"""Structure learning: ``learn(data, structure=...)`` returns a fitted BayesianNetwork."""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.progress import progress_bar
from bnfisher._utils.validation import check_nonnegative_float, check_option, check_positive_int
from bnfisher.bn.em import fit_em, fit_em_distributed
from bnfisher.bn.inference.evidence import posterior_modes
from bnfisher.bn.network import BayesianNetwork, topological_order
from bnfisher.bn.scores import make_scorer
from bnfisher.bn.structure.chow_liu import chow_liu_parents, score_forest_parents
from bnfisher.bn.structure.classifiers import kdb_parents, naive_bayes_parents, tan_parents
from bnfisher.bn.structure.cost import announce_search
from bnfisher.bn.structure.exact import exact_parents
from bnfisher.bn.structure.hill_climb import hill_climb, screen_candidates
from bnfisher.bn.structure.ordering import candidate_sets, order_search
from bnfisher.data.providers import NumpyCounts, as_provider, in_memory
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import ConvergenceWarning, DataError, OptionError, OptionTypeError

__all__ = ["LEARN_OPTIONS", "STRUCTURES", "learn"]


STRUCTURES = ("chow-liu", "forest", "hc", "exact", "tan", "kdb", "naive-bayes")


#: Every named structure's options, with the value :func:`learn` uses when one is not given (None: no limit, or
#: nothing).  One table: ``learn`` fills its options from it and the command line reads its defaults here.
LEARN_OPTIONS: dict[str, dict[str, object]] = {
    "chow-liu": {"progress": False},
    "forest": {"structure_score": "bic", "ess": 1.0, "structure_prior": None, "progress": False},
    "hc": {"structure_score": "bic", "ess": 1.0, "structure_prior": None, "max_parents": None, "tabu": 0,
           "max_tabu": None, "restarts": 0, "perturb": 1, "whitelist": None, "blacklist": None, "start": None,
           "random_state": None, "max_iter": None, "max_time": None, "progress": False, "search": "order",
           "max_candidates": "auto"},
    "exact": {"structure_score": "bic", "ess": 1.0, "structure_prior": None, "max_parents": None, "whitelist": None,
              "blacklist": None, "progress": False, "max_local_scores": 5_000_000},
    "tan": {"class_variable": "class", "progress": False},
    "kdb": {"class_variable": "class", "k": 3, "progress": False},
    "naive-bayes": {"class_variable": "class", "progress": False},
}


def _given_structure(structure, variables: Sequence[str]) -> dict:
    if isinstance(structure, BayesianNetwork):
        structure = {v: tuple(structure.parents[v]) for v in structure.variables}
    if isinstance(structure, Mapping):
        _check_named(structure, variables)
        parents = {v: tuple(structure.get(v, ())) for v in variables}
    else:
        parents = {v: [] for v in variables}
        for edge in _edges(structure, variables, "structure"):
            parents[edge[1]].append(edge[0])
        parents = {v: tuple(ps) for v, ps in parents.items()}
    topological_order(parents, list(variables))  # raises a ValueError naming the cycle
    return parents


def _edges(edges, variables: Sequence[str], name: str) -> list:
    out = []
    for edge in edges:
        if isinstance(edge, str) or len(edge) != 2:
            raise OptionError(f"`{name}` must hold (parent, child) pairs; got {edge!r}.")
        for node in edge:
            if node not in variables:
                raise OptionError(f"`{name}` arc {tuple(edge)!r} names {node!r}, which is not a column of the data.")
        if edge[0] == edge[1]:
            raise OptionError(f"`{name}` arc {tuple(edge)!r} is a self-loop.")
        out.append(tuple(edge))
    return out


def _class_index(options: dict, variables: Sequence[str], structure: str) -> int:
    class_variable = options["class_variable"]
    if class_variable not in variables:
        raise OptionError(
            f"structure={structure!r} needs the class column: `class_variable` {class_variable!r} is not a column of "
            f"the data (columns: {list(variables)}); pass class_variable=<the class column>."
        )
    return list(variables).index(class_variable)


def _lists(options: dict, variables: Sequence[str]) -> tuple[list, list]:
    """Return the whitelist and blacklist as (parent, child) column indices, checked for overlap."""
    index = {v: i for i, v in enumerate(variables)}
    white = [(index[a], index[b]) for a, b in _edges(options.get("whitelist") or (), variables, "whitelist")]
    black = [(index[a], index[b]) for a, b in _edges(options.get("blacklist") or (), variables, "blacklist")]
    both = set(white) & set(black)
    if both:
        a, b = sorted(both)[0]
        raise OptionError(f"Arc ({variables[a]!r}, {variables[b]!r}) is in both `whitelist` and `blacklist`.")
    return white, black


def _bounds(options: dict) -> tuple:
    """``max_iter`` and the deadline ``(monotonic time, max_time)`` of a climb, validated (None: no bound)."""
    max_iter = options.get("max_iter")
    if max_iter is not None:
        max_iter = check_positive_int(max_iter, "max_iter")
    if options.get("max_time") is None:
        return max_iter, None
    max_time = check_nonnegative_float(options["max_time"], "max_time")
    return max_iter, (time.monotonic() + max_time, max_time)


#: ``max_candidates="auto"``: screened candidate parents for tables wider than this many variables.
WIDE = 100
#: ``max_candidates="auto"`` on a wide table: candidate parents kept per variable.
WIDE_CANDIDATES = 20


def _max_candidates(value, n_variables: int):
    """Resolve ``max_candidates``: None (every other variable is a candidate) or the number kept per variable."""
    if isinstance(value, str):
        if value == "all":
            return None
        if value != "auto":
            raise OptionError(f"`max_candidates` must be an integer >= 1, 'auto' or 'all'; got {value!r}.")
        return WIDE_CANDIDATES if n_variables > WIDE else None
    limit = check_positive_int(value, "max_candidates")
    return limit if limit < n_variables - 1 else None


def _screened_scorer(provider, options: dict, blacklist, *, progress: bool, order: bool, restarts: int) -> tuple:
    """Return the scorer with the single-parent families scored, the candidate parents (None: all) and their limit.

    With ``progress``, states the estimated time of the search (stderr) from the single-parent scores' rate.
    """
    n = len(provider.variables)
    limit = _max_candidates(options["max_candidates"], n)
    started = time.perf_counter()
    scorer = _scorer(provider, options, singles=limit is None)
    candidates = None
    if limit is not None:
        candidates = screen_candidates(scorer, n, limit, blacklist=blacklist)
        scorer.prefetch([(v, ()) for v in range(n)] + [(v, (u,)) for v, pool in enumerate(candidates) for u in pool])
    if progress:
        announce_search(n, provider.n_rows, limit, time.perf_counter() - started, order=order, restarts=restarts)
    return scorer, candidates, limit


def _climb_start(provider, options: dict) -> list | None:
    """Return the parent sets (column indices) the first climb starts from: ``start``'s, Chow-Liu's, or None."""
    variables = provider.variables
    if isinstance(options.get("start"), str):
        if options["start"] != "chow-liu":
            raise OptionError(f"`start` must be 'chow-liu' or a structure; got {options['start']!r}.")
        return chow_liu_parents(provider)
    if options.get("start") is None:
        return None
    index = {v: i for i, v in enumerate(variables)}
    given = _given_structure(options["start"], variables)
    return [tuple(index[p] for p in given[v]) for v in variables]


def _checked_start(start, white: list, variables, max_parents) -> int | None:
    """Check that the start with the whitelist is acyclic and within ``max_parents``; return it validated."""
    start_names = {v: [variables[p] for p in (start[i] if start else ())] for i, v in enumerate(variables)}
    for a, b in white:
        if variables[a] not in start_names[variables[b]]:
            start_names[variables[b]].append(variables[a])
    try:
        topological_order(start_names, list(variables))
    except ValueError as exc:
        raise OptionError(f"The `whitelist` (with `start`) is not acyclic: {exc}") from None
    if max_parents is None:
        return None
    max_parents = check_positive_int(max_parents, "max_parents", minimum=0)
    crowded = [v for v, ps in start_names.items() if len(ps) > max_parents]
    if crowded:
        raise OptionError(f"Variable {crowded[0]!r} has more whitelisted/start parents than max_parents={max_parents}.")
    return max_parents


def _hill_climb_parents(provider, options: dict) -> tuple[list, dict]:
    """Validate the hill-climbing options and run the search; return the parents and what it reports."""
    variables = provider.variables
    white, black = _lists(options, variables)
    start = _climb_start(provider, options)
    max_parents = _checked_start(start, white, variables, options.get("max_parents"))
    tabu = check_positive_int(options["tabu"], "tabu", minimum=0)
    max_tabu = options.get("max_tabu")
    if max_tabu is not None:
        max_tabu = check_positive_int(max_tabu, "max_tabu", minimum=0)
    max_iter, deadline = _bounds(options)
    restarts = check_positive_int(options["restarts"], "restarts", minimum=0)
    search = options["search"]
    if search not in ("order", "plain"):
        raise OptionError(f"`search` must be 'order' (the default) or 'plain'; got {search!r}.")
    progress = bool(options["progress"])
    scorer, candidates, limit = _screened_scorer(provider, options, black, progress=progress,
                                                 order=search == "order", restarts=restarts)
    report = {"max_candidates": "all" if limit is None else limit}

    def climb(begin, restarts=0):
        return hill_climb(
            scorer, len(variables), start=begin, max_parents=max_parents, tabu=tabu, max_tabu=max_tabu,
            restarts=restarts, perturb=check_positive_int(options["perturb"], "perturb"),
            whitelist=white, blacklist=black, random_state=options.get("random_state"),
            max_iter=max_iter, progress=progress, deadline=deadline, candidates=candidates,
        )

    if search == "plain":
        return climb(start, restarts), report
    # search="order": climb; search variable orders over candidate parent sets (the climbed DAG's sets among them,
    # so the order search starts at the climbed score); climb again from the best order's DAG.
    parents = climb(start)
    if deadline is not None and time.monotonic() >= deadline[0]:
        return parents, report  # out of time: the order search would only add to it
    sets = candidate_sets(scorer, len(variables), starts=[parents], max_parents=max_parents, whitelist=white,
                          blacklist=black, allowed=candidates)
    order = topological_order({j: list(ps) for j, ps in enumerate(parents)}, list(range(len(variables))))
    moved = climb(order_search(sets, order)[1])
    if scorer.family_scores(list(enumerate(moved))).sum() > scorer.family_scores(list(enumerate(parents))).sum():
        parents = moved
    return (climb(parents, restarts) if restarts else parents), report


def learn(data, structure="chow-liu", *, pseudocount: float = 1.0, schema: Schema | None = None,
          missing: str = "auto", hidden=None, random_state=None, structure_score: str | None = None,
          ess: float | None = None, structure_prior=None, max_parents: int | None = None, whitelist=None,
          blacklist=None, start=None, search: str | None = None, tabu: int | None = None,
          max_tabu: int | None = None, restarts: int | None = None, perturb: int | None = None,
          max_iter: int | None = None, max_time: float | None = None, max_local_scores: int | None = None,
          max_candidates: int | str | None = None, progress: bool | None = None,
          class_variable=None, k: int | None = None) -> BayesianNetwork:
    """Learn a Bayesian network (structure and CPTs) from categorical data.

    Parameters
    ----------
    data : DataFrame, ndarray of int, EncodedData, counts provider, Dask DataFrame or path
        Training data (see :func:`bnfisher.data.providers.as_provider`).  An integer
        array holds codes; its columns are named ``X0, X1, ...`` in array order.
    structure : str, mapping, sequence of edges or BayesianNetwork, default="chow-liu"
        ``"chow-liu"``
            Maximum-weight spanning forest over mutual information (Chow & Liu 1968).
        ``"forest"``
            Maximum-weight spanning forest with score gains ``S(X_i | X_j) - S(X_i)``
            as weights (only positive ones kept); options ``structure_score``,
            ``ess``, ``structure_prior``.
        ``"hc"``
            Hill climbing with add / delete / reverse moves.  By default
            (``search="order"``) it climbs from the empty graph (or ``start``), then
            searches variable orders (:mod:`bnfisher.bn.structure.ordering`: each
            variable's best parent set among its predecessors, drawn from its 8 best
            single parents, up to 3, and its climbed parents) and climbs again from
            the best order's DAG.
            ``search="plain"`` is R bnlearn's ``hc``: one climb from the empty graph
            (or ``start``), the best move first, until none improves.  Options
            ``search``,
            ``structure_score`` ("bic" default, "ll", "aic", "bdeu", "k2"), ``ess``,
            ``structure_prior``, ``max_parents``, ``tabu`` (list length; 0 = plain hill
            climbing), ``max_tabu``, ``restarts``, ``perturb``, ``whitelist``,
            ``blacklist`` (sequences of (parent, child) names), ``start`` (a
            structure, or ``"chow-liu"``: where the first climb starts),
            ``random_state``, ``max_iter``, ``max_time`` (seconds: stop there, with a
            ConvergenceWarning naming it), ``max_candidates`` (each variable's parents
            are drawn from its ``max_candidates`` best single parents, the sparse
            candidate idea of Friedman et al. 1999: a step then costs O(variables x
            candidates); ``"auto"``, the default, keeps 20 on tables of more than 100
            variables and all on narrower ones; ``"all"`` keeps all), ``progress``
            (a progress bar, and on stderr the estimated time before the search).
        ``"exact"``
            The DAG with the highest score, by the dynamic programme of Silander &
            Myllymäki (2006) (:mod:`bnfisher.bn.structure.exact`); up to 25 variables.
            Options ``structure_score``, ``ess``, ``structure_prior``, ``max_parents``,
            ``whitelist``, ``blacklist``, ``progress`` (the estimate and each step,
            on stderr), ``max_local_scores`` (refuse above this many candidate parent
            sets; default 5,000,000).  Parent sets that cannot be optimal are pruned
            (BIC/AIC penalty bounds; BDeu/K2: once every parent configuration holds
            one row).  See ``docs/structure.md`` for measured limits.
        ``"tan"``, ``"kdb"``, ``"naive-bayes"``
            Bayesian network classifiers; need ``class_variable``; ``"kdb"`` takes
            ``k`` (default 3).
    a mapping, a list of edges or a BayesianNetwork
        A mapping ``{child: parents}``, a list of ``(parent, child)`` edges or a
        BayesianNetwork fixes the structure and only fits the parameters.
    pseudocount : float, default=1.0
        Dirichlet pseudocount of the CPTs.
    schema : Schema, optional
        How to encode ``data`` (default: learned from it).  The network carries it,
        so new data is encoded, and binned, as the training data was.
    missing : {"auto", "error", "available-case", "em"}, default="auto"
        What to do with missing values (NaN, None, the schema's ``na_values``).
        ``"auto"``: ``"em"`` when in-memory data has missing cells, complete-data
        learning otherwise (Dask data: ``"error"``; pass ``"em"`` to use EM there).
        ``"error"``: refuse missing cells, naming ``missing="em"``.
        ``"available-case"``: each family is counted over the rows where it is
        observed, for the structure and the CPTs (fast; biased unless values are
        missing completely at random).  ``"em"``: the structure from available-case
        counts as the start, the CPTs by EM (:func:`bnfisher.bn.em.fit_em`, exact
        E-steps), then -- for a named structure on in-memory data -- rounds of
        **structural EM** as R bnlearn's ``structural.em`` does it: every missing
        cell imputed by its exact posterior mode under the current network, the
        structure re-learned on the completed table, the CPTs re-fitted by EM on the
        real (incomplete) data, until the structure stops changing or returns to
        one seen before (then the rounds cycle, and the cycle's structure with the
        highest observed-data BIC is kept; ``learning_["sem_cycle"]`` is the cycle's
        length), at most 5 rounds (a ConvergenceWarning says when that is reached).
        The CPTs' EM is accelerated by SQUAREM.  On Dask data and
        for given structures, EM fits the CPTs only.
        The network's ``learning_`` dict reports what was done: the strategy, the
        number of missing cells, and for EM the iterations, convergence and objective
        (and for ``"hc"`` on complete data, ``max_candidates``: the candidate parents
        per variable, or ``"all"``).
    hidden : mapping, optional
        ``{variable: number of states or labels}`` of hidden variables that a *given*
        structure names and the data lacks; they are fitted by EM from a random start
        (``random_state``) and marginalized by the kernel (see :func:`bnfisher.bn.em.fit_em`).
    random_state : None, int or Generator
        Seed for hill climbing's restarts (``structure="hc"``) and hidden variables' start.
    structure_score, ess, structure_prior, max_parents, whitelist, blacklist, start, search, tabu, max_tabu, \
restarts, perturb, max_iter, max_time, max_local_scores, max_candidates, progress, class_variable, k
        The options of the named structures, as listed under ``structure``; None
        leaves the learner's default.  An option that the structure does not take
        raises a TypeError naming the ones it does.

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    OptionError
        Unknown structure name or class variable, ``k < 0``, cycles in a given
        structure or whitelist, arcs in both whitelist and blacklist.
    DataError
        Names absent from the data; bad data (see :func:`bnfisher.data.providers.as_provider`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": list("xxyy") * 5, "b": list("xxyx") * 5, "c": list("uvuv") * 5})
    >>> learn(df).edges
    [('a', 'b'), ('b', 'c')]
    >>> learn(df, "naive-bayes", class_variable="c").edges
    [('c', 'a'), ('c', 'b')]
    """
    given = {"structure_score": structure_score, "ess": ess, "structure_prior": structure_prior,
             "max_parents": max_parents, "whitelist": whitelist, "blacklist": blacklist, "start": start,
             "search": search, "tabu": tabu, "max_tabu": max_tabu, "restarts": restarts, "perturb": perturb,
             "max_iter": max_iter, "max_time": max_time, "max_local_scores": max_local_scores,
             "max_candidates": max_candidates, "progress": progress,
             "class_variable": class_variable, "k": k}
    options = {name: value for name, value in given.items() if value is not None}
    check_option(missing, "missing", ("auto", "error", "available-case", "em"))
    if missing == "auto":
        missing = _resolve_missing(data, schema)
    if hidden:
        return _hidden_network(data, structure, schema=schema, hidden=hidden, pseudocount=pseudocount,
                               random_state=random_state)
    if random_state is not None:
        options["random_state"] = random_state
    provider, encoded = _training_provider(data, schema, missing)
    parents, report, options = _parents(provider, structure, options)
    if missing != "em":
        network = BayesianNetwork.from_data(provider, parents, pseudocount=pseudocount)
        network.learning_ = {"missing": missing,
                             "n_missing_cells": int((encoded.codes < 0).sum()) if encoded is not None else 0,
                             **report}
        return network
    if encoded is None:  # distributed: EM over the partitions
        return _em_network(fit_em_distributed(provider, parents, pseudocount=pseudocount), report,
                           largest_change=True)
    if isinstance(structure, str):
        return _structural_em(encoded, structure, parents, pseudocount, options, report)
    return _em_network(fit_em(encoded, parents, schema=encoded.schema, pseudocount=pseudocount), report)


def _hidden_network(data, structure, *, schema, hidden, pseudocount: float, random_state) -> BayesianNetwork:
    """Fit a given structure with hidden variables by EM (the hidden columns are all missing)."""
    if isinstance(structure, str):
        raise OptionTypeError("Hidden variables need a given structure (a mapping {child: parents}) that names "
                              "them; a structure learner cannot place a variable it never sees.")
    result = fit_em(data, dict(structure), schema=schema, hidden=hidden, pseudocount=pseudocount,
                    random_state=random_state)
    network = result.network
    network.learning_ = {"missing": "em", "hidden": list(hidden), "n_missing_cells": result.n_missing,
                         "em_iterations": result.n_iter, "em_converged": result.converged,
                         "objective": result.objective[-1]}
    return network


def _training_provider(data, schema: Schema | None, missing: str) -> tuple:
    """Return the counts provider to learn from and, for in-memory data with missing cells, the encoded rows."""
    encoded = None
    if isinstance(data, NumpyCounts):  # counts already (distinct rows with their copies): kept, weights and all
        provider = as_provider(data, schema)
    elif missing != "error" and not in_memory(data):  # distributed: available-case and expected counts per partition
        provider = as_provider(data, schema, missing="allow")
    elif missing != "error":
        if schema is None:
            if not isinstance(data, pd.DataFrame):
                raise OptionTypeError("With missing values, pass a DataFrame (or an array with its `schema`).")
            schema = Schema.from_data(data, missing="allow")
        encoded = schema.encode(data, missing="allow")
        provider = NumpyCounts(encoded.codes, encoded.schema, missing="available-case")
    else:
        provider = as_provider(data, schema)
    if not provider.variables:
        raise DataError("The data has no columns; a network needs at least one variable.")
    if provider.n_rows == 0:
        raise DataError("The data has 0 rows; a network cannot be learned from empty data.")
    return provider, encoded


def _parents(provider, structure, options: dict) -> tuple[dict, dict, dict]:
    """Return ``{child: parents}``, the learner's report and its options filled from :data:`LEARN_OPTIONS`."""
    variables = provider.variables
    if not isinstance(structure, str):
        if options:
            raise OptionTypeError(f"Options {sorted(options)} apply to named structures only.")
        return _given_structure(structure, variables), {}, options
    if structure not in STRUCTURES:
        raise OptionError(f"`structure` must be one of {STRUCTURES} or a given structure; got {structure!r}.")
    unexpected = sorted(set(options) - set(LEARN_OPTIONS[structure]))
    if unexpected:
        raise OptionTypeError(f"Unexpected option(s) for structure={structure!r}: {unexpected}; "
                              f"it takes {sorted(LEARN_OPTIONS[structure]) or 'none'}.")
    options = {**LEARN_OPTIONS[structure], **options}
    parent_index, report = _structure_parents(provider, structure, options)
    return {v: tuple(variables[p] for p in parent_index[i]) for i, v in enumerate(variables)}, report, options


def _em_network(result, report: dict, *, largest_change: bool = False) -> BayesianNetwork:
    """Return the network of an EM fit, with what learning did in ``learning_``."""
    network = result.network
    last = {"largest_cpt_change": result.objective[-1]} if largest_change else {"objective": result.objective[-1]}
    network.learning_ = {"missing": "em", "n_missing_cells": None if largest_change else result.n_missing,
                         "em_iterations": result.n_iter, "em_converged": result.converged, **last, **report}
    return network


def _check_named(structure: Mapping, variables) -> None:
    """Refuse a structure that names a variable (child or parent) absent from the data."""
    named = set(structure) | {p for ps in structure.values() for p in ps}
    unknown = [v for v in named if v not in variables]
    if unknown:
        raise DataError(f"The structure names variable(s) {sorted(set(map(str, unknown)))} absent from the data.")


def _has_missing_cells(data: pd.DataFrame, schema) -> bool:
    """Return whether a table holds a missing cell: NaN, or one of the schema's missing-value markers."""
    if data.isna().to_numpy().any():
        return True
    return bool(schema is not None and schema.na_values and data.isin(list(schema.na_values)).to_numpy().any())


def _resolve_missing(data, schema) -> str:
    """``missing="auto"``: EM when in-memory data has missing cells, else complete-data learning."""
    if not in_memory(data):
        return "error"
    if isinstance(data, pd.DataFrame):
        return "em" if _has_missing_cells(data, schema) else "error"
    codes = np.asarray(getattr(data, "codes", data))  # encoded data, or an array of codes
    return "em" if codes.dtype.kind in "iu" and codes.size and codes.min() < 0 else "error"


def _imputed_structure(network: BayesianNetwork, encoded, structure: str, options: dict) -> tuple:
    """Return the structure learned on the data completed by the network's posterior modes, and its report."""
    completed = posterior_modes(network, network.encode(encoded, missing="allow").codes.astype(np.intp))
    imputed = EncodedData(np.asfortranarray(completed), network.variables, dict(network.states),
                          schema=Schema({v: network.states[v] for v in network.variables}))
    parent_index, report = _structure_parents(NumpyCounts.from_encoded(imputed), structure, dict(options))
    return {v: tuple(network.variables[p] for p in parent_index[i]) for i, v in enumerate(network.variables)}, report


def _best_of_cycle(members: list, n_rows: int) -> tuple:
    """Return the (network, fit) of a cycle of structures with the best observed-data BIC."""
    return max(((n, r) for _, n, r in members),
               key=lambda fit: fit[1].objective[-1] - 0.5 * np.log(n_rows) * fit[0].n_parameters)


def _structural_em(encoded, structure: str, parents: dict, pseudocount: float, options: dict, report: dict,
                   max_rounds: int = 5) -> BayesianNetwork:
    """Structural EM by imputation (bnlearn's ``structural.em``): impute by posterior modes, re-learn, re-fit.

    ``report`` is what the first search reported; each round's search replaces it (``learning_`` keeps the last).
    """
    result = fit_em(encoded, parents, schema=encoded.schema, pseudocount=pseudocount)
    network = result.network
    rounds, changed, cycle = 0, True, 0
    history = [len(network.edges)]
    seen = [(_structure_key(network.parents), network, result)]  # every structure visited, with its fit
    bar = None
    if options.get("progress"):
        bar = progress_bar(total=max_rounds, desc="structural EM", unit="round", leave=False)
        bar.set_postfix(arcs=len(network.edges), objective=f"{result.objective[-1]:.6g}")
    while changed and rounds < max_rounds:
        rounds += 1
        new_parents, report = _imputed_structure(network, encoded, structure, options)
        moved = sum(len(set(new_parents[v]) ^ set(network.parents[v])) for v in network.variables)
        changed = moved > 0
        if changed:
            key = _structure_key(new_parents)
            earlier = [k for k, (structure_key, _, _) in enumerate(seen) if structure_key == key]
            if earlier:  # a structure seen before: the rounds cycle; keep the cycle's best by observed-data BIC
                network, result = _best_of_cycle(seen[earlier[0]:], encoded.n_rows)
                cycle, changed = len(seen) - earlier[0], False
                history.append(len(network.edges))
                break
            result = fit_em(encoded, new_parents, schema=encoded.schema, pseudocount=pseudocount,
                            warm_start=network)  # the unchanged families continue from this round's CPTs
            network = result.network
            history.append(len(network.edges))
            seen.append((key, network, result))
        if bar is not None:  # the round, how much the structure moved, and the objective
            bar.update(1)
            bar.set_postfix(arcs=len(network.edges), changed=moved, objective=f"{result.objective[-1]:.6g}")
    if bar is not None:
        bar.close()
    if changed:
        warnings.warn(f"Structural EM stopped after {max_rounds} rounds with the structure still changing; the "
                      "last round's network is returned (learning_['arcs_per_round'] shows the rounds).",
                      ConvergenceWarning, stacklevel=3)
    network.learning_ = {"missing": "em", "n_missing_cells": result.n_missing, "sem_rounds": rounds,
                         "sem_converged": not changed, "sem_cycle": cycle, "arcs_per_round": history,
                         "em_iterations": result.n_iter, "em_converged": result.converged,
                         "objective": result.objective[-1], **report}
    return network


def _structure_key(parents: Mapping) -> frozenset:
    """Return the structure ``{child: parents}`` as a hashable value (parent sets, their order ignored)."""
    return frozenset((v, frozenset(ps)) for v, ps in parents.items())


def _exact_parents(provider, options: dict) -> tuple[list, dict]:
    """Validate the exact learner's options and run the dynamic programme; return the parents and a report."""
    variables = provider.variables
    white, black = _lists(options, variables)
    max_parents = options.get("max_parents")
    if max_parents is not None:
        max_parents = check_positive_int(max_parents, "max_parents", minimum=0)
    scorer = make_scorer(provider, structure_score=options["structure_score"],
                         ess=options["ess"], structure_prior=options.get("structure_prior"))
    # Rows for the BDeu / K2 pruning rule, which counts a parent configuration's rows: not distinct rows with weights.
    codes = provider.codes if isinstance(provider, NumpyCounts) and provider.missing == "error" and \
        provider.weights is None else None
    limit = check_positive_int(options["max_local_scores"], "max_local_scores")
    parents, optimum = exact_parents(scorer, len(variables), max_parents=max_parents, whitelist=white,
                                     blacklist=black, codes=codes, progress=bool(options["progress"]),
                                     max_local_scores=limit, prune=getattr(provider, "missing", "error") == "error")
    return parents, {"structure": "exact", "optimum": optimum, "local_scores": scorer.n_evaluations}


def _scorer(provider, options: dict, singles: bool = True):
    """Return the cached scorer of ``provider``; ``singles``: every family of at most one parent scored in one batch."""
    scorer = make_scorer(provider, structure_score=options["structure_score"],
                         ess=options["ess"], structure_prior=options.get("structure_prior"))
    if singles:
        scorer.cache_pairs()
    return scorer


def _structure_parents(provider, structure: str, options: dict) -> tuple[list, dict]:
    """Parent sets (column indices) of a named learner, and what it reports (for ``learning_``)."""
    variables = provider.variables
    if structure == "exact":
        return _exact_parents(provider, options)
    if structure == "hc":
        return _hill_climb_parents(provider, options)
    return _named_parents(provider, structure, options, variables), {}


def _named_parents(provider, structure: str, options: dict, variables) -> list:
    if structure == "chow-liu":
        return chow_liu_parents(provider)
    if structure == "forest":
        return score_forest_parents(_scorer(provider, options, singles=False), len(variables))
    class_index = _class_index(options, variables, structure)
    if structure == "naive-bayes":
        return naive_bayes_parents(len(variables), class_index)
    if structure == "tan":
        return tan_parents(provider, class_index)
    return kdb_parents(provider, class_index, check_positive_int(options["k"], "k", minimum=0))
