"""Run coreax's kernel herding in coreax's own environment (JAX); called by ``subset_peers.py --coreax PYTHON``.

Reads an ``.npz`` with ``X`` (rows as one-hot vectors), ``k``, ``seed`` and ``squared`` (the median squared
distance: the Gaussian kernel ``exp(-|x - y|^2 / squared)``, the bandwidth MMD-critic's and Compress++'s rows use
in ``subset_peers.py``), and writes a JSON object to standard output: for each variant its row indices and
seconds. The variants are the three herding solvers of coreax's own benchmark (``coreax.benchmark_util``, coreax
1.0): kernel herding (Chen, Welling & Smola 2010), iterative herding (five refinements) and probabilistic iterative
herding (five refinements, temperature 0.001).

Run:  PYTHON benchmarks/_coreax_herding.py INPUT.npz
"""

from __future__ import annotations

import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from coreax import Data
from coreax.kernels import SquaredExponentialKernel
from coreax.solvers import KernelHerding


def main(path: str) -> None:
    given = np.load(path)
    X, k, seed = jnp.asarray(given["X"]), int(given["k"]), int(given["seed"])
    # exp(-|x - y|^2 / (2 l^2)) = exp(-|x - y|^2 / squared): l = sqrt(squared / 2)
    kernel = SquaredExponentialKernel(length_scale=float(np.sqrt(given["squared"] / 2.0)))
    data = Data(X)
    key = jax.random.key(seed)
    variants = {
        "coreax herding": lambda: KernelHerding(coreset_size=k, kernel=kernel, random_key=key).reduce(data),
        "coreax iterative herding": lambda: KernelHerding(coreset_size=k, kernel=kernel, random_key=key)
        .reduce_iterative(data, num_iterations=5),
        "coreax probabilistic herding": lambda: KernelHerding(coreset_size=k, kernel=kernel, probabilistic=True,
                                                              temperature=0.001, random_key=key)
        .reduce_iterative(data, num_iterations=5),
    }
    out = {}
    for name, run in variants.items():
        begin = time.perf_counter()
        coresubset, _ = run()
        indices = np.asarray(jax.block_until_ready(coresubset.unweighted_indices))
        out[name] = {"indices": indices.astype(int).tolist(), "seconds": time.perf_counter() - begin}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
