"""The instance and OS resources of ganeti-rapi on a real virtual cluster.

Two nodes with the fake hypervisor and the shipped tinyimage OS (plus a
copy with variants); instances are created with the body Ganeti's RAPI
client sends and driven through their resources over real HTTPS, through
http.client and through Ganeti's client. The last test restarts the
daemon with ``--ssl-chain`` and a certificate issued by an intermediate
CA, and checks that a client trusting only the root CA accepts it.
"""

import datetime
import ipaddress
import os
import signal
import ssl
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ganeti import constants
from ganeti.rapi import client as rapi_client

from testutils_instance import (ADMIN, NODE2, RAPI_PORT, READER, FakeState,
                                InstanceCluster, OsVariant, RapiClient,
                                RapiRequest)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def vc():
    # "tinyvar": tinyimage with two variants
    tinyvar = OsVariant({"variants.list": "small\nbig\n"})
    with InstanceCluster(nodes=(NODE2, ), file_paths=(),
                         extra_os={"tinyvar": tinyvar},
                         rapi_users=True) as cluster:
        yield cluster


def _Ok(cluster, method, path, body=None, user=ADMIN):
    status, result = RapiRequest(cluster, method, path, body, user)
    assert status == 200, (method, path, status, result)
    return result


def _Error(cluster, code, method, path, body=None, user=ADMIN) -> str:
    status, result = RapiRequest(cluster, method, path, body, user)
    assert status == code, (method, path, status, result)
    assert result["code"] == code
    return result["message"]


def _Wait(cluster, job_id, expected=constants.JOB_STATUS_SUCCESS) -> dict:
    """Wait for a job (through /2/jobs/[id]/wait); return its details."""
    assert isinstance(job_id, int)
    deadline = time.monotonic() + 120
    info = None
    while time.monotonic() < deadline:
        change = _Ok(cluster, "GET", "/2/jobs/%d/wait" % job_id,
                     {"fields": ["status"], "previous_job_info": info,
                      "previous_log_serial": None})
        if change is not None:
            info = change["job_info"]
            if info[0] in constants.JOBS_FINALIZED:
                break
    job = _Ok(cluster, "GET", "/2/jobs/%d" % job_id)
    assert job["status"] == expected, (job["status"], job["opresult"])
    return job


def _Create(rclient, name, **kwargs):
    """Create a diskless instance on NODE2 as Ganeti's client would."""
    params = {"os": "tinyimage", "pnode": NODE2, "name_check": False,
              "ip_check": False, "beparams": {"maxmem": 128, "minmem": 128,
                                              "vcpus": 1}}
    params.update(kwargs)
    return rclient.CreateInstance(constants.INSTANCE_CREATE, name,
                                  constants.DT_DISKLESS, [],
                                  [{"mac": "aa:00:00:35:00:01"}], **params)


# Instances -------------------------------------------------------------------

def test_instance_lifecycle(vc):
    rclient = RapiClient(vc)
    assert rapi_client.INST_CREATE_REQV1 in rclient.GetFeatures()
    job_id = _Create(rclient, "rinst1", reason="rapi test",
                     tags=["from-rapi"])
    job = _Wait(vc, job_id)
    op = job["ops"][0]
    assert (op["OP_ID"], op["instance_name"], op["os_type"]) == \
        ("OP_INSTANCE_CREATE", "rinst1", "tinyimage")
    assert "__version__" not in op
    assert op["reason"][0][:2] == ["gnt:user", "rapi test"]
    assert os.path.exists(FakeState(vc.nodes[NODE2], "rinst1"))
    try:
        assert rclient.GetInstances() == ["rinst1"]
        assert _Ok(vc, "GET", "/2/instances", user=None) == \
            [{"id": "rinst1", "uri": "/2/instances/rinst1"}]
        (bulk, ) = rclient.GetInstances(bulk=True)
        assert (bulk["name"], bulk["pnode"], bulk["status"],
                bulk["oper_state"], bulk["disk_template"],
                bulk["nic.macs"], bulk["tags"]) == \
            ("rinst1", NODE2, "running", True, "diskless",
             ["aa:00:00:35:00:01"], ["from-rapi"])
        # Clients before 2.6 read the memory as beparams["memory"]
        assert bulk["beparams"]["memory"] == bulk["beparams"]["maxmem"] == 128
        inst = rclient.GetInstance("rinst1")
        assert set(inst) == set(bulk)
        assert inst["oper_ram"] == 128
        assert inst["custom_beparams"]["vcpus"] == 1
        assert inst["nic.networks"] == [None] and inst["disk.sizes"] == []

        job = _Wait(vc, rclient.ShutdownInstance("rinst1", timeout=5))
        assert job["ops"][0]["timeout"] == 5
        assert not os.path.exists(FakeState(vc.nodes[NODE2], "rinst1"))
        inst = rclient.GetInstance("rinst1")
        assert (inst["status"], inst["admin_state"], inst["oper_ram"]) == \
            ("ADMIN_down", "down", None)
        job = _Wait(vc, rclient.StartupInstance("rinst1", no_remember=True))
        assert job["ops"][0]["no_remember"] is True
        assert rclient.GetInstance("rinst1")["status"] == "ERROR_up"
        _Wait(vc, rclient.StartupInstance("rinst1"))
        assert rclient.GetInstance("rinst1")["status"] == "running"

        job = _Wait(vc, rclient.RebootInstance("rinst1"))
        assert job["ops"][0]["reboot_type"] == "hard"
        job = _Wait(vc, rclient.RebootInstance("rinst1", reboot_type="soft",
                                               shutdown_timeout=7))
        assert (job["ops"][0]["reboot_type"],
                job["ops"][0]["shutdown_timeout"]) == ("soft", 7)
        assert "reboot_type" in _Error(
            vc, 400, "POST", "/2/instances/rinst1/reboot?type=bogus")
        assert os.path.exists(FakeState(vc.nodes[NODE2], "rinst1"))

        _Wait(vc, rclient.AddInstanceTags("rinst1", ["web", "prod"]))
        assert sorted(rclient.GetInstanceTags("rinst1")) == \
            ["from-rapi", "prod", "web"]
        _Wait(vc, rclient.DeleteInstanceTags("rinst1", ["prod",
                                                        "from-rapi"]))
        assert _Ok(vc, "GET", "/2/instances/rinst1/tags", user=None) == \
            ["web"]

        job = _Wait(vc, rclient.DeleteInstance("rinst1", dry_run=True))
        assert job["ops"][0]["dry_run"] is True
        assert rclient.GetInstances() == ["rinst1"]
    finally:
        job = _Wait(vc, rclient.DeleteInstance("rinst1", shutdown_timeout=5))
    op = job["ops"][0]
    assert (op["OP_ID"], op["ignore_failures"], op["shutdown_timeout"]) == \
        ("OP_INSTANCE_REMOVE", False, 5)
    assert rclient.GetInstances() == []
    assert not os.path.exists(FakeState(vc.nodes[NODE2], "rinst1"))


def test_create_request_versions_and_renames(vc):
    body = {"__version__": 1, "mode": "create", "name": "rinst2",
            "disk_template": "diskless", "disks": [], "nics": [{}],
            "os": "tinyimage", "pnode": NODE2, "name_check": False,
            "ip_check": False, "start": False}
    job = _Wait(vc, _Ok(vc, "POST", "/2/instances?dry-run=1", body))
    op = job["ops"][0]
    assert (op["dry_run"], op["instance_name"], op["start"]) == \
        (True, "rinst2", False)
    assert _Ok(vc, "GET", "/2/instances") == []

    assert "version 0 is no longer supported" in _Error(
        vc, 400, "POST", "/2/instances",
        {key: value for key, value in body.items() if key != "__version__"})
    assert "Unsupported request data version 2" in _Error(
        vc, 400, "POST", "/2/instances", dict(body, __version__=2))
    assert "renamed to 'instance_name', but both are specified" in _Error(
        vc, 400, "POST", "/2/instances", dict(body, instance_name="x"))
    assert "Body contents" in _Error(vc, 400, "POST", "/2/instances",
                                     ["not", "a", "dict"])
    message = _Error(vc, 400, "POST", "/2/instances",
                     dict(body, disks="notalist"))
    assert message.startswith("Invalid body parameters:") and \
        "disks" in message, message
    assert "bogus" in _Error(vc, 400, "POST", "/2/instances",
                             dict(body, bogus=1))
    _Error(vc, 401, "POST", "/2/instances", body, user=None)
    _Error(vc, 403, "POST", "/2/instances", body, user=READER)
    # Space-separated USB devices are accepted and sent with commas; no
    # hypervisor of this cluster knows the parameter, so the job fails
    job = _Wait(vc, _Ok(vc, "POST", "/2/instances?dry-run=1",
                        dict(body, hvparams={"usb_devices": "a b c"})),
                expected=constants.JOB_STATUS_ERROR)
    assert job["ops"][0]["hvparams"] == {"usb_devices": "a,b,c"}


def test_unknown_instance(vc):
    assert "nosuch" in _Error(vc, 404, "GET", "/2/instances/nosuch")
    _Error(vc, 404, "GET", "/2/instances/nosuch/tags")
    _Error(vc, 404, "GET", "/2/instances/bad%20name")
    _Error(vc, 501, "POST", "/2/instances/nosuch")
    _Error(vc, 501, "GET", "/2/instances/nosuch/startup")
    # Changes are jobs; the unknown name is found when they run
    for method, path in (("PUT", "startup"), ("PUT", "shutdown"),
                         ("POST", "reboot")):
        job_id = _Ok(vc, method, "/2/instances/nosuch/%s" % path)
        job = _Wait(vc, job_id, expected=constants.JOB_STATUS_ERROR)
        assert "nosuch" in str(job["opresult"])
    _Wait(vc, _Ok(vc, "DELETE", "/2/instances/nosuch"),
          expected=constants.JOB_STATUS_ERROR)
    with pytest.raises(rapi_client.GanetiApiError) as err:
        RapiClient(vc).GetInstance("nosuch")
    assert err.value.code == 404
    assert "Can't overwrite static parameters instance_name" in _Error(
        vc, 400, "PUT", "/2/instances/x/shutdown", {"instance_name": "y"})
    assert "no_remember" in _Error(vc, 400, "PUT",
                                   "/2/instances/x/startup?no_remember=yes")


# Operating systems -----------------------------------------------------------

def test_operating_systems(vc):
    rclient = RapiClient(vc)
    assert rclient.GetOperatingSystems() == \
        ["tinyimage", "tinyvar+big", "tinyvar+small"]
    assert _Ok(vc, "GET", "/2/os", user=None) == \
        ["tinyimage", "tinyvar+big", "tinyvar+small"]
    oses = {info["name"]: info for info in _Ok(vc, "GET", "/2/os?bulk=1")}
    assert set(oses) == {"tinyimage", "tinyvar"}
    info = oses["tinyvar"]
    assert set(info) == {"name", "valid", "variants", "parameters",
                         "api_versions", "blacklisted", "hidden", "trusted"}
    assert (info["valid"], info["variants"], info["hidden"]) == \
        (True, ["big", "small"], False)
    assert {"name": "message", "description": "Line the init script prints"
            " on the console when the guest boots"} in info["parameters"]
    assert info["api_versions"] == [20]
    # Hidden OSes are left out of the names, not of the details
    _Wait(vc, _Ok(vc, "PUT", "/2/modify",
                  {"hidden_os": [["add", "tinyvar"]]}))
    try:
        assert rclient.GetOperatingSystems() == ["tinyimage"]
        assert {info["name"]: info["hidden"] for info in
                _Ok(vc, "GET", "/2/os?bulk=1")}["tinyvar"] is True
    finally:
        _Wait(vc, _Ok(vc, "PUT", "/2/modify",
                      {"hidden_os": [["remove", "tinyvar"]]}))


# Certificate chain -----------------------------------------------------------

def _Name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _Issue(subject: str, key, issuer: str, issuer_key, ca: bool,
           ip: str | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder()
               .subject_name(_Name(subject)).issuer_name(_Name(issuer))
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                              critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True,
            content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
    if ip:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(ip))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _Pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _MakeChain(directory: str, ip: str) -> dict[str, str]:
    """A root CA, an intermediate CA and a server certificate for ``ip``.

    Returns the paths of: root (the clients' trust), server (certificate
    and key) and chain (the intermediate).
    """
    root_key, inter_key, leaf_key = (ec.generate_private_key(ec.SECP256R1())
                                     for _ in range(3))
    root = _Issue("Test Root CA", root_key, "Test Root CA", root_key, True)
    inter = _Issue("Test Intermediate CA", inter_key, "Test Root CA",
                   root_key, True)
    leaf = _Issue("rapi.example.test", leaf_key, "Test Intermediate CA",
                  inter_key, False, ip=ip)
    paths = {name: os.path.join(directory, name + ".pem")
             for name in ("root", "server", "chain")}
    key_pem = leaf_key.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
    for name, data in (("root", _Pem(root)), ("chain", _Pem(inter)),
                       ("server", _Pem(leaf) + key_pem)):
        with open(paths[name], "wb") as fobj:
            fobj.write(data)
    return paths


def _RestartRapi(cluster, *args: str) -> None:
    cluster.KillDaemon(constants.RAPI, signal.SIGTERM)
    cluster.Run("daemon-util", "start", constants.RAPI, *args)
    deadline = time.monotonic() + 15
    while True:
        try:
            RapiRequest(cluster, "GET", "/version", user=None)
            return
        except (ConnectionError, OSError):
            assert time.monotonic() < deadline, "ganeti-rapi did not start"
            time.sleep(0.1)


def test_ssl_chain(vc, tmp_path):
    paths = _MakeChain(str(tmp_path), vc.node_ip)
    trusting_root = ssl.create_default_context(cafile=paths["root"])
    trusting_root.check_hostname = True
    cert_opts = ("-C", paths["server"], "-K", paths["server"])
    try:
        # Without the intermediate the client can't build a path to the root
        _RestartRapi(vc, *cert_opts)
        with pytest.raises(ssl.SSLCertVerificationError):
            RapiRequest(vc, "GET", "/version", context=trusting_root)

        _RestartRapi(vc, *cert_opts, "--ssl-chain", paths["chain"])
        status, version = RapiRequest(vc, "GET", "/version",
                                      context=trusting_root)
        assert (status, version) == (200, 2)
        rclient = rapi_client.GanetiRapiClient(
            vc.node_ip, RAPI_PORT, username=ADMIN[0], password=ADMIN[1],
            curl_config_fn=rapi_client.GenericCurlConfig(
                proxy="", timeout=30, cafile=paths["root"],
                verify_hostname=True))
        assert rclient.GetVersion() == 2

        # A chain file without certificates keeps the daemon from starting
        empty = str(tmp_path / "empty.pem")
        with open(empty, "w", encoding="ascii") as fobj:
            fobj.write("# nothing\n")
        vc.KillDaemon(constants.RAPI, signal.SIGTERM)
        result = vc.Run("daemon-util", "start", constants.RAPI, *cert_opts,
                        "--ssl-chain", empty, check=False)
        assert result.returncode != 0
        assert "Invalid SSL certificate chain %s" % empty in \
            result.stdout + result.stderr
    finally:
        _RestartRapi(vc)
