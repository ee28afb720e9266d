"""What the RAPI client's parts share: constants, errors, URL and query
helpers, and the HTTPS transport (one pycurl handle per request).

The public module is ``ganeti.rapi.client``; it re-exports these names.
"""

import functools
import logging
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable

import pycurl

from ganeti import constants
from ganeti import errors
from ganeti import netutils
from ganeti import rapi
from ganeti import serializer

GANETI_RAPI_PORT = constants.DEFAULT_RAPI_PORT
GANETI_RAPI_VERSION = constants.RAPI_VERSION

HTTP_DELETE = "DELETE"
HTTP_GET = "GET"
HTTP_PUT = "PUT"
HTTP_POST = "POST"
HTTP_OK = 200
HTTP_NOT_FOUND = 404
HTTP_APP_JSON = "application/json"

REPLACE_DISK_PRI = "replace_on_primary"
REPLACE_DISK_SECONDARY = "replace_on_secondary"
REPLACE_DISK_CHG = "replace_new_secondary"
REPLACE_DISK_AUTO = "replace_auto"

NODE_EVAC_PRI = "primary-only"
NODE_EVAC_SEC = "secondary-only"
NODE_EVAC_ALL = "all"

NODE_ROLE_DRAINED = "drained"
NODE_ROLE_MASTER_CANDIDATE = "master-candidate"
NODE_ROLE_MASTER = "master"
NODE_ROLE_OFFLINE = "offline"
NODE_ROLE_REGULAR = "regular"

JOB_STATUS_QUEUED = constants.JOB_STATUS_QUEUED
JOB_STATUS_WAITING = constants.JOB_STATUS_WAITING
JOB_STATUS_CANCELING = constants.JOB_STATUS_CANCELING
JOB_STATUS_RUNNING = constants.JOB_STATUS_RUNNING
JOB_STATUS_CANCELED = constants.JOB_STATUS_CANCELED
JOB_STATUS_SUCCESS = constants.JOB_STATUS_SUCCESS
JOB_STATUS_ERROR = constants.JOB_STATUS_ERROR
JOB_STATUS_PENDING = constants.JOBS_PENDING
JOB_STATUS_FINALIZED = constants.JOBS_FINALIZED
JOB_STATUS_ALL = constants.JOB_STATUS_ALL
# Name used before 2.6
JOB_STATUS_WAITLOCK = JOB_STATUS_WAITING

# Optional server features (GET /2/features)
INST_CREATE_REQV1 = rapi.INST_CREATE_REQV1
INST_REINSTALL_REQV1 = rapi.INST_REINSTALL_REQV1
NODE_MIGRATE_REQV1 = rapi.NODE_MIGRATE_REQV1
NODE_EVAC_RES1 = rapi.NODE_EVAC_RES1

# Error codes a failed job reports (second element of its error tuple)
ECODE_RESOLVER = errors.ECODE_RESOLVER
ECODE_NORES = errors.ECODE_NORES
ECODE_TEMP_NORES = errors.ECODE_TEMP_NORES
ECODE_INVAL = errors.ECODE_INVAL
ECODE_STATE = errors.ECODE_STATE
ECODE_NOENT = errors.ECODE_NOENT
ECODE_EXISTS = errors.ECODE_EXISTS
ECODE_NOTUNIQUE = errors.ECODE_NOTUNIQUE
ECODE_FAULT = errors.ECODE_FAULT
ECODE_ENVIRON = errors.ECODE_ENVIRON
ECODE_ALL = errors.ECODE_ALL

_REQ_DATA_VERSION_FIELD = "__version__"
_QPARAM_DRY_RUN = "dry-run"
_QPARAM_FORCE = "force"

# libcurl errors meaning the peer's certificate was not accepted (the
# numbers have been merged and renamed over libcurl versions)
_CURL_SSL_CERT_ERRORS = frozenset(
    getattr(pycurl, name) for name in ("E_SSL_CACERT", "E_SSL_CACERT_BADFILE",
                                       "E_PEER_FAILED_VERIFICATION",
                                       "E_SSL_ISSUER_ERROR",
                                       "E_SSL_PINNEDPUBKEYNOTMATCH")
    if hasattr(pycurl, name))

_QueryItems = list[tuple[str, Any]]
CurlConfigFn = Callable[[pycurl.Curl, Any], None]


class Error(Exception):
    """Base class of this module's errors."""


class GanetiApiError(Error):
    """A request failed; ``code`` is the HTTP status or the libcurl error."""

    def __init__(self, msg: str, code: int | None = None):
        super().__init__(msg)
        self.code = code


class CertificateError(GanetiApiError):
    """The server's certificate was not accepted."""


def EpochNano() -> int:
    """Now, in nanoseconds since the epoch (reason trail timestamps)."""
    return time.time_ns()


def UsesRapiClient(fn: Callable) -> Callable:
    """Decorate a program's main function to set up pycurl around it.

    curl_global_init(3) must run while the process has a single thread.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if threading.active_count() != 1:
            raise Error("pycurl must be initialised before starting threads")
        pycurl.global_init(pycurl.GLOBAL_ALL)
        try:
            return fn(*args, **kwargs)
        finally:
            pycurl.global_cleanup()

    return wrapper


def GenericCurlConfig(verbose: bool = False, use_signal: bool = False,
                      use_curl_cabundle: bool = False,
                      cafile: str | None = None, capath: str | None = None,
                      proxy: str | None = None,
                      verify_hostname: bool = False,
                      connect_timeout: float | None = None,
                      timeout: float | None = None) -> CurlConfigFn:
    """Build a ``curl_config_fn`` for GanetiRapiClient.

    The peer certificate is verified as soon as a CA is given: ``cafile``
    (for a self-signed cluster certificate, the rapi.pem itself), ``capath``
    or libcurl's own bundle (``use_curl_cabundle``). ``proxy`` None keeps
    libcurl's default (environment variables); "" disables proxies.
    """
    if use_curl_cabundle and (cafile or capath):
        raise Error("Can not use default CA bundle when CA file or path is"
                    " set")

    def _ConfigCurl(curl: pycurl.Curl, logger: Any) -> None:
        logger.debug("Using cURL version %s", pycurl.version)
        ssl_version = pycurl.version_info()[5]
        if not ssl_version:
            raise Error("No SSL support in cURL")
        if capath and ssl_version.lower().startswith("gnutls/"):
            raise Error("cURL linked against GnuTLS has no support for a"
                        " CA path (%s)" % pycurl.version)

        curl.setopt(pycurl.VERBOSE, verbose)
        curl.setopt(pycurl.NOSIGNAL, not use_signal)
        # 2 makes libcurl check that the certificate names the host
        curl.setopt(pycurl.SSL_VERIFYHOST, 2 if verify_hostname else 0)
        if cafile or capath or use_curl_cabundle:
            curl.setopt(pycurl.SSL_VERIFYPEER, True)
            if cafile:
                curl.setopt(pycurl.CAINFO, str(cafile))
            if capath:
                curl.setopt(pycurl.CAPATH, str(capath))
        else:
            curl.setopt(pycurl.SSL_VERIFYPEER, False)
        if proxy is not None:
            curl.setopt(pycurl.PROXY, str(proxy))
        if connect_timeout is not None:
            curl.setopt(pycurl.CONNECTTIMEOUT, connect_timeout)
        if timeout is not None:
            curl.setopt(pycurl.TIMEOUT, timeout)

    return _ConfigCurl


def _Resource(*parts: Any) -> str:
    """The path of a version 2 resource; names are quoted for the URL."""
    return "/".join(["", str(GANETI_RAPI_VERSION)] +
                    [urllib.parse.quote(str(part), safe="")
                     for part in parts])


def _Query(*items: tuple[str, Any], bulk: bool = False,
           force: bool = False, dry_run: bool = False,
           reason: str | None = None) -> _QueryItems:
    """Query string items, leaving out those whose value is None.

    The common switches are sent only when set, as Ganeti's client does.
    """
    query = [(name, value) for name, value in items if value is not None]
    if bulk:
        query.append(("bulk", 1))
    if force:
        query.append((_QPARAM_FORCE, 1))
    if dry_run:
        query.append((_QPARAM_DRY_RUN, 1))
    if reason:
        query.append(("reason", reason))
    return query


def _TagQuery(tags: Iterable[str], dry_run: bool,
              reason: str | None) -> _QueryItems:
    return _Query(*[("tag", tag) for tag in tags], dry_run=dry_run,
                  reason=reason)


def _Body(base: dict[str, Any] | None = None, **optional: Any
          ) -> dict[str, Any]:
    """A request body: ``base`` plus the ``optional`` items that are set."""
    body = dict(base or {})
    body.update((key, value) for key, value in optional.items()
                if value is not None)
    return body


def _EncodeQuery(query: _QueryItems) -> _QueryItems:
    """Query values as the server parses them (booleans as 0/1)."""
    result = []
    for name, value in query:
        if value is None:
            value = ""
        elif isinstance(value, bool):
            value = int(value)
        elif isinstance(value, (list, tuple, dict)):
            raise ValueError("Invalid query data type %r for %r" %
                             (type(value).__name__, name))
        result.append((name, value))
    return result


class RapiConnection:
    """Sends requests to one cluster's RAPI server (normally the master)."""

    USER_AGENT = "Ganeti RAPI Client"

    def __init__(self, host: str, port: int = GANETI_RAPI_PORT,
                 username: str | None = None, password: str | None = None,
                 logger: Any = logging,
                 curl_config_fn: CurlConfigFn | None = None,
                 curl_factory: Callable[[], pycurl.Curl] | None = None):
        """Set up a client; no connection is made until the first request.

        ``curl_config_fn(curl, logger)`` is applied to every handle after
        the defaults (see GenericCurlConfig); ``curl_factory`` replaces
        ``pycurl.Curl`` (tests use it to inspect requests).
        """
        if username is not None:
            if password is None:
                raise Error("Password not specified")
        elif password:
            raise Error("Specified password without username")
        self._username = username
        self._password = password
        self._logger = logger
        self._curl_config_fn = curl_config_fn
        self._curl_factory = curl_factory or pycurl.Curl
        self._base_url = "https://" + netutils.FormatAddress((host, port))

    def _CreateCurl(self) -> pycurl.Curl:
        curl = self._curl_factory()
        curl.setopt(pycurl.VERBOSE, False)
        curl.setopt(pycurl.FOLLOWLOCATION, False)
        curl.setopt(pycurl.MAXREDIRS, 5)
        curl.setopt(pycurl.NOSIGNAL, True)
        curl.setopt(pycurl.USERAGENT, self.USER_AGENT)
        curl.setopt(pycurl.SSL_VERIFYHOST, 0)
        curl.setopt(pycurl.SSL_VERIFYPEER, False)
        curl.setopt(pycurl.HTTPHEADER, [
            "Accept: %s" % HTTP_APP_JSON,
            "Content-type: %s" % HTTP_APP_JSON,
            # No "100 Continue" round trip before larger bodies
            "Expect:",
        ])
        if self._username is not None:
            curl.setopt(pycurl.HTTPAUTH, pycurl.HTTPAUTH_BASIC)
            # Separate options: a colon in the user name stays intact
            curl.setopt(pycurl.USERNAME, self._username)
            curl.setopt(pycurl.PASSWORD, self._password)
        if self._curl_config_fn:
            self._curl_config_fn(curl, self._logger)
        return curl

    def _SendRequest(self, method: str, path: str, query: _QueryItems | None,
                     content: Any) -> Any:
        """Send one request and return the decoded JSON answer.

        ``content`` None sends an empty body. Raises CertificateError if the
        peer certificate is rejected and GanetiApiError for transport
        failures and non-200 answers.
        """
        assert path.startswith("/")
        url = self._base_url + path
        if query:
            url += "?" + urllib.parse.urlencode(_EncodeQuery(query))
        if content is None:
            encoded_content = b""
        else:
            encoded_content = serializer.DumpJsonBytes(content)
        self._logger.debug("Sending request %s %s (content=%r)", method, url,
                           encoded_content)

        curl = self._CreateCurl()
        response = bytearray()
        curl.setopt(pycurl.CUSTOMREQUEST, method)
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.POSTFIELDS, encoded_content)
        curl.setopt(pycurl.WRITEFUNCTION, response.extend)
        try:
            curl.perform()
            http_code = curl.getinfo(pycurl.RESPONSE_CODE)
        except pycurl.error as err:
            code = err.args[0]
            if code in _CURL_SSL_CERT_ERRORS:
                raise CertificateError("SSL certificate error %s" % err,
                                       code=code) from err
            raise GanetiApiError(str(err), code=code) from err
        finally:
            # A factory may hand out the handle again; don't keep the
            # request and answer alive through it
            curl.setopt(pycurl.POSTFIELDS, b"")
            curl.setopt(pycurl.WRITEFUNCTION, lambda _: None)

        try:
            result = serializer.LoadJson(bytes(response)) if response else None
        except (serializer.JSONDecodeError, UnicodeDecodeError) as err:
            if http_code == HTTP_OK:
                raise GanetiApiError("Invalid JSON in response to %s %s: %s" %
                                     (method, path, err),
                                     code=http_code) from err
            # Errors from proxies or the HTTP layer need not be JSON
            result = bytes(response).decode("utf-8", "replace").strip()

        if http_code != HTTP_OK:
            if (isinstance(result, dict) and
                    {"code", "message", "explain"} <= result.keys()):
                msg = "%s %s: %s" % (result["code"], result["message"],
                                     result["explain"])
            else:
                msg = str(result)
            raise GanetiApiError(msg, code=http_code)
        return result

    def GetFeatures(self) -> list[str]:
        """The optional features of the server; [] from servers predating
        the resource."""
        try:
            return self._SendRequest(HTTP_GET, _Resource("features"), None,
                                     None)
        except GanetiApiError as err:
            if err.code == HTTP_NOT_FOUND:
                return []
            raise
