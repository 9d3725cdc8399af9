"""
Dask on a local cluster
=======================

Every count table comes from a *counts provider*; over a Dask DataFrame (or Parquet files) the counting
runs in the workers, and the results equal the in-memory ones.  This example starts a local cluster of
two workers in this process; on a real cluster, pass the scheduler's address to ``Client``.
"""

# %%
import dask.dataframe as dd
import matplotlib.pyplot as plt
from dask.distributed import Client, LocalCluster

import bnfisher as bf
from bnfisher.datasets import load

cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
client = Client(cluster)
nursery = load("nursery")
distributed = dd.from_pandas(nursery, npartitions=8)

# %%
# The same network, learned from the partitions and from memory
# -------------------------------------------------------------
network_dask = bf.learn(distributed, "chow-liu")
network_numpy = bf.learn(nursery, "chow-liu")
print("same structure:", network_dask.parents == network_numpy.parents)

# %%
# The same MMD² between two halves
# --------------------------------
kernel = bf.FisherKernel(network_numpy)
first, second = distributed.partitions[:4], distributed.partitions[4:]
mmd_dask = kernel.mmd(first, second)
mmd_numpy = kernel.mmd(nursery.iloc[: len(nursery) // 2], nursery.iloc[len(nursery) // 2:])
print(f"MMD² from the workers {mmd_dask:.12f}, in memory {mmd_numpy:.12f}")

# %%
# Where the halves differ: each family's part of the MMD² (its exact share of the distance)
table = bf.mmd_by_family(kernel, first.compute(), second.compute(), n_permutations=99, random_state=0)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.barh(table["variable"].astype(str), table["mmd2"])
ax.set_xlabel("family's part of the MMD² (the parts sum to the MMD²)")
ax.set_title(f"nursery, first half against second: MMD² {mmd_dask:.4f}")
fig.tight_layout()
plt.show()

client.close()
cluster.close()
