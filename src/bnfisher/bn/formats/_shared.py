"""What the exchange formats (XMLBIF, NET, UAI) share: strict numbers, checked table sizes, one network builder.

Every size a file declares is checked against the file before anything of that size is
allocated, every number is read strictly (``0.5 banana 0.5`` is refused, not read as two
numbers), and every error names the file.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.io import read_text as read
from bnfisher.data.io import write_text
from bnfisher.exceptions import DataWarning, NetworkFileError, SchemaError

__all__: list[str] = []

#: Characters no label or name may hold in a text exchange format: control characters (XML 1.0 cannot hold most of
#: them, and a reader normalises the rest), kept out of every format alike.
CONTROL = frozenset(chr(c) for c in range(32)) | {"\x7f"}


def read_text(path) -> str:
    """Return the file's text (through the one reader: its errors name the file)."""
    return read(path)


def written(text: str, path) -> str:
    """Write ``text`` to ``path`` (atomically) when a path is given; return it."""
    if path is not None:
        write_text(path, text)
    return text


def numbers(tokens, source: str, what: str) -> np.ndarray:
    """Return the tokens as float64, refusing any that is not a finite or infinite number (naming it)."""
    try:
        return np.asarray(tokens, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        for token in tokens:  # name the first that is not a number
            try:
                float(token)
            except (TypeError, ValueError):
                raise NetworkFileError(f"{source}: {what} holds {str(token)[:40]!r}, which is not a number.") from None
        raise NetworkFileError(f"{source}: {what} is not a list of numbers.") from None


def table_size(cards, source: str, what: str) -> int:
    """Return the product of the cardinalities, refused (naming the file) when it cannot fit in memory."""
    size = math.prod(int(c) for c in cards)
    check_allocation(8.0 * size, f"{source}: {what} ({size:,} numbers)", "the file declares a network too large "
                     "for this machine.")
    return size


def check_labels(states, fmt: str, forbidden: str = "") -> None:
    """Refuse names and labels the format cannot hold (control characters, and ``forbidden``), naming the fix.

    Parameters
    ----------
    states : mapping of variable to labels
    fmt : str
        The format's name, for the message.
    forbidden : str
        Further characters the format cannot hold.

    Raises
    ------
    SchemaError
        Naming the variable, the label and bnfisher's own format.
    """
    bad = CONTROL | set(forbidden)
    shown = "control characters" + (f" or any of {' '.join(sorted(forbidden))}" if forbidden else "")
    for variable, labels in states.items():
        texts = [str(label) for label in labels]
        if len(set(texts)) != len(texts):
            twice = sorted({t for t in texts if texts.count(t) > 1})
            raise SchemaError(f"Variable {variable!r} has distinct states that {fmt} would write alike ({twice[0]!r}, "
                              "e.g. 1 and '1'); convert the column to one type first, or save the model in "
                              "bnfisher's own format (model.json).")
        for text, what in [(str(variable), "variable name")] + [(str(label), f"label of {variable!r}")
                                                               for label in labels]:
            if bad & set(text):
                raise SchemaError(f"Cannot write the {what} {text!r} to {fmt}: {fmt} names and labels cannot hold "
                                  f"{shown}. Save the model in bnfisher's own format (model.json), which keeps "
                                  "every label.")


def warn_text_names(network: BayesianNetwork, fmt: str) -> None:
    """Warn when variable names are not text: the format stores them as text, and they come back as text."""
    odd = [v for v in network.variables if not isinstance(v, str)]
    if odd:
        warnings.warn(f"{fmt} stores variable names as text: {', '.join(map(repr, odd[:3]))}"
                      f"{', ...' if len(odd) > 3 else ''} will be read back as "
                      f"{', '.join(repr(str(v)) for v in odd[:3])}. Save the model in bnfisher's own format "
                      "(model.json) to keep them, or name the columns with text.", DataWarning, stacklevel=3)


def _table(v, flat, parents: list, states: dict, source: str) -> np.ndarray:
    """Return ``v``'s CPT from its flat numbers; refuse undeclared variables and a wrong count of numbers."""
    if v not in states:
        raise NetworkFileError(f"the table of {v!r} is for a variable the file does not declare.")
    absent = [p for p in parents if p not in states]
    if absent:
        raise NetworkFileError(f"the table of {v!r} is given {absent[0]!r}, which the file does not declare.")
    values = numbers(flat, source, f"the table of {v!r}")  # no larger than the file
    shape = tuple(len(states[p]) for p in parents) + (len(states[v]),)
    size = table_size(shape, source, f"the table of {v!r}")
    if len(values) != size:
        raise NetworkFileError(f"the table of {v!r} has {len(values)} numbers; it needs {size}.")
    return values.reshape(shape)


def build_network(parents: dict, tables: dict, states: dict, source: str) -> BayesianNetwork:
    """Build the network from flat tables (parents then the variable, C order); errors name the file."""
    try:
        cpts = {v: _table(v, flat, parents[v], states, source) for v, flat in tables.items()}
        absent = [v for v in states if v not in cpts]
        if absent:
            raise NetworkFileError(f"variables {absent[:5]} have no table.")
        return BayesianNetwork(parents, cpts, states)
    except NetworkFileError as exc:
        message = str(exc)
        raise NetworkFileError(message if message.startswith(source) else f"{source}: {message}") from None
    except (KeyError, ValueError, TypeError) as exc:
        raise NetworkFileError(f"{source}: {exc}") from None


def source_of(path) -> str:
    """Return the file name the messages give."""
    return os.fspath(path)
