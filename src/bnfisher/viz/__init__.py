"""Pictures and reports: matplotlib figures and self-contained HTML reports (shells over the result objects)."""

from bnfisher.viz.comparison import plot_comparison, plot_mechanisms
from bnfisher.viz.plotting import plot_family_shares, plot_network, plot_summary, plot_witness
from bnfisher.viz.report import comparison_figures, summary_figures, write_report

__all__ = [
    "plot_summary",
    "plot_comparison",
    "plot_network",
    "plot_family_shares",
    "plot_mechanisms",
    "plot_witness",
    "comparison_figures",
    "summary_figures",
    "write_report",
]
