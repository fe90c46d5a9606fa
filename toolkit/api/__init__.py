"""Talking to the service: one httpx client, auth, retries, error mapping, page iterators, and typed results."""

from .client import Client
from .pages import EventPage, Page, WireEventPage
from .resources import (
    Channel,
    Event,
    EventHeaders,
    EventPayload,
    HealthCheck,
    Network,
    OCRProof,
    Operation,
    OperationResponse,
    Query,
    QueryAccepted,
    Subject,
    Transaction,
    Wallet,
    Watcher,
    WatcherSummary,
)

__all__ = [
    "Channel",
    "Client",
    "Event",
    "EventHeaders",
    "EventPage",
    "EventPayload",
    "HealthCheck",
    "Network",
    "OCRProof",
    "Operation",
    "OperationResponse",
    "Page",
    "Query",
    "QueryAccepted",
    "Subject",
    "Transaction",
    "Wallet",
    "Watcher",
    "WatcherSummary",
    "WireEventPage",
]
