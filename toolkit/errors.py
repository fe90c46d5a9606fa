"""One exception tree for the toolkit.

Every error the toolkit raises on purpose is a :class:`ChainopsError`; its message says what failed and what to do.
No error text, repr or traceback ever contains the API key: API and transport errors carry the request's method and
path (never headers, never the query), the request id the service gave its answer (``X-Request-Id``, else a
``request_id`` in the error body; ``None`` when it gave none), and configuration errors mask the key. Each error is
built complete by its constructor: attributes and message agree from the start.

::

    ChainopsError
    ├── UsageError                      a command line or argument that does not make sense (exit 2)
    ├── ConfigError                     missing or unsafe settings (no key, plain http to a remote host, ...)
    ├── ApiError                        the service answered non-2xx with an ApplicationError (or something else)
    │   ├── AuthenticationError         401: missing, malformed or unknown key
    │   │   └── OrganizationNotFoundError   401 ORGANIZATION_NOT_FOUND: key known, organisation not onboarded
    │   ├── ValidationError             400 VALIDATION_ERROR
    │   ├── NotFoundError               404 NOT_FOUND (code names the resource)
    │   ├── ConflictError               409 CONFLICT (code names the guard)
    │   ├── RateLimitError              429 (transient: retried)
    │   └── ServerError                 5xx / INTERNAL_ERROR (transient: retried)
    ├── InvalidIdError                  an id from the service that cannot be sent as one path segment
    ├── TransportError                  no usable answer: connection refused or dropped, timeout, truncated body
    │   └── ResponseFormatError         a 2xx body that is not the documented JSON envelope
    │       ├── AnswerTooLargeError     a body past the decoded-size cap (not transient: asked once)
    │       └── BadPageError            a list page unreadable after the retries (carries the request as a page)
    └── WarehouseError                  the DuckDB store
        └── SyncLockedError             another sync holds the warehouse
"""

from __future__ import annotations

from typing import Any


class ChainopsError(Exception):
    """Base of every error the toolkit raises on purpose."""


class UsageError(ChainopsError):
    """A command line (or argument) that parses but does not make sense: the command line exits 2."""


class ConfigError(ChainopsError):
    """Settings are missing or unsafe."""


class ApiError(ChainopsError):
    """The service answered with a non-2xx status.

    Attributes name the request (``method``, ``path`` without the query), the HTTP ``status``, the service's
    ``type``, ``code`` and ``message`` from its ``ApplicationError`` body (``None`` when absent), the
    ``request_id`` of the answer (``None`` when it had none), how many ``attempts`` were made, and ``retry_after``,
    the seconds the service asked us to wait (``Retry-After``; ``None`` when it did not say).
    """

    #: Whether retrying the same request may succeed.
    transient = False
    hint = "Check the request and the service's documentation."

    def __init__(
        self,
        *,
        status: int,
        method: str,
        path: str,
        type: str | None = None,
        code: str | None = None,
        message: str | None = None,
        attempts: int = 1,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.type = type
        self.code = code
        self.service_message = message
        self.attempts = attempts
        self.retry_after = retry_after
        self.request_id = request_id
        super().__init__(self._describe())

    def _describe(self) -> str:
        what = "/".join(x for x in (self.type, self.code) if x) or "no ApplicationError body"
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        text = f": {self.service_message}" if self.service_message else ""
        rid = _rid(self.request_id)
        return f"{self.method} {self.path} answered {self.status} ({what}){tries}{rid}{text}. {self.hint}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__.copy()))


def _rid(request_id: str | None) -> str:
    """How a message names the service's request id (nothing when there is none)."""
    return f" [request id {request_id}]" if request_id else ""


def _rebuild(cls: type[ApiError], state: dict[str, Any]) -> ApiError:
    err = cls.__new__(cls)
    err.__dict__.update(state)
    Exception.__init__(err, err._describe())
    return err


class AuthenticationError(ApiError):
    """401: the key is missing, malformed or unknown."""

    hint = "Set CREC_API_KEY to your organisation's API key (or run `chainops demo` to use the sandbox)."


class OrganizationNotFoundError(AuthenticationError):
    """401 ``ORGANIZATION_NOT_FOUND``: the key is valid but its organisation is not onboarded."""

    hint = "The key is known but its organisation is not onboarded yet; ask your service administrator."


class ValidationError(ApiError):
    """400 ``VALIDATION_ERROR``: a schema or parameter constraint failed."""

    hint = "Fix the request parameters or body named in the message."


class NotFoundError(ApiError):
    """404 ``NOT_FOUND``: the resource does not exist or belongs to another organisation."""

    @property  # type: ignore[override]
    def hint(self) -> str:
        """What to check: the base URL when a fixed path of the service (``/networks``) or any path answered 404
        without the service's error body, else the id and the key."""
        if self.type is None or "/" not in self.path.strip("/"):
            return (
                f"{self.path} is a fixed path of the service, so CREC_BASE_URL (or --base-url) probably does not "
                "point at it: use the service's base URL exactly as given, ending in /v1."
            )
        return "Check the id, and that the key belongs to the organisation that owns the resource."


class ConflictError(ApiError):
    """409 ``CONFLICT``: a unique constraint or a state-transition guard refused the request."""

    hint = "Fetch the resource again and check its current state before retrying."


class RateLimitError(ApiError):
    """429: the organisation's rate limit was exceeded."""

    transient = True
    hint = "The service is rate-limiting this key; wait and run again, or lower the sync concurrency."


class ServerError(ApiError):
    """5xx or ``INTERNAL_ERROR``: a server-side failure, safe to retry."""

    transient = True
    hint = "The service failed on its side; run again later (the sync resumes where it stopped)."


class InvalidIdError(ChainopsError):
    """An id (from the service) that cannot be placed in a request's path as one segment: empty, ``.``, ``..``, or
    not encodable. Nothing is sent for it; ``value`` is the id as it came."""

    def __init__(self, value: str, why: str) -> None:
        self.value = value
        shown = repr(value) if len(value) <= 80 else repr(value[:79]) + "…"
        super().__init__(f"The id {shown} cannot be sent as one path segment ({why}); nothing was asked for it.")


class TransportError(ChainopsError):
    """No usable answer arrived: the connection failed, was dropped, timed out, or the body was cut short."""

    transient = True

    def __init__(
        self, message: str, *, method: str = "", path: str = "", attempts: int = 1, request_id: str | None = None
    ) -> None:
        self.method = method
        self.path = path
        self.attempts = attempts
        self.request_id = request_id
        self.reason = message
        where = f"{method} {path}{_rid(request_id)}: " if method else ""
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(
            f"{where}{message}{tries}. Check CREC_BASE_URL and your network, then run again "
            "(a sync resumes where it stopped)."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_plain, (type(self), self.args, self.__dict__.copy()))


def _rebuild_plain(cls: type[Exception], args: tuple[Any, ...], state: dict[str, Any]) -> Exception:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ResponseFormatError(TransportError):
    """A 2xx answer whose body is not the documented JSON envelope (malformed JSON, missing ``data``/``events``)."""


class AnswerTooLargeError(ResponseFormatError):
    """A 2xx answer whose body, once decoded, passed the size cap (a gzip bomb, an endless body). Not transient:
    asking again gets the same answer, and each attempt costs up to the cap in memory, so it is asked once."""

    transient = False


class BadPageError(ResponseFormatError):
    """A page of a list that could not be read even after the retries (invalid UTF-8, absurd nesting, a body cut
    short every time, not the documented envelope), or one channel's list that the service refused (a status of
    ``spec.CHANNEL_REFUSED_STATUSES``). ``page`` is an empty page naming the request and the problem, which a
    loader records before going on with the other streams. Still ``transient``: the retries are
    spent, but the same page may be readable on a later run."""

    def __init__(self, error: TransportError | ApiError, page: Any) -> None:
        self.page = page
        self.method, self.path, self.attempts, self.reason = error.method, error.path, error.attempts, page.problem
        self.request_id = error.request_id
        ChainopsError.__init__(self, f"{page.describe()}{_rid(error.request_id)}: {page.problem}")


class WarehouseError(ChainopsError):
    """The DuckDB warehouse could not be opened, read or written."""


class SyncLockedError(WarehouseError):
    """Another sync is writing to the same warehouse."""


_BY_TYPE: dict[str, type[ApiError]] = {
    "VALIDATION_ERROR": ValidationError,
    "NOT_FOUND": NotFoundError,
    "CONFLICT": ConflictError,
    "INTERNAL_ERROR": ServerError,
    "ORGANIZATION_NOT_FOUND": OrganizationNotFoundError,
}


def api_error_class(status: int, error_type: str | None) -> type[ApiError]:
    """Pick the exception class for an answer: HTTP status first (401, 429, 5xx), then the service's ``type``."""
    if status == 401:
        return OrganizationNotFoundError if error_type == "ORGANIZATION_NOT_FOUND" else AuthenticationError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ServerError
    if error_type in _BY_TYPE:
        return _BY_TYPE[error_type]
    return {400: ValidationError, 404: NotFoundError, 409: ConflictError}.get(status, ApiError)
