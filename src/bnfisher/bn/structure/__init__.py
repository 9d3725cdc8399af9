"""Structure learning.

:func:`learn` dispatches to Chow-Liu, the Bayesian-network classifiers, hill climbing and exact search.
"""

from bnfisher.bn.structure.learn import STRUCTURES, learn

__all__ = [
    "STRUCTURES",
    "learn",
]
