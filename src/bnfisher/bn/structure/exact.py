r"""Exact structure learning: the DAG that maximises a decomposable score (Silander & Myllymäki 2006).

The score of a DAG is a sum of local scores ``s(v, Pa(v))``.  The dynamic programme has three
steps, all over subsets represented as integer bit masks:

1. **Local scores** of the candidate parent sets of every variable, level by level (sets of
   size 0, 1, 2, ...), each level of all variables asked of the counts provider at once (one
   pass for a Dask provider).  A set and all its supersets are skipped when no superset can beat
   the best subset already scored: for BIC and AIC the log-likelihood is at most 0 and the
   penalty grows with the parents (de Campos & Ji 2011), so ``-penalty(S) + |S| log c <=
   best(S)`` closes ``S``; for BDeu and K2 a set under which every observed parent
   configuration holds one row gives every superset the same likelihood term, ``-N log r``,
   and no better prior.  Only sets that beat all their subsets are kept.
2. **Best parents within every candidate set** ``C``: ``bps(v, C) = max_{S subset of C} s(v, S)``
   by a subset-maximum transform, one vectorised pass per bit.
3. **Best sinks**: ``best(W) = max_{v in W} best(W \ {v}) + bps(v, W \ {v})`` over all subsets ``W``
   by increasing size; the optimal DAG is read back from the sinks.

Memory is ``n 2^(n-1)`` local maxima (12 bytes each) and ``2^n`` subset values (~30 bytes each); time is
``O(n^2 2^n)`` for the programme plus one local score per candidate set.

References
----------
.. [1] Silander & Myllymäki (2006). A simple approach for finding the globally optimal
   Bayesian network structure. UAI.
.. [2] de Campos & Ji (2011). Efficient structure learning of Bayesian networks using
   constraints. JMLR 12, 663-689.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher.exceptions import OptionError, ResourceError

__all__ = ["exact_parents", "MAX_EXACT_VARIABLES"]

#: Scores within this many nats are ties, decided by order (the lower variable or smaller set first), not by
#: rounding: score-equivalent DAGs differ only in the last bits, and differently in the compiled and NumPy scores.
_TIE = 1e-6

#: The largest number of variables the exact learner accepts (memory grows as n 2^n).
MAX_EXACT_VARIABLES = 25


def _penalty(scorer, child: int, parents: tuple) -> float:
    """``-(upper bound of the score)`` of any set containing ``parents``, for penalised log-likelihood."""
    r = int(scorer.cardinalities[child])
    q = math.prod(int(scorer.cardinalities[p]) for p in parents)
    name = scorer.score_name
    if name == "bic":
        penalty = 0.5 * math.log(max(scorer.n_rows, 1)) * q * (r - 1)
    elif name == "aic":
        penalty = float(q * (r - 1))
    else:
        penalty = 0.0
    return penalty - scorer.log_prior * len(parents)


def _closes(scorer, child: int, parents: tuple, score: float, best_subset: float, data) -> bool:
    """Return True when no superset of ``parents`` can score above ``max(score, best_subset)``."""
    best = max(score, best_subset)
    if scorer.score_name in ("bic", "aic", "ll"):
        return -_penalty(scorer, child, parents) <= best  # log-likelihood <= 0
    # BDeu / K2: once every observed parent configuration holds at most one row, every superset has the
    # same likelihood term and a prior no better.
    if data is None or math.prod(int(scorer.cardinalities[p]) for p in parents) < data.shape[0]:
        return False  # fewer configurations than rows: some configuration holds two rows
    return _all_singletons(data, parents)


def _all_singletons(codes: np.ndarray, parents: tuple) -> bool:
    if not parents:
        return codes.shape[0] <= 1
    _, counts = np.unique(codes[:, list(parents)], axis=0, return_counts=True)
    return bool(counts.max() <= 1)


def exact_parents(scorer, n_vars: int, *, max_parents: int | None = None, whitelist=(), blacklist=(),
                  codes: np.ndarray | None = None, progress: bool = False, max_local_scores: int = 5_000_000,
                  prune: bool = True):
    """Return the parent sets of a DAG with the highest score, and that score.

    Parameters
    ----------
    scorer : LocalScorer or ProviderScorer
        Cached local scores (with the structure prior, if any).
    n_vars : int
    max_parents : int, optional
        Largest parent set considered.
    whitelist, blacklist : sequence of (parent, child) column indices
        Arcs that must / must not be in the DAG.
    codes : ndarray, optional
        The rows (in memory), for the BDeu/K2 pruning rule.
    progress : bool, default=False
        Print the estimate before starting and the progress of each step (stderr).
    max_local_scores : int, default=5_000_000
        Refuse when more local scores than this could be needed.
    prune : bool, default=True
        Skip parent sets that cannot be optimal.  Turn off for available-case
        scores (missing values), where the bounds do not hold.

    Returns
    -------
    parents : list of tuple of int
    score : float

    Raises
    ------
    ResourceError
        Beyond ``MAX_EXACT_VARIABLES`` variables, more than ``max_local_scores`` candidate
        parent sets, or more memory than is available.
    OptionError
        When the whitelist admits no DAG (a cycle, or more required parents than ``max_parents``).
    """
    if n_vars > MAX_EXACT_VARIABLES:
        raise ResourceError(f"Exact structure learning handles at most {MAX_EXACT_VARIABLES} variables (memory "
                            f"grows as n 2^n); the data has {n_vars}. Use structure='hc'.")
    limit = n_vars - 1 if max_parents is None else min(int(max_parents), n_vars - 1)
    required, allowed = _arc_constraints(n_vars, limit, whitelist, blacklist)
    estimate = _local_score_bound(scorer, limit, required, allowed)
    dp_bytes = 12.0 * n_vars * 2.0 ** (n_vars - 1) + 30.0 * 2.0**n_vars
    if estimate > max_local_scores:
        raise ResourceError(f"Exact learning could need up to {estimate:,} local scores (more than "
                            f"max_local_scores={max_local_scores:,}); pass max_parents, or use structure='hc'.")
    check_allocation(dp_bytes, f"Exact learning over {n_vars} variables", "use structure='hc' or fewer variables.")
    started = time.perf_counter()
    if progress:
        print(f"exact: up to {estimate:,} local scores, dynamic programme over 2^{n_vars} subsets "
              f"(~{dp_bytes / 2**20:,.0f} MiB)", file=sys.stderr)
    candidates = _candidate_sets(scorer, n_vars, limit, required, allowed, codes if prune else None, progress, prune)
    if progress:
        kept = sum(len(c) for c in candidates)
        print(f"exact: {scorer.n_evaluations:,} local scores, {kept:,} kept as candidates "
              f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)
    best_parents = [_best_within(candidates[v], v, n_vars) for v in range(n_vars)]
    parents, total = _best_order(best_parents, n_vars)
    if progress:
        print(f"exact: optimum {total:.6g} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return parents, total


def _arc_constraints(n_vars: int, limit: int, whitelist, blacklist) -> tuple:
    """Return each variable's required parents (the whitelist's) and the other parents it may take."""
    black = set(map(tuple, blacklist))
    required = [tuple(sorted(p for p, c in whitelist if c == v)) for v in range(n_vars)]
    for v in range(n_vars):
        if len(required[v]) > limit:
            raise OptionError(f"Variable {v} has {len(required[v])} whitelisted parents, more than "
                              f"max_parents={limit}.")
    allowed = [[u for u in range(n_vars) if u != v and (u, v) not in black and u not in required[v]]
               for v in range(n_vars)]
    return required, allowed


def _local_score_bound(scorer, limit: int, required: list, allowed: list) -> int:
    """Return an upper bound on the local scores, before pruning by scores (BIC/AIC: the a-priori penalty bound)."""
    estimate = 0
    for v in range(len(required)):
        floor = scorer(v, required[v])  # every kept set must beat the required set alone
        by_size = sorted(allowed[v], key=lambda u: int(scorer.cardinalities[u]))
        for k in range(0, limit - len(required[v]) + 1):
            # For BIC/AIC, k more parents cost at least the penalty of the k with the fewest states.
            if k and scorer.score_name in ("bic", "aic") and -_penalty(scorer, v, required[v] + tuple(
                    by_size[:k])) <= floor:
                break
            estimate += math.comb(len(allowed[v]), k)
    return estimate


def _level(scorer, level: int, frontier: list, required: list, allowed: list, penalised: bool) -> list:
    """Return the ``(variable, extra parents, best score of their subsets)`` of one level, and their scores.

    The whole level is scored in one batch (one compiled call, or one pass over distributed data).
    """
    batch = []
    for v, open_sets in enumerate(frontier):
        if level == len(required[v]):
            batch.append((v, (), -math.inf))
        elif level > len(required[v]):
            batch += _grown_sets(scorer, v, open_sets, required[v], allowed[v], penalised)
    if not batch:
        return batch, []
    return batch, scorer.family_scores([(v, tuple(sorted(required[v] + t))) for v, t, _ in batch])


def _penalised(scorer) -> bool:
    """Return whether the score penalises every added parent (BIC, AIC, or a structure prior below 0)."""
    return scorer.score_name in ("bic", "aic") or scorer.log_prior < 0


def _stays_open(scorer, v: int, parents: tuple, value: float, best_subset: float, codes, prune: bool) -> bool:
    """Return whether a set's supersets are still searched (always without pruning)."""
    return not (prune and _closes(scorer, v, parents, value, best_subset, codes))


def _candidate_sets(scorer, n_vars: int, limit: int, required: list, allowed: list, codes, progress: bool,
                    prune: bool) -> list:
    """Per variable, ``[(parent tuple, score)]`` of the sets that beat all their subsets, level by level."""
    # state per variable: open sets of the last level -> best score among the set and its subsets
    frontier = [{(): None} for _ in range(n_vars)]
    penalised = prune and _penalised(scorer)
    kept: list = [[] for _ in range(n_vars)]
    for level in range(limit + 1):
        batch, values = _level(scorer, level, frontier, required, allowed, penalised)
        if not batch:
            break
        frontier = [dict() for _ in range(n_vars)]
        for (v, extra, best_subset), value in zip(batch, values):
            parents = tuple(sorted(required[v] + extra))
            if value > best_subset + _TIE:
                kept[v].append((parents, value))
            if level < limit and _stays_open(scorer, v, parents, value, best_subset, codes, prune):
                frontier[v][extra] = max(value, best_subset)
        if progress:
            print(f"exact: parent sets of size {level}: {len(batch):,} scored", file=sys.stderr)
    return kept


def _grown_sets(scorer, v: int, previous: dict, required: list, allowed: list, penalised: bool) -> list:
    """Return ``(v, set, best subset score)`` of each open set one larger, whose every subset is still open.

    A set is skipped when a subset was closed (so is the set) or, with a penalised score, when its penalty
    alone exceeds what the likelihood could gain (de Campos & Ji).
    """
    batch, seen = [], set()
    for base in previous:
        start = allowed.index(base[-1]) + 1 if base else 0
        for u in allowed[start:]:
            grown = base + (u,)
            if grown in seen:
                continue
            seen.add(grown)
            subsets = [grown[:i] + grown[i + 1:] for i in range(len(grown))]
            if any(s not in previous for s in subsets):
                continue
            best_subset = max(previous[s] for s in subsets)
            if penalised and -_penalty(scorer, v, tuple(sorted(required + grown))) <= best_subset:
                continue
            batch.append((v, grown, best_subset))
    return batch


def _best_within(candidates: list, child: int, n_vars: int):
    """``bps[C]`` and its argmax over every candidate set ``C`` of ``child`` (masks over the other variables)."""
    others = [u for u in range(n_vars) if u != child]
    position = {u: i for i, u in enumerate(others)}
    size = 1 << (n_vars - 1)
    best = np.full(size, -np.inf)
    which = np.full(size, -1, dtype=np.int32)  # index into candidates
    for index, (parents, value) in enumerate(candidates):
        mask = sum(1 << position[p] for p in parents)
        if value > best[mask]:
            best[mask], which[mask] = value, index
    for bit in range(n_vars - 1):  # subset-maximum transform: bps(C) = max(bps(C), bps(C \ {bit}))
        view_best = best.reshape(-1, 2, 1 << bit)
        view_which = which.reshape(-1, 2, 1 << bit)
        better = view_best[:, 0, :] > view_best[:, 1, :] + _TIE
        view_best[:, 1, :] = np.where(better, view_best[:, 0, :], view_best[:, 1, :])
        view_which[:, 1, :] = np.where(better, view_which[:, 0, :], view_which[:, 1, :])
    return best, which, candidates


def _best_order(best_parents: list, n_vars: int):
    """Best sink of every subset (by increasing size), then the DAG read back from the full set."""
    size = 1 << n_vars
    masks = np.arange(size, dtype=np.int32 if n_vars < 31 else np.int64)
    popcount = np.zeros(size, dtype=np.int8)
    for bit in range(n_vars):
        popcount += ((masks >> bit) & 1).astype(np.int8)
    order = np.argsort(popcount, kind="stable")
    bounds = np.searchsorted(popcount[order], np.arange(n_vars + 2))
    best = np.full(size, -np.inf)
    best[0] = 0.0
    sink = np.full(size, -1, dtype=np.int8)
    for layer in range(1, n_vars + 1):
        W = order[bounds[layer] : bounds[layer + 1]]
        layer_best = np.full(W.size, -np.inf)
        layer_sink = np.full(W.size, -1, dtype=np.int8)
        for v in range(n_vars):
            has = ((W >> v) & 1).astype(bool)
            rest = W[has] ^ (1 << v)
            compressed = (rest & ((1 << v) - 1)) | ((rest >> (v + 1)) << v)
            value = best[rest] + best_parents[v][0][compressed]
            target = np.flatnonzero(has)
            better = value > layer_best[target] + _TIE
            layer_best[target[better]] = value[better]
            layer_sink[target[better]] = v
        best[W], sink[W] = layer_best, layer_sink
    full = size - 1
    if not np.isfinite(best[full]):
        raise OptionError("No DAG satisfies the whitelist and blacklist (a cycle, or too many required parents).")
    parents: list = [()] * n_vars
    W = full
    while W:
        v = int(sink[W])
        rest = W ^ (1 << v)
        compressed = (rest & ((1 << v) - 1)) | ((rest >> (v + 1)) << v)
        _, which, candidates = best_parents[v]
        parents[v] = tuple(candidates[int(which[compressed])][0])
        W = rest
    return parents, float(best[full])

