"""A Dask scheduler's address, judged and reached before any world runs.

``testbed sweep --dask ADDRESS`` calls ``check_scheduler`` first: a malformed address
(``inproc://``, which only means something inside one process, said "not enough values to
unpack" once calibration had run worlds) is refused by its rule, a closed port at once,
and a listener that accepts but never speaks after ``DASK_TIMEOUT_S``: distributed's own
connect reads the scheduler's handshake with no timeout (``distributed/comm/core.py``,
``await comm.read()`` after the connect), so ``Client(timeout=...)`` waited past 60 s.

A scheduler that answered that check and then went silent held the sweep's own ``Client``
the same way (``Client(address, timeout="2s")`` at a silent listener: still waiting at
40 s), and one that goes silent mid-sweep held the wait for results for ever: the client
sends heartbeats but never asks for an answer. ``connect_client`` bounds the whole start
and ``completed`` asks the scheduler for a reply after each quiet ``HEARTBEAT_S``, each
within ``DASK_TIMEOUT_S``, and ends in one line (BadInput, exit 2).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from platform_testbed.sim.config.settings import BadInput
from platform_testbed.sim.runtime import installs

if TYPE_CHECKING:
    from distributed import Client, Future

#: Seconds to reach a scheduler and read its handshake. Assumed: a scheduler on a
#: reachable network answers within a second; 10 s is what the sweep's Client waits.
DASK_TIMEOUT_S = 10.0
#: Seconds without a finished task before ``completed`` asks the scheduler for a reply.
#: Assumed: twice distributed's own client heartbeat (``distributed.client.heartbeat``,
#: 5 s); a silent scheduler is then noticed within HEARTBEAT_S + DASK_TIMEOUT_S.
HEARTBEAT_S = 10.0
#: The transports a scheduler listens on that another process can reach.
SCHEMES = ("tcp", "tls", "ws", "wss")
_RULE = "must be tcp://HOST:PORT (or tls://, ws://, wss://; a bare HOST:PORT is tcp), PORT 1-65535"


def scheduler_address(text: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a ``--dask`` address, or BadInput naming the rule."""
    scheme, sep, rest = text.strip().partition("://")
    if not sep:
        scheme, rest = "tcp", text.strip()
    if scheme not in SCHEMES:
        hint = " (inproc:// is this process's own, no other can reach it)" if scheme == "inproc" else ""
        raise BadInput(f"--dask: {_RULE}{hint} (got {text!r})")
    host, colon, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:8786
    if not (colon and host and port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise BadInput(f"--dask: {_RULE} (got {text!r})")
    if any(c.isspace() or c in "/?#@" for c in host) or not host.isprintable():
        raise BadInput(f"--dask: {_RULE}; HOST is a name or an IP address (got {text!r})")
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise BadInput(f"--dask: {_RULE}; HOST is a name or an IP address "
                           f"(got {text!r})") from None
    return scheme, host, int(port)


def check_scheduler(text: str, timeout_s: float | None = None) -> str:
    """The address, once a scheduler there has answered the handshake within ``timeout_s``
    (default ``DASK_TIMEOUT_S``).

    BadInput (one line) for a malformed address, a host or port nobody listens on (at
    once: refused), and no connection or no handshake within the timeout.
    """
    scheme, host, port = scheduler_address(text)
    timeout_s = DASK_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except TimeoutError:
        raise BadInput(f"--dask {text}: cannot reach the scheduler (no connection within "
                       f"{timeout_s:g} s)") from None
    except OSError as error:  # refused, no such host, no route: known at once
        raise BadInput(f"--dask {text}: cannot reach the scheduler "
                       f"({error.strerror or error})") from None
    try:
        from distributed.comm import connect  # noqa: PLC0415 -- only with --dask
    except ImportError:
        raise BadInput(f"--dask: Dask distributed is not installed ({installs.DASK})") from None
    address = f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}"
    left = max(deadline - time.monotonic(), 0.1)

    async def handshake() -> None:
        # wait_for bounds the handshake's read too, which connect's own timeout does not.
        comm = await asyncio.wait_for(connect(address, timeout=left), left)
        await comm.close()

    try:
        asyncio.run(handshake())
    except TimeoutError:
        raise BadInput(f"--dask {text}: the scheduler did not answer within {timeout_s:g} s "
                       "(is it a Dask scheduler?)") from None
    except Exception as error:  # distributed's own: a wrong protocol, TLS without certificates
        raise BadInput(f"--dask {text}: cannot speak to the scheduler "
                       f"({type(error).__name__}: {' '.join(str(error).split())[:200]})") from None
    return address


def connect_client(address: str, timeout_s: float | None = None) -> Client:
    """A Dask ``Client`` of the scheduler at ``address``, started within ``timeout_s``
    (default ``DASK_TIMEOUT_S``), or BadInput naming the address and the bound.

    ``Client(timeout=...)`` bounds the TCP connect and the scheduler's first reply but not
    the handshake read in between; here the whole start runs under distributed's own
    ``callback_timeout`` (``distributed.utils.sync``), and a client that did not start is
    closed, so its IO loop thread ends with it.
    """
    try:
        from distributed import Client  # noqa: PLC0415 -- only with --dask
    except ImportError:
        raise BadInput(f"--dask: Dask distributed is not installed ({installs.DASK})") from None
    bound = DASK_TIMEOUT_S if timeout_s is None else timeout_s

    class _Bounded(Client):  # type: ignore[misc]  # distributed is untyped here
        def start(self, **kwargs: Any) -> None:
            try:
                super().start(callback_timeout=bound, **kwargs)
            except BaseException:
                self.close(timeout=bound)
                raise

    try:
        client: Client = _Bounded(address, timeout=bound)
    except TimeoutError:
        raise BadInput(f"--dask {address}: the scheduler did not answer within {bound:g} s "
                       "(it answered the first check, then went silent)") from None
    except Exception as error:
        raise BadInput(f"--dask {address}: cannot reach the scheduler "
                       f"({' '.join(str(error).split())[:200]})") from None
    return client


def scatter(client: Client, data: Any, address: str, timeout_s: float | None = None) -> Any:
    """``data`` scattered to every worker (``Client.scatter(broadcast=True)``), within
    ``timeout_s`` (default ``DASK_TIMEOUT_S``), else BadInput: a scheduler that went silent
    once connected would otherwise hold the scatter for ever."""
    bound = DASK_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        # ``Client.scatter(timeout=...)`` bounds only its wait for workers, not the
        # scheduler's replies (measured: a silent relay held it until the test cut it at
        # 30 s), and it does not pass ``callback_timeout`` on: the coroutine it runs, under
        # distributed's own bound on the whole call, as ``completed`` asks the scheduler.
        return client.sync(client._scatter, data, broadcast=True, callback_timeout=bound)
    except Exception:  # a timeout, or the connection lost: either way, no answer
        raise BadInput(f"--dask {address}: the scheduler stopped answering (no reply within "
                       f"{bound:g} s while the work went to its workers)") from None


def completed(client: Client, futures: Sequence[Future], address: str,
              heartbeat_s: float | None = None, timeout_s: float | None = None) -> Iterator[Future]:
    """``futures`` in the order they finish (as ``distributed.as_completed``), with a
    heartbeat: after ``heartbeat_s`` (default ``HEARTBEAT_S``) with none finished, the
    scheduler must answer within ``timeout_s`` (default ``DASK_TIMEOUT_S``), else BadInput.

    Long tasks are fine: a scheduler that answers keeps the wait going.
    """
    from distributed import as_completed  # noqa: PLC0415 -- only with --dask

    quiet_s = HEARTBEAT_S if heartbeat_s is None else heartbeat_s
    bound = DASK_TIMEOUT_S if timeout_s is None else timeout_s
    pending = as_completed(futures)
    quiet_since = time.monotonic()
    while True:
        if pending.has_ready():
            yield from pending.next_batch(block=False)
            quiet_since = time.monotonic()
        elif pending.is_empty():
            return
        elif time.monotonic() - quiet_since >= quiet_s:
            try:
                client.sync(client.scheduler.identity, callback_timeout=bound)
            except Exception:  # a timeout, or the connection lost: either way, no answer
                raise BadInput(f"--dask {address}: the scheduler stopped answering (no reply "
                               f"within {bound:g} s while the sweep waited for its tasks)") from None
            quiet_since = time.monotonic()
        else:
            time.sleep(0.05)  # as distributed's own as_completed polls (every 0.1 s)
