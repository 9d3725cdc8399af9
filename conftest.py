"""The doctests' shared set-up: every ``Examples`` section may use these names without importing them.

``bf`` (bnfisher), ``np``, ``pd``, ``load`` (:func:`bnfisher.datasets.load`), ``data`` (every 20th row of
the bundled *nursery* table: 648 rows, 9 columns) and ``network`` (a Chow-Liu network learned from ``data``).
"""

import numpy as np
import pandas as pd
import pytest

import bnfisher as bf
from bnfisher.datasets import load

_NETWORK: list = []


@pytest.fixture(autouse=True)
def _doctest_setup(doctest_namespace):
    if not _NETWORK:
        _NETWORK.append(bf.learn(load("nursery").iloc[::20], "chow-liu"))
    doctest_namespace.update(bf=bf, np=np, pd=pd, load=load, data=load("nursery").iloc[::20], network=_NETWORK[0])
