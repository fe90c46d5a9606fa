"""One organisation's emulated service backend: the commands of every resource and their scheduled moves."""

from __future__ import annotations

from toolkit.sandbox.engine import Engine
from toolkit.sandbox.ids import new_hex, stream
from toolkit.sandbox.operations import OperationsMixin
from toolkit.sandbox.proofs import workflow_owner
from toolkit.sandbox.queries import QueriesMixin
from toolkit.sandbox.resources import ResourcesMixin
from toolkit.sandbox.state import Org


class Backend(ResourcesMixin, OperationsMixin, QueriesMixin):
    """Commands and state machines of one organisation, driven by the shared :class:`Engine`."""

    def __init__(self, engine: Engine, seed: int, org_index: int, api_key_name: str) -> None:
        setup = stream(seed, org_index, "org")
        org_id = str(new_hex(setup, 16))[2:]
        org = Org(org_id=org_id, owner=workflow_owner(org_id))
        super().__init__(org, engine, seed, org_index, api_key_name)
        self.watcher_rates = {}
        self.forced = {}
        self._op_channel = {}
        self._op_plan = {}
        self._op_clock = {}
        self._op_block = {}
        self._query_selection = {}
        self._query_call = {}
        self._dispatch_rng = stream(seed, org_index, "dispatch")
        self.dispatch_failed = {}
        self._writer_workflow = new_hex(setup, 32)
        self._status_workflow = new_hex(setup, 32)
        self._query_workflow = new_hex(setup, 32)
