"""A server running the platform's four containers as its compose file describes them."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

import simpy

COMPONENTS = ("api", "orchestrator", "gateway", "publishing-worker")

#: What the health endpoint answers: 200, 503 while draining, or nothing (not listening).
HealthAnswer = Literal["ok", "draining", "refused"]


@dataclass(frozen=True, slots=True)
class ComposeFile:
    """The services a compose file declares; the image tag comes from the deploy's environment."""

    services: tuple[str, ...]

    def without(self, service: str) -> ComposeFile:
        """The same file with one service left out (how a copy drifts)."""
        return ComposeFile(tuple(s for s in self.services if s != service))


FULL_COMPOSE = ComposeFile(COMPONENTS)


class Server:
    """Containers, the api's listener and health endpoint, and the on-disk compose file.

    ``compose_up`` reconciles containers to the compose file on disk at that moment:
    services not in the file are removed (orphans), missing ones start after ``delay_s``.
    That is the whole race: whoever writes the file last decides which containers run.
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        release: str,
        template: ComposeFile,
        on_change: Callable[[], None],
    ) -> None:
        self.env = env
        self.name = name
        self.release = release
        #: The compose file the watchdog restores from (its own copy, or the published one).
        self.template = template
        self.compose = FULL_COMPOSE
        self.running: dict[str, str] = dict.fromkeys(COMPONENTS, release)
        #: Services starting: the release and which ``compose_up`` started them.
        self.pending: dict[str, tuple[str, int]] = {}
        self._ups = 0
        self.listening = True
        self.draining = False
        self.lock = simpy.Resource(env, capacity=1)
        self._on_change = on_change

    def health(self) -> HealthAnswer:
        """The health endpoint's answer right now."""
        if not self.listening:
            return "refused"
        return "draining" if self.draining else "ok"

    def begin_drain(self) -> None:
        """Answer 503 on the health endpoint; real requests are still served."""
        self.draining = True
        self._on_change()

    def stop_listening(self) -> None:
        """Close the api's listener: requests routed here from now on get 502."""
        self.listening = False
        self._on_change()

    def stop_all(self) -> None:
        """The old containers have exited (or were killed)."""
        self.running.clear()
        self.pending.clear()
        self.listening = False
        self.draining = False
        self._on_change()

    def write_compose(self, compose: ComposeFile) -> None:
        """Replace the compose file on disk."""
        self.compose = compose

    def compose_up(self, release: str, delay_s: float) -> bool:
        """Reconcile containers to the file on disk; True if anything changed."""
        wanted = self.compose.services
        orphans = [c for c in (*self.running, *self.pending) if c not in wanted]
        for service in orphans:
            self.running.pop(service, None)
            self.pending.pop(service, None)
        missing = [c for c in wanted if c not in self.running and c not in self.pending]
        self._ups += 1
        for service in missing:
            self.pending[service] = (release, self._ups)
        if missing:
            self.env.process(self._boot(delay_s, self._ups))
        if "api" in orphans:
            self.listening = False
            self._on_change()
        return bool(orphans or missing)

    def _boot(self, delay_s: float, up: int) -> Generator[simpy.Event, Any, None]:
        yield self.env.timeout(delay_s)
        # Only what this up started and is still pending comes up: a later rewrite of the
        # compose file may have dropped a service in the meantime.
        for service, (release, started_by) in list(self.pending.items()):
            if started_by == up:
                self.running[service] = release
                del self.pending[service]
        if "api" in self.running and not self.listening:
            self.listening = True
            self.draining = False
            self._on_change()

    def missing(self, release: str) -> tuple[str, ...]:
        """Components not running the given release, in the canonical order."""
        return tuple(c for c in COMPONENTS if self.running.get(c) != release)
