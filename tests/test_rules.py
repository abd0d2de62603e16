"""A run that watches itself: ``aoff.rules`` evaluated where the pump folds, and where an
alert goes (``alerts.jsonl``, TensorBoard's text, the report, ``log.should_stop``, a
webhook, a command)."""

from __future__ import annotations

import http.server
import json
import math
import os
import pickle
import re
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import aoff
from aoff import rules
from aoff._core._records import StepRecord, scalars_of
from aoff._core._state import State
from aoff._core._watch import Watch
from aoff._pump import _actions
from aoff._pump._options import Options
from aoff.testing import wait_until


def _rec(step: int, values: dict[str, float], producer: str | None = None) -> StepRecord:
    tags = tuple(values)
    return StepRecord(
        step, step, 1000.0 + step, scalars_of(tags, tuple(values.values())), producer=producer
    )


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _watch(*chosen: rules.Rule, clock: _Clock | None = None) -> Watch:
    c = clock or _Clock()
    return Watch(chosen, clock=lambda: 5.0, monotonic=c)


def _fire(w: Watch, series: list[dict[str, float]], producer: str | None = None) -> list[Any]:
    return w.see([_rec(i, v, producer) for i, v in enumerate(series, 1)])


# -- each rule on a crafted series ----------------------------------------------------------------
def test_nonfinite_fires_once_naming_the_first_tag_and_step() -> None:
    w = _watch(rules.nonfinite(stop=True))
    series = [{"train/q": 1.0, "train/pi": 2.0}] * 9 + [{"train/q": 1.0, "train/pi": math.inf}]
    series += [{"train/q": math.nan, "train/pi": math.nan}] * 3
    got = _fire(w, series)
    assert [(a.rule, a.tag, a.step, a.stop) for a in got] == [("nonfinite", "train/pi", 10, True)]
    assert got[0].message == "train/pi is inf at step 10"


def test_bounds_collapse_and_globs_fire_once_per_tag() -> None:
    w = _watch(
        rules.above("train/*_loss", 100), rules.below("reward/mean", -10), rules.collapse("alpha")
    )
    series = [{"train/q_loss": 1.0, "train/pi_loss": 1.0, "reward/mean": 0.0, "alpha": 0.5}] * 5
    series += [{"train/q_loss": 500.0, "train/pi_loss": 1.0, "reward/mean": -11.0, "alpha": 0.5}]
    series += [{"train/q_loss": 900.0, "train/pi_loss": 101.0, "reward/mean": 0.0, "alpha": 1e-5}]
    got = [(a.rule, a.tag, a.step) for a in _fire(w, series)]
    assert got == [
        ("above(train/*_loss, 100)", "train/q_loss", 6),
        ("below(reward/mean, -10)", "reward/mean", 6),
        ("above(train/*_loss, 100)", "train/pi_loss", 7),
        ("collapse(alpha, 0.0001)", "alpha", 7),
    ]


def test_blowup_regression_and_slower_judge_against_their_window() -> None:
    w = _watch(
        rules.blowup("loss", factor=10, window=20),
        rules.regression("ret", drop=0.5, window=4),
        rules.slower(0.5, window=4),
    )
    # noise around 1 (a 5x jump is no blow-up), the return climbs to -100 then falls
    losses = [1.0, 0.8, 1.2, 5.0, 0.9, 1.1] * 4 + [30.0]
    # means of 4: -100 at best, then -127.5, -137.5, -150 (not under -150 yet), -165
    rets = [-400.0, -300, -200, -100, -100, -100, -100] + [-120.0] * 13
    rets += [-150.0, -160, -170, -180, -190]
    sps = [100.0] * 20 + [40.0] * 5
    series = [
        {"loss": lo, "ret": r, "perf/steps_per_sec": s}
        for lo, r, s in zip(losses, rets, sps, strict=True)
    ]
    got = {a.rule.split("(")[0]: a for a in _fire(w, series)}
    assert got["blowup"].step == 25 and got["blowup"].tag == "loss"
    assert "28.6x its running median 1.05" in got["blowup"].message
    assert got["regression"].step == 24 and got["regression"].value == pytest.approx(-165.0)
    assert got["slower"].step == 24 and got["slower"].value == pytest.approx(40.0)
    # one step less and none of them would have fired
    w2 = _watch(
        rules.blowup("loss", factor=10, window=20),
        rules.regression("ret", drop=0.5, window=4),
        rules.slower(0.5, window=4),
    )
    assert _fire(w2, series[:23]) == []
    assert len(_fire(w2, series[23:])) == 3  # the next slice goes on where it left off


def test_stalled_fires_for_the_loop_and_a_silent_producer_and_rearms() -> None:
    clock = _Clock()
    w = _watch(rules.stalled(seconds=10), clock=clock)
    assert w.tick() == []  # nothing logged yet: not stalled
    w.see([_rec(1, {"x": 1.0}), _rec(1, {"x": 1.0}, producer="col-0")])
    clock.t = 8.0
    w.see([_rec(2, {"x": 1.0})])
    clock.t = 11.0
    got = w.tick()
    assert [(a.tag, a.step) for a in got] == [("col-0", 1)]
    assert "producer col-0 sent no step for 11s" in got[0].message
    clock.t = 19.0
    assert [a.tag for a in w.tick()] == [""]  # the loop, 11 s after its step 2
    assert w.tick() == []  # said once
    w.see([_rec(3, {"x": 1.0})])
    clock.t = 30.0
    assert [(a.tag, a.step) for a in w.tick()] == [("", 3)]  # stalled anew


def test_rules_are_plain_values_checked_at_the_call() -> None:
    r = rules.blowup(["train/q1_loss", "train/q2_loss"], factor=5, window=50, stop=True)
    assert pickle.loads(pickle.dumps(r)) == r
    assert Options(rules=None).rules == rules.DEFAULT_RULES
    assert [x.kind for x in rules.DEFAULT_RULES] == ["nonfinite", "stalled"]
    assert Options(rules=()).rules == ()
    assert not Options().stop_rules() and Options(rules=(r,)).stop_rules()
    with pytest.raises(ValueError, match="drop must be between 0 and 1"):
        rules.regression("r", drop=1.5)
    with pytest.raises(ValueError, match="factor must be > 1"):
        rules.blowup("x", factor=0.5)
    with pytest.raises(TypeError, match="tag must be a name"):
        rules.above(3, 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rules must be a list"):
        Options(rules=rules.nonfinite())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a rule"):
        Options(rules=("nonfinite",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="webhook must be an http"):
        Options(webhook="hooks.example.com")
    with pytest.raises(TypeError, match="command must be a list"):
        Options(command="notify-send")  # type: ignore[arg-type]


# -- the run: a NaN stops the loop --------------------------------------------------------------
@pytest.mark.parametrize(("pump", "nan_at"), [("process", 500), ("thread", 500), ("process", 1)])
def test_a_nan_stops_a_1ms_loop_within_100_iterations_from_the_first_step(
    tmp_path: Path, pump: str, nan_at: int
) -> None:
    """No flush first: in process mode the agent is still starting (importing) for the
    first ~0.5-2 s, and the training process's shipper thread judges the stop rules
    meanwhile (``_faces/_early.py``); a NaN at the first step stops the loop long before
    the agent could. The face keeps one alert, the agent's (the time ``alerts.jsonl``
    has)."""
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        display="none",
        pump=pump,  # type: ignore[arg-type]
        handle_sigterm=False,
        rules=[rules.nonfinite(stop=True), rules.collapse("train/alpha")],
    )
    stopped = None
    for it in range(1, 2000):
        loss = math.nan if it >= nan_at else 1.0 / it
        log.log_step(it, {"q_loss": loss, "alpha": 0.2})
        if log.should_stop:
            stopped = it
            break
        time.sleep(0.001)
    report = log.finish()
    assert stopped is not None and nan_at <= stopped < nan_at + 100, stopped
    assert [(a.rule, a.tag, a.step) for a in log.alerts] == [("nonfinite", "train/q_loss", nan_at)]
    assert [a.message for a in report.alerts] == [a.message for a in log.alerts]  # NaN != NaN
    lines = (tmp_path / rules.ALERTS_NAME).read_text().splitlines()
    assert [json.loads(x) for x in lines] == [
        {
            "time": log.alerts[0].time,
            "rule": "nonfinite",
            "tag": "train/q_loss",
            "step": nan_at,
            "value": "nan",
            "message": f"train/q_loss is nan at step {nan_at}",
            "stop": True,
        }
    ]
    if nan_at != 500:
        return
    # TensorBoard's own reader sees the alert as a text summary at that step
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    texts = [
        (e.step, e.tensor_proto.string_val[0].decode())
        for e in acc.Tensors("aoff/alerts/text_summary")
    ]
    assert texts == [(500, "train/q_loss is nan at step 500")]


def test_the_early_watch_judges_only_stop_rules_and_gives_up_where_the_agent_must() -> None:
    """``_faces/_early.py``, while the agent starts: the stop rules on a private fold of
    the shipped events (the face's own tags), nothing past a device value or a flood."""
    from aoff._core._pending import PendingEvent
    from aoff._core._recorder import Recorder
    from aoff._faces._early import EARLY_EVENTS, EarlyWatch

    events: list[Any] = []
    rec: Recorder[None] = Recorder()
    rec._init_recorder(events.append, lambda: 1000.0)
    for i in range(1, 6):
        rec.log_step(i, {"q_loss": math.nan if i >= 4 else 1.0, "alpha": 0.0})
    said: list[rules.Alert] = []
    chosen = [rules.nonfinite(stop=True), rules.collapse("train/alpha"), rules.stalled(1)]
    early = EarlyWatch(chosen, said.append, seed_tags=True, clock=lambda: 5.0)
    assert early.judge(events[:2]) and early.judge(events[2:])
    assert [(a.rule, a.tag, a.step) for a in said] == [("nonfinite", "train/q_loss", 4)]
    pending = PendingEvent(events[0], [])
    assert not EarlyWatch(chosen, said.append, seed_tags=True, clock=time.time).judge([pending])
    flood = EarlyWatch(chosen, said.append, seed_tags=True, clock=time.time)
    assert not flood.judge(events * (EARLY_EVENTS // len(events) + 1))
    assert flood.folder.state.iteration == 0  # not folded at all


def test_without_rules_nothing_is_watched(tmp_path: Path) -> None:
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), display="none", pump="thread", rules=[]
    )
    log.log_step(1, {"q": math.nan})
    report = log.finish()
    assert report.alerts == () and log.alerts == () and not log.should_stop
    assert not (tmp_path / rules.ALERTS_NAME).exists()


# -- actions: a webhook and a command ----------------------------------------------------------
@pytest.fixture
def hook_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    got: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append(json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()
        server.server_close()


def test_an_alert_is_posted_to_the_webhook_and_given_to_the_command(
    tmp_path: Path, hook_server: tuple[str, list[dict[str, Any]]]
) -> None:
    url, got = hook_server
    out = tmp_path / "from_command.json"
    copy = f"import sys; open({str(out)!r}, 'wb').write(sys.stdin.buffer.read())"
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        display="none",
        pump="thread",
        rules=[rules.above("train/loss", 10)],
        webhook=url,
        command=[sys.executable, "-c", copy],
    )
    for it in range(1, 20):
        log.log_step(it, {"loss": float(it)})
    log.finish()
    want = {"rule": "above(train/loss, 10)", "tag": "train/loss", "step": 11, "value": 11.0}
    assert len(got) == 1 and want.items() <= got[0].items()
    assert json.loads(out.read_bytes()) == got[0]


def test_a_dead_webhook_server_never_holds_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server that takes the connection and never answers: the loop hears the alert at
    once, finish() returns, and the failure is said once (the POST had its retries)."""
    monkeypatch.setattr(_actions, "WEBHOOK_TIMEOUT", 0.3)
    monkeypatch.setattr(_actions, "RETRY_PAUSE", 0.05)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(16)  # accepted by the kernel, never read nor answered
    port = dead.getsockname()[1]
    try:
        log = aoff.OffPolicyLogger(
            log_dir=tmp_path,
            backends=("jsonl",),
            display="none",
            pump="thread",
            rules=[rules.nonfinite(stop=True), rules.above("train/loss", 5)],
            webhook=f"http://127.0.0.1:{port}/T01/SECRET?token=abc",
        )
        heard_at = None
        for it in range(1, 400):
            log.log_step(it, {"loss": math.nan if it == 300 else float(it)})
            if log.should_stop:
                heard_at = it
                break
            time.sleep(0.001)
        report = log.finish()
    finally:
        dead.close()
    assert heard_at is not None and heard_at < 400
    assert [a.rule for a in report.alerts] == ["above(train/loss, 5)", "nonfinite"]
    err = capsys.readouterr().err
    # its tries (3, fewer once finish() waits: no pauses then)
    said = re.search(rf"webhook POST to http://127\.0\.0\.1:{port}/… failed (once|\d times)", err)
    assert err.count("an alert's webhook POST to") == 1 and said, err
    said = said.group(0)
    assert "SECRET" not in err and "abc" not in err  # the hook's secret
    assert f"aoff: 2 alerts not delivered (webhook/command): 2 failed (the first: {said}" in err
    assert list(report.alerts_undelivered.values()) == [2]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T0/B0/XyZ", "https://hooks.slack.com/…"),
        ("https://h.example:8443/?key=s3cret", "https://h.example:8443/…"),
        ("https://u:p@h.example/", "https://h.example/…"),
        ("http://h.example", "http://h.example/"),
    ],
)
def test_a_webhook_url_is_printed_without_its_path_query_or_user(url: str, shown: str) -> None:
    assert _actions.redact(url) == shown
    with pytest.raises(ValueError) as bad:
        Options(webhook=url.replace("http", "htp", 1))
    assert "XyZ" not in str(bad.value) and "s3cret" not in str(bad.value)
    assert "XyZ" not in repr(Options(webhook=url))


def _alert(n: int) -> rules.Alert:
    return rules.Alert(time.time(), "nonfinite", f"t{n}", n, math.nan, f"t{n} is nan")


def _silent_server() -> socket.socket:
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead.listen(16)  # accepted by the kernel, never read nor answered
    return dead


def test_a_refusing_webhook_server_fails_fast_and_every_alert_is_counted_failed() -> None:
    """Nothing listens on the port (every connection refused): the first alert has its
    retries, the next ones one try each, so 22 alerts are all counted as failed long
    before the end's bound, none left "still waiting" (before: 1.5 s of pauses each)."""
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there now: refused
    said: list[str] = []
    actions = _actions.Actions(f"http://127.0.0.1:{port}/T0/SECRET", None, said.append)
    for n in range(22):
        actions.submit(_alert(n))
    actions.close(30.0)  # 22 x 1.5 s of retry pauses would be 33 s
    assert actions.sent == 0 and actions.undelivered == 22
    [(why, n)] = actions.why.items()
    assert n == 22 and why.startswith("failed (the first: webhook POST to"), actions.why
    assert len(said) == 1 and "SECRET" not in said[0]


def test_the_ends_wait_for_alerts_is_bounded_and_counts_those_left() -> None:
    """A server that never answers within the POST's timeout: close() returns after its
    bound and counts every alert not delivered, the one on the wire included."""
    dead = _silent_server()
    said: list[str] = []
    try:
        actions = _actions.Actions(f"http://127.0.0.1:{dead.getsockname()[1]}/x", None, said.append)
        for n in range(3):
            actions.submit(_alert(n))
        t0 = time.monotonic()
        actions.close(0.3)
        assert time.monotonic() - t0 < _actions.WEBHOOK_TIMEOUT  # not the POST's own timeout
    finally:
        dead.close()
    assert actions.undelivered == 3 and actions.sent == 0
    assert actions.why == {"still waiting when finish() stopped after 0.3s": 3}
    actions.submit(_alert(9))  # after the end: counted, not queued
    assert actions.why["came after the run's end"] == 1


def _hanging_command(tmp_path: Path) -> tuple[list[str], Path]:
    """A command whose child would outlive it: the child's pid is written to a file."""
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    return ["sh", "-c", script], pid_file


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0): gone once reaped by init, or its state says so
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("where", ["its timeout", "the end of the run"])
def test_a_command_past_its_time_is_killed_with_its_process_group(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if where == "its timeout":
        monkeypatch.setattr(_actions, "COMMAND_TIMEOUT", 0.5)
    command, pid_file = _hanging_command(tmp_path)
    said: list[str] = []
    actions = _actions.Actions(None, command, said.append)
    actions.submit(_alert(1))
    child = int(wait_until(lambda: pid_file.exists() and pid_file.read_text().strip()))
    if where == "its timeout":
        wait_until(lambda: actions.failures == 1, what="the command killed at its timeout")
        assert "ran past 0.5s; killed" in said[0]
    actions.close(0.2)
    wait_until(lambda: _gone(child), what="the command's own child killed with it")
    assert actions.undelivered == 1


# -- a normal SAC run: no false alert -----------------------------------------------------------
@pytest.mark.slow  # real SAC training in a subprocess, a few seconds
def test_the_examples_pendulum_sac_raises_no_alert_and_stops_on_nan(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gymnasium")
    import subprocess

    example = Path(__file__).resolve().parent.parent / "examples" / "sac_pendulum_sync.py"
    common = ["--learning-starts", "100", "--hidden", "32", "--batch-size", "32", "--no-display"]
    quiet = subprocess.run(
        [sys.executable, str(example), "--total-steps", "300", "--watch", *common,
         "--logdir", str(tmp_path / "quiet")],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert "alert" not in quiet.stderr and not (tmp_path / "quiet" / rules.ALERTS_NAME).exists()
    nan = subprocess.run(
        [sys.executable, str(example), "--total-steps", "200", "--stop-on-nan", "--nan-at", "10",
         *common, "--logdir", str(tmp_path / "nan")],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert nan.returncode == 0, nan.stderr[-3000:]
    assert "stopped at update" in nan.stdout
    assert (tmp_path / "nan" / "sac_pendulum_stopped.pt").is_file()
    (alert,) = [json.loads(x) for x in (tmp_path / "nan" / rules.ALERTS_NAME).open()]
    assert alert["rule"] == "nonfinite" and alert["step"] >= 110 and alert["value"] == "nan"


# -- the logger's own cost ---------------------------------------------------------------------
def test_the_cost_summary_takes_median_p99_and_the_loops_share() -> None:
    from aoff._core._hotcost import COST_EVERY, summarize

    samples = [1000] * 98 + [5000, 90000]  # ns: 1 us calls, a 90 us one
    got = summarize(samples, span_ns=COST_EVERY * 1_000_000_000, total_ns=sum(samples))
    assert got["aoff/hot_path_p50_us"] == 1.0 and got["aoff/hot_path_p99_us"] == 5.0
    assert got["aoff/hot_path_share_percent"] == pytest.approx(100 * 193_000 / 1e9)


def test_a_run_writes_its_own_cost_as_aoff_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aoff._core import _hotcost as hot
    from aoff._pump import _cost as keeper

    monkeypatch.setattr(keeper, "COST_INTERVAL", 0.2)
    monkeypatch.setattr(hot, "COST_SPAN_NS", 100_000_000)
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path, backends=("jsonl",), display="none", pump="thread", rules=[]
    )
    for it in range(1, 3001):
        log.log_step(it, {"x": 1.0})
        if it % 100 == 0:
            time.sleep(0.02)
    log.finish()
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").open()]
    costs = [r for r in rows if "aoff/hot_path_p50_us" in r]
    assert costs, "no aoff/hot_path tags were written"
    last = costs[-1]
    assert 0 < last["aoff/hot_path_p50_us"] <= last["aoff/hot_path_p99_us"]
    assert 0 < last["aoff/hot_path_share_percent"] < 100
    assert last["aoff/agent_lag_s"] >= 0
    assert "aoff/agent_cpu_percent" not in last  # thread mode: the loop's process


def test_the_dashboard_draws_the_banner_above_and_the_cost_below_the_panel() -> None:
    from rich.console import Console

    from aoff._display._dashboard import Dashboard
    from aoff._display._summary import summary_panel

    state = State(steps_logged=3, iteration=3, started=True, start_time=0.0)
    state.alerts = (
        rules.Alert(1.0, "nonfinite", "train/q", 3, math.nan, "train/q is nan at step 3", True),
    )
    state.cost = {
        "aoff/hot_path_share_percent": 0.2,
        "aoff/hot_path_p99_us": 6.0,
        "aoff/agent_lag_s": 0.05,
        "aoff/agent_cpu_percent": 4.0,
    }
    console = Console(record=True, width=100, height=40, force_terminal=True)
    console.print(Dashboard(console)._panel(state, 10.0))
    lines = console.export_text().splitlines()
    assert "1 alert - the loop was asked to stop" in lines[0]
    assert "train/q is nan at step 3 [nonfinite]" in lines[1]
    cost = "logging cost the loop 0.2 %, p99 call 6 \u00b5s; agent lag 0.05 s, CPU 4 %"
    assert cost in lines[-1]
    console.print(summary_panel(state, 10.0))
    text = console.export_text()
    assert "Alerts: 1" in text and "train/q is nan at step 3" in text and cost in text


@pytest.mark.anyio
async def test_the_async_face_hears_a_stop_rule_too(tmp_path: Path) -> None:
    """``AsyncOffPolicyLogger`` in process mode: its shipper task reads the agent's alert
    into ``should_stop`` while the loop runs."""
    import anyio

    async with aoff.AsyncOffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        log_backend="none",
        display="none",
        handle_sigterm=False,
        rules=[rules.nonfinite(stop=True)],
    ) as log:
        await log.aflush()
        stopped = None
        for it in range(1, 2000):
            await log.log_step(it, {"q_loss": math.nan if it >= 100 else 1.0})
            if log.should_stop:
                stopped = it
                break
            await anyio.sleep(0.001)
    assert stopped is not None and 100 <= stopped < 400, stopped
    assert [(a.tag, a.step) for a in log.alerts] == [("train/q_loss", 100)]


# -- rules are isolated: no rule's arithmetic or error silences another ------------------------
def _every_rule(tag: str = "x") -> list[rules.Rule]:
    return [
        rules.above(tag, 1e300),
        rules.below(tag, -1e300),
        rules.collapse(tag, 1e-300),
        rules.blowup(tag, factor=2.0, window=2),
        rules.regression(tag, drop=0.5, window=2),
        rules.slower(0.5, tag=tag, window=3),
        rules.nonfinite(stop=True),
    ]


_ADVERSARIAL = st.one_of(
    st.sampled_from([1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308]),
    st.sampled_from([5e-324, -5e-324, 2.2250738585072014e-308, 0.0, -0.0]),
    st.sampled_from([math.inf, -math.inf]),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(_ADVERSARIAL, max_size=30),
    steps=st.lists(st.integers(-(2**70), 2**70), min_size=31, max_size=31),
)
def test_adversarial_values_never_cost_the_nan_alert_nor_the_stop(
    values: list[float], steps: list[int]
) -> None:
    """Every rule on ±1e308, ±inf, subnormals and huge steps, beside
    ``nonfinite(stop=True)``: a NaN after them always fires a stop alert (or an inf
    before it did), and no rule ever raised."""
    w = Watch(_every_rule(), clock=lambda: 5.0, monotonic=lambda: 0.0)
    series = [*values, math.nan]
    recs = [
        StepRecord(s, 0, 1.0, scalars_of(("x",), (v,))) for s, v in zip(steps, series, strict=False)
    ]
    got = w.see(recs[:-1]) + w.see(recs[-1:])
    stops = [a for a in got if a.rule == "nonfinite"]
    assert len(stops) == 1 and stops[0].stop
    first_bad = next(i for i, v in enumerate(series) if not math.isfinite(v))
    assert stops[0].step == steps[first_bad]
    assert w.errors == {}


def test_one_rules_error_is_counted_and_said_and_the_others_still_fire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from aoff._core import _watch

    def broken(_values: object) -> float:
        raise RuntimeError("median broke")

    monkeypatch.setattr(_watch.statistics, "median", broken)
    w = _watch_of(rules.blowup("x", window=2), rules.above("x", 5.0), rules.nonfinite(stop=True))
    got = _fire(w, [{"x": 1.0}, {"x": 2.0}, {"x": 9.0}, {"x": math.nan}])
    assert [(a.rule, a.step) for a in got] == [("above(x, 5)", 3), ("nonfinite", 4)]
    assert w.errors == {"blowup(x, 10, window=2)": 3}
    (line,) = w.take_lines()
    assert "rule blowup(x, 10, window=2) failed (RuntimeError: median broke)" in line
    assert w.take_lines() == []


def _watch_of(*chosen: rules.Rule) -> Watch:
    return Watch(chosen, clock=lambda: 5.0, monotonic=lambda: 0.0)


def test_a_regression_on_huge_means_never_raises_and_reports_as_a_number() -> None:
    """A window of ±1e308 used to overflow ``math.fsum``; a best mean of 0 divided by 0."""
    w = _watch_of(rules.regression("x", drop=0.5, window=2), rules.nonfinite(stop=True))
    got = _fire(w, [{"x": 1.7e308}, {"x": 1.7e308}, {"x": -1.7e308}, {"x": -1.7e308}])
    assert [a.rule for a in got] == ["regression(x, 0.5, window=2)"]
    assert got[0].step == 3 and got[0].value == 0.0  # the mean of 1.7e308 and -1.7e308
    assert "100% under its best 1.7e+308" in got[0].message
    w = _watch_of(rules.regression("x", drop=0.5, window=2))
    got = _fire(w, [{"x": 0.0}, {"x": 0.0}, {"x": -1.0}, {"x": -1.0}])
    assert [a.message for a in got] == [
        "x's mean over 2 values fell to -0.5, under its best 0 at step 3"
    ]
    assert w.errors == {}


def test_the_agent_survives_huge_windows_and_a_nan_stops_the_loop(tmp_path: Path) -> None:
    """The probe in process mode: trend rules on ±1e308 then a NaN; the stop comes, the
    agent ends the run itself (a complete report), no rule failed."""
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        display="none",
        handle_sigterm=False,
        rules=_every_rule("train/*"),
    )
    for it, v in enumerate([1e308, 1.7e308, -1.7e308, -1e308, 1e308, math.nan], 1):
        log.log_step(it, {"q_loss": v})
    wait_until(lambda: log.should_stop, what="the NaN's stop")
    report = log.finish()
    assert [(a.rule, a.step) for a in report.alerts if a.stop] == [("nonfinite", 6)]
    assert report.rule_errors == {} and not report.partial and report.complete


def test_a_failing_rule_is_counted_in_the_report_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from aoff._core import _watch

    def broken(_values: object) -> float:
        raise RuntimeError("median broke")

    monkeypatch.setattr(_watch.statistics, "median", broken)  # the pump runs in this process
    log = aoff.OffPolicyLogger(
        log_dir=tmp_path,
        backends=("jsonl",),
        display="none",
        pump="thread",
        handle_sigterm=False,
        rules=[rules.blowup("train/*", window=2), rules.nonfinite(stop=True)],
    )
    for it, v in enumerate([1.0, 2.0, 3.0, math.nan], 1):
        log.log_step(it, {"q_loss": v})
    wait_until(lambda: log.should_stop, what="the NaN's stop")
    report = log.finish()
    assert report.rule_errors == {"blowup(train/*, 10, window=2)": 3}
    assert [(a.rule, a.step) for a in report.alerts] == [("nonfinite", 4)]
    err = capfd.readouterr().err
    assert err.count("rule blowup(train/*, 10, window=2) failed (RuntimeError") == 1
    assert "rules that failed on some values" in err and "Traceback" not in err


@settings(max_examples=150, deadline=None)
@given(
    flat=st.lists(
        st.one_of(_ADVERSARIAL, st.sampled_from([1e308, -0.0, math.nan, -math.nan])), max_size=60
    ),
    width=st.integers(1, 4),
    picked=st.booleans(),
)
def test_a_tables_rows_are_quiet_exactly_when_every_watched_value_is_finite(
    flat: list[float], width: int, picked: bool
) -> None:
    """``nonfinite`` on a run fold's rows (``Watch._quiet``: a finite sum, else the values
    themselves): finite values whose sum overflows (±1e308) are quiet, one NaN or
    infinity (+inf and -inf together: a NaN sum) is not, on every tag or on some
    (``picked``: a NaN in a tag it does not watch stays quiet), and the rows' alerts are
    those of the same records one by one."""
    import numpy as np

    from aoff._core._columns import ScalarColumns, row_records

    n = max(1, len(flat) // width)
    values = np.array((flat + [1.0] * (n * width))[: n * width], np.float64).reshape(n, width)
    tags = tuple(f"t{j}" for j in range(width))
    watched = ("t0",) if picked else ("*",)
    table = ScalarColumns(tags, np.arange(n, dtype=np.int64), np.ones(n), values)
    cols = values[:, :1] if picked else values
    w = Watch((rules.nonfinite(watched),), clock=lambda: 5.0, monotonic=lambda: 0.0)
    assert w._quiet(table, 0, n) == bool(np.isfinite(cols).all())
    rows = row_records(table, range(n))
    one = Watch((rules.nonfinite(watched),), clock=lambda: 5.0, monotonic=lambda: 0.0)
    alone = [a for r in rows for a in one.see([StepRecord(r.step, r.iteration, r.wall_time,
                                                          r.scalars)])]  # fmt: skip
    assert repr(w.see(rows)) == repr(alone)
