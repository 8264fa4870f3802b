"""Scenarios: TOML files validated into typed settings, with ``--set`` overrides."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sim.platform.behavior import Behavior, BehaviorName
from sim.platform.machine import PlatformRules, RestartPolicy
from sim.settings import BadInput, apply_sets, format_error, load_settings, parse_value, validated

# The settings-file names stay importable from here, where they used to live.
__all__ = [
    "DEFAULT_EPOCH_MS", "OUTCOMES", "AppTable", "BadInput", "CheckTable", "Outcome",
    "PlatformTable", "PreviousTable", "PublishTable", "ReconcilerTable", "ReleaseTable",
    "Scenario", "TrafficTable", "apply_sets", "format_error", "load", "parse_value",
    "scenarios_dir", "shipped", "validate",
]

Outcome = Literal["caught", "missed", "passed", "false_alarm", "blind", "undecided", "error"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

# 2025-09-25T09:00:00Z: platform timestamps look like the incident's, in epoch ms.
DEFAULT_EPOCH_MS = 1_758_790_800_000


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class PlatformTable(_Table):
    """``[platform]``: how the hosting platform treats machines."""

    event_log_cap: int = Field(5, ge=1, le=10_000)
    restart_policy: RestartPolicy = "on-failure"
    max_retries: int = Field(10, ge=0, le=1_000_000)
    restart_delay_s: float = Field(1.0, ge=0)
    boot_s: float = Field(1.0, ge=0)
    jitter: float = Field(0.05, ge=0, lt=1)
    epoch_ms: int = Field(DEFAULT_EPOCH_MS, ge=0)
    restart_counter: bool = False

    def rules(self) -> PlatformRules:
        """The machine-level rules these settings describe."""
        return PlatformRules(**self.model_dump())


class AppTable(_Table):
    """An image's app behaviour and its parameters."""

    behavior: BehaviorName = "healthy"
    crash_after_s: float = Field(2.5, gt=0)
    crash_on_boot_s: float = Field(0.5, gt=0)
    crash_after_starts: int = Field(0, ge=0)
    crash_probability: float = Field(0.1, gt=0, le=1)
    flaky_interval_s: float = Field(10.0, gt=0)
    slow_boot_s: float = Field(30.0, ge=0)
    exit_code: int = Field(1, ge=1, le=255)

    def as_behavior(self) -> Behavior:
        """The behaviour model of this app."""
        fields = self.model_dump(exclude={"asleep", "machines", "image"})
        return Behavior(name=fields.pop("behavior"), **fields)


class PreviousTable(AppTable):
    """``[previous]``: the release that is live before the publish (omit for a first publish)."""

    image: str = "registry.fly.io/app:previous"
    asleep: bool = False


class ReleaseTable(AppTable):
    """``[release]``: what the publish rolls out."""

    image: str = "registry.fly.io/app:release"
    machines: int = Field(1, ge=1, le=100_000)


class CheckTable(_Table):
    """``[check]``: timing handed to every check that takes it."""

    look_delay_s: float = Field(5.0, gt=0)
    start_timeout_s: float = Field(60.0, gt=0)
    poll_s: float = Field(1.0, gt=0)


class PublishTable(_Table):
    """``[publish]``: when the publish begins and how a failed one is rolled back."""

    at_s: float = Field(30.0, ge=0)
    rollback: Literal["restore", "delete"] = "restore"


class ReconcilerTable(_Table):
    """``[reconciler]``: the background job that fails live releases that are not up."""

    interval_s: float = Field(180.0, gt=0)


class TrafficTable(_Table):
    """``[traffic]``: open-loop requests to the site."""

    rps: float = Field(5.0, ge=0, le=100_000)


class Scenario(_Table):
    """One world: the platform, the previous and new release, the check timing, traffic."""

    name: str
    description: str = ""
    seed: int = Field(0, ge=0)
    horizon_s: float = Field(900.0, gt=0)
    platform: PlatformTable = PlatformTable()
    previous: PreviousTable | None = None
    release: ReleaseTable = ReleaseTable()
    check: CheckTable = CheckTable()
    publish: PublishTable = PublishTable()
    reconciler: ReconcilerTable = ReconcilerTable()
    traffic: TrafficTable = TrafficTable()
    expect: dict[str, Outcome] = {}


def scenarios_dir() -> Path:
    """Where the shipped scenarios live (``TESTBED_SCENARIOS`` overrides)."""
    override = os.environ.get("TESTBED_SCENARIOS")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "scenarios"


def shipped() -> dict[str, Path]:
    """The shipped scenarios by name, sorted."""
    return {p.stem: p for p in sorted(scenarios_dir().glob("*.toml"))}


def validate(raw: dict[str, Any], source: str) -> Scenario:
    """Validate a raw mapping into a Scenario, or raise BadInput with one line."""
    return validated(Scenario, raw, source)


def load(name_or_path: str, sets: list[str] | None = None) -> Scenario:
    """Load a shipped scenario by name, or a TOML file by path, then apply overrides."""
    return load_settings(Scenario, name_or_path, shipped, "scenario", sets or ())
