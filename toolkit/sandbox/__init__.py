"""The sandbox: a local emulator of the Channel-Based Chain Operations Service.

It imports nothing of the toolkit but :mod:`toolkit.spec`. ``Sandbox(...)`` builds the seeded state; ``sb.app`` is
the ASGI app; ``sb.serve()`` runs it with uvicorn on 127.0.0.1 in a thread; ``serve.run_server`` blocks.

Modules, one job each::

    sandbox.py     Sandbox: organisations, clock, engine, faults, the app; sync/advance/truth/serve
    truth.py       read-only view of one organisation for tests
    clock.py       simulated clock (frozen, or wall time x speed)
    engine.py      heap of timed transitions run in time order
    networks.py    per-network timing/failure models and the Network records
    backend.py     one organisation's backend = core + resources + operations + queries
    core.py        RNG streams, event emission with proofs
    resources.py   wallets, channels, watchers (and watcher.event generation)
    operations.py  operations: drafts, finalize/cancel/expiry, relay and finality ladder
    queries.py     chain queries: idempotency, DON callback, TTL expiry
    scenarios.py   the seeded history, made by running the same backend over the simulated clock
    state.py       per-organisation store; eventlog.py: per-channel log of pre-serialised events
    proofs.py      OCR proofs, verifiable blobs, event hashes (Keccak-256); ids.py: deterministic ids
    don.py         the DON: 10 seed-derived secp256k1 keys, 4 sign each report; forgeries; /sandbox/signers
    app.py         raw ASGI app: auth, routing, faults, control API; router.py: route table
    reads.py, writes.py, events_api.py   endpoint handlers; validate.py, params.py: input checks
    schemas.py     bodies, responses and query parameters as JSON Schema (what validate/params check)
    openapi.py     the OpenAPI description served at /v1/openapi.json, built from schemas.py and the routes
    messages.py    request/response values and envelopes; apierror.py: the ApplicationError exception
    faults.py      seeded fault injection; serve.py: uvicorn in a thread, run_server
"""

from toolkit.sandbox.sandbox import Sandbox

__all__ = ["Sandbox"]
