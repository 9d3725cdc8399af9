"""Is the Fisher kernel useful for supervised learning?  Cross-validated accuracy on 8 tables.

Data: the bundled UCI sets (letter, nursery, waveform-5000) and five public tables that ship inside
registry packages: statsmodels' anes96 (vote), fair (any affair) and randhie (idp), scikit-learn's
breast cancer and wine.  Numeric columns are binned into 4 quantile bins (as the paper does); tables
above 4,000 rows are subsampled to 4,000 (seeded) so that the precomputed-kernel SVMs stay cheap.

Methods (5-fold stratified CV; the network is learned on the training folds' features only, without
the label):
  (a) FisherEmbedding (Chow-Liu) + logistic regression, and + linear SVM;
  (b) SVC(kernel="precomputed") on the Fisher Gram matrix;
  (c) one-hot + logistic regression, and + linear SVM;
  (d) SVC(kernel="precomputed") on the overlap (Hamming) kernel.
Then kernel PCA and spectral clustering with the Fisher kernel on nursery, drawn to a PNG.

Run:  python benchmarks/machine_learning.py [--out docs/machine-learning]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.cluster import SpectralClustering
from sklearn.decomposition import KernelPCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.svm import SVC, LinearSVC

import bnfisher as bf
from bnfisher.datasets import load
from bnfisher.kernels import OverlapKernel
from bnfisher.sklearn.embedding import FisherEmbedding


def tables() -> dict:
    out = {}
    for name in ("nursery", "letter", "waveform-5000"):
        data = load(name)
        out[name] = (data.drop(columns="class"), data["class"].astype(str))
    import statsmodels.api as sm

    anes = sm.datasets.anes96.load_pandas().data
    out["anes96 (vote)"] = (anes.drop(columns=["vote", "logpopul"]), anes["vote"].astype(int).astype(str))
    fair = sm.datasets.fair.load_pandas().data
    out["fair (affair)"] = (fair.drop(columns=["affairs"]), (fair["affairs"] > 0).map({True: "yes", False: "no"}))
    randhie = sm.datasets.randhie.load_pandas().data
    out["randhie (idp)"] = (randhie.drop(columns=["idp"]), randhie["idp"].astype(int).astype(str))
    from sklearn.datasets import load_breast_cancer, load_wine

    for label, loader in (("breast cancer", load_breast_cancer), ("wine", load_wine)):
        bunch = loader(as_frame=True)
        out[label] = (bunch.data, bunch.target.astype(str))
    prepared = {}
    for name, (X, y) in out.items():
        X = bf.discretize(X.reset_index(drop=True), bins=4)
        X = X.astype({c: str for c in X.columns if not isinstance(X[c].dtype, pd.CategoricalDtype)})
        y = y.reset_index(drop=True)
        if len(X) > 4000:
            rows = np.sort(np.random.default_rng(0).choice(len(X), 4000, replace=False))
            X, y = X.iloc[rows].reset_index(drop=True), y.iloc[rows].reset_index(drop=True)
        prepared[name] = (X, y)
    return prepared


def cross_validate(X: pd.DataFrame, y: pd.Series) -> dict:
    folds = StratifiedKFold(5, shuffle=True, random_state=0)
    scores: dict = {}

    def record(method, value):
        scores.setdefault(method, []).append(value)

    for train, test in folds.split(X, y):
        X_train, X_test, y_train, y_test = X.iloc[train], X.iloc[test], y.iloc[train], y.iloc[test]
        embedding = FisherEmbedding().fit(X_train)
        Phi_train, Phi_test = embedding.transform(X_train), embedding.transform(X_test)
        record("Fisher + logistic", LogisticRegression(max_iter=3000).fit(Phi_train, y_train).score(Phi_test, y_test))
        record("Fisher + linear SVM", LinearSVC(max_iter=20000).fit(Phi_train, y_train).score(Phi_test, y_test))
        gram_train = (Phi_train @ Phi_train.T).toarray()
        gram_test = (Phi_test @ Phi_train.T).toarray()
        record("Fisher SVC (precomputed)", SVC(kernel="precomputed").fit(gram_train, y_train).score(gram_test, y_test))
        onehot = OneHotEncoder(handle_unknown="ignore")
        record("one-hot + logistic", make_pipeline(onehot, LogisticRegression(max_iter=3000))
               .fit(X_train, y_train).score(X_test, y_test))
        record("one-hot + linear SVM", make_pipeline(OneHotEncoder(handle_unknown="ignore"), LinearSVC(max_iter=20000))
               .fit(X_train, y_train).score(X_test, y_test))
        overlap = OverlapKernel(embedding.network_)
        record("overlap SVC (precomputed)", SVC(kernel="precomputed")
               .fit(overlap.gram(X_train), y_train).score(overlap.gram(X_test, X_train), y_test))
    return {method: (np.mean(values), np.std(values)) for method, values in scores.items()}


def unsupervised_plot(path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = load("nursery").sample(3000, random_state=0).reset_index(drop=True)
    X, y = data.drop(columns="class"), data["class"].astype(str)
    embedding = FisherEmbedding(normalize=True).fit(X)
    gram = embedding.gram(X)
    components = KernelPCA(n_components=2, kernel="precomputed").fit_transform(gram)
    clusters = SpectralClustering(n_clusters=3, affinity="precomputed", random_state=0).fit_predict(
        np.maximum(gram, 0))
    ari = adjusted_rand_score(y, clusters)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for label in sorted(y.unique()):
        mask = (y == label).to_numpy()
        axes[0].scatter(components[mask, 0], components[mask, 1], s=6, label=label)
    axes[0].legend(fontsize=7, markerscale=2)
    axes[0].set_title("nursery: kernel PCA with the (cosine-normalised) Fisher kernel")
    axes[1].scatter(components[:, 0], components[:, 1], s=6, c=clusters, cmap="viridis")
    axes[1].set_title(f"spectral clustering, 3 clusters (ARI with class {ari:.2f})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return f"{ari:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="docs/machine-learning", help="folder for the PNG")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    warnings.simplefilter("ignore")
    rows = []
    for name, (X, y) in tables().items():
        start = time.perf_counter()
        result = cross_validate(X, y)
        row = {"data": f"{name} ({len(X)} x {X.shape[1]}, {y.nunique()} classes)"}
        row.update({method: f"{mean:.3f} ± {sd:.3f}" for method, (mean, sd) in result.items()})
        best = max(result, key=lambda m: result[m][0])
        row["best"] = best
        rows.append(row)
        print(f"{name}: {time.perf_counter() - start:.1f} s; best {best}", flush=True)
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    ari = unsupervised_plot(os.path.join(args.out, "kernel-pca-spectral.png"))
    print(f"\nnursery spectral clustering ARI with the class: {ari}")


if __name__ == "__main__":
    main()
