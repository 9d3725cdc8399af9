"""UAI ``BAYES``: structure and CPTs by variable number (names and labels are not kept).

Every count the file declares -- variables, cardinalities, tables, scopes, table sizes --
is checked against the file before anything of that size is made: a 36-byte file that
declares a cardinality of 10^9 is refused at once, naming the file.
"""

from __future__ import annotations

import math
import os
import re
from typing import NoReturn

import numpy as np

from bnfisher.bn.formats._shared import build_network, read_text, table_size, written
from bnfisher.bn.network import BayesianNetwork
from bnfisher.exceptions import NetworkFileError

__all__ = ["EXTENSIONS", "read_uai", "write_uai"]

#: File endings read and written as UAI.
EXTENSIONS = (".uai",)


def write_uai(network: BayesianNetwork, path: str | os.PathLike | None = None) -> str:
    """Write UAI ``BAYES`` (structure and CPTs by variable number: names and labels are not kept).

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Written atomically.

    Returns
    -------
    str

    Examples
    --------
    >>> net = BayesianNetwork({"b": ["a"]}, {"a": [0.25, 0.75], "b": [[0.5, 0.5], [0.1, 0.9]]},
    ...                       {"a": ["x", "y"], "b": ["u", "v"]})
    >>> print(write_uai(net))
    BAYES
    2
    2 2
    2
    1 0
    2 0 1
    <BLANKLINE>
    2
    0.25 0.75
    <BLANKLINE>
    4
    0.5 0.5 0.10000000000000001 0.90000000000000002
    <BLANKLINE>
    """
    order = network.schema.variables
    index = {v: i for i, v in enumerate(order)}
    lines = ["BAYES", str(len(order)), " ".join(str(len(network.states[v])) for v in order), str(len(order))]
    lines += [" ".join(str(x) for x in [len(network.parents[v]) + 1, *(index[p] for p in network.parents[v]),
                                        index[v]]) for v in order]
    for v in order:
        values = np.asarray(network.cpts[v]).ravel()
        lines += ["", str(values.size), " ".join(format(x, ".17g") for x in values)]
    return written("\n".join(lines) + "\n", path)


class _Counts:
    """The file's tokens read from the front as counts, each checked before it is used."""

    def __init__(self, tokens: list, source: str):
        self.tokens, self.source, self.position = tokens, source, 0

    def fail(self, message: str) -> NoReturn:
        raise NetworkFileError(f"{self.source}: not a valid UAI file: {message}")

    def count(self, what: str, *, low: int = 0, high: int | None = None) -> int:
        if self.position >= len(self.tokens):
            self.fail(f"the file ends where {what} should be.")
        token = self.tokens[self.position]
        self.position += 1
        if not re.fullmatch(r"[+]?\d{1,18}", token):
            self.fail(f"{what} is {token[:40]!r}, not a whole number.")
        value = int(token)
        if value < low or (high is not None and value > high):
            self.fail(f"{what} is {value}; it must be between {low} and {high if high is not None else 'more'}.")
        return value

    def left(self) -> int:
        return len(self.tokens) - self.position


def _check_bayes(tokens: list, source: str) -> None:
    """Refuse a file that is not a UAI ``BAYES`` network (a Markov network, another format)."""
    first = tokens[0] if tokens else ""
    if first.upper() != "BAYES":
        raise NetworkFileError(f"{source}: not a UAI BAYES file (it starts with {first[:40]!r}).")


def _scope(counts, k: int, n: int) -> list:
    """Return table ``k``'s scope: its variables, the child last."""
    size = counts.count(f"the scope size of table {k}", low=1, high=n)
    return [counts.count(f"variable {j} of the scope of table {k}", high=n - 1) for j in range(size)]


def _check_scope(counts, k: int, scope: list, earlier: int | None) -> None:
    """Refuse a second table of one variable (``earlier``: the first one's number) and a scope naming one twice."""
    if earlier is not None:
        counts.fail(f"variable {scope[-1]} has two tables (tables {earlier} and {k}).")
    if len(set(scope)) < len(scope):
        counts.fail(f"the scope of table {k} names a variable twice.")


def _table(counts, k: int, wanted: int, source: str) -> list:
    """Return table ``k``'s numbers (their count must be ``wanted``: the product of its scope's states)."""
    size = counts.count(f"the size of table {k}", low=wanted, high=wanted)
    if size > counts.left():
        counts.fail(f"table {k} needs {size:,} numbers; the file holds {counts.left():,} tokens more.")
    table_size([size], source, f"table {k}")
    numbers = counts.tokens[counts.position: counts.position + size]
    counts.position += size
    return numbers


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
        Naming the file: not ``BAYES``, a count that is not a whole number or is out of
        range (a scope index beyond the variables, a table size the file cannot hold), not
        one table per variable, a variable with two tables, tokens after the last table.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = write_uai(network, folder / "model.uai")
    >>> len(read_uai(folder / "model.uai").variables)
    9
    """
    source = os.fspath(path)
    tokens = re.sub(r"#[^\n]*", "", read_text(path)).split()  # comments (pyAgrum writes some)
    _check_bayes(tokens, source)
    counts = _Counts(tokens[1:], source)
    # Every table has at least one number per state of its variable, so no count can exceed the tokens left.
    n = counts.count("the number of variables", low=1, high=counts.left())
    cards = [counts.count(f"the cardinality of variable {i}", low=1, high=counts.left()) for i in range(n)]
    counts.count("the number of tables", low=n, high=n)
    scopes = [_scope(counts, k, n) for k in range(n)]
    names = [f"X{i}" for i in range(n)]
    parents: dict = {}
    tables: dict = {}
    for k, scope in enumerate(scopes):
        child = names[scope[-1]]
        _check_scope(counts, k, scope, list(tables).index(child) if child in tables else None)
        parents[child] = [names[i] for i in scope[:-1]]
        tables[child] = _table(counts, k, math.prod(cards[i] for i in scope), source)
    if counts.left():
        counts.fail(f"{counts.left()} token(s) after the last table, from {counts.tokens[counts.position][:40]!r}.")
    states = {names[i]: tuple(range(cards[i])) for i in range(n)}
    return build_network(parents, tables, states, source)

