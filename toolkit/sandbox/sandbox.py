"""The :class:`Sandbox`: a local emulator of the whole service, seeded with history, served over ASGI."""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from toolkit.sandbox.app import SandboxApp
from toolkit.sandbox.backend import Backend
from toolkit.sandbox.clock import SimClock
from toolkit.sandbox.don import committee, signer_info
from toolkit.sandbox.engine import Engine
from toolkit.sandbox.faults import FaultConfig, FaultInjector
from toolkit.sandbox.scenarios import SHAPES, Scenario
from toolkit.sandbox.truth import Truth

if TYPE_CHECKING:
    from toolkit.sandbox.inprocess import InProcessTransport
    from toolkit.sandbox.serve import ServerHandle


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Sandbox:
    """The emulated service for a set of organisations.

    The first key of ``orgs`` holds the seeded history (``days`` of it, ``operations_per_day``, ending at ``start``);
    the other keys are onboarded but empty; ``not_onboarded`` keys answer 401 ``ORGANIZATION_NOT_FOUND``. ``speed``
    is simulated seconds per wall second (0 = a frozen clock moved only by :meth:`advance`). The fault rates apply
    to ``/v1`` (never to the health check, the OpenAPI description nor ``/sandbox``); a 429 of ``rate_limit`` (a
    token bucket) or of ``limit_rate`` (at random, whatever the pace) carries ``Retry-After: rate_limit_retry_after``
    only when that is set. ``shape`` lays the seeded history out as one of
    :data:`~toolkit.sandbox.scenarios.SHAPES` (``one-channel``, ``many-channels``, ``many-transactions``,
    ``long-lived``, ``query-heavy``, ``messy``; default the usual five channels). Proofs are signed by a committee
    of keys derived from ``seed`` (:meth:`signers`); ``forge_share`` of them are forged, each in one way of
    :data:`~toolkit.sandbox.don.FORGERIES`.
    """

    def __init__(
        self,
        orgs: Iterable[str] = ("sandbox-key",),
        not_onboarded: Iterable[str] = (),
        seed: int = 7,
        days: float = 3,
        operations_per_day: float = 400,
        empty: bool = False,
        speed: float = 0.0,
        start: int | None = None,
        fail_rate: float = 0.0,
        rate_limit: float | None = None,
        rate_limit_retry_after: float | None = None,
        limit_rate: float = 0.0,
        slow_rate: float = 0.0,
        slow_seconds: float = 5.0,
        truncate_rate: float = 0.0,
        drop_rate: float = 0.0,
        malformed_rate: float = 0.0,
        shape: str = "default",
        forge_share: float = 0.0,
    ) -> None:
        if isinstance(orgs, str):
            orgs = (orgs,)
        if isinstance(not_onboarded, str):
            not_onboarded = (not_onboarded,)
        if shape not in SHAPES:
            raise ValueError(f"unknown scenario shape {shape!r}; known: {', '.join(SHAPES)}")
        if not 0.0 <= forge_share <= 1.0:
            raise ValueError(f"forge_share must be between 0 and 1, not {forge_share!r}")
        keys = list(dict.fromkeys(orgs))
        if not keys:
            raise ValueError("at least one onboarded organisation key is needed")
        self.seed = seed
        self.start = int(start) if start is not None else int(time.time()) // 60 * 60
        self.lock = threading.RLock()
        self._clock = SimClock(self.start, speed)
        seeded = not empty and days > 0
        self._engine = Engine(self.start - int(days * 86400) if seeded else self.start)
        self._backends: dict[str, Backend] = {}
        for index, key in enumerate(keys):
            self._backends[key] = Backend(self._engine, seed, index, api_key_name=f"sandbox-org-{index + 1}")
            self._backends[key].forge_share = forge_share
        self._not_onboarded = frozenset(not_onboarded) - set(keys)
        with _gc_paused():  # the backfill allocates many long-lived containers; cyclic GC passes only cost time
            if seeded:
                Scenario(
                    self._backends[keys[0]],
                    seed,
                    self.start,
                    days,
                    operations_per_day,
                    live=speed > 0,
                    shape=SHAPES[shape],
                ).schedule()
            self._engine.run_until(self.start)
        config = FaultConfig(
            fail_rate=fail_rate,
            rate_limit=rate_limit,
            retry_after=rate_limit_retry_after,
            limit_rate=limit_rate,
            slow_rate=slow_rate,
            slow_seconds=slow_seconds,
            truncate_rate=truncate_rate,
            drop_rate=drop_rate,
            malformed_rate=malformed_rate,
        )
        self.app = SandboxApp(self, FaultInjector(config, seed))

    def __repr__(self) -> str:
        return f"<Sandbox orgs={len(self._backends)} seed={self.seed} now={self._clock.now}>"

    @property
    def now(self) -> int:
        """Simulated unix seconds."""
        return self._clock.now

    def sync(self) -> int:
        """Run every transition due by the clock's current time; answer that time."""
        with self.lock:
            now = self._clock.now
            self._engine.run_until(now)
            return now

    def advance(self, seconds: int) -> int:
        """Move the simulated clock forward and run every transition that falls due; answer the new time."""
        with self.lock:
            self._clock.advance(int(seconds))
            return self.sync()

    def backend_for(self, key: str) -> Backend | None:
        """The backend of an onboarded key, or ``None``."""
        return self._backends.get(key)

    def is_not_onboarded(self, key: str) -> bool:
        """Whether ``key`` is known but its organisation is not onboarded."""
        return key in self._not_onboarded

    @property
    def signers(self) -> list[str]:
        """The addresses of the DON nodes that sign this sandbox's proofs (the same for every organisation)."""
        return committee(self.seed).addresses

    def signer_info(self, org_key: str) -> dict:
        """What a verifier needs for an organisation: the signer addresses, the minimum, its org id and owner."""
        backend = self._backends.get(org_key)
        if backend is None:
            raise KeyError("not an onboarded organisation key")
        return signer_info(backend.org.org_id, backend.org.owner, self.signers)

    def truth(self, org_key: str) -> Truth:
        """A read-only view of an onboarded organisation's state, for tests."""
        backend = self._backends.get(org_key)
        if backend is None:
            raise KeyError("not an onboarded organisation key")
        return Truth(self, backend)

    def transport(self) -> InProcessTransport:
        """An httpx transport answered by this sandbox in the caller's thread (no socket; no fault injection): pass
        it as ``transport=`` with :data:`~toolkit.sandbox.inprocess.BASE_URL` as the base URL."""
        from toolkit.sandbox.inprocess import InProcessTransport

        return InProcessTransport(self.app)

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> ServerHandle:
        """Serve over HTTP with uvicorn in a daemon thread; returns once the server answers."""
        from toolkit.sandbox.serve import start_server

        return start_server(self.app, host, port)
