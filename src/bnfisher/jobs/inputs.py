"""The one boundary of the jobs: tables in, one schema, each table encoded once, the network learned once."""

from __future__ import annotations

import time

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import OptionTypeError

__all__ = ["prepare"]


def prepare(frames: list, *, network: BayesianNetwork | None = None, structure: str = "chow-liu",
            bins: int | None = None, na_values=(), learn_options: dict | None = None) -> tuple:
    """Encode every table once with one schema and return the network, the encoded tables and what was done.

    Parameters
    ----------
    frames : list of DataFrame
        The job's tables, as read.
    network : BayesianNetwork, optional
        A model to use as it is: its schema encodes every table.  Default: a schema
        learned jointly from all tables (the same states and bin edges for each), and
        a network learned from the tables pooled.
    structure : str, default="chow-liu"
    bins : int, optional
    na_values : sequence, default=()
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.

    Returns
    -------
    network : BayesianNetwork
    encoded : list of EncodedData
        One per table, columns in the network's order.
    notes : list of str
        One line per step a user should know about (binning, missing cells, learning).
    """
    notes = []
    if network is not None:
        if not isinstance(network, BayesianNetwork):
            raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        encoded = [network.encode(frame, missing="allow") for frame in frames]
    else:
        started = time.perf_counter()
        schema = Schema.from_data(*frames, bins=bins, na_values=tuple(na_values or ()), missing="allow")
        if schema.bin_edges:
            notes.append(f"Binned {len(schema.bin_edges)} numeric column(s) into at most {bins} bins, with the "
                         "same edges for every input.")
        encoded = [schema.encode(frame, missing="allow") for frame in frames]
        pooled = encoded[0] if len(encoded) == 1 else EncodedData(
            np.asfortranarray(np.vstack([e.codes for e in encoded])), schema.variables, dict(schema.states), schema)
        n_missing = int((pooled.codes < 0).sum())
        if n_missing:
            rows = int((pooled.codes < 0).any(axis=1).sum())
            notes.append(f"{n_missing} cells missing ({100 * n_missing / pooled.codes.size:.1f}%, in {rows} of "
                         f"{pooled.n_rows} rows): the CPTs are fitted by EM and the kernel marginalizes them "
                         "(paper Sec. 8).")
        network = learn(pooled, structure, schema=schema, **(learn_options or {}))
        notes.append(f"Network ({structure}, learned in {time.perf_counter() - started:.2f} s): {network}")
    return network, encoded, notes
