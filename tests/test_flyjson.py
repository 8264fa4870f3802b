"""Fly Machines API JSON, JSON Lines recordings, and replaying them to checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from platform_testbed.checks import (
    BUILTIN_CHECKS,
    MACHINE_STATES,
    Event,
    Look,
    MachineSnapshot,
    TimestampCheck,
    Verdict,
    Wait,
    make_check,
)
from platform_testbed.checks.drive import CheckFailed
from platform_testbed.checks.flyjson import (
    TOLERANCE_MS,
    Recording,
    RecordingError,
    dump_recording,
    event_to_api,
    format_rfc3339_ms,
    image_name,
    image_ref,
    look_to_json,
    machine_from_api,
    machine_to_api,
    parse_line,
    parse_rfc3339_ms,
    read_recording,
    read_recordings,
    replay,
)
from platform_testbed.sim.kit.testing import PUBLISH_MS, App, World, drive_world, incident_looks, world

names = st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)
image_refs = st.builds(
    lambda registry, path, tag, digest: (
        (f"{registry}/" if registry else "")
        + "/".join(path)
        + (f":{tag}" if tag else "")
        + (f"@sha256:{digest}" if digest else "")
    ),
    st.sampled_from(["", "registry.fly.io", "localhost:5000", "docker.io"]),
    st.lists(names, min_size=1, max_size=3),
    st.none() | st.from_regex(r"[a-z0-9][a-z0-9._-]{0,9}", fullmatch=True),
    st.none() | st.from_regex(r"[0-9a-f]{8}", fullmatch=True),
)
plain_events = st.builds(
    Event,
    type=st.sampled_from(["launch", "start", "update", "restart", "destroy"]),
    status=names,
    timestamp=st.integers(0, 2**53),
    source=st.sampled_from(["flyd", "user"]),
    # Exit fields stay at their defaults on other events (builds would draw them all).
    exit_code=st.none(),
    oom_killed=st.just(False),
    requested_stop=st.just(False),
    restarting=st.just(False),
    restart_count=st.just(0),
)
exit_events = st.builds(
    Event,
    type=st.just("exit"),
    status=names,
    timestamp=st.integers(0, 2**53),
    source=st.sampled_from(["flyd", "user"]),
    exit_code=st.integers(-1, 255),
    oom_killed=st.booleans(),
    requested_stop=st.booleans(),
    restarting=st.booleans(),
    restart_count=st.integers(0, 1_000),
)
events = plain_events | exit_events
machines = st.builds(
    MachineSnapshot,
    id=names,
    state=st.sampled_from(MACHINE_STATES),
    image=st.just("") | image_refs,
    events=st.lists(events, max_size=6).map(tuple),
    at_ms=st.integers(0, 2**53),
    restart_counter=st.none() | st.integers(0, 1_000),
)
looks = st.builds(
    Look, at_ms=st.integers(0, 2**53), machines=st.lists(machines, max_size=3).map(tuple)
)


# --- round trips ---------------------------------------------------------------------


@given(event=events)
def test_an_event_round_trips_through_api_json(event: Event) -> None:
    """An event written as API JSON reads back equal, exit details under request.exit_event."""
    obj = json.loads(json.dumps(event_to_api(event)))
    machine = machine_from_api({"id": "m", "state": "started", "events": [obj]}, 0)
    assert machine.events == (event,)
    if event.type == "exit":
        assert obj["request"]["exit_event"]["exit_code"] == event.exit_code
        assert obj["request"]["restart_count"] == event.restart_count


@given(machine=machines, look_at_ms=st.integers(0, 2**53))
def test_a_machine_round_trips_through_api_json(machine: MachineSnapshot, look_at_ms: int) -> None:
    """A snapshot written as a machine object reads back equal, read time and counter included."""
    obj = json.loads(json.dumps(machine_to_api(machine, look_at_ms)))
    assert machine_from_api(obj, look_at_ms) == machine
    assert ("at_ms" in obj) == (machine.at_ms != look_at_ms)
    assert ("restart_counter" in obj) == (machine.restart_counter is not None)


@given(look=looks, publish_started_ms=st.integers(0, 2**53), run=st.none() | names)
def test_a_look_round_trips_through_one_recording_line(
    look: Look, publish_started_ms: int, run: str | None
) -> None:
    """A look written as one line parses back to the same look, publish time and run."""
    text = look_to_json(look, publish_started_ms, run)
    assert "\n" not in text
    parsed = parse_line(text, 1)
    assert parsed.look == look
    assert parsed.publish_started_ms == publish_started_ms
    assert parsed.run == run


@given(ref=image_refs)
def test_an_image_reference_round_trips_through_image_ref(ref: str) -> None:
    """Splitting an image reference into image_ref and joining it back gives the reference."""
    assert image_name(image_ref(ref)) == ref


def test_image_ref_splits_registry_repository_tag_like_the_api() -> None:
    """The simulator's image and the docs' image split into the API's image_ref fields."""
    assert image_ref("registry.fly.io/app:release") == {
        "registry": "registry.fly.io",
        "repository": "app",
        "tag": "release",
    }
    assert image_ref("flyio/fastify-functions:latest") == {
        "repository": "flyio/fastify-functions",
        "tag": "latest",
    }
    assert image_ref("localhost:5000/app") == {"registry": "localhost:5000", "repository": "app"}


@given(
    w=st.lists(
        st.builds(App, crash_after_ms=st.none() | st.integers(200, 9_000)), min_size=1, max_size=2
    ).map(lambda apps: world(*apps, horizon_s=120))
)
def test_a_recording_round_trips_through_json_lines(w: World) -> None:
    """The looks of a run written as JSON Lines read back as the same recording."""
    run = drive_world(TimestampCheck(), w)
    recording = Recording(PUBLISH_MS, run.looks, "timestamp")
    text = dump_recording(recording)
    assert text.count("\n") == len(run.looks)
    assert read_recording(text.splitlines()) == recording


# --- the public API documentation's shape --------------------------------------------

DATA = Path(__file__).resolve().parent / "data" / "fly"

#: Fly's own "Get a Machine" example response (superfly/docs ``reference/machines/_get.erb``,
#: see tests/data/fly/SOURCES.md), read from the committed file, not written by hand.
DOCS_MACHINE: dict[str, Any] = json.loads((DATA / "docs-get-exit-127.json").read_text())
DOCS_PUBLISH_MS = 1653047897200  # its update/replacing event is the publish


def docs_recording() -> list[str]:
    """Two looks: just after the update (machine starting), then stopped after the exit 127."""
    before_exit = dict(DOCS_MACHINE, state="starting", events=DOCS_MACHINE["events"][1:])
    return [
        json.dumps(
            {
                "at_ms": DOCS_PUBLISH_MS + 100,
                "publish_started_ms": DOCS_PUBLISH_MS,
                "machines": [before_exit],
                "note": "unknown fields are ignored",
            }
        ),
        json.dumps(
            {
                "at_ms": DOCS_PUBLISH_MS + 3_000,
                "publish_started_ms": DOCS_PUBLISH_MS,
                "machines": [DOCS_MACHINE],
            }
        ),
    ]


def test_the_docs_machine_reads_as_stopped_after_exit_127() -> None:
    """The documentation's machine parses: stopped, exit 127 newest, four events, given up."""
    recording = read_recording(docs_recording())
    machine = recording.looks[-1].machines[0]
    assert machine.state == "stopped"
    assert machine.id == "d5683210c7968e"
    assert machine.image == (
        "registry-1.docker.io/flyio/fastify-functions:latest@sha256:"
        "e15c11a07e1abbc50e252ac392a908140b199190ab08963b3b5dffc2e813d1e8"
    )
    assert [e.type for e in machine.events] == ["exit", "update", "start", "launch"]
    newest = machine.events[0]
    assert newest.exit_code == 127
    assert newest.is_crash
    assert not newest.restarting
    assert machine.gave_up
    assert machine.restart_counter is None


def test_replaying_the_docs_recording_fails_the_publish_as_given_up() -> None:
    """The timestamp check, fed the docs recording, fails it: the platform gave up (exit 127)."""
    recording = read_recording(docs_recording())
    verdict, fed = replay(TimestampCheck(), recording.publish_started_ms, recording.looks)
    assert verdict is not None
    assert not verdict.ok
    assert verdict.layer == "gave-up"
    assert "exit code 127" in verdict.reason
    assert len(fed) == 2


def test_replay_ends_without_a_verdict_when_the_recording_runs_out() -> None:
    """flyctl-smoke never sees the docs machine started; two looks are not enough to decide."""
    recording = read_recording(docs_recording())
    verdict, fed = replay(BUILTIN_CHECKS["flyctl-smoke"](), DOCS_PUBLISH_MS, recording.looks)
    assert verdict is None
    assert len(fed) == 2


# --- every shape Fly returns ---------------------------------------------------------


def machine_with(*events: dict[str, Any], **fields: Any) -> MachineSnapshot:
    """A machine object with these raw events (and fields), read at time 0."""
    return machine_from_api({"id": "m", "state": "started", "events": list(events), **fields}, 0)


def test_a_machine_without_an_events_key_has_no_events() -> None:
    """fly-go drops an empty event list (omitempty): no ``events`` key reads as none."""
    assert machine_from_api({"id": "m", "state": "starting"}, 0).events == ()
    assert machine_from_api({"id": "m", "state": "starting", "events": None}, 0).events == ()


def test_exit_details_under_monitor_event_are_read() -> None:
    """An exit under request.MonitorEvent.exit_event reads like one under request.exit_event."""
    nested = {"exit_code": 3, "oom_killed": True, "restarting": True, "exited_at": 5}
    monitor = machine_with(
        {"type": "exit", "status": "stopped", "timestamp": 9,
         "request": {"MonitorEvent": {"exit_event": nested}, "restart_count": 2}}
    ).events[0]
    flat = machine_with(
        {"type": "exit", "status": "stopped", "timestamp": 9,
         "request": {"exit_event": nested, "restart_count": 2}}
    ).events[0]
    assert monitor == flat == Event(
        "exit", "stopped", 9, "flyd", exit_code=3, oom_killed=True, restarting=True,
        restart_count=2,
    )


def test_monitor_event_wins_over_exit_event_as_in_fly_go() -> None:
    """With both present the MonitorEvent details are used (fly-go MachineRequest.GetExitCode)."""
    event = machine_with(
        {"type": "exit", "status": "stopped", "timestamp": 9,
         "request": {"exit_event": {"exit_code": 1},
                     "MonitorEvent": {"exit_event": {"exit_code": 2}}}}
    ).events[0]
    assert event.exit_code == 2


def test_an_exit_without_details_is_kept_with_an_unknown_code() -> None:
    """An exit with no request (or an empty one) is kept; its code is unknown, so no crash."""
    for request in ({}, {"request": {}}, {"request": {"restart_count": 4}}):
        event = machine_with({"type": "exit", "status": "stopped", "timestamp": 9, **request})
        assert event.events[0].exit_code is None
        assert not event.events[0].is_crash


def test_events_without_request_status_or_type_are_kept_with_defaults() -> None:
    """fly-go marks type, status, source and request omitempty: missing ones read as empty."""
    machine = machine_with(
        {"type": "start", "timestamp": 3},
        {"status": "started", "timestamp": 2, "request": {}},
        {"timestamp": 1, "source": "proxy"},
    )
    assert machine.events == (
        Event("start", "", 3, "flyd"),
        Event("", "started", 2, "flyd"),
        Event("", "", 1, "proxy"),
    )


def test_unknown_fields_are_ignored_everywhere() -> None:
    """Fields this module does not read, at any level, change nothing."""
    plain = machine_with({"type": "exit", "status": "stopped", "timestamp": 9,
                          "request": {"exit_event": {"exit_code": 1}}})
    noisy = machine_with(
        {"id": "01GJ", "type": "exit", "status": "stopped", "timestamp": 9, "extra": [1],
         "request": {"exit_event": {"exit_code": 1, "guest_signal": -1, "new": {}},
                     "other": True}},
        host_status="ok", checks=[{"name": "x"}], incomplete_config=None,
    )
    assert noisy == plain


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        # 2022-11-22T21:17:51Z is 1669151871 s since the epoch (date -u -d @1669151871).
        ("2022-11-22T21:17:51.924Z", 1_669_151_871_924),
        ("2022-11-22T21:17:51Z", 1_669_151_871_000),
        ("2022-11-22T21:17:51.9Z", 1_669_151_871_900),
        ("2022-11-22T21:17:51.924999999Z", 1_669_151_871_924),  # Go's nanoseconds, cut to ms
        ("2022-11-22t21:17:51.924z", 1_669_151_871_924),
        ("2022-11-22T22:17:51.924+01:00", 1_669_151_871_924),
        ("2022-11-22T16:47:51.924-04:30", 1_669_151_871_924),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_rfc3339_times_parse_to_epoch_ms(text: str, ms: int) -> None:
    """RFC3339 with any fractional precision and Z or an offset parses to integer ms."""
    assert parse_rfc3339_ms(text) == ms


@pytest.mark.parametrize(
    "text", ["2022-11-22 21:17:51Z", "2022-11-22T21:17:51", "2022-13-01T00:00:00Z",
             "2022-11-22T21:17:51+24:00", "1669151871924", ""],
)
def test_text_that_is_not_rfc3339_does_not_parse(text: str) -> None:
    """A time without a zone, with a bad field or with no date is not RFC3339."""
    assert parse_rfc3339_ms(text) is None


def test_exited_at_is_read_as_integer_or_rfc3339() -> None:
    """Old recordings (integer ms) and fly-go's RFC3339 string both read."""
    for exited_at in (1_669_151_871_924, "2022-11-22T21:17:51.924Z"):
        event = machine_with(
            {"type": "exit", "status": "stopped", "timestamp": 9,
             "request": {"exit_event": {"exit_code": 1, "exited_at": exited_at}}}
        ).events[0]
        assert event.exit_code == 1


@given(ms=st.integers(0, 253_402_300_799_999))
def test_rfc3339_written_reads_back_to_the_same_ms(ms: int) -> None:
    """Every time the writer can write in RFC3339 parses back to the same ms."""
    text = format_rfc3339_ms(ms)
    assert text.endswith("Z")
    assert len(text.split(".")[1]) == 4  # three digits of ms, then Z
    assert parse_rfc3339_ms(text) == ms


def test_an_exit_is_written_with_an_rfc3339_exited_at_fly_go_can_read() -> None:
    """Written exits carry exited_at as UTC RFC3339 with ms, the shape of Go's time.Time."""
    event = Event("exit", "stopped", 1_669_151_871_924, exit_code=1)
    written = event_to_api(event)["request"]["exit_event"]["exited_at"]
    assert written == "2022-11-22T21:17:51.924Z"


# --- errors --------------------------------------------------------------------------


def mutated(change: str) -> str:
    """The docs recording's second line with one field removed or retyped."""
    obj = json.loads(docs_recording()[1])
    machine = obj["machines"][0]
    exit_event = machine["events"][0]
    if change == "at_ms":
        del obj["at_ms"]
    elif change == "machines":
        del obj["machines"]
    elif change == "id":
        del machine["id"]
    elif change == "exited_at":
        exit_event["request"]["exit_event"]["exited_at"] = "20 May 2022"
    elif change == "monitor":
        exit_event["request"]["MonitorEvent"] = []
    elif change == "timestamp":
        del machine["events"][2]["timestamp"]
    elif change == "timestamp-type":
        exit_event["timestamp"] = "2022-05-20T17:07:10Z"
    elif change == "restarting-type":
        exit_event["request"]["exit_event"]["restarting"] = "no"
    return json.dumps(obj)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("at_ms", "line 2: field 'at_ms' is missing"),
        ("machines", "line 2: field 'machines' is missing"),
        ("id", "line 2: field 'machines[0].id' is missing"),
        (
            "exited_at",
            "line 2: field 'machines[0].events[0].request.exit_event.exited_at' must be an "
            'RFC3339 time, got "20 May 2022"',
        ),
        (
            "monitor",
            "line 2: field 'machines[0].events[0].request.MonitorEvent' must be an object, got []",
        ),
        ("timestamp", "line 2: field 'machines[0].events[2].timestamp' is missing"),
        (
            "timestamp-type",
            "line 2: field 'machines[0].events[0].timestamp' must be an integer, "
            'got "2022-05-20T17:07:10Z"',
        ),
        (
            "restarting-type",
            "line 2: field 'machines[0].events[0].request.exit_event.restarting' "
            'must be true or false, got "no"',
        ),
    ],
)
def test_a_bad_line_is_an_error_naming_the_line_and_field(change: str, message: str) -> None:
    """A missing or mistyped required field raises RecordingError naming line and field."""
    lines = [docs_recording()[0], mutated(change)]
    with pytest.raises(RecordingError) as error:
        read_recordings(lines)
    assert str(error.value) == message
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "line 3: not valid JSON (Expecting property name enclosed in double quotes"),
        ("[1, 2]", "line 3: the look must be an object, got [1, 2]"),
        (
            '{"at_ms": 1, "publish_started_ms": 0, "machines": {}}',
            "line 3: field 'machines' must be an array, got {}",
        ),
    ],
)
def test_a_malformed_line_is_a_one_line_error(text: str, message: str) -> None:
    """Invalid JSON or a wrong shape is reported on one line, counting blank lines too."""
    with pytest.raises(RecordingError) as error:
        read_recordings([docs_recording()[0], "", text])
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_a_run_must_keep_one_publish_time_and_go_forward() -> None:
    """Lines of one run that change publish time, or go back in time, are errors naming the line."""
    first, second = docs_recording()
    moved = json.loads(second)
    moved["publish_started_ms"] += 1
    with pytest.raises(RecordingError, match=r"^line 2: field 'publish_started_ms'"):
        read_recordings([first, json.dumps(moved)])
    with pytest.raises(RecordingError, match=rf"^line 2: field 'at_ms' is {DOCS_PUBLISH_MS + 100}"):
        read_recordings([second, first])


def test_runs_are_read_apart_in_order_of_first_appearance() -> None:
    """Lines labelled with different runs form separate recordings, in file order."""
    look = Look(PUBLISH_MS, ())
    lines = [
        look_to_json(look, PUBLISH_MS, "count"),
        look_to_json(look, PUBLISH_MS + 5, "timestamp"),
        look_to_json(Look(PUBLISH_MS + 1, ()), PUBLISH_MS, "count"),
    ]
    recordings = read_recordings(lines)
    assert [(r.run, r.publish_started_ms, len(r.looks)) for r in recordings] == [
        ("count", PUBLISH_MS, 2),
        ("timestamp", PUBLISH_MS + 5, 1),
    ]
    with pytest.raises(RecordingError, match="holds 2 runs"):
        read_recording(lines)
    with pytest.raises(RecordingError, match="no looks"):
        read_recording(["", "  "])


# --- replay --------------------------------------------------------------------------


class Scripted:
    """A check that asks for fixed waits and then passes: for testing the replay rule."""

    name = "scripted"

    def __init__(self, *waits: float) -> None:
        self.waits = waits

    def next(self, publish_started_ms: int, looks: Any) -> Wait | Verdict:
        """Ask for the next scripted wait, or pass once all were served."""
        if len(looks) < len(self.waits):
            return Wait(self.waits[len(looks)])
        return Verdict(True, "done")


def at(*times_ms: int) -> list[Look]:
    """Empty looks at these offsets from the publish."""
    return [Look(PUBLISH_MS + t, ()) for t in times_ms]


def test_replay_serves_each_wait_with_the_first_look_due() -> None:
    """Each wait takes the first unused look at or after now + wait, skipping earlier ones."""
    result = replay(Scripted(0, 1.0, 2.5), PUBLISH_MS, at(0, 500, 1_000, 1_200, 3_000, 3_600))
    assert result.verdict == Verdict(True, "done")
    assert [k.at_ms - PUBLISH_MS for k in result.looks] == [0, 1_000, 3_600]


def test_replay_allows_a_look_one_ms_early_for_the_recorder_rounding() -> None:
    """A look TOLERANCE_MS before the due time still serves the wait; one more ms does not."""
    early = 1_000 - TOLERANCE_MS
    assert replay(Scripted(0, 1.0), PUBLISH_MS, at(0, early)).looks[-1].at_ms == PUBLISH_MS + early
    assert replay(Scripted(0, 1.0), PUBLISH_MS, at(0, early - 1)).verdict is None


def test_replay_rejects_a_step_that_is_not_a_wait_or_verdict() -> None:
    """A check answering with a negative wait ends the replay as the driver loop says (CheckFailed)."""
    with pytest.raises(CheckFailed, match="finite seconds >= 0"):
        replay(Scripted(-1.0), PUBLISH_MS, at(0))


@pytest.mark.parametrize("name", sorted(BUILTIN_CHECKS))
@given(
    apps=st.lists(
        st.builds(
            App,
            crash_after_ms=st.none() | st.integers(200, 20_000),
            max_retries=st.none() | st.integers(0, 5),
            cap=st.integers(1, 8),
            restart_counter=st.booleans(),
        ),
        min_size=1,
        max_size=2,
    )
)
def test_replaying_a_live_run_through_json_gives_the_same_verdict(
    name: str, apps: list[App]
) -> None:
    """A run's looks, recorded as JSON Lines and replayed, give the live run's verdict.

    flyctl-smoke with every machine updated at the publish: replay cannot update
    machines, so it reads a recording that way (a deploying run's own updates are not
    recorded as steps; docs/check-protocol.md "Checks that deploy"), and its backoff
    unjittered: ``replay`` here is given no seed (``testbed replay`` reads the recorded one).
    """
    check = make_check(name, {"healthy_deadline_s": 60.0, "rollout": "at-publish",
                              "jitter": "upper-bounds"})
    live = drive_world(check, world(*apps, horizon_s=120))
    recording = read_recording(dump_recording(Recording(PUBLISH_MS, live.looks)).splitlines())
    replayed = replay(check, recording.publish_started_ms, recording.looks)
    assert replayed.looks == live.looks
    assert replayed.verdict == live.verdict
    if live.verdict is not None:
        assert replayed.verdict is not None
        assert replayed.verdict.reason == live.verdict.reason


# --- the incident, recorded ----------------------------------------------------------


def incident_recording() -> Recording:
    """The brief's platform as a recording: each look adds a crash and a start, five kept."""
    text = dump_recording(Recording(PUBLISH_MS, tuple(incident_looks(30)), "incident"))
    return read_recording(text.splitlines())


def test_the_incident_recording_keeps_the_same_mix_at_every_look() -> None:
    """Once full, every look's list holds five events and the same number of crashes."""
    recording = incident_recording()
    full = [k.machines[0] for k in recording.looks[2:]]
    assert all(len(m.events) == 5 for m in full)
    assert {sum(1 for _ in m.crashes_since(PUBLISH_MS)) for m in full} == {2}
    assert all(m.state == "started" for m in full)


def test_replaying_the_incident_the_count_check_passes_and_timestamp_fails() -> None:
    """The 25 September bug, replayed: count passes the crash loop, timestamp fails it."""
    recording = incident_recording()
    count, _ = replay(BUILTIN_CHECKS["count"](), PUBLISH_MS, recording.looks)
    timestamp, _ = replay(BUILTIN_CHECKS["timestamp"](), PUBLISH_MS, recording.looks)
    assert count is not None
    assert timestamp is not None
    assert count.ok
    assert not timestamp.ok
    assert "crashed repeatedly since the publish and is still restarting" in timestamp.reason


def test_the_incident_recording_as_platform_checks_see_it() -> None:
    """flyctl-smoke fails the recorded crash loop; restart-counter says the counter is missing."""
    recording = incident_recording()
    smoke, _ = replay(BUILTIN_CHECKS["flyctl-smoke"](), PUBLISH_MS, recording.looks)
    counter, _ = replay(BUILTIN_CHECKS["restart-counter"](), PUBLISH_MS, recording.looks)
    assert smoke is not None
    assert not smoke.ok
    assert smoke.layer == "constantly-restarting"
    assert counter is not None
    assert counter.layer == "no-counter"
