"""The Dask scheduler a run is given (`--scheduler ADDRESS`): one place that checks the address, reaches the
scheduler within a bound, and hands back a client; `bill`, `check`, the overview and `trace` all connect here.

The bound is Dask's own connect timeout (its config's `distributed.comm.timeouts.connect`, 30 s unless the user
set it): the address must answer Dask's handshake within it, else the run is one line (distributed itself waits
for the other end's first message without a limit, so a listener that accepts and never answers would hold the
run forever).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kcost.errors import InputError

SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


def connect(address: str) -> Any:
    """A `distributed.Client` of the scheduler at `address` (`tcp://host:port`), else one line saying why not."""
    try:
        # deferred: the [dask] extra, only with --scheduler
        import dask.config
        from dask.utils import parse_timedelta
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler needs Dask's distributed package", field="scheduler",
                         hint="pip install 'kcost[dask]'") from None  # fmt: skip
    check_address(address)
    seconds = float(parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="s") or 30)
    try:
        _handshake(address, seconds)
        return Client(address, timeout=f"{seconds:g}s")  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address}: {exc}", field="scheduler") from None
    except Exception as exc:  # a service that is no Dask scheduler (its answer is no Dask message: MemoryError)
        raise InputError(f"no Dask scheduler at {address} ({type(exc).__name__})", field="scheduler") from None


def check_address(address: str) -> None:
    """An address Dask can dial: `tcp://host:port` (or `tls://`, ...), else one line naming it."""
    try:
        parts = urlsplit(address if "://" in address else f"tcp://{address}")
        usable = parts.scheme in SCHEMES and bool(parts.hostname or parts.path)
        if usable and parts.scheme != "inproc" and parts.port is not None:
            usable = parts.port > 0  # Dask would dial port 0 again and again for its whole timeout
    except ValueError:  # a bracket that opens no IPv6 host (`tcp://[:8786`), a port past 65535
        usable = False
    if not usable:
        raise InputError(f"not a Dask scheduler address: {address!r}", field="scheduler", hint="tcp://host:8786")


def _handshake(address: str, seconds: float) -> None:
    """Dask's handshake with `address`, within `seconds` in all (else `TimeoutError`)."""
    # deferred: start-up: not loaded by a cold bill (bench/bench_startup.py)
    import asyncio

    # deferred: the [dask] extra, only with --scheduler
    from distributed.comm.core import connect as dial

    async def shake() -> None:
        comm = await dial(address, timeout=seconds)  # type: ignore[no-untyped-call]
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(shake(), seconds))
    except TimeoutError:
        raise TimeoutError(f"no answer in {seconds:g} s") from None


def run_tasks(client: Any, work: Any, jobs: list[Any]) -> list[Any]:
    """`work` over `jobs` as tasks on the client's cluster, the results in the jobs' order."""
    futures = client.map(work, jobs, pure=False)
    return list(client.gather(futures))
