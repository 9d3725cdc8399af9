"""Reproduction of the paper's experiments (summarization, Sec. 7.1): runs, claims and report."""

from .run import run_experiment
from .summarization import CRITERIA, MODELS, ExperimentResult, run_summarization

__all__ = ["CRITERIA", "MODELS", "ExperimentResult", "run_experiment", "run_summarization"]
