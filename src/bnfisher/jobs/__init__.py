"""The jobs: :func:`compare`, :func:`drift` and :func:`summarize`, each one call returning a result object.

A job resolves its inputs once (:func:`~bnfisher.jobs.inputs.prepare`), runs the core,
and returns a result that prints (``str``), renders (``to_html``), serialises
(``to_json``) and displays in notebooks, with nothing computed twice.  The command
line parses arguments and calls these.
"""

from .compare import ComparisonResult, compare
from .drift import DriftResult, drift
from .summarize import SummaryResult, summarize

__all__ = ["ComparisonResult", "DriftResult", "SummaryResult", "compare", "drift", "summarize"]
