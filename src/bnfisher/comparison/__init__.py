"""Comparing two data sets: the permutation engine, the two-sample test and the explanation of a difference."""

from bnfisher.comparison.aggregate import aggregate_pvalues
from bnfisher.comparison.anytime import AnytimeOutcome, AnytimeTest
from bnfisher.comparison.attribution import FamilyTests, conditional_family_tests, holm, resolve_floor
from bnfisher.comparison.cells import changed_cell
from bnfisher.comparison.explain import explain_rows, family_table, mmd_by_family, top_cells, witness
from bnfisher.comparison.mechanisms import MechanismTests, mechanism_tests
from bnfisher.comparison.null import permutation_splits
from bnfisher.comparison.permutation import (
    PermutationStatistics,
    SampleStatistics,
    permutation_pvalue,
    permutation_statistics,
    split_draws,
)
from bnfisher.comparison.sequential import EarlyStop
from bnfisher.comparison.spending import WindowLevels
from bnfisher.comparison.two_sample import TwoSampleResult, effect_interval, mmd_test, statistics_pvalue
from bnfisher.comparison.validity import fitted_on_one_sample, reference_split

__all__ = [
    "PermutationStatistics",
    "SampleStatistics",
    "permutation_statistics",
    "permutation_pvalue",
    "split_draws",
    "permutation_splits",
    "TwoSampleResult",
    "mmd_test",
    "statistics_pvalue",
    "EarlyStop",
    "AnytimeTest",
    "AnytimeOutcome",
    "WindowLevels",
    "effect_interval",
    "mmd_by_family",
    "family_table",
    "top_cells",
    "witness",
    "explain_rows",
    "aggregate_pvalues",
    "FamilyTests",
    "conditional_family_tests",
    "holm",
    "resolve_floor",
    "MechanismTests",
    "mechanism_tests",
    "changed_cell",
    "fitted_on_one_sample",
    "reference_split",
]
