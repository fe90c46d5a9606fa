"""The /v1 route table: (method, path pattern) -> handler, with ``{}`` segments passed as arguments."""

from __future__ import annotations

from collections.abc import Callable

from toolkit.sandbox import events_api, reads, writes
from toolkit.sandbox.messages import Response

Handler = Callable[..., Response]

ROUTES: dict[tuple[str, ...], dict[str, Handler]] = {
    ("networks",): {"GET": reads.get_networks},
    ("wallets",): {"GET": reads.list_wallets, "POST": writes.create_wallet},
    ("wallets", "{}"): {"GET": reads.get_wallet, "PATCH": writes.update_wallet},
    ("channels",): {"GET": reads.list_channels, "POST": writes.create_channel},
    ("channels", "{}"): {"GET": reads.get_channel, "PATCH": writes.update_channel},
    ("channels", "{}", "watchers"): {"GET": reads.list_watchers, "POST": writes.create_watcher},
    ("channels", "{}", "watchers", "{}"): {"GET": reads.get_watcher, "PATCH": writes.update_watcher},
    ("channels", "{}", "operations"): {"GET": reads.list_operations, "POST": writes.create_operation},
    ("channels", "{}", "operations", "{}"): {"GET": reads.get_operation, "PATCH": writes.patch_operation},
    ("channels", "{}", "queries"): {"GET": reads.list_queries, "POST": writes.create_query},
    ("channels", "{}", "queries", "{}"): {"GET": reads.get_query},
    ("channels", "{}", "events"): {"GET": events_api.poll_events},
    ("channels", "{}", "events", "search"): {"GET": events_api.search_events},
    ("channels", "{}", "events", "search", "{}"): {"GET": events_api.get_event},
}


def register(pattern: tuple[str, ...], method: str, handler: Handler) -> None:
    """Add a handler for one method of a path pattern."""
    ROUTES.setdefault(pattern, {})[method] = handler


#: The name of the path parameter that follows each segment (``/channels/{channel_id}``).
PATH_PARAMS = {
    "wallets": "wallet_id",
    "channels": "channel_id",
    "watchers": "watcher_id",
    "operations": "operation_id",
    "queries": "query_id",
    "search": "event_id",
}


def template(pattern: tuple[str, ...]) -> str:
    """The OpenAPI path of a route pattern: ``("channels", "{}")`` -> ``/channels/{channel_id}``."""
    parts = [
        f"{{{PATH_PARAMS[prev]}}}" if seg == "{}" else seg
        for prev, seg in zip(("", *pattern), pattern[:], strict=False)
    ]
    return "/" + "/".join(parts)


def allow(methods: dict[str, Handler]) -> str:
    """The ``Allow`` header value of a route."""
    return ", ".join(sorted(methods))


def resolve(path: str) -> tuple[tuple[str, ...], dict[str, Handler], list[str]] | None:
    """The pattern and handlers of ``path`` (relative to /v1) and its path arguments, or ``None`` when nothing
    matches."""
    parts = [p for p in path.strip("/").split("/")]
    if parts == [""]:
        return None
    args: list[str] = []
    candidates = [(pattern, methods) for pattern, methods in ROUTES.items() if len(pattern) == len(parts)]
    for pattern, methods in candidates:
        args = []
        for want, got in zip(pattern, parts, strict=True):
            if want == "{}":
                if not got:
                    break
                args.append(got)
            elif want != got:
                break
        else:
            return pattern, methods, args
    return None
