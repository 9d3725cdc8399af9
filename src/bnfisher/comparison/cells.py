"""The cell of a changed mechanism: the parent configuration and the state whose frequency moved most.

A change of one row of a CPT is most concentrated given the variable's true parents; the
mechanism search (:mod:`bnfisher.comparison.mechanisms`) names the clearest flagged variable's
cell with :func:`cell_search` over the columns of the sets it tried, and :func:`changed_cell`
scores one conditioning set.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CELL_SD", "SPLIT_NULL", "SPLIT_Z", "cell_search", "changed_cell"]


def changed_cell(cardinalities, X, Y, child: int, given) -> dict:
    """Return the cell of ``child`` given ``given`` whose conditional frequency differs most between the samples.

    The configuration ``j`` is the one with the largest Pearson chi-square statistic of its
    2 x (states) table, ``sum_a (p^X_a|j - p^Y_a|j)^2 / theta_a|j * N^X_j N^Y_j / (N^X_j + N^Y_j)``
    (a difference weighed by how many rows of each sample show the configuration); the
    state is the one whose conditional frequency moved most there (the first of ties).

    Parameters
    ----------
    cardinalities : sequence of int
    X, Y : tuple of (ndarray of int, ndarray)
        Codes and copies of each sample's rows.
    child : int
    given : sequence of int
        The conditioning columns.

    Returns
    -------
    dict
        ``configuration`` (codes of ``given``), ``state`` (code), ``percent_X`` and
        ``percent_Y`` (of each sample's rows in the configuration), ``rows_X`` and ``rows_Y``
        (those rows), ``counts_X`` and ``counts_Y`` (those rows' child states, a tuple of
        weighted counts each), ``chi2`` (the configuration's statistic).

    Examples
    --------
    >>> import numpy as np
    >>> X = (np.array([[0, 0], [0, 1], [1, 1]]), np.array([5.0, 5.0, 10.0]))
    >>> Y = (np.array([[0, 0], [0, 1], [1, 1]]), np.array([9.0, 1.0, 10.0]))
    >>> cell = changed_cell([2, 2], X, Y, 1, [0])
    >>> cell["configuration"], cell["state"], cell["percent_X"], cell["percent_Y"]
    ((0,), 0, 50.0, 90.0)
    """
    columns = list(given) + [child]
    shape = [int(cardinalities[c]) for c in columns]
    tables = []
    for codes, copies in (X, Y):
        observed = np.all(codes[:, columns] >= 0, axis=1)
        index = np.ravel_multi_index(codes[observed][:, columns].T, shape)
        tables.append(np.bincount(index, weights=np.asarray(copies, dtype=np.float64)[observed],
                                  minlength=int(np.prod(shape))).reshape(-1, shape[-1]))
    count_x, count_y = tables
    rows_x, rows_y = count_x.sum(axis=1, keepdims=True), count_y.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_x, p_y = count_x / rows_x, count_y / rows_y
        theta = (count_x + count_y) / (rows_x + rows_y)
        term = np.nan_to_num((p_x - p_y) ** 2 / theta * (rows_x * rows_y / (rows_x + rows_y)))
    j = int(np.argmax(term.sum(axis=1)))
    a = int(np.argmax(np.abs(np.nan_to_num(p_x[j] - p_y[j]))))
    configuration = tuple(int(k) for k in np.unravel_index(j, shape[:-1])) if given else ()
    return {"configuration": configuration, "state": int(a), "percent_X": float(100 * np.nan_to_num(p_x[j, a])),
            "percent_Y": float(100 * np.nan_to_num(p_y[j, a])), "rows_X": float(rows_x[j, 0]),
            "rows_Y": float(rows_y[j, 0]), "counts_X": tuple(float(c) for c in count_x[j]),
            "counts_Y": tuple(float(c) for c in count_y[j]), "chi2": float(term[j].sum())}


#: A cell's condition is added (kept) when it raises the chi-square by more than this many standard deviations.
CELL_SD = 2.0

#: Or when the rows it splits off are unchanged: their change in the cell's state within this many standard errors
#: of none, ...
SPLIT_NULL = 2.0
#: ... while it differs from the kept rows' by more than this many, and the split-off rows, had they moved as the
#: kept ones did (in proportion to the state's share in them), would have shown it by more than this many.
SPLIT_Z = 3.0


def _best_margin(options: list, margin) -> dict | None:
    """Return the option of largest positive ``margin(option)``, or None when none is positive."""
    margins = [margin(option) for option in options]
    if not options or max(margins) <= 0:
        return None
    return options[int(np.argmax(margins))]


def _pruned(current: dict, chi2, margin) -> dict:
    """Return the cell with conditions dropped, one at a time, while a smaller cell keeps the change."""
    while current["given"]:
        smaller = [chi2([u for u in current["given"] if u != w]) for w in current["given"]]
        margins = [margin(cell, current) for cell in smaller]
        if min(margins) > 0:
            break
        current = smaller[int(np.argmin(margins))]
    return current


def cell_search(cardinalities, X, Y, child: int, pool, *, most: int = 6, wider=()) -> dict:
    """Return the smallest conditioning set, from ``pool``, that concentrates ``child``'s change, and its cell.

    A change of one row of a CPT is most concentrated given the true parents: a set
    lacking a parent mixes the changed configuration with unchanged ones (its chi-square,
    :func:`changed_cell`, is smaller by the unchanged rows' share), a set with a needless
    variable splits the changed configuration (its chi-square is smaller by the split-off
    share).  Forward: add the column of ``pool`` whose gain in chi-square most exceeds
    :data:`CELL_SD` (two) standard deviations of what the rows split off carry (while one
    does), ``2 sqrt(2 (k + 2 x))`` with ``x = chi2 (1 - s)`` for a share ``s`` of the coarser
    configuration's rows kept and ``k`` child states (a non-central chi-square's spread,
    for the part of the statistic the split can move), or, when none does, the column whose
    split-off rows are shown unchanged (:func:`_split_margin`: near a saturated difference
    the chi-square grows with the rows more than with the concentration, so a parent whose
    planted value holds most of the rows adds little to it); backward: drop the column
    whose removal costs least below either margin, while one does.

    Parameters
    ----------
    cardinalities : sequence of int
    X, Y : tuple of (ndarray of int, ndarray)
        Codes and copies of each sample's rows.
    child : int
    pool : iterable of int
        The columns a condition may use first (the variable's neighbours in the search's graph).
    most : int, default=6
        The most columns in the set.
    wider : iterable of int, default=()
        Columns a forward step may use only when none of ``pool`` adds to the cell (the other
        columns of the sets searched: a neighbour's neighbour that is a child of two parents
        concentrates their configuration as well as they do, and would be named as their proxy).

    Returns
    -------
    dict
        :func:`changed_cell`'s, with ``given`` (the set's columns, in the order of the
        configuration).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> codes = rng.integers(0, 2, size=(4000, 4))          # column 3 moves where columns 0 and 1 are both 1
    >>> moved = codes.copy()
    >>> where = (codes[:2000, 0] == 1) & (codes[:2000, 1] == 1)
    >>> moved[:2000][where, 3] = (rng.random(where.sum()) < 0.9)
    >>> cell = cell_search([2, 2, 2, 2], (codes[2000:], np.ones(2000)), (moved[:2000], np.ones(2000)), 3, [0, 1, 2])
    >>> cell["given"], cell["configuration"], cell["state"]
    ((0, 1), (1, 1), 0)
    """
    def chi2(given) -> dict:
        return dict(changed_cell(cardinalities, X, Y, child, given), given=tuple(given))

    def tolerance(coarse: dict, fine: dict) -> float:
        kept = min(1.0, (fine["rows_X"] + fine["rows_Y"]) / max(coarse["rows_X"] + coarse["rows_Y"], 1e-12))
        return CELL_SD * float(np.sqrt(2.0 * (int(cardinalities[child]) + 2.0 * coarse["chi2"] * (1.0 - kept))))

    def gain(coarse: dict, fine: dict) -> float:
        return fine["chi2"] - coarse["chi2"] - tolerance(coarse, fine)

    current = chi2(())
    tiers = [sorted(set(int(u) for u in pool) - {int(child)})]
    tiers.append(sorted(set(tiers[0]) | set(int(u) for u in wider) - {int(child)}))
    while len(current["given"]) < most:
        grown = None
        for columns in tiers:
            options = [chi2(sorted(current["given"] + (u,))) for u in columns if u not in current["given"]]
            grown = (_best_margin(options, lambda fine, coarse=current: gain(coarse, fine))
                     or _best_margin(options, lambda fine, coarse=current: _split_margin(coarse, fine)))
            if grown is not None:
                break
        if grown is None:
            break
        current = grown
    return _pruned(current, chi2, lambda coarse, fine: max(gain(coarse, fine), _split_margin(coarse, fine)))


def _shift(count_x: np.ndarray, count_y: np.ndarray, state: int) -> tuple:
    """Return ``state``'s frequency difference between the samples, its variance under no change, its pooled share.

    The variance is ``inf`` when a sample has no row.
    """
    n_x, n_y = count_x.sum(), count_y.sum()
    if n_x <= 0 or n_y <= 0:
        return 0.0, np.inf, 0.0
    pooled = (count_x[state] + count_y[state]) / (n_x + n_y)
    variance = max(pooled * (1.0 - pooled), 1e-12) * (1.0 / n_x + 1.0 / n_y)
    return count_x[state] / n_x - count_y[state] / n_y, variance, pooled


def _split_margin(coarse: dict, fine: dict) -> float:
    """Return how clearly ``fine`` keeps the changed rows of ``coarse`` and splits off unchanged ones (> 0: clearly).

    In ``fine``'s state, the kept rows (``fine``'s configuration) and the rows split off (the
    rest of ``coarse``'s configuration) each shift between the samples by ``d_k`` and
    ``d_s``, with standard errors ``e_k`` and ``e_s`` under no change.  The margin is the
    least of ``SPLIT_NULL - |d_s| / e_s`` (the split-off rows show no change),
    ``|d_k - d_s| / sqrt(e_k^2 + e_s^2) - SPLIT_Z`` (the two parts differ), and
    ``|d_k| min(1, q_s / q_k) / e_s - SPLIT_Z`` (the split-off rows would have shown a
    shift like the kept rows', scaled by the state's pooled share ``q`` in each: rows that
    hardly take the state, like a child's value that fixes the variable, cannot show its
    change).  A finer cell elsewhere than ``coarse``'s configuration has margin -1.  Both are
    :func:`changed_cell`'s results: the parts are their counts and the difference of them.
    """
    inherited = dict(zip(fine["given"], fine["configuration"]))
    if any(inherited[u] != k for u, k in zip(coarse["given"], coarse["configuration"])):
        return -1.0
    state = fine["state"]
    kept = [np.asarray(fine[key]) for key in ("counts_X", "counts_Y")]
    whole = [np.asarray(coarse[key]) for key in ("counts_X", "counts_Y")]
    d_k, v_k, q_k = _shift(kept[0], kept[1], state)
    d_s, v_s, q_s = _shift(whole[0] - kept[0], whole[1] - kept[1], state)
    if not (np.isfinite(v_k) and np.isfinite(v_s)):
        return -1.0
    shown = abs(d_k) * min(1.0, q_s / max(q_k, 1e-12)) / np.sqrt(v_s)
    return float(min(SPLIT_NULL - abs(d_s) / np.sqrt(v_s), abs(d_k - d_s) / np.sqrt(v_k + v_s) - SPLIT_Z,
                     shown - SPLIT_Z))
