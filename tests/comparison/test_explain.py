"""What differs: exact per-family MMD² parts, per-family conditional tests (Holm), top cells, witness values."""

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.comparison.explain import mmd_by_family, top_cells, witness

from _helpers import bif_path


@pytest.fixture(scope="module")
def asia():
    return bf.read_bif(bif_path("asia"))


def _changed(network, variable, rng):
    """The same network with one CPT replaced by a different random one."""
    cpts = dict(network.cpts)
    shape = np.asarray(cpts[variable]).shape
    cpts[variable] = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1]).reshape(shape)
    return bf.BayesianNetwork(dict(network.parents), cpts, dict(network.states))


def test_contributions_are_exact_and_sum_to_the_mmd(asia):
    kernel = bf.FisherKernel(asia)
    X = asia.sample(400, random_state=0)
    Y = _changed(asia, "smoke", np.random.default_rng(1)).sample(300, random_state=1)
    table = mmd_by_family(kernel, X, Y, n_permutations=50, random_state=0)
    assert table["mmd2"].sum() == pytest.approx(kernel.mmd(X, Y), rel=1e-12)
    found = table["p_adjusted"] <= 0.05
    assert (table.loc[~found, "share"] == 0).all() and table["share"].sum() == pytest.approx(1.0 if found.any() else 0)
    EX, EY = kernel.embed(X), kernel.embed(Y)
    for _, row in table.iterrows():  # independently: the MMD of the family's block of the feature map
        i = asia.variables.index(row["variable"])
        block = slice(kernel.block_offsets[i], kernel.block_offsets[i + 1])
        difference = np.asarray(EX[:, block].mean(axis=0) - EY[:, block].mean(axis=0)).ravel()
        assert row["mmd2"] == pytest.approx(float(difference @ difference), rel=1e-10, abs=1e-14)
    assert table.iloc[0]["variable"] in ("smoke", "lung", "bronc")


def test_the_changed_family_is_found_and_unchanged_ones_keep_the_family_wise_level(asia):
    """Change bronc's CPT: its family ranks first; no other family (all unchanged) is flagged beyond alpha."""
    rng = np.random.default_rng(0)
    kernel = bf.FisherKernel(asia)
    false_alarms, found = 0, 0
    repetitions = 20
    for repetition in range(repetitions):
        changed = _changed(asia, "bronc", np.random.default_rng(100 + repetition))
        X = asia.sample(1500, random_state=rng)
        Y = changed.sample(1500, random_state=rng)
        table = mmd_by_family(kernel, X, Y, n_permutations=400, random_state=repetition)
        found += table.iloc[0]["variable"] == "bronc" and table.iloc[0]["p_adjusted"] <= 0.05
        others = table[table["variable"] != "bronc"]
        false_alarms += bool((others["p_adjusted"] <= 0.05).any())
    assert found >= 0.8 * repetitions
    # Strong control: P(any unchanged family flagged) <= 0.05; 3 of 20 has probability 0.075 at rate 0.05.
    assert false_alarms <= 3


def test_witness_is_the_kernel_mean_difference(asia):
    kernel = bf.FisherKernel(asia)
    X = asia.sample(200, random_state=0)
    Y = _changed(asia, "tub", np.random.default_rng(2)).sample(150, random_state=1)
    rows = pd.concat([X.iloc[:20], Y.iloc[:20]], ignore_index=True)
    expected = kernel.gram(rows, X).mean(axis=1) - kernel.gram(rows, Y).mean(axis=1)
    np.testing.assert_allclose(witness(kernel, X, Y, rows), expected, rtol=1e-9, atol=1e-12)


def test_top_cells_name_the_configuration_in_the_users_labels(asia):
    kernel = bf.FisherKernel(asia)
    cpts = dict(asia.cpts)
    cpts["dysp"] = np.asarray(cpts["dysp"]).copy()
    cpts["dysp"][1, 0] = [0.1, 0.9]  # dysp | bronc = no, either = yes flips
    changed = bf.BayesianNetwork(dict(asia.parents), cpts, dict(asia.states))
    X, Y = asia.sample(5000, random_state=0), changed.sample(5000, random_state=1)
    cells = top_cells(kernel, X, Y, n=5)
    first = cells.iloc[0]
    assert first["variable"] == "dysp" and "either = yes" in first["given"] and "bronc = no" in first["given"]
    mask_x = (X["either"] == "yes") & (X["bronc"] == "no") & (X["dysp"] == first["state"])
    assert first["percent_X"] == pytest.approx(100 * mask_x.mean())
    assert "% of X" in first["text"]


def test_criticisms_are_disjoint_from_prototypes_and_have_top_decile_witness(asia):
    from bnfisher.summary import select_representatives

    kernel = bf.FisherKernel(asia)
    X = asia.sample(2000, random_state=0)
    result = select_representatives(kernel, X, 30, n_init=50, random_state=0, n_criticisms=5)
    assert len(result.criticisms) == 5 and not set(result.criticisms) & set(result.indices)
    assert len(set(result.criticisms)) == 5
    prototypes = X.iloc[result.indices]
    values = witness(kernel, X, prototypes, X)  # independently: the witness between data and prototypes
    np.testing.assert_allclose(result.criticism_witness, values[result.criticisms], rtol=1e-9, atol=1e-12)
    others = np.setdiff1d(np.arange(len(X)), result.indices)
    threshold = np.quantile(np.abs(values[others]), 0.9)
    assert np.all(np.abs(values[result.criticisms]) >= threshold)
    # Diversity: no two criticisms are the same row pattern.
    assert len({tuple(X.iloc[c]) for c in result.criticisms}) == 5


def test_row_explanations_decompose_the_self_kernel_and_the_log_likelihood(asia):
    from bnfisher.comparison.explain import explain_rows

    kernel = bf.FisherKernel(asia)
    rows = asia.sample(30, random_state=3)
    table = explain_rows(kernel, rows)
    by_row = table.groupby("row")
    np.testing.assert_allclose(by_row["kernel_self"].sum().to_numpy(), kernel.diag(rows), rtol=1e-10)
    np.testing.assert_allclose(by_row["neg_log_p"].sum().to_numpy(), -asia.log_likelihood(rows), rtol=1e-10)
    holed = rows.astype(object).copy()
    holed.iloc[0, 1] = None
    marginal = explain_rows(kernel, holed)
    assert marginal[marginal.row == 0]["value"].isna().sum() == 1
    np.testing.assert_allclose(marginal.groupby("row")["kernel_self"].sum().to_numpy(), kernel.diag(holed),
                               rtol=1e-10)


def test_notebook_reprs_are_short():
    from bnfisher.comparison import mmd_test

    network = bf.read_bif(bif_path("asia"))
    test = mmd_test(bf.FisherKernel(network), network.sample(50, random_state=0), network.sample(50, random_state=1),
                    n_permutations=300, random_state=0)
    assert "null_distribution" not in repr(test) and len(repr(test)) < 300
    assert "<table>" in test._repr_html_() and "p-value" in test._repr_html_()
    assert "<table>" in network._repr_html_() and "either" in network._repr_html_()


def test_permutation_pvalue_is_the_one_rule_for_single_and_blocks_of_statistics():
    """(1 + #{null >= observed}) / (1 + B), ties counted, checked by brute force on tied nulls."""
    from bnfisher.comparison import permutation_pvalue

    rng = np.random.default_rng(3)
    null = rng.integers(0, 6, size=(40, 3)).astype(float)  # many exact ties
    observed = np.array([2.0, 5.0, 0.0])

    def brute(value, column):
        return (1 + sum(1 for t in column if t >= value)) / (1 + len(column))

    assert np.allclose(permutation_pvalue(observed, null), [brute(observed[f], null[:, f]) for f in range(3)])
    block = permutation_pvalue(null, null)
    assert np.allclose(block, [[brute(null[b, f], null[:, f]) for f in range(3)] for b in range(40)])
    assert float(permutation_pvalue(5.0, null[:, 1])) == brute(5.0, null[:, 1])
    assert permutation_pvalue(1e9, null[:, 0]) == 1 / 41  # never 0
