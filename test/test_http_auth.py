"""ganeti.http.auth: users file parsing and HTTP Basic authentication."""

import base64
import hashlib
import os

import pytest

from ganeti import http as ghttp
from ganeti.http import auth

REALM = "Ganeti Remote API"


def _Basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode("utf-8")).decode("ascii")


def _Ha1(user: str, password: str, realm: str = REALM) -> str:
    return hashlib.md5(("%s:%s:%s" % (user, realm, password))
                       .encode()).hexdigest()


def test_parse_password_file():
    users = auth.ParsePasswordFile(
        "# comment\n"
        "\n"
        "  jack   abc123   write  \n"
        "jill {HA1}0123 read,write\n"
        "bob pw read, write\n"
        "lonely\n"
        "   # indented comment\n"
        "tab\tpass\tread\n")
    assert sorted(users) == ["bob", "jack", "jill", "tab"]
    assert (users["jack"].password, users["jack"].options) == \
        ("abc123", ["write"])
    assert users["jill"].options == ["read", "write"]
    assert users["tab"].options == ["read"]
    # The options are the rest of the line, split at commas
    assert users["bob"].options == ["read", "write"]
    assert "abc123" not in repr(users["jack"])


def test_parse_password_file_later_lines_win():
    users = auth.ParsePasswordFile("a one\na two write\n")
    assert (users["a"].password, users["a"].options) == ("two", ["write"])


@pytest.mark.parametrize("expected, password, ok", [
    ("secret", "secret", True),
    ("secret", "Secret", False),
    ("{CLEARTEXT}secret", "secret", True),
    ("{cleartext}secret", "secret", True),
    ("{CLEARTEXT}secret", "{CLEARTEXT}secret", False),
    ("{CLEARTEXT}", "", True),
    ("{HA1}" + _Ha1("user", "pw"), "pw", True),
    ("{ha1}" + _Ha1("user", "pw").upper(), "pw", True),
    ("{HA1}" + _Ha1("user", "pw"), "other", False),
    ("{HA1}" + _Ha1("user", "pw", realm="Other"), "pw", False),
    ("{HA1}" + _Ha1("other", "pw"), "pw", False),
    ("{SHA}whatever", "whatever", False),
    ("{}pw", "pw", False),
    ("{pw", "{pw", False),
])
def test_verify_password(expected, password, ok):
    assert auth.VerifyBasicAuthPassword("user", password, expected,
                                        REALM) is ok


def test_parse_basic_credentials():
    assert auth.ParseBasicCredentials(None) is None
    assert auth.ParseBasicCredentials("") is None
    assert auth.ParseBasicCredentials('Digest username="x"') is None
    assert auth.ParseBasicCredentials(_Basic("u", "p:w")) == ("u", "p:w")
    assert auth.ParseBasicCredentials("basic " + base64.b64encode(
        b"u:").decode()) == ("u", "")
    assert auth.ParseBasicCredentials(_Basic("\u00e9t\u00e9", "pw")) == \
        ("\u00e9t\u00e9", "pw")
    for bad in ("Basic", "Basic !!!", "Basic " +
                base64.b64encode(b"nocolon").decode(),
                "Basic " + base64.b64encode(b"\xff:x").decode()):
        with pytest.raises(ghttp.HttpBadRequest):
            auth.ParseBasicCredentials(bad)


def test_format_auth_header():
    assert auth.FormatAuthHeader("Basic", {"realm": REALM}) == \
        'Basic realm="Ganeti Remote API"'
    assert auth.FormatAuthHeader("Basic", {"realm": 'a"b'}) == \
        'Basic realm="a\\"b"'
    err = auth.Unauthorized(REALM)
    assert err.code == 401
    assert err.headers == {"WWW-Authenticate":
                           'Basic realm="Ganeti Remote API"'}


def test_users_file_edited_in_place_is_reread(tmp_path):
    path = tmp_path / "users"
    path.write_text("jack pw write\n")
    users = auth.UsersFile(str(path))
    users.Load()
    assert users.Get("jack").options == ["write"]
    stat = path.stat()
    path.write_text("jack pw read\n")
    # Even with the same size and an unchanged mtime reading, a new
    # mtime_ns or inode is noticed; force a visible change here
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1000))
    assert users.Get("jack").options == ["read"]
    path.unlink()
    assert users.Get("jack") is None


def test_users_file(tmp_path):
    path = tmp_path / "users"
    users = auth.UsersFile(str(path))
    # A missing file: nobody can authenticate
    users.Load()
    assert users.Get("jack") is None
    assert users.Authenticate(_Basic("jack", "pw"), REALM) is None

    path.write_text("jack pw write\njill {HA1}%s\n" % _Ha1("jill", "x"))
    # A changed file is read again at the next lookup
    assert users.Authenticate(_Basic("jack", "pw"), REALM).name == "jack"
    assert users.Authenticate(_Basic("jack", "bad"), REALM) is None
    assert users.Authenticate(_Basic("jill", "x"), REALM).options == []
    assert users.Authenticate(_Basic("nobody", "pw"), REALM) is None
    assert users.Authenticate(None, REALM) is None

    path.write_text("jill new read\n")
    users.Load()
    assert users.Get("jack") is None
    assert users.Authenticate(_Basic("jill", "new"), REALM).options == \
        ["read"]
