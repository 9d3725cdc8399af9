"""The peers' side of ``benchmarks/monitor_peers.py``: one monitoring tool's default drift alarm, run week by week.

Run by ``monitor_peers.py`` in the tool's own virtual environment (this file imports no bnfisher):

    python benchmarks/_monitor_peer.py TOOL FOLDER

``FOLDER`` holds ``year-NNNN.parquet`` files (column ``week``: -1 for the reference rows, 0..51 for each weekly
window).  Prints one JSON line per year and alarm rule: ``{"tool": ..., "year": ..., "alarms": [weeks], "seconds":
mean per window}`` (evidently prints two rules from one report per window).
Each tool is run as its documentation's drift quick-start runs it, with its default thresholds:

* evidently: ``Report([DataDriftPreset()])``; an alarm when the preset's dataset drift is detected (at least half
  the columns drifted, each by the test it picks by default -- at these sizes the Jensen-Shannon distance of a
  categorical column above 0.1); ``evidently-any`` raises it when any column drifted.
* nannyml: ``UnivariateDriftCalculator`` with its default method for categorical columns (Jensen-Shannon
  distance) and its default threshold (the reference chunks' mean +- 3 standard deviations), chunks of one
  window; an alarm when any column alerts.
* deepchecks: ``FeatureDrift`` with its default condition (Cramér's V < 0.2 for categorical columns); an alarm
  when the condition fails.
* whylogs: profiles of the reference and the window, ``calculate_drift_scores(with_thresholds=True)`` (chi-square
  for categorical columns; DRIFT when p < 0.05); an alarm when any column is DRIFT.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd


def evidently_weeks(reference: pd.DataFrame, windows: list) -> tuple:
    """Evidently's dataset-drift flags and its any-column flags, from one report per window."""
    from evidently import Report
    from evidently.presets import DataDriftPreset

    dataset, any_column = [], []
    for window in windows:
        snapshot = Report([DataDriftPreset()]).run(current_data=window, reference_data=reference)
        drifted = next(m for m in snapshot.dict()["metrics"]
                       if m["metric_name"].startswith("DriftedColumnsCount"))["value"]
        dataset.append(drifted["share"] >= 0.5)
        any_column.append(drifted["count"] > 0)
    return dataset, any_column


def nannyml_weeks(reference: pd.DataFrame, windows: list) -> list:
    import nannyml as nml

    columns = list(reference.columns)
    analysis = pd.concat(windows, ignore_index=True)
    calculator = nml.UnivariateDriftCalculator(column_names=columns, treat_as_categorical=columns,
                                               chunk_size=len(windows[0]))
    calculator.fit(reference)
    table = calculator.calculate(analysis).filter(period="analysis").to_df()
    alerts = table.loc[:, [c for c in table.columns if c[-1] == "alert"]]
    return [bool(v) for v in alerts.any(axis=1).to_numpy()]


def deepchecks_weeks(reference: pd.DataFrame, windows: list) -> list:
    from deepchecks.tabular import Dataset
    from deepchecks.tabular.checks import FeatureDrift

    columns = list(reference.columns)
    train = Dataset(reference, cat_features=columns)
    flags = []
    for window in windows:
        result = FeatureDrift().add_condition_drift_score_less_than().run(train, Dataset(window, cat_features=columns))
        flags.append(not result.passed_conditions())
    return flags


def whylogs_weeks(reference: pd.DataFrame, windows: list) -> list:
    import whylogs as why
    from whylogs.viz.drift.column_drift_algorithms import calculate_drift_scores

    base = why.log(reference).view()
    flags = []
    for window in windows:
        scores = calculate_drift_scores(target_view=why.log(window).view(), reference_view=base,
                                        with_thresholds=True)
        flags.append(any(s and s.get("drift_category") == "DRIFT" for s in scores.values()))
    return flags


def main() -> None:
    tool, folder = sys.argv[1], Path(sys.argv[2])
    warnings.simplefilter("ignore")
    for path in sorted(folder.glob("year-*.parquet")):
        frame = pd.read_parquet(path)
        reference = frame[frame["week"] < 0].drop(columns="week").reset_index(drop=True)
        windows = [w.drop(columns="week").reset_index(drop=True) for _, w in frame[frame["week"] >= 0].groupby("week")]
        begin = time.perf_counter()
        if tool == "evidently":
            found = dict(zip(("evidently", "evidently-any"), evidently_weeks(reference, windows)))
        else:
            found = {tool: {"nannyml": nannyml_weeks, "deepchecks": deepchecks_weeks, "whylogs": whylogs_weeks}[tool](
                reference, windows)}
        seconds = (time.perf_counter() - begin) / len(windows)
        for name, flags in found.items():
            print(json.dumps({"tool": name, "year": path.stem, "alarms": [int(w) for w in np.flatnonzero(flags)],
                              "seconds": seconds}), flush=True)

if __name__ == "__main__":
    main()
