"""One entry point for model files: the format follows the file name (``.bif`` for BIF, else bnfisher's JSON)."""

from __future__ import annotations

import os

from bnfisher.bn.formats.bif import read_bif, write_bif
from bnfisher.bn.formats.native import read_model, write_model
from bnfisher.bn.network import BayesianNetwork

__all__ = ["read_network", "write_network"]


def _is_bif(path: str) -> bool:
    return os.fspath(path).lower().endswith((".bif", ".bif.gz"))


def read_network(path: str | os.PathLike) -> BayesianNetwork:
    """Read a model file: BIF for ``.bif`` (and ``.bif.gz``), bnfisher's own JSON format otherwise.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming the file, when it is not a model file of its kind.
    """
    return read_bif(path) if _is_bif(os.fspath(path)) else read_model(path)


def write_network(network: BayesianNetwork, path: str | os.PathLike) -> None:
    """Write a model file: BIF for ``.bif`` (labels BIF cannot hold are refused), bnfisher's JSON otherwise.

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like
        Written atomically.
    """
    if _is_bif(os.fspath(path)):
        write_bif(network, path)
    else:
        write_model(network, path)
