"""The one boundary of the jobs: tables in, one schema, each table encoded once, the network learned once."""

from __future__ import annotations

import time
import warnings

import numpy as np

from bnfisher.bn.network import BayesianNetwork
from bnfisher.bn.structure.learn import learn
from bnfisher.data.binning import Binning
from bnfisher.data.guardrails import check_tables
from bnfisher.data.io import read_table
from bnfisher.data.profile import read_profile
from bnfisher.data.schema import EncodedData, Schema
from bnfisher.exceptions import DataWarning, OptionTypeError

__all__ = ["binned_note", "feature_advice", "prepare", "read_distributed", "read_inputs", "warn"]


def read_inputs(paths, *, na_values=None, profiles: bool = False) -> tuple[list, list]:
    """Read tables and profiles (``.bnfp``): a profile as itself with ``profiles`` (compare, drift), else its table.

    Parameters
    ----------
    paths : sequence of str or path-like
    na_values : sequence, optional
        Extra missing-value markers of the tables.
    profiles : bool, default=False
        Keep profiles as :class:`~bnfisher.data.profile.ReferenceProfile` (else expanded to their rows).

    Returns
    -------
    inputs : list of DataFrame or ReferenceProfile
    shown : list of str
        One line per input: ``path: what it holds``.
    """
    inputs, shown = [], []
    for path in paths:
        if str(path).endswith(".bnfp"):
            profile = read_profile(path)
            shown.append(f"{path}: {profile}")
            inputs.append(profile if profiles else profile.to_frame())
        else:
            frame = read_table(path, na_values=na_values)
            shown.append(f"{path}: {len(frame)} rows x {frame.shape[1]} columns")
            inputs.append(frame)
    return inputs, shown


def dask_engine(engine: str, *, scheduler: str | None = None, n_workers: int | None = None,
                timeout: float | None = None):
    """Return the context a job runs in: a Dask client for ``engine="dask"`` (:func:`bnfisher.dask.dask_client`).

    Parameters
    ----------
    engine : {"numpy", "dask"}
    scheduler : str, optional
        A running scheduler's address; default a local cluster.
    n_workers : int, optional
        Local worker processes (default 2).
    timeout : float, optional
        Seconds to wait for ``scheduler`` (default 10).

    Returns
    -------
    context manager
    """
    import contextlib

    if engine != "dask":
        return contextlib.nullcontext()
    from bnfisher.dask import dask_client  # Dask: a heavy optional dependency

    return dask_client(scheduler, n_workers=n_workers or 2, timeout=10.0 if timeout is None else timeout)


def read_distributed(paths, *, na_values=None):
    """Return a Dask DataFrame over Parquet or CSV file(s) (:func:`bnfisher.dask.read_dask`).

    Parameters
    ----------
    paths : str, path-like or list of them
    na_values : sequence, optional

    Returns
    -------
    dask.dataframe.DataFrame
    """
    from bnfisher.dask import read_dask  # Dask: a heavy optional dependency

    return read_dask(paths, na_values=na_values)


#: No numeric column binned, no extra missing-value marker.
NO_BINNING = Binning()


def prepare(frames: list, *, network: BayesianNetwork | None = None, structure: str = "chow-liu",
            binning: Binning = NO_BINNING, learn_options: dict | None = None) -> tuple:
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
    binning : Binning, default=NO_BINNING
        How the columns become states (edges over every table).
    learn_options : dict, optional
        Further options of :func:`bnfisher.learn`.

    Returns
    -------
    network : BayesianNetwork
    encoded : list of EncodedData
        One per table, columns in the network's order.
    notes : list of str
        One line per step a user should know about (binning, missing cells, learning).
    advice : list of str
        Warnings about the tables (identifier columns, undeclared missing markers), each
        also emitted once as a :class:`~bnfisher.exceptions.DataWarning`.
    """
    notes: list = []
    options = binning.schema_options()
    advice = check_tables(frames, na_values=options["na_values"] + (
        tuple(network.schema.na_values) if network is not None else ()),
        binned=binning.bins is not None or (network is not None and bool(network.schema.bin_edges)))
    if network is not None:
        if not isinstance(network, BayesianNetwork):
            raise OptionTypeError(f"`network` must be a BayesianNetwork; got {type(network).__name__}.")
        encoded = [network.encode(frame, missing="allow") for frame in frames]
    else:
        started = time.perf_counter()
        schema = Schema.from_data(*frames, **options, missing="allow")
        notes += binned_note(schema, binning.bins, "with the same edges for every input")
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
    return network, encoded, notes, advice


def binned_note(schema: Schema, bins: int | None, edges: str) -> list:
    """Name the binned columns (a note for every output), or nothing when none is.

    Parameters
    ----------
    schema : Schema
    bins : int or None
    edges : str
        Where the edges come from.

    Returns
    -------
    list of str
    """
    if not schema.bin_edges:
        return []
    names = ", ".join(map(str, schema.bin_edges))
    return [f"Binned {len(schema.bin_edges)} numeric column(s) into at most {bins} bins, {edges}: {names} (by "
            "default float columns and integer columns with more than max(bins, 30) values; choose with "
            "bin_columns / --bin-columns and categorical / --categorical)."]


def warn(messages: list) -> None:
    """Emit each message once as a DataWarning (the CLI prints each as one line).

    Parameters
    ----------
    messages : list of str
    """
    for message in messages:
        warnings.warn(message, DataWarning, stacklevel=3)


def feature_advice(kernel) -> list:
    """Return a warning when one family holds most of the kernel's features (it then dominates every statistic).

    Parameters
    ----------
    kernel : FamilyKernel

    Returns
    -------
    list of str
    """
    widths = np.diff(kernel.block_offsets)
    total = int(widths.sum())
    if len(widths) < 3 or total == 0:
        return []
    largest = int(np.argmax(widths))
    share = widths[largest] / total
    if share <= 0.5:
        return []
    variable = kernel.network.variables[largest]
    parents = kernel.network.parents[variable]
    given = f" given {', '.join(map(str, parents))}" if parents else ""
    return [f"The family of {variable!r}{given} holds {100 * share:.0f}% of the kernel's {total} features: it "
            "dominates every statistic. If that is not meant, bin or merge its states, or limit its parents "
            "(max_parents)."]
