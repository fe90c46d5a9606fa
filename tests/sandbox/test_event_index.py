"""``Truth.event_index`` answers from the event log's index what decoding every served event answers."""

from __future__ import annotations

from collections import Counter

from toolkit.sandbox import Sandbox

KEY = "ck_test_event-index-4b1e"


def test_the_event_index_matches_the_served_events_duplicates_included() -> None:
    # the messy shape serves some events twice under the same id at a later offset
    sandbox = Sandbox(orgs=(KEY,), seed=7, days=0.5, operations_per_day=400, shape="messy", start=1_795_000_000)
    truth = sandbox.truth(KEY)
    duplicated = 0
    for channel in truth.channels:
        cid = channel["channel_id"]
        served = [(e["headers"]["offset"], e["event_id"], e["headers"]["type"]) for e in truth.events(cid)]
        assert [(o, i, t) for o, i, t, _ in truth.event_index(cid)] == served
        duplicated += sum(n - 1 for n in Counter(i for _, i, _ in served).values())
    assert duplicated > 0, "the seed serves duplicates: the index must repeat an id at two offsets"
