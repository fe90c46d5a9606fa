"""Settings: from arguments, then the environment, then defaults. The API key is never shown.

Environment variables: ``CREC_API_KEY`` and ``CREC_BASE_URL`` (the names the service's official SDK uses) and
``CHAINOPS_WAREHOUSE`` (the warehouse file, default ``data/chainops.duckdb``). The environment is read here and
nowhere else. ``data/`` is the repository's data folder when run inside a clone (from any folder of it, such as
``notebooks/``), else ``data/`` in the current directory: :func:`data_dir`.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from .errors import ConfigError

ENV_API_KEY = "CREC_API_KEY"
ENV_BASE_URL = "CREC_BASE_URL"
ENV_WAREHOUSE = "CHAINOPS_WAREHOUSE"
#: The default warehouse relative to the data folder's parent (kept for callers; :func:`default_warehouse` resolves it).
DEFAULT_WAREHOUSE = Path("data/chainops.duckdb")
#: The file `chainops demo` writes in :func:`data_dir` unless told otherwise.
DEMO_WAREHOUSE_NAME = "demo.duckdb"


def data_dir(start: str | os.PathLike[str] | None = None) -> Path:
    """The folder where warehouses, reports and exports land by default.

    Inside a clone of the project (a folder with ``pyproject.toml`` and ``toolkit/``, found from ``start``, default
    the current directory, upwards), its ``data/``: a notebook run from ``notebooks/`` uses the repository's
    ``data/`` and never creates ``notebooks/data/``. Elsewhere (an installed package), ``data/`` under ``start``.
    The folder is not created here.
    """
    here = Path(start if start is not None else Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file() and (folder / "toolkit" / "__init__.py").is_file():
            return folder / "data"
    return here / "data"


def default_warehouse() -> Path:
    """The warehouse used when neither ``--warehouse`` nor ``CHAINOPS_WAREHOUSE`` names one:
    ``chainops.duckdb`` in :func:`data_dir`."""
    return data_dir() / DEFAULT_WAREHOUSE.name


class Secret:
    """A string that never shows itself: ``repr``, ``str`` and formatting print ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The secret itself; call only where it is sent (the Authorization header)."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    def __str__(self) -> str:
        return "***"

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("Secret values are not picklable")


def check_api_key(value: str | Secret) -> Secret:
    """The key as it will be sent: surrounding whitespace (a copy-paste, a Windows ``.env``) stripped.

    A key holding a control character (C0, DEL or C1) or any character outside printable ASCII is refused with a
    :class:`ConfigError` that does not repeat it: an HTTP header carries other characters in an encoding of its
    own, so a service echoing such a key would quote it in a form that redaction could not recognise.
    """
    raw = value.reveal() if isinstance(value, Secret) else value
    key = raw.strip()
    bad = next((c for c in key if not 0x20 <= ord(c) <= 0x7E), None)
    if bad is not None:
        control = ord(bad) < 0x20 or 0x7F <= ord(bad) <= 0x9F
        kind = "a control character" if control else "a character outside printable ASCII"
        raise ConfigError(
            f"{ENV_API_KEY} contains {kind} (U+{ord(bad):04X}), which an API key never holds; "
            f"set it to the key alone, as the service issued it."
        )
    if not key:
        raise ConfigError(f"{ENV_API_KEY} is blank; set it to your organisation's API key.")
    return value if isinstance(value, Secret) and key == raw else Secret(key)


#: Keys shorter than this are not redacted: a key of a few characters (a local sandbox's ``k``) cannot be told
#: apart from ordinary text, and replacing it everywhere mangled every message ("sync o*** in 5.1s").
REDACT_MIN_LENGTH = 8


def redact(text: str, key: Secret | None) -> str:
    """``text`` with every occurrence of the key replaced by ``***`` (a service or proxy may echo it back): as it
    is, in another case (a proxy that upper-cases headers), percent-encoded, and base64-encoded (an echoed
    ``Authorization`` header, or the key alone, in either base64 alphabet, wherever it sits in the encoded text);
    a key shorter than :data:`REDACT_MIN_LENGTH` is left as it is."""
    secret = key.reveal() if key is not None else ""
    if len(secret) < REDACT_MIN_LENGTH:
        return text
    return _key_forms(secret).sub("***", text)


@functools.lru_cache(maxsize=4)
def _key_forms(secret: str) -> re.Pattern[str]:
    """One pattern for every form of ``secret`` that :func:`redact` replaces."""
    plain = [re.escape(secret), re.escape(quote(secret, safe=""))]
    encoded: set[str] = set()
    raw = secret.encode("utf-8")
    for pad in range(3):  # the key at each of the three alignments of base64's 3-byte groups
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(b"\0" * pad + raw).decode("ascii")
            start = 4 if pad else 0  # the first group mixes in what came before the key
            end = (pad + len(raw)) // 3 * 4  # the last part-group mixes in what comes after it
            core = text[start:end]
            if len(core) >= REDACT_MIN_LENGTH:
                encoded.add(re.escape(core))
    return re.compile(
        "|".join([f"(?i:{'|'.join(plain)})", *sorted(encoded, key=len, reverse=True)]),
    )


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_base_url(base_url: str) -> str:
    """Validate a base URL: https anywhere, or plain http only to a loopback address; no query string, fragment,
    whitespace or control character inside. Surrounding whitespace (a Windows ``.env`` line's ``\r``) is stripped.
    Returns it without a trailing slash."""
    text = base_url.strip()
    if any(ch.isspace() or ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text):
        raise ConfigError(
            f"CREC_BASE_URL holds whitespace or a control character, got {text!r}; set it to the URL alone, "
            "for example https://api.example.com/v1."
        )
    parts = urlsplit(text)
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise ConfigError(
            f"CREC_BASE_URL must not hold a query string or fragment, got {text!r}: every request would go "
            "elsewhere; set it to the URL ending in /v1, for example https://api.example.com/v1."
        )
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"CREC_BASE_URL must be an http(s) URL ending in /v1, got {base_url!r}; "
            "for example https://api.example.com/v1."
        )
    if parts.username or parts.password:
        raise ConfigError("CREC_BASE_URL must not contain credentials; put the key in CREC_API_KEY.")
    if parts.scheme == "http" and not is_loopback_host(parts.hostname):
        raise ConfigError(
            f"Refusing to send the API key over plain http to {parts.hostname}: use an https:// CREC_BASE_URL "
            "(plain http is allowed only to a loopback address such as 127.0.0.1)."
        )
    if not re.search(r"/v\d+$", parts.path.rstrip("/")):
        suggestion = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/v1", query="", fragment=""))
        raise ConfigError(
            f"CREC_BASE_URL must end in the API version /v1, got {base_url!r}: every path of the service is under "
            f"it (did you mean {suggestion!r}?)."
        )
    return text.rstrip("/")


@dataclass(frozen=True)
class Settings:
    """Where the service is, the key to it, and where the warehouse lives."""

    base_url: str | None = None
    api_key: Secret | None = field(default=None, repr=True)
    warehouse: Path = DEFAULT_WAREHOUSE
    #: Why ``CREC_API_KEY`` was refused (raised only by :meth:`require_service`: commands that never use the key,
    #: such as ``metrics`` or ``sql``, still run).
    key_problem: str | None = field(default=None, repr=False)

    @classmethod
    def load(
        cls,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        warehouse: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Build settings from arguments, falling back to the environment, then to defaults."""
        env = os.environ if environ is None else environ
        raw = api_key if api_key is not None else env.get(ENV_API_KEY) or None
        key, problem = None, None
        try:
            key = check_api_key(raw) if raw is not None else None
        except ConfigError as exc:
            problem = str(exc)
        url = base_url or env.get(ENV_BASE_URL) or None
        path = warehouse or env.get(ENV_WAREHOUSE) or default_warehouse()
        return cls(
            base_url=check_base_url(url) if url else None, api_key=key, warehouse=Path(path), key_problem=problem
        )

    def require_service(self) -> tuple[str, Secret]:
        """The base URL and key, or a :class:`ConfigError` that says how to set them."""
        if self.key_problem is not None:
            raise ConfigError(self.key_problem)
        missing = [name for name, v in ((ENV_BASE_URL, self.base_url), (ENV_API_KEY, self.api_key)) if not v]
        if missing:
            raise ConfigError(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set. Export "
                f"{ENV_BASE_URL}=https://<your service>/v1 and {ENV_API_KEY}=<your key>, "
                "or run `chainops demo` to try the toolkit against the built-in sandbox."
            )
        assert self.base_url is not None and self.api_key is not None
        return self.base_url, self.api_key
