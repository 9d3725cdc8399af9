"""One entry point for model files: the format follows the file name.

``.json``: bnfisher's own format (the only one that keeps everything); ``.bif``: BIF;
``.xml`` / ``.xmlbif`` / ``.bifxml``: XMLBIF; ``.net``: Hugin NET; ``.uai``: UAI.  Any
other ending is refused, naming these: a model is never written in a format its name
does not say.  Each format module declares its endings (``EXTENSIONS``), its reader and
writer; :func:`check_network_file` checks, before any learning, that a network over
given labels can be written to a path.
"""

from __future__ import annotations

import os

import bnfisher.bn.formats.bif as bif
import bnfisher.bn.formats.native as native
import bnfisher.bn.formats.net as net
import bnfisher.bn.formats.uai as uai
import bnfisher.bn.formats.xmlbif as xmlbif
from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import OptionError

__all__ = ["check_network_file", "read_network", "write_network"]


def _no_check(states) -> None:
    """Accept any label (bnfisher's own format; UAI, which keeps no label)."""

#: Each format: its endings, reader, writer and the check of names and labels it can hold.
_FORMATS = (
    (native.EXTENSIONS, native.read_model, native.write_model, _no_check),
    (bif.EXTENSIONS, bif.read_bif, bif.write_bif, lambda states: bif.check_bif_names(
        {str(v): labels for v, labels in states.items()})),
    (xmlbif.EXTENSIONS, xmlbif.read_xmlbif, xmlbif.write_xmlbif, xmlbif.check_xmlbif_names),
    (net.EXTENSIONS, net.read_net, net.write_net, net.check_net_names),
    (uai.EXTENSIONS, uai.read_uai, uai.write_uai, _no_check),
)


def _format(path) -> tuple:
    lower = os.fspath(path).lower()
    for endings, *codec in _FORMATS:
        if lower.endswith(endings):
            return tuple(codec)
    known = ", ".join(ending for endings, *_ in _FORMATS for ending in endings)
    raise OptionError(f"{os.fspath(path)}: a model file's name says its format; its ending is none of {known}. Use "
                      ".json for bnfisher's own format (it keeps everything).")


def check_network_file(path: str | os.PathLike, states) -> None:
    """Refuse, before any learning, a model path whose format cannot hold these names and labels.

    Parameters
    ----------
    path : str or path-like
    states : mapping of variable to labels
        E.g. a schema's ``states``.

    Raises
    ------
    OptionError
        For a file ending that names no format.
    SchemaError
        For a name or label the format cannot hold (naming bnfisher's own format).

    Examples
    --------
    >>> check_network_file("model.net", {"colour": ("dark red", "green")})
    >>> try:
    ...     check_network_file("model.bif", {"colour": ("dark red", "green")})
    ... except ValueError as error:
    ...     print(type(error).__name__)
    SchemaError
    """
    _format(path)[2](states)


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
    OptionError
        For a file ending that names no format.
    NetworkFileError
        Naming the file, when it is not a model file of its kind.

    Examples
    --------
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

    Raises
    ------
    OptionError
        For a file ending that names no format.
    SchemaError
        For a name or label the format cannot hold.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> bf.write_network(network, folder / "model.json")
    >>> sorted(p.name for p in folder.iterdir())
    ['model.json']
    """
    _format(path)[1](network, path)
