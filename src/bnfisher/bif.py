"""Read and write networks in the BIF text format of the bnlearn repository.

State labels are written as text.  To give labels back with the type the user
gave (``int``, ``float`` or ``bool``), :func:`write_bif` adds a property line
``property bnfisher_label_type = int ;`` to such variables; :func:`read_bif`
reads it back.  Other BIF readers ignore properties.
"""

from __future__ import annotations

import itertools
import os
import re

import numpy as np

from .network import BayesianNetwork

__all__ = ["read_bif", "write_bif"]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_VARIABLE = re.compile(
    r"variable\s+(?P<name>[^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(?P<n>\d+)\s*\]\s*"
    r"\{(?P<states>[^}]*)\}\s*;(?P<rest>[^}]*)\}",
    re.S,
)
_PROBABILITY = re.compile(r"probability\s*\(\s*(?P<head>[^)]*)\)\s*\{(?P<body>[^}]*)\}", re.S)
_LABEL_TYPE = re.compile(r"property\s+bnfisher_label_type\s*=\s*(\w+)\s*;")
_FORBIDDEN = re.compile(r"[\s,;{}()\[\]|]")
_CONVERTERS = {"int": int, "float": float, "bool": lambda text: {"True": True, "False": False}[text]}


def _split(text: str) -> list:
    return [token.strip() for token in text.split(",") if token.strip()]


def read_bif(source: str | os.PathLike) -> BayesianNetwork:
    """Read a discrete Bayesian network from a BIF file.

    Parameters
    ----------
    source : str or path-like
        A file path, or BIF text itself (anything containing a ``{``).

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    ValueError
        When a block cannot be parsed, a variable has no probability block, or a
        table has the wrong number of entries.

    Examples
    --------
    >>> text = '''network x { }
    ... variable a { type discrete [ 2 ] { yes, no }; }
    ... probability ( a ) { table 0.3, 0.7; }'''
    >>> read_bif(text).cpts["a"].tolist()
    [0.3, 0.7]
    """
    text = str(source)
    if "{" not in text:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    text = _COMMENTS.sub("", text)
    states: dict = {}
    for match in _VARIABLE.finditer(text):
        name = match["name"]
        labels = _split(match["states"])
        if len(labels) != int(match["n"]):
            raise ValueError(f"BIF variable {name!r} declares {match['n']} states but lists {len(labels)}.")
        label_type = _LABEL_TYPE.search(match["rest"])
        if label_type and label_type.group(1) in _CONVERTERS:
            convert = _CONVERTERS[label_type.group(1)]
            labels = [convert(label) for label in labels]
        states[name] = tuple(labels)
    parents: dict = {}
    cpts: dict = {}
    for match in _PROBABILITY.finditer(text):
        head = match["head"]
        child, _, given = head.partition("|")
        child = child.strip()
        if child not in states:
            raise ValueError(f"BIF probability block for unknown variable {child!r}.")
        ps = tuple(_split(given))
        for p in ps:
            if p not in states:
                raise ValueError(f"BIF probability block of {child!r} names unknown parent {p!r}.")
        shape = tuple(len(states[p]) for p in ps) + (len(states[child]),)
        table = np.full(shape, np.nan)
        label_index = [{str(label): k for k, label in enumerate(states[p])} for p in ps]
        for entry in match["body"].split(";"):
            entry = entry.strip()
            if not entry:
                continue
            if entry.startswith("table"):
                values = np.array(_split(entry[len("table") :].replace("\n", ",")), dtype=float)
                if values.size != table.size:
                    raise ValueError(f"BIF table of {child!r} has {values.size} entries; expected {table.size}.")
                table = values.reshape(shape)
                continue
            if not entry.startswith("("):
                raise ValueError(f"Cannot parse BIF entry for {child!r}: {entry[:60]!r}.")
            config_text, _, values_text = entry[1:].partition(")")
            config = _split(config_text)
            try:
                position = tuple(index[label] for index, label in zip(label_index, config))
            except KeyError as exc:
                raise ValueError(f"BIF entry for {child!r} names unknown parent state {exc.args[0]!r}.") from None
            if len(position) != len(ps):
                raise ValueError(f"BIF entry for {child!r} has {len(config)} parent states; expected {len(ps)}.")
            values = np.array(_split(values_text.replace("\n", ",")), dtype=float)
            if values.size != shape[-1]:
                raise ValueError(f"BIF entry {config} of {child!r} has {values.size} values; expected {shape[-1]}.")
            table[position] = values
        if np.isnan(table).any():
            missing = np.argwhere(np.isnan(table[..., 0]))[0]
            config = tuple(states[p][k] for p, k in zip(ps, missing))
            raise ValueError(f"BIF table of {child!r} has no row for parent configuration {config}.")
        parents[child] = ps
        cpts[child] = table
    absent = [v for v in states if v not in cpts]
    if absent:
        raise ValueError(f"BIF variables {absent[:5]} have no probability block.")
    return BayesianNetwork(parents, cpts, states)


def _label_type(labels: tuple) -> str | None:
    for name, kind in (("bool", (bool, np.bool_)), ("int", (int, np.integer)), ("float", (float, np.floating))):
        if all(isinstance(label, kind) for label in labels) and not (
            name != "bool" and any(isinstance(label, (bool, np.bool_)) for label in labels)
        ):
            return name
    return None


def write_bif(network: BayesianNetwork, path: str | os.PathLike | None = None, name: str = "bnfisher") -> str:
    """Write a network as BIF text.

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Where to write; the text is returned either way.
    name : str, default="bnfisher"
        The network's name in the ``network`` block.

    Returns
    -------
    str
        The BIF text.  Probabilities are written with 17 significant digits, so
        reading the file back gives the same CPTs.

    Raises
    ------
    ValueError
        If a variable name or state label contains whitespace or one of ``,;{}()[]|``
        (BIF has no quoting).
    """
    lines = [f"network {name} {{", "}"]
    for v in network.variables:
        labels = network.states[v]
        for text in [str(v)] + [str(label) for label in labels]:
            if not text or _FORBIDDEN.search(text):
                raise ValueError(
                    f"Cannot write {text!r} (variable {v!r}) to BIF: names and labels may not contain "
                    "whitespace or any of , ; { } ( ) [ ] |. Rename it first."
                )
        lines.append(f"variable {v} {{")
        lines.append(f"  type discrete [ {len(labels)} ] {{ {', '.join(str(label) for label in labels)} }};")
        label_type = _label_type(labels)
        if label_type is not None:
            lines.append(f"  property bnfisher_label_type = {label_type} ;")
        lines.append("}")
    for v in network.variables:
        ps = network.parents[v]
        table = network.cpts[v]
        head = f"{v} | {', '.join(ps)}" if ps else f"{v}"
        lines.append(f"probability ( {head} ) {{")
        if not ps:
            lines.append("  table " + ", ".join(format(x, ".17g") for x in table) + ";")
        else:
            for position in itertools.product(*(range(len(network.states[p])) for p in ps)):
                config = ", ".join(str(network.states[p][k]) for p, k in zip(ps, position))
                lines.append(f"  ({config}) " + ", ".join(format(x, ".17g") for x in table[position]) + ";")
        lines.append("}")
    text = "\n".join(lines) + "\n"
    if path is not None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return text
