"""Random splits of pooled rows, counted by distinct row: the draws of every permutation null.

A permutation of ``N`` pooled rows sends a uniformly random ``n_first``-subset of them to
the first sample; counted by distinct row, that is a multivariate hypergeometric draw.
:func:`split_draws` draws many at once, by one of two exact methods chosen from the
inputs alone.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.validation import check_random_state
from bnfisher.exceptions import OptionError

__all__ = ["BERNOULLI_COPIES", "draws_by_subsets", "split_draws"]

#: Distinct rows with at most this many copies are split by Bernoulli draws, the others by binomials.
BERNOULLI_COPIES = 16


def split_draws(multiplicity, n_first, size, *, random_state=None, out=None, method="auto"):
    """Random splits of pooled rows, as copies of each distinct row sent to the first sample.

    Each column is one uniformly random ``n_first``-subset of the pooled rows, counted by
    distinct row: a multivariate hypergeometric draw, the null of a permutation test.
    Two exact ways to draw it, the same law (different draws):

    * ``"bernoulli"``, in ``O(n_distinct)`` for rows with many copies: every row joins
      the first sample independently with probability ``n_first / N`` (a binomial per
      distinct row), then the excess or shortfall, ``O(sqrt(N))`` rows, is removed
      from or added to it uniformly at random.  The result is exchangeable over the
      rows and always has ``n_first`` of them, hence uniform over the
      ``n_first``-subsets.
    * ``"subsets"``, in ``O(min(n_first, N - n_first))`` random numbers: the smaller
      sample's rows drawn without replacement, counted by distinct row.  Cheaper
      when most rows are distinct and one sample is small (a drift window against a
      large reference: 4x faster on 110,000 alarm rows, a window of 10,000).

    Parameters
    ----------
    multiplicity : ndarray of int, shape (n_distinct,)
        Copies of each distinct row in the pooled sample.
    n_first : int or ndarray of int, shape (size,)
        Rows of the first sample, ``0 <= n_first <= multiplicity.sum()``; one per split,
        or one for all.
    size : int
        Number of splits.
    random_state : None, int or Generator
    out : ndarray of int32 or int64, shape (size, n_distinct), optional
        Where to write the splits (a buffer reused across calls saves the page faults of a fresh one).
    method : {"auto", "bernoulli", "subsets"}, default="auto"
        ``"auto"`` takes the one with the smaller estimated work (:func:`draws_by_subsets`),
        a function of ``multiplicity`` and ``n_first`` alone: the same inputs and seed
        give the same draws on every machine.

    Returns
    -------
    ndarray, shape (n_distinct, size)
        (A transposed view: each split is contiguous; of ``out`` when given.)

    Examples
    --------
    >>> import numpy as np
    >>> draws = split_draws(np.array([3, 1, 2]), 4, 5, random_state=0)
    >>> draws.sum(axis=0).tolist(), bool((draws <= [[3], [1], [2]]).all())
    ([4, 4, 4, 4, 4], True)
    """
    if method not in ("auto", "bernoulli", "subsets"):
        raise OptionError(f"`method` must be 'auto', 'bernoulli' or 'subsets'; got {method!r}.")
    return _split_draws(multiplicity, n_first, size, check_random_state(random_state), out=out, method=method)


def _split_draws(multiplicity, n_first, size: int, rng: np.random.Generator, *, out=None, method: str = "auto"):
    """:func:`split_draws` with its generator resolved and its method checked (the null's buckets call it)."""
    multiplicity = np.asarray(multiplicity, dtype=np.int64)
    n_total = int(multiplicity.sum())
    first = np.broadcast_to(np.asarray(n_first, dtype=np.int64), (size,))
    if out is None:
        out = np.empty((size, multiplicity.size), dtype=np.int32 if n_total < 2**31 else np.int64)
    if method == "subsets" or (method == "auto" and draws_by_subsets(multiplicity, first)):
        return _subset_draws(multiplicity, first, rng, out).T
    return _bernoulli_draws(multiplicity, first, rng, out).T


def draws_by_subsets(multiplicity: np.ndarray, first: np.ndarray) -> bool:
    """Return True when drawing the smaller sample's rows costs less than a Bernoulli draw per row copy.

    Estimated nanoseconds per split, measured on a 2-core x86 machine: ``"bernoulli"``
    about 12 per row copy of the distinct rows with at most :data:`BERNOULLI_COPIES`
    copies and 40 per other distinct row; ``"subsets"`` about 25 per drawn row, 0.5 per
    pooled row and 3 per distinct row.  Only the inputs decide, never a clock.

    Parameters
    ----------
    multiplicity : ndarray of int, shape (n_distinct,)
        Copies of each distinct row in the pool.
    first : ndarray of int, shape (size,)
        Rows of the first sample in each split.

    Returns
    -------
    bool
        Whether :func:`split_draws` with ``method="auto"`` draws subsets.

    Examples
    --------
    >>> import numpy as np
    >>> draws_by_subsets(np.ones(100_000, dtype=int), np.array([5_000]))
    True
    >>> draws_by_subsets(np.full(100, 1_000), np.array([50_000]))
    False
    """
    n_total = int(multiplicity.sum())
    few = multiplicity <= BERNOULLI_COPIES
    bernoulli = 12 * int(multiplicity[few].sum()) + 40 * int((~few).sum())
    drawn = float(np.minimum(first, n_total - first).mean()) if first.size else 0.0
    subsets = 25 * drawn + 0.5 * n_total + 3 * multiplicity.size
    return subsets < bernoulli


def _subset_draws(multiplicity: np.ndarray, first: np.ndarray, rng, out: np.ndarray) -> np.ndarray:
    """Each split: the smaller sample's rows, NumPy's ``choice`` without replacement, counted by distinct row."""
    n_total = int(multiplicity.sum())
    owner = np.repeat(np.arange(multiplicity.size, dtype=np.intp), multiplicity)  # pooled row -> its distinct row
    for k, size in enumerate(first.tolist()):
        smaller = min(size, n_total - size)
        out[k] = np.bincount(owner[rng.choice(n_total, size=smaller, replace=False, shuffle=False)],
                             minlength=multiplicity.size)
        if smaller != size:
            np.subtract(multiplicity, out[k], out=out[k], casting="unsafe")
    return out


def _bernoulli_draws(multiplicity: np.ndarray, first: np.ndarray, rng, out: np.ndarray) -> np.ndarray:
    """Bernoulli draws per row copy (binomials for many copies), then the excess removed: see :func:`split_draws`."""
    size = first.size
    n_total = int(multiplicity.sum())
    # Every row's inclusion probability: a multiple of 2**-24, so that a float32 uniform below it has exactly that
    # probability, the same as each row's in the binomials (rows must be exchangeable; any p per split will do).
    p = (np.floor(first / n_total * 2**24) / 2**24 if n_total else np.zeros(size)).astype(np.float32)
    # Draw in order of multiplicity (contiguous blocks of equal copies); sorted input needs no reordering.
    ordered_input = bool(np.all(multiplicity[1:] >= multiplicity[:-1]))
    order = np.arange(multiplicity.size) if ordered_input else np.argsort(multiplicity, kind="stable")
    ordered = multiplicity[order]
    rows = out  # one split per row
    bounds = np.searchsorted(ordered, np.arange(BERNOULLI_COPIES + 2))
    # Few copies: a sum of Bernoulli draws per distinct row, copies c = 1 .. 16 in turn, from float32 uniforms drawn
    # a few splits at a time into a reused buffer (a large fresh array costs more in page faults than the draws)
    # and summed one copy index at a time (benchmarks/permutations.py).
    buffer = np.empty(1 << 20, dtype=np.float32)
    for copies in range(1, BERNOULLI_COPIES + 1):
        begin, end = bounds[copies], bounds[copies + 1]
        if end == begin:
            continue
        per_split = (end - begin) * copies
        chunk = max(1, min(size, buffer.size // per_split))
        if chunk * per_split > buffer.size:
            buffer = np.empty(per_split, dtype=np.float32)
        for start in range(0, size, chunk):
            k = min(chunk, size - start)
            uniforms = buffer[: k * per_split].reshape(k, end - begin, copies)
            rng.random(out=uniforms, dtype=np.float32)
            _bernoulli_sums(uniforms, p[start: start + k, None], rows[start: start + k, begin:end])
    rows[:, : bounds[1]] = 0  # rows with no copies (an empty unit) never move
    begin = bounds[BERNOULLI_COPIES + 1]
    if begin < ordered.size:
        rows[:, begin:] = rng.binomial(ordered[begin:], p[:, None].astype(np.float64),
                                       size=(size, ordered.size - begin))
    if not ordered_input:  # back to the input's order, a split at a time (4x faster than one fancy index here)
        back, row = np.argsort(order), np.empty(ordered.size, dtype=rows.dtype)
        for draw in rows:
            np.take(draw, back, out=row)
            draw[:] = row
    # Remove |excess| rows of the first sample, or add them from the rest, uniformly among those rows.
    excess = rows.sum(axis=1, dtype=np.int64) - first
    for k in np.flatnonzero(excess):
        e, sums = int(excess[k]), int(excess[k] + first[k])
        picked = rng.choice(sums if e > 0 else n_total - sums, size=abs(e), replace=False)
        draw = rows[k]
        cumulative = np.cumsum(draw if e > 0 else multiplicity - draw)
        np.add.at(draw, np.searchsorted(cumulative, picked, side="right"), -1 if e > 0 else 1)
    return rows


def _bernoulli_sums(uniforms: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
    """``out[b, j] = #{i : uniforms[b, j, i] < p[b]}``: how many copies of distinct row ``j`` split ``b`` sends first.

    One comparison per copy index ``i``, added in place: NumPy's ``sum`` over the short last axis is 3x slower.
    """
    np.less(uniforms[:, :, 0], p, out=out, casting="unsafe")
    for i in range(1, uniforms.shape[2]):
        out += uniforms[:, :, i] < p
