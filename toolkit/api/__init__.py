"""Talking to the service: one httpx client, auth, retries, error mapping and page iterators."""

from .client import Client
from .pages import EventPage, Page

__all__ = ["Client", "EventPage", "Page"]
