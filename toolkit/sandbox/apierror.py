"""The one exception the sandbox's backend and handlers raise to answer a non-2xx ``ApplicationError``."""

from __future__ import annotations

from toolkit.spec import ErrorType


class ApiError(Exception):
    """An HTTP error answer: status, ``ApplicationError`` type, optional code, human message (never a secret)."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        code: str | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.code = code
        self.message = message
        self.headers = headers

    def body(self) -> dict:
        """The ``ApplicationError`` body."""
        out = {"type": self.type}
        if self.code is not None:
            out["code"] = self.code
        out["message"] = self.message
        return out


def validation(message: str) -> ApiError:
    """A 400 ``VALIDATION_ERROR``."""
    return ApiError(400, ErrorType.VALIDATION_ERROR, message)


def not_found(code: str, message: str) -> ApiError:
    """A 404 ``NOT_FOUND`` with its ``*_NOT_FOUND`` code."""
    return ApiError(404, ErrorType.NOT_FOUND, message, code)


def conflict(code: str | None, message: str) -> ApiError:
    """A 409 ``CONFLICT``."""
    return ApiError(409, ErrorType.CONFLICT, message, code)
