"""The profile and MMD jobs: a reference profile from tables and profiles, and MMD² between two inputs."""

from __future__ import annotations

from dataclasses import dataclass, field

from bnfisher.data.binning import Binning
from bnfisher.data.io import read_table
from bnfisher.data.profile import ReferenceProfile, merge_profiles, profile, read_profile, tables_of
from bnfisher.exceptions import OptionError
from bnfisher.jobs.inputs import prepare, read_distributed, warn
from bnfisher.jobs.result import TextResult
from bnfisher.kernels.fisher import FisherKernel

__all__ = ["MMDResult", "mmd_between", "profile_inputs"]


def profile_inputs(paths, *, bins: int | None = None, bin_columns=None, categorical=None, na_values=None,
                   engine: str = "numpy") -> tuple[ReferenceProfile, list]:
    """Profile tables together and merge the result with profiles (``.bnfp``): the profile of the union.

    Parameters
    ----------
    paths : sequence of str
        Tables (CSV, Parquet, ...) and profiles, in any order.
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them. Quantile bins of the tables' numeric columns, edges over all
        tables.
    engine : {"numpy", "dask"}, default="numpy"
        ``"dask"`` profiles the tables where they lie (one distributed pass).

    Returns
    -------
    profile : ReferenceProfile
    notes : list of str
        What was read.

    Raises
    ------
    OptionError
        For ``bins`` or ``engine="dask"`` when every input is a profile (they apply to tables).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> data.iloc[:300].to_csv(folder / "a.csv", index=False)
    >>> data.iloc[300:].to_csv(folder / "b.csv", index=False)
    >>> merged, notes = profile_inputs([folder / "a.csv", folder / "b.csv"])
    >>> merged.n_rows
    648
    """
    tables = [str(path) for path in paths if not str(path).endswith(".bnfp")]
    parts = [read_profile(path) for path in paths if str(path).endswith(".bnfp")]
    notes = []
    if tables:  # the tables together: one schema, bin edges over all of them
        frames = ([read_distributed(tables, na_values=na_values)] if engine == "dask"
                  else [read_table(path, na_values=na_values) for path in tables])
        parts.insert(0, profile(*frames, bins=bins, bin_columns=bin_columns, categorical=categorical,
                                na_values=na_values or ()))
        notes.append(f"{', '.join(tables)}: {parts[0]}")
    elif bins or engine == "dask":
        raise OptionError("`bins` and engine='dask' apply to tables; the inputs are all profiles.")
    return merge_profiles(parts), notes


@dataclass(repr=False)
class MMDResult(TextResult):
    """MMD² (eq. 10, biased) between two inputs under one learned or given network.

    Attributes
    ----------
    value : float
    names : tuple of str
    sizes : tuple of int
        Rows of each input.
    notes : list of str
        What was done on the way (binning, missing cells, the network learned).

    Examples
    --------
    >>> result = mmd_between(data.iloc[:300], data.iloc[300:], names=("early", "late"))
    >>> result.to_text(notes=False).split(":")[0]
    'MMD² (eq. 10, biased) between early (300 rows) and late (348 rows)'
    """

    value: float
    names: tuple
    sizes: tuple
    notes: list = field(default_factory=list)

    def verdict(self) -> str:
        """Return the value, in one line.

        Returns
        -------
        str
        """
        return f"MMD² {self.value:.6g}"

    def to_text(self, *, notes: bool = True) -> str:
        """Return the value with what it is between (and the steps' notes, unless ``notes=False``).

        Parameters
        ----------
        notes : bool, default=True

        Returns
        -------
        str
        """
        (a, b), (n, m) = self.names, self.sizes
        line = f"MMD² (eq. 10, biased) between {a} ({n} rows) and {b} ({m} rows): {self.value:.6g}"
        return "\n".join([*(self.notes if notes else []), line])


def mmd_between(first, second, *, names=("first", "second"), network=None, structure: str = "chow-liu",
                bins: int | None = None, bin_columns=None, categorical=None, na_values=(),
                learn_options: dict | None = None,
                normalize: bool = False) -> MMDResult:
    """MMD² (eq. 10) between two tables or profiles, with one schema and one network for both.

    Parameters
    ----------
    first, second : DataFrame or ReferenceProfile
    names : tuple of str, default=("first", "second")
    network : BayesianNetwork, optional
        Default: learned from both inputs pooled.
    structure : str, default="chow-liu"
    bins, bin_columns, categorical, na_values
        As :class:`~bnfisher.Binning` documents them.
    learn_options : dict, optional
    normalize : bool, default=False
        Normalize the kernel (unit self-similarity).

    Returns
    -------
    MMDResult

    Examples
    --------
    >>> result = mmd_between(data.iloc[:300], data.iloc[300:])
    >>> result.value >= 0
    True
    """
    frames = tables_of([first, second], bins=bins)
    network, encoded, notes, advice = prepare(frames, network=network, structure=structure,
                                              binning=Binning(bins, bin_columns, categorical, na_values),
                                              learn_options=learn_options)
    warn(advice)
    value = FisherKernel(network, normalize=normalize).mmd(*encoded)
    return MMDResult(float(value), tuple(map(str, names)), (len(frames[0]), len(frames[1])), notes)
