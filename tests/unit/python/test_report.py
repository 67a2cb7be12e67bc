"""report.html opened in headless Chromium (Debian's package, installed by scripts/host-setup.sh): the page is not
blank, draws without the network, and the series its plots hold are the run's own (progress.jsonl, summary.json).

Chromium is driven over its DevTools protocol on loopback (websocket-client); external hosts resolve to nothing.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import websocket

from multinode_training.__main__ import main
from multinode_training.report import REPORT_FILE, events_list, write_report

STARTED = 1795788717.0
EPOCHS = [
    {
        "kind": "epoch",
        "rank": 0,
        "node": "node1",
        "epoch": epoch,
        "loss": loss,
        "accuracy": accuracy,
        "samples_per_s": rate,
        "time": STARTED + 4.0 * epoch,
        "text": f"epoch {epoch}",
    }
    for epoch, loss, accuracy, rate in [
        (1, 1.79, 0.41, 917.6),
        (2, 0.74, 0.77, 611.9),
        (3, 0.35, 0.88, 487.8),
        (4, 0.23, 0.93, 1442.5),
    ]
]
SUMMARY = {
    "job_id": "20261127-141148-torchrun",
    "status": "succeeded",
    "launcher": "torchrun",
    "nodes": ["node1", "node2", "node3"],
    "world_size": 3,
    "test_accuracy": 0.96,
    "resumed_from": "",
    "attempt": 2,
    "outputs": ["nodes/node1/outputs/model.pt"],
    "started_at": STARTED,
    "failure_reasons": [],
    "phases": {"provision": 3.1, "launch": 5.8, "train": 46.0, "collect": 1.2},
    "restarts": [
        {
            "attempt": 1,
            "cause": "rank 2 on node3 killed by signal 9 (SIGKILL)",
            "kind": "signal",
            "detected_at": STARTED + 9.0,
            "resumed_at": STARTED + 20.0,
        }
    ],
    "stragglers": [{"text": "rank 2 on node3 is 111% slower than the median rank"}],
    "settings": {
        "runtime": "container",
        "hostfile_dialect": "torchrun",
        "backend": "gloo",
        "interfaces": {"node1": "eth0"},
        "tuning": {
            "node1": {
                "slots": 1,
                "omp_num_threads": 2,
                "source": {"omp_num_threads": "topology"},
                "env": {"KMP_AFFINITY": "granularity=fine,compact,1,0"},
            }
        },
        "topology": {"node1": {"sockets": 1, "numa_nodes": 1, "physical_cores": 2}},
    },
}
PLOTTED = """JSON.stringify(Object.fromEntries(['metrics', 'throughput', 'phases'].map(id => [id,
  document.getElementById(id)._fullData.map(trace => ({name: trace.name, x: Array.from(trace.x),
  y: Array.from(trace.y), base: trace.base ? Array.from(trace.base) : null}))])))"""
BANDS = """JSON.stringify({shapes: document.getElementById('throughput')._fullLayout.shapes.map(shape => [shape.x0, shape.x1]),
  annotations: document.getElementById('throughput')._fullLayout.annotations.map(note => note.text)})"""
DRAWN = "['metrics', 'throughput', 'phases'].every(id => document.getElementById(id)?._fullData?.length > 0)"


@pytest.fixture(name="run_dir")
def run_dir_fixture(tmp_path: Path) -> Path:
    run_dir = tmp_path / "runs" / SUMMARY["job_id"]
    run_dir.mkdir(parents=True)
    (run_dir / "summary.json").write_text(json.dumps(SUMMARY))
    lines = [{"kind": "started", "rank": 0, "node": "node1", "time": STARTED}, *EPOCHS, "not json"]
    (run_dir / "progress.jsonl").write_text("".join(f"{json.dumps(line)}\n" for line in lines))
    return run_dir


class DevTools:
    """One headless Chromium page, driven over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        chromium = shutil.which("chromium")
        if chromium is None:
            pytest.fail("chromium is not installed: make browser (scripts/host-setup.sh browser) installs Debian's package")
        # Ended in close().
        self.process = subprocess.Popen(  # pylint: disable=consider-using-with
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--window-size=1280,2400",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=10) as answer:
            page = next(target for target in json.load(answer) if target["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60)
        self.ids = itertools.count(1)
        self.requested: list[str] = []  # every URL the page asked for (Network.enable)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("method") == "Network.requestWillBeSent":
                self.requested.append(message["params"]["request"]["url"])
            if message.get("id") == number:
                assert "error" not in message, message
                return message["result"]

    def evaluate(self, expression: str) -> Any:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str, ready: str = "document.readyState === 'complete'") -> None:
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + 60
        while not self.evaluate(ready):
            assert time.monotonic() < deadline, f"{url} never got ready ({ready})"
            time.sleep(0.2)

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        self.socket.close()
        self.process.terminate()
        self.process.wait(timeout=30)


@pytest.fixture(name="browser")
def browser_fixture(tmp_path: Path) -> Iterator[DevTools]:
    browser = DevTools(tmp_path / "chromium-profile")
    yield browser
    browser.close()


def test_the_report_draws_the_runs_own_series_without_the_network(run_dir: Path, browser: DevTools) -> None:
    report = write_report(run_dir)
    assert report == run_dir / REPORT_FILE

    browser.open("about:blank")
    blank = browser.screenshot()
    browser.call("Network.enable")
    browser.open(report.as_uri(), ready=DRAWN)
    drawn = browser.screenshot()
    assert browser.requested and all(url.startswith(("file:", "data:")) for url in browser.requested), browser.requested
    assert len(drawn) > 5 * len(blank), "the report's screenshot is as empty as a blank page's"

    plotted = json.loads(browser.evaluate(PLOTTED))
    metrics = {trace["name"]: trace for trace in plotted["metrics"]}
    assert metrics["loss"]["x"] == [record["epoch"] for record in EPOCHS]
    assert metrics["loss"]["y"] == [record["loss"] for record in EPOCHS]
    assert metrics["accuracy"]["y"] == [record["accuracy"] for record in EPOCHS]
    [throughput] = plotted["throughput"]
    assert throughput["name"] == "rank 0 (node1)"
    assert throughput["x"] == [record["time"] - STARTED for record in EPOCHS]
    assert throughput["y"] == [record["samples_per_s"] for record in EPOCHS]
    phases = [(trace["name"], trace["base"][0], trace["x"][0]) for trace in plotted["phases"]]
    assert phases == [
        ("provision (3.1 s)", 0.0, 3.1),
        ("launch (5.8 s)", 3.1, 5.8),
        ("train (46.0 s)", 8.9, 46.0),
        ("collect (1.2 s)", 54.9, 1.2),
    ]
    # The restart is a band over the throughput plot, from its detection to the resume, named at its top.
    bands = json.loads(browser.evaluate(BANDS))
    assert bands == {
        "shapes": [[9.0, 20.0]],
        "annotations": ["restart 1: rank 2 on node3 killed by signal 9 (SIGKILL)"],
    }
    text = browser.evaluate("document.body.innerText")
    for expected in ("rank 2 on node3 killed by signal 9 (SIGKILL)", "111% slower", "KMP_AFFINITY", "topology"):
        assert expected in text


def test_the_report_command_writes_it_for_an_old_run(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"report: {run_dir / REPORT_FILE}"
    assert (run_dir / REPORT_FILE).stat().st_size > 1_000_000  # plotly.js is inside


def test_a_run_without_a_summary_has_no_report_yet(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / "summary.json").unlink()
    assert main(["report", str(run_dir)]) == 1
    assert "no summary yet" in capsys.readouterr().err
    assert not (run_dir / REPORT_FILE).exists()


def test_without_plotly_the_report_is_a_one_line_hint_not_an_import_error(run_dir: Path) -> None:
    code = (
        "import sys; sys.modules['plotly'] = None\n"
        "from multinode_training.report import ReportUnavailable, write_report\n"
        f"try:\n    write_report({str(run_dir)!r})\nexcept ReportUnavailable as error:\n    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.startswith("no report.html: plotly is not installed")
    assert "pip install 'multinode-training[report]'" in result.stdout
    assert not (run_dir / REPORT_FILE).exists()


def test_a_metric_named_like_markup_stays_inside_its_figures_script(run_dir: Path) -> None:
    # The ranks name their metrics: a name that closes a script element must not end the figure's script.
    progress = run_dir / "progress.jsonl"
    named = {**EPOCHS[0], "</script><script>alert(1)</script>": 1.0}
    progress.write_text(progress.read_text() + json.dumps(named) + "\n")
    page = write_report(run_dir).read_text()
    assert "</script><script>alert(1)" not in page
    assert "<\\/script><script>alert(1)<\\/script>" in page


def test_the_events_list_quotes_the_first_failure_s_error() -> None:
    summary = {"failure_reasons": ["rank 0 on node1 exited 1", "launcher exited 1"],
               "root_cause_error": "RuntimeError: <no accelerator>"}
    listed = events_list(summary)
    assert listed.index("failure: rank 0 on node1 exited 1") < listed.index("the first failure&#x27;s error: RuntimeError: &lt;no accelerator&gt;")
    assert "error" not in events_list({"failure_reasons": [], "root_cause_error": None})
