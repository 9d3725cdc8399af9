"""Where does the Fisher kernel help in learning tasks?  Normalisation and pseudocount, on tables the docs do not use.

Tables (none of them in docs/machine-learning.md): five UCI tables shipped in benchmarks/data (zoo, titanic,
heart disease, ionosphere, automobile/imports-85; see its README), scikit-learn's iris and digits, and two samples
from bnlearn networks shipped with the tests (child, target Disease; insurance, target Accident; 2,000 rows each,
seed 0).  Numeric columns are binned into 4 quantile bins; rows with a missing value are dropped (and
imports-85's column normalized-losses, missing in 41 rows); classes with fewer than 5 rows are dropped.

Classification (5-fold stratified CV, shuffled, seed 0; the network is learned on the training folds' features
only, Chow-Liu): SVC(kernel="precomputed", C=1) on
  * the Fisher kernel, raw (pseudocount 1, the default) and cosine-normalised (``normalize=True``);
  * the Fisher kernel with pseudocount 0.1, raw;
  * the overlap (Hamming) kernel;
  * an RBF kernel on one-hot rows (gamma = 1 / n_columns, i.e. exp(-mismatches / n_columns));
and logistic regression on one-hot rows.

Clustering (k-means, k = number of classes, 10 starts, seed 0, all rows): on the Fisher embedding raw and
row-normalised (the cosine kernel's feature map), and on one-hot rows; adjusted Rand index with the class.

Run:  python benchmarks/kernel_study.py   (about 3 minutes)
"""

from __future__ import annotations

import datetime
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import OneHotEncoder, normalize
from sklearn.svm import SVC

import bnfisher as bf
from bnfisher.kernels import OverlapKernel
from bnfisher.sklearn.embedding import FisherEmbedding

HERE = Path(__file__).resolve().parent
BIF = HERE.parent / "tests" / "fixtures" / "bif"
METHODS = ("Fisher raw", "Fisher cosine", "Fisher raw, pseudocount 0.1", "overlap", "RBF one-hot",
           "one-hot + logistic")
CLUSTERS = ("Fisher raw", "Fisher cosine", "one-hot")


def prepare(frame: pd.DataFrame) -> tuple:
    frame = frame.replace("", np.nan).dropna().reset_index(drop=True)
    counts = frame["class"].value_counts()
    frame = frame[frame["class"].isin(counts[counts >= 5].index)].reset_index(drop=True)
    X, y = frame.drop(columns="class"), frame["class"].astype(str)
    numeric = [c for c in X.columns if pd.to_numeric(X[c], errors="coerce").notna().all() and X[c].nunique() > 4]
    X = X.astype({c: float for c in numeric})
    X = bf.discretize(X, bins=4, columns=numeric) if numeric else X
    X = X.astype({c: str for c in X.columns if not isinstance(X[c].dtype, pd.CategoricalDtype)})
    return X, y


def tables() -> dict:
    out = {}
    for name in ("zoo", "titanic", "heart-disease", "ionosphere", "imports-85"):
        frame = pd.read_csv(HERE / "data" / f"{name}.csv.gz", dtype=str, keep_default_na=False)
        if name == "imports-85":
            frame = frame.drop(columns="normalized-losses")
        out[name] = prepare(frame)
    from sklearn.datasets import load_digits, load_iris

    for name, loader in (("iris", load_iris), ("digits", load_digits)):
        bunch = loader(as_frame=True)
        frame = bunch.data.assign(**{"class": bunch.target.astype(str)}).astype(str)
        out[name] = prepare(frame)
    for name, target in (("child", "Disease"), ("insurance", "Accident")):
        network = bf.read_bif(BIF / f"{name}.bif.gz")
        sample = network.sample(2000, random_state=0).astype(str)
        out[f"{name} (sample)"] = prepare(sample.rename(columns={target: "class"}))
    return out


def fisher_gram(X_train, X_test, **options):
    embedding = FisherEmbedding(**options).fit(X_train)
    return embedding.gram(X_train), embedding.gram(X_test, X_train)


def classify(X: pd.DataFrame, y: pd.Series) -> dict:
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    scores: dict = {m: [] for m in METHODS}
    for train, test in folds.split(X, y):
        X_train, X_test, y_train, y_test = X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]
        grams = {"Fisher raw": fisher_gram(X_train, X_test),
                 "Fisher cosine": fisher_gram(X_train, X_test, normalize=True),
                 "Fisher raw, pseudocount 0.1": fisher_gram(X_train, X_test, pseudocount=0.1)}
        overlap = OverlapKernel(bf.learn(X_train, schema=bf.Schema.from_data(X)))
        grams["overlap"] = (overlap.gram(X_train), overlap.gram(X_test, X_train))
        onehot = OneHotEncoder(handle_unknown="ignore").fit(X_train)
        A, B = onehot.transform(X_train).toarray(), onehot.transform(X_test).toarray()
        width = X.shape[1]
        squared = lambda P, Q: (P**2).sum(1)[:, None] + (Q**2).sum(1)[None, :] - 2 * P @ Q.T  # noqa: E731
        grams["RBF one-hot"] = (np.exp(-squared(A, A) / (2 * width)), np.exp(-squared(B, A) / (2 * width)))
        for method, (train_gram, test_gram) in grams.items():
            scores[method].append(SVC(kernel="precomputed").fit(train_gram, y_train).score(test_gram, y_test))
        scores["one-hot + logistic"].append(LogisticRegression(max_iter=5000).fit(A, y_train).score(B, y_test))
    return {m: (float(np.mean(v)), float(np.std(v))) for m, v in scores.items()}


def cluster(X: pd.DataFrame, y: pd.Series) -> dict:
    k = y.nunique()
    embedding = FisherEmbedding().fit(X)
    Phi = embedding.transform(X)
    features = {"Fisher raw": Phi, "Fisher cosine": normalize(Phi),
                "one-hot": OneHotEncoder().fit_transform(X)}
    out = {}
    for name, matrix in features.items():
        labels = KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(matrix)
        out[name] = adjusted_rand_score(y, labels)
    diag = np.asarray(Phi.multiply(Phi).sum(axis=1)).ravel()
    out["K(x,x) max / median"] = float(diag.max() / np.median(diag))
    return out


def main() -> None:
    warnings.simplefilter("ignore")
    start = time.perf_counter()
    print(f"Command: `python benchmarks/kernel_study.py` ({datetime.date.today().isoformat()}, "
          f"bnfisher {bf.__version__}).\n")
    header = "| data (rows × columns, classes) | " + " | ".join(METHODS) + " | best |"
    classification, clustering = [header, "|---|" + "---|" * (len(METHODS) + 1)], \
        ["| data | " + " | ".join(f"ARI, {c}" for c in CLUSTERS) + " | K(x,x) max / median |",
         "|---|" + "---|" * (len(CLUSTERS) + 1)]
    wins = dict.fromkeys(METHODS, 0)
    for name, (X, y) in tables().items():
        result = classify(X, y)
        best = max(result, key=lambda m: result[m][0])
        wins[best] += 1
        classification.append(f"| {name} ({len(X)} × {X.shape[1]}, {y.nunique()}) | "
                              + " | ".join(f"{result[m][0]:.3f} ± {result[m][1]:.3f}" for m in METHODS)
                              + f" | {best} |")
        clusters = cluster(X, y)
        clustering.append(f"| {name} | " + " | ".join(f"{clusters[c]:.3f}" for c in CLUSTERS)
                          + f" | {clusters['K(x,x) max / median']:.1f} |")
        print(classification[-1], flush=True)
    print("\n### Classification: 5-fold CV accuracy (mean ± sd over folds)\n")
    print("\n".join(classification))
    print("\nBest method per table: " + ", ".join(f"{m} {k}" for m, k in wins.items()) + ".")
    print("\n### Clustering: k-means, adjusted Rand index with the class\n")
    print("\n".join(clustering))
    print(f"\nWall time: {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    main()
