"""Exchange formats other tools read: XMLBIF 0.3, Hugin NET and UAI (``BAYES``).

They hold the structure and the CPTs; labels come back as text (XMLBIF, NET) or as
state numbers (UAI, which stores no names), and none keeps the schema's bin edges
or missing markers -- bnfisher's own format (:mod:`bnfisher.bn.formats.native`) does.
The CPT layout of all three is bnfisher's: parents in order, then the variable, in C
order.  pgmpy and pyAgrum read and write each of them (tests round-trip through both).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import NetworkFileError, SchemaError

__all__ = ["read_net", "read_uai", "read_xmlbif", "write_net", "write_uai", "write_xmlbif"]


def _text(path) -> str:
    """Return the file's text (through the one reader: its errors name the file)."""
    from bnfisher.data.io import read_text

    return read_text(path)


def _written(text: str, path) -> str:
    """Write ``text`` to ``path`` (atomically) when a path is given; return it."""
    if path is not None:
        from bnfisher.data.io import write_text

        write_text(path, text)
    return text


def _order(network: BayesianNetwork) -> tuple:
    """Variables in the declared order (the schema's), as bnfisher's own files keep them."""
    return network.schema.variables


def _network(parents: dict, tables: dict, states: dict, source: str) -> BayesianNetwork:
    """Build the network from flat tables (parents then the variable, C order); errors name the file."""
    try:
        cpts = {}
        for v, flat in tables.items():
            shape = tuple(len(states[p]) for p in parents[v]) + (len(states[v]),)
            values = np.asarray(flat, dtype=np.float64)
            if values.size != int(np.prod(shape)):
                raise NetworkFileError(f"the table of {v!r} has {values.size} numbers; it needs {int(np.prod(shape))}.")
            cpts[v] = values.reshape(shape)
        absent = [v for v in states if v not in cpts]
        if absent:
            raise NetworkFileError(f"variables {absent[:5]} have no table.")
        return BayesianNetwork(parents, cpts, states)
    except NetworkFileError as exc:
        raise NetworkFileError(f"{source}: {exc}") from None
    except (KeyError, ValueError, TypeError) as exc:
        raise NetworkFileError(f"{source}: {exc}") from None


# ------------------------------------------------------------------- XMLBIF
def write_xmlbif(network: BayesianNetwork, path: str | os.PathLike | None = None, *, name: str = "bnfisher") -> str:
    """Write XMLBIF 0.3 (labels as text; any characters, XML-escaped).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
    name : str, default="bnfisher"

    Returns
    -------
    str

    Examples
    --------
    >>> net = BayesianNetwork({}, {"a": [0.25, 0.75]}, {"a": ["x y", "z"]})
    >>> "<OUTCOME>x y</OUTCOME>" in write_xmlbif(net)
    True
    """
    root = ElementTree.Element("BIF", VERSION="0.3")
    body = ElementTree.SubElement(root, "NETWORK")
    ElementTree.SubElement(body, "NAME").text = name
    for v in _order(network):
        variable = ElementTree.SubElement(body, "VARIABLE", TYPE="nature")
        ElementTree.SubElement(variable, "NAME").text = str(v)
        for label in network.states[v]:
            ElementTree.SubElement(variable, "OUTCOME").text = str(label)
    for v in _order(network):
        definition = ElementTree.SubElement(body, "DEFINITION")
        ElementTree.SubElement(definition, "FOR").text = str(v)
        for p in network.parents[v]:
            ElementTree.SubElement(definition, "GIVEN").text = str(p)
        ElementTree.SubElement(definition, "TABLE").text = " ".join(
            format(x, ".17g") for x in np.asarray(network.cpts[v]).ravel())
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"
    return _written(text, path)


def read_xmlbif(path: str | os.PathLike) -> BayesianNetwork:
    """Read XMLBIF 0.3 (as pgmpy, pyAgrum and Weka write it).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming the file: not XML, not XMLBIF, or inconsistent tables.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.bn.formats import read_xmlbif, write_xmlbif
    >>> _ = write_xmlbif(network, folder / "model.xml")
    >>> read_xmlbif(folder / "model.xml").parents == network.parents
    True
    """
    source = os.fspath(path)
    text = _text(path)
    if "<!ENTITY" in text or "<!DOCTYPE" in text:  # no entity expansion (billion laughs), no external files
        raise NetworkFileError(f"{source}: XMLBIF files with a DOCTYPE or entities are not read.")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise NetworkFileError(f"{source}: not XML ({exc}).") from None
    body = root.find("NETWORK")
    if root.tag != "BIF" or body is None:
        raise NetworkFileError(f"{source}: not an XMLBIF file (no <BIF><NETWORK>).")
    states, parents, tables = {}, {}, {}
    for variable in body.iter("VARIABLE"):
        v = (variable.findtext("NAME") or "").strip()
        states[v] = tuple((o.text or "").strip() for o in variable.iter("OUTCOME"))
    for definition in body.iter("DEFINITION"):
        v = (definition.findtext("FOR") or "").strip()
        parents[v] = [(g.text or "").strip() for g in definition.iter("GIVEN")]
        tables[v] = (definition.findtext("TABLE") or "").split()
    return _network(parents, tables, states, source)


# ---------------------------------------------------------------------- NET
def _quoted(label) -> str:
    """Return the label in double quotes (refusing one that holds a quote or a newline)."""
    text = str(label)
    if '"' in text or "\n" in text:
        raise SchemaError(f"Cannot write the label {text!r} to NET: it holds a double quote or a newline.")
    return f'"{text}"'


def _net_name(v) -> str:
    """Return the variable name, refusing one NET cannot hold."""
    text = str(v)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise SchemaError(f"Cannot write the variable name {text!r} to NET: names are letters, digits and _ "
                          "(starting with a letter); rename it, or save the model in bnfisher's own format.")
    return text


def write_net(network: BayesianNetwork, path: str | os.PathLike | None = None) -> str:
    """Write Hugin NET (labels quoted, so they may hold spaces; names must be identifiers).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional

    Returns
    -------
    str

    Raises
    ------
    SchemaError
        For a name NET cannot hold.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> from bnfisher.bn.formats import write_net
    >>> text = write_net(network)
    >>> len(text) > 0
    True
    """
    lines = ["net", "{", "}"]
    for v in _order(network):
        lines += [f"node {_net_name(v)}", "{",
                  f"  states = ({' '.join(_quoted(label) for label in network.states[v])});", "}"]
    for v in _order(network):
        given = " ".join(_net_name(p) for p in network.parents[v])
        table = np.asarray(network.cpts[v])
        rows = table.reshape(-1, table.shape[-1])
        data = " ".join("(" + " ".join(format(x, ".17g") for x in row) + ")" for row in rows)
        lines += [f"potential ({_net_name(v)}{' | ' + given if given else ''})", "{", f"  data = ({data});", "}"]
    return _written("\n".join(lines) + "\n", path)


_NODE = re.compile(r"node\s+(\w+)\s*\{(.*?)\}", re.S)
_STATES = re.compile(r"states\s*=\s*\((.*?)\)\s*;", re.S)
_POTENTIAL = re.compile(r"potential\s*\(\s*(\w+)\s*(?:\|\s*([\w\s]*))?\)\s*\{(.*?)\}", re.S)
_DATA = re.compile(r"data\s*=\s*(.*?);", re.S)


def read_net(path: str | os.PathLike) -> BayesianNetwork:
    """Read Hugin NET (discrete nodes, as pgmpy and pyAgrum write it).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming the file.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.bn.formats import read_net, write_net
    >>> _ = write_net(network, folder / "model.net")
    >>> len(read_net(folder / "model.net").variables)
    9
    """
    source = os.fspath(path)
    text = re.sub(r"%[^\n]*", "", _text(path))  # comments
    states, parents, tables = {}, {}, {}
    for name, body in _NODE.findall(text):
        found = _STATES.search(body)
        if found is None:
            raise NetworkFileError(f"{source}: node {name!r} has no states.")
        states[name] = tuple(quoted if quoted or not bare else bare
                             for quoted, bare in re.findall(r'"([^"]*)"|([^\s"()]+)', found.group(1)))
    for name, given, body in _POTENTIAL.findall(text):
        found = _DATA.search(body)
        if found is None:
            raise NetworkFileError(f"{source}: the potential of {name!r} has no data.")
        parents[name] = (given or "").split()
        tables[name] = re.findall(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", found.group(1))
    if not states:
        raise NetworkFileError(f"{source}: no node: not a NET file.")
    return _network(parents, tables, states, source)


# ---------------------------------------------------------------------- UAI
def write_uai(network: BayesianNetwork, path: str | os.PathLike | None = None) -> str:
    """Write UAI ``BAYES`` (structure and CPTs by variable number: names and labels are not kept).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional

    Returns
    -------
    str

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> from bnfisher.bn.formats import write_uai
    >>> text = write_uai(network)
    >>> len(text) > 0
    True
    """
    order = _order(network)
    index = {v: i for i, v in enumerate(order)}
    lines = ["BAYES", str(len(order)), " ".join(str(len(network.states[v])) for v in order), str(len(order))]
    lines += [" ".join(str(x) for x in [len(network.parents[v]) + 1, *(index[p] for p in network.parents[v]),
                                        index[v]]) for v in order]
    for v in order:
        values = np.asarray(network.cpts[v]).ravel()
        lines += ["", str(values.size), " ".join(format(x, ".17g") for x in values)]
    return _written("\n".join(lines) + "\n", path)


def read_uai(path: str | os.PathLike) -> BayesianNetwork:
    """Read UAI ``BAYES``: variables ``X0, X1, ...`` with states ``0`` to ``r - 1``.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming the file.

    Examples
    --------
    >>> import bnfisher as bf
    >>> from bnfisher.datasets import load
    >>> data = load("nursery").iloc[::20]
    >>> network = bf.learn(data, "chow-liu")
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> from bnfisher.bn.formats import read_uai, write_uai
    >>> _ = write_uai(network, folder / "model.uai")
    >>> len(read_uai(folder / "model.uai").variables)
    9
    """
    source = os.fspath(path)
    tokens = re.sub(r"#[^\n]*", "", _text(path)).split()  # comments (pyAgrum writes some)
    try:
        if tokens[0].upper() != "BAYES":
            raise NetworkFileError(f"{source}: not a UAI BAYES file (it starts with {tokens[0]!r}).")
        position = 1
        n = int(tokens[position])
        cards = [int(t) for t in tokens[position + 1: position + 1 + n]]
        position += 1 + n
        n_functions = int(tokens[position])
        position += 1
        scopes = []
        for _ in range(n_functions):
            size = int(tokens[position])
            scopes.append([int(t) for t in tokens[position + 1: position + 1 + size]])
            position += 1 + size
        names = [f"X{i}" for i in range(n)]
        states = {names[i]: tuple(range(cards[i])) for i in range(n)}
        parents, tables = {}, {}
        for scope in scopes:
            size = int(tokens[position])
            child = names[scope[-1]]
            parents[child] = [names[i] for i in scope[:-1]]
            tables[child] = tokens[position + 1: position + 1 + size]
            position += 1 + size
    except (IndexError, ValueError) as exc:
        raise NetworkFileError(f"{source}: not a valid UAI file ({exc}).") from None
    return _network(parents, tables, states, source)
