"""Set-up shared by the doctests and the tests.

Every test, doctests included, starts with the compiled functions' stand-ins (see
:func:`_compiled_functions_back_to_their_stand_ins`), and a test process may run 10 estimated seconds of
fallbacks before it compiles (:data:`SUITE_FALLBACK_BUDGET`).  Every ``Examples`` section may use these names
without importing them:

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

#: The fallback budget of a test process (``bnfisher._utils.jit.FALLBACK_BUDGET``, 5 s for a user's job).  A test
#: worker is not one job: hundreds of small tests spend the 5 s together, and then whichever test comes next
#: compiles the family kernel (6-9 s on CI's 2-core machine), which the tests that ask for compiled code cover
#: anyway.  10 s is what compiling the hill climb's kernels costs there: the package's own rule (the budget is
#: the compiler's cost) for the suite's machine.  Cold fast suite: 60-66 s at 5 s, 55-57 s at 10 s (2026-11-30).
SUITE_FALLBACK_BUDGET = 10.0


def pytest_configure(config):
    import bnfisher._utils.jit as jit

    jit.FALLBACK_BUDGET = SUITE_FALLBACK_BUDGET


@pytest.fixture(autouse=True)
def _doctest_setup(request):
    if not isinstance(request.node, DoctestItem):
        return
    if not _SHARED:
        _SHARED["data"] = load("nursery").iloc[::20]
        _SHARED["network"] = bf.learn(_SHARED["data"], "chow-liu")
    request.getfixturevalue("doctest_namespace").update(bf=bf, np=np, pd=pd, load=load, data=_SHARED["data"].copy(),
                                                        network=_SHARED["network"])


@pytest.fixture(autouse=True)
def _compiled_functions_back_to_their_stand_ins():
    """A test that switches to compiled code (``_materialise``) does not switch the tests after it: each starts
    with the stand-ins, and the fallback budget the process has spent so far (``bnfisher._utils.jit._forget``).

    Here, not in ``tests/conftest.py``, so that it follows the doctests too: a doctest that compiles one
    function (the HMM's forward-backward, which has no fallback) would otherwise make every later doctest in
    its process compile whatever it calls.
    """
    yield
    from bnfisher._utils.jit import _forget

    _forget()

