"""Bundled UCI data sets of the paper's experiments, prepared as the paper does.

``load(name)`` returns a DataFrame of pandas categorical columns: the class is an
ordinary variable (column ``class``), numeric features with more than 4 values are
binned into at most 4 quantile bins over the whole data set ([1]_, Sec. 7.1.1), and
every column carries its full category set, so a subset re-fitted with
``BayesianNetwork.fit`` keeps every state.

References
----------
.. [1] Leppä-aho, Silander & Roos (2020). Bayesian network Fisher kernel for
   categorical feature spaces. Behaviormetrika 47, 81-103.
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from bnfisher._utils.lazy import pandas as pd
from bnfisher._utils.validation import check_option, check_random_state
from bnfisher.data.encode import discretize
from bnfisher.exceptions import OptionError

__all__ = ["load", "train_test_split", "DATASETS"]

#: name -> (file, shape of the prepared frame)
DATASETS = {
    "letter": ("letter.csv.gz", (20000, 17)),
    "nursery": ("nursery.csv.gz", (12960, 9)),
    "waveform-5000": ("waveform-5000.csv.gz", (5000, 41)),
}


def load(name: str, bins: int = 4) -> pd.DataFrame:
    """Load a bundled data set as categorical columns.

    Parameters
    ----------
    name : {"letter", "nursery", "waveform-5000"}
    bins : int, default=4
        Maximum number of quantile bins for numeric features.

    Returns
    -------
    DataFrame
        letter 20,000 x 17, nursery 12,960 x 9, waveform-5000 5,000 x 41; the last
        column is ``class``.

    Examples
    --------
    >>> df = load("nursery")
    >>> df.shape, df["class"].cat.categories.tolist()[:2]
    ((12960, 9), ['not_recom', 'priority'])
    """
    check_option(name, "name", tuple(DATASETS))
    filename, _ = DATASETS[name]
    with resources.files(__package__).joinpath("data").joinpath(filename).open("rb") as handle:
        raw = pd.read_csv(handle, compression="gzip", dtype={"class": str}, keep_default_na=False)
    numeric = [c for c in raw.columns if c != "class" and pd.api.types.is_numeric_dtype(raw[c].dtype)]
    numeric = [c for c in numeric if raw[c].nunique() > bins]
    prepared = discretize(raw, bins=bins, columns=numeric) if numeric else raw.copy()
    for column in prepared.columns:
        if not isinstance(prepared[column].dtype, pd.CategoricalDtype):
            prepared[column] = pd.Categorical(prepared[column].astype(str),
                                              categories=sorted(prepared[column].astype(str).unique()))
    return prepared


def train_test_split(data: pd.DataFrame, test_size: float = 0.5, *, random_state=None):
    """Random split of the rows, 50/50 by default (the paper's split); pass ``random_state`` to repeat it.

    Parameters
    ----------
    data : DataFrame
    test_size : float, default=0.5
        Fraction of rows in the test part, in (0, 1).
    random_state : None, int or Generator, default=None

    Returns
    -------
    train, test : DataFrame
        Row subsets keeping the original index (row numbers) and dtypes.

    Examples
    --------
    >>> from bnfisher.datasets import load, train_test_split
    >>> train, test = train_test_split(load("nursery"), 0.25, random_state=0)
    >>> len(train), len(test)
    (9720, 3240)
    """
    if not 0 < test_size < 1:
        raise OptionError(f"`test_size` must be in (0, 1); got {test_size}.")
    rng = check_random_state(random_state)
    permutation = rng.permutation(len(data))
    n_test = int(round(test_size * len(data)))
    test_rows = np.sort(permutation[:n_test])
    train_rows = np.sort(permutation[n_test:])
    return data.iloc[train_rows], data.iloc[test_rows]
