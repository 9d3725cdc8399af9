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


def _load_summary_data(args) -> tuple:
    from .datasets import load
    from .io import read_table

    if args.data is None:
        return load(args.dataset), f"bundled data set {args.dataset!r}"
    return read_table(args.data, bins=args.bins), args.data


def _write_subset(subset: pd.DataFrame, rows, output, meaning: str) -> None:
    """Write the selected rows with a leading 'row' column to CSV, or show the first ten."""
    out = subset.copy()
    out.insert(0, "row", rows)
    if output:
        out.to_csv(output, index=False)
        print(f"Wrote {output} (column 'row' holds {meaning})")
        return
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(out.head(10).to_string(index=False))
        if len(out) > 10:
            print(f"... {len(out) - 10} more rows (use -o FILE to write them all)")


def _learn_kernel(data, args, started: float, source: str):
    """Learn the network the command line asks for and build its Fisher kernel, saying what was done."""
    from . import FisherKernel, learn

    network = learn(data, structure=args.structure, **_structure_options(args))
    kernel = FisherKernel(network)
    print(f"Network ({args.structure}){' ' + source if source else ''}: {network}; parent marginals by "
          f"{kernel.inference_} ({time.perf_counter() - started:.2f} s)")
    return kernel


def _dask_client(args):
    from distributed import Client, LocalCluster

    if args.scheduler:
        return Client(args.scheduler)
    # Worker processes, not threads: the counting kernel holds the GIL in parts.
    return Client(LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None))


def _summarize_dask(args) -> None:
    import dask.dataframe as dd

    from .selection import select_representatives

    if args.data is None:
        raise ValueError("--engine dask needs a data file (Parquet or CSV).")
    with _dask_client(args) as client:
        started = time.perf_counter()
        lower = args.data.lower()
        frame = dd.read_csv(args.data, dtype=str) if lower.endswith((".csv", ".csv.gz")) else \
            dd.read_parquet(args.data)
        print(f"{args.data}: {frame.npartitions} partitions; scheduler {client.scheduler.address}")
        kernel = _learn_kernel(frame, args, started, "from distributed counts")
        result = select_representatives(kernel, frame, args.k, n_init=args.n_init, random_state=args.seed,
                                        pool_size=args.pool_size, progress=not args.quiet)
        subset = result.pool.iloc[result.indices]
        print(f"Selected k={args.k} rows from a pool of {len(result.pool)}: MMD to the full data "
              f"{result.final_value:.6g} (best random start {result.initial_value:.6g}); "
              f"{time.perf_counter() - started:.2f} s in all")
        _write_subset(subset, subset.index, args.output, "the row label in the input")


def _command_summarize(args) -> None:
    from .selection import random_baseline, random_mmd_baseline, select_representatives

    if args.engine == "dask":
        return _summarize_dask(args)
    data, source = _load_summary_data(args)
    print(f"{source}: {len(data)} rows x {data.shape[1]} variables")
    started = time.perf_counter()
    kernel = _learn_kernel(data, args, started, "")
    network = kernel.network
    result = select_representatives(kernel, data, args.k, criterion=args.criterion, n_init=args.n_init,
                                     random_state=args.seed, progress=not args.quiet)
    subset = data.iloc[result.indices]
    mmd = kernel.mmd(subset, data)
    mean, std, _ = random_mmd_baseline(kernel, data, args.k, n=args.n_random, random_state=args.seed + 1)
    print(f"Selected k={args.k} rows by greedy {args.criterion}: {result.n_sweeps} sweeps, {result.n_swaps} swaps, "
          f"{time.perf_counter() - started:.2f} s in all")
    print(f"MMD (eq. 10) of the subset to the full data: {mmd:.6g}")
    print(f"MMD of {args.n_random} random subsets of {args.k}:   {mean:.6g} ± {std:.3g} (mean ± sd)")
    if args.criterion == "chi2":
        from .selection import chi2_criterion

        codes = network.encode(data).codes
        chi_mean, chi_std, _ = random_baseline(lambda rows: chi2_criterion(codes, rows), len(data), args.k,
                                               n=min(args.n_random, 200), random_state=args.seed + 1)
        print(f"chi2 criterion: subset {result.final_value:.6g}; random {chi_mean:.6g} ± {chi_std:.3g}")
    _write_subset(subset, result.indices, args.output, "the 0-based row number in the input")
    if args.plot:
        from .plotting import plot_summary

        plot_summary(result, data, subset, args.plot)
        print(f"Wrote {args.plot}")


def _command_compare(args) -> None:
    from . import FisherKernel
    from .io import read_table
    from .selection import mmd_test

    frames = [read_table(path, bins=args.bins) for path in (args.first, args.second)]
    network, frames = _load_network_or_learn(args, frames)
    kernel = FisherKernel(network)
    result = mmd_test(kernel, frames[0], frames[1], n_permutations=args.permutations, random_state=args.seed)
    print(f"{args.first}: {len(frames[0])} rows; {args.second}: {len(frames[1])} rows; network {network}")
    print(f"MMD^2 (eq. 10, biased) = {result.statistic:.6g}; unbiased MMD^2_u = {result.unbiased:.6g}")
    print(f"Permutation p-value ({args.permutations} permutations) = {result.p_value:.4g}")
    print("Note: the Fisher kernel is not universal; the test detects differences the network's families "
          "can express.")


def _command_experiment(args) -> None:
    import os

    from .experiments import MODELS, plot_summarization, report_markdown, run_summarization, summarize_claims

    datasets = ["letter", "nursery", "waveform-5000"] if args.dataset == "all" else [args.dataset]
    models = list(MODELS) if args.model == "all" else [args.model]
    seeds = [args.seed + s for s in range(args.n_seeds)]
    os.makedirs(args.output, exist_ok=True)
    results, timings = [], []
    started = time.perf_counter()
    runs = [(d, m, s) for s in seeds for m in models for d in datasets]
    iterator = runs
    if not args.quiet:
        from tqdm.auto import tqdm

        iterator = tqdm(runs, desc="experiment", unit="run")
    for dataset, model, seed in iterator:
        outcome = run_summarization(dataset, model, sizes=args.sizes, n_random=args.n_random, seed=seed,
                                    criteria=args.criteria, progress=not args.quiet)
        results.append(outcome.results)
        timings.append(outcome.timings)
    results = pd.concat(results, ignore_index=True)
    timings = pd.concat(timings, ignore_index=True)
    results.to_csv(os.path.join(args.output, "results.csv"), index=False)
    timings.to_csv(os.path.join(args.output, "timings.csv"), index=False)
    claims = summarize_claims(results)
    claims.to_csv(os.path.join(args.output, "claims.csv"), index=False)
    for model in models:
        plot_summarization(results, os.path.join(args.output, f"figure-{model}.png"), model)
    elapsed = time.perf_counter() - started
    with open(os.path.join(args.output, "report.md"), "w", encoding="utf-8") as handle:
        handle.write(f"Wall time: {elapsed:.1f} s for {len(runs)} runs.\n\n" + report_markdown(results, timings))
    print(f"{len(runs)} runs in {elapsed:.1f} s; wrote results.csv, timings.csv, claims.csv, report.md and "
          f"figure-<model>.png to {args.output}")
    summary = claims.groupby("method")["beats_random"].mean()
    print("Share of (data set, model, seed, k) where the greedy subset beats the random mean:")
    print(summary.round(3).to_string())


def _command_hmm_kernel(args) -> None:
    from .hmm import HMMFisherKernel

    with np.load(args.sequences) as archive:
        if "X" in archive and "lengths" in archive:
            sequences, lengths = archive["X"], archive["lengths"]
        else:
            sequences, lengths = [archive[name] for name in archive.files], None
    kernel = HMMFisherKernel(n_states=args.n_states, covariance_type=args.covariance_type,
                             information=args.information, normalize=args.normalize, n_init=args.n_init,
                             random_state=args.seed).fit(sequences, lengths=lengths)
    gram = kernel.gram(sequences, lengths_a=lengths)
    np.save(args.output, gram)
    print(f"HMM with {args.n_states} states: log-likelihood {kernel.log_likelihood_:.6g} "
          f"(starts: {', '.join(f'{v:.6g}' for v in kernel.init_log_likelihoods_)})")
    print(f"Wrote the {gram.shape[0]} x {gram.shape[1]} Fisher kernel to {args.output}")


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

    summarize = sub.add_parser(
        "summarize", help="select k representative rows (the main job)",
        description="Learn a network, build its Fisher kernel and select k rows whose MMD to the whole data is "
                    "small (Algorithm 1, started from the best of --n-init random subsets). Prints the subset's "
                    "MMD next to random subsets' mean ± sd; writes the rows with their row numbers.")
    summarize.add_argument("data", nargs="?", help="table (.csv, .csv.gz, .tsv, .parquet); default: a bundled set")
    summarize.add_argument("-k", type=int, default=200, help="subset size (default 200)")
    summarize.add_argument("--criterion", default="mmd", choices=["mmd", "chi2"], help="greedy criterion")
    summarize.add_argument("--dataset", default="nursery", choices=["nursery", "letter", "waveform-5000"],
                           help="bundled data set used when no file is given (default nursery)")
    summarize.add_argument("--n-init", type=int, default=1000, help="random subsets for the start (default 1000)")
    summarize.add_argument("--n-random", type=int, default=1000, help="random subsets for the baseline")
    summarize.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    summarize.add_argument("-o", "--output", help="write the selected rows (with a 'row' column) to this CSV")
    summarize.add_argument("--plot", help="write a PNG: objective per sweep and marginals subset vs full")
    summarize.add_argument("--bins", type=int, default=None,
                           help="bin numeric columns into at most this many quantile bins (default: no binning)")
    summarize.add_argument("--engine", default="numpy", choices=["numpy", "dask"],
                           help="dask: count tables computed by Dask workers, for data beyond memory")
    summarize.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster)")
    summarize.add_argument("--workers", type=int, default=2, help="local Dask worker processes (default 2)")
    summarize.add_argument("--pool-size", type=int, default=100_000,
                           help="dask engine: candidate rows sampled into memory (default 100000)")
    _add_learning_options(summarize)
    summarize.set_defaults(handler=_command_summarize)

    compare = sub.add_parser("compare", help="MMD permutation two-sample test between two tables",
                             description="Permutation test (from count tables) of whether two tables come from "
                                         "the same distribution, under the Fisher kernel of a network.")
    compare.add_argument("first")
    compare.add_argument("second")
    compare.add_argument("--permutations", type=int, default=1000, help="number of permutations (default 1000)")
    compare.add_argument("--seed", type=int, default=0)
    _add_common_data_options(compare)
    compare.set_defaults(handler=_command_compare)

    experiment = sub.add_parser("experiment", help="reproduce the paper's experiments",
                                description="Reproduce the paper's experiments.")
    experiment_sub = experiment.add_subparsers(dest="experiment", required=True, metavar="EXPERIMENT")
    summarization = experiment_sub.add_parser(
        "summarization", help="data summarisation (Sec. 7.1, Figures 1-3)",
        description="Learn a network on the training half, select subsets of each size by random sampling and "
                    "by Algorithm 1 under several criteria, re-fit on each subset and evaluate on the test half. "
                    "Writes results.csv, timings.csv, claims.csv and figure-<model>.png.")
    summarization.add_argument("--dataset", default="all", choices=["all", "letter", "nursery", "waveform-5000"])
    summarization.add_argument("--model", default="all", choices=["all", "hc", "tan", "kdb"])
    summarization.add_argument("--sizes", type=int, nargs="+", default=[200, 400, 600, 1000])
    summarization.add_argument("--n-random", type=int, default=1000, help="random subsets per size (default 1000)")
    summarization.add_argument("--seed", type=int, default=0, help="first split seed (default 0)")
    summarization.add_argument("--n-seeds", type=int, default=5, help="number of split seeds (default 5)")
    summarization.add_argument("--criteria", nargs="+", default=["mmd", "chi2", "mmd-identity", "mmd-overlap"],
                               choices=["mmd", "chi2", "mmd-identity", "mmd-overlap"])
    summarization.add_argument("-o", "--output", required=True, help="output directory")
    summarization.add_argument("--quiet", action="store_true", help="no progress bars")
    summarization.set_defaults(handler=_command_experiment)

    hmm = sub.add_parser("hmm-kernel", help="Fisher kernel of a Gaussian HMM between time series",
                         description="Fit a Gaussian HMM to sequences and write their Fisher kernel (.npy). The "
                                     ".npz holds one (T_i, D) array per sequence, or 'X' and 'lengths'.")
    hmm.add_argument("sequences", help=".npz file")
    hmm.add_argument("-o", "--output", required=True, help="output .npy file")
    hmm.add_argument("--n-states", type=int, default=3)
    hmm.add_argument("--covariance-type", default="full", choices=["full", "diag"])
    hmm.add_argument("--information", default="identity", choices=["identity", "empirical"])
    hmm.add_argument("--normalize", default=None, choices=["l2", "standardize"])
    hmm.add_argument("--n-init", type=int, default=5)
    hmm.add_argument("--seed", type=int, default=0)
    hmm.set_defaults(handler=_command_hmm_kernel)
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
