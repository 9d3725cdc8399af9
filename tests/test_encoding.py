import numpy as np
import pandas as pd
import pytest

from bnfisher import BayesianNetwork, discretize, encode, infer_states, learn
from bnfisher.counts import count_family


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
    df = pd.DataFrame({"x": rng.normal(size=200), "k": rng.integers(0, 16, 200), "c": ["a", "b"] * 100})
    out = discretize(df, bins=4)
    assert out["x"].cat.categories.size == 4
    assert out["k"].cat.categories.size <= 4
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
