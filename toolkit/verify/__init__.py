"""DON proof verification over the warehouse: every proof-bearing event checked by the official SDK's rules.

``rules`` checks one event (:func:`verify_event`); ``crypto`` holds Keccak-256 and secp256k1 recovery through
pycryptodome and coincurve; ``signers`` resolves the trusted signers and the expected workflow owner; ``run``
verifies the warehouse in batches on every core and stores the verdicts in ``event_verifications``. This package
reads the warehouse, never the service.
"""

from __future__ import annotations

from .rules import Policy, Result, verify_event
from .signers import DEFAULT_SIGNERS, resolve_policy

__all__ = ["DEFAULT_SIGNERS", "Policy", "Result", "resolve_policy", "verify_event"]
