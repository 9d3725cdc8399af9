"""Does the Gaussian-HMM Fisher kernel tell groups apart?  Writes docs/hmm.md.

Synthetic subjects (30 + 30 sequences, T = 1,000, D = 4, K = 3 states). The two groups differ in one thing:
state persistence (0.95 vs 0.93), one state's correlation (0 vs 0.25), one state's mean (+0.15 in one
channel), or two things at once (persistence 0.95 vs 0.93 and the mean shift). Every method is scored by
5-fold cross-validated accuracy of an SVC. Within each fold the HMM, the information matrix, the normalisers
and the baselines' scalers are fitted on the training sequences only (no leakage).

Methods: the default kernel (complete-data information, per-block normalisation) and the other options; naive
baselines on the same folds: (a) each sequence's mean and covariance, (b) fractional occupancy and switching
rate of the Viterbi path under the fold's HMM, both standardised, linear SVC.

Run:  python benchmarks/hmm_groups.py [--output docs/hmm.md]
"""

from __future__ import annotations

import argparse
import datetime
import time
import warnings

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import bnfisher
from bnfisher.sklearn import HMMFisherKernel

METHODS = {
    "default (complete information, blocks)": {},
    "complete information, no normalisation": {"normalize": None},
    "identity (s^T s)": {"information": "identity", "normalize": None},
    "identity, standardize": {"information": "identity", "normalize": "standardize"},
    "empirical (Ledoit-Wolf), blocks": {"information": "empirical"},
}


def sample(rng, startprob, transmat, means, covariances, T):
    K = len(startprob)
    states = np.empty(T, dtype=int)
    states[0] = rng.choice(K, p=startprob)
    cumulative = np.cumsum(transmat, axis=1)
    draws = rng.random(T)
    for t in range(1, T):
        states[t] = min(np.searchsorted(cumulative[states[t - 1]], draws[t]), K - 1)
    factors = np.linalg.cholesky(covariances)
    return means[states] + np.einsum("tij,tj->ti", factors[states], rng.normal(size=(T, means.shape[1])))


def groups(rng, difference: str, n=30, T=1000, D=4, K=3):
    base = rng.normal(size=(K, D))
    sequences, labels = [], []
    for label in (0, 1):
        stay = 0.93 if label and difference in ("persistence", "persistence+mean") else 0.95
        transmat = np.full((K, K), (1 - stay) / (K - 1)) + np.eye(K) * (stay - (1 - stay) / (K - 1))
        means, covariances = base.copy(), np.stack([np.eye(D)] * K)
        if label and difference in ("mean", "persistence+mean"):
            means[0, 0] += 0.15
        if label and difference == "correlation":
            covariances[0, 0, 1] = covariances[0, 1, 0] = 0.25
        for _ in range(n):
            sequences.append(sample(rng, np.full(K, 1 / K), transmat, means, covariances, T))
            labels.append(label)
    return sequences, np.array(labels)


def mean_covariance(sequences):
    rows, cols = np.triu_indices(sequences[0].shape[1])
    return np.array([np.concatenate([s.mean(axis=0), np.cov(s.T)[rows, cols]]) for s in sequences])


def occupancy_switching(model, sequences):
    out = []
    for s in sequences:
        path = model.predict(s)
        occupancy = np.bincount(path, minlength=model.n_components) / len(path)
        out.append(np.append(occupancy, np.mean(path[1:] != path[:-1])))
    return np.array(out)


def evaluate(sequences, labels, seed=0):
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    scores = {name: [] for name in [*METHODS, "baseline: mean + covariance", "baseline: occupancy + switching"]}
    for train, test in folds.split(np.zeros(len(labels)), labels):
        tr = [sequences[i] for i in train]
        te = [sequences[i] for i in test]
        for name, options in METHODS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kernel = HMMFisherKernel(n_states=3, n_init=3, random_state=seed, **options).fit(tr)
            train_features, test_features = kernel.transform(tr), kernel.transform(te)
            classifier = SVC(kernel="precomputed").fit(train_features @ train_features.T, labels[train])
            scores[name].append(np.mean(classifier.predict(test_features @ train_features.T) == labels[test]))
            if name.startswith("default"):
                model = kernel.model_
        for name, features in (("baseline: mean + covariance", mean_covariance),
                               ("baseline: occupancy + switching", lambda s, m=model: occupancy_switching(m, s))):
            classifier = make_pipeline(StandardScaler(), SVC(kernel="linear")).fit(features(tr), labels[train])
            scores[name].append(np.mean(classifier.predict(features(te)) == labels[test]))
    return {name: float(np.mean(values)) for name, values in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", default="docs/hmm.md")
    args = parser.parse_args()
    differences = ["persistence", "correlation", "mean", "persistence+mean"]
    results = {}
    started = time.perf_counter()
    for position, difference in enumerate(differences):
        sequences, labels = groups(np.random.default_rng(100 + position), difference)
        results[difference] = evaluate(sequences, labels)
        print(difference, results[difference], flush=True)
    names = list(next(iter(results.values())))
    lines = ["# The Gaussian-HMM Fisher kernel on group differences",
             "",
             "Made by `python benchmarks/hmm_groups.py` "
             f"({datetime.date.today()}, bnfisher {bnfisher.__version__}, {time.perf_counter() - started:.0f} s). "
             + __doc__.split("\n\n")[1].replace("\n", " "),
             "",
             "5-fold cross-validated accuracy (chance 0.5):",
             "",
             "| method | " + " | ".join(differences) + " |",
             "|---|" + "---|" * len(differences)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(f"{results[d][name]:.2f}" for d in differences) + " |")
    best_baseline = {d: max(v for k, v in results[d].items() if k.startswith("baseline")) for d in differences}
    losses = [d for d in differences if results[d][names[0]] < best_baseline[d]]
    lines += ["", "Where the default kernel loses to the better baseline: "
              + (", ".join(f"{d} ({results[d][names[0]]:.2f} against {best_baseline[d]:.2f})" for d in losses)
                 or "nowhere in this run") + ".", ""]
    with open(args.output, "w") as handle:
        handle.write("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
