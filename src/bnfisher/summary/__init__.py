"""Representative subsets: Algorithm 1 (greedy swap search), its criteria and random baselines."""

from bnfisher.summary.anneal import anneal_margins
from bnfisher.summary.balance import balance_margins
from bnfisher.summary.baselines import random_baseline, random_mmd_baseline, random_subsets
from bnfisher.summary.criteria import Chi2Criterion, Criterion, MMDCriterion, chi2_criterion
from bnfisher.summary.margins import MarginCounts, refine_margins
from bnfisher.summary.search import SelectionResult, select_representatives

__all__ = [
    "Criterion",
    "MMDCriterion",
    "Chi2Criterion",
    "chi2_criterion",
    "SelectionResult",
    "select_representatives",
    "random_subsets",
    "random_baseline",
    "random_mmd_baseline",
    "MarginCounts",
    "refine_margins",
    "anneal_margins",
    "balance_margins",
]
