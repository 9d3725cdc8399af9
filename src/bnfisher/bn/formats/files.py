"""One entry point for model files: the format follows the file name.

``.bif``: BIF; ``.xml`` / ``.xmlbif`` / ``.bifxml``: XMLBIF; ``.net``: Hugin NET; ``.uai``: UAI;
anything else: bnfisher's own JSON format (the only one that keeps everything).
"""

from __future__ import annotations

import os

from bnfisher.bn.formats.bif import read_bif, write_bif
from bnfisher.bn.formats.exchange import read_net, read_uai, read_xmlbif, write_net, write_uai, write_xmlbif
from bnfisher.bn.formats.native import read_model, write_model
from bnfisher.bn.network import BayesianNetwork

__all__ = ["read_network", "write_network"]


#: File endings of the exchange formats, with their reader and writer.
_FORMATS = {(".bif", ".bif.gz"): (read_bif, write_bif), (".xml", ".xmlbif", ".bifxml"): (read_xmlbif, write_xmlbif),
            (".net",): (read_net, write_net), (".uai",): (read_uai, write_uai)}


def _format(path) -> tuple:
    lower = os.fspath(path).lower()
    return next((codec for endings, codec in _FORMATS.items() if lower.endswith(endings)), (read_model, write_model))


def read_network(path: str | os.PathLike) -> BayesianNetwork:
    """Read a model file, in the format its name says (see the module's description).

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

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bf.write_network(network, folder / "model.bif")
    >>> bf.read_network(folder / "model.bif").variables == network.variables
    True
    """
    return _format(path)[0](path)


def write_network(network: BayesianNetwork, path: str | os.PathLike) -> None:
    """Write a model file, in the format its name says (labels a format cannot hold are refused).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like
        Written atomically.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bf.write_network(network, folder / "model.json")
    >>> sorted(p.name for p in folder.iterdir())
    ['model.json']
    """
    _format(path)[1](network, path)
