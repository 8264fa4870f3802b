"""The check protocol's wire format: a request line out, an answer line in, and the schemas."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from importlib import resources
from typing import Any

from platform_testbed.checks.flyapi import machine_to_api
from platform_testbed.checks.model import Look, Verdict, Wait
from platform_testbed.checks.protocol import Step

#: The protocol version every request carries; a child should refuse one it does not know.
PROTOCOL = 1
#: The optional mode a process's first request offers (``"supports"``) and its answer may
#: take (``"incremental": true``): from then on each request carries only the looks the
#: process has not been sent in the run (``looks_from`` says where they start), so a run
#: of n looks costs n requests of one look each, not n requests of up to n looks.
INCREMENTAL = "incremental"


class AnswerError(ValueError):
    """One answer line that breaks the protocol; the message names the field and the rule."""


def look_to_api(look: Look) -> dict[str, Any]:
    """One look as a request carries it: ``at_ms``, the machines as API objects, and
    ``pre_deploy`` when the one who looked knew each machine's state before the publish.

    ``pre_deploy`` is ``Look.pre_deploy`` as a recording line spells it
    (``checks.flyjson.look_to_json``): left out when not known, so a request for a look
    without it is byte for byte what it was before the field existed, and a check
    written then reads it unchanged.
    """
    obj: dict[str, Any] = {
        "at_ms": look.at_ms, "machines": [machine_to_api(m, look.at_ms) for m in look.machines],
    }
    if look.pre_deploy:
        obj["pre_deploy"] = dict(look.pre_deploy)
    return obj


def request_line(
    run: str, publish_started_ms: int, looks_json: Sequence[str], options_json: str,
    *, looks_from: int | None = None, offer: bool = False,
) -> str:
    """One request (no newline) from the looks and options already encoded as JSON.

    ``looks_from``: an incremental request, whose ``looks`` start at that index of the run;
    ``offer``: the process's first request, offering the incremental mode.
    """
    fields: dict[str, Any] = {"protocol": PROTOCOL, "run": run,
                              "publish_started_ms": publish_started_ms}
    if offer:
        fields["supports"] = [INCREMENTAL]
    if looks_from is not None:
        fields["looks_from"] = looks_from
    head = json.dumps(fields, separators=(",", ":"))
    # Each look is encoded once per run and spliced in.
    return f'{head[:-1]},"options":{options_json},"looks":[{",".join(looks_json)}]}}'


def schema(kind: str) -> dict[str, Any]:
    """The shipped JSON Schema of a ``"request"`` or an ``"answer"``."""
    schemas = resources.files("platform_testbed.sim").joinpath("schemas")
    text = schemas.joinpath(f"check-{kind}.schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def _no_constant(name: str) -> Any:
    raise AnswerError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise AnswerError(f"field {key!r} appears twice")
        obj[key] = value
    return obj


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_VERDICT_FIELDS = ("ok", "reason", "machine", "layer", "judged")


def parse_answer(text: str) -> Step:
    """A ``Wait`` or ``Verdict`` from one answer line; ``AnswerError`` says what is wrong."""
    return read_answer(text, offered=False)[0]


def read_answer(text: str, offered: bool) -> tuple[Step, bool]:
    """The step of one answer line, and whether it opts in to the incremental mode.

    ``"incremental": true`` beside ``wait`` or ``verdict`` is allowed only in the answer to
    a request that offered it (``offered``); anywhere else it is a protocol error.
    """
    try:
        obj = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as error:
        raise AnswerError(f"not JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:  # json recurses per nested array or object: an answer is 3 deep
        raise AnswerError("JSON nested too deeply (an answer is a few levels deep)") from None
    if not isinstance(obj, dict):
        raise AnswerError("must be a JSON object with one field, 'wait' or 'verdict'")
    opted = False
    if INCREMENTAL in obj and offered:
        opted = obj.pop(INCREMENTAL)
        if opted is not True:
            raise AnswerError(f"field {INCREMENTAL!r} must be true (or left out), got {shorten(opted)}")
    elif INCREMENTAL in obj:
        raise AnswerError(f"field {INCREMENTAL!r} belongs only in the answer to a process's "
                          "first request, which offers it")
    return _step(obj), opted


def _step(obj: dict[str, Any]) -> Step:
    if sorted(obj) not in (["wait"], ["verdict"]):
        raise AnswerError(f"must have exactly one field, 'wait' or 'verdict' (got {sorted(obj)})")
    if "wait" in obj:
        seconds = obj["wait"]
        if not is_number(seconds) or not math.isfinite(seconds) or seconds < 0:
            raise AnswerError(f"field 'wait' must be a number of seconds >= 0, got {shorten(seconds)}")
        return Wait(float(seconds))
    verdict = obj["verdict"]
    if not isinstance(verdict, dict):
        raise AnswerError(f"field 'verdict' must be an object, got {shorten(verdict)}")
    if unknown := [k for k in verdict if k not in _VERDICT_FIELDS]:
        raise AnswerError(f"field 'verdict.{unknown[0]}' is not part of the protocol")
    rules: list[tuple[str, bool, str]] = [
        ("ok", isinstance(verdict.get("ok"), bool), "must be true or false"),
        ("reason", isinstance(verdict.get("reason"), str) and verdict.get("reason") != "",
         "must be a non-empty string"),
        ("machine", verdict.get("machine") is None or isinstance(verdict["machine"], str),
         "must be a string or null"),
        ("layer", isinstance(verdict.get("layer", ""), str), "must be a string"),
        ("judged", isinstance(verdict.get("judged", True), bool), "must be true or false"),
    ]
    for key, valid, rule in rules:
        if not valid:
            got = shorten(verdict[key]) if key in verdict else "nothing"
            raise AnswerError(f"field 'verdict.{key}' {rule}, got {got}")
    return Verdict(
        verdict["ok"], verdict["reason"], verdict.get("machine"),
        layer=verdict.get("layer", ""), judged=verdict.get("judged", True),
    )


def shorten(value: Any, limit: int = 60) -> str:
    """A value shortened to keep an error message on one line."""
    text = value if isinstance(value, str) else json.dumps(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
