"""Count tables from bit sets of the rows: an AND and a population count per cell (private engine).

Each (column, state) of complete codes becomes a bit set over the rows (bit ``t`` set
when row ``t`` has that state).  A family's count in the cell (parent configuration,
child state) is then the number of bits set in the AND of its parents' and child's bit
sets: ``n_rows / 64`` words per cell, where counting by a pass over the rows costs a
few operations per row.  The bit sets of the families' shared part -- every
configuration of all parents but the last, with the child's state -- are built once
for consecutive families that share it (a climb rescoring one variable asks for its
current parents plus each candidate), and configurations no row has are skipped.
The counts are those of a pass over the rows, exactly.
"""

from __future__ import annotations

import numpy as np

from bnfisher._utils.jit import compiled

__all__ = ["GROUPS", "GROUP_BYTES", "bit_table", "groups_of", "no_bits", "pair_table", "row_bits", "state_counts"]

#: The largest number of (configuration of all parents but the last, child state) bit sets kept for a batch, and
#: the most memory they may take (so a batch over 10^7 rows keeps at most about 50 of them).
GROUPS, GROUP_BYTES = 1024, 1 << 26


@compiled(nogil=True)
def _popcount(x):  # pragma: no cover - compiled
    """Bits set in a 64-bit word (the SWAR sum; LLVM turns it into the popcnt instruction)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


def _numpy_row_bits(codes_t, cardinalities, first):
    """Return :func:`_row_bits` with NumPy (its fallback): one ``packbits`` per (column, state)."""
    n_rows = codes_t.shape[1]
    words = (n_rows + 63) // 64
    bits = np.zeros((int(first[-1]), words * 8), dtype=np.uint8)
    for column in range(codes_t.shape[0]):
        for state in range(int(cardinalities[column])):
            packed = np.packbits(codes_t[column] == state, bitorder="little")
            bits[first[column] + state, :packed.size] = packed
    return bits.view(np.uint64)


@compiled(nogil=True, fallback=_numpy_row_bits, cost=lambda codes_t, *_: 3e-9 * codes_t.size)
def _row_bits(codes_t, cardinalities, first):  # pragma: no cover - compiled
    """Return the bit sets of every (column, state): row ``first[column] + state``, bit ``t`` of word ``t // 64``."""
    n_rows = codes_t.shape[1]
    bits = np.zeros((first[-1], (n_rows + 63) // 64), np.uint64)
    for column in range(codes_t.shape[0]):
        codes = codes_t[column]
        for t in range(n_rows):
            bits[first[column] + codes[t], t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    return bits


def no_bits() -> tuple:
    """Return the stand-in for "no bit sets" that the compiled loops take (an empty set array and its offsets)."""
    return np.zeros((0, 0), dtype=np.uint64), np.zeros(1, dtype=np.int64)


def row_bits(codes_t: np.ndarray, cardinalities: np.ndarray) -> tuple:
    """Return the bit sets of every (column, state) of complete codes and each column's first row in them.

    Parameters
    ----------
    codes_t : ndarray of shape (n_variables, n_rows)
        Complete codes (no -1), one row per variable.
    cardinalities : ndarray of int64

    Returns
    -------
    bits : ndarray of uint64, shape (sum of cardinalities, ceil(n_rows / 64))
    first : ndarray of int64, shape (n_variables + 1,)
        Column ``c``'s state ``s`` is row ``first[c] + s``.
    """
    first = np.concatenate([[0], np.cumsum(cardinalities)]).astype(np.int64)
    return _row_bits(codes_t, cardinalities, first), first


@compiled(nogil=True)
def groups_of(bits, first, cardinalities, prefix, child, groups, index):  # pragma: no cover - compiled
    """Fill ``groups`` with the bit sets of every (configuration of ``prefix``, child state) that holds a row.

    ``index[k]`` is group ``k``'s configuration times the child's cardinality plus its
    state (configurations numbered in mixed radix, the first parent the most
    significant, as the family kernel numbers them).  Configurations are enumerated
    depth first and a branch no row reaches is skipped.  Returns the number of groups;
    ``groups`` must have room for every configuration times the child's states.
    """
    words = bits.shape[1]
    depth = prefix.size
    r = cardinalities[child]
    partial = np.empty((depth + 1, words), np.uint64)
    partial[0, :] = ~np.uint64(0)  # every row (the bits past the last row are 0 in every set ANDed in)
    digit = np.zeros(depth + 1, np.int64)
    count = 0
    level = 0
    while level >= 0:
        if level == depth:
            configuration = 0
            for d in range(depth):
                configuration = configuration * cardinalities[prefix[d]] + digit[d]
            for s in range(r):
                row = first[child] + s
                seen = np.uint64(0)
                for w in range(words):
                    value = partial[depth, w] & bits[row, w]
                    groups[count, w] = value
                    seen |= value
                if seen != 0:
                    index[count] = configuration * r + s
                    count += 1
            level -= 1
            if level >= 0:
                digit[level] += 1
            continue
        if digit[level] >= cardinalities[prefix[level]]:
            digit[level] = 0
            level -= 1
            if level >= 0:
                digit[level] += 1
            continue
        row = first[prefix[level]] + digit[level]
        seen = np.uint64(0)
        for w in range(words):
            value = partial[level, w] & bits[row, w]
            partial[level + 1, w] = value
            seen |= value
        if seen == 0:  # no row in this branch: the next state at this level
            digit[level] += 1
            continue
        level += 1
    return count


@compiled(nogil=True)
def bit_table(bits, first, last, c, groups, index, count, r, cells, size):  # pragma: no cover - compiled
    """Write the count table of the groups crossed with the states of the column ``last`` into ``cells[:size]``.

    Cell ``(configuration * c + state) * r + child state``, the family kernel's layout;
    ``last < 0``: the groups' own counts (a family without parents, ``c = 1``).
    """
    words = bits.shape[1]
    cells[:size] = 0
    for k in range(count):
        configuration, s = index[k] // r, index[k] % r
        if last < 0:
            total = np.uint64(0)
            for w in range(words):
                total += _popcount(groups[k, w])
            cells[index[k]] = total
            continue
        for state in range(c):
            row = first[last] + state
            total = np.uint64(0)
            for w in range(words):
                total += _popcount(groups[k, w] & bits[row, w])
            cells[(configuration * c + state) * r + s] = total


@compiled(nogil=True)
def pair_table(bits, first, u, v, r_u, r_v, cells):  # pragma: no cover - compiled
    """Write the count table of the columns ``u`` and ``v`` into ``cells`` (cell ``state of u * r_v + state of v``)."""
    words = bits.shape[1]
    for a in range(r_u):
        row_u = first[u] + a
        for b in range(r_v):
            row_v = first[v] + b
            total = np.uint64(0)
            for w in range(words):
                total += _popcount(bits[row_u, w] & bits[row_v, w])
            cells[a * r_v + b] = total


@compiled(nogil=True)
def state_counts(bits, first, u, r_u, cells):  # pragma: no cover - compiled
    """Write the number of rows in each state of the column ``u`` into ``cells[:r_u]``."""
    for a in range(r_u):
        total = np.uint64(0)
        for w in range(bits.shape[1]):
            total += _popcount(bits[first[u] + a, w])
        cells[a] = total
