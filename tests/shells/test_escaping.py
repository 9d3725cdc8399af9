"""Every HTML output escapes every user string: file, sample, column and label names, window labels -- in text,
attributes and SVG.  Each page is opened in headless Chromium with a script payload in every field; the payload
would mark the page's body, and no page may carry the mark."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from bnfisher.cli import main
from bnfisher.datasets import load

#: Each payload sets ``data-pwned`` on the body when it runs; as text it cannot (no slash: it is a file name too).
PAYLOADS = ["<img src=x onerror=document.body.dataset.pwned=1>", "\"><svg onload=document.body.dataset.pwned=2>",
            "'><img src=x onerror=document.body.dataset.pwned=3>"]
#: Where a payload can break out of: a script element, a comment of an SVG, a title.
TEXT_PAYLOADS = ["<script>document.body.dataset.pwned=4</script>",
                 "--><img src=x onerror=document.body.dataset.pwned=5>",
                 "</title><img src=x onerror=document.body.dataset.pwned=6>"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Chromium (.ci/run installs it)")]


def _hostile_tables(tmp_path):
    """A reference and a window whose file names, column names and labels carry payloads; the window changed."""
    data = load("nursery").sample(n=3000, random_state=0).reset_index(drop=True)
    names = dict(zip(data.columns[:3], PAYLOADS))
    data = data.rename(columns=names)
    labels = PAYLOADS + TEXT_PAYLOADS
    column = data.columns[3]
    data[column] = data[column].map({v: labels[k % len(labels)] for k, v in enumerate(data[column].unique())})
    changed = data.iloc[2000:].copy()
    changed[column] = np.where(np.random.default_rng(0).random(len(changed)) < 0.7, labels[0], changed[column])
    reference, window = tmp_path / f"{PAYLOADS[0]}.csv", tmp_path / f"{PAYLOADS[2]}.csv"
    data.iloc[:2000].to_csv(reference, index=False)
    changed.to_csv(window, index=False)
    return str(reference), str(window)


def _dom(page, tmp_path) -> str:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=2000"]
    return subprocess.run(["chromium", *flags, "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True,
                          timeout=120).stdout


def test_no_page_runs_a_script_hidden_in_a_name(tmp_path, capsys):
    reference, window = _hostile_tables(tmp_path)
    pages = {name: tmp_path / f"{name}.html" for name in ("compare", "drift", "summarize", "dashboard", "history")}
    store = str(tmp_path / "h.db")
    commands = [["compare", reference, window, "--report", str(pages["compare"]), "--permutations", "199"],
                ["drift", reference, window, "--report", str(pages["drift"]), "--permutations", "199"],
                ["summarize", reference, "-k", "20", "--n-init", "5", "--n-random", "20", "--report",
                 str(pages["summarize"])],
                ["monitor", reference, window, "--store", store, "--dashboard", str(pages["dashboard"]), "--horizon",
                 "1"],
                ["history", "--store", store, "--dashboard", str(pages["history"])]]
    for argv in commands:
        assert main(argv + ["--quiet"]) in (0, 1), capsys.readouterr().err
    capsys.readouterr()
    for name, page in pages.items():
        text = page.read_text()
        assert "dataset.pwned" in text.replace("&#x27;", "'"), name  # the payloads are on the page, as text
        dom = _dom(page, tmp_path)
        assert "<body" in dom, (name, dom[:200])
        assert "data-pwned" not in dom, name


def test_the_dashboards_svg_timeline_keeps_window_labels_as_text(tmp_path):
    """Window labels drawn by matplotlib as tick labels (no dates: labels on the axis) cannot open the SVG."""
    from bnfisher.comparison.spending import WindowLevels
    from bnfisher.viz.dashboard import dashboard_html

    history = pd.DataFrame({"label": PAYLOADS + TEXT_PAYLOADS, "start": None, "end": None, "rows": 10,
                            "p_value": [0.5, 0.2, 0.0001, 0.3, 0.9, 0.04], "threshold": 0.001,
                            "alarm": [False, False, True, False, False, False], "mmd2_u": 0.0,
                            "mechanism": PAYLOADS[0], "cell": TEXT_PAYLOADS[0], "verdict": TEXT_PAYLOADS[1],
                            "permutations": 999, "started": TEXT_PAYLOADS[2]})
    page = tmp_path / "dashboard.html"
    page.write_text(dashboard_html(history, levels=WindowLevels(0.05, 52), store=PAYLOADS[1]))
    assert "data-pwned" not in _dom(page, tmp_path)
