"""Hugin NET (discrete nodes, as pgmpy and pyAgrum write it): structure and CPTs, labels quoted.

The reader is a tokenizer and a recursive-descent parser: one pass over the text, failing
at the first unclosed block, unclosed string or stray token with its line (a hostile file
of 20,000 unclosed blocks is refused at the first, in milliseconds).  ``%`` starts a
comment outside quotes only, so a label cannot hide one.  The writer refuses labels
holding ``" % { } ( ) ;``, a newline or other control characters: other readers (pgmpy)
take them as syntax, so such a label could add a node to the file.
"""

from __future__ import annotations

import os
import re
from typing import NoReturn

import numpy as np

from bnfisher.bn.formats._shared import build_network, check_labels, read_text, warn_text_names, written
from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import NetworkFileError, SchemaError

__all__ = ["EXTENSIONS", "check_net_names", "read_net", "write_net"]

#: File endings read and written as NET.
EXTENSIONS = (".net",)

#: The deepest nesting of lists a NET file may hold (a table nests one list per parent).
MAX_DEPTH = 64

#: Characters a NET label cannot hold (beside control characters): other readers take them as syntax.
FORBIDDEN = '"%{}();'

# One token a match: blanks, a comment, a string on one line, punctuation, a word; anything else is an error.
_TOKEN = re.compile(r'(?P<skip>\s+|%[^\n]*)|(?P<string>"[^"\n]*")|(?P<punct>[(){}=;|])|(?P<word>[^\s(){}=;|"%]+)|'
                    r'(?P<bad>.)', re.S)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_net_names(states) -> None:
    """Refuse names and labels NET cannot hold, naming the fix (bnfisher's own format).

    Names must be identifiers (letters, digits and ``_``, not starting with a digit);
    labels may not hold ``" % { } ( ) ;`` or control characters.

    Parameters
    ----------
    states : mapping of variable to labels

    Raises
    ------
    SchemaError

    Examples
    --------
    >>> check_net_names({"colour": ("dark red", "green")})
    >>> try:
    ...     check_net_names({"colour": ("red); } node Evil {", "green")})
    ... except ValueError as error:
    ...     print(str(error)[:46])
    Cannot write the label of 'colour' 'red); } no
    """
    for v in states:
        if not _NAME.fullmatch(str(v)):
            raise SchemaError(f"Cannot write the variable name {str(v)!r} to NET: names are letters, digits and _ "
                              "(starting with a letter); rename it, or save the model in bnfisher's own format "
                              "(model.json).")
    check_labels(states, "NET", FORBIDDEN)


def write_net(network: BayesianNetwork, path: str | os.PathLike | None = None) -> str:
    """Write Hugin NET (labels quoted, so they may hold spaces; names must be identifiers).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Written atomically.

    Returns
    -------
    str

    Raises
    ------
    SchemaError
        For a name or label NET cannot hold (see :func:`check_net_names`).

    Examples
    --------
    >>> net = BayesianNetwork({}, {"a": [0.25, 0.75]}, {"a": ["x y", "z"]})
    >>> print(write_net(net).splitlines()[5])
      states = ("x y" "z");
    """
    check_net_names(network.states)
    warn_text_names(network, "NET")
    lines = ["net", "{", "}"]
    for v in network.schema.variables:
        labels = " ".join(f'"{label}"' for label in network.states[v])
        lines += [f"node {v}", "{", f"  states = ({labels});", "}"]
    for v in network.schema.variables:
        given = " ".join(str(p) for p in network.parents[v])
        table = np.asarray(network.cpts[v])
        rows = table.reshape(-1, table.shape[-1])
        data = " ".join("(" + " ".join(format(x, ".17g") for x in row) + ")" for row in rows)
        lines += [f"potential ({v}{' | ' + given if given else ''})", "{", f"  data = ({data});", "}"]
    return written("\n".join(lines) + "\n", path)


class _Parser:
    """Tokens of a NET file, read once from the front; every error names the file and the line."""

    def __init__(self, text: str, source: str):
        self.text, self.source = text, source
        self.tokens: list = []
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            if kind == "bad":
                what = "an unclosed string" if match.group() == '"' else f"a stray {match.group()!r}"
                self.fail(match.start(), f"{what}.")
            if kind != "skip":
                self.tokens.append((kind, match.group(), match.start()))
        self.position = 0

    def fail(self, offset: int, message: str) -> NoReturn:
        line = self.text.count("\n", 0, offset) + 1
        raise NetworkFileError(f"{self.source}, line {line}: {message}")

    def peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else ("end", "", len(self.text))

    def take(self, *expected: str) -> tuple:
        kind, value, offset = self.peek()
        if expected and value not in expected:
            shown = "the end of the file" if kind == "end" else repr(value[:40])
            self.fail(offset, f"expected {' or '.join(map(repr, expected))}, found {shown} (an unclosed block?).")
        self.position += 1
        return kind, value, offset

    def name(self) -> str:
        kind, value, offset = self.take()
        if kind != "word" or not _NAME.fullmatch(value):
            self.fail(offset, f"expected a name, found {value[:40]!r}.")
        return value

    def value(self, depth: int = 0):
        """One attribute value: a string, a word, or a parenthesised list of values (nested)."""
        kind, value, offset = self.take()
        if value == "(":
            if depth >= MAX_DEPTH:
                self.fail(offset, f"lists nested more than {MAX_DEPTH} deep.")
            items = []
            while self.peek()[1] != ")":
                if self.peek()[0] == "end":
                    self.fail(offset, "a '(' is never closed.")
                items.append(self.value(depth + 1))
            self.take(")")
            return items
        if kind == "string":
            return ("string", value[1:-1])
        if kind != "word":
            self.fail(offset, f"expected a value, found {value!r}.")
        return ("word", value)

    def attributes(self) -> dict:
        """``{ key = value; ... }``, each key once."""
        _, _, opened = self.take("{")
        found: dict = {}
        while self.peek()[1] != "}":
            if self.peek()[0] == "end":
                self.fail(opened, "a '{' is never closed.")
            offset = self.peek()[2]
            key = self.name()
            if key in found:
                self.fail(offset, f"{key!r} is given twice in one block.")
            self.take("=")
            found[key] = self.value()
            self.take(";")
        self.take("}")
        return found


    def node(self, keyword: str) -> tuple:
        """``[discrete] node NAME { states = (...); ... }``: the name and its labels."""
        _, _, offset = self.peek()
        if keyword == "discrete":
            self.take("node")
        name = self.name()
        found = self.attributes().get("states")
        if not isinstance(found, list) or any(isinstance(item, list) for item in found):
            self.fail(offset, f"node {name!r} has no list of states.")
        return name, tuple(label for _, label in found)

    def potential(self) -> tuple:
        """``potential (NAME | PARENTS) { data = (...); ... }``: the name, its parents and its numbers."""
        _, _, offset = self.take("(")
        name = self.name()
        given = []
        if self.peek()[1] == "|":
            self.take("|")
            while self.peek()[1] != ")":
                given.append(self.name())
        self.take(")")
        data = self.attributes().get("data")
        if data is None:
            self.fail(offset, f"the potential of {name!r} has no data.")
        return name, given, _flat(data)

def _flat(value) -> list:
    """Every word of a nested list, in order (a table's numbers)."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            out.append(item[1])
    return out


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
        Naming the file and the line: an unclosed block or string, a stray token, a node
        or table given twice, a table entry that is not a number, a table of the wrong size.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_net(network, folder / "model.net")
    >>> len(read_net(folder / "model.net").variables)
    9
    """
    source = os.fspath(path)
    parser = _Parser(read_text(path), source)
    states: dict = {}
    parents: dict = {}
    tables: dict = {}
    while parser.peek()[0] != "end":
        _, keyword, offset = parser.take()
        if keyword == "net":
            parser.attributes()
        elif keyword in ("node", "discrete"):
            name, labels = parser.node(keyword)
            if name in states:
                parser.fail(offset, f"node {name!r} is declared twice.")
            states[name] = labels
        elif keyword == "potential":
            name, given, table = parser.potential()
            if name in tables:
                parser.fail(offset, f"node {name!r} has two potentials.")
            parents[name], tables[name] = given, table
        else:
            parser.fail(offset, f"expected 'net', 'node' or 'potential', found {keyword[:40]!r}.")
    if not states:
        raise NetworkFileError(f"{source}: no node: not a NET file.")
    return build_network(parents, tables, states, source)
