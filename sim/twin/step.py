"""A user's deploy step, run as it is, as one row of ``compare``: a process against the twin.

Two ways in (``compare --check-http`` and ``--deploy-cmd``):

- ``check-http``: the testbed publishes as every run does (the world's own update of the
  machines at the publish); the process only judges. Its exit status is the verdict
  (0 live, anything else failed) and the pipeline goes on as with any check
  (``sim.publish.world.conclude``: live and reconciled, or rolled back).
- ``deploy-cmd``: the process does the deploy (it gets ``FLY_IMAGE_REF`` and
  ``FLY_PREVIOUS_IMAGE_REF``), updates the machines, judges and rolls back if it decides
  to. The testbed only observes: the verdict is the exit status, the rollback is what the
  machines run afterwards.

Time: the world runs instantly to the publish, then while the process runs on one of two
clocks (``time_mode``), and instantly from its exit to the horizon. ``virtual`` (the
command line's default): the process and everything it starts read the world's clock
through the preload library of ``sim.vtime`` and sleep on it; the clock stands still
while any of them computes and jumps when all of them wait
(``sim.twin.clock.VirtualDriver``), so the verdict depends neither on the machine's load
nor on a speed. ``scaled`` (this class's default, as before virtual time): the world
runs at ``speed`` simulated seconds per wall second and the process keeps the wall clock
(for programs the library cannot reach: static binaries). The wall clock bounds the process
(``timeout_s``) and decides nothing else: the verdict is the process's, the outcome the
world's ground truth.

No process outlives a run: the process leads its own session, and its whole group is
killed on every way out (exit, timeout, the horizon, an exception, Ctrl-C). POSIX only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from platform_testbed.checks import Look, Verdict
from platform_testbed.sim.config import options
from platform_testbed.sim.config.scenario import Scenario
from platform_testbed.sim.publish import world as worlds
from platform_testbed.sim.publish.runresult import RecordedLook, RunResult, result_in
from platform_testbed.sim.twin.clock import VirtualDriver
from platform_testbed.sim.twin.session import Session, TimeMode, open_session
from platform_testbed.sim.vtime import Unavailable, library_path

__all__ = ["CHECK_HTTP", "DEPLOY_CMD", "MODES", "ProcessStep", "StepTiming"]

Mode = Literal["check-http", "deploy-cmd"]
CHECK_HTTP: Mode = "check-http"
DEPLOY_CMD: Mode = "deploy-cmd"
MODES: tuple[Mode, ...] = (CHECK_HTTP, DEPLOY_CMD)
#: How often the exit of the process is polled (wall s): the decision's grain on the clock.
POLL_S = 0.005
#: Variables a check-http process must not inherit from the shell: with them, a deploy
#: script would deploy, where in this mode the testbed has.
_DEPLOY_ONLY = ("FLY_IMAGE_REF", "FLY_PREVIOUS_IMAGE_REF")
#: The caller's variables a step never gets (issue 32): Fly's own (flyctl prefers
#: FLY_ACCESS_TOKEN over FLY_API_TOKEN, and FLY_API_BASE_URL / FLAPS_BASE_URL point it at an
#: API), so the step under test cannot reach the real platform with the caller's
#: credentials; the twin then sets the ones it serves.
_NOT_INHERITED = ("FLY_", "FLAPS_")
_TAIL_BYTES = 4096
#: What a token the process printed becomes in the row's reason and the JSON.
MASK = "***"


@dataclass(frozen=True, slots=True)
class StepTiming:
    """Wall seconds of one run: the whole of it, and the process's own part."""

    seed: int
    run_s: float
    command_s: float
    clock: str = "scaled"


@dataclass(frozen=True, slots=True)
class _Ended:
    """How the process ended: its status (negative: a signal), or why it was killed."""

    status: int | None
    killed_because: str | None
    stdout_tail: str
    stderr_tail: str
    command_s: float


@dataclass(eq=False)
class ProcessStep:
    """One command run once per seed against a served world; called as ``step(scenario, seed, bad)``."""

    mode: Mode
    argv: tuple[str, ...]
    name: str
    timeout_s: float = float(options.option("http_timeout_s").default or 0)
    speed: float = 1.0
    time_mode: TimeMode = "scaled"
    timings: list[StepTiming] = field(default_factory=list)
    #: Why virtual time could not run here (then the runs are scaled), once said.
    unavailable: str | None = None

    def clock(self) -> tuple[TimeMode, Path | None]:
        """The clock the next run uses, and the preload library for a virtual one."""
        if self.time_mode == "scaled" or self.unavailable is not None:
            return "scaled", None
        try:
            return "virtual", library_path()
        except Unavailable as why:
            self.unavailable = str(why)
            print(f"{self.name}: {why}; this row runs on scaled time (speed {self.speed:g})",
                  file=sys.stderr)
            return "scaled", None

    def __call__(self, scenario: Scenario, seed: int, bad: bool | None = None) -> RunResult:
        """Run the process in ``seed``'s world; its row, judged against ``bad`` (None: the oracle's)."""
        wall0 = time.monotonic()
        mode, library = self.clock()
        session = open_session(scenario, seed, speed=self.speed, time_mode=mode,
                               testbed_publishes=self.mode == CHECK_HTTP)
        try:
            ended = self._run(session, library)
            error = self._conclude(session, ended)
        except BaseException:
            session.close(finish=False)
            raise
        session.close(finish=True)  # the rest of the horizon, instantly
        if bad is None:
            bad = worlds.ground_truth(scenario, seed)
        result = self._result(session, scenario, seed, bad, error)
        self.timings.append(StepTiming(seed, time.monotonic() - wall0, ended.command_s, mode))
        return result

    # -- the process ------------------------------------------------------------------------

    def environment(self, session: Session, library: Path | None = None,
                    home: Path | None = None) -> dict[str, str]:
        """The process's environment, built: the caller's less Fly's, the twin's API variables.

        No ``FLY_*`` or ``FLAPS_*`` variable of the caller's reaches the step (no real token,
        no real API address); the twin's ``FLY_API_HOSTNAME``, ``FLY_API_TOKEN``,
        ``FLY_APP_NAME``, ``FLAPS_BASE_URL`` (and the images) take their place. ``home``: a
        scratch folder for ``HOME``, so a stored login (``~/.fly/config.yml``) is not read.
        On virtual time, ``library`` goes first in ``LD_PRELOAD`` and the shared clock's
        file is named, so every process the step starts reads the world's clock.
        """
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(_NOT_INHERITED) and k not in _DEPLOY_ONLY}
        given = session.environment()
        if self.mode == CHECK_HTTP:
            given.pop("FLY_IMAGE_REF", None)
        else:
            previous = session.app.world.previous
            if previous is not None:
                given["FLY_PREVIOUS_IMAGE_REF"] = previous.ref
        if home is not None:
            given["HOME"] = str(home)
        if library is not None and session.shared is not None:
            given |= session.shared.environment()
            preload = env.get("LD_PRELOAD", "").strip()
            given["LD_PRELOAD"] = f"{library} {preload}" if preload else str(library)
        return env | given

    def _run(self, session: Session, library: Path | None) -> _Ended:
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryDirectory(prefix="testbed-home-") as home:
            start = time.monotonic()
            try:
                proc = subprocess.Popen(
                    list(self.argv), env=self.environment(session, library, Path(home)),
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                )
            except OSError as error:  # e.g. a script with no #! line: the run's error
                return _Ended(None, f"could not be started ({error.strerror or error})", "", "", 0.0)
            if isinstance(session.driver, VirtualDriver):
                session.driver.attach(proc.pid)
            why: str | None = None
            try:
                why = _await(proc, start + self.timeout_s, session, self.timeout_s)
            finally:
                _kill_group(proc)
            command_s = time.monotonic() - start
            secrets = _secrets(session)
            return _Ended(proc.returncode if why is None else None, why,
                          _tail(out, secrets), _tail(err, secrets), command_s)

    # -- the world's side -------------------------------------------------------------------

    def _conclude(self, session: Session, ended: _Ended) -> str | None:
        """Hand the outcome to the world at the instant the process ended; the run's error, if any."""
        if ended.killed_because is not None:
            return _with_stderr(ended.killed_because, ended.stderr_tail)
        status = ended.status
        assert status is not None
        if status < 0:
            return _with_stderr(f"was killed by signal {_signal_name(-status)}", ended.stderr_tail)
        # The reason: the last line on stdout, else the last on stderr (documented in --check-http's help).
        verdict = Verdict(status == 0, _reason(status, ended.stdout_tail or ended.stderr_tail),
                          layer=self.mode)
        try:
            return session.driver.call(lambda: self._hand_over(session, verdict))
        except RuntimeError:
            # The world reached its horizon as the process exited: nobody steps it now.
            return self._hand_over(session, verdict)

    def _hand_over(self, session: Session, verdict: Verdict) -> str | None:
        world = session.app.world
        if self.mode == CHECK_HTTP:
            worlds.conclude(world, verdict)
            return None
        if session.app.publish_started_ms is None:
            return f"never updated a machine to the release image (FLY_IMAGE_REF); {verdict.reason}"
        images = {m.image.ref if m.image is not None else None for m in world.machines
                  if m not in world.destroyed}  # a machine the step destroyed is not the app's
        observed: str | None
        if world.previous is not None and images == {world.previous.ref}:
            observed = "restored"
        elif images == {world.release.ref}:
            observed = None if verdict.ok else "none"
        else:
            observed = "mixed"
        # The testbed observes: it takes the process's word for the release (live or
        # failed) and leaves the machines as the process left them.
        worlds.conclude(world, verdict, rolls_back=False)
        world.rollback = observed
        return None

    def _result(
        self, session: Session, scenario: Scenario, seed: int, bad: bool, error: str | None
    ) -> RunResult:
        world = session.app.world
        # The world ran on a wall-clock epoch (timestamps the process can compare with its
        # own clock); the row is in the scenario's, as every other check's.
        shift = world.scenario.platform.epoch_ms - scenario.platform.epoch_ms
        tally = world.site.tally(world.publish_at_s, scenario.horizon_s, scenario.traffic.rps,
                                 world.traffic_seed)
        return result_in(
            world, self.name, seed=seed, site=tally,
            verdict=None if error is not None else world.verdict,
            decided_at_s=None if error is not None else world.decided_at_s,
            looks=[_shifted(look, shift) for look in session.app.recorded],
            bad=bad, error=error)


def _await(proc: subprocess.Popen[bytes], deadline: float, session: Session, limit_s: float) -> str | None:
    """Wait for the process to exit without reaping it; why it must be killed, if it must."""
    while True:
        # WNOWAIT: the process stays a zombie, so its id (and its group's) stays taken
        # until ``_kill_group`` has killed whatever it left running.
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return None
        if time.monotonic() >= deadline:
            return f"did not exit within {limit_s:g} s of wall time (--http-timeout): killed"
        if session.driver.ended.is_set():
            horizon = session.app.scenario.horizon_s
            return f"still running at the world's horizon ({horizon:g} s simulated): killed"
        time.sleep(POLL_S)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the process's group (it and anything it started), then reap the process."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(stream: IO[bytes], secrets: list[str]) -> str:
    """The stream's last non-blank line, its spaces squeezed, tokens masked, at most 200 characters."""
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(max(0, size - _TAIL_BYTES))
    text = _masked(stream.read().decode("utf-8", "replace"), secrets)  # before any cut
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:200] if lines else ""


def _secrets(session: Session) -> list[str]:
    """The tokens a row must not show: the twin's, and any the caller holds for Fly."""
    held = [v for k, v in os.environ.items() if k.startswith(_NOT_INHERITED) and "TOKEN" in k]
    return sorted({t for t in (session.token, *held) if len(t) >= 4}, key=len, reverse=True)


def _masked(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    return text


def _with_stderr(text: str, stderr_tail: str) -> str:
    return f"{text} (stderr: {stderr_tail})" if stderr_tail else text


def _reason(status: int, last_line: str) -> str:
    said = f": {last_line}" if last_line else ""
    return f"exit {status}{said}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _shifted(recorded: RecordedLook, shift_ms: int) -> RecordedLook:
    """A look moved ``shift_ms`` earlier on the platform clock (its events too)."""
    if shift_ms == 0:
        return recorded
    look = recorded.look
    machines = tuple(
        m._replace(at_ms=m.at_ms - shift_ms,
                   events=tuple(e._replace(timestamp=e.timestamp - shift_ms) for e in m.events))
        for m in look.machines)
    # The pre-deploy states are states, not times: they go with the look unchanged.
    return RecordedLook(Look(look.at_ms - shift_ms, machines, look.pre_deploy), recorded.dropped)
