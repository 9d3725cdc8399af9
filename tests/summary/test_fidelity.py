"""What a user checks of a subset: per-column fidelity, lost labels, the share of incomplete rows.

Oracles: total-variation distances from pandas' value counts; a table built so that a common label lives only in
rows with a missing cell.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.cli import main
from bnfisher.exceptions import DataWarning
from bnfisher.summary.fidelity import column_fidelity


def _hidden_label_table(n: int = 1200, seed: int = 0) -> pd.DataFrame:
    """Column ``odor`` takes 'y' (12% of rows) only in rows where ``root`` is missing (30% of rows)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"cap": rng.choice(list("abc"), n), "gill": rng.choice(list("uvw"), n)})
    missing = rng.random(n) < 0.3
    odor = np.where(rng.random(n) < 0.5, "n", "f")
    odor[missing & (rng.random(n) < 0.4)] = "y"
    frame["odor"] = odor
    frame["root"] = np.where(missing, None, rng.choice(list("bce"), n))
    frame["class"] = np.where((frame["odor"] == "n") ^ (rng.random(n) < 0.2), "e", "p")
    return frame


def test_column_fidelity_is_the_total_variation_of_value_counts():
    table = _hidden_label_table()
    schema = bf.Schema.from_data(table, missing="allow")
    codes = schema.encode(table, missing="allow").codes
    subset = np.arange(0, 1200, 7)
    random_sets = np.random.default_rng(1).choice(1200, size=(5, subset.size), replace=True)
    found = column_fidelity(codes, schema.cardinalities, subset, random_sets)
    for c, column in enumerate(schema.variables):
        whole = table[column].value_counts(normalize=True)
        part = table[column].iloc[subset].value_counts(normalize=True).reindex(whole.index, fill_value=0.0)
        assert found.tv[c] == pytest.approx(0.5 * (whole - part).abs().sum(), abs=1e-12)
        drawn = table[column].iloc[random_sets[2]].value_counts(normalize=True).reindex(whole.index, fill_value=0.0)
        assert found.random_tv[2, c] == pytest.approx(0.5 * (whole - drawn).abs().sum(), abs=1e-12)
    assert found.incomplete[1] == pytest.approx(table["root"].isna().mean())


def test_auto_candidates_keep_a_label_that_lives_only_in_incomplete_rows():
    table = _hidden_label_table()
    k = 40
    result = bf.summarize(table, k, n_init=50, n_random=100, random_state=0)
    assert "y" in set(result.subset["odor"])
    subset, data = result.fidelity.incomplete
    assert abs(subset - data) <= max(0.05, 1 / k)
    assert not result.fidelity.lost and result.fidelity.beaten >= 0.9
    with pytest.warns(DataWarning, match="Label 'y' of column 'odor'"):
        complete = bf.summarize(table, k, n_init=50, n_random=100, random_state=0, candidates="complete")
    assert "y" not in set(complete.subset["odor"])
    assert any("Rows with a missing cell are 0.0% of the subset" in message for message in complete.advice)
    assert "Column by column" in complete.verdict() and "lacks 1 common label" in complete.verdict()
    assert complete.to_dict()["fidelity"]["lost_labels"][0]["label"] == "y"


def test_the_command_line_takes_candidates_and_warns_in_one_line(tmp_path, capsys):
    path = tmp_path / "t.csv"
    _hidden_label_table().to_csv(path, index=False)
    assert main(["summarize", str(path), "-k", "30", "--n-init", "20", "--n-random", "50", "--candidates",
                 "complete", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "Label 'y' of column 'odor'" in captured.err
    assert main(["summarize", str(path), "-k", "30", "--n-init", "20", "--n-random", "50"]) == 0
    out = capsys.readouterr().out
    assert "Candidates by stratum" in out and "s in all (" in out


def test_pair_tv_is_the_total_variation_of_joint_value_counts():
    """Oracle: pandas' value counts of the two columns' joint labels, rows with either cell missing left out."""
    from bnfisher.summary.fidelity import pair_tv

    frame = _hidden_label_table(400, seed=2)
    codes = np.column_stack([pd.Categorical(frame[c]).codes for c in frame.columns]).astype(np.int64)
    cards = [len(pd.Categorical(frame[c]).categories) for c in frame.columns]
    pairs = [(0, 1), (2, 3), (1, 4)]
    rows = np.random.default_rng(0).choice(len(frame), (3, 40), replace=False)
    found = pair_tv(codes, cards, pairs, rows)
    for (a, b), column in zip(pairs, found.T):
        both = frame.iloc[:, [a, b]].dropna()
        whole = (both.iloc[:, 0] + "|" + both.iloc[:, 1]).value_counts(normalize=True)
        for set_rows, value in zip(rows, column):
            part = frame.iloc[set_rows, [a, b]].dropna()
            share = (part.iloc[:, 0] + "|" + part.iloc[:, 1]).value_counts(normalize=True)
            expected = 0.5 * np.abs(share.reindex(whole.index, fill_value=0.0) - whole).sum()
            assert value == pytest.approx(expected, abs=1e-12)


def test_the_verdict_leads_with_columns_and_pairs_and_names_a_column_farther_than_random():
    result = bf.summarize(_hidden_label_table(), 30, n_init=20, n_random=50, random_state=0)
    verdict = result.verdict()
    assert verdict.startswith("Column by column, the 30 rows chosen") and "pair by pair of columns" in verdict
    assert verdict.index("pair by pair") < verdict.index("Fisher-kernel MMD²")
    exact = np.full_like(result.fidelity.random_tv, 0.0)  # every random subset exact: every column is farther
    result = dataclasses.replace(result, fidelity=dataclasses.replace(result.fidelity, random_tv=exact))
    assert "Farther from the data than the average random subset: " in result.verdict()
    assert result.to_dict()["fidelity"]["farther_than_random"] == list(map(str, result.network.variables))
    assert result.to_dict()["fidelity"]["pairs"]["count"] == 10  # five columns: every pair
    assert "over 10 pairs)" in verdict
    two = bf.summarize(_hidden_label_table().iloc[:, :2], 5, n_init=5, n_random=20, random_state=0).verdict()
    assert "over 1 pair)" in two  # two columns: one pair, not "1 pairs"


def test_cpt_distances_match_conditional_frequencies_from_pandas():
    """Oracle: pandas' normalised crosstab of child by parent, the subset's rows against the table's."""
    from bnfisher.summary.fidelity import cpt_distances

    frame = _hidden_label_table(600, seed=4)
    categories = {c: list(pd.Categorical(frame[c]).categories) for c in frame.columns}
    codes = np.column_stack([pd.Categorical(frame[c]).codes for c in frame.columns]).astype(np.int64)
    cards = [len(categories[c]) for c in frame.columns]
    rows = np.random.default_rng(1).choice(len(frame), 25, replace=False)
    families = [(0, 2), (3, 4), (1,)]
    found = cpt_distances(codes, cards, families, rows)
    for family, value in zip(families, found):
        names = [frame.columns[c] for c in family]
        child = names[-1]
        if len(names) == 1:
            whole = frame[child].value_counts(normalize=True).reindex(categories[child], fill_value=0.0)
            part = frame.iloc[rows][child].value_counts(normalize=True).reindex(categories[child], fill_value=0.0)
            assert value == pytest.approx(0.5 * np.abs(whole - part).sum(), abs=1e-12)
            continue
        both = frame[names].dropna()
        parent = names[0]
        table = pd.crosstab(both[parent], both[child]).reindex(columns=categories[child], fill_value=0)
        sub = frame.iloc[rows][names].dropna()
        part = pd.crosstab(sub[parent], sub[child]).reindex(index=table.index, columns=categories[child], fill_value=0)
        expected = 0.0
        for j in table.index:
            theta = table.loc[j] / table.loc[j].sum()
            estimate = part.loc[j] / part.loc[j].sum() if part.loc[j].sum() else theta * 0 + 1 / len(theta)
            expected += table.loc[j].sum() / table.values.sum() * 0.5 * np.abs(theta - estimate).sum()
        assert value == pytest.approx(expected, abs=1e-12)


def test_pair_tv_of_small_integer_codes_does_not_overflow():
    """Codes stored as int8 (as encoded tables are) with 20 x 20 joint labels: the same as with int64 codes."""
    from bnfisher.summary.fidelity import pair_tv

    codes = np.random.default_rng(0).integers(0, 20, size=(500, 2))
    sets = np.random.default_rng(1).choice(500, (4, 30))
    wide = pair_tv(codes.astype(np.int64), [20, 20], [(0, 1)], sets)
    np.testing.assert_array_equal(pair_tv(codes.astype(np.int8), [20, 20], [(0, 1)], sets), wide)
    assert (wide > 0).all()
