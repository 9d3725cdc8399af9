"""The Bayesian network classifier on a table with missing values: time and accuracy beside one-hot + LR.

Data: UCI mushroom (8,124 rows, 22 nominal features, 2,480 missing cells in stalk-root, empty in the file; read from
``../shared/data/uci/mushroom.csv.gz``, empty cells and ``?`` as missing).  5-fold stratified CV, seeded; the
classifier learns its structure (TAN) with structural EM over the missing cells (naive Bayes: EM alone) and
marginalizes them at prediction; the reference is scikit-learn's one-hot encoding (a missing cell is
a category of its own) + logistic regression, timed in the same run.  Goal (issue "real tables"):
within 5x of the reference's time, at the same accuracy.

Run:  python benchmarks/classifier.py   (about 2 minutes)
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import bnfisher as bf
from bnfisher.sklearn import BayesianNetworkClassifier

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "uci" / "mushroom.csv.gz"


def cross_validate(make, X: pd.DataFrame, y: pd.Series, repeats: int = 3) -> tuple[float, float, int]:
    """Seconds (the best of ``repeats`` runs), mean accuracy and the number of warnings of 5-fold stratified CV."""
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    times = []
    for _ in range(repeats):
        scores = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            for train, test in folds.split(X, y):
                model = make().fit(X.iloc[train], y.iloc[train])
                scores.append(model.score(X.iloc[test], y.iloc[test]))
            times.append(time.perf_counter() - start)
    return min(times), float(np.mean(scores)), len(caught)


def main() -> None:
    if not SHARED.exists():
        raise SystemExit(f"{SHARED} not found: this benchmark needs ../shared/data beside the repository")
    table = pd.read_csv(SHARED, dtype=str, na_values=["", "?"], keep_default_na=False)
    X, y = table.drop(columns="class"), table["class"]
    print(f"mushroom: {len(table)} rows, {X.shape[1]} features, {int(X.isna().sum().sum())} missing cells; "
          f"bnfisher {bf.__version__}; 5-fold stratified CV, seconds: the best of 3 runs\n")
    # One warm-up fit compiles numba's functions (small jobs would run NumPy fallbacks instead: bnfisher._utils.jit), so
    # that the timings compare steady states.
    from bnfisher._utils import jit as _jit

    _jit.FALLBACK_BUDGET = 0.0  # time the compiled code, as a long job runs it
    BayesianNetworkClassifier(structure="tan").fit(X.iloc[:500], y.iloc[:500])
    rows = []
    reference = cross_validate(
        lambda: make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=1000)),
        X.fillna("(missing)"), y)
    rows.append(("one-hot + logistic regression (reference)", *reference))
    rows.append(("BayesianNetworkClassifier(structure='tan')",
                 *cross_validate(lambda: BayesianNetworkClassifier(structure="tan"), X, y)))
    rows.append(("BayesianNetworkClassifier(structure='naive-bayes')",
                 *cross_validate(lambda: BayesianNetworkClassifier(structure="naive-bayes"), X, y)))
    print("| method | seconds | × reference | accuracy | warnings |")
    print("|---|---|---|---|---|")
    for name, seconds, accuracy, n_warnings in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / reference[0]:.2f} | {accuracy:.4f} | {n_warnings} |")


if __name__ == "__main__":
    main()
