"""XMLBIF 0.3 (as pgmpy, pyAgrum and Weka write it): structure and CPTs, labels as text.

Labels are written and read as they are (no whitespace is stripped, except the layout
around a name or label that stands on lines of its own); names and labels holding
control characters, which XML 1.0 cannot hold, are refused when writing.  A variable
declared twice, a table for an undeclared variable or two tables for one are refused
when reading, as is any table entry that is not a number.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ElementTree

import numpy as np

from bnfisher.bn.formats._shared import build_network, check_labels, read_text, warn_text_names, written
from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import NetworkFileError

__all__ = ["EXTENSIONS", "check_xmlbif_names", "read_xmlbif", "write_xmlbif"]

#: File endings read and written as XMLBIF.
EXTENSIONS = (".xml", ".xmlbif", ".bifxml")


def check_xmlbif_names(states) -> None:
    """Refuse names and labels XMLBIF cannot hold (control characters), naming the fix.

    Parameters
    ----------
    states : mapping of variable to labels

    Raises
    ------
    SchemaError

    Examples
    --------
    >>> check_xmlbif_names({"colour": ("dark red", "green")})
    """
    check_labels(states, "XMLBIF")


def write_xmlbif(network: BayesianNetwork, path: str | os.PathLike | None = None, *, name: str = "bnfisher") -> str:
    """Write XMLBIF 0.3 (labels as text; any printable characters, XML-escaped).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Written atomically.
    name : str, default="bnfisher"

    Returns
    -------
    str

    Raises
    ------
    SchemaError
        For a name or label holding a control character.

    Examples
    --------
    >>> net = BayesianNetwork({}, {"a": [0.25, 0.75]}, {"a": ["x y", "z"]})
    >>> "<OUTCOME>x y</OUTCOME>" in write_xmlbif(net)
    True
    """
    check_xmlbif_names(network.states)
    warn_text_names(network, "XMLBIF")
    root = ElementTree.Element("BIF", VERSION="0.3")
    body = ElementTree.SubElement(root, "NETWORK")
    ElementTree.SubElement(body, "NAME").text = name
    for v in network.schema.variables:
        variable = ElementTree.SubElement(body, "VARIABLE", TYPE="nature")
        ElementTree.SubElement(variable, "NAME").text = str(v)
        for label in network.states[v]:
            ElementTree.SubElement(variable, "OUTCOME").text = str(label)
    for v in network.schema.variables:
        definition = ElementTree.SubElement(body, "DEFINITION")
        ElementTree.SubElement(definition, "FOR").text = str(v)
        for p in network.parents[v]:
            ElementTree.SubElement(definition, "GIVEN").text = str(p)
        ElementTree.SubElement(definition, "TABLE").text = " ".join(
            format(x, ".17g") for x in np.asarray(network.cpts[v]).ravel())
    text = '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, encoding="unicode") + "\n"
    return written(text, path)


def _content(element) -> str:
    """Return an element's text as written; layout around text that stands on lines of its own is dropped."""
    text = element.text or ""
    return text.strip() if "\n" in text and text.strip() and "\n" not in text.strip() else text


def _declared_states(body, source: str) -> dict:
    """Return each declared variable's states (its OUTCOMEs), refusing a variable declared twice."""
    states: dict = {}
    for variable in body.iter("VARIABLE"):
        v = _content(variable.find("NAME")) if variable.find("NAME") is not None else ""
        if v in states:
            raise NetworkFileError(f"{source}: variable {v!r} is declared twice.")
        states[v] = tuple(_content(o) for o in variable.iter("OUTCOME"))
    return states


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
        Naming the file: not XML, not XMLBIF, a DOCTYPE or entities, a variable declared
        twice, a table for an undeclared variable or two for one, a table entry that is not
        a number, a table of the wrong size.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_xmlbif(network, folder / "model.xml")
    >>> read_xmlbif(folder / "model.xml").parents == network.parents
    True
    """
    source = os.fspath(path)
    text = read_text(path)
    if "<!ENTITY" in text or "<!DOCTYPE" in text:  # no entity expansion (billion laughs), no external files
        raise NetworkFileError(f"{source}: XMLBIF files with a DOCTYPE or entities are not read.")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise NetworkFileError(f"{source}: not XML ({exc}).") from None
    body = root.find("NETWORK")
    if root.tag != "BIF" or body is None:
        raise NetworkFileError(f"{source}: not an XMLBIF file (no <BIF><NETWORK>).")
    states = _declared_states(body, source)
    parents: dict = {}
    tables: dict = {}
    for definition in body.iter("DEFINITION"):
        v = _content(definition.find("FOR")) if definition.find("FOR") is not None else ""
        if v in tables:
            raise NetworkFileError(f"{source}: variable {v!r} has two tables (DEFINITION blocks).")
        parents[v] = [_content(g) for g in definition.iter("GIVEN")]
        tables[v] = (definition.findtext("TABLE") or "").split()
    return build_network(parents, tables, states, source)
