"""Client for the Ganeti remote API (RAPI), version 2.

Each RAPI resource has one method, named as in Ganeti so scripts written
against Ganeti's client keep working. Requests go over HTTPS with pycurl
(a fresh handle per request: the server closes every connection anyway),
bodies and answers are JSON, and a non-200 answer raises GanetiApiError
carrying the HTTP status as ``code``.

The peer certificate is not checked unless a ``curl_config_fn`` asks for it,
e.g. ``GenericCurlConfig(cafile=<the cluster's rapi.pem>)``: RAPI
certificates are usually self-signed, so there is no CA to default to.

Job-submitting methods return the job id as the server sends it (an int
from this server, a string from old Ganeti masterd); pass it on unchanged.

pycurl's global state must be set up while only one thread runs;
``UsesRapiClient`` does that around a program's main function.
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


class GanetiRapiClient:  # pylint: disable=too-many-public-methods
    """Client for one cluster's RAPI server (normally on the master)."""

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

    # Cluster ----------------------------------------------------------------

    def GetVersion(self) -> int:
        """The RAPI version the server speaks (2)."""
        return self._SendRequest(HTTP_GET, "/version", None, None)

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

    def GetOperatingSystems(self, reason: str | None = None) -> list[str]:
        """Names (with variants) of the OSes valid on all nodes."""
        return self._SendRequest(HTTP_GET, _Resource("os"),
                                 _Query(reason=reason), None)

    def GetInfo(self, reason: str | None = None) -> dict:
        """Cluster information (as ``gnt-cluster info``)."""
        return self._SendRequest(HTTP_GET, _Resource("info"),
                                 _Query(reason=reason), None)

    def RedistributeConfig(self, reason: str | None = None) -> Any:
        """Copy the configuration files to all nodes; returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("redistribute-config"),
                                 _Query(reason=reason), None)

    def CancelRepairIncident(self, incident_id: str,
                             reason: str | None = None) -> Any:
        """Cancel a repair incident of ganeti-maintd; returns the job
        id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("maintenance", "incidents", incident_id,
                                "cancel"),
            _Query(reason=reason), None)

    def ModifyCluster(self, reason: str | None = None, **kwargs: Any) -> Any:
        """Change cluster parameters (OpClusterSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT, _Resource("modify"),
                                 _Query(reason=reason), kwargs)

    def GetClusterTags(self, reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("tags"),
                                 _Query(reason=reason), None)

    def AddClusterTags(self, tags: Iterable[str], dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteClusterTags(self, tags: Iterable[str], dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Instances --------------------------------------------------------------

    def GetInstances(self, bulk: bool = False,
                     reason: str | None = None) -> list:
        """Instance names, or with ``bulk`` a dict per instance."""
        instances = self._SendRequest(HTTP_GET, _Resource("instances"),
                                      _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return instances
        return [inst["id"] for inst in instances]

    def GetInstance(self, instance: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("instances", instance),
                                 _Query(reason=reason), None)

    def GetInstanceInfo(self, instance: str, static: bool | None = None,
                        reason: str | None = None) -> Any:
        """Submit a job collecting detailed (``static``: configuration-only)
        instance data; returns the job id, whose result holds the data."""
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "info"),
                                 _Query(("static", static), reason=reason),
                                 None)

    @staticmethod
    def _UpdateWithKwargs(base: dict[str, Any], **kwargs: Any) -> None:
        """Add ``kwargs`` to a body (``dry_run`` goes to the query)."""
        base.update((key, value) for key, value in kwargs.items()
                    if key != "dry_run")

    def InstanceAllocation(self, mode: str, name: str, disk_template: str,
                           disks: list[dict], nics: list[dict],
                           **kwargs: Any) -> dict[str, Any]:
        """One instance's creation request, for InstancesMultiAlloc."""
        alloc = {
            "mode": mode,
            "name": name,
            "disk_template": disk_template,
            "disks": disks,
            "nics": nics,
        }
        self._UpdateWithKwargs(alloc, **kwargs)
        return alloc

    def InstancesMultiAlloc(self, instances: list[dict],
                            reason: str | None = None,
                            **kwargs: Any) -> Any:
        """Allocate several instances in one job; returns the job id."""
        body = {"instances": instances}
        self._UpdateWithKwargs(body, **kwargs)
        return self._SendRequest(HTTP_POST,
                                 _Resource("instances-multi-alloc"),
                                 _Query(dry_run=kwargs.get("dry_run", False),
                                        reason=reason), body)

    def CreateInstance(self, mode: str, name: str, disk_template: str,
                       disks: list[dict], nics: list[dict],
                       reason: str | None = None, **kwargs: Any) -> Any:
        """Create an instance (body version 1); returns the job id.

        Further OpInstanceCreate parameters go in ``kwargs``; ``dry_run``
        there only checks the request.
        """
        query = _Query(dry_run=kwargs.get("dry_run", False), reason=reason)
        if INST_CREATE_REQV1 not in self.GetFeatures():
            raise GanetiApiError("Server does not support new-style (version"
                                 " 1) instance creation requests")
        body = self.InstanceAllocation(mode, name, disk_template, disks, nics,
                                       **kwargs)
        body[_REQ_DATA_VERSION_FIELD] = 1
        return self._SendRequest(HTTP_POST, _Resource("instances"), query,
                                 body)

    def DeleteInstance(self, instance: str, dry_run: bool = False,
                       reason: str | None = None, **kwargs: Any) -> Any:
        """Returns the job id; ``kwargs`` (e.g. ``shutdown_timeout``) form the
        body."""
        return self._SendRequest(HTTP_DELETE, _Resource("instances", instance),
                                 _Query(dry_run=dry_run, reason=reason),
                                 kwargs)

    def ModifyInstance(self, instance: str, reason: str | None = None,
                       **kwargs: Any) -> Any:
        """Change instance parameters (OpInstanceSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("instances", instance, "modify"),
                                 _Query(reason=reason), kwargs)

    def ActivateInstanceDisks(self, instance: str,
                              ignore_size: bool | None = None,
                              reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "activate-disks"),
            _Query(("ignore_size", 1 if ignore_size else None),
                   reason=reason), None)

    def DeactivateInstanceDisks(self, instance: str, reason: str | None = None,
                                force: bool = False) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "deactivate-disks"),
            _Query(force=force, reason=reason), None)

    def RecreateInstanceDisks(self, instance: str,
                              disks: list[int] | None = None,
                              nodes: list[str] | None = None,
                              reason: str | None = None,
                              iallocator: str | None = None) -> Any:
        """Recreate ``disks`` (indices, default all), optionally on new
        ``nodes``; returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "recreate-disks"),
            _Query(reason=reason),
            _Body(disks=disks, nodes=nodes, iallocator=iallocator))

    def GrowInstanceDisk(self, instance: str, disk: int, amount: int,
                         wait_for_sync: bool | None = None,
                         reason: str | None = None) -> Any:
        """Grow disk number ``disk`` by ``amount`` MiB; returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "disk", disk, "grow"),
            _Query(reason=reason),
            _Body({"amount": amount}, wait_for_sync=wait_for_sync))

    def GetInstanceTags(self, instance: str,
                        reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "tags"),
                                 _Query(reason=reason), None)

    def AddInstanceTags(self, instance: str, tags: Iterable[str],
                        dry_run: bool = False,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("instances", instance, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteInstanceTags(self, instance: str, tags: Iterable[str],
                           dry_run: bool = False,
                           reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("instances", instance, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def RebootInstance(self, instance: str, reboot_type: str | None = None,
                       ignore_secondaries: bool | None = None,
                       dry_run: bool = False, reason: str | None = None,
                       **kwargs: Any) -> Any:
        """Reboot (``reboot_type`` soft, hard or full; the server defaults to
        hard); returns the job id."""
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "reboot"),
            _Query(("type", reboot_type or None),
                   ("ignore_secondaries", ignore_secondaries),
                   dry_run=dry_run, reason=reason), kwargs)

    def ShutdownInstance(self, instance: str, dry_run: bool = False,
                         no_remember: bool = False, reason: str | None = None,
                         **kwargs: Any) -> Any:
        """Shut down; ``no_remember`` leaves the configured state unchanged.
        Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "shutdown"),
            _Query(("no_remember", 1 if no_remember else None),
                   dry_run=dry_run, reason=reason), kwargs)

    def StartupInstance(self, instance: str, dry_run: bool = False,
                        no_remember: bool = False,
                        reason: str | None = None) -> Any:
        """Start; ``no_remember`` leaves the configured state unchanged.
        Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "startup"),
            _Query(("no_remember", 1 if no_remember else None),
                   dry_run=dry_run, reason=reason), None)

    def ReinstallInstance(self, instance: str, os: str | None = None,
                          no_startup: bool = False,
                          osparams: dict | None = None,
                          reason: str | None = None
                          ) -> Any:  # pylint: disable=redefined-builtin
        """Reinstall with ``os`` (default: the current one); returns the job
        id."""
        path = _Resource("instances", instance, "reinstall")
        if INST_REINSTALL_REQV1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, _Query(reason=reason),
                _Body({"start": not no_startup}, os=os, osparams=osparams))
        # Servers before 2.5 take query parameters only
        if osparams:
            raise GanetiApiError("Server does not support specifying OS"
                                 " parameters for instance reinstallation")
        return self._SendRequest(
            HTTP_POST, path,
            _Query(("os", os or None),
                   ("nostartup", 1 if no_startup else None)), None)

    def ReplaceInstanceDisks(self, instance: str,
                             disks: list[int] | None = None,
                             mode: str = REPLACE_DISK_AUTO,
                             remote_node: str | None = None,
                             iallocator: str | None = None,
                             reason: str | None = None,
                             early_release: bool | None = None) -> Any:
        """Replace ``disks`` (indices) in ``mode`` (REPLACE_DISK_*); returns
        the job id."""
        disk_list = (None if disks is None
                     else ",".join(str(idx) for idx in disks))
        return self._SendRequest(
            HTTP_POST, _Resource("instances", instance, "replace-disks"),
            _Query(("mode", mode), ("disks", disk_list),
                   ("remote_node", remote_node), ("iallocator", iallocator),
                   ("early_release", early_release), reason=reason), None)

    def PrepareExport(self, instance: str, mode: str,
                      reason: str | None = None) -> Any:
        """Prepare a ``mode`` (local or remote) export; returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "prepare-export"),
            _Query(("mode", mode), reason=reason), None)

    def ExportInstance(self, instance: str, mode: str, destination: Any,
                       shutdown: bool | None = None,
                       remove_instance: bool | None = None,
                       x509_key_name: Any = None,
                       destination_x509_ca: str | None = None,
                       compress: str | None = None,
                       reason: str | None = None) -> Any:
        """Export to ``destination`` (a node, or remote-export details);
        returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "export"),
            _Query(reason=reason),
            _Body({"destination": destination, "mode": mode},
                  shutdown=shutdown, remove_instance=remove_instance,
                  x509_key_name=x509_key_name,
                  destination_x509_ca=destination_x509_ca,
                  compress=compress))

    def MigrateInstance(self, instance: str, mode: str | None = None,
                        cleanup: bool | None = None,
                        target_node: str | None = None,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "migrate"),
            _Query(reason=reason),
            _Body(mode=mode, cleanup=cleanup, target_node=target_node))

    def FailoverInstance(self, instance: str, iallocator: str | None = None,
                         ignore_consistency: bool | None = None,
                         target_node: str | None = None,
                         reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "failover"),
            _Query(reason=reason),
            _Body(iallocator=iallocator,
                  ignore_consistency=ignore_consistency,
                  target_node=target_node))

    def MoveInstance(self, instance: str, target_node: str,
                     reason: str | None = None, **kwargs: Any) -> Any:
        """Move to ``target_node`` by copying the disks; further
        OpInstanceMove parameters (``shutdown_timeout``, ``compress``, ...)
        go in ``kwargs``. Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "move"),
            _Query(reason=reason),
            _Body({"target_node": target_node}, **kwargs))

    def ChangeInstanceGroup(self, instance: str,
                            target_groups: list[str] | None = None,
                            iallocator: str | None = None,
                            early_release: bool | None = None,
                            reason: str | None = None) -> Any:
        """Move to a node of another group (default: any other group);
        returns the job id, whose result lists the jobs doing the move."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "change-group"),
            _Query(reason=reason),
            _Body(target_groups=target_groups, iallocator=iallocator,
                  early_release=early_release))

    def RenameInstance(self, instance: str, new_name: str,
                       ip_check: bool | None = None,
                       name_check: bool | None = None,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("instances", instance, "rename"),
            _Query(reason=reason),
            _Body({"new_name": new_name}, ip_check=ip_check,
                  name_check=name_check))

    def GetInstanceConsole(self, instance: str,
                           reason: str | None = None) -> dict:
        """How to reach the console of a running instance."""
        return self._SendRequest(HTTP_GET,
                                 _Resource("instances", instance, "console"),
                                 _Query(reason=reason), None)

    # Jobs -------------------------------------------------------------------

    def GetJobs(self, bulk: bool = False) -> list:
        """Job ids (as ints), or with ``bulk`` a dict per job."""
        jobs = self._SendRequest(HTTP_GET, _Resource("jobs"),
                                 _Query(bulk=bulk), None)
        if bulk:
            return jobs
        return [int(job["id"]) for job in jobs]

    def GetJobStatus(self, job_id: int | str) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("jobs", job_id), None,
                                 None)

    def WaitForJobCompletion(self, job_id: int | str, period: float = 5,
                             retries: int = -1) -> bool:
        """Poll every ``period`` seconds until the job is finalized.

        Returns whether it succeeded; False also after ``retries`` polls
        (-1: no limit). WaitForJobChange reports changes without the
        polling delay.
        """
        while retries != 0:
            job = self.GetJobStatus(job_id)
            status = job.get("status") if job else None
            if status == JOB_STATUS_SUCCESS:
                return True
            if status is None or status in JOB_STATUS_FINALIZED:
                # An unknown job (every field null) will never succeed
                return False
            if period:
                time.sleep(period)
            if retries > 0:
                retries -= 1
        return False

    def WaitForJobChange(self, job_id: int | str, fields: list[str],
                         prev_job_info: list | None,
                         prev_log_serial: int | None) -> dict | None:
        """Wait (a server-set time) until the job's ``fields`` differ from
        ``prev_job_info`` or log entries after ``prev_log_serial`` appear.

        Returns None if nothing changed, else a dict with ``job_info`` and
        ``log_entries``.
        """
        body = {
            "fields": fields,
            "previous_job_info": prev_job_info,
            "previous_log_serial": prev_log_serial,
        }
        return self._SendRequest(HTTP_GET, _Resource("jobs", job_id, "wait"),
                                 None, body)

    def CancelJob(self, job_id: int | str, dry_run: bool = False) -> list:
        """Returns ``[success, message]``."""
        return self._SendRequest(HTTP_DELETE, _Resource("jobs", job_id),
                                 _Query(dry_run=dry_run), None)

    # Nodes ------------------------------------------------------------------

    def GetNodes(self, bulk: bool = False, reason: str | None = None) -> list:
        """Node names, or with ``bulk`` a dict per node."""
        nodes = self._SendRequest(HTTP_GET, _Resource("nodes"),
                                  _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return nodes
        return [node["id"] for node in nodes]

    def GetNode(self, node: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("nodes", node),
                                 _Query(reason=reason), None)

    def EvacuateNode(self, node: str, iallocator: str | None = None,
                     remote_node: str | None = None, dry_run: bool = False,
                     early_release: bool | None = None,
                     mode: str | None = None, accept_old: bool = False,
                     reason: str | None = None) -> Any:
        """Move instances off a node (``mode``: NODE_EVAC_*); returns the
        job id.

        Servers before 2.5 can only move secondaries and answer in an old
        format, which the caller must accept with ``accept_old``.
        """
        if iallocator and remote_node:
            raise GanetiApiError("Only one of iallocator or remote_node can"
                                 " be used")
        path = _Resource("nodes", node, "evacuate")
        if NODE_EVAC_RES1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, _Query(dry_run=dry_run, reason=reason),
                _Body(iallocator=iallocator, remote_node=remote_node,
                      early_release=early_release, mode=mode))
        if not accept_old:
            raise GanetiApiError("Server is version 2.4 or earlier and caller"
                                 " does not accept old-style results"
                                 " (parameter accept_old)")
        if mode is not None and mode != NODE_EVAC_SEC:
            raise GanetiApiError("Server can only evacuate secondary"
                                 " instances")
        return self._SendRequest(
            HTTP_POST, path,
            _Query(("iallocator", iallocator or None),
                   ("remote_node", remote_node or None),
                   ("early_release", 1 if early_release else None),
                   dry_run=dry_run, reason=reason), None)

    def MigrateNode(self, node: str, mode: str | None = None,
                    dry_run: bool = False, iallocator: str | None = None,
                    target_node: str | None = None,
                    reason: str | None = None) -> Any:
        """Migrate all primary instances of a node; returns the job id."""
        path = _Resource("nodes", node, "migrate")
        query = _Query(dry_run=dry_run, reason=reason)
        if NODE_MIGRATE_REQV1 in self.GetFeatures():
            return self._SendRequest(
                HTTP_POST, path, query,
                _Body(mode=mode, iallocator=iallocator,
                      target_node=target_node))
        if target_node is not None:
            raise GanetiApiError("Server does not support specifying target"
                                 " node for node migration")
        return self._SendRequest(HTTP_POST, path,
                                 query + _Query(("mode", mode)), None)

    def GetNodeRole(self, node: str, reason: str | None = None) -> str:
        """One of the NODE_ROLE_* values."""
        return self._SendRequest(HTTP_GET, _Resource("nodes", node, "role"),
                                 _Query(reason=reason), None)

    def SetNodeRole(self, node: str, role: str, force: bool = False,
                    auto_promote: bool | None = None,
                    reason: str | None = None) -> Any:
        """Set a NODE_ROLE_* (not master); returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "role"),
            _Query(("auto-promote", auto_promote), force=force,
                   reason=reason), role)

    def PowercycleNode(self, node: str, force: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_POST,
                                 _Resource("nodes", node, "powercycle"),
                                 _Query(force=force, reason=reason), None)

    def ModifyNode(self, node: str, reason: str | None = None,
                   **kwargs: Any) -> Any:
        """Change node parameters (OpNodeSetParams); returns the job id."""
        return self._SendRequest(HTTP_POST, _Resource("nodes", node, "modify"),
                                 _Query(reason=reason), kwargs)

    def GetNodeStorageUnits(self, node: str, storage_type: str,
                            output_fields: str,
                            reason: str | None = None) -> Any:
        """Submit a storage query (``output_fields`` comma-separated);
        returns the job id, whose result holds the data."""
        return self._SendRequest(
            HTTP_GET, _Resource("nodes", node, "storage"),
            _Query(("storage_type", storage_type),
                   ("output_fields", output_fields), reason=reason), None)

    def ModifyNodeStorageUnits(self, node: str, storage_type: str, name: str,
                               allocatable: bool | None = None,
                               reason: str | None = None) -> Any:
        """Returns the job id; ``allocatable`` None leaves it unchanged."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "storage", "modify"),
            _Query(("storage_type", storage_type), ("name", name),
                   ("allocatable", allocatable), reason=reason), None)

    def RepairNodeStorageUnits(self, node: str, storage_type: str, name: str,
                               reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("nodes", node, "storage", "repair"),
            _Query(("storage_type", storage_type), ("name", name),
                   reason=reason), None)

    def GetNodeTags(self, node: str, reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("nodes", node, "tags"),
                                 _Query(reason=reason), None)

    def AddNodeTags(self, node: str, tags: list[str], dry_run: bool = False,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        # Ganeti's client also sends the tags as body (the server ignores it)
        return self._SendRequest(HTTP_PUT, _Resource("nodes", node, "tags"),
                                 _TagQuery(tags, dry_run, reason), tags)

    def DeleteNodeTags(self, node: str, tags: Iterable[str],
                       dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("nodes", node, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Networks ---------------------------------------------------------------

    def GetNetworks(self, bulk: bool = False,
                    reason: str | None = None) -> list:
        """Network names, or with ``bulk`` a dict per network."""
        networks = self._SendRequest(HTTP_GET, _Resource("networks"),
                                     _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return networks
        return [net["name"] for net in networks]

    def GetNetwork(self, network: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("networks", network),
                                 _Query(reason=reason), None)

    def CreateNetwork(self, network_name: str, network: str,
                      gateway: str | None = None, network6: str | None = None,
                      gateway6: str | None = None,
                      mac_prefix: str | None = None,
                      add_reserved_ips: str | None = None,
                      tags: str | None = None, dry_run: bool = False,
                      reason: str | None = None) -> Any:
        """Create a network; ``add_reserved_ips`` and ``tags`` are
        comma-separated, as on the command line. Returns the job id."""
        body = {
            "network_name": network_name,
            "network": network,
            "gateway": gateway,
            "network6": network6,
            "gateway6": gateway6,
            "mac_prefix": mac_prefix,
            "add_reserved_ips": (add_reserved_ips.split(",")
                                 if add_reserved_ips else add_reserved_ips),
            "tags": tags.split(",") if tags else tags,
        }
        return self._SendRequest(HTTP_POST, _Resource("networks"),
                                 _Query(dry_run=dry_run, reason=reason), body)

    def ConnectNetwork(self, network_name: str, group_name: str, mode: str,
                       link: str, vlan: str = "", dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Connect a network to a node group; returns the job id."""
        body = {
            "group_name": group_name,
            "network_mode": mode,
            "network_link": link,
            "network_vlan": vlan,
        }
        return self._SendRequest(
            HTTP_PUT, _Resource("networks", network_name, "connect"),
            _Query(dry_run=dry_run, reason=reason), body)

    def DisconnectNetwork(self, network_name: str, group_name: str,
                          dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(
            HTTP_PUT, _Resource("networks", network_name, "disconnect"),
            _Query(dry_run=dry_run, reason=reason),
            {"group_name": group_name})

    def ModifyNetwork(self, network: str, reason: str | None = None,
                      **kwargs: Any) -> Any:
        """Change network parameters (OpNetworkSetParams); returns the job
        id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("networks", network, "modify"),
                                 _Query(reason=reason), kwargs)

    def DeleteNetwork(self, network: str, dry_run: bool = False,
                      reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("networks", network),
                                 _Query(dry_run=dry_run, reason=reason), None)

    def GetNetworkTags(self, network: str,
                       reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET,
                                 _Resource("networks", network, "tags"),
                                 _Query(reason=reason), None)

    def AddNetworkTags(self, network: str, tags: Iterable[str],
                       dry_run: bool = False,
                       reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("networks", network, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteNetworkTags(self, network: str, tags: Iterable[str],
                          dry_run: bool = False,
                          reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("networks", network, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Node groups ------------------------------------------------------------

    def GetGroups(self, bulk: bool = False, reason: str | None = None) -> list:
        """Group names, or with ``bulk`` a dict per group."""
        groups = self._SendRequest(HTTP_GET, _Resource("groups"),
                                   _Query(bulk=bulk, reason=reason), None)
        if bulk:
            return groups
        return [group["name"] for group in groups]

    def GetGroup(self, group: str, reason: str | None = None) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("groups", group),
                                 _Query(reason=reason), None)

    def CreateGroup(self, name: str, alloc_policy: str | None = None,
                    dry_run: bool = False, reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_POST, _Resource("groups"),
                                 _Query(dry_run=dry_run, reason=reason),
                                 {"name": name, "alloc_policy": alloc_policy})

    def ModifyGroup(self, group: str, reason: str | None = None,
                    **kwargs: Any) -> Any:
        """Change group parameters (OpGroupSetParams); returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "modify"),
                                 _Query(reason=reason), kwargs)

    def DeleteGroup(self, group: str, dry_run: bool = False,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE, _Resource("groups", group),
                                 _Query(dry_run=dry_run, reason=reason), None)

    def RenameGroup(self, group: str, new_name: str,
                    reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "rename"),
                                 _Query(reason=reason),
                                 {"new_name": new_name})

    def AssignGroupNodes(self, group: str, nodes: list[str],
                         force: bool = False, dry_run: bool = False,
                         reason: str | None = None) -> Any:
        """Move ``nodes`` into ``group``; returns the job id."""
        return self._SendRequest(HTTP_PUT,
                                 _Resource("groups", group, "assign-nodes"),
                                 _Query(force=force, dry_run=dry_run,
                                        reason=reason),
                                 {"nodes": nodes})

    def GetGroupTags(self, group: str,
                     reason: str | None = None) -> list[str]:
        return self._SendRequest(HTTP_GET, _Resource("groups", group, "tags"),
                                 _Query(reason=reason), None)

    def AddGroupTags(self, group: str, tags: Iterable[str],
                     dry_run: bool = False, reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_PUT, _Resource("groups", group, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    def DeleteGroupTags(self, group: str, tags: Iterable[str],
                        dry_run: bool = False,
                        reason: str | None = None) -> Any:
        """Returns the job id."""
        return self._SendRequest(HTTP_DELETE,
                                 _Resource("groups", group, "tags"),
                                 _TagQuery(tags, dry_run, reason), None)

    # Queries ----------------------------------------------------------------

    def Query(self, what: str, fields: list[str], qfilter: Any = None,
              reason: str | None = None) -> dict:
        """Query resource ``what`` (node, group, instance, job, ...).

        Returns ``{"fields": [field definitions], "data": [rows]}``, each
        row a list of ``[status, value]``.
        """
        # "filter" is the name servers before 2.7 know
        body = _Body({"fields": fields}, qfilter=qfilter, filter=qfilter)
        return self._SendRequest(HTTP_PUT, _Resource("query", what),
                                 _Query(reason=reason), body)

    def QueryFields(self, what: str, fields: list[str] | None = None,
                    reason: str | None = None) -> dict:
        """Definitions of ``fields`` (default all) of resource ``what``."""
        field_list = None if fields is None else ",".join(fields)
        return self._SendRequest(HTTP_GET,
                                 _Resource("query", what, "fields"),
                                 _Query(("fields", field_list), reason=reason),
                                 None)

    # Job filters ------------------------------------------------------------

    def GetFilters(self, bulk: bool = False) -> list:
        """Filter rule UUIDs, or with ``bulk`` a dict per rule."""
        filters = self._SendRequest(HTTP_GET, _Resource("filters"),
                                    _Query(bulk=bulk), None)
        if bulk:
            return filters
        return [rule["uuid"] for rule in filters]

    def GetFilter(self, filter_uuid: str) -> dict:
        return self._SendRequest(HTTP_GET, _Resource("filters", filter_uuid),
                                 None, None)

    @staticmethod
    def _FilterBody(priority: int, predicates: list, action: Any,
                    reason_trail: list | None) -> dict[str, Any]:
        # The client marks its own entry in the rule's reason trail
        trail = list(reason_trail or [])
        trail.append(("gnt:client", "", EpochNano()))
        return {
            "priority": priority,
            "predicates": predicates,
            "action": action,
            "reason": trail,
        }

    def AddFilter(self, priority: int, predicates: list, action: Any,
                  reason_trail: list | None = None) -> str:
        """Add a job filter rule (applied at once, no job); returns its
        UUID."""
        return self._SendRequest(
            HTTP_POST, _Resource("filters"), None,
            self._FilterBody(priority, predicates, action, reason_trail))

    def ReplaceFilter(self, uuid: str, priority: int, predicates: list,
                      action: Any, reason_trail: list | None = None) -> str:
        """Replace the rule ``uuid``, or add it; returns its UUID."""
        return self._SendRequest(
            HTTP_PUT, _Resource("filters", uuid), None,
            self._FilterBody(priority, predicates, action, reason_trail))

    def DeleteFilter(self, uuid: str) -> None:
        return self._SendRequest(HTTP_DELETE, _Resource("filters", uuid),
                                 None, {})
