"""Odd time windows, tiny windows and all-constant tables: a result or one clear error, never a traceback."""

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bnfisher as bf
from bnfisher.cli import main
from bnfisher.data.windows import TimeGrid, check_window, parse_times
from bnfisher.exceptions import DataError, DataWarning, OptionError, ResourceError


def _quiet_drift(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return bf.drift(*args, **kwargs)


def _pair(n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.choice(list("xy"), n), "b": rng.choice(list("uv"), n)})


# ------------------------------------------------------------------ the grid agrees with pandas
_FREQUENCIES = ["1s", "7s", "1min", "90min", "1h", "6h", "1D", "3D", "7D", "W", "W-WED", "MS", "QS", "B"]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(start=st.integers(0, 10**18), frequency=st.sampled_from(_FREQUENCIES), data=st.data())
def test_the_time_grid_cuts_as_pandas_resamples(start, frequency, data):
    """Each time's window start equals pandas' own resampling of the whole span (the independent oracle)."""
    offset = check_window("t", frequency)[0]
    # The oracle visits every window of the span: about 2,000 windows of a fixed frequency, 400 days of calendar ones.
    step = offset.nanos if isinstance(offset, pd.tseries.offsets.Tick) else 86_400 * 10**9
    span = 2_000 * step if isinstance(offset, pd.tseries.offsets.Tick) else 400 * step
    offsets = data.draw(st.lists(st.integers(0, span), min_size=1, max_size=40))
    stamps = pd.DatetimeIndex(pd.to_datetime(np.asarray(offsets, dtype=np.int64) + start, unit="ns"))
    keys = TimeGrid(stamps.min(), stamps.max(), offset).keys(stamps)
    resampled = pd.Series(np.arange(len(stamps)), index=stamps).sort_index().resample(
        offset, label="left", closed="left")
    expected = {}
    for start_of, group in resampled:
        for position in group.to_numpy():
            expected[int(position)] = pd.Timestamp(start_of).as_unit("ns").value
    assert [expected[i] for i in range(len(stamps))] == keys.tolist()


def test_two_rows_ten_years_apart_in_windows_of_a_second_cost_two_windows():
    data = _pair(30)
    data["t"] = ["2010-01-01"] * 15 + ["2020-01-01 00:00:00.5"] * 15
    tracemalloc.start()
    result = _quiet_drift(_pair(40, 1), data, time="t", window="1s", n_permutations=19, random_state=0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert list(result.windows["rows"]) == [15, 15]
    assert peak < 200 * 2**20  # the old resampling of the span allocated 2.35 GiB


@pytest.mark.parametrize("window", ["0D", "-1D", "0s", "-5min"])
def test_non_positive_frequencies_are_refused(window):
    with pytest.raises(OptionError, match="positive"):
        check_window("t", window)


def test_a_calendar_frequency_over_centuries_is_refused_with_its_count():
    grid = TimeGrid(pd.Timestamp("1700-01-01"), pd.Timestamp("2200-01-01"), check_window("t", "bh")[0])
    with pytest.raises(ResourceError, match="windows"):
        grid.keys(pd.DatetimeIndex([pd.Timestamp("1700-01-01")]))


def test_mixed_utc_offsets_are_converted_to_utc():
    stamps = parse_times(pd.Series(["2020-01-01T23:30+01:00", "2020-01-01T23:30-05:00"]), "t")
    assert [str(s) for s in stamps] == ["2020-01-01 22:30:00+00:00", "2020-01-02 04:30:00+00:00"]
    data = _pair(4)
    data["t"] = ["2020-01-01T23:30+01:00", "2020-01-01T23:30-05:00"] * 2
    result = _quiet_drift(_pair(40), data, time="t", window="1D", n_permutations=19, random_state=0)
    assert list(result.windows["window"]) == ["2020-01-01", "2020-01-02"]


@pytest.mark.parametrize("values, match", [
    (["2020-01-01T00:00+01:00", "2020-01-02"], "offset and times without"),
    ([1_600_000_000, 1_600_090_000], "numbers"),
    ([1.6e9, 1.7e9], "numbers"),
    (["2020-01-01", "yesterday"], "row 1"),
    (["2020-01-01", None], "empty"),
])
def test_time_columns_that_are_not_times_are_refused_by_name(values, match):
    with pytest.raises(DataError, match=match):
        parse_times(pd.Series(values), "t")


def test_times_of_several_formats_in_one_column_are_read():
    stamps = parse_times(pd.Series(["2020-01-01 10:00:00.5", "2030-01-01", "2021-06-01T12:00"]), "t")
    assert [s.year for s in stamps] == [2020, 2030, 2021]


# ------------------------------------------------------------------ tiny windows
def test_a_window_with_one_row_is_reported_and_the_others_are_tested():
    data = _pair(201, 2)
    with pytest.warns(DataWarning, match="rows 200-200"):
        result = bf.drift(_pair(200, 1), data, window=100, n_permutations=19, random_state=0)
    table = result.windows
    assert list(table["rows"]) == [100, 100, 1]
    assert table["p_value"].iloc[:2].notna().all() and np.isnan(table["p_value"].iloc[2])
    assert not table["drift"].iloc[2]
    assert "too small to test" in result.verdict()
    with pytest.raises(KeyError, match="not tested"):
        result.comparison("rows 200-200")
    result.to_json()  # the empty p-values serialise (as null)
    assert result.to_dict()["windows"][2]["p_value"] is None


def test_holm_runs_over_the_windows_tested_only():
    data = _pair(201, 2)
    result = _quiet_drift(_pair(200, 1), data, window=100, n_permutations=19, random_state=0)
    p = result.windows["p_value"].to_numpy()[:2]
    expected = np.minimum(1, np.maximum.accumulate(np.sort(p) * np.array([2, 1])))[np.argsort(np.argsort(p))]
    np.testing.assert_allclose(result.windows["p_adjusted"].to_numpy()[:2], expected)


def test_when_no_window_can_be_tested_the_error_says_so():
    with pytest.raises(DataError, match="fewer than 2 rows"):
        bf.drift(_pair(40), [_pair(1), _pair(1, 1)], n_permutations=19, random_state=0)


def test_a_reference_too_small_to_split_is_refused_naming_the_rows():
    with pytest.raises(DataError, match="at least 4 rows"):
        bf.drift(_pair(3), _pair(20), window=10, n_permutations=19, fit_fraction=0.5, random_state=0)
    with pytest.raises(DataError, match="at least 2 rows"):
        bf.drift(_pair(1), _pair(20), window=10, n_permutations=19, random_state=0)


def test_the_default_permutations_say_that_work_grows_with_the_square_of_the_windows():
    with pytest.warns(DataWarning, match="square of the windows"):
        bf.drift(_pair(8), _pair(8, 1), window=4, alpha=0.001, random_state=0, test="mmd", stopping="fixed")
    with warnings.catch_warnings(record=True) as caught:  # anytime: a window runs the cap only near its level
        warnings.simplefilter("always")
        bf.drift(_pair(8), _pair(8, 1), window=4, alpha=0.001, random_state=0, test="mmd")
    assert caught and not any("square of the windows" in str(w.message) for w in caught)


# ------------------------------------------------------------------ constant columns
_CONSTANT = pd.DataFrame({"a": ["k"] * 6, "b": ["z"] * 6})


@pytest.mark.parametrize("job", ["compare", "summarize", "drift", "mmd_test", "mmd_by_family", "select"])
def test_tables_whose_every_column_is_constant_give_a_result(job):
    kernel = bf.FisherKernel(bf.learn(_CONSTANT))
    calls = {
        "compare": lambda: bf.compare(_CONSTANT, _CONSTANT, n_permutations=19, random_state=0).test.p_value,
        "summarize": lambda: bf.summarize(_CONSTANT, 2, n_random=5, random_state=0).selection.final_value,
        "drift": lambda: _quiet_drift(_CONSTANT, _CONSTANT, window=3, n_permutations=19,
                                      random_state=0).windows["p_value"].iloc[0],
        "mmd_test": lambda: bf.mmd_test(kernel, _CONSTANT, _CONSTANT, n_permutations=19, random_state=0).p_value,
        "mmd_by_family": lambda: len(bf.mmd_by_family(kernel, _CONSTANT, _CONSTANT, n_permutations=19,
                                                      random_state=0)),
        "select": lambda: bf.select_representatives(kernel, _CONSTANT, 2, random_state=0).final_value,
    }
    value = calls[job]()
    assert np.isfinite(value)
    if job in ("compare", "drift", "mmd_test"):
        assert value == 1.0  # no feature: no difference can be seen, and none is claimed


def test_constant_columns_with_missing_cells_are_summarised():
    table = pd.DataFrame({"a": ["k"] * 6, "b": ["z", None] * 3})
    result = bf.summarize(table, 2, n_random=5, random_state=0)
    assert len(result.indices) == 2


def test_a_flag_constant_in_the_reference_that_turns_on_is_counted_and_named():
    reference = pd.DataFrame({"flag": ["off"] * 400, "x": list("ab") * 200})
    window = pd.DataFrame({"flag": ["off"] * 200 + ["on"] * 200, "x": list("ab") * 200})
    with pytest.warns(DataWarning, match="never showed"):
        result = bf.drift(reference, window, window=200, n_permutations=19, random_state=0)
    assert list(result.windows["unseen_cells"]) == [0, 200]


def test_an_all_constant_csv_through_the_command_line(tmp_path, capsys):
    path = tmp_path / "c.csv"
    path.write_text("a,b\nk,z\nk,z\nk,z\n")
    for argv in (["compare", str(path), str(path), "--permutations", "9", "--quiet"],
                 ["summarize", str(path), "-k", "2", "--n-random", "3", "--quiet"],
                 ["mmd", str(path), str(path)]):
        assert main(argv) == 0, capsys.readouterr().err
    assert main(["drift", str(path), str(path), "--rows", "2", "--permutations", "9", "--quiet"]) == 0
    assert main(["monitor", str(path), str(path), "--rows", "2", "--permutations", "9", "--horizon", "1",
                 "--store", str(tmp_path / "h.db"), "--quiet"]) == 0  # constant tables: nothing can drift
    one = tmp_path / "one.csv"
    one.write_text("a,row\nk,z\n")  # one row, a reserved-looking column name
    assert main(["monitor", str(one), str(one), "--rows", "1", "--store", str(tmp_path / "h1.db"), "--quiet"]) == 2
    assert "bnfisher monitor: error:" in capsys.readouterr().err
    assert main(["drift", str(path), str(path), "--rows", "2", "--permutations", "9", "--quiet",
                 "--fit-fraction", "0.5"]) == 2
    assert "at least 4 rows" in capsys.readouterr().err
