"""Kernel benchmarks, each printed beside a reference measured in the same run.

(a) ``gram`` on 10,000 x 10,000 rows of letter vs a dense BLAS product of the one-hot matrix;
(b) ``embed`` throughput;
(c) ``mmd`` between two samples of alarm at growing sizes (linear time, no N x N memory) vs pairwise;
(d) exact parent marginals vs pyAgrum's LazyPropagation and VariableElimination.

Run:  python benchmarks/kernel.py [--quick]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
import tracemalloc
from pathlib import Path

import numpy as np

import bnfisher as bf
from bnfisher.bn.formats.interop import to_pyagrum
from bnfisher.datasets import load

BIF_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bif"  # shipped with the tests


def best_of(function, *args, repeat=3, **kwargs):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return min(times), result


def blas_info() -> str:
    try:
        from threadpoolctl import threadpool_info

        return ", ".join(f"{i['internal_api']} {i.get('architecture')} x{i['num_threads']}" for i in threadpool_info())
    except ImportError:  # pragma: no cover
        return "threadpoolctl not installed"


def bench_gram(n_rows: int) -> None:
    data = load("letter").iloc[:n_rows]
    network = bf.learn(data, structure="chow-liu")
    kernel = bf.FisherKernel(network)
    encoded = network.encode(data)
    onehot = np.zeros((n_rows, int(encoded.cardinalities.sum())))
    offsets = np.r_[0, np.cumsum(encoded.cardinalities)[:-1]]
    onehot[np.arange(n_rows)[:, None], encoded.codes + offsets] = 1.0
    other = onehot.copy()
    t_gram, gram = best_of(lambda: kernel.gram(encoded))
    t_gemm, _ = best_of(lambda: onehot @ other.T)
    print(f"(a) gram {n_rows}x{n_rows} on letter (Chow-Liu, {kernel.n_features_} features, "
          f"{onehot.shape[1]} one-hot columns)")
    print(f"    bnfisher gram           {t_gram:8.3f} s")
    print(f"    BLAS one-hot @ one-hot.T {t_gemm:8.3f} s   ratio {t_gram / t_gemm:.2f}x (goal <= 3x)")
    del gram
    t_embed, embedding = best_of(lambda: kernel.embed(encoded))
    print(f"(b) embed: {n_rows / t_embed:,.0f} rows/s ({embedding.nnz / n_rows:.0f} non-zeros per row)")


def bench_mmd(sizes) -> None:
    network = bf.read_bif(BIF_DIR / "alarm.bif.gz")
    kernel = bf.FisherKernel(network)
    print("(c) mmd between two samples of alarm (37 variables), each of n rows")
    for n in sizes:
        X = network.sample(n, random_state=1, as_frame=False)
        Y = network.sample(n, random_state=2, as_frame=False)
        tracemalloc.start()
        start = time.perf_counter()
        value = kernel.mmd(X, Y)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"    n={n:>9,}: {elapsed:7.3f} s, peak extra memory {peak / 2**20:7.1f} MiB, mmd={value:.3g}")
    n = 2000
    X = network.sample(n, random_state=1, as_frame=False)
    Y = network.sample(n, random_state=2, as_frame=False)
    start = time.perf_counter()
    pairwise = kernel.gram(X).mean() + kernel.gram(Y).mean() - 2 * kernel.gram(X, Y).mean()
    elapsed = time.perf_counter() - start
    print(f"    reference: pairwise eq. 10 through three {n}x{n} Gram matrices: {elapsed:.3f} s "
          f"(count-table mmd {kernel.mmd(X, Y):.6g} vs pairwise {pairwise:.6g}); quadratic, so 10^6 rows "
          f"would need ~{elapsed * (1e6 / n) ** 2 / 3600:.0f} h and 3 x 8 TB")


def _pyagrum_worker(name, engine_name, queue):
    import pyagrum as gum

    network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
    bn = to_pyagrum(network)
    start = time.perf_counter()
    engine = gum.LazyPropagation(bn) if engine_name == "lazy" else gum.VariableElimination(bn)
    parent_sets = sorted({tuple(sorted(network.parents[v])) for v in network.variables if network.parents[v]})
    if engine_name == "lazy":
        for parent_set in parent_sets:
            if len(parent_set) > 1:
                engine.addJointTarget(set(parent_set))
            else:
                engine.addTarget(parent_set[0])
        engine.makeInference()
    for parent_set in parent_sets:
        if engine_name == "lazy" and len(parent_set) == 1:
            engine.posterior(parent_set[0]).toarray()
        elif len(parent_set) == 1:
            engine.posterior(parent_set[0]).toarray()
        else:
            if engine_name != "lazy":
                engine.addJointTarget(set(parent_set))
            engine.jointPosterior(set(parent_set)).toarray()
    queue.put(time.perf_counter() - start)


def pyagrum_time(name, engine_name, timeout):
    queue = mp.Queue()
    process = mp.Process(target=_pyagrum_worker, args=(name, engine_name, queue))
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.terminate()
        process.join()
        return None
    return queue.get() if not queue.empty() else float("nan")


def bench_parent_marginals(names, timeout) -> None:
    try:
        import pyagrum  # noqa: F401
    except ImportError:
        print("(d) skipped: pyagrum not installed (pip install pyagrum)")
        return
    print("(d) exact parent marginals for every variable: bnfisher vs pyAgrum (seconds; '>T' = timed out)")
    print(f"    {'network':<11}{'nodes':>6}{'bnfisher':>10}{'engine':>15}{'jt':>8}{'elim':>8}"
          f"{'pyAgrum LP':>12}{'pyAgrum VE':>12}")
    for name in names:
        network = bf.read_bif(BIF_DIR / f"{name}.bif.gz")
        t_auto, (_, used) = best_of(bf.parent_marginals, network, "exact", repeat=3)
        t_jt, _ = best_of(bf.parent_marginals, network, "junction-tree", max_table_size=2**27, repeat=1)
        t_el, _ = best_of(bf.parent_marginals, network, "elimination", repeat=1)
        lazy = pyagrum_time(name, "lazy", timeout)
        elimination = pyagrum_time(name, "ve", timeout)

        def show(value):
            return f">{timeout:.0f}" if value is None else f"{value:.3f}"

        print(f"    {name:<11}{len(network.variables):>6}{t_auto:>10.3f}{used:>15}{t_jt:>8.3f}{t_el:>8.3f}"
              f"{show(lazy):>12}{show(elimination):>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per pyAgrum run")
    args = parser.parse_args()
    print(f"BLAS: {blas_info()}")
    bench_gram(2000 if args.quick else 10_000)
    bench_mmd([10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000])
    names = ["alarm", "hailfinder"] if args.quick else ["alarm", "hailfinder", "win95pts", "andes", "pathfinder",
                                                         "munin"]
    bench_parent_marginals(names, args.timeout)


if __name__ == "__main__":
    main()
