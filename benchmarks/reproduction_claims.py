"""Count, from ``claims.csv`` of ``bnfisher experiment summarization``, where each greedy subset beats the baselines.

For every model and metric: in how many (data set, size, seed) cells each greedy criterion's subset scores below
the mean of the random subsets, and below greedy chi-square (the paper's two comparisons).

Run:  python benchmarks/reproduction_claims.py OUT/claims.csv
"""

from __future__ import annotations

import sys

import pandas as pd

METHODS = {"greedy-mmd": "Fisher-MMD", "greedy-mmd-identity": "identity-MMD", "greedy-mmd-overlap": "overlap-MMD",
           "greedy-chi2": "χ²"}


def main(path: str) -> None:
    claims = pd.read_csv(path)
    keys = ["dataset", "model", "seed", "k", "metric"]
    chi2 = claims[claims["method"] == "greedy-chi2"].set_index(keys)["value"]
    pairs = claims[["model", "metric"]].drop_duplicates().itertuples(index=False)
    columns = [(model, metric) for model, metric in pairs]
    print("| comparison | " + " | ".join(f"{model} {metric}" for model, metric in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for method, name in METHODS.items():
        rows = claims[claims["method"] == method]
        for label, test in (("below the random mean", lambda part: part["beats_random"]),
                            ("below greedy χ²", lambda part: part["value"].to_numpy()
                             < chi2.loc[part.set_index(keys).index].to_numpy())):
            if method == "greedy-chi2" and label == "below greedy χ²":
                continue
            cells = []
            for model, metric in columns:
                part = rows[(rows["model"] == model) & (rows["metric"] == metric)]
                cells.append(f"{int(test(part).sum())}/{len(part)}")
            print(f"| {name} {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
