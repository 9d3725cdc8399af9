"""Scoring: the local score formulas, the scorers that cache them, and the counting engines behind them.

- :mod:`~bnfisher.bn.scores.formulas`: log-likelihood, BIC, AIC, BDeu and K2 of one family's count table.
- :mod:`~bnfisher.bn.scores.scorers`: :func:`score` of a network, and the cached scorers the structure
  searches ask (:class:`LocalScorer` in memory, :class:`ProviderScorer` over any counts provider).
- The engines (private): ``_family`` (a compiled loop over the rows per family), ``_bits`` (small tables from
  bit sets of the rows), ``_pair`` (every single-parent family from one pass per pair) and ``_projected``
  (many families counted on the distinct rows of a few columns).  CONTRIBUTING.md says which runs when.
"""

from bnfisher.bn.scores.formulas import SCORES, local_score
from bnfisher.bn.scores.scorers import LocalScorer, ProviderScorer, make_scorer, score

__all__ = ["SCORES", "LocalScorer", "ProviderScorer", "local_score", "make_scorer", "score"]
