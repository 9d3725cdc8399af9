"""When the two-sample p-value is exact, and what to do when it is not.

A permutation p-value is exact when the statistic treats every re-split of the
pooled rows alike.  The Fisher kernel depends on a network: learned on the two
samples pooled, given in advance, or learned on other data, it is the same for
every re-split and the test is exact.  Fitted to one sample alone, it fits that
sample better than any re-split of the pool, the observed MMD² is inflated and
the test rejects too often under the null (bnfisher measures its size in
``benchmarks/validity.py``).  :func:`fitted_on_one_sample` recognises a network
whose CPTs are exactly those of one sample (the common case of ``learn`` on one
table, then ``compare --network``); a network fitted to a *part* of one sample,
or with an unusual pseudocount, cannot be recognised this way.  The remedy
is :func:`reference_split`: fit on one part of the reference sample, and test
the other part against the second sample.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.validation import check_random_state
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.counts import count_block
from bnfisher.exceptions import OptionError

__all__ = ["fitted_on_one_sample", "one_sample_warning", "reference_split"]

#: Pseudocounts tried when matching a network's CPTs to one sample's counts.
_PSEUDOCOUNTS = (0.0, 0.5, 1.0)


def _tables(network: BayesianNetwork, codes: np.ndarray) -> list | None:
    """Every family's count table over the complete rows of ``codes`` (None when no row is complete)."""
    complete = codes.min(axis=1) >= 0 if codes.shape[1] else np.ones(codes.shape[0], dtype=bool)
    if not complete.any():
        return None
    if not complete.all():
        codes = codes[complete]
    families = [list(parents) + [i] for i, parents in enumerate(network.parent_indices())]
    return [table.astype(np.float64) for table in count_block(codes, families, network.cardinalities, n_jobs=-1)]


def _matches(network: BayesianNetwork, tables: list | None, alpha: float) -> bool:
    """Whether every CPT equals ``(N + alpha) / (N_j + r alpha)`` of the count ``tables``, cells seen."""
    if tables is None:
        return False
    for i, table in enumerate(tables):
        r = int(network.cardinalities[i])
        counts = table.reshape(-1, r)
        theta = np.asarray(network.cpts[network.variables[i]], dtype=np.float64).reshape(-1, r)
        seen = counts.sum(axis=1) > 0
        expected = (counts[seen] + alpha) / (counts[seen].sum(axis=1, keepdims=True) + r * alpha)
        if not np.allclose(theta[seen], expected, rtol=1e-9, atol=1e-12):
            return False
    return True


def fitted_on_one_sample(network: BayesianNetwork, first: np.ndarray, second: np.ndarray) -> int | None:
    """Return 0 or 1 when the network's CPTs are exactly those fitted on that sample alone, else None.

    Parameters
    ----------
    network : BayesianNetwork
    first, second : ndarray of int
        The two samples' codes in ``network.variables`` order (``-1`` where missing).

    Returns
    -------
    int or None
        The sample the CPTs were fitted on (with pseudocount 0, 0.5 or 1, or the one
        recorded in ``network.learning_``) when they match it and not the pool.

    Examples
    --------
    >>> data = load("nursery")
    >>> A, B = data.iloc[:500], data.iloc[500:1000]
    >>> net = bf.learn(A)
    >>> fitted_on_one_sample(net, net.encode(A).codes, net.encode(B).codes)
    0
    """
    recorded = getattr(network, "learning_", None) or {}
    candidates = tuple(dict.fromkeys([float(recorded["pseudocount"])] if "pseudocount" in recorded else [])) \
        + _PSEUDOCOUNTS
    # The pool's tables are the sum of the samples': no pooled copy of the rows.
    samples = [_tables(network, codes) for codes in (first, second)]
    present = [tables for tables in samples if tables is not None]
    pool = [sum(parts) for parts in zip(*present)] if present else None
    for alpha in candidates:
        if _matches(network, pool, alpha):
            return None
        for k, tables in enumerate(samples):
            if _matches(network, tables, alpha):
                return k
    return None


def one_sample_warning(sample: int, names: tuple = ("X", "Y")) -> str:
    """Return the warning for a network fitted on one sample alone (``sample`` 0 or 1), naming the samples.

    Parameters
    ----------
    sample : int
    names : tuple of str, default=("X", "Y")

    Returns
    -------
    str
    """
    return (f"The network's CPTs are exactly those fitted on {names[sample]} alone: the kernel favours that sample, "
            "so the permutation p-value is too small (it is exact only for a network that does not depend on which "
            "sample a row came from). Learn the network on both samples pooled (leave out `network` / --network), "
            "or fit it on one part of the reference sample and test the other part "
            "(bnfisher.comparison.reference_split).")


def reference_split(data, *, fraction: float = 0.5, random_state=None) -> tuple:
    """Split a reference sample in two at random: one part to fit the network, the other to test.

    A network fitted on ``fit`` does not depend on ``test``, so comparing ``test``
    with another sample under it gives an exact p-value (unlike a network fitted on
    the whole reference sample).

    Parameters
    ----------
    data : DataFrame
    fraction : float, default=0.5
        Share of the rows in the fitting part, in (0, 1).
    random_state : None, int or Generator

    Returns
    -------
    fit, test : DataFrame
        Disjoint parts of ``data`` (original index kept).

    Raises
    ------
    OptionError
        For a fraction outside (0, 1), or a part that would be empty.

    Examples
    --------
    >>> reference, current = load("nursery").iloc[:2000], load("nursery").iloc[2000:3000]
    >>> fit, test = reference_split(reference, random_state=0)
    >>> kernel = bf.FisherKernel(bf.learn(fit))
    >>> result = bf.mmd_test(kernel, test, current, n_permutations=99, random_state=0)   # exact
    """
    if not 0 < fraction < 1:
        raise OptionError(f"`fraction` must be in (0, 1); got {fraction!r}.")
    rng = check_random_state(random_state)
    n = len(data)
    n_fit = int(round(fraction * n))
    if n_fit < 1 or n_fit > n - 1:
        raise OptionError(f"A split of {n} rows with fraction={fraction} leaves a part empty; use more rows.")
    order = rng.permutation(n)
    return data.iloc[np.sort(order[:n_fit])], data.iloc[np.sort(order[n_fit:])]
