"""Schema files: the JSON form of a :class:`~bnfisher.data.Schema` (what it keeps, what it refuses)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from bnfisher.data.io import write_text
from bnfisher.data.labels import _json_label
from bnfisher.exceptions import SchemaError

__all__ = ["schema_arguments", "schema_to_dict", "json_content", "json_text"]


def schema_to_dict(schema) -> dict:
    """Return :meth:`Schema.to_dict` of ``schema``.

    Parameters
    ----------
    schema : Schema

    Returns
    -------
    dict

    Raises
    ------
    SchemaError
        For labels of a type JSON cannot give back (anything but str, int, float, bool).
    """
    for v in schema.variables:
        kinds = {type(x).__name__ for x in (v, *schema.states[v]) if not isinstance(x, (str, int, float, bool))}
        if kinds:
            raise SchemaError(f"Variable {v!r} has labels of type {', '.join(sorted(kinds))}, which JSON cannot "
                              "give back as they are; convert the column to str (or numbers) first.")
    return {
        "format": "bnfisher-schema",
        "version": 1,
        "variables": [_json_label(v) for v in schema.variables],
        "states": [[_json_label(s) for s in schema.states[v]] for v in schema.variables],
        "bin_edges": {str(v): list(e) for v, e in schema.bin_edges.items()},
        "na_values": [_json_label(v) for v in schema.na_values],
        "hidden": [_json_label(v) for v in schema.hidden],
    }


def schema_arguments(content: Mapping) -> dict:
    """Return the ``Schema(...)`` arguments of a dict written by :meth:`Schema.to_dict`.

    Parameters
    ----------
    content : mapping

    Returns
    -------
    dict
        ``states``, ``bin_edges``, ``na_values`` and ``hidden``.

    Raises
    ------
    SchemaError
        When ``content`` is not such a dict (a field absent or of the wrong kind).
    """
    try:
        if content.get("format") != "bnfisher-schema":
            raise KeyError("format")
        for key in ("variables", "states", "na_values", "hidden"):
            if not isinstance(content.get(key, []), list):
                raise TypeError(key)
        if not isinstance(content.get("bin_edges", {}), dict) or not all(
                isinstance(x, list) for x in [*content["states"], *content.get("bin_edges", {}).values()]):
            raise TypeError("states or bin_edges")
        variables = list(content["variables"])
        states = {v: tuple(s) for v, s in zip(variables, content["states"])}
        if len(states) != len(variables) or len(content["states"]) != len(variables):
            raise KeyError("states")
        by_text = {str(v): v for v in variables}
        edges = {by_text[k]: tuple(e) for k, e in content.get("bin_edges", {}).items()}
        return {"states": states, "bin_edges": edges, "na_values": tuple(content.get("na_values", ())),
                "hidden": [by_text[str(v)] for v in content.get("hidden", ())]}
    except (KeyError, TypeError, AttributeError) as exc:
        raise SchemaError(f"Not a bnfisher schema (bad or absent field {exc}).") from None


def json_text(content: dict, path: str | os.PathLike | None = None) -> str:
    """Return ``content`` as indented JSON text; also written to ``path`` when given (atomically).

    Parameters
    ----------
    content : dict
    path : str or path-like, optional

    Returns
    -------
    str
    """
    text = json.dumps(content, indent=1)
    if path is not None:
        write_text(path, text)
    return text


def json_content(text: str) -> dict:
    """Parse a schema's JSON text, or raise a SchemaError saying it is not JSON.

    Parameters
    ----------
    text : str

    Returns
    -------
    dict
    """
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        raise SchemaError(f"Not a JSON schema: {exc}.") from None
