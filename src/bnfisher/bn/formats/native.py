"""bnfisher's own model file: one versioned JSON document that keeps everything BIF cannot.

What it holds: the schema (variables in their declared order, the states of each with
their label types, bin edges, missing-value markers, hidden variables), each
variable's parents in order, and its CPT as a flat list of floats (written with the
shortest text that reads back to the same float, so the round trip is bit-exact).
Labels may hold spaces, parentheses, slashes or commas (``Outlying-US(Guam-USVI-etc)``),
which BIF cannot.  The command line writes it for ``learn -o model.json`` and reads it
for ``--network model.json``; BIF stays for exchange with other tools.
"""

from __future__ import annotations

import json
import os

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.io import read_text, write_text
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, NetworkFileError, OptionTypeError, SchemaError

__all__ = ["EXTENSIONS", "FORMAT", "VERSION", "model_from_dict", "model_to_dict", "read_model", "write_model"]

#: File endings read and written in bnfisher's own format.
EXTENSIONS = (".json",)

#: The ``format`` field of every model file.
FORMAT = "bnfisher-model"
#: The version this code writes; it reads every version up to it.
VERSION = 1


def model_to_dict(network: BayesianNetwork) -> dict:
    """Return the network as a JSON-serialisable dict (see the module's description).

    Parameters
    ----------
    network : BayesianNetwork

    Returns
    -------
    dict

    Raises
    ------
    SchemaError
        For labels of a type JSON cannot give back (anything but str, int, float, bool).
    """
    if not isinstance(network, BayesianNetwork):
        raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
    schema = network.schema
    position = {v: i for i, v in enumerate(schema.variables)}
    return {
        "format": FORMAT,
        "version": VERSION,
        "schema": schema.to_dict(),
        "parents": [[position[p] for p in network.parents[v]] for v in schema.variables],
        "cpts": [[float(x) for x in np.asarray(network.cpts[v], dtype=np.float64).ravel()]
                 for v in schema.variables],
        "learning": _plain(getattr(network, "learning_", None)),
    }


def _check_format(content) -> None:
    """Refuse content that is not a bnfisher model, or of a later version than this bnfisher reads."""
    if not isinstance(content, dict) or content.get("format") != FORMAT:
        raise NetworkFileError("Not a bnfisher model file (no \"format\": \"bnfisher-model\" field).")
    version = content.get("version")
    if not isinstance(version, int) or not 1 <= version <= VERSION:
        raise NetworkFileError(f"This model file has version {version!r}; this bnfisher reads versions up to "
                               f"{VERSION}. Upgrade bnfisher to read it.")


def _cpt(v, table, parents: list, schema: Schema) -> np.ndarray:
    """Return ``v``'s CPT (parents' states first, its own last) from its flat list of numbers."""
    shape = tuple(len(schema.states[p]) for p in parents) + (len(schema.states[v]),)
    values = np.asarray(table, dtype=np.float64)
    if values.size != int(np.prod(shape)):
        raise DataError(f"the CPT of {v!r} has {values.size} entries; its variable and parents need "
                        f"{int(np.prod(shape))}.")
    return values.reshape(shape)


def model_from_dict(content) -> BayesianNetwork:
    """Return the network written by :func:`model_to_dict`.

    Parameters
    ----------
    content : mapping

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        When ``content`` is not such a document, or comes from a newer version.
    """
    _check_format(content)
    try:
        schema = Schema.from_dict(content["schema"])
        variables = schema.variables
        parent_lists, tables = content["parents"], content["cpts"]
        if not (isinstance(parent_lists, list) and isinstance(tables, list)
                and len(parent_lists) == len(tables) == len(variables)):
            raise KeyError("parents or cpts")
        parents = {v: [variables[int(p)] for p in parent_lists[i]] for i, v in enumerate(variables)}
        cpts = {v: _cpt(v, tables[i], parents[v], schema) for i, v in enumerate(variables)}
        network = BayesianNetwork(parents, cpts, dict(schema.states), schema=schema)
    except (KeyError, TypeError, ValueError, IndexError, SchemaError) as exc:
        raise NetworkFileError(f"Not a valid bnfisher model file: {exc}") from None
    if content.get("learning") is not None:
        network.learning_ = content["learning"]
    return network


def write_model(network: BayesianNetwork, path: str | os.PathLike | None = None) -> str:
    """Write the network in bnfisher's own format (JSON); return the text.

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Where to write (atomically).

    Returns
    -------
    str

    Examples
    --------
    >>> net = BayesianNetwork({}, {"city": [0.25, 0.75]}, {"city": ["New York", "Outlying-US(Guam)"]})
    >>> read_model_text = model_from_dict(json.loads(write_model(net)))
    >>> read_model_text.states["city"]
    ('New York', 'Outlying-US(Guam)')
    """
    text = json.dumps(model_to_dict(network), indent=1)
    if path is not None:
        write_text(path, text)
    return text


def read_model(path: str | os.PathLike) -> BayesianNetwork:
    """Read a network written by :func:`write_model`.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming the file, when it is not a bnfisher model file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = bf.write_model(network, folder / "model.json")
    >>> bf.read_model(folder / "model.json").parents == network.parents
    True
    """
    path = os.fspath(path)
    try:
        content = json.loads(read_text(path))
    except (json.JSONDecodeError, RecursionError, DataError) as exc:
        raise NetworkFileError(f"{path}: not a bnfisher model file ({exc}).") from None
    try:
        return model_from_dict(content)
    except NetworkFileError as exc:
        raise NetworkFileError(f"{path}: {exc}") from None


def _plain(value):
    """Return the learning report with numpy scalars as plain numbers (JSON), or None."""
    if value is None:
        return None
    return json.loads(json.dumps(value, default=lambda x: x.item() if isinstance(x, np.generic) else str(x)))
