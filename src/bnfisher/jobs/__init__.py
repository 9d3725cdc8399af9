"""The jobs: one call each, returning a result object; the command line parses arguments and calls these.

:func:`compare`, :func:`drift` and :func:`summarize` (with :func:`compare_distributed` and
:func:`summarize_distributed` for data that stays where it lies) resolve their inputs once
(:func:`~bnfisher.jobs.inputs.prepare`), run the core, and return a result that prints (``str``),
renders (``to_html``), serialises (``to_json``) and displays in notebooks, with nothing computed
twice.  :func:`learn_network`, :func:`profile_inputs` and :func:`mmd_between` serve ``learn``,
``profile`` and ``mmd``; :data:`LEARN_OPTIONS` is the one table of every structure's options and
defaults.  :func:`monitor` keeps the windows it tests in a store (:mod:`bnfisher.store`) and
:func:`history` reads it back.
"""

from .compare import compare
from .compare_distributed import compare_distributed
from .compare_result import ComparedSamples, ComparisonResult, Witness
from .drift import DriftResult, drift
from .learn import LEARN_OPTIONS, LearnResult, learn_network
from .monitor import HistoryResult, MonitorResult, acknowledge, history, monitor
from .profile import MMDResult, mmd_between, profile_inputs
from .summarize import SummaryResult, summarize, summarize_distributed

__all__ = ["LEARN_OPTIONS", "ComparedSamples", "ComparisonResult", "DriftResult", "HistoryResult", "LearnResult",
           "MMDResult", "MonitorResult", "SummaryResult", "Witness", "acknowledge", "compare", "compare_distributed",
           "drift", "history", "learn_network", "mmd_between", "monitor", "profile_inputs", "summarize",
           "summarize_distributed"]
