"""A Dask scheduler's address, judged and reached before any world runs.

``testbed sweep --dask ADDRESS`` calls ``check_scheduler`` first: a malformed address
(``inproc://``, which only means something inside one process, said "not enough values to
unpack" once calibration had run worlds) is refused by its rule, a closed port at once,
and a listener that accepts but never speaks after ``DASK_TIMEOUT_S``: distributed's own
connect reads the scheduler's handshake with no timeout (``distributed/comm/core.py``,
``await comm.read()`` after the connect), so ``Client(timeout=...)`` waited past 60 s.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time

from platform_testbed.sim.config.settings import BadInput

#: Seconds to reach a scheduler and read its handshake. Assumed: a scheduler on a
#: reachable network answers within a second; 10 s is what the sweep's Client waits.
DASK_TIMEOUT_S = 10.0
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
        raise BadInput("--dask: Dask distributed is not installed (pip install "
                       "'platform-simulator-testbed[dask]')") from None
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
