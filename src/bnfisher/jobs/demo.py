"""The demo job: a tour of the Fisher kernel on a bundled data set, line by line."""

from __future__ import annotations

import time
from collections.abc import Iterator

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_random_state
from bnfisher.bn.structure.learn import learn
from bnfisher.datasets import load
from bnfisher.kernels.fisher import FisherKernel

__all__ = ["demo"]

def demo(dataset: str = "nursery", *, random_state=0) -> Iterator[str]:
    """Learn a Chow-Liu network on a bundled data set and show its Fisher kernel and MMD² at work.

    Parameters
    ----------
    dataset : str, default="nursery"
        A bundled data set (:data:`bnfisher.datasets.DATASETS`).
    random_state : None, int or Generator, default=0
        Draws the two random halves.

    Yields
    ------
    str
        The tour's text, a block at a time (printed as it comes).
    """
    rng = check_random_state(random_state)
    started = time.perf_counter()
    data = load(dataset)
    yield f"Data set {dataset!r}: {data.shape[0]} rows x {data.shape[1]} categorical variables."
    network = learn(data, structure="chow-liu")
    yield f"\nChow-Liu network learned in {time.perf_counter() - started:.2f} s:\n{network.describe()}"
    kernel = FisherKernel(network)
    yield f"\nFisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}."
    rows = data.iloc[:5]
    with pd.option_context("display.width", 120, "display.precision", 3):
        gram = pd.DataFrame(kernel.gram(rows), index=rows.index, columns=rows.index)
        yield f"\nFisher kernel between the first 5 rows:\n{gram}\n\nThose rows:\n{rows.to_string()}"
    permutation = rng.permutation(len(data))
    half = len(data) // 2
    first, second = data.iloc[permutation[:half]], data.iloc[permutation[half:]]
    yield f"\nMMD² (eq. 10) between two random halves:        {kernel.mmd(first, second):.5f}"
    if "class" in data.columns:
        classes = data["class"].value_counts().index[:2]
        a, b = (data[data["class"] == c] for c in classes)
        yield (f"MMD² between class {classes[0]!r} ({len(a)} rows) and {classes[1]!r} ({len(b)} rows): "
               f"{kernel.mmd(a, b):.5f}")
    yield f"\nDone in {time.perf_counter() - started:.2f} s."
