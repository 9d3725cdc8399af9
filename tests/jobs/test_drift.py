"""Drift over windows: exact p-values (against enumeration), windows, unseen labels, the family-wise rate, CLI."""

from __future__ import annotations

import importlib.util
import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.cli import main
from bnfisher.data.io import read_table
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.datasets import load
from bnfisher.exceptions import DataError, OptionError, OptionTypeError, SchemaError


@pytest.fixture(scope="module")
def nursery() -> pd.DataFrame:
    return load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)


def _shuffled(frame: pd.DataFrame, column: str, seed: int) -> pd.DataFrame:
    """The same rows with ``column`` permuted among them: every marginal kept, its dependence on the rest gone."""
    out = frame.copy()
    out[column] = np.random.default_rng(seed).permutation(out[column].to_numpy())
    return out


def test_window_p_value_equals_the_enumerated_permutation_distribution():
    """Oracle: every split of the pooled rows enumerated, MMD² from the definition ||mean Φ_A − mean Φ_B||²."""
    rng = np.random.default_rng(3)
    reference = pd.DataFrame({"a": rng.choice(["x", "y"], 24), "b": rng.choice(["u", "v", "w"], 24)})
    reference["c"] = np.where(rng.random(24) < 0.8, reference["a"], "z")
    window = pd.DataFrame({"a": ["x", "x", "y", "x", "x"], "b": ["u", "u", "u", "v", "u"],
                           "c": ["x", "z", "y", "x", "x"]})
    with pytest.warns(bf.exceptions.DataWarning, match="fewer than 30 rows"):
        result = bf.drift(reference, [window], n_permutations=19999, test="mmd", stopping="fixed", random_state=5)
    # The same construction by hand: the schema from the reference, structure and CPTs from the reference and the
    # window pooled (the default compares the whole reference with every window).
    rest = reference
    schema = Schema.from_data(reference, missing="allow")
    codes = np.vstack([schema.encode(rest, handle_unknown="marginalize", missing="allow").codes,
                       schema.encode(window, handle_unknown="marginalize", missing="allow").codes])
    pooled = EncodedData(np.asfortranarray(codes), schema.variables, dict(schema.states), schema)
    network = bf.learn(pooled, "chow-liu", schema=schema)
    features = bf.FisherKernel(network).embed(pooled)
    features = features.toarray() if hasattr(features, "toarray") else np.asarray(features)
    n, m = len(rest), len(window)
    splits = np.array(list(itertools.combinations(range(n + m), m)))
    member = np.zeros((len(splits), n + m))
    np.put_along_axis(member, splits, 1.0, axis=1)
    mean_b = member @ features / m
    mean_a = (features.sum(axis=0) - member @ features) / n
    statistics = ((mean_a - mean_b) ** 2).sum(axis=1)
    observed = ((features[:n].mean(axis=0) - features[n:].mean(axis=0)) ** 2).sum()
    exact = float(np.mean(statistics >= observed - 1e-12))
    assert result.windows["mmd2"].iloc[0] == pytest.approx(observed, rel=1e-9)
    p = result.windows["p_value"].iloc[0]
    error = np.sqrt(exact * (1 - exact) / 20000)
    assert abs(p - exact) <= 4 * error + 1 / 20000, (p, exact)


def test_every_window_is_refitted_on_its_own_pool(nursery):
    # The reference's count tables are counted once and added to each window's: each window's network must still
    # be the one learned on the reference and that window pooled, whatever the windows before it held.
    reference = nursery.iloc[:3000]
    windows = [nursery.iloc[3000:3600], _shuffled(nursery.iloc[3600:4200], "health", seed=2),
               nursery.iloc[4200:4300]]
    result = bf.drift(reference, windows, n_permutations=99, random_state=1, n_jobs=2)
    schema = result.network.schema
    for k, window in enumerate(windows):
        fitted = result.comparison(f"window {k + 1}").network
        pooled = bf.learn(schema.encode(pd.concat([reference, window])), "chow-liu", schema=schema)
        assert fitted.parents == pooled.parents
        for v in pooled.variables:
            np.testing.assert_allclose(fitted.cpts[v], pooled.cpts[v], rtol=1e-12, atol=0)


@pytest.mark.parametrize("structure", ["chow-liu", "hc"])
def test_the_reference_network_is_the_one_learned_on_its_rows(nursery, structure):
    # drift learns it from the reference's count tables kept for the windows' refits: the network of the rows.
    reference = nursery.iloc[:3000]
    result = bf.drift(reference, [nursery.iloc[3000:3500]], structure=structure, n_permutations=19, random_state=0)
    schema = result.network.schema
    direct = bf.learn(schema.encode(reference), structure, schema=schema)
    assert result.network.parents == direct.parents
    for v in direct.variables:
        np.testing.assert_allclose(result.network.cpts[v], direct.cpts[v], rtol=1e-12, atol=0)


def test_planted_dependence_change_is_found_in_its_window_and_family(nursery):
    reference = nursery.iloc[:4000]
    windows = [nursery.iloc[4000 + 800 * k: 4800 + 800 * k] for k in range(5)]
    windows[3] = _shuffled(windows[3], "health", seed=1)  # marginals unchanged, health's dependence gone
    result = bf.drift(reference, windows, random_state=0)
    assert result.windows["drift"].tolist() == [False, False, False, True, False]
    flagged = result.comparison("window 4").families
    changed = flagged.loc[flagged["p_adjusted"] <= 0.05]
    assert "health" in set(changed["variable"]) | set(changed["parents"])
    assert result.windows.loc[3, "family"] in ("health", "class")
    # Per-column chi-square tests see nothing: every marginal of the window is the one it had.
    from scipy.stats import chi2_contingency

    for column in nursery.columns:
        table = pd.crosstab(np.r_[np.zeros(4000), np.ones(800)],
                            pd.concat([reference[column], windows[3][column]]).to_numpy())
        if column == "health":
            assert chi2_contingency(table)[1] > 0.05
    assert "window 4" in result.verdict() and "1 of 5 windows" in result.verdict()


@pytest.mark.slow
def test_family_wise_false_alarm_rate_over_windows(nursery):
    """100 runs of 8 windows with no drift: any window flagged in at most 0.05 + 2.5 s.e. of the runs (s.e. 0.022)."""
    alarms = 0
    runs = 100
    for seed in range(runs):
        rows = np.random.default_rng(seed).permutation(len(nursery))[:2000 + 8 * 300]
        reference = nursery.iloc[rows[:2000]]
        windows = [nursery.iloc[rows[2000 + 300 * k: 2300 + 300 * k]] for k in range(8)]
        result = bf.drift(reference, windows, n_permutations=299, random_state=seed)
        alarms += bool(result.windows["drift"].any())
    assert alarms / runs <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / runs), alarms


def test_time_windows_rows_windows_and_tables(nursery):
    data = nursery.iloc[2000:3400].copy()
    data.insert(0, "when", pd.Timestamp("2026-03-02") + pd.to_timedelta(np.arange(len(data)) // 100, unit="D"))
    result = bf.drift(nursery.iloc[:800], data, time="when", window="1W", n_permutations=99, random_state=0)
    # 14 days from Monday 2 March, 100 rows a day: "1W" is an ISO week, Monday to Sunday -- two whole weeks.
    assert result.windows["window"].tolist() == ["2026-03-02", "2026-03-09"]
    assert result.windows["rows"].tolist() == [700, 700] and "when" not in result.comparisons[0].samples.frames[1]
    assert result.windows["start"].iloc[0] == pd.Timestamp("2026-03-02")
    sunday = bf.drift(nursery.iloc[:800], data, time="when", window="W-SUN", n_permutations=99, random_state=0)
    assert sunday.windows["window"].tolist() == ["2026-03-01", "2026-03-08", "2026-03-15"]  # pandas' own weeks
    assert sunday.windows["rows"].tolist() == [600, 700, 100]
    whole = bf.drift(nursery.iloc[:800], data, time="when", n_permutations=99, random_state=0)
    assert whole.windows["window"].tolist() == ["2026-03-02 to 2026-03-15"]  # no window: one, labelled by its span
    by_rows = bf.drift(nursery.iloc[:800], data.drop(columns="when"), window=500, n_permutations=99, random_state=0)
    assert by_rows.windows["rows"].tolist() == [500, 500, 400]
    named = bf.drift(nursery.iloc[:800], {"spring": data.iloc[:300], "summer": data.iloc[300:]}, time=None,
                     n_permutations=99, random_state=0)
    assert named.windows["window"].tolist() == ["spring", "summer"]
    assert bf.drift(nursery.iloc[:800], [data.iloc[:300]], n_permutations=99,
                    random_state=0).windows.equals(
        bf.drift(nursery.iloc[:800], [data.iloc[:300]], n_permutations=99, random_state=0).windows)


def test_threads_give_the_same_answer_as_one(nursery):
    """Each window draws from its own stream: n_jobs changes the speed, never the p-values."""
    data = nursery.iloc[2000:3500].astype(object)
    data.iloc[::37, 2] = np.nan  # missing cells: the pooled CPTs are then refitted by EM
    one = bf.drift(nursery.iloc[:2000], data, window=300, n_permutations=199, random_state=4)
    two = bf.drift(nursery.iloc[:2000], data, window=300, n_permutations=199, random_state=4, n_jobs=2)
    pd.testing.assert_frame_equal(one.windows, two.windows)
    for a, b in zip(one.comparisons, two.comparisons):
        np.testing.assert_array_equal(a.test.null_distribution, b.test.null_distribution)


def test_unseen_labels_and_missing_cells_are_counted_and_marginalized(nursery):
    window = nursery.iloc[3000:3300].astype(object)
    window.loc[window.index[:5], "finance"] = "bankrupt"       # a label the reference never shows
    window.loc[window.index[5:12], "social"] = np.nan
    result = bf.drift(nursery.iloc[:2000], [window], n_permutations=99, random_state=0)
    row = result.windows.iloc[0]
    assert (row["missing_cells"], row["unseen_cells"]) == (7, 5)


def test_a_windows_rows_with_a_label_the_reference_lacks_are_left_out_of_its_test(nursery):
    """Such rows are all in the window by construction; marginalising their cell kept rows of another law on one
    side only. The window's test is the test of its other rows, bit for bit."""
    window = nursery.iloc[3000:3300].astype(object)
    window.loc[window.index[:5], "finance"] = "bankrupt"
    reference = nursery.iloc[:2000]
    result = bf.drift(reference, [window], n_permutations=99, random_state=0)
    without = bf.drift(reference, [window.iloc[5:]], n_permutations=99, random_state=0)
    assert result.windows["p_value"].iloc[0] == without.windows["p_value"].iloc[0]
    assert result.windows["unseen_cells"].iloc[0] == 5
    assert any("5 row(s) with a label the reference lacks left out" in note for note in result.comparisons[0].notes)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"window": None, "time": "when"}, DataError, "not in"),
    ({"window": "1W"}, OptionError, "number of rows"),
    ({"time": "when", "window": 7}, DataError, "not in the data"),
    ({"window": 0}, OptionError, "positive int"),
    ({"window": 100, "alpha": 1.5}, OptionError, "alpha"),
    ({"window": 100, "fit_fraction": 1.0}, OptionError, "fraction"),
    ({"window": 100, "n_jobs": 0}, OptionError, "n_jobs"),
    ({"window": 100, "n_jobs": 1.5}, OptionTypeError, "n_jobs"),
])
def test_bad_options_name_the_argument(nursery, kwargs, error, words):
    with pytest.raises(error, match=words):
        bf.drift(nursery.iloc[:500], nursery.iloc[500:900], **kwargs)


def test_bad_times_and_windows_name_the_value():
    frame = pd.DataFrame({"when": ["2026-01-01", "yesterday"], "a": ["x", "y"]})
    with pytest.raises(DataError, match="row 1: 'yesterday'"):
        bf.drift(frame, frame, time="when", window="1D")
    with pytest.raises(OptionError, match="not a pandas frequency"):
        bf.drift(frame, frame.assign(when="2026-01-01"), time="when", window="fortnight")
    with pytest.raises(DataError, match="Window 'empty' has no rows"):
        bf.drift(frame, {"a": frame, "empty": frame.iloc[:0]})
    with pytest.raises(OptionTypeError, match="Window 'b' must be a DataFrame"):
        bf.drift(frame, {"a": frame, "b": [1, 2]})
    with pytest.raises(SchemaError, match="window 'window 1'"):
        bf.drift(pd.DataFrame({"a": list("xyxyxyxy")}), [pd.DataFrame({"b": ["x", "y"]})])


def test_the_result_prints_serialises_and_renders(nursery, tmp_path):
    windows = [nursery.iloc[4000:4600], _shuffled(nursery.iloc[4600:5200], "health", seed=2)]
    result = bf.drift(nursery.iloc[:2000], windows, random_state=1)
    text = str(result)
    assert result.verdict() in text and "Holm" in text and "window 2" in text
    content = json.loads(result.to_json(tmp_path / "drift.json"))
    assert content["kind"] == "drift" and [w["drift"] for w in content["windows"]] == [False, True]
    assert list(content["flagged"]) == ["window 2"] and content["flagged"]["window 2"]["kind"] == "comparison"
    html = result.to_html(tmp_path / "drift.html")
    assert "<script" not in html and html.count("data:image/png;base64,") == 1
    assert "window 2: reference and window 2 differ" in html and result.verdict() in html.replace("&#x27;", "'")
    assert "<p>" in result._repr_html_()


@pytest.mark.slow
def test_default_permutations_let_holm_reach_alpha(nursery):
    windows = [nursery.iloc[3000 + 75 * k: 3075 + 75 * k] for k in range(40)]
    result = bf.drift(nursery.iloc[:1000], windows, structure="naive-bayes", random_state=0, stopping="fixed",
                      learn_options={"class_variable": "class"})
    assert "3199 permutations per window" in result.notes[0]  # 4 x 40 / 0.05 - 1, above the floor of 2999
    assert (result.windows["p_value"] >= 1 / 3200).all()
    anytime = bf.drift(nursery.iloc[:1000], windows, structure="naive-bayes", random_state=0, stopping="anytime",
                       learn_options={"class_variable": "class"})
    assert "at 0.00125 is settled (anytime-valid, at most 6398)" in anytime.notes[0]  # Holm's first level, twice
    futility = bf.drift(nursery.iloc[:1000], windows, structure="naive-bayes", random_state=0,
                        learn_options={"class_variable": "class"})
    assert "3199 permutations, fewer where a rejection at 0.00125 became implausible" in futility.notes[0]


def test_cli_drift(tmp_path, nursery, capsys):
    nursery.iloc[:1000].to_csv(tmp_path / "ref.csv", index=False)
    data = nursery.iloc[3000:4000].copy()
    data.insert(0, "date", pd.date_range("2026-01-01", periods=len(data), freq="h").strftime("%Y-%m-%d %H:%M"))
    data.to_csv(tmp_path / "data.csv", index=False)
    report, plot = tmp_path / "drift.html", tmp_path / "timeline.png"
    code = main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "data.csv"), "--time-column", "date",
                 "--window", "1W", "--permutations", "99", "--quiet", "--report", str(report), "--plot", str(plot)])
    out = capsys.readouterr().out
    assert code == 0 and "windows" in out and report.exists() and plot.read_bytes()[:4] == b"\x89PNG"
    for argv, words in [(["--rows", "100", "--window", "1W", "--time-column", "date"], "not both"),
                        (["--window", "1W"], "needs --time-column"),
                        (["--time-column", "nope"], "not in")]:
        assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "data.csv"), *argv]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1
    assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "data.csv"), str(tmp_path / "ref.csv"),
                 "--rows", "10"]) == 2
    assert "each file is a window" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_drift_on_dask_parquet_parts_gives_the_in_memory_windows(tmp_path, nursery):
    """DATA as Parquet parts on a local Dask cluster: the same windows, rows and p-values as the table in memory."""
    pytest.importorskip("dask")
    nursery.iloc[:3000].to_csv(tmp_path / "ref.csv", index=False)
    data = nursery.iloc[3000:4000].copy()
    data.insert(0, "date", pd.date_range("2026-01-01", periods=len(data), freq="h").strftime("%Y-%m-%d %H:%M"))
    data.to_csv(tmp_path / "data.csv", index=False)
    data.iloc[:500].to_parquet(tmp_path / "part-0.parquet")
    data.iloc[500:].to_parquet(tmp_path / "part-1.parquet")
    args = ["--time-column", "date", "--window", "1W", "--permutations", "99", "--quiet"]
    assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "data.csv"), *args, "--json",
                 str(tmp_path / "memory.json")]) == 0
    assert main(["drift", str(tmp_path / "ref.csv"), str(tmp_path / "part-0.parquet"),
                 str(tmp_path / "part-1.parquet"), *args, "--engine", "dask", "--json",
                 str(tmp_path / "dask.json")]) == 0
    memory, dask = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("memory", "dask"))
    assert [(w["window"], w["rows"], w["p_value"]) for w in memory["windows"]] == \
        [(w["window"], w["rows"], w["p_value"]) for w in dask["windows"]]


# ----------------------------------------------------------------------------------------------- reference profiles
def _adult_like(seed: int, n: int) -> pd.DataFrame:
    """A table with missing cells, integer and string labels, and a rare label."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"work": rng.choice(["private", "self-emp", "gov", None], n, p=[0.6, 0.2, 0.15, 0.05]),
                          "grade": rng.choice([1, 2, 3], n).astype(object),
                          "region": rng.choice(["north", "south", "Outlying-US(Guam-USVI-etc)"], n, p=[.5, .49, .01])})
    return frame


def test_the_profile_of_a_union_is_the_merge_of_the_profiles():
    parts = [_adult_like(seed, n) for seed, n in ((0, 300), (1, 50), (2, 700))]
    whole = bf.profile(pd.concat(parts, ignore_index=True))
    merged = bf.merge_profiles([bf.profile(part) for part in parts])
    assert merged.schema == whole.schema
    assert np.array_equal(merged.codes, whole.codes) and np.array_equal(merged.counts, whole.counts)
    assert whole.n_rows == 1050 and whole.counts.sum() == 1050
    # The profile stands for the table: the same rows (as a multiset), missing cells included.
    def rows(frame):
        return sorted(map(str, frame.astype(object).where(frame.notna(), "<NA>").itertuples(index=False)))
    assert rows(whole.to_frame()) == rows(pd.concat(parts, ignore_index=True))


@pytest.mark.parametrize("n_columns, n_states", [(6, 3), (40, 10)])  # one 64-bit word a row, and several
def test_a_profile_is_the_sorted_distinct_rows_with_their_copies(n_columns, n_states):
    """Oracle: NumPy's ``unique`` of the encoded rows (lexicographic, missing first), an independent sort."""
    rng = np.random.default_rng(n_columns)
    values = rng.integers(0, n_states, size=(3000, n_columns)).astype(object)
    values[rng.random(values.shape) < 0.05] = None
    values[:, 0] = rng.integers(0, 2, 3000)  # one column without missing cells
    frame = pd.DataFrame(values, columns=[f"c{j}" for j in range(n_columns)])
    if n_columns == 6:
        frame = pd.concat([frame] * 3, ignore_index=True)  # copies
    p = bf.profile(frame)
    rows, copies = np.unique(p.schema.encode(frame, missing="allow").codes, axis=0, return_counts=True)
    np.testing.assert_array_equal(p.codes, rows)
    np.testing.assert_array_equal(p.counts, copies)


@pytest.mark.parametrize("n_labels", [200, 40_000])  # codes wider than one byte, and than two
@pytest.mark.parametrize("declared", [True, False])  # one schema (stacked) or labels united first
def test_merging_profiles_sorts_wide_codes_and_missing_cells_as_the_profile_of_the_union(n_labels, declared):
    rng = np.random.default_rng(n_labels)
    labels = [f"v{k}" for k in range(n_labels)]
    kind = pd.CategoricalDtype(labels) if declared else object
    parts = []
    for n in (n_labels // 2, n_labels, 30):
        wide = pd.Series(rng.choice(labels, n), dtype=kind).where(rng.random(n) > 0.1)  # missing cells
        parts.append(pd.DataFrame({"small": rng.choice(["a", "b"], n), "wide": wide,
                                   "last": rng.choice(["x", "y"], n)}))
    merged = bf.merge_profiles([bf.profile(part) for part in parts])
    union = bf.profile(pd.concat(parts, ignore_index=True))
    assert merged.schema == union.schema
    np.testing.assert_array_equal(merged.codes, union.codes)
    np.testing.assert_array_equal(merged.counts, union.counts)


def test_profiles_round_trip_through_their_file_and_refuse_other_files(tmp_path):
    p = bf.profile(_adult_like(0, 400))
    path = tmp_path / "ref.bnfp"
    p.save(path)
    back = bf.read_profile(path)
    assert back.schema == p.schema and np.array_equal(back.codes, p.codes) and np.array_equal(back.counts, p.counts)
    (tmp_path / "table.bnfp").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="is not a bnfisher profile"):
        bf.read_profile(tmp_path / "table.bnfp")
    header = json.loads(bytes(np.load(path)["header"]).decode())
    header["format_version"] = 99
    with open(tmp_path / "future.bnfp", "wb") as stream:  # a file handle: np.savez would append .npz to a path
        np.savez(stream, codes=p.codes, counts=p.counts,
                 header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    with pytest.raises(DataError, match="format version 99.*reads versions 1 to 2"):
        bf.read_profile(tmp_path / "future.bnfp")
    with pytest.raises(SchemaError, match="columns"):
        bf.merge_profiles([p, bf.profile(_adult_like(1, 50).drop(columns="grade"))])


def test_drift_and_compare_accept_a_profile_for_the_reference(nursery, tmp_path, capsys):
    reference = nursery.iloc[:3000].astype(object)
    windows = [nursery.iloc[3000:3600], _shuffled(nursery.iloc[3600:4200], "health", seed=3)]
    result = bf.drift(bf.profile(reference), windows, random_state=0)
    assert result.windows["drift"].tolist() == [False, True] and result.reference["rows"] == 3000
    assert bf.compare(bf.profile(reference), windows[1], n_permutations=99, random_state=0).test.p_value < 0.05
    reference.to_csv(tmp_path / "a.csv", index=False)
    nursery.iloc[3000:3600].to_csv(tmp_path / "b.csv", index=False)
    assert main(["profile", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "-o", str(tmp_path / "ab.bnfp")]) == 0
    assert bf.read_profile(tmp_path / "ab.bnfp").n_rows == 3600
    assert main(["drift", str(tmp_path / "ab.bnfp"), str(tmp_path / "b.csv"), "--rows", "300", "--quiet",
                 "--permutations", "99"]) == 0
    assert main(["profile", str(tmp_path / "a.csv"), "-o", str(tmp_path / "a.csv")]) == 2
    assert "a.bnfp" not in capsys.readouterr().err


def test_columns_the_reference_lacks_are_named_in_a_warning(nursery):
    with pytest.warns(bf.exceptions.DataWarning, match="Column.*batch_id.*not in the reference"):
        bf.drift(nursery.iloc[:1000], nursery.iloc[1000:1600].assign(batch_id="b7"), window=300, n_permutations=49,
                 random_state=0)


def _with_numbers(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = _adult_like(seed, n)
    frame["age"] = np.round(rng.gamma(6.0, 7.0, n), 1)  # a float column: to be binned
    return frame


def test_a_binned_profile_keeps_its_edges_and_bins_later_tables_with_them(tmp_path):
    reference = _with_numbers(0, 2000)
    p = bf.profile(reference, bins=4)
    edges = p.schema.bin_edges["age"]
    assert len(edges) == 5
    assert p.schema.states["age"] == bf.Schema.from_data(reference, bins=4, missing="allow").states["age"]
    p.save(tmp_path / "ref.bnfp")
    assert bf.read_profile(tmp_path / "ref.bnfp").schema.bin_edges["age"] == edges
    # A later table's numbers are binned with the reference's edges, not edges of its own: the same answer as
    # binning it by hand with pandas (values beyond the outer edges in the outer bins).
    later = _with_numbers(1, 600)
    later["age"] += 15.0  # an older population: most of it falls in the reference's top bin
    codes = pd.cut(later["age"].clip(edges[0], edges[-1]), bins=list(edges), labels=False, include_lowest=True)
    by_hand = later.assign(age=pd.Categorical.from_codes(codes, categories=p.schema.states["age"], ordered=True))
    assert (codes == len(edges) - 2).mean() > 0.5
    by_profile = bf.drift(p, [later], n_permutations=199, random_state=0)
    pd.testing.assert_frame_equal(by_profile.windows,
                                  bf.drift(p.to_frame(), [by_hand], n_permutations=199, random_state=0).windows)
    assert by_profile.windows["drift"].item() and by_profile.windows["family"].item() == "age"
    with pytest.raises(OptionError, match="binned already"):
        bf.drift(p, [later], bins=3)
    with pytest.raises(OptionError, match="binned already"):
        bf.compare(p, later, bins=3)
    assert bf.compare(p, later, n_permutations=99, random_state=0).test.p_value < 0.05


def test_binned_profiles_merge_only_with_the_same_edges():
    first, second = _with_numbers(0, 500), _with_numbers(1, 500)
    schema = bf.Schema.from_data(first, bins=3, missing="allow")
    merged = bf.merge_profiles([bf.profile(schema.discretize(first)), bf.profile(schema.discretize(second))])
    assert merged.n_rows == 1000
    with pytest.raises(SchemaError, match="other edges"):
        bf.merge_profiles([bf.profile(first, bins=3), bf.profile(second, bins=3)])


def test_a_profile_of_dask_data_is_the_profile_of_the_table():
    dd = pytest.importorskip("dask.dataframe")
    table = _with_numbers(0, 1500)
    table["grade"] = table["grade"].astype(str)  # Dask turns object columns into strings (its convert-string)
    for bins in (None, 4):
        data = table if bins else table.drop(columns="age")
        local = bf.profile(data, bins=bins)
        distributed = bf.profile(dd.from_pandas(data, npartitions=4), bins=bins)
        assert distributed.schema == local.schema
        assert np.array_equal(distributed.codes, local.codes) and np.array_equal(distributed.counts, local.counts)


@pytest.mark.slow
def test_cli_profile_bins_tables_together_and_on_dask(tmp_path, capsys):
    first, second = _with_numbers(0, 800), _with_numbers(1, 400)
    first.to_csv(tmp_path / "a.csv", index=False)
    second.to_csv(tmp_path / "b.csv", index=False)
    out = tmp_path / "ab.bnfp"
    assert main(["profile", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--bins", "4", "-o", str(out)]) == 0
    read = bf.read_profile(out)
    expected = bf.profile(read_table(tmp_path / "a.csv"), read_table(tmp_path / "b.csv"), bins=4)
    assert read.schema == expected.schema and np.array_equal(read.counts, expected.counts)
    if importlib.util.find_spec("dask") is not None:
        first.to_parquet(tmp_path / "a.parquet")
        dask_out = tmp_path / "dask.bnfp"
        assert main(["profile", str(tmp_path / "a.parquet"), "--bins", "4", "--engine", "dask", "-o",
                     str(dask_out)]) == 0
        in_memory = bf.profile(pd.read_parquet(tmp_path / "a.parquet"), bins=4)
        assert bf.read_profile(dask_out).schema.bin_edges == in_memory.schema.bin_edges
        assert np.array_equal(bf.read_profile(dask_out).counts, in_memory.counts)
    assert main(["profile", str(out), "--bins", "3", "-o", str(tmp_path / "c.bnfp")]) == 2
    assert "apply to tables" in capsys.readouterr().err


@pytest.mark.slow
def test_windows_of_dask_data_in_one_pass_equal_the_windows_of_the_table(nursery):
    dd = pytest.importorskip("dask.dataframe")
    # (a fresh index: dd.from_pandas sorts rows by their index)
    data = nursery.iloc[3000:6000].sample(frac=1.0, random_state=2).astype(object).reset_index(drop=True)
    data.iloc[::41, 3] = np.nan
    data.iloc[5:9, 1] = "unheard-of"  # labels the reference never shows: their rows left out, and counted
    data.insert(0, "when", pd.Timestamp("2026-03-02 06:00") + pd.to_timedelta(np.arange(len(data)) * 7, unit="min"))
    for time, window, table in (("when", "5D", data), (None, 700, data.drop(columns="when"))):
        local = bf.drift(nursery.iloc[:3000], table, time=time, window=window, n_permutations=199, random_state=0)
        distributed = bf.drift(nursery.iloc[:3000], dd.from_pandas(table, npartitions=4), time=time, window=window,
                               n_permutations=199, random_state=0, n_jobs=2)
        pd.testing.assert_frame_equal(local.windows, distributed.windows)
        assert "in one pass" in distributed.notes[0]
    # A window known by its distinct rows shows them with their copies, and counts its rows by them: the 700
    # less the 4 rows with a label the reference lacks, left out of its test (on Dask as in memory).
    content = distributed.comparisons[0].to_dict()
    assert content["samples"][1]["rows"] == 696
    assert content["samples"][1]["missing_cells"] == int(table.iloc[:700].isna().sum().sum())
    assert "copies" in distributed.comparisons[0].typical_rows(2).columns


@pytest.mark.slow
def test_drift_on_dask_holds_windows_on_the_workers_and_gives_the_in_memory_windows(nursery, monkeypatch):
    """A drifted window (30% of one column set to one label) among unchanged ones: on Dask, with 2 or 5
    partitions, the window table (p-values, clearest family, mechanism) is the in-memory one; the client gathers
    a window only for the mechanism search of a drifted window, and never when that search is capped."""
    dd = pytest.importorskip("dask.dataframe")
    from bnfisher.dask.windows import HeldWindow
    compare_distributed = importlib.import_module("bnfisher.jobs.compare_distributed")  # the module, not the job

    changed = nursery.iloc[4200:4800].copy()
    changed.loc[np.random.default_rng(1).random(len(changed)) < 0.3, "health"] = "not_recom"
    data = pd.concat([nursery.iloc[3000:4200], changed], ignore_index=True).astype(object)
    local = bf.drift(nursery.iloc[:3000], data, window=600, n_permutations=199, random_state=0)
    assert local.windows["drift"].tolist() == [False, False, True] and local.windows["mechanism"][2] == "health"
    gathered = []
    original = HeldWindow.gather
    monkeypatch.setattr(HeldWindow, "gather", lambda self: gathered.append(self.n_rows) or original(self))
    for partitions in (2, 5):
        distributed = bf.drift(nursery.iloc[:3000], dd.from_pandas(data, npartitions=partitions), window=600,
                               n_permutations=199, random_state=0)
        pd.testing.assert_frame_equal(local.windows, distributed.windows)
    assert gathered == [600, 600]  # the drifted window, once per run: for its mechanism search
    monkeypatch.setattr(compare_distributed, "MECHANISM_ROWS", 10)
    capped = bf.drift(nursery.iloc[:3000], dd.from_pandas(data, npartitions=3), window=600, n_permutations=199,
                      random_state=0)
    assert gathered == [600, 600] and capped.windows["mechanism"].tolist() == ["", "", ""]
    assert capped.windows["p_value"].tolist() == local.windows["p_value"].tolist()
    assert any("Mechanism search: not run" in note for note in capped.comparisons[2].notes)


@pytest.mark.slow
def test_the_unbiased_effect_is_centred_at_zero_at_every_window_size_and_min_effect_filters():
    """Simulation: 16 independent (reference, window) pairs per window size (60, 240 and 960 rows), both drawn from
    asia's network (no change).  The biased MMD² grows as windows shrink; MMD²_u's mean stays within 4 Monte-Carlo
    standard errors of 0 at every size.  (Windows sharing one reference are not independent replicates: the
    reference's own sampling error is common to them all.)  ``min_effect`` above every window's MMD²_u flags none,
    whatever the p-values."""
    import bnfisher as bf

    from _helpers import bif_path

    network = bf.read_bif(bif_path("asia"))
    means = {}
    for size in (60, 240, 960):
        runs = [bf.drift(network.sample(2000, random_state=1000 * size + r), network.sample(size, random_state=r),
                         window=size, n_permutations=19, random_state=r).windows.iloc[0] for r in range(16)]
        u, biased = np.array([w["mmd2_u"] for w in runs]), np.array([w["mmd2"] for w in runs])
        se = u.std(ddof=1) / np.sqrt(len(u))
        assert abs(u.mean()) <= 4 * se + 1e-12, (size, u.mean(), se)
        means[size] = biased.mean()
    assert means[60] > means[240] > means[960]
    reference = network.sample(3000, random_state=0)
    shifted = reference.copy()
    shifted["smoke"] = np.where(np.random.default_rng(1).random(len(shifted)) < 0.3, "yes", shifted["smoke"])
    loud = bf.drift(reference, shifted.iloc[:2000], window=1000, n_permutations=99, random_state=0)
    assert loud.windows["drift"].all()
    ceiling = float(loud.windows["mmd2_u"].max()) * 2
    quiet = bf.drift(reference, shifted.iloc[:2000], window=1000, n_permutations=99, random_state=0,
                     min_effect=ceiling)
    assert not quiet.windows["drift"].any() and (quiet.windows["p_adjusted"] <= 0.05).all()
    assert f"MMD²_u ≥ {ceiling:g}" not in quiet.verdict()  # nothing flagged: the no-drift verdict


def test_a_profile_gives_its_tables_answer_bit_for_bit():
    """drift(profile(reference)) == drift(reference): the split depends on the reference as a multiset of rows."""
    import bnfisher as bf

    from _helpers import bif_path

    network = bf.read_bif(bif_path("asia"))
    reference = network.sample(1000, random_state=0).astype(object)
    reference = reference.mask(np.random.default_rng(0).random(reference.shape) < 0.02)  # missing cells too
    data = network.sample(1000, random_state=1)
    for seed in (0, 1):
        table = bf.drift(reference, data, window=500, n_permutations=99, random_state=seed)
        shuffled = bf.drift(reference.sample(frac=1.0, random_state=3), data, window=500, n_permutations=99,
                            random_state=seed)
        profiled = bf.drift(bf.profile(reference), data, window=500, n_permutations=99, random_state=seed)
        columns = ["mmd2", "mmd2_u", "p_value", "p_adjusted", "drift", "family", "unseen_cells"]
        pd.testing.assert_frame_equal(table.windows[columns], profiled.windows[columns], check_exact=True)
        pd.testing.assert_frame_equal(table.windows[columns], shuffled.windows[columns], check_exact=True)


@pytest.mark.slow
def test_a_window_p_value_does_not_hang_on_the_seed():
    """Ten seeds on one unchanged window (alarm, 2,000 rows against a 10,000-row reference): no random split enters
    the p-value, only the permutations' Monte-Carlo error; at the default 2,999 permutations the aggregate p-value's
    standard error near p = 0.5 is about 0.03 (benchmarks/drift_seeds.py: ten seeds spanned 0.11 on a 20,000-row
    reference), and on this case ten seeds span at most 0.10.  The seeds are fixed: the test is deterministic."""
    import bnfisher as bf

    from _helpers import bif_path

    network = bf.read_bif(bif_path("alarm"))
    reference, window = network.sample(10_000, random_state=0), network.sample(2_000, random_state=1)
    p = [bf.drift(reference, [window], random_state=seed).windows["p_value"].iloc[0] for seed in range(10)]
    assert max(p) - min(p) <= 0.10, p


def test_a_dask_table_with_repeated_column_names_is_refused_in_one_line():
    """Found by the fuzzer's Dask relation: a repeated name gave a raw AttributeError from Dask."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    repeated = pd.DataFrame([["x", "u"], ["y", "v"]], columns=["a", "a"])
    with dask.config.set(scheduler="synchronous"):
        reference = pd.DataFrame({"a": list("xy"), "b": list("uv")})
        for call, says in ((bf.profile, "Duplicate column names: \\['a'\\]"),
                           (lambda d: bf.drift(reference, d, window=1, n_permutations=9), "not in the data")):
            with pytest.raises(DataError, match=says) as refused:
                call(dd.from_pandas(repeated, npartitions=1))
            assert len(str(refused.value).splitlines()) == 1


@pytest.mark.parametrize("case", ["constant", "one row", "reserved names"])
def test_drift_on_dask_gives_a_result_or_a_one_line_refusal_on_edge_tables(case):
    """Windows held by the workers: an all-constant table and columns named like the result's fields give a
    result (no window differs); a one-row table a one-line refusal."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    table = {"constant": pd.DataFrame({"a": ["x"] * 40, "b": ["y"] * 40}),
             "one row": pd.DataFrame({"a": ["x"], "b": ["y"]}),
             "reserved names": pd.DataFrame({"row": list("xyxy") * 10, "sample": list("uuvv") * 10,
                                             "witness": list("ab") * 20, "copies": list("pq") * 20})}[case]
    reference = pd.concat([table] * (10 if len(table) == 1 else 1), ignore_index=True)
    with dask.config.set(scheduler="synchronous"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case == "one row":
            with pytest.raises(DataError, match="fewer than 2 rows") as refused:
                bf.drift(reference, dd.from_pandas(table, npartitions=1), window=20, n_permutations=19,
                         random_state=0)
            assert len(str(refused.value).splitlines()) == 1
            return
        result = bf.drift(reference, dd.from_pandas(table, npartitions=2), window=20, n_permutations=19,
                          random_state=0)
    assert result.windows["rows"].tolist() == [20, 20] and not result.windows["drift"].any()


def test_the_canonical_order_is_that_of_the_rows_hashed_as_python_objects():
    # Oracle: pandas' hash of every value as a Python object (types aside), the rows sorted by it; the column dtypes a
    # reference may have, with missing values, mixed objects and a repeated column name.
    from bnfisher.jobs.drift import canonical_rows

    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame({
        "s": rng.choice(["a", "b", None], n), "o": rng.choice(np.array([1, "1", 1.0, None], dtype=object), n),
        "f": rng.choice([0.0, -0.0, np.nan, 2.5], n), "i": rng.integers(0, 5, n), "b": rng.random(n) < 0.5,
        "c": pd.Categorical(rng.choice(["x", "y", None], n)), "I": pd.array(rng.choice([1, 2, None], n), dtype="Int64"),
        "t": pd.to_datetime(rng.choice(["2020-01-01", "2021-06-01", None], n)),
        "d": pd.to_timedelta(rng.choice([1.0, 2.0, np.nan], n), unit="s")})
    frame.insert(1, "i", frame["i"], allow_duplicates=True)
    keys = pd.util.hash_pandas_object(frame.astype(object), index=False).to_numpy()
    expected = frame.iloc[np.argsort(keys, kind="stable")].reset_index(drop=True)
    pd.testing.assert_frame_equal(canonical_rows(frame), expected)
    typed = frame.drop(columns="o")  # (1, 1.0 and "1" hash alike: types aside, their rows tie)
    pd.testing.assert_frame_equal(canonical_rows(typed.sample(frac=1.0, random_state=1)), canonical_rows(typed))


@pytest.mark.parametrize("fit_fraction", [None, 0.5])
def test_a_profile_of_the_reference_gives_the_tables_answer_bit_for_bit(nursery, fit_fraction):
    """A categorical reference declaring a label it never shows (nursery's class 'recommend'): the table and its
    profile read the same labels, so every number of the window table is equal (before 0.3: p 0.6107 and 0.612)."""
    reference = nursery.iloc[:3000].copy()
    reference["class"] = reference["class"].astype(pd.CategoricalDtype(
        sorted(set(reference["class"].astype(str)) | {"never-seen"})))
    windows = [nursery.iloc[3000:3600], _shuffled(nursery.iloc[3600:4200], "health", seed=3)]
    table = bf.drift(reference, windows, n_permutations=199, fit_fraction=fit_fraction, random_state=0).windows
    profile = bf.drift(bf.profile(reference), windows, n_permutations=199, fit_fraction=fit_fraction,
                       random_state=0).windows
    pd.testing.assert_frame_equal(table, profile, check_exact=True)


def test_the_progress_bar_advances_per_window(nursery, monkeypatch):
    """With ``progress=True`` the bar moves when each window's comparison is done, not after the last one."""
    import sys

    drift_module = sys.modules["bnfisher.jobs.drift"]  # the module (its package's face exports the function)
    reference_module = sys.modules["bnfisher.jobs.reference"]
    compared, seen = [], []
    real_compare, real_bar = reference_module.compare_encoded, drift_module.progress_bar

    def counting_compare(*args, **kwargs):
        compared.append(1)
        return real_compare(*args, **kwargs)

    def watching_bar(iterable, **options):
        assert options["disable"] is None and options["total"] == 3 and options["unit"] == "window"
        for item in real_bar(iterable, **options):
            seen.append(len(compared))  # windows compared when the bar moves
            yield item

    monkeypatch.setattr(reference_module, "compare_encoded", counting_compare)
    monkeypatch.setattr(drift_module, "progress_bar", watching_bar)
    bf.drift(nursery.iloc[:2000], nursery.iloc[2000:2600], window=200, n_permutations=19, progress=True,
             random_state=0)
    assert seen == [1, 2, 3]
