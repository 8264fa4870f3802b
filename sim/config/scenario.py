"""Scenarios: TOML files validated into typed settings, with ``--set`` overrides."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from platform_testbed.sim.config.numbers import Seed, Table
from platform_testbed.sim.config.options import option, resolve
from platform_testbed.sim.config.profiles import DEFAULT_PROFILE, PROFILES
from platform_testbed.sim.config.settings import (
    BadInput,
    apply_sets,
    format_error,
    load_settings,
    parse_value,
    validated,
)
from platform_testbed.sim.config.shipped import scenarios_dir, shipped, shipped_series, shipped_sweeps
from platform_testbed.sim.config.truth import DEFAULT_TRUTH, DEFAULT_WINDOW_S, Truth

# The settings-file names stay importable from here, where they used to live.
__all__ = [
    "BEHAVIORS",
    "DEFAULT_EPOCH_MS",
    "OUTCOMES",
    "ApiTable",
    "AppTable",
    "BadInput",
    "BehaviorName",
    "CheckTable",
    "Outcome",
    "PlatformTable",
    "PreviousTable",
    "PublishTable",
    "ReconcilerTable",
    "ReleaseTable",
    "RestartPolicy",
    "RetryWindow",
    "Scenario",
    "TrafficTable",
    "apply_sets",
    "format_error",
    "load",
    "parse_value",
    "scenarios_dir",
    "shipped",
    "shipped_series",
    "shipped_sweeps",
    "validate",
]

RestartPolicy = Literal["no", "always", "on-failure"]
RetryWindow = Literal["fixed", "sliding"]
RestartCountReading = Literal["restarts-so-far", "counts-this-restart"]
BehaviorName = Literal[
    "healthy", "crash_after", "crash_on_boot", "crash_after_starts", "flaky", "slow_boot", "oom"
]
BEHAVIORS: tuple[str, ...] = BehaviorName.__args__  # type: ignore[attr-defined]

Outcome = Literal["caught", "missed", "passed", "false_alarm", "blind", "undecided", "error"]
OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

# 2025-09-25T09:00:00Z: platform timestamps look like the incident's, in epoch ms.
DEFAULT_EPOCH_MS = 1_758_790_800_000


class _Table(Table, BaseModel):  # Table: no true for a number, no "yes" for true
    # Times and counts must be finite: inf or NaN would make a run unbounded or meaningless.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)


class PlatformTable(_Table):
    """``[platform]``: how the hosting platform treats machines (the rules the model reads).

    Sources, or "assumed", for each value: ``docs/fidelity.md``.
    """

    #: Not public: Fly documents no cap on a machine's event list; 5 is the incident's.
    event_log_cap: int = Field(5, ge=1, le=10_000)
    #: superfly/docs machines/guides-examples/machine-restart-policy (on-failure is the default).
    restart_policy: RestartPolicy = "on-failure"
    #: Same page: "up to max_retries (default 10) times within a 5-minute window".
    max_retries: int = Field(10, ge=0, le=1_000_000)
    #: Same page (docs@aa73f3e4, 2026-07-06); 0 counts retries over a whole budget.
    retry_window_s: float = Field(300.0, ge=0, le=1e9, allow_inf_nan=False)
    #: superfly/docs PR #1911 (merged 2026-07-06): "evaluated within a fixed 5-minute
    #: window"; where a window opens is not public: assumed (``sim.platform.restarting``).
    #: ``sliding``: the reading before the PR, a window trailing each exit.
    retry_window: RetryWindow = "fixed"
    #: edoardok-cmd/BoomCard@ec15ad8c (2026-08-20): machines that used up their restart
    #: budget, woken by fly-proxy, exit 1 and are not restarted. Evidence thin (the
    #: author's summary): true is the other reading, an autostart with a fresh budget.
    autostart_refills_retries: bool = False
    #: Not public; with ``boot_s``, the 2 s exit -> started of the one public automatic
    #: restart (ateles, tests/data/fly/); the even split is assumed.
    restart_delay_s: float = Field(1.0, ge=0, le=1e6, allow_inf_nan=False)
    #: Not public: see ``restart_delay_s``; public autostart boots: 2.09-3 s (tests/data/fly/).
    boot_s: float = Field(1.0, ge=0, le=1e6, allow_inf_nan=False)
    #: Assumed: relative spread of boot and crash times, drawn per start.
    jitter: float = Field(0.05, ge=0, lt=1, allow_inf_nan=False)
    epoch_ms: int = Field(DEFAULT_EPOCH_MS, ge=0, le=253_402_300_799_000)
    #: Testbed extension: a monotonic restart counter, as Kubernetes' restartCount.
    restart_counter: bool = False
    #: What an exit's ``restart_count`` counts (fly-go ``MachineRequest.RestartCount``; its
    #: rule is not public): the restarts before this exit (``restarts-so-far``), or those
    #: and the one this exit triggers (``counts-this-restart``). An axis: docs/fidelity.md.
    restart_count_reading: RestartCountReading = "restarts-so-far"
    #: Which events each transition writes (``testbed list --profiles``); not public for a
    #: crash loop, so several plausible profiles ship.
    events: str = DEFAULT_PROFILE

    @field_validator("events")
    @classmethod
    def _known_profile(cls, value: str) -> str:
        if value not in PROFILES:
            raise ValueError(f"unknown event profile (known: {', '.join(PROFILES)})")
        return value


#: The shortest crash or flap period a world runs (seconds). Assumed: no app crashes
#: faster than a process can start; below it a run's events grow without useful bound
#: (a 1 us crash loop). ``TESTBED_MIN_PERIOD_S`` lowers it for a deliberate experiment.
MIN_PERIOD_S = float(option("min_period_s").default or 0)  # the registry's, with why


def _min_period(value: float, info: ValidationInfo) -> float:
    floor = resolve("min_period_s")  # the variable by its rule: nan must not switch it off
    if value < floor:
        raise ValueError(f"must be at least {floor:g} s (a millisecond: shorter periods make "
                         f"a run unbounded); set {option('min_period_s').env_name} to lower the limit")
    return value


class AppTable(_Table):
    """An image's app behaviour and its parameters."""

    behavior: BehaviorName = "healthy"
    crash_after_s: float = Field(2.5, gt=0)
    crash_on_boot_s: float = Field(0.5, gt=0)
    crash_after_starts: int = Field(0, ge=0)
    crash_probability: float = Field(0.1, gt=0, le=1)
    flaky_interval_s: float = Field(10.0, gt=0)
    slow_boot_s: float = Field(30.0, ge=0)
    #: The code the app exits with (0: a clean exit, which on-failure does not restart).
    exit_code: int = Field(1, ge=0, le=255)

    _periods = field_validator("crash_after_s", "crash_on_boot_s", "flaky_interval_s")(
        _min_period)


class PreviousTable(AppTable):
    """``[previous]``: the release that is live before the publish (omit for a first publish)."""

    image: str = "registry.fly.io/app:previous"
    asleep: bool = False


class ReleaseTable(AppTable):
    """``[release]``: what the publish rolls out."""

    image: str = "registry.fly.io/app:release"
    #: Strict: ``machines = true`` is a mistake, not one machine.
    machines: int = Field(1, ge=1, le=100_000, strict=True)


class CheckTable(_Table):
    """``[check]``: timing handed to every check that takes it."""

    look_delay_s: float = Field(5.0, gt=0)
    start_timeout_s: float = Field(60.0, gt=0)
    poll_s: float = Field(1.0, gt=0)


class PublishTable(_Table):
    """``[publish]``: when the publish begins and how a failed one is rolled back."""

    at_s: float = Field(30.0, ge=0, le=1e6)
    rollback: Literal["restore", "delete"] = "restore"
    #: Start a machine the publish found stopped (asleep)? flyctl does not: it updates it and
    #: leaves it stopped, with no smoke check (superfly/flyctl@ad0172fa
    #: internal/command/deploy/machines_launchinput.go shouldSkipLaunch l.296-315).
    start_stopped: bool = True


class ReconcilerTable(_Table):
    """``[reconciler]``: the background job that fails live releases that are not up."""

    interval_s: float = Field(180.0, gt=0)


class TrafficTable(_Table):
    """``[traffic]``: open-loop requests to the site."""

    rps: float = Field(5.0, ge=0, le=100_000)
    #: fly-proxy starts a stopped machine of the live release on the next request
    #: (superfly/docs reference/fly-proxy-autostop-autostart; the events it writes: assumed).
    #: Off unless a scenario turns it on: Fly sets it per service (``auto_start_machines``).
    autostart: bool = False


class ApiTable(_Table):
    """``[api]``: the Machines API's own faults, drawn per request from the seed (``sim.twin.faults``).

    Fly publishes no rate, latency or wording of any of these: every field is not public:
    assumed, and 0 (the default) is no fault. The kinds of one request exclude each other,
    so their shares may add up to 1 at most.
    """

    #: Seconds each answer is held in world time, and the spread drawn around it (uniform).
    latency_s: float = Field(0.0, ge=0, le=60)
    jitter_s: float = Field(0.0, ge=0, le=60)
    #: Requests answered ``error_status`` with Fly's ``{"error", "status"}`` body, not applied.
    error_share: float = Field(0.0, ge=0, le=1)
    error_status: Literal[500, 502, 503, 504] = 503
    #: Requests answered 429 with ``Retry-After: retry_after_s``, not applied.
    throttle_share: float = Field(0.0, ge=0, le=1)
    retry_after_s: int = Field(1, ge=1, le=3_600)
    #: Requests whose connection is closed with no answer (a reset), not applied.
    reset_share: float = Field(0.0, ge=0, le=1)
    #: Held ``/wait`` requests dropped at a drawn point of their timeout: closed, or 408.
    wait_drop_share: float = Field(0.0, ge=0, le=1)
    wait_drop: Literal["close", "timeout"] = "close"
    #: Reads (``GET`` of the machines or one) answered what the previous same read got.
    stale_share: float = Field(0.0, ge=0, le=1)
    #: Lease requests answered 409: held by someone else (Fly's words, ``ServedApp._hold``).
    lease_held_share: float = Field(0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _shares_fit(self) -> ApiTable:
        mine = max(self.wait_drop_share, self.stale_share, self.lease_held_share)
        if self.error_share + self.throttle_share + self.reset_share + mine > 1:
            raise ValueError("a request's fault shares (error, throttle, reset and the largest "
                             "of wait_drop, stale, lease_held) add up to more than 1")
        return self


class Scenario(_Table):
    """One world: the platform, the previous and new release, the check timing, traffic."""

    name: str
    description: str = ""
    seed: Seed = 0
    #: Simulated seconds; bounded so that no scenario makes a run unbounded.
    horizon_s: float = Field(900.0, gt=0, le=1e6)
    platform: PlatformTable = PlatformTable()
    previous: PreviousTable | None = None
    release: ReleaseTable = ReleaseTable()
    check: CheckTable = CheckTable()
    publish: PublishTable = PublishTable()
    reconciler: ReconcilerTable = ReconcilerTable()
    traffic: TrafficTable = TrafficTable()
    api: ApiTable = ApiTable()
    #: The ground truth that judges every run (``sim.config.truth``): ``serves`` (a crash,
    #: or not started ``truth_window_s`` after the publish) or ``crash`` (a crash only).
    truth: Truth = DEFAULT_TRUTH
    #: flyctl's DefaultWaitTimeout, 5 min (``sim.config.truth`` says why).
    truth_window_s: float = Field(DEFAULT_WINDOW_S, gt=0, le=1e6)
    expect: dict[str, Outcome] = {}

    @property
    def publish_started_ms(self) -> int:
        """The platform time (epoch ms) at which the publish begins: what checks are given."""
        return self.platform.epoch_ms + round(self.publish.at_s * 1000)


def validate(raw: dict[str, Any], source: str) -> Scenario:
    """Validate a raw mapping into a Scenario, or raise BadInput with one line."""
    return validated(Scenario, raw, source)


def load(name_or_path: str, sets: list[str] | None = None) -> Scenario:
    """Load a shipped scenario by name, or a TOML file by path, then apply overrides."""
    return load_settings(Scenario, name_or_path, shipped, "scenario", sets or ())
