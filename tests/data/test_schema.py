import numpy as np
import pandas as pd
import pytest

from bnfisher import BayesianNetwork, Schema, discretize, encode, infer_states, learn
from bnfisher.data.providers import count_family
from bnfisher.exceptions import DataError, SchemaError


def test_encode_infers_sorted_and_categorical_states():
    df = pd.DataFrame(
        {
            "s": ["b", "a", "b"],
            "c": pd.Categorical(["lo", "hi", "lo"], categories=["lo", "mid", "hi"]),
            "flag": [True, False, True],
            "n": np.array([3, 1, 3], dtype=np.int8),
        }
    )
    original = df.copy()
    encoded = encode(df)
    assert encoded.states == {"s": ("a", "b"), "c": ("lo", "mid", "hi"), "flag": (False, True), "n": (1, 3)}
    assert encoded.codes.tolist() == [[1, 0, 1, 1], [0, 2, 0, 0], [1, 0, 1, 1]]
    assert encoded.codes.flags.f_contiguous  # column-major: counting is per column
    pd.testing.assert_frame_equal(df, original)  # user data untouched


@pytest.mark.parametrize("storage", ["pyarrow", "python"])
def test_text_columns_encode_as_object_columns(storage):
    """Text as pandas reads it (a string dtype, numbered without a Python string per row) against the same labels
    in an object column: the same states and codes, missing cells -1, a value outside the states an error or -1."""
    if storage == "pyarrow":
        pytest.importorskip("pyarrow")
    values = ["beta", "alpha", None, "gamma", "alpha", "émigré", "beta"]
    text = pd.DataFrame({"a": pd.array(values, dtype=pd.StringDtype(storage))})
    plain = pd.DataFrame({"a": pd.Series(values, dtype=object)})
    schema = Schema.from_data(text.dropna())
    assert schema.states == Schema.from_data(plain.dropna()).states
    assert schema.states["a"] == ("alpha", "beta", "gamma", "émigré")
    ours = schema.encode(text, missing="allow").codes
    np.testing.assert_array_equal(ours, schema.encode(plain, missing="allow").codes)
    assert ours[:, 0].tolist() == [1, 0, -1, 2, 0, 3, 1]
    narrow = Schema({"a": ("alpha", "beta")})
    with pytest.raises(SchemaError, match=r"Column 'a' has value 'gamma' \(row 2\)"):
        narrow.encode(text.dropna().reset_index(drop=True))
    marginalized = narrow.encode(text, missing="allow", handle_unknown="marginalize").codes[:, 0]
    assert marginalized.tolist() == [1, 0, -1, -1, 0, -1, 1]


@pytest.mark.parametrize(
    "df, states, match",
    [
        (pd.DataFrame({"a": ["x", None]}), None, r"Column 'a' has 1 missing value"),
        (pd.DataFrame({"a": ["x", "teal"]}), {"a": ("x", "y")}, r"Column 'a' has value 'teal' \(row 1\)"),
        (pd.DataFrame({"a": ["x"]}), {"a": ("x",), "b": ("u",)}, r"\['b'\] required by the model are absent"),
        (pd.DataFrame({"a": [0.5, 1.5]}), None, "floating point.*discretize"),
    ],
    ids=["missing", "unknown-value", "absent-column", "float-column"],
)
def test_encode_errors_name_column_and_value(df, states, match):
    with pytest.raises(ValueError, match=match):
        encode(df, states=states)


def test_encode_integer_array_checks_codes():
    assert encode(np.array([[0, 2], [1, 0]])).states == {"X0": (0, 1), "X1": (0, 1, 2)}
    with pytest.raises(ValueError, match="Column 1 \\('b'\\) has code 3"):
        encode(np.array([[0, 3]]), states={"a": (0, 1), "b": (0, 1, 2)})
    with pytest.raises(TypeError, match="integer dtype"):
        encode(np.array([["a"]]))


def test_model_rejects_unseen_value_during_use():
    network = learn(pd.DataFrame({"a": ["x", "y", "x"], "b": ["u", "u", "v"]}))
    with pytest.raises(ValueError, match="Column 'b' has value 'w'"):
        network.log_likelihood(pd.DataFrame({"a": ["x"], "b": ["w"]}))


def test_discretize_quantile_bins_are_explicit_and_at_most_bins():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.normal(size=200), "k": rng.integers(0, 100, 200), "c": ["a", "b"] * 100})
    out = discretize(df, bins=4)
    assert out["x"].cat.categories.size == 4
    assert out["k"].cat.categories.size <= 4  # 100 whole-number values: more than max(bins, 30), binned
    assert out["c"].tolist() == df["c"].tolist()
    assert pd.api.types.is_float_dtype(df["x"])  # input untouched
    counts = out["x"].value_counts().to_numpy()
    assert counts.min() >= 45
    with pytest.raises(ValueError, match="Column 'c' is not numeric"):
        discretize(df, columns=["c"])
    with pytest.raises(ValueError, match="`bins` must be >= 2"):
        discretize(df, bins=1)


def test_count_family_matches_pandas_crosstab():
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 3, size=(500, 3))
    table = count_family(codes, (2, 0), [3, 3, 3])
    expected = pd.crosstab(codes[:, 2], codes[:, 0]).reindex(index=range(3), columns=range(3), fill_value=0)
    np.testing.assert_array_equal(table, expected.to_numpy())
    assert table.sum() == 500


def test_one_state_column_as_parent_and_child():
    df = pd.DataFrame({"const": ["k"] * 6, "a": list("xyxyxx")})
    network = BayesianNetwork.from_data(df, {"const": [], "a": ["const"]})
    assert network.n_parameters == 1
    assert infer_states(df)["const"] == ("k",)


# ------------------------------------------------------------------ Schema
def test_schema_learned_jointly_bins_every_input_with_the_same_edges():
    rng = np.random.default_rng(4)
    first = pd.DataFrame({"x": rng.normal(size=300), "c": rng.choice(["u", "v"], 300)})
    second = pd.DataFrame({"x": rng.normal(2, 1, size=100), "c": ["w"] * 100})
    schema = Schema.from_data(first, second, bins=4)
    union = np.concatenate([first["x"], second["x"]])
    ordered = np.sort(union)  # 400 distinct values: the bins (e_k, e_k+1] hold 100 rows each
    np.testing.assert_allclose(schema.bin_edges["x"], ordered[[0, 99, 199, 299, 399]])
    assert schema.states["c"] == ("u", "v", "w")
    codes = schema.encode(second).codes[:, 0]
    expected = np.clip(np.searchsorted(np.asarray(schema.bin_edges["x"])[1:-1], second["x"], side="left"), 0, 3)
    np.testing.assert_array_equal(codes, expected)
    # Values outside the learned range go to the end bins; text numbers (a CSV read as text) are binned too.
    extreme = pd.DataFrame({"x": [-1e9, 1e9], "c": ["u", "u"]})
    assert schema.encode(extreme).codes[:, 0].tolist() == [0, 3]
    as_text = pd.DataFrame({"x": [str(v) for v in second["x"]], "c": second["c"]})
    np.testing.assert_array_equal(schema.encode(as_text).codes, schema.encode(second).codes)
    # Already-binned labels encode to the same bins.
    np.testing.assert_array_equal(schema.encode(schema.discretize(second)).codes, schema.encode(second).codes)


def test_schema_round_trips_through_json(tmp_path):
    frame = pd.DataFrame({"x": np.linspace(-1, 1, 50), "n": [1, 2] * 25, "b": [True, False] * 25,
                          "s": list("ab") * 25})
    schema = Schema.from_data(frame, bins=3, columns=["x"], na_values=["?", -99])
    again = Schema.from_json(schema.to_json())
    assert again == schema
    assert type(again.states["n"][0]) is int and type(again.states["b"][0]) is bool
    path = tmp_path / "schema.json"
    schema.to_json(path)
    assert Schema.read_json(path) == schema
    with pytest.raises(SchemaError, match="Not a bnfisher schema"):
        Schema.from_json('{"states": []}')


def test_schema_refuses_what_would_be_a_silent_wrong_answer():
    with pytest.raises(DataError, match="mixes value types"):
        Schema.from_data(pd.DataFrame({"a": [1, True, 1.0, "z"]}, dtype=object))
    with pytest.raises(DataError, match="non-finite value inf"):
        Schema.from_data(pd.DataFrame({"x": [0.0, 1.0, np.inf]}), bins=2)
    with pytest.raises(DataError, match="missing value"):
        Schema.from_data(pd.DataFrame({"a": ["x", "?"]}), na_values=["?"])


def test_discretize_keeps_zero_inflated_columns_informative():
    rng = np.random.default_rng(2)
    x = np.where(rng.random(1000) < 0.7, 0.0, rng.exponential(size=1000))
    out = discretize(pd.DataFrame({"x": x}), bins=4)
    assert out["x"].cat.categories.size >= 3
    assert out["x"].value_counts().min() > 0


def test_encode_matches_labels_by_text_when_types_differ():
    """A network read from BIF holds '1' where a CSV gives 1 (or the reverse)."""
    schema = Schema({"a": ("1", "2"), "b": (0, 1)})
    codes = schema.encode(pd.DataFrame({"a": [2, 1], "b": ["1", "0"]})).codes
    assert codes.tolist() == [[1, 1], [0, 0]]


def _bin_sizes(values, bins):
    from bnfisher.data.binning import bin_codes, make_bin_edges
    edges = make_bin_edges(values.astype(float), bins, "quantile", "x")
    return edges, np.bincount(bin_codes(values.astype(float), edges), minlength=len(edges) - 1)


def test_quantile_bins_are_row_quantiles_without_ties():
    """No ties: every bin holds N / bins rows, to one row (the definition of quantile bins)."""
    for n, bins in [(1000, 4), (997, 5), (50, 3)]:
        x = np.random.default_rng(n).normal(size=n)
        _, sizes = _bin_sizes(x, bins)
        assert sizes.size == bins and sizes.max() - sizes.min() <= 1


def test_quantile_bins_on_heavily_tied_columns_keep_ties_whole_and_no_near_empty_bin():
    """Skewed integer columns (letter's xegvy has 1 row at 0 and 4 at 15 of 20,000): bins as equal as ties allow."""
    rng = np.random.default_rng(5)
    for trial in range(40):
        k = int(rng.integers(3, 17))
        weights = rng.dirichlet(np.full(k, 0.4))
        x = rng.choice(k, size=int(rng.integers(200, 3000)), p=weights)
        bins = int(rng.integers(2, 6))
        edges, sizes = _bin_sizes(x, bins)
        n, distinct = x.size, np.unique(x)
        assert 1 <= sizes.size <= bins and sizes.sum() == n
        assert sizes.size >= 2 or distinct.size == 1
        # Ties whole: every distinct value lies in exactly one bin, and the edges are values of the column.
        assert set(edges[1:]).issubset(set(distinct.astype(float)))
        # No near-empty bin: brute force over every placement of cuts between distinct values shows how small
        # the smallest bin must be; ours is never below half of that optimum or below a quarter of N / bins.
        counts = np.array([np.sum(x == v) for v in distinct])
        best_smallest = 0
        from itertools import combinations
        for m in range(1, min(bins, distinct.size) ):
            for cut in combinations(range(1, distinct.size), m):
                parts = np.add.reduceat(counts, (0,) + cut)
                best_smallest = max(best_smallest, parts.min())
        assert sizes.min() >= min(best_smallest, n / bins) / 4, (trial, counts.tolist(), sizes.tolist())


def test_quantile_bins_of_letter_like_column_have_no_near_empty_edge_bin():
    counts = {0: 1, 1: 13, 2: 17, 3: 34, 4: 79, 5: 416, 6: 1592, 7: 2516, 8: 7624, 9: 3437, 10: 2394, 11: 1437,
              12: 348, 13: 72, 14: 16, 15: 4}  # letter's xegvy column (20,000 rows)
    x = np.repeat(list(counts), list(counts.values()))
    _, sizes = _bin_sizes(x, 4)
    assert sizes.size == 4 and sizes.min() >= 20000 / 8


def test_integer_codes_stay_labels_unless_named_and_naming_them_warns():
    """The rule: floats and integer columns with more than max(bins, 30) values are binned; fewer are codes."""
    from bnfisher import Schema
    from bnfisher.exceptions import DataWarning

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.integers(18, 90, 500), "relp": rng.integers(0, 18, 500),
                       "wage": rng.gamma(2.0, 10.0, 500)})
    schema = Schema.from_data(df, bins=4)
    assert sorted(schema.bin_edges) == ["age", "wage"]
    assert schema.states["relp"] == tuple(sorted(df["relp"].unique().tolist()))
    assert sorted(Schema.from_data(df, bins=4, categorical=["age"]).bin_edges) == ["wage"]
    with pytest.warns(DataWarning, match="'relp' holds whole numbers with only 18 distinct values"):
        assert sorted(Schema.from_data(df, bins=4, columns=["relp", "wage"]).bin_edges) == ["relp", "wage"]
    with pytest.raises(ValueError, match=r"both to bin \(`columns`\) and `categorical`"):
        Schema.from_data(df, bins=4, columns=["age"], categorical=["age"])
    with pytest.raises(ValueError, match="passed in `categorical` are not in the data"):
        Schema.from_data(df, bins=4, categorical=["nope"])


def test_csv_and_parquet_copies_of_a_table_give_one_analysis(tmp_path):
    """Integer codes read back as numbers (CSV) or kept as text (Parquet): the same bins, the same statistics."""
    pytest.importorskip("pyarrow")
    import bnfisher as bf
    from bnfisher.data.io import read_table

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"age": rng.integers(18, 90, 600), "relp": rng.integers(0, 18, 600),
                          "sex": rng.integers(1, 3, 600)})
    frame.to_csv(tmp_path / "t.csv", index=False)
    text = frame.astype({"relp": str, "sex": str})
    text.to_parquet(tmp_path / "t.parquet")
    results = []
    for name in ("t.csv", "t.parquet"):
        table = read_table(tmp_path / name)
        result = bf.compare(table.iloc[:300], table.iloc[300:], bins=4, n_permutations=50, random_state=0)
        results.append(result)
        assert any("age" in note and "Binned 1 numeric column" in note for note in result.notes)
    assert results[0].test.p_value == results[1].test.p_value
    assert results[0].test.statistic == pytest.approx(results[1].test.statistic, rel=1e-12)


def test_label_positions_match_pandas_hash_table_for_few_and_many_values():
    """The dict lookup a column's few labels take finds what pandas' object index finds: by hash and ``==`` (1, 1.0,
    True and numpy's scalars alike), -1 for a value that is no state; many values take pandas' own table."""
    import pandas as pd

    from bnfisher.data.labels import _positions

    states = ("a", 1, 2.5, np.str_("b"), "c")
    few = np.array(["a", np.int64(1), 1.0, True, 2.5, np.float32(2.5), "b", np.str_("a"), "x", 0, "c"], dtype=object)
    many = np.array([f"v{i}" for i in range(3000)] + ["a", "b"], dtype=object)
    for values in (few, many, np.array([], dtype=object)):
        expected = pd.Index(list(states), dtype=object).get_indexer(pd.Index(values, dtype=object))
        np.testing.assert_array_equal(_positions(values, states), expected)
    assert _positions(few, states).tolist()[:4] == [0, 1, 1, 1]
