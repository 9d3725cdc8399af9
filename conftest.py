"""The doctests' shared set-up: every ``Examples`` section may use these names without importing them.

``bf`` (bnfisher), ``np``, ``pd``, ``load`` (:func:`bnfisher.datasets.load`), ``data`` (every 20th row of
the bundled *nursery* table: 648 rows, 9 columns) and ``network`` (a Chow-Liu network learned from ``data``).
Made once, for doctests only (each doctest gets its own copy of ``data``); other tests do not pay for them.
"""

import numpy as np
import pandas as pd
import pytest
from _pytest.doctest import DoctestItem

import bnfisher as bf
from bnfisher.datasets import load

_SHARED: dict = {}


@pytest.fixture(autouse=True)
def _doctest_setup(request):
    if not isinstance(request.node, DoctestItem):
        return
    if not _SHARED:
        _SHARED["data"] = load("nursery").iloc[::20]
        _SHARED["network"] = bf.learn(_SHARED["data"], "chow-liu")
    request.getfixturevalue("doctest_namespace").update(bf=bf, np=np, pd=pd, load=load, data=_SHARED["data"].copy(),
                                                        network=_SHARED["network"])
