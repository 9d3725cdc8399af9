"""Read and write networks in the BIF text format (bnlearn repository, pgmpy, pyAgrum).

The reader accepts the dialects those libraries write -- commas or spaces between
probabilities, ``discrete[2]`` or ``discrete [ 2 ]``, quoted network names,
``//`` and ``/* */`` comments -- and rejects everything else with a
:class:`~bnfisher.exceptions.NetworkFileError` that names the file and the line:
a file with no variable, text outside the ``network`` / ``variable`` /
``probability`` blocks, a variable declared twice, two probability blocks for one
variable or one parent configuration, a table of the wrong size.

State labels are written as text.  To give labels back with the type the user
gave (``int``, ``float`` or ``bool``), :func:`write_bif` adds a property line
``property bnfisher_label_type = int ;`` to such variables; the bin edges of a
binned numeric variable and the missing-value markers of the network's
:class:`~bnfisher.data.Schema` travel the same way
(``bnfisher_bin_edges``, ``bnfisher_na_values``).  Other BIF readers ignore
properties.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re

import numpy as np

from bnfisher._utils.memory import check_allocation
from bnfisher.bn.formats._shared import warn_text_names
from bnfisher.bn.network import BayesianNetwork
from bnfisher.data.io import read_text, write_text
from bnfisher.data.schema import Schema
from bnfisher.exceptions import DataError, NetworkFileError, OptionTypeError, SchemaError

__all__ = ["EXTENSIONS", "read_bif", "parse_bif", "write_bif", "check_bif_names"]

#: File endings read and written as BIF.
EXTENSIONS = (".bif", ".bif.gz")

_BLOCK = re.compile(r"(network|variable|probability)\b", re.S)
_VARIABLE = re.compile(
    r"variable\s+(?P<name>[^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(?P<n>\d+)\s*\]\s*"
    r"\{(?P<states>[^}]*)\}\s*;(?P<rest>[^}]*)\}",
    re.S,
)
_NETWORK = re.compile(r"network\s+(?:\"[^\"]*\"|[^\s{]+)\s*\{(?P<body>[^}]*)\}", re.S)
_PROBABILITY = re.compile(r"probability\s*\(\s*(?P<head>[^)]*)\)\s*\{(?P<body>[^}]*)\}", re.S)
_PROPERTY = re.compile(r"property\s+(?P<key>\w+)\s*=\s*(?P<value>.*)", re.S)
_FORBIDDEN = re.compile(r"[\s,;{}()\[\]|\"]")
_CONVERTERS = {"int": int, "float": float, "bool": lambda text: {"True": True, "False": False}[text]}


def _split(text: str) -> list:
    return [token for token in re.split(r"[,\s]+", text) if token]


def _strip_comments(text: str, fail) -> str:
    """Blank ``//`` and ``/* */`` comments in one linear pass (newlines kept, so offsets still give line numbers)."""
    parts, position, line, block = [], 0, -2, -2
    while True:
        # Each search resumes where the last one ended: one pass over the text, however many comments.
        if -1 < line < position or line == -2:
            line = text.find("//", position)
        if -1 < block < position or block == -2:
            block = text.find("/*", position)
        if line < 0 and block < 0:
            parts.append(text[position:])
            return "".join(parts)
        start = line if block < 0 or 0 <= line < block else block
        if start == line:
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
        else:
            end = text.find("*/", start + 2)
            if end < 0:
                parts.append(text[position:])
                fail("".join(parts), start, "a '/*' comment is never closed.")
            end += 2
        parts.append(text[position:start])
        parts.append(re.sub(r"[^\n]", " ", text[start:end]))
        position = end


def _properties(body: str):
    """``(key, value)`` of every ``property key = value ;`` of a block body, in one linear pass."""
    for chunk in body.split(";")[:-1]:
        match = _PROPERTY.fullmatch(chunk.strip())
        if match is not None:
            yield match["key"], match["value"]


def read_bif(path: str | os.PathLike) -> BayesianNetwork:
    """Read a discrete Bayesian network from a BIF file.

    Parameters
    ----------
    path : str or path-like
        The file (``parse_bif`` reads BIF text).

    Returns
    -------
    BayesianNetwork
        With the schema the file carries (bin edges, missing-value markers, label
        types), if written by bnfisher.

    Raises
    ------
    FileNotFoundError
        For a missing file.
    NetworkFileError
        When the file is not valid BIF; the message names the file and the line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = bf.write_bif(network, folder / "nursery.bif")
    >>> bf.read_bif(folder / "nursery.bif").parents == network.parents
    True
    """
    path = os.fspath(path)
    try:
        text = read_text(path)
    except DataError as exc:  # a folder or a binary file
        raise NetworkFileError(f"{path}: not a BIF file ({exc})") from None
    return parse_bif(text, source=path)


def parse_bif(text: str, *, source: str = "<text>") -> BayesianNetwork:
    """Parse BIF text into a network.

    Parameters
    ----------
    text : str
    source : str, default="<text>"
        Named in error messages (a file path).

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    NetworkFileError
        Naming ``source`` and the line.

    Examples
    --------
    >>> text = '''network x { }
    ... variable a { type discrete [ 2 ] { yes, no }; }
    ... probability ( a ) { table 0.3, 0.7; }'''
    >>> parse_bif(text).cpts["a"].tolist()
    [0.3, 0.7]
    """
    if not isinstance(text, str):
        raise OptionTypeError(f"`text` must be a str; got {type(text).__name__}.")
    def fail_in(scanned: str, position: int, message: str):
        line = scanned.count("\n", 0, position) + 1
        raise NetworkFileError(f"{source}, line {line}: {message}")

    clean = _strip_comments(text, fail_in)

    def fail(position: int, message: str):
        fail_in(clean, position, message)

    blocks = _top_level_blocks(clean, fail)
    states, edges, na_values, hidden = _declarations(blocks, fail)
    if not states:
        fail(len(clean), "no 'variable' block: this is not a BIF network file.")
    parents, cpts = _probabilities(blocks, states, fail)
    absent = [v for v in states if v not in cpts]
    if absent:
        fail(len(clean), f"variables {absent[:5]} have no probability block.")
    try:
        schema = Schema(states, bin_edges=edges, na_values=na_values, hidden=hidden)
        return BayesianNetwork(parents, cpts, states, schema=schema)
    except (SchemaError, ValueError, TypeError) as exc:
        raise NetworkFileError(f"{source}: {exc}") from None


def _declarations(blocks: list, fail) -> tuple:
    """Return the variables' labels, bin edges, the missing-value markers and the hidden variables."""
    states: dict = {}
    edges: dict = {}
    na_values: tuple = ()
    hidden: list = []
    for kind, start, match in blocks:
        if kind == "network":
            for key, value in _properties(match["body"]):
                if key == "bnfisher_na_values":
                    na_values = tuple(_json_list(value, start, fail, key, (str, int, float, bool)))
        elif kind == "variable":
            if match["name"] in states:
                fail(start, f"variable {match['name']!r} is declared twice.")
            states[match["name"]] = _variable(match, start, fail, edges, hidden)
    return states, edges, na_values, hidden


def _variable(match, start: int, fail, edges: dict, hidden: list) -> tuple:
    """Return a variable block's labels, typed by its property; its bin edges and hidden flag go to the lists."""
    name = match["name"]
    labels = _split(match["states"])
    if len(labels) != int(match["n"]):
        fail(start, f"variable {name!r} declares {match['n']} states but lists {len(labels)}.")
    if not labels:
        fail(start, f"variable {name!r} has no states.")
    for key, value in _properties(match["rest"]):
        value = value.strip()
        if key == "bnfisher_label_type" and value in _CONVERTERS:
            try:
                labels = [_CONVERTERS[value](label) for label in labels]
            except (KeyError, ValueError):
                fail(start, f"variable {name!r}: labels {labels} are not of type {value}.")
        elif key == "bnfisher_bin_edges":
            edges[name] = _json_list(value, start, fail, key, (int, float))
        elif key == "bnfisher_hidden" and value == "true":
            hidden.append(name)
    if len(set(labels)) != len(labels):
        fail(start, f"variable {name!r} lists a state twice: {labels}.")
    return tuple(labels)


def _probabilities(blocks: list, states: dict, fail) -> tuple[dict, dict]:
    """Return the parents and CPT of every variable with a probability block."""
    cpts: dict = {}
    parents: dict = {}
    for kind, start, match in blocks:
        if kind != "probability":
            continue
        child, _, given = match["head"].partition("|")
        child = child.strip()
        if child not in states:
            fail(start, f"probability block for unknown variable {child!r}.")
        if child in cpts:
            fail(start, f"a second probability block for {child!r}.")
        ps = tuple(_split(given))
        for p in ps:
            if p not in states:
                fail(start, f"probability block of {child!r} names unknown parent {p!r}.")
        cpts[child] = _parse_table(match["body"], child, ps, states, start, fail)
        parents[child] = ps
    return parents, cpts


def _top_level_blocks(clean: str, fail) -> list:
    """``(kind, offset, match)`` of every top-level block; anything else is an error at its line."""
    blocks = []
    position = 0
    patterns = {"network": _NETWORK, "variable": _VARIABLE, "probability": _PROBABILITY}
    while True:
        while position < len(clean) and clean[position].isspace():
            position += 1
        if position >= len(clean):
            return blocks
        head = _BLOCK.match(clean, position)
        if head is None:
            snippet = clean[position : position + 40].split("\n")[0]
            fail(position, f"expected 'network', 'variable' or 'probability', found {snippet!r}.")
        match = patterns[head.group(1)].match(clean, position)
        if match is None:
            snippet = clean[position : position + 60].split("\n")[0]
            fail(position, f"cannot parse this {head.group(1)} block: {snippet!r}.")
        blocks.append((head.group(1), position, match))
        position = match.end()


def _json_list(value: str, start: int, fail, key: str, kinds: tuple) -> list:
    """Return a property's JSON list of scalars of ``kinds`` (anything else fails at its line)."""
    try:
        content = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        fail(start, f"property {key} = {value.strip()[:60]!r} is not valid JSON.")
    if not isinstance(content, list) or not all(isinstance(x, kinds) for x in content):
        wanted = " or ".join(k.__name__ for k in kinds)
        fail(start, f"property {key} must be a JSON list of {wanted} values; got {value.strip()[:60]!r}.")
    return content


def _json_text(content) -> str:
    r"""Return JSON whose strings cannot end a BIF property or block, nor open a comment (; { } / as \uXXXX)."""
    text = json.dumps(content)
    for character in ";{}/":
        text = text.replace(character, f"\\u{ord(character):04x}")
    return text


def _parse_table(body: str, child: str, ps: tuple, states: dict, start: int, fail) -> np.ndarray:
    shape = tuple(len(states[p]) for p in ps) + (len(states[child]),)
    size = math.prod(shape)
    if len(body) < size:  # every number takes at least one character: the block cannot list them all
        fail(start, f"the table of {child!r} needs {size} numbers ({' x '.join(map(str, shape))}) but its block "
                    f"has only {len(body)} characters.")
    check_allocation(8.0 * size, f"The table of {child!r}", "this network is too large for this machine.")
    table = np.full(shape, np.nan)
    seen: set = set()
    label_index = [{str(label): k for k, label in enumerate(states[p])} for p in ps]

    def numbers(text: str, expected: int, what: str) -> np.ndarray:
        tokens = _split(text)
        try:
            values = np.array(tokens, dtype=float)
        except ValueError:
            fail(start, f"{what} of {child!r} has entries that are not numbers: {' '.join(tokens[:6])!r}.")
        if values.size != expected:
            fail(start, f"{what} of {child!r} has {values.size} entries; expected {expected}.")
        return values

    for entry in body.split(";"):
        entry = entry.strip()
        if not entry:
            continue
        if entry.startswith("table"):
            if seen:
                fail(start, f"the probability block of {child!r} has a 'table' and other entries.")
            table = numbers(entry[len("table"):], table.size, "the table").reshape(shape)
            seen.add("table")
            continue
        position, config, values_text = _row_entry(entry, child, ps, label_index, start, fail)
        if position in seen or "table" in seen:
            fail(start, f"a second row for parent configuration ({', '.join(config)}) of {child!r}.")
        seen.add(position)
        table[position] = numbers(values_text, shape[-1], f"entry ({', '.join(config)})")
    if np.isnan(table).any():
        missing = np.argwhere(np.isnan(table[..., 0]))[0]
        config = tuple(states[p][k] for p, k in zip(ps, missing))
        fail(start, f"the table of {child!r} has no row for parent configuration {config}.")
    return table


def _row_entry(entry: str, child: str, ps: tuple, label_index: list, start: int, fail) -> tuple:
    """Parse ``(parent states) numbers`` into the row's position, its parent states and the numbers' text."""
    if entry.startswith("default"):
        fail(start, f"the probability block of {child!r} uses 'default', which bnfisher does not read.")
    if not entry.startswith("(") or ")" not in entry:
        fail(start, f"cannot parse the entry {entry[:60]!r} of {child!r}.")
    config_text, _, values_text = entry[1:].partition(")")
    config = _split(config_text)
    if len(config) != len(ps):
        fail(start, f"entry ({', '.join(config)}) of {child!r} has {len(config)} parent states; expected {len(ps)}.")
    try:
        position = tuple(index[label] for index, label in zip(label_index, config))
    except KeyError as exc:
        fail(start, f"entry of {child!r} names unknown parent state {exc.args[0]!r}.")
    return position, config, values_text


def _label_type(labels: tuple) -> str | None:
    for name, kind in (("bool", (bool, np.bool_)), ("int", (int, np.integer)), ("float", (float, np.floating))):
        if all(isinstance(label, kind) for label in labels) and not (
            name != "bool" and any(isinstance(label, (bool, np.bool_)) for label in labels)
        ):
            return name
    return None


def _is_bif_name(text: str) -> bool:
    """Return whether BIF can hold ``text`` as a name or label (it has no quoting)."""
    return bool(text) and not _FORBIDDEN.search(text) and "//" not in text and "/*" not in text


def check_bif_names(states) -> None:
    """Raise when a variable name or state label cannot be written to BIF (it has no quoting).

    Call it before learning, so that the user learns about a bad label at once.

    Parameters
    ----------
    states : mapping
        ``{variable: labels}`` (e.g. a schema's ``states``).

    Raises
    ------
    SchemaError
        Naming the variable and the label, and the fix.

    Examples
    --------
    >>> from bnfisher.bn.formats import check_bif_names
    >>> check_bif_names({"colour": ("red", "green")})
    >>> try:
    ...     check_bif_names({"colour": ("dark red", "green")})
    ... except ValueError as error:
    ...     print(type(error).__name__)
    SchemaError
    """
    for v, labels in states.items():
        texts = [str(label) for label in labels]
        if len(set(texts)) != len(texts):
            twice = sorted({t for t in texts if texts.count(t) > 1})
            raise SchemaError(f"Variable {v!r} has distinct states that BIF would write alike ({twice[0]!r}, e.g. "
                              f"1 and '1'); convert the column to one type first.")
        for text in [str(v)] + texts:
            if not _is_bif_name(text):
                raise SchemaError(
                    f"Cannot write {text!r} (variable {v!r}) to BIF: names and labels may not be empty or contain "
                    "whitespace, // or /*, or any of , ; { } ( ) [ ] | \". Rename it first, or save the model "
                    "in bnfisher's own format."
                )
        kinds = {type(label).__name__ for label in labels if not isinstance(label, (str, int, float, bool))}
        if kinds:
            raise SchemaError(f"Variable {v!r} has labels of type {', '.join(sorted(kinds))}, which BIF cannot "
                              "give back; convert the column to str (or numbers) first.")


def _variable_block(v, labels: tuple, schema: Schema) -> list:
    """Return the lines of a variable block: its labels, and its label type, bin edges and hidden flag."""
    listed = ", ".join(str(label) for label in labels)
    lines = [f"variable {v} {{", f"  type discrete [ {len(labels)} ] {{ {listed} }};"]
    label_type = _label_type(labels)
    if label_type is not None:
        lines.append(f"  property bnfisher_label_type = {label_type} ;")
    if v in schema.bin_edges:
        lines.append(f"  property bnfisher_bin_edges = {_json_text([float(e) for e in schema.bin_edges[v]])} ;")
    if v in schema.hidden:
        lines.append("  property bnfisher_hidden = true ;")
    return [*lines, "}"]


def _probability_block(network: BayesianNetwork, v) -> list:
    """Return the lines of a probability block: one table, or one row per parent configuration."""
    ps = network.parents[v]
    table = network.cpts[v]
    head = f"{v} | {', '.join(str(p) for p in ps)}" if ps else f"{v}"
    lines = [f"probability ( {head} ) {{"]
    if not ps:
        lines.append("  table " + ", ".join(format(x, ".17g") for x in table) + ";")
    else:
        for position in itertools.product(*(range(len(network.states[p])) for p in ps)):
            config = ", ".join(str(network.states[p][k]) for p, k in zip(ps, position))
            lines.append(f"  ({config}) " + ", ".join(format(x, ".17g") for x in table[position]) + ";")
    return [*lines, "}"]


def _check_network_name(name) -> None:
    if not isinstance(name, str) or not _is_bif_name(name):
        raise OptionTypeError(f"`name` must be a BIF name (no whitespace, //, /* or , ; {{ }} ( ) [ ] | \"); "
                              f"got {name!r}.")


def _markers_property(na_values: tuple) -> list:
    """Return the network block's line that keeps the missing-value markers (none without markers)."""
    if not na_values:
        return []
    kinds = {type(v).__name__ for v in na_values if not isinstance(v, (str, int, float, bool))}
    if kinds:
        raise SchemaError(f"Missing-value markers of type {', '.join(sorted(kinds))} cannot be written to BIF.")
    return [f"  property bnfisher_na_values = {_json_text(list(na_values))} ;"]


def write_bif(network: BayesianNetwork, path: str | os.PathLike | None = None, *, name: str = "bnfisher") -> str:
    """Write a network as BIF text.

    Parameters
    ----------
    network : BayesianNetwork
    path : str or path-like, optional
        Where to write (atomically); the text is returned either way.
    name : str, default="bnfisher"
        The network's name in the ``network`` block.

    Returns
    -------
    str
        The BIF text.  Probabilities are written with 17 significant digits, so
        reading the file back gives the same CPTs; the schema's bin edges and
        missing-value markers are written as properties.

    Raises
    ------
    SchemaError
        If a variable name or state label cannot be written (see :func:`check_bif_names`).

    Notes
    -----
    pyAgrum refuses variables with a single state; bnfisher reads them.

    Examples
    --------
    >>> text = bf.write_bif(network)
    >>> text.splitlines()[0]
    'network bnfisher {'
    """
    if not isinstance(network, BayesianNetwork):
        raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
    check_bif_names({str(v): network.states[v] for v in network.variables})
    warn_text_names(network, "BIF")
    _check_network_name(name)
    schema = network.schema
    lines = [f"network {name} {{", *_markers_property(schema.na_values), "}"]
    # Variable blocks in the declared order (schema.variables): an array of codes means the same after reading.
    for v in schema.variables:
        lines += _variable_block(v, network.states[v], schema)
    for v in network.variables:
        lines += _probability_block(network, v)
    text = "\n".join(lines) + "\n"
    if path is not None:
        write_text(path, text)
    return text
