r"""Say what differs and why: per-family attribution of the MMD, top cells, witness values.

With the exact feature map, the squared MMD of eq. 10 is a sum over families (a
variable with its parents) and, inside a family, over parent configurations:

.. math::

    \mathrm{MMD}^2(X, Y) = \|\mu_X - \mu_Y\|^2
        = \sum_i \sum_j \|\mu_{X,ij} - \mu_{Y,ij}\|^2 ,

so every family's contribution is exact (the contributions sum to ``kernel.mmd``)
and says *where the distance lies*.  It does not say *what changed*: a family
whose parents shifted keeps a share although its conditional did not move, and
under no change at all a family's expected share grows with its number of
parameters.  The family table therefore also carries, per family, the exact
conditional test of :mod:`bnfisher.comparison.attribution` (null: "P(child |
parents) is the same in both samples"), its null-centred excess, and Holm's
adjustment over the families; ``share`` and the ranking come from those.

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103.
.. [2] Holm (1979). A simple sequentially rejective multiple test procedure.
   Scandinavian Journal of Statistics 6, 65-70.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_random_state
from bnfisher.bn.inference.evidence import expected_counts
from bnfisher.comparison.attribution import FamilyTests, conditional_family_tests, holm
from bnfisher.comparison.permutation import PermutationStatistics, permutation_statistics
from bnfisher.data.providers import in_memory
from bnfisher.data.rows import DistinctRows
from bnfisher.exceptions import DataError
from bnfisher.kernels.base import FamilyKernel

__all__ = ["mmd_by_family", "family_table", "family_profiles", "top_cells", "witness", "explain_rows", "sample_codes"]

#: What ``p_adjusted`` controls, stated once and shown by every report.
ADJUSTMENT = ("Holm's step-down adjustment over the families: strong family-wise error control (the chance that "
              "any family whose conditional did not change is flagged is at most alpha, whatever else changed, "
              "under any dependence between the tests)")


def sample_codes(kernel: FamilyKernel, data, *, max_rows: int = 10_000_000) -> tuple:
    """Return a sample as ``(codes, copies)``: its rows encoded in the network's order, and their multiplicities.

    In-memory data gives every row once; data beyond memory (a Dask DataFrame or a
    path) gives its distinct rows and their counts from one distributed group-by.

    Parameters
    ----------
    kernel : FamilyKernel
    data : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
    max_rows : int, default=10_000_000
        The most distinct rows to bring into memory.

    Returns
    -------
    tuple of (ndarray of int, ndarray of float)
    """
    if in_memory(data):
        codes = kernel.encode(data).codes
        return codes, np.ones(codes.shape[0])
    rows, _ = DistinctRows.from_provider(kernel.provider(data), max_rows=max_rows, random_state=0)
    return kernel.encode(rows.encoded).codes, rows.copies.astype(np.float64)


def mmd_by_family(kernel: FamilyKernel, X, Y, *, n_permutations: int = 1000, family_permutations: int | None = None,
                  random_state=None) -> pd.DataFrame:
    """Split the MMD of two samples over the network's families, and test each family's conditional for a change.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
        Without ``normalize``.
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The two samples (rows with missing values use expected count tables for
        ``mmd2``; each family's test uses the rows observed on the family).
    n_permutations : int, default=1000
        Permutations of the MMD split (the same as :func:`bnfisher.comparison.mmd_test`
        with the same ``random_state``).
    family_permutations : int, optional
        Within-configuration permutations of the families' tests; default
        :func:`~bnfisher.comparison.attribution.default_permutations` (enough for Holm's
        adjustment to reach 5%).
    random_state : None, int or Generator

    Returns
    -------
    DataFrame
        As :func:`family_table`.

    Raises
    ------
    OptionError, DataError
        As :func:`~bnfisher.comparison.permutation_statistics`.

    Examples
    --------
    >>> data = load("nursery")
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> table = mmd_by_family(kernel, data.iloc[::2], data.iloc[1::2], n_permutations=20, random_state=0)
    >>> bool(abs(table["mmd2"].sum() - kernel.mmd(data.iloc[::2], data.iloc[1::2])) < 1e-12)
    True
    """
    rng = check_random_state(random_state)
    outcome = permutation_statistics(kernel, X, Y, n_permutations=n_permutations, random_state=rng)
    tests = conditional_family_tests(kernel.network, sample_codes(kernel, X), sample_codes(kernel, Y),
                                     n_permutations=family_permutations, random_state=rng)
    return family_table(kernel, outcome, tests)


#: The family table's order, stated once: found changed (adjusted p <= alpha) first, by share (largest first); then
#: by p-value; then by the excess in null standard deviations.
FAMILY_ORDER = ("found changed", "share, largest first", "p_value", "excess in null standard deviations")


def family_table(kernel: FamilyKernel, outcome: PermutationStatistics, tests: FamilyTests, *,
                 alpha: float = 0.05) -> pd.DataFrame:
    """Return the per-family table from the MMD's permutation statistics and the conditional tests.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    outcome : PermutationStatistics
        From :func:`bnfisher.comparison.permutation_statistics`; the same object gives the test
        (:meth:`bnfisher.comparison.TwoSampleResult.from_statistics`), so its permutations run once.
    tests : FamilyTests
        From :func:`bnfisher.comparison.attribution.conditional_family_tests` on the same samples.
    alpha : float, default=0.05
        Families with ``p_adjusted <= alpha`` are the changes found (they get a ``share``).

    Returns
    -------
    DataFrame
        One row per variable with a free parameter: ``variable``, ``parents``;
        ``share`` (for a family found changed, its part of the summed ``excess`` of
        the families found changed; 0 for the others, so under no change every
        share is 0 with probability ``>= 1 - alpha``, whatever the families' sizes); ``excess``
        (the conditional statistic minus its permutation mean, centred at 0 when the
        conditional did not change, whatever the family's size); ``mmd2`` (the
        family's exact part of the MMD², eq. 10: the column sums to
        ``kernel.mmd(X, Y)``; it includes echoes of shifts in the parents);
        ``p_value`` (the exact test of "P(variable | parents) is the same in both
        samples") and ``p_adjusted`` (Holm, see :data:`ADJUSTMENT`).  Sorted by
        :data:`FAMILY_ORDER`: the families found changed first, largest ``share`` first (the
        first row is the clearest change), then the others by ``p_value`` and by the excess
        in null standard deviations.  ``table.attrs["p_floor"]`` is the smallest p-value the
        permutations can give, ``1 / (n_permutations + 1)``: a ``p_value`` there means
        "at most this".

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.comparison import conditional_family_tests, family_table, permutation_statistics
    >>> outcome = permutation_statistics(kernel, A, B, n_permutations=99, random_state=0)
    >>> import numpy as np
    >>> X = (network.encode(A).codes, np.ones(len(A)))
    >>> Y = (network.encode(B).codes, np.ones(len(B)))
    >>> tests = conditional_family_tests(network, X, Y, n_permutations=99, random_state=0)
    >>> table = family_table(kernel, outcome, tests)
    >>> len(table)
    9
    """
    network = kernel.network
    mmd2 = dict(zip(outcome.families, outcome.observed))
    excess = tests.excess
    adjusted = holm(tests.p_value)
    positive = np.where(adjusted <= alpha, np.maximum(excess, 0.0), 0.0)
    total = float(positive.sum())
    rows = []
    for k, i in enumerate(tests.families):
        parents = [network.variables[p] for p in kernel.families[i][:-1]]
        rows.append({"variable": network.variables[i], "parents": ", ".join(map(str, parents)) or "-",
                     "share": float(positive[k] / total) if total > 0 else 0.0, "excess": float(excess[k]),
                     "mmd2": float(mmd2.get(i, 0.0)), "p_value": float(tests.p_value[k]),
                     "p_adjusted": float(adjusted[k]), "_z": float(tests.z[k])})
    columns = ["variable", "parents", "share", "excess", "mmd2", "p_value", "p_adjusted"]
    table = pd.DataFrame(rows, columns=columns + ["_z"]).assign(_found=lambda t: t["p_adjusted"] <= alpha)
    table = table.sort_values(["_found", "share", "p_value", "_z"], ascending=[False, False, True, False],
                              kind="stable")[columns].reset_index(drop=True)
    table.attrs["p_floor"] = 1.0 / (tests.n_permutations + 1)
    return table


def top_cells(kernel: FamilyKernel, X, Y, *, n: int = 10, names: tuple = ("X", "Y")) -> pd.DataFrame:
    """Return the parent configurations that contribute most to the MMD, in the user's labels.

    Within family ``i``, configuration ``j`` contributes ``||mu_X,ij - mu_Y,ij||^2``;
    for each of the largest, the child state whose share differs most is named, with
    the percentage of each sample's rows in that cell.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    X, Y : DataFrame, ndarray of int or EncodedData
    n : int, default=10
    names : tuple of str, default=("X", "Y")
        How the sentence in ``text`` names the two samples.

    Returns
    -------
    DataFrame
        ``variable``, ``given`` (the parent configuration as text), ``mmd2``, ``share``,
        ``state``, ``percent_X`` and ``percent_Y`` (rows of each sample in that
        configuration with that state), ``text`` (a sentence), largest first.

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.comparison import top_cells
    >>> cells = top_cells(kernel, A, B, n=3, names=("even", "odd"))
    >>> len(cells)
    3
    """
    tables = []
    for data in (X, Y):
        encoded = kernel.encode(data)
        tables.append((expected_counts(kernel.network, encoded.codes, list(kernel.families)), encoded.n_rows))
    return cells_from_counts(kernel, *tables, n=n, names=names)


def cells_from_counts(kernel: FamilyKernel, X: tuple, Y: tuple, *, n: int = 10,
                      names: tuple = ("X", "Y")) -> pd.DataFrame:
    """:func:`top_cells` from the two samples' family count tables (inner code: computed once, by the test).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    X, Y : tuple of (list, int)
        Each sample's count table of every family (expected counts where values are
        missing; None for a family without features) and its number of rows.
    n : int, default=10
    names : tuple of str, default=("X", "Y")

    Returns
    -------
    DataFrame
        As :func:`top_cells`.
    """
    network = kernel.network
    cards = network.cardinalities
    (counts_x, n_x), (counts_y, n_y) = X, Y
    difference = kernel.mean_embedding_from_counts(counts_x, n_x) - kernel.mean_embedding_from_counts(counts_y, n_y)
    total = float(difference @ difference)
    rows = []
    for i, family in enumerate(kernel.families):
        d = kernel.block_width(i)
        if d == 0:
            continue
        r = int(cards[i])
        block = difference[kernel.block_offsets[i]:kernel.block_offsets[i + 1]].reshape(-1, d)
        contribution = (block**2).sum(axis=1)
        share_x = np.asarray(counts_x[i], dtype=float).reshape(-1, r) / n_x
        share_y = np.asarray(counts_y[i], dtype=float).reshape(-1, r) / n_y
        parent_cards = [int(cards[p]) for p in family[:-1]]
        for j in np.argsort(-contribution)[:n]:
            if contribution[j] <= 0:
                continue
            state = int(np.argmax(np.abs(share_x[j] - share_y[j])))
            position = np.unravel_index(j, parent_cards) if parent_cards else ()
            given = " & ".join(f"{network.variables[p]} = {network.states[network.variables[p]][k]}"
                               for p, k in zip(family[:-1], position))
            variable = network.variables[i]
            label = network.states[variable][state]
            percent_x, percent_y = 100 * share_x[j, state], 100 * share_y[j, state]
            text = f"{variable} = {label}" + (f" | {given}" if given else "") + \
                f": {percent_x:.1f}% of {names[0]}, {percent_y:.1f}% of {names[1]}"
            rows.append({"variable": variable, "given": given or "-", "mmd2": float(contribution[j]),
                         "share": float(contribution[j] / total) if total > 0 else 0.0, "state": label,
                         "percent_X": percent_x, "percent_Y": percent_y, "text": text})
    table = pd.DataFrame(rows, columns=["variable", "given", "mmd2", "share", "state", "percent_X", "percent_Y",
                                        "text"])
    return table.sort_values("mmd2", ascending=False, kind="stable").head(n).reset_index(drop=True)


def witness(kernel: FamilyKernel, X, Y, rows) -> np.ndarray:
    """Return the witness ``f(x) = <Phi(x), mu_X - mu_Y>`` of each row: positive where ``X`` is more typical.

    ``f(x)`` equals ``mean_l K(x, x_l) - mean_m K(x, y_m)`` (the kernel mean
    difference), computed in ``O(n)`` per row from the exact feature map.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    X, Y : DataFrame, ndarray of int, EncodedData, Dask DataFrame or path
        The two samples.
    rows : DataFrame, ndarray of int or EncodedData
        The rows to score (often ``X`` and ``Y`` themselves).

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> kernel = bf.FisherKernel(network)
    >>> A, B = data.iloc[::2], data.iloc[1::2]
    >>> from bnfisher.comparison import witness
    >>> values = witness(kernel, A, B, A.iloc[:5])
    >>> values.shape
    (5,)
    """
    difference = kernel.mean_embedding(X) - kernel.mean_embedding(Y)
    return np.asarray(kernel.embed(rows) @ difference).ravel()


def explain_rows(kernel: FamilyKernel, rows) -> pd.DataFrame:
    """Return which variable, given which parents, makes each row unusual under the network.

    Per row and family: the family's share of ``K(x, x)`` (its squared feature norm:
    large where the row's cell is rare given its parents) and of ``-log P(x)``
    (``-log theta`` of the row's cell).  For a row with missing values both are
    expectations under the posterior of the missing values given the observed ones
    (``K(x, x)`` then uses the expected feature map, whose blocks are still one per
    family).

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    rows : DataFrame, ndarray of int or EncodedData

    Returns
    -------
    DataFrame
        Long form: ``row``, ``variable``, ``value`` (the row's label, or ``None`` when
        missing), ``given`` (its parents' values), ``kernel_self`` and ``neg_log_p``;
        within each row, largest ``neg_log_p`` first.  ``kernel_self`` sums over a row's
        families to ``kernel.diag(row)`` and ``neg_log_p`` (complete rows) to
        ``-network.log_likelihood(row)``.  Every value is finite.

    Raises
    ------
    DataError
        For a row in a cell the network gives probability 0 (naming the row and the fix).

    Examples
    --------
    >>> data = load("nursery")
    >>> kernel = bf.FisherKernel(bf.learn(data))
    >>> table = explain_rows(kernel, data.iloc[:2])
    >>> bool(abs(table[table.row == 0].kernel_self.sum() - kernel.diag(data.iloc[:1])[0]) < 1e-9)
    True
    """
    import scipy.sparse as sp

    network = kernel.network
    encoded = kernel.encode(rows)
    n_rows = encoded.n_rows
    embedding = kernel.embed(encoded)
    owner = np.repeat(np.arange(len(kernel.families)), np.diff(kernel.block_offsets))
    to_family = sp.csr_matrix((np.ones(owner.size), (np.arange(owner.size), owner)),
                              shape=(owner.size, len(kernel.families)))
    kernel_self = np.asarray((embedding.multiply(embedding) @ to_family).todense())
    neg_log_p = np.zeros((n_rows, len(kernel.families)))
    for i, (positions, cells, weights) in enumerate(kernel.cell_weights(encoded)):
        theta = np.asarray(network.cpts[network.variables[i]], dtype=float).reshape(-1)[cells]
        impossible = (theta <= 0) & (weights > 0)
        if impossible.any():  # -log 0: no finite explanation (and no finite Fisher feature) exists
            row = int(positions[np.flatnonzero(impossible)[0]])
            raise DataError(f"Row {row} falls in a cell of {network.variables[i]!r} that the network gives "
                            "probability 0, so it has no finite explanation; refit the network with a pseudocount "
                            "(learn(..., pseudocount=1)) or leave the row out.")
        surprise = np.zeros_like(theta)
        np.negative(np.log(theta, out=surprise, where=weights > 0), out=surprise, where=weights > 0)
        neg_log_p[:, i] = np.bincount(positions, weights=weights * surprise, minlength=n_rows)
    records = []
    for row in range(n_rows):
        for i, family in enumerate(kernel.families):
            variable = network.variables[i]
            code = encoded.codes[row, i]
            given = ", ".join(
                f"{network.variables[p]} = "
                f"{network.states[network.variables[p]][encoded.codes[row, p]] if encoded.codes[row, p] >= 0 else '?'}"
                for p in family[:-1])
            records.append({"row": row, "variable": variable,
                            "value": network.states[variable][code] if code >= 0 else None, "given": given or "-",
                            "kernel_self": float(kernel_self[row, i]), "neg_log_p": float(neg_log_p[row, i])})
    table = pd.DataFrame(records, columns=["row", "variable", "value", "given", "kernel_self", "neg_log_p"])
    return table.sort_values(["row", "neg_log_p"], ascending=[True, False], kind="stable").reset_index(drop=True)


def family_profiles(kernel: FamilyKernel, counts: tuple, families: pd.DataFrame, top: int) -> list:
    """Return, for each of the ``top`` families, the child's distribution in A and in B where they differ most.

    "Where": the parent configuration with the largest total-variation distance between the two,
    weighted by how often the configuration occurs; this is what a comparison report draws inline.

    Parameters
    ----------
    kernel : FisherKernel or OverlapKernel
    counts : tuple of two (list of ndarray, int)
        Each sample's count table of every family and its rows
        (:class:`~bnfisher.comparison.SampleStatistics`' ``counts`` and ``n`` of each sample).
    families : DataFrame
        :func:`family_table`, in its order.
    top : int

    Returns
    -------
    list of dict
        ``variable``, ``given`` (the parent configuration), ``states`` and each sample's distribution.
    """
    (counts_a, n_a), (counts_b, n_b) = counts
    network = kernel.network
    position = {v: i for i, v in enumerate(network.variables)}
    out = []
    for variable in families["variable"].head(top):
        i = position[variable]
        states = network.states[variable]
        r = len(states)
        a = np.asarray(counts_a[i], dtype=np.float64).reshape(-1, r)
        b = np.asarray(counts_b[i], dtype=np.float64).reshape(-1, r)
        with np.errstate(invalid="ignore", divide="ignore"):  # configurations one side never shows
            p_a = np.nan_to_num(a / a.sum(axis=1, keepdims=True))
            p_b = np.nan_to_num(b / b.sum(axis=1, keepdims=True))
        weight = a.sum(axis=1) / max(n_a, 1) + b.sum(axis=1) / max(n_b, 1)
        j = int(np.argmax(weight * np.abs(p_a - p_b).sum(axis=1)))
        parents = network.parents[variable]
        config = np.unravel_index(j, [len(network.states[p]) for p in parents]) if parents else ()
        out.append({"variable": str(variable), "given": {str(p): str(network.states[p][k])
                                                           for p, k in zip(parents, config)},
                    "states": [str(x) for x in states], "A": p_a[j].tolist(), "B": p_b[j].tolist()})
    return out
