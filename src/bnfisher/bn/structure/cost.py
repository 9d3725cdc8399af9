"""What a hill-climbing search will cost, stated before it starts (private: ``learn(..., progress=True)``).

The model counts the work of each phase and prices it with the rate just measured
on the single-parent scores (seconds per family, on every core), plus constants
measured on this project's benchmark machine (``benchmarks/structure.py --wide``
prints each estimate beside the time taken):

- a climb makes about ``1.7 n`` moves (1.1-1.7 arcs per variable on sampled
  networks and wide tables); each scans the ``n k`` candidate arcs (about 25 ns
  each), rescores ``k + 2`` families on one core and spends about 150 µs in Python;
  the second climb, from the order search's DAG, about a fifth of that;
- the order search scores each variable's candidate sets (``sum_s C(8, s)`` for
  ``s <= 3``), compares them as bit masks of ``ceil(n / 64)`` words, and tries every
  variable at every position (about 1 µs per pair);
- each restart, about half a climb.
"""

from __future__ import annotations

import math
import sys

from bnfisher.bn.structure.ordering import MAX_SIZE, N_CANDIDATES

__all__ = ["search_estimate", "announce_search"]


def search_estimate(n_variables: int, n_candidates: int, seconds_per_family: float, *, order: bool = True,
                    restarts: int = 0) -> float:
    """Rough seconds of ``learn(structure="hc")`` after the single-parent scores.

    Parameters
    ----------
    n_variables : int
    n_candidates : int
        Candidate parents per variable (``n_variables - 1`` without screening).
    seconds_per_family : float
        The measured time of one family score in a large batch (all cores).
    order : bool, default=True
        The default search (climb, order search, climb); False: one climb.
    restarts : int, default=0

    Returns
    -------
    float
    """
    n, k = n_variables, n_candidates
    moves = 1.7 * n
    climb = moves * (2.5e-8 * n * k + (k + 2) * 2 * seconds_per_family + 1.5e-4)
    total = climb * (1 + 0.5 * restarts)
    if order:
        sets = sum(math.comb(N_CANDIDATES, size) for size in range(MAX_SIZE + 1))
        total += 0.2 * climb + n * sets * (seconds_per_family + 3e-6) + n * sets**2 * math.ceil(n / 64) * 2e-9
        total += 1e-6 * n * n
    return total


def announce_search(n_variables: int, n_rows: int, limit, seconds: float, *, order: bool, restarts: int) -> None:
    """Print (stderr) what the search will do and how long it should take.

    Parameters
    ----------
    n_variables, n_rows : int
    limit : int or None
        Screened candidate parents per variable (None: every other variable).
    seconds : float
        The time the single-parent scores took (``n_variables ** 2`` families).
    order, restarts
        As :func:`search_estimate`.
    """
    n = n_variables
    k = n - 1 if limit is None else limit
    estimate = search_estimate(n, k, seconds / max(n * n, 1), order=order, restarts=restarts)
    screened = "every other variable" if limit is None else f"its {limit} best single parents"
    print(f"hc: {n} variables x {n_rows:,} rows, each variable's parents drawn from {screened}; single parents "
          f"scored in {seconds:.1f} s; the search should take roughly {estimate:.1f} s more (max_time bounds it)",
          file=sys.stderr)
