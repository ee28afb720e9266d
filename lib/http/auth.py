"""HTTP Basic authentication against a Ganeti users file.

The users file (``pathutils.RAPI_USERS_FILE``) has one user per line::

  # comment
  jack  abc123          write
  jill  {HA1}3f2...     read,write
  bob   {CLEARTEXT}pw

i.e. name, password and optional comma-separated options. A password
without a ``{SCHEME}`` prefix is cleartext; ``{HA1}`` is the hex MD5 of
``user:realm:password`` (RFC 2617's H(A1)), so the file need not hold the
password itself. Only Basic authentication is accepted; passwords are
compared in constant time.
"""

import base64
import binascii
import hashlib
import hmac
import logging
import os
import threading
from typing import Mapping

from ganeti import http as ghttp
from ganeti import utils

HTTP_BASIC_AUTH = "Basic"
HTTP_DIGEST_AUTH = "Digest"

_CLEARTEXT_SCHEME = "{CLEARTEXT}"
_HA1_SCHEME = "{HA1}"


class PasswordFileUser:
    """One user of a users file."""

    __slots__ = ("name", "password", "options")

    def __init__(self, name: str, password: str, options: list[str]):
        self.name = name
        self.password = password
        self.options = options

    def __repr__(self) -> str:
        # Never show the password (it ends up in logs otherwise)
        return "PasswordFileUser(%r, options=%r)" % (self.name, self.options)


def ParsePasswordFile(contents: str) -> dict[str, PasswordFileUser]:
    """Parse the contents of a users file into ``name -> user``.

    Lines starting with ``#`` and empty lines are skipped; a line with
    fewer than two fields is ignored with a warning, as Ganeti does.
    """
    users = {}
    for lineno, line in enumerate(contents.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 2:
            logging.warning("Ignoring line %d of the users file: it has less"
                            " than two fields", lineno)
            continue
        options = []
        if len(parts) > 2:
            options = [opt.strip() for opt in parts[2].split(",")
                       if opt.strip()]
        users[parts[0]] = PasswordFileUser(parts[0], parts[1], options)
    return users


def _Equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def VerifyBasicAuthPassword(username: str, password: str, expected: str,
                            realm: str) -> bool:
    """Whether ``password`` matches the users file entry ``expected``.

    ``expected`` is ``{CLEARTEXT}pw``, ``{HA1}hex`` or a bare cleartext
    password; the scheme is case-insensitive. Unknown schemes never match.
    """
    if not expected.startswith("{"):
        expected = _CLEARTEXT_SCHEME + expected
    end = expected.find("}", 1)
    if end <= 1:
        logging.warning("Invalid scheme in password for user '%s'", username)
        return False
    scheme = expected[:end + 1].upper()
    expected_password = expected[end + 1:]
    if scheme == _CLEARTEXT_SCHEME:
        return _Equal(password, expected_password)
    if scheme == _HA1_SCHEME:
        ha1 = hashlib.md5(("%s:%s:%s" % (username, realm, password))
                          .encode("utf-8")).hexdigest()
        return _Equal(ha1, expected_password.lower())
    logging.warning("Unknown scheme '%s' in password for user '%s'", scheme,
                    username)
    return False


def ParseBasicCredentials(header: str | None) -> tuple[str, str] | None:
    """User and password of a Basic ``Authorization`` header value.

    None for a missing header or another scheme (Digest is not
    supported); a malformed Basic header raises HttpBadRequest.
    """
    if not header:
        return None
    parts = header.strip().split(None, 1)
    if not parts or parts[0].lower() != HTTP_BASIC_AUTH.lower():
        return None
    if len(parts) < 2:
        raise ghttp.HttpBadRequest("Basic authentication requires"
                                   " credentials")
    try:
        creds = base64.b64decode(parts[1].strip().encode("ascii"),
                                 validate=True).decode("utf-8")
    except (binascii.Error, UnicodeError) as err:
        raise ghttp.HttpBadRequest("Invalid basic authorization header") \
            from err
    user, sep, password = creds.partition(":")
    if not sep:
        raise ghttp.HttpBadRequest("Invalid basic authorization header")
    return user, password


def FormatAuthHeader(scheme: str, params: Mapping[str, str]) -> str:
    """A ``WWW-Authenticate`` value, e.g. ``Basic realm="Ganeti Remote API"``.
    """
    quoted = ", ".join('%s="%s"' % (key, value.replace("\\", "\\\\")
                                    .replace('"', '\\"'))
                       for key, value in params.items())
    return "%s %s" % (scheme, quoted) if quoted else scheme


def Unauthorized(realm: str) -> ghttp.HttpUnauthorized:
    """The 401 answer asking the client for Basic credentials."""
    return ghttp.HttpUnauthorized(headers={
        ghttp.HTTP_WWW_AUTHENTICATE:
            FormatAuthHeader(HTTP_BASIC_AUTH, {"realm": realm})})


class UsersFile:
    """The users of a users file, re-read on SIGHUP and when it changes.

    A missing or unreadable file means no users (every authentication
    fails) rather than an error, so the daemon keeps serving open
    resources; the reason is logged. A changed file (another inode, size
    or mtime, checked with one stat per lookup) is read again, so an admin
    editing it needs no signal.
    """

    def __init__(self, path: str):
        self.path = path
        self._users: dict[str, PasswordFileUser] = {}
        self._lock = threading.Lock()
        self._stamp: tuple | None = None

    def _Stamp(self) -> tuple | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def Load(self) -> None:
        """(Re-)read the file; requests in flight keep the old users."""
        self._stamp = self._Stamp()
        try:
            contents = utils.ReadFile(self.path)
        except OSError as err:
            logging.warning("Can't read users file %s: %s; no user can"
                            " authenticate", self.path, err)
            contents = ""
        users = ParsePasswordFile(contents)
        with self._lock:
            self._users = users
        logging.info("Loaded %d user(s) from %s", len(users), self.path)

    def Get(self, name: str) -> PasswordFileUser | None:
        if self._Stamp() != self._stamp:
            self.Load()
        with self._lock:
            return self._users.get(name)

    def Authenticate(self, header: str | None,
                     realm: str) -> PasswordFileUser | None:
        """The user a Basic ``Authorization`` header proves to be, if any.

        None if the header is missing, uses another scheme or names an
        unknown user or a wrong password.
        """
        creds = ParseBasicCredentials(header)
        if creds is None:
            return None
        username, password = creds
        user = self.Get(username)
        if user is None:
            # Spend the same time as for a known user
            VerifyBasicAuthPassword(username, password, "{HA1}" + "0" * 32,
                                    realm)
            return None
        if not VerifyBasicAuthPassword(username, password, user.password,
                                       realm):
            return None
        return user
