"""Which DON signers a verifier trusts, and which workflow owner it expects: options, environment, defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .. import spec
from ..errors import UsageError
from .crypto import keccak256, parse_address, workflow_owner_from_org_id
from .rules import Policy

#: The production signer set the official SDK publishes (crec-sdk ``options.go``, ``DefaultValidSigners``: the ten
#: Zone A workflow node keys that sign events on Ethereum Mainnet). The SDK's docs name a newer PierTwo key
#: (``0xedf4…19be``) than its main branch; this is the main branch's list. Pass ``--signers`` when they change.
DEFAULT_SIGNERS: tuple[str, ...] = (
    "0xff9b062fccb2f042311343048b9518068370f837",  # chainlayer-wf-zone-a-1
    "0xe55fcaf921e76c6bbcf9415bba12b1236f07b0c3",  # clp-cre-wf-zone-a-0
    "0x4d6cfd44f94408a39fb1af94a53c107a730ba161",  # dextrac-wf-zone-a-3
    "0xde5cd1dd4300a0b4854f8223add60d20e1dfe21b",  # fiews-wf-zone-a-2
    "0xf3baa9a99b5ad64f50779f449bac83baac8bfdb6",  # inotel-wf-zone-a-4
    "0xd7f22fb5382ff477d2ff5c702cab0ef8abf18233",  # linkforest-wf-zone-a-5
    "0xcdf20f8ffd41b02c680988b20e68735cc8c1ca17",  # linkpool-wf-zone-a-0
    "0x4d7d71c7e584cfa1f5c06275e5d283b9d3176924",  # linkriver-wf-zone-a-6
    "0x1a89c98e75983ec384ad8e83eaf7d0176eeaf155",  # piertwo-wf-zone-a-7
    "0x4f99b550623e77b807df7cbed9c79d55e1163b48",  # simplyvc-wf-zone-a-8
)

ENV_ORG_ID = "CREC_ORG_ID"
ENV_WORKFLOW_OWNER = "CREC_WORKFLOW_OWNER"
ENV_SIGNERS = "CREC_DON_SIGNERS"


def parse_signers(value: str) -> frozenset[bytes]:
    """Signer addresses from a comma-separated list, or from a file of them (one or more a line, ``#`` comments)."""
    text = value
    path = Path(value).expanduser()
    if "," not in value and not value.strip().lower().startswith("0x"):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(
                f"--signers: {value!r} is neither addresses nor a readable file ({exc.strerror or exc}); "
                "pass 0xADDR,0xADDR,... or a file of addresses"
            ) from None
    words = [w for line in text.splitlines() for w in line.split("#", 1)[0].replace(",", " ").split()]
    if not words:
        raise UsageError(f"--signers: no address in {value!r}; pass 0xADDR,0xADDR,... or a file of addresses")
    try:
        return frozenset(parse_address(w) for w in words)
    except ValueError as exc:
        raise UsageError(f"--signers: {exc}") from None


def fingerprint(signers: frozenset[bytes]) -> str:
    """The signer set as stored with each verdict: its sorted addresses, comma-separated (lower-case hex)."""
    return ",".join("0x" + s.hex() for s in sorted(signers))


def set_digest(signers: frozenset[bytes]) -> str:
    """A short name of a signer set for messages (first 8 hex digits of the Keccak-256 of its fingerprint)."""
    return keccak256(fingerprint(signers).encode()).hex()[:8]


def resolve_policy(
    *,
    org_id: str | None = None,
    workflow_owner: str | None = None,
    signers: str | None = None,
    min_signatures: int | None = None,
    check_workflow: bool = False,
    env: Mapping[str, str] | None = None,
) -> Policy:
    """The :class:`Policy` from options, else the environment (``CREC_ORG_ID``, ``CREC_WORKFLOW_OWNER``,
    ``CREC_DON_SIGNERS``), else the defaults (the SDK's signer set, a minimum of 4). The owner is required: given
    directly or derived from the organisation id; both, or neither, is a usage error that says what to set.
    ``check_workflow``: reports must also carry the event's workflow execution id (:attr:`Policy.check_workflow`)."""
    env = os.environ if env is None else env
    org_id = org_id if org_id is not None else env.get(ENV_ORG_ID) or None
    workflow_owner = workflow_owner if workflow_owner is not None else env.get(ENV_WORKFLOW_OWNER) or None
    if org_id and workflow_owner:
        raise UsageError("give the organisation id (--org-id, CREC_ORG_ID) or the workflow owner, not both")
    if not org_id and not workflow_owner:
        raise UsageError(
            "verification needs the organisation: pass --org-id ORG (or set CREC_ORG_ID), "
            "or --workflow-owner 0xADDR (or CREC_WORKFLOW_OWNER)"
        )
    if workflow_owner:
        try:
            owner = parse_address(workflow_owner)
        except ValueError as exc:
            raise UsageError(f"--workflow-owner: {exc}") from None
    else:
        owner = workflow_owner_from_org_id(str(org_id))
    listed = signers if signers is not None else env.get(ENV_SIGNERS) or None
    trusted = parse_signers(listed) if listed else frozenset(parse_address(a) for a in DEFAULT_SIGNERS)
    minimum = min_signatures if min_signatures is not None else spec.PROOF_MIN_SIGNATURES
    if minimum < 1:
        raise UsageError(f"--min-signatures must be at least 1, not {minimum}")
    if minimum > len(trusted):
        raise UsageError(f"--min-signatures {minimum} exceeds the {len(trusted)} trusted signers; no proof could pass")
    return Policy(owner=owner, signers=trusted, min_signatures=minimum, check_workflow=check_workflow)
