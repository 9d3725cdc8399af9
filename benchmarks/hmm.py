"""Speed of HMMFisherKernel.transform against hmmlearn's forward-backward, K = 6 states, D = 10 channels.

The reference in the same run is hmmlearn's compiled ``implementation="scaling"`` forward-backward alone
(``GaussianHMM.score_samples``: emission densities, forward, backward, posteriors) on the same sequences
and parameters; ``transform`` does all of that and the Fisher scores, whitening and normalisation. Every
figure is the best of ``--repeat`` runs (after one warm-up that loads the compiled code).

Cases: 20 sequences of 10,000 steps in one call; the same sequences one call each; 200 sequences of
ragged lengths (100 to 2,000 steps); and one sequence of 10^6 steps, timed and with its peak memory
(peak resident set size above the size just before the call, Linux's VmHWM after a reset; each side
in a fresh process).

Run:  python benchmarks/hmm.py [--repeat 3] [--long-steps 1000000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

K, D = 6, 10


def _sequences(rng, lengths, means):
    out = []
    for T in lengths:
        states = np.repeat(rng.integers(0, K, size=T // 50 + 1), 50)[:T]
        out.append(means[states] + rng.normal(size=(T, D)))
    return out


def _fitted():
    from bnfisher.sklearn import HMMFisherKernel

    rng = np.random.default_rng(0)
    means = rng.normal(size=(K, D)) * 2
    kernel = HMMFisherKernel(n_states=K, n_init=1, n_iter=20, random_state=0)
    kernel.fit(_sequences(rng, [10_000] * 4, means))
    return kernel, means, rng


def _best(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def _status(field: str) -> int:
    """A /proc/self/status figure in kB (Linux)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def _reset_peak() -> int:
    """Reset the peak resident set size to the current one (Linux >= 4.0) and return it, in kB."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    return _status("VmRSS")


def _long_child(which: str, steps: int) -> None:
    """Run one side of the long-sequence case in this (fresh) process and print JSON."""
    kernel, means, rng = _fitted()
    X = _sequences(rng, [steps], means)[0]
    kernel.transform([X[:1000]])  # warm-up (compiled code loaded), small
    kernel.model_.score_samples(X[:1000])
    before = _reset_peak()
    start = time.perf_counter()
    if which == "bnfisher":
        kernel.transform([X])
    else:
        kernel.model_.score_samples(X)
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed, "extra_mb": (_status("VmHWM") - before) / 1024,
                      "input_mb": X.nbytes / 2**20}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long-steps", type=int, default=1_000_000)
    parser.add_argument("--child", choices=["bnfisher", "hmmlearn"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _long_child(args.child, args.long_steps)
        return
    kernel, means, rng = _fitted()
    model = kernel.model_
    equal = _sequences(rng, [10_000] * 20, means)
    ragged = _sequences(rng, rng.integers(100, 2001, size=200), means)
    start = time.perf_counter()
    kernel.transform(equal[:1])
    print(f"first call (loads or compiles the forward-backward): {time.perf_counter() - start:.2f} s")
    print(f"K={K}, D={D}: {kernel.n_features_out_} features per sequence; best of {args.repeat}\n")
    print(f"{'case':44s} {'bnfisher transform':>19s} {'hmmlearn fwd-bwd':>17s} {'ratio':>6s}")
    stacked_ragged = np.vstack(ragged)
    lengths_ragged = [len(s) for s in ragged]
    cases = [
        ("20 x 10,000 steps, one call", lambda: kernel.transform(equal),
         lambda: [model.score_samples(s) for s in equal]),
        ("20 x 10,000 steps, one call per sequence", lambda: [kernel.transform([s]) for s in equal],
         lambda: [model.score_samples(s) for s in equal]),
        ("200 ragged (100-2,000 steps), one call", lambda: kernel.transform(ragged),
         lambda: model.score_samples(stacked_ragged, lengths_ragged)),
    ]
    for name, ours, reference in cases:
        a, b = _best(ours, args.repeat), _best(reference, args.repeat)
        print(f"{name:44s} {a:17.3f} s {b:15.3f} s {b / a:5.2f}x")
    sides = {}
    for which in ("bnfisher", "hmmlearn"):
        output = subprocess.run([sys.executable, __file__, "--child", which, "--long-steps", str(args.long_steps)],
                                capture_output=True, text=True, check=True).stdout
        sides[which] = json.loads(output.strip().splitlines()[-1])
    ours, reference = sides["bnfisher"], sides["hmmlearn"]
    print(f"{f'1 x {args.long_steps:,} steps, time':44s} {ours['seconds']:17.3f} s {reference['seconds']:15.3f} s "
          f"{reference['seconds'] / ours['seconds']:5.2f}x")
    print(f"{f'1 x {args.long_steps:,} steps, peak memory above start':44s} {ours['extra_mb']:16.0f} MB "
          f"{reference['extra_mb']:14.0f} MB   (the sequence itself: {ours['input_mb']:.0f} MB)")


if __name__ == "__main__":
    main()
