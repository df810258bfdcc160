"""Which addresses mean "this machine only", said once for `gm serve`, `gm edit` and the editor they mount.

The editor writes world files. Listening on a loopback address, it answers only to loopback Host
names, so that a page on another site whose DNS name is rebound to 127.0.0.1 is refused; listening
anywhere else, any Host name may be in use, and the editor asks for a login (gm.editor.sessions).

>>> is_loopback("127.0.0.1"), is_loopback("127.3.2.1"), is_loopback("::1"), is_loopback("[::1]")
(True, True, True, True)
>>> is_loopback("0.0.0.0"), is_loopback("192.168.1.20"), is_loopback("example.org")
(False, False, False)
>>> allowed_hosts("127.0.0.2"), allowed_hosts("0.0.0.0")
(('127.0.0.1', 'localhost', '[::1]', '127.0.0.2'), ('*',))
"""

from __future__ import annotations

import ipaddress

# Host header names as Starlette compares them: lower case, port removed, an IPv6 literal in brackets.
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether listening on `host` serves this machine only: localhost, any 127.x.y.z, or ::1 (bracketed or not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str) -> tuple[str, ...]:
    """The Host names an app listening on `host` answers to: loopback names (and `host`) on loopback, else any."""
    if not is_loopback(host):
        return ("*",)
    bare = host.lower().removeprefix("[").removesuffix("]")
    named = f"[{bare}]" if ":" in bare else bare
    return LOOPBACK_HOSTS if named in LOOPBACK_HOSTS else (*LOOPBACK_HOSTS, named)
