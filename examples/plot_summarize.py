"""
Summarize a table by representative rows
========================================

Pick 200 rows of the UCI *nursery* table whose mean embedding is closest to the whole table's
(Algorithm 1 of Leppä-aho, Silander & Roos 2020) and compare the subset with random subsets of the
same size.  The smaller the squared MMD, the better the subset stands for the table.
"""

# %%
# Learn the network and select the rows
# -------------------------------------
# ``summarize`` learns a Bayesian network (hill climbing, BIC), builds its Fisher kernel and runs the
# greedy swap search from the best of 1,000 random subsets.
import matplotlib.pyplot as plt

import bnfisher as bf
from bnfisher.datasets import load

nursery = load("nursery")
summary = bf.summarize(nursery, 200, random_state=0)
print(summary)

# %%
# The verdict in numbers
# ----------------------
# The subset's squared MMD to the table sits far below the random subsets' mean.
random = summary.random_mmd2
print(f"subset MMD² = {summary.mmd2:.5f}; {random.size} random subsets: {random.mean():.5f} ± {random.std(ddof=1):.5f}")

# %%
# The picture
# -----------
# The objective per sweep of the search, and the subset's marginals beside the table's.
summary.plot()
plt.show()
