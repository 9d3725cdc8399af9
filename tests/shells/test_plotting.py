import numpy as np
import pandas as pd

from bnfisher import Schema
from bnfisher.viz.plotting import MAX_BARS, summary_marginals


def test_summary_bars_are_the_marginals_in_state_order():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"size": rng.choice(["small", "large", "medium"], 500),
                          "x": rng.normal(size=500),
                          "many": rng.choice([f"s{i:02d}" for i in range(30)], 500)})
    schema = Schema.from_data(frame, bins=4, columns=["x"])
    subset = np.arange(0, 500, 7)
    bars = summary_marginals(schema.encode(frame), subset)
    labelled = schema.discretize(frame)
    for v in ["size", "x"]:
        expected = labelled[v].astype(str).value_counts(normalize=True)
        np.testing.assert_allclose(bars[v]["full data"].to_numpy(), expected.loc[list(bars[v].index)].to_numpy())
        part = labelled[v].iloc[subset].astype(str).value_counts(normalize=True).reindex(bars[v].index, fill_value=0)
        np.testing.assert_allclose(bars[v].iloc[:, 1].to_numpy(), part.to_numpy())
    assert list(bars["x"].index) == list(schema.states["x"])  # bins in increasing order, not by frequency
    assert list(bars["size"].index) == ["large", "medium", "small"]
    assert len(bars["many"]) == MAX_BARS and list(bars["many"].index) == sorted(bars["many"].index)


def test_missing_cells_are_a_bar_of_their_own():
    frame = pd.DataFrame({"a": ["x", "y", None, "x", None, "y", "x", "x"]})
    schema = Schema.from_data(frame, missing="allow")
    bars = summary_marginals(schema.encode(frame, missing="allow"), np.array([2, 4, 0]))
    assert list(bars["a"].index) == ["x", "y", "(missing)"]
    np.testing.assert_allclose(bars["a"]["full data"].to_numpy(), [4 / 8, 2 / 8, 2 / 8])
    np.testing.assert_allclose(bars["a"].iloc[:, 1].to_numpy(), [1 / 3, 0, 2 / 3])
