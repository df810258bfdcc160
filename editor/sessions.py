"""The editor's login without the HTTP: its token, the sessions it hands out, and the limit on wrong tokens.

A session is the text `2.<expires>.<id>.<signature>`: the Unix time it ends, a random id, and an HMAC-SHA256
of them under a secret drawn when the `Login` is made, so it cannot be stretched or forged. The ids of live
sessions are kept in memory: `revoke` (the editor's "Log out") ends one on the server, so a copied cookie
stops working at once, and a restart ends every session (as it changes every form's token). At most
`LIVE_SESSIONS` are kept; beyond that the oldest ends first. Clocks are passed in, so that tests move time
instead of sleeping.

>>> login = Login("correct horse battery", clock=lambda: 1_000.0)
>>> login.matches(" correct horse battery\\n"), login.matches("correct horse")
(True, False)
>>> session = login.issue()
>>> login.valid(session), login.valid(session.replace("2.", "2.9", 1)), login.valid("")
(True, False, False)
>>> login.revoke(session), login.valid(session)
(True, False)
>>> client_key("2001:db8::1") == client_key("2001:db8::ffff"), client_key("::ffff:192.0.2.7")
(True, '192.0.2.7')
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from gm._hosts import is_loopback
from gm.errors import SettingsError

Clock = Callable[[], float]

MIN_TOKEN_CHARS = 8
SESSION_SECONDS = 12 * 60 * 60  # a working day; a restart ends it sooner
FAILURES_ALLOWED = 5  # wrong tokens per client ...
FAILURE_WINDOW = 60.0  # ... in any this many seconds
TRACKED_CLIENTS = 10_000  # clients whose failures are remembered at once (memory stays bounded)
LIVE_SESSIONS = 10_000  # sessions remembered at once (memory stays bounded; the oldest ends first)
_VERSION = "2"
_MAX_SESSION_CHARS = 120  # a real one is about 80; anything longer is not worth an HMAC


def new_token() -> str:
    """A fresh token to print at start: 32 URL-safe random characters (192 bits), hopeless to guess."""
    return secrets.token_urlsafe(24)


def checked_token(token: str) -> str:
    """`token` without surrounding spaces, or `SettingsError` saying in one sentence why it cannot be the login."""
    token = token.strip()
    if not token.isprintable():
        raise SettingsError("the editor's token must not hold control characters such as tabs or line breaks")
    if len(token) < MIN_TOKEN_CHARS:
        raise SettingsError(f"the editor's token must be at least {MIN_TOKEN_CHARS} characters long, not {len(token)}")
    return token


class FailureLimit:
    """How many wrong tokens one client may send: `allowed` in any `window` seconds; then it must wait.

    Nothing sleeps: `wait` says how long is left and the login answers 429 at once. Failures are kept
    for at most `clients` clients, the least recently failing forgotten first, so that a flood from
    many addresses cannot grow the server's memory (it can only make some clients' counts start over).
    """

    def __init__(
        self,
        allowed: int = FAILURES_ALLOWED,
        window: float = FAILURE_WINDOW,
        *,
        clients: int = TRACKED_CLIENTS,
        clock: Clock = time.monotonic,
    ) -> None:
        if allowed < 1 or window <= 0 or clients < 1:
            raise SettingsError("a failure limit needs at least 1 failure, a window over 0 seconds and 1 client")
        self.allowed = allowed
        self.window = window
        self.clients = clients
        self.clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, client: str) -> float:
        """Seconds before `client` may try a token again; 0 while it has failed less than `allowed` times lately."""
        with self._lock:
            now = self.clock()
            times = self._recent(client, now)
            if len(times) < self.allowed:
                return 0.0
            return max(times[0] + self.window - now, 0.0)

    def failed(self, client: str) -> None:
        """Count one wrong token from `client`, now."""
        with self._lock:
            now = self.clock()
            times = self._recent(client, now)
            times.append(now)
            self._failures[client] = times
            self._failures.move_to_end(client)
            while len(self._failures) > self.clients:
                self._failures.popitem(last=False)

    def forget(self, client: str) -> None:
        """Clear `client`'s failures (it has just logged in)."""
        with self._lock:
            self._failures.pop(client, None)

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            self._failures.pop(client, None)
        return times


def client_key(address: str | None) -> str:
    """Whose failures a request counts against: its IPv4 address, or the /64 network of an IPv6 one.

    One IPv6 machine usually holds a whole /64, so counting single addresses would let it try
    billions of tokens a minute.
    """
    if not address:
        return "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


class Login:
    """The editor's one token and the sessions it trades for: signed, expiring after `lifetime` seconds."""

    def __init__(
        self,
        token: str,
        *,
        lifetime: int = SESSION_SECONDS,
        clock: Clock | None = None,
        failures: FailureLimit | None = None,
    ) -> None:
        self._token = checked_token(token).encode()
        self._secret = secrets.token_bytes(32)
        self._live: OrderedDict[str, int] = OrderedDict()  # session id -> when it expires, oldest first
        self._live_lock = threading.Lock()
        self.lifetime = lifetime
        self.clock: Clock = clock or time.time
        # One injected clock drives both, so a test moves time once; by default failures use a
        # clock that a change of the wall clock cannot move.
        self.failures = failures or FailureLimit(clock=clock or time.monotonic)

    def matches(self, typed: str) -> bool:
        """Whether `typed` is the token (surrounding spaces aside, as a paste often brings some)."""
        return hmac.compare_digest(typed.strip().encode(), self._token)

    def issue(self) -> str:
        """A new session, valid for `lifetime` seconds from now unless revoked first."""
        expires, session_id = int(self.clock()) + self.lifetime, secrets.token_urlsafe(16)
        with self._live_lock:
            self._live[session_id] = expires
            while len(self._live) > LIVE_SESSIONS:
                self._live.popitem(last=False)
        payload = f"{_VERSION}.{expires}.{session_id}"
        return f"{payload}.{self._sign(payload)}"

    def valid(self, session: str) -> bool:
        """Whether `session` was issued by this Login, has not expired and has not been revoked."""
        session_id = self._signed_id(session)
        if session_id is None:
            return False
        with self._live_lock:
            expires = self._live.get(session_id)
            if expires is not None and expires <= self.clock():
                del self._live[session_id]
                expires = None
        return expires is not None

    def revoke(self, session: str) -> bool:
        """End `session` on the server (its cookie is refused from now on); whether it was live."""
        session_id = self._signed_id(session)
        if session_id is None:
            return False
        with self._live_lock:
            return self._live.pop(session_id, None) is not None

    def _signed_id(self, session: str) -> str | None:
        """The id of `session` when it is well-formed and signed by this Login, else None."""
        if len(session) > _MAX_SESSION_CHARS or not session.isascii():
            return None
        version, expires, session_id, signature = ([*session.split(".", 3), "", "", ""])[:4]
        if version != _VERSION or not expires.isdigit() or not session_id:
            return None
        if not hmac.compare_digest(signature.encode(), self._sign(f"{version}.{expires}.{session_id}").encode()):
            return None
        return session_id

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self._secret, payload.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def login_for_host(host: str, token: str | None) -> tuple[Login | None, str | None]:
    """The login an editor listening on `host` needs, and the token to print when one was generated.

    With `token` (GM_EDITOR_TOKEN) there is always a login; without one, loopback has none and any
    other address gets a freshly generated token, which the caller must print (as Jupyter does).
    """
    if token:
        return Login(token), None
    if is_loopback(host):
        return None, None
    generated = new_token()
    return Login(generated), generated
