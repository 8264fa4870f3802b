"""What real Machines API clients read, served by the twin and checked against Fly's OpenAPI:
events with ids, ``image_ref.digest``, ``/wait``'s ``event_id`` and ``from_event_id``, the app,
``region`` and ``summary``, a lease's ``nonce`` and ``lease_ttl`` on update, rollback by digest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from platform_testbed.sim.config.scenario import load
from platform_testbed.sim.twin.app import image_digest, ulid_ms
from platform_testbed.sim.twin.session import Session, open_session
from tests.test_twin_api import PREVIOUS, RELEASE, TOKEN, Client


@pytest.fixture
def session() -> Iterator[Session]:
    served = open_session(load("sept25-crash-loop"), 1, speed=4, token=TOKEN)
    yield served
    served.close(finish=False)


def test_events_are_listed_newest_first_with_ids_and_a_limit(session: Session) -> None:
    """``GET .../events`` (Machines_list_events): newest first, each with a ULID id of its time."""
    call = Client(session)
    status, events = call("GET", "/machines/m1/events")
    assert status == 200
    assert events
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps, reverse=True)
    assert all(ulid_ms(e["id"]) == e["timestamp"] for e in events)
    assert len({e["id"] for e in events}) == len(events)
    assert call("GET", "/machines/m1/events?limit=1")[1] == events[:1]
    assert call("GET", "/machines/m1")[1]["events"] == events  # the same ids at every read
    assert call("GET", "/machines/m1/events?limit=0")[0] == 400


def test_image_ref_has_a_digest_and_an_update_by_it_rolls_back(session: Session) -> None:
    """``image_ref.digest`` is served; ``repo:tag@digest`` and ``repo@digest`` name that image."""
    call = Client(session)
    before = call("GET", "/machines/m1")[1]
    assert before["image_ref"]["digest"] == image_digest(PREVIOUS)
    assert call("POST", "/machines/m1", {"config": {"image": RELEASE}})[0] == 200
    status, back = call("POST", "/machines/m1", {"config": {"image": f"{PREVIOUS}@{image_digest(PREVIOUS)}"}})
    assert status == 200
    assert back["config"]["image"] == PREVIOUS
    repository = PREVIOUS.rpartition(":")[0]
    by_digest = f"{repository}@{image_digest(RELEASE)}"
    assert call("POST", "/machines/m1", {"config": {"image": by_digest}})[0] == 200
    assert call("POST", "/machines/m1", {"config": {"image": f"{repository}@sha256:{'0' * 64}"}})[0] == 400


def test_a_wait_answers_the_event_that_entered_the_state(session: Session) -> None:
    """``/wait``'s answer carries ``event_id``: the event that entered the wanted state."""
    call = Client(session)
    status, answer = call("GET", "/machines/m1/wait?state=started&timeout=5")
    assert status == 200
    events = call("GET", "/machines/m1/events")[1]
    [entered] = [e for e in events if e["id"] == answer["event_id"]]
    assert entered["status"] == "started"


def test_from_event_id_waits_for_a_newer_event_not_the_state_it_is_in(session: Session) -> None:
    """With ``from_event_id`` of the newest event, a started machine's wait for started is held (408)."""
    call = Client(session)
    newest = call("GET", "/machines/m1/events")[1][0]["id"]
    assert call("GET", "/machines/m1/wait?state=started&timeout=1")[0] == 200
    status, _ = call("GET", f"/machines/m1/wait?state=started&timeout=1&from_event_id={newest}")
    assert status == 408
    assert call("GET", "/machines/m1/wait?state=started&from_event_id=nope")[0] == 400


def test_from_event_id_counts_an_event_after_it_even_before_the_request(session: Session) -> None:
    """An event id older than the machine's start: the start after it answers at once."""
    call = Client(session)
    oldest = call("GET", "/machines/m1/events")[1][-1]["id"]
    status, answer = call("GET", f"/machines/m1/wait?state=started&timeout=1&from_event_id={oldest}")
    assert status == 200
    assert answer["event_id"] != oldest


def test_the_app_is_served(session: Session) -> None:
    """``GET /v1/apps/{app}`` (Apps_show): its name and machine count; another app is 404."""
    status, app = Client(session).get_app()
    assert status == 200
    assert (app["name"], app["machine_count"]) == (session.app.app, 1)


def test_region_and_summary_filter_the_list(session: Session) -> None:
    """``?region=`` keeps the machines of that region; ``?summary=true`` omits config and events."""
    call = Client(session)
    assert len(call("GET", "/machines?region=iad")[1]) == 1
    assert call("GET", "/machines?region=syd")[1] == []
    [short] = call("GET", "/machines?summary=true")[1]
    assert "config" not in short
    assert "events" not in short
    assert short["state"]


def test_a_lease_shows_its_nonce_and_lease_ttl_on_update_takes_one(session: Session) -> None:
    """A leased machine's JSON has ``nonce``; an update with ``lease_ttl`` takes a lease and returns it."""
    call = Client(session)
    assert "nonce" not in call("GET", "/machines/m1")[1]
    status, updated = call("POST", "/machines/m1", {"config": {"image": RELEASE}, "lease_ttl": 30})
    assert status == 200
    nonce = updated["nonce"]
    assert call("GET", "/machines/m1/lease")[1]["data"]["nonce"] == nonce
    assert call("POST", "/machines/m1", {"config": {"image": PREVIOUS}})[0] == 409
    assert call("POST", "/machines/m1", {"config": {"image": PREVIOUS}, "lease_ttl": 2**63},
                headers={"fly-machine-lease-nonce": nonce})[0] == 400
