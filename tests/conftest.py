import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (CI runs them all)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: an expensive test (a Dask cluster's equalities, large networks, a "
                                       "browser, a simulation of a rate, a fresh interpreter, a server's "
                                       "timeout); run with --run-slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
