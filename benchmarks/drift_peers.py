"""The peers' drift detectors on the windows that benchmarks/drift.py wrote; prints one JSON object.

Run by benchmarks/drift.py with ``--peers-python`` (an interpreter that has alibi-detect with PyTorch,
Evidently and NannyML; they need numpy < 2, so they live in their own environment):

    python -m venv --system-site-packages peers && peers/bin/pip install alibi-detect nannyml evidently torch

Each detector gets the reference and every window, all categorical, and says per window whether it
flags drift, with its documented default decision rule:
  alibi-detect TabularDrift / ChiSquareDrift: a chi-square test per column, Bonferroni over the columns;
  alibi-detect MMDDrift: MMD with a Gaussian kernel on one-hot rows, 100 permutations (PyTorch), on a
    random 1,000 rows of the reference (the full reference is too slow: O(n^2) per permutation);
  Evidently DataDriftPreset: drift when at least half the columns drift (its default drift_share 0.5;
    per column, its default test for categorical data);
  NannyML UnivariateDriftCalculator (chi2): an alert when any column's chi-square test alerts in the
    window (its default threshold, no correction over columns); NannyML DataReconstructionDriftCalculator:
    PCA reconstruction error outside the thresholds it derives from the reference's chunks.

Usage:  peers/bin/python benchmarks/drift_peers.py FOLDER
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("NML_DISABLE_USAGE_LOGGING", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("EVIDENTLY_DISABLE_TELEMETRY", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def _codes(reference: pd.DataFrame, frames: list) -> tuple:
    """Integer codes per column, categories from the reference; a label it never showed gets a code of its own."""
    out_ref, out = [], [[] for _ in frames]
    sizes = []
    for column in reference.columns:
        categories = sorted(reference[column].astype(str).unique())
        index = {c: k for k, c in enumerate(categories)}
        sizes.append(len(categories) + 1)
        out_ref.append(reference[column].astype(str).map(index).to_numpy())
        for k, frame in enumerate(frames):
            out[k].append(frame[column].astype(str).map(index).fillna(len(categories)).to_numpy())
    return (np.stack(out_ref, 1).astype(np.float32), [np.stack(o, 1).astype(np.float32) for o in out], sizes)


def _one_hot(codes: np.ndarray, sizes: list) -> np.ndarray:
    return np.concatenate([np.eye(s, dtype=np.float32)[codes[:, j].astype(int)] for j, s in enumerate(sizes)], 1)


def main(folder: Path) -> None:
    reference = pd.read_csv(folder / "reference.csv", dtype=str, keep_default_na=False)
    paths = sorted(folder.glob("window_*.csv"))
    windows = [pd.read_csv(p, dtype=str, keep_default_na=False) for p in paths]
    x_ref, xs, sizes = _codes(reference, windows)
    out: dict = {}

    def timed(name, function):
        start = time.perf_counter()
        flags = [bool(f) for f in function()]
        out[name] = {"flags": flags, "seconds": time.perf_counter() - start}

    from alibi_detect.cd import ChiSquareDrift, MMDDrift, TabularDrift

    categories = {j: None for j in range(x_ref.shape[1])}
    timed("alibi TabularDrift", lambda: [TabularDrift(x_ref, p_val=0.05, categories_per_feature=categories)
                                         .predict(x)["data"]["is_drift"] for x in xs])
    timed("alibi ChiSquareDrift", lambda: [ChiSquareDrift(x_ref, p_val=0.05).predict(x)["data"]["is_drift"]
                                           for x in xs])
    rows = np.random.default_rng(0).choice(len(x_ref), size=min(1000, len(x_ref)), replace=False)

    def mmd():
        detector = MMDDrift(_one_hot(x_ref[rows], sizes), backend="pytorch", p_val=0.05, n_permutations=100)
        return [detector.predict(_one_hot(x, sizes))["data"]["is_drift"] for x in xs]

    timed("alibi MMDDrift (one-hot, 1,000 reference rows)", mmd)

    from evidently import DataDefinition, Dataset, Report
    from evidently.presets import DataDriftPreset

    definition = DataDefinition(categorical_columns=list(reference.columns))
    ref_set = Dataset.from_pandas(reference, data_definition=definition)

    def evidently():
        flags = []
        for frame in windows:
            snapshot = Report([DataDriftPreset()]).run(Dataset.from_pandas(frame, data_definition=definition),
                                                       ref_set)
            share = snapshot.dict()["metrics"][0]["value"]["share"]
            flags.append(share >= 0.5)
        return flags

    timed("Evidently DataDriftPreset", evidently)

    import nannyml as nml

    size = len(windows[0])
    analysis = pd.concat(windows, ignore_index=True)
    columns = list(reference.columns)

    def nanny_univariate():
        calculator = nml.UnivariateDriftCalculator(column_names=columns, chunk_size=size,
                                                   categorical_methods=["chi2"]).fit(reference)
        table = calculator.calculate(analysis).filter(period="analysis").to_df()
        alerts = table[[c for c in table.columns if c[-1] == "alert"]].to_numpy(dtype=bool)
        return alerts.any(axis=1)[:len(windows)]

    def nanny_multivariate():
        calculator = nml.DataReconstructionDriftCalculator(column_names=columns, chunk_size=size).fit(reference)
        table = calculator.calculate(analysis).filter(period="analysis").to_df()
        return table[("reconstruction_error", "alert")].to_numpy(dtype=bool)[:len(windows)]

    timed("NannyML univariate (chi2)", nanny_univariate)
    timed("NannyML data reconstruction (PCA)", nanny_multivariate)
    print(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
