"""The jobs resolve their inputs once and return results that print, serialise and render without recomputing."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.data.schema import Schema
from bnfisher.kernels.columns import KernelColumns


@pytest.fixture
def two_tables():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, size=(400, 4))
    b = rng.integers(0, 3, size=(300, 4))
    b[:, 1] = b[:, 0]  # a dependence that only B has
    frame = lambda x: pd.DataFrame({c: [f"s{v}" for v in x[:, i]] for i, c in enumerate("wxyz")})  # noqa: E731
    return frame(a), frame(b)


@pytest.fixture
def counted(monkeypatch):
    """Counts of the DataFrame-to-codes encodings and of the kernel-column builds (the expensive steps)."""
    counts = {"encode": 0, "columns": 0}
    encode_frame, columns_init = Schema._encode_frame, KernelColumns.__init__  # noqa: SLF001

    def counting_encode(self, *args, **kwargs):
        counts["encode"] += 1
        return encode_frame(self, *args, **kwargs)

    def counting_columns(self, *args, **kwargs):
        counts["columns"] += 1
        return columns_init(self, *args, **kwargs)

    monkeypatch.setattr(Schema, "_encode_frame", counting_encode)
    monkeypatch.setattr(KernelColumns, "__init__", counting_columns)
    return counts


def test_compare_encodes_each_table_once_and_builds_the_columns_once(two_tables, counted):
    counts = counted
    result = bf.compare(*two_tables, n_permutations=50, random_state=0)
    assert counts == {"encode": 2, "columns": 1}
    # Printing, serialising and rendering compute nothing again.
    text, content = str(result), result.to_dict()
    assert counts == {"encode": 2, "columns": 1}
    assert result.verdict() in text and content["verdict"] == result.verdict()


def test_compare_finds_the_planted_dependence_and_says_so_first(two_tables):
    result = bf.compare(*two_tables, n_permutations=200, random_state=0)
    # The aggregate's smallest p-value: the observed split and at most one permutation per other component.
    assert result.test.p_value <= 3 / 201 + 1e-12 and result.test.components.loc["fisher", "p_value"] <= 1 / 201
    assert result.test.carried_by == "blocks" and "the family of" in result.signal()
    assert result.families.iloc[0]["variable"] in ("x", "w")
    assert result.verdict().startswith("A and B differ")
    # The report's inline chart of the top family shows the planted change: x decides y in B only.
    top = result.profiles[0]
    assert top["variable"] == result.families.iloc[0]["variable"]
    assert 0.5 * sum(abs(p - q) for p, q in zip(top["A"], top["B"])) > 0.3
    # The witness is positive on average on A's rows and negative on B's: mu_A - mu_B is its direction.
    assert result.witness.values[0].mean() > 0 > result.witness.values[1].mean()


def test_compare_of_one_table_split_at_random_says_no_difference(two_tables):
    a, _ = two_tables
    result = bf.compare(a.iloc[:200], a.iloc[200:], n_permutations=200, random_state=0)
    if result.test.p_value > 0.05:
        assert result.verdict().startswith("No significant difference between A and B")


def test_compare_result_serialises_and_renders(two_tables, tmp_path):
    result = bf.compare(*two_tables, n_permutations=30, random_state=0, names=("first", "second"))
    content = json.loads(result.to_json(tmp_path / "r.json"))
    assert content["test"]["p_value"] == pytest.approx(result.test.p_value)
    assert json.loads((tmp_path / "r.json").read_text()) == content
    html = result.to_html(tmp_path / "r.html")
    assert "first" in html and (tmp_path / "r.html").exists()
    assert result.verdict() in result._repr_html_()


def test_compare_refuses_what_is_not_a_table():
    with pytest.raises(bf.BnfisherError, match="`A` must be a pandas DataFrame"):
        bf.compare(np.zeros((3, 2)), pd.DataFrame({"a": [1]}))


def test_summarize_encodes_once_and_builds_the_columns_once(two_tables, counted):
    counts = counted
    result = bf.summarize(two_tables[0], 15, n_init=40, n_random=60, n_criticisms=3, random_state=0)
    assert counts == {"encode": 1, "columns": 1}
    text, content = str(result), result.to_dict()
    assert counts == {"encode": 1, "columns": 1}
    assert result.verdict() in text and content["selection"]["random_subsets"] == 60


def test_summarize_statistics_agree_with_independent_computations(two_tables):
    data = two_tables[0]
    result = bf.summarize(data, 15, n_init=40, n_random=60, random_state=0)
    kernel = result.kernel
    # The subset's MMD² from count tables (FamilyKernel.mmd), not from the criterion's cells.
    assert result.mmd2 == pytest.approx(kernel.mmd(data.iloc[result.indices], data), rel=1e-9, abs=1e-12)
    # Each random subset's MMD² by the Gram matrix definition (a few of them).
    gram = kernel.gram(data)
    rng = np.random.default_rng(0)
    for _ in range(3):
        rows = np.sort(rng.choice(len(data), 15, replace=False))
        value = gram[np.ix_(rows, rows)].mean() - 2 * gram[rows].mean() + gram.mean()
        assert value == pytest.approx(kernel.mmd(data.iloc[rows], data), rel=1e-9)
    assert result.mmd2 <= result.random_mmd2.min()
    assert result.subset["row"].tolist() == list(result.indices)


def test_a_pooled_search_is_measured_against_the_whole_table(two_tables):
    """pool_size below the rows: candidates from a pool, the target and the yardstick the whole table."""
    data = pd.concat(two_tables, ignore_index=True)  # 700 rows
    pooled = bf.summarize(data, 15, n_init=40, n_random=60, random_state=0, pool_size=200)
    assert "uniform pool of 200 of the 700 rows" in str(pooled)
    assert len(set(pooled.indices)) == 15 and pooled.indices.max() < len(data)
    # Measured against every row (FamilyKernel.mmd from count tables), and better than random subsets of the table.
    assert pooled.mmd2 == pytest.approx(pooled.kernel.mmd(data.iloc[pooled.indices], data), rel=1e-9, abs=1e-12)
    assert pooled.mmd2 < np.quantile(pooled.random_mmd2, 0.05)
    # A pool at least as large as the table is no pool: the same rows as the search over every row.
    whole = bf.summarize(data, 15, n_init=40, n_random=60, random_state=0)
    assert np.array_equal(whole.indices, bf.summarize(data, 15, n_init=40, n_random=60, random_state=0,
                                                       pool_size=700).indices)
    with pytest.raises(bf.exceptions.OptionError, match="not below pool_size"):
        bf.summarize(data, 15, pool_size=10)


def test_summarize_reports_the_share_of_incomplete_rows(two_tables):
    data = two_tables[0].copy()
    data.iloc[::10, 0] = None
    result = bf.summarize(data, 15, n_init=20, n_random=20, random_state=0)
    subset, whole = result.incomplete_share()
    assert whole == pytest.approx(0.1)
    assert subset == pytest.approx(data.iloc[result.indices].isna().any(axis=1).mean())
    assert "Rows with a missing cell" in str(result)


def test_guardrails_warn_once_and_are_kept_on_the_results(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"id": [f"r{i}" for i in range(120)], "x": rng.choice(["a", "b", "?"], 120),
                          "y": rng.choice(["p", "q"], 120), "n": rng.integers(0, 10**6, 120)})
    with pytest.warns(bf.exceptions.DataWarning) as caught:
        result = bf.summarize(table, 5, n_init=5, n_random=5, random_state=0, bins=3)
    texts = [str(w.message) for w in caught]
    assert any("'id'" in t and "identifier" in t for t in texts)
    assert any("'x' holds '?'" in t and "na_values=['?']" in t for t in texts)
    assert not any("'n'" in t and "identifier" in t for t in texts)  # a binned numeric column is no identifier
    assert result.advice == texts and all(t in result.to_dict()["warnings"] for t in texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bf.exceptions.DataWarning)
        warnings.filterwarnings("ignore", category=bf.exceptions.DataWarning)  # and they can be silenced
        bf.summarize(table.drop(columns="id"), 5, n_init=5, n_random=5, random_state=0, na_values=["?"], bins=3)


def test_a_column_that_defines_the_split_is_named_with_its_share(two_tables):
    a, b = two_tables
    with pytest.warns(bf.exceptions.DataWarning, match=r"'split' is constant within each table .* carries \d+%"):
        result = bf.compare(a.assign(split="train"), b.assign(split="test"), n_permutations=50, random_state=0)
    share = float(result.families.loc[result.families["variable"] == "split", "share"].iloc[0])
    assert f"{100 * share:.0f}%" in result.advice[-1]


def test_columns_outside_the_compared_variables_are_named_in_a_warning(two_tables):
    """A column only the second table has was left out without a word (as drift says of a window's)."""
    a, b = two_tables
    with pytest.warns(bf.exceptions.DataWarning, match=r"Column\(s\) 'batch' of b.csv are not in a.csv and are left "
                                                        r"out of the comparison; drop them, or add them to a.csv"):
        result = bf.compare(a, b.assign(batch=7), names=("a.csv", "b.csv"), n_permutations=20, random_state=0)
    assert "batch" not in result.network.variables and any("'batch'" in t for t in result.advice)
    assert any("'batch'" in t for t in result.to_dict()["warnings"])
    network = bf.learn(a[["w", "x"]], "chow-liu")
    with pytest.warns(bf.exceptions.DataWarning, match=r"Column\(s\) 'y', 'z' of B are not in the given network .* "
                                                        "give a network that has them"):
        bf.compare(a, b, network=network, n_permutations=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bf.exceptions.DataWarning)  # the same columns: no such warning
        bf.compare(a, b, n_permutations=20, random_state=0)


def test_one_table_given_twice_is_named_and_its_text_shows_no_negative_zero(two_tables):
    a, _ = two_tables
    with pytest.warns(bf.exceptions.DataWarning, match="a.csv and a.csv hold the same rows in the same order"):
        result = bf.compare(a, a.copy(), names=("a.csv", "a.csv"), n_permutations=20, random_state=0)
    text = result.to_text()
    assert "Largest cells: none (no cell differs between the tables)" in text
    assert "(-0)" not in text and "row 0 (0)" in text  # the witness is 0 on every row, of either sign
    with warnings.catch_warnings():
        warnings.simplefilter("error", bf.exceptions.DataWarning)
        bf.compare(a, a.iloc[::-1], n_permutations=20, random_state=0)  # the same rows, another order: no warning
    for names in (("x", "y", "z"), "xy"):
        with pytest.raises(bf.exceptions.OptionTypeError, match="`names` must be two names, one per table"):
            bf.compare(a, a.iloc[::-1], names=names)


def test_the_figure_leads_with_the_mechanisms_that_changed():
    """The mechanism chart (what the verdict names) above the family chart and the histograms: a bar per variable
    of -log10 of its Holm-adjusted p, red where the mechanism changed; no chart when nothing changed."""
    pytest.importorskip("matplotlib")
    from bnfisher.datasets import load

    data = load("nursery").astype(str).sample(frac=1.0, random_state=0).reset_index(drop=True)
    a, b = data.iloc[:1500], data.iloc[1500:3000].copy()
    b.loc[(b["parents"] == "usual").to_numpy() & (np.arange(1500) % 2 == 0), "has_nurs"] = "critical"
    result = bf.compare(a, b, n_permutations=99, random_state=0)
    table = result.mechanisms
    assert table["changed"].any()
    figure = result.plot()
    top = figure.axes[0]
    assert len(figure.axes) == 3 and top.get_title().startswith("Which mechanisms changed")
    bars = top.patches[::-1]  # drawn bottom-up: the table's order from the top
    shown = table.head(len(bars))
    np.testing.assert_allclose([bar.get_width() for bar in bars], -np.log10(shown["p_adjusted"].to_numpy()))
    red = [bar.get_facecolor()[:3] == pytest.approx((0xc0 / 255, 0x39 / 255, 0x2b / 255)) for bar in bars]
    assert red == shown["changed"].tolist()
    assert [label.get_text().split(" ")[0] for label in top.get_yticklabels()][::-1] == shown["variable"].tolist()
    assert len(bf.compare(a, a.iloc[::-1], n_permutations=20, random_state=0).plot().axes) == 2
    page = result.to_html()  # the report: the mechanism chart besides the network, families and witness
    assert 'alt="which mechanisms changed: -log10' in page and page.count("data:image/png;base64,") == 4


def test_comparison_witness_equals_its_definition_from_the_gram_matrix():
    """witness(x) = mean_a K(x, a) - mean_b K(x, b), from Theorem 1's Gram matrix (duplicated rows included)."""
    from bnfisher.datasets import load

    data = load("nursery").sample(300, random_state=1).reset_index(drop=True)
    a, b = pd.concat([data.iloc[:120], data.iloc[:30]]), data.iloc[120:]  # A holds 30 rows twice
    result = bf.compare(a, b, n_permutations=20, random_state=0)
    kernel = result.kernel
    for sample, values in zip((a, b), result.witness.values):
        expected = kernel.gram(sample, a).mean(axis=1) - kernel.gram(sample, b).mean(axis=1)
        np.testing.assert_allclose(values, np.asarray(expected).ravel(), rtol=1e-9, atol=1e-9)
    # With missing cells the witness is that of the marginalized kernel (paper Sec. 8), from its Gram matrix.
    holes = np.random.default_rng(2).random(a.shape) < 0.1
    a = a.mask(holes)
    result = bf.compare(a, b, network=result.network, n_permutations=20, random_state=0)
    for sample, values in zip((a, b), result.witness.values):
        expected = kernel.gram(sample, a).mean(axis=1) - kernel.gram(sample, b).mean(axis=1)
        np.testing.assert_allclose(values, np.asarray(expected).ravel(), rtol=1e-9, atol=1e-9)


def test_the_family_table_order_is_stated_and_the_headline_is_its_first_row():
    """Found changed first, largest share first; the verdict names row 0; floored p-values read '<=' and are
    resolved by their exact bound or a second run with ten times the permutations, as the note says."""
    import bnfisher as bf
    from bnfisher.comparison.explain import FAMILY_ORDER
    from bnfisher.datasets import load

    data = load("nursery")
    a, b = data.iloc[::2].reset_index(drop=True), data.iloc[1::2].reset_index(drop=True).copy()
    rng = np.random.default_rng(0)
    flip = rng.random(len(b)) < 0.5  # health given its parent changes in half of B's rows
    b.loc[flip, "health"] = rng.choice(sorted(data["health"].unique()), flip.sum())
    result = bf.compare(a, b, n_permutations=200, random_state=0)
    table = result.families
    found = table["p_adjusted"] <= 0.05
    assert found.any() and not found.iloc[found.sum():].any()  # the found families lead
    shares = table.loc[found, "share"].to_numpy()
    assert np.all(np.diff(shares) <= 0)
    named = result.mechanisms.loc[result.mechanisms["changed"], "variable"].tolist()
    verdict = result.verdict()
    assert f"the mechanism that changed is {named[0]}'s" in verdict  # the mechanism search heads the verdict
    # Two things differ: health's values were redrawn in half of B's rows, and finance's marginal differs between
    # the bundled table's even and odd rows (3,600 against 2,880).  Health's marginal and its law given social did
    # not move, so once finance is flagged the set {social} separates health from the label (CD-NOD's logic).
    assert set(named) <= {"health", "finance"} and named
    text = result.to_text()
    assert f"sorted by {', '.join(FAMILY_ORDER)}" in text
    floor = table.attrs["p_floor"]
    if (table["p_value"] <= floor).any():
        assert "'<=': at the floor of" in text and "<= " in text
        assert any("run again with" in note or "resolved by its exact bound" in note for note in result.notes)
    assert result.to_dict()["families_order"] == list(FAMILY_ORDER)


def test_the_search_graph_of_a_long_pool_is_learned_on_a_uniform_sample(monkeypatch):
    """Beyond GRAPH_ROWS pooled rows the search's DAG is learned on that many rows drawn from the pool (counted: the
    weights the climb sees sum to it), the note says so, and the changed mechanism is still the one named."""
    import bnfisher.jobs.attribute as attribute

    seen = []
    real = attribute.NumpyCounts

    def counts(codes, schema, *, weights, missing):
        seen.append(float(np.sum(weights)))
        return real(codes, schema, weights=weights, missing=missing)

    monkeypatch.setattr(attribute, "GRAPH_ROWS", 1500)
    monkeypatch.setattr(attribute, "NumpyCounts", counts)
    states = {v: ("0", "1") for v in "abc"}
    cpts = {"a": [0.5, 0.5], "b": [[0.9, 0.1], [0.2, 0.8]], "c": [[0.8, 0.2], [0.3, 0.7]]}
    net = bf.BayesianNetwork({"a": [], "b": ["a"], "c": ["b"]}, cpts, states)
    moved = bf.BayesianNetwork(dict(net.parents), {**cpts, "b": [[0.6, 0.4], [0.2, 0.8]]}, states)
    result = bf.compare(net.sample(2000, random_state=0), moved.sample(2000, random_state=1), random_state=0)
    assert seen == [1500.0]
    assert any("on 1,500 of them drawn uniformly" in note for note in result.notes)
    assert result.mechanisms.loc[result.mechanisms["changed"], "variable"].tolist() == ["b"]


def test_a_summary_whose_strata_are_taken_whole_writes_valid_json():
    """k equal to the rows: no search runs, so its initial and final criterion values were NaN, which is not JSON
    (the fuzzer's hostile tables found it).  They are null now, and every result's JSON parses strictly."""
    frame = pd.DataFrame({"a": np.array([None, "$5"], dtype=object), "b": [");", ");"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = bf.summarize(frame, 2, n_init=2, n_random=3, random_state=0, refine=None)
    content = json.loads(result.to_json(), parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    assert content["selection"]["initial"] is None and content["selection"]["final"] is None
