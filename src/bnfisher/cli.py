"""Command line interface: ``bnfisher <command> --help``.

A thin layer: it parses arguments, calls the public API and prints results.  A
library error is printed as one line and the exit status is 2.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import pandas as pd

__all__ = ["main"]


def _load_network_or_learn(args, frames: list):
    from . import learn, read_bif
    from .io import align_labels

    if getattr(args, "network", None):
        network = read_bif(args.network)
        return network, [align_labels(frame, network.states) for frame in frames]
    combined = pd.concat(frames, ignore_index=True)
    categorical = {c: sorted(combined[c].astype(str).unique()) for c in combined.columns}
    frames = [
        pd.DataFrame({c: pd.Categorical(f[c].astype(str), categories=categorical[c]) for c in f.columns})
        for f in frames
    ]
    return learn(pd.concat(frames, ignore_index=True), structure=args.structure), frames


def _command_demo(args) -> None:
    from . import FisherKernel, learn
    from .datasets import load

    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    data = load(args.dataset)
    print(f"Data set {args.dataset!r}: {data.shape[0]} rows x {data.shape[1]} categorical variables.")
    network = learn(data, structure="chow-liu")
    print(f"\nChow-Liu network learned in {time.perf_counter() - started:.2f} s:")
    print(network.describe())
    kernel = FisherKernel(network)
    print(f"\nFisher kernel: {kernel.n_features_} features; parent marginals by {kernel.inference_}.")
    rows = data.iloc[:5]
    print("\nFisher kernel between the first 5 rows:")
    with pd.option_context("display.width", 120, "display.precision", 3):
        print(pd.DataFrame(kernel.gram(rows), index=rows.index, columns=rows.index))
        print("\nThose rows:")
        print(rows.to_string())
    permutation = rng.permutation(len(data))
    half = len(data) // 2
    first, second = data.iloc[permutation[:half]], data.iloc[permutation[half:]]
    print(f"\nMMD (eq. 10) between two random halves:        {kernel.mmd(first, second):.5f}")
    if "class" in data.columns:
        classes = data["class"].value_counts().index[:2]
        a, b = (data[data["class"] == c] for c in classes)
        print(f"MMD between class {classes[0]!r} ({len(a)} rows) and {classes[1]!r} ({len(b)} rows): "
              f"{kernel.mmd(a, b):.5f}")
    print(f"\nDone in {time.perf_counter() - started:.2f} s.")


def _command_mmd(args) -> None:
    from . import FisherKernel
    from .io import read_table

    frames = [read_table(path, bins=args.bins) for path in (args.first, args.second)]
    network, frames = _load_network_or_learn(args, frames)
    kernel = FisherKernel(network, normalize=args.normalize)
    value = kernel.mmd(frames[0], frames[1])
    print(f"MMD (eq. 10) between {args.first} ({len(frames[0])} rows) and {args.second} "
          f"({len(frames[1])} rows): {value:.6g}")


def _structure_options(args) -> dict:
    """Options of ``learn`` that the chosen structure takes, from the command line."""
    options: dict = {}
    if args.structure == "hc":
        options.update(score=args.score, max_parents=args.max_parents, tabu=args.tabu, progress=not args.quiet)
    elif args.structure == "forest":
        options.update(score=args.score)
    elif args.structure in ("tan", "kdb", "naive-bayes"):
        options["class_variable"] = args.class_variable
        if args.structure == "kdb":
            options["k"] = args.k
    return options


def _command_learn(args) -> None:
    from . import learn, score, write_bif
    from .io import read_table

    data = read_table(args.data, bins=args.bins)
    started = time.perf_counter()
    network = learn(data, structure=args.structure, pseudocount=args.pseudocount, **_structure_options(args))
    elapsed = time.perf_counter() - started
    print(network.describe())
    print(f"Learned in {elapsed:.2f} s; BIC {score(network, data, 'bic'):.6g}, "
          f"log-likelihood {score(network, data, 'll'):.6g} on {len(data)} rows.")
    if args.output:
        write_bif(network, args.output)
        print(f"Wrote {args.output}")


def _add_learning_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("structure learning")
    group.add_argument("--structure", default="chow-liu",
                       choices=["chow-liu", "forest", "hc", "tan", "kdb", "naive-bayes"],
                       help="structure learner (default: chow-liu)")
    group.add_argument("--score", default="bic", choices=["bic", "aic", "ll", "bdeu", "k2"],
                       help="score for hc and forest (default: bic)")
    group.add_argument("--class-variable", default="class", help="class column for tan, kdb, naive-bayes")
    group.add_argument("--k", type=int, default=3, help="feature parents per feature for kdb (default 3)")
    group.add_argument("--max-parents", type=int, default=None, help="parent limit for hc")
    group.add_argument("--tabu", type=int, default=0, help="tabu list length for hc (default 0: plain)")
    group.add_argument("--pseudocount", type=float, default=1.0, help="CPT pseudocount (default 1)")
    group.add_argument("--quiet", action="store_true", help="no progress bars")


def _add_common_data_options(parser: argparse.ArgumentParser, structure: bool = True) -> None:
    parser.add_argument("--bins", type=int, default=None,
                        help="bin numeric columns into at most this many quantile bins (default: no binning)")
    if structure:
        parser.add_argument("--network", help="use this BIF network instead of learning one")
        parser.add_argument("--structure", default="chow-liu", help="structure learner (default: chow-liu)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bnfisher",
        description="Fisher kernel of discrete Bayesian networks for categorical data.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="learn a network on a bundled data set and show the kernel and MMD",
                          description="Learn a Chow-Liu network on a bundled data set, print it, the Fisher "
                                      "kernel between a few rows, and MMDs between random halves and classes.")
    demo.add_argument("--dataset", default="nursery", choices=["nursery", "letter", "waveform-5000"])
    demo.add_argument("--seed", type=int, default=0, help="seed of the random halves (default 0)")
    demo.set_defaults(handler=_command_demo)

    mmd = sub.add_parser("mmd", help="MMD between two CSV/Parquet files",
                         description="Squared MMD (eq. 10) between two tables under the Fisher kernel of a network "
                                     "given as BIF or learned from both tables together.")
    mmd.add_argument("first", help="first table (.csv, .csv.gz, .tsv or .parquet)")
    mmd.add_argument("second", help="second table")
    mmd.add_argument("--normalize", action="store_true", help="use the cosine-normalised kernel")
    _add_common_data_options(mmd)
    mmd.set_defaults(handler=_command_mmd)

    learn = sub.add_parser("learn", help="learn a network from a CSV/Parquet file and write it as BIF",
                           description="Learn the structure and CPTs of a Bayesian network; print it and its "
                                       "scores, and optionally write it as BIF.")
    learn.add_argument("data", help="table (.csv, .csv.gz, .tsv or .parquet)")
    learn.add_argument("-o", "--output", help="write the network to this BIF file")
    learn.add_argument("--bins", type=int, default=None,
                       help="bin numeric columns into at most this many quantile bins (default: no binning)")
    _add_learning_options(learn)
    learn.set_defaults(handler=_command_learn)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``bnfisher`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args)
    except (ValueError, TypeError, FileNotFoundError, MemoryError, KeyError) as exc:
        print(f"bnfisher {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
