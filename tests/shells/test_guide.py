"""The monitoring guide's commands run exactly as written: every shell block line by line, the Python block, and the
cron line (its command, as cron hands it to the shell), on sample data, with the webhook a server of the test's own.
"""

from __future__ import annotations

import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from bnfisher.datasets import load

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "guide" / "monitoring.md"

pytestmark = pytest.mark.skipif(shutil.which("bnfisher") is None and not (pathlib.Path(sys.executable).parent
                                                                          / "bnfisher").exists(),
                                reason="needs the installed bnfisher command")


def _blocks(language: str) -> list:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(), flags=re.S)


@pytest.fixture
def place(tmp_path):
    """A folder with the guide's files: a reference, a week whose finance column changed, a webhook server."""
    data = load("nursery").sample(frac=1.0, random_state=0).reset_index(drop=True)
    week = data.iloc[4000:5000].copy()
    week.loc[np.random.default_rng(0).random(len(week)) < 0.6, "finance"] = "inconv"
    data.iloc[:4000].to_csv(tmp_path / "reference.csv", index=False)
    week.to_csv(tmp_path / "this-week.csv", index=False)
    received: list = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = os.pathsep.join([str(pathlib.Path(sys.executable).parent), str(tmp_path / "bin"), os.environ["PATH"]])
    environment = dict(os.environ, ALARM_URL=f"http://127.0.0.1:{server.server_port}/hook", HOME=str(tmp_path),
                       PATH=path)
    environment.pop("BNFISHER_STORE", None)
    yield tmp_path, environment, received
    server.shutdown()


def _bash(command: str, folder, environment) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
def test_the_guides_commands_run_as_written(place):
    folder, environment, received = place
    (bash,) = _blocks("bash")[:1]
    lines = [line for line in bash.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert [line.split()[1] for line in lines] == ["profile", "monitor", "history"]
    codes = []
    for line in lines:
        done = _bash(line, folder, environment)
        assert "Traceback" not in done.stderr and " error: " not in done.stderr, (line, done.stderr)
        codes.append(done.returncode)
    assert codes == [0, 1, 0]  # the week changed: an alarm, stored and signalled
    assert received and received[0]["kind"] == "bnfisher-alarm"
    assert (folder / "dashboard.html").exists()
    (python,) = _blocks("python")
    done = subprocess.run([sys.executable, "-c", python], cwd=folder, env=environment, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "verdict" in done.stdout


@pytest.mark.slow
def test_the_guides_cron_line_runs_as_cron_runs_it(place):
    folder, environment, received = place
    (cron,) = [block for block in _blocks("text") if re.match(r"\s*[0-9*]", block)]
    command = " ".join(cron.split()[5:])  # the five time fields, then the command
    command = command.replace("\\%", "%")  # cron turns an escaped % into %
    data = folder / "data"
    (data / "incoming").mkdir(parents=True)
    (folder / "bin").mkdir()
    mail = folder / "bin" / "mail"
    mail.write_text(f"#!/bin/sh\ncat > '{folder / 'mailed.txt'}'\n")
    mail.chmod(0o755)
    assert _bash("bnfisher profile reference.csv -o data/reference.bnfp --quiet", folder, environment).returncode == 0
    week = _bash("date +%G-%V", folder, environment).stdout.strip()
    shutil.copy(folder / "this-week.csv", data / "incoming" / f"week-{week}.csv")
    done = _bash(command, folder, environment)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr  # mail's status: it was sent
    assert "exit status 1" in (folder / "mailed.txt").read_text()  # the alarm reached the team
    assert received and (data / "history.db").exists() and (data / "dashboard.html").exists()
