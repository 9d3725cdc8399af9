"""NumPy's sampling without replacement of a large share of a pool, compiled and counted by distinct row (private).

``Generator.choice(n, size, replace=False, shuffle=False)`` draws, when ``n > 10,000`` and
``size > n // 20``, by a *tail shuffle*: the last ``size`` places of ``arange(n)`` are
shuffled Fisher-Yates fashion, place ``i`` swapped with a uniform place ``j <= i`` drawn by
Lemire's method from the bit generator's 32-bit outputs.  :func:`tail_subset_counts` runs
the same steps on the same bit generator -- the same subset, and the generator left in the
same state -- and counts the subset by distinct row as it goes, without a fresh
``arange(n)`` per draw or an array of the drawn rows: the permutation engine's splits are
then NumPy's, bit for bit, in about half the time (``python benchmarks/permutations.py``).
:func:`replicates_numpy` checks once per process that the installed NumPy draws so (then
the compiled steps and NumPy's ``choice``, its fallback, are interchangeable); otherwise
only NumPy's ``choice`` is used.
"""

from __future__ import annotations

import functools

import numpy as np

from bnfisher._utils.jit import compiled

__all__ = ["TAIL_MIN_POOL", "numpy_subset_counts", "replicates_numpy", "tail_subset_counts", "uses_tail"]

#: NumPy's ``choice`` without replacement shuffles a tail when the pool has more rows than this...
TAIL_MIN_POOL = 10_000
#: ... and the draw more than ``pool // TAIL_SHARE`` of them.
TAIL_SHARE = 20


def uses_tail(n_total: int, size: int) -> bool:
    """Return whether NumPy draws ``size`` of ``n_total`` without replacement by a tail shuffle.

    Parameters
    ----------
    n_total, size : int

    Returns
    -------
    bool
    """
    return n_total > TAIL_MIN_POOL and size > n_total // TAIL_SHARE


def numpy_subset_counts(rng, owner, sizes, multiplicity, out) -> None:
    """Split the pooled rows as :func:`tail_subset_counts` does, by NumPy's ``choice`` of the smaller side.

    Parameters
    ----------
    rng : Generator
    owner : ndarray of intp, shape (n_total,)
        Each pooled row's distinct row.
    sizes : ndarray of int64, shape (k,)
        Rows of the first sample in each split.
    multiplicity : ndarray of int64, shape (n_distinct,)
    out : ndarray of int, shape (k, n_distinct)
        Written: the first sample's rows of each distinct row.
    """
    n_total = owner.size
    for k, size in enumerate(sizes.tolist()):
        smaller = min(size, n_total - size)
        out[k] = np.bincount(owner[rng.choice(n_total, size=smaller, replace=False, shuffle=False)],
                             minlength=multiplicity.size)
        if smaller != size:
            np.subtract(multiplicity, out[k], out=out[k], casting="unsafe")


def _numpy_counts(next32, state, rng, owner, scratch, sizes, multiplicity, out, touched) -> None:
    """Split by NumPy's own draws, the same subsets and counts (the fallback while compiling does not pay)."""
    numpy_subset_counts(rng, owner, sizes, multiplicity, out)


def _numpy_cost(next32, state, rng, owner, scratch, sizes, multiplicity, out, touched) -> float:
    """Estimated seconds of :func:`_numpy_counts`: about 30 ns a drawn row and 1 ns a pooled row, per split."""
    drawn = np.minimum(sizes, scratch.size - sizes)
    return float(3e-8 * drawn.sum() + 1e-9 * scratch.size * sizes.size)


@compiled(nogil=True, fallback=_numpy_counts, cost=_numpy_cost)
def tail_subset_counts(next32, state, rng, owner, scratch, sizes, multiplicity, out,
                       touched):  # pragma: no cover - compiled
    """Split the pooled rows ``sizes.size`` times as NumPy's draws of the smaller side would; count by distinct row.

    Split ``k`` sends ``sizes[k]`` of the ``scratch.size`` pooled rows to the first sample:
    the smaller side drawn by NumPy's tail shuffle (``uses_tail`` must hold for it), the
    splits one after another from the one bit generator.

    Parameters
    ----------
    next32, state
        The bit generator's ``ctypes.next_uint32`` and ``ctypes.state_address`` (hold its lock).
    rng : Generator
        The generator itself (for the fallback, NumPy's ``choice``).
    owner : ndarray of intp, shape (n_total,)
        Each pooled row's distinct row.
    scratch : ndarray of int64, shape (n_total,)
        ``arange(n_total)``, and left so.
    sizes : ndarray of int64, shape (k,)
        Rows of the first sample in each split.
    multiplicity : ndarray of int64, shape (n_distinct,)
        Pooled rows of each distinct row.
    out : ndarray of int, shape (k, n_distinct)
        Written: the first sample's rows of each distinct row, a split a row.
    touched : ndarray of int64, shape (n_total,)
        Scratch for the places swapped.
    """
    n = scratch.size
    for split in range(sizes.size):
        size = min(sizes[split], n - sizes[split])
        first = max(n - size, 1)
        for i in range(n - 1, first - 1, -1):  # Fisher-Yates over the tail, place i from the top
            bound = np.uint64(i) + np.uint64(1)
            product = np.uint64(next32(state)) * bound  # Lemire's method: the high word of a 32 x 32-bit product
            low = product & np.uint64(0xFFFFFFFF)
            if low < bound:
                threshold = (np.uint64(0xFFFFFFFF) - np.uint64(i)) % bound
                while low < threshold:
                    product = np.uint64(next32(state)) * bound
                    low = product & np.uint64(0xFFFFFFFF)
            j = np.int64(product >> np.uint64(32))
            touched[n - 1 - i] = j
            value = scratch[j]
            scratch[j] = scratch[i]
            scratch[i] = value
        counts = out[split]
        counts[:] = 0
        for k in range(n - size, n):
            counts[owner[scratch[k]]] += 1
        if size != sizes[split]:  # the smaller side was the second sample's
            for u in range(counts.size):
                counts[u] = multiplicity[u] - counts[u]
        for k in range(n - first):  # back to arange(n)
            scratch[touched[k]] = touched[k]
        for k in range(first, n):
            scratch[k] = k


def _python_tail(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """Return the tail shuffle's places, in plain Python (the check of :func:`replicates_numpy`)."""
    bits = rng.bit_generator.ctypes
    places = list(range(n))
    for i in range(n - 1, max(n - size, 1) - 1, -1):
        bound = i + 1
        product = bits.next_uint32(bits.state_address) * bound
        if product & 0xFFFFFFFF < bound:
            threshold = (0xFFFFFFFF - i) % bound
            while product & 0xFFFFFFFF < threshold:
                product = bits.next_uint32(bits.state_address) * bound
        j = product >> 32
        places[i], places[j] = places[j], places[i]
    return np.array(places[n - size:], dtype=np.int64)


@functools.cache
def replicates_numpy() -> bool:
    """Return whether the installed NumPy's ``choice`` without replacement is the tail shuffle replicated here.

    Checked once per process on draws either side of NumPy's thresholds: a tail shuffle above
    them (the same places, the generator left in the same state), another method below.

    Returns
    -------
    bool
    """
    for n, size in ((TAIL_MIN_POOL + 1, (TAIL_MIN_POOL + 1) // TAIL_SHARE + 1), (TAIL_MIN_POOL + 1, 2 * 600),
                    (TAIL_MIN_POOL + 1, (TAIL_MIN_POOL + 1) // TAIL_SHARE), (TAIL_MIN_POOL, TAIL_MIN_POOL // 2)):
        numpy_rng, ours = np.random.default_rng(n + size), np.random.default_rng(n + size)
        expected = numpy_rng.choice(n, size=size, replace=False, shuffle=False)
        same = np.array_equal(expected, _python_tail(ours, n, size)) and \
            numpy_rng.bit_generator.state == ours.bit_generator.state
        if same != uses_tail(n, size):
            return False
    return True
