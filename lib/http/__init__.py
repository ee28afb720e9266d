"""HTTP definitions shared by the servers (noded, RAPI) and their clients.

Request handlers signal HTTP errors by raising an HttpException subclass;
the server turns it into a response with the exception's status code.
"""

import http

HTTP_GET = "GET"
HTTP_PUT = "PUT"
HTTP_POST = "POST"
HTTP_DELETE = "DELETE"
HTTP_HEAD = "HEAD"

HTTP_CONTENT_TYPE = "Content-Type"
HTTP_CONTENT_LENGTH = "Content-Length"
HTTP_CONNECTION = "Connection"
HTTP_ALLOW = "Allow"
HTTP_AUTHORIZATION = "Authorization"
HTTP_WWW_AUTHENTICATE = "WWW-Authenticate"

HTTP_APP_JSON = "application/json"
# The headers of a JSON answer (copy before changing)
JSON_HEADERS = {HTTP_CONTENT_TYPE: HTTP_APP_JSON}
HTTP_TEXT_PLAIN = "text/plain; charset=utf-8"

# Largest request body accepted unless the server is told otherwise
DEFAULT_MAX_BODY_SIZE = 10 * 1024 * 1024


def StatusPhrase(code: int) -> str:
    """The standard reason phrase of a status code ("" if unknown)."""
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""


class HttpException(Exception):
    """An error answered with the HTTP status ``code``.

    ``message`` becomes the body (through the server's error formatter);
    ``headers`` are added to the response (e.g. WWW-Authenticate).
    """

    code = 500

    def __init__(self, message: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message or StatusPhrase(self.code)
        self.headers = headers or {}


class HttpBadRequest(HttpException):
    """400: the request is malformed."""
    code = 400


class HttpUnauthorized(HttpException):
    """401: authentication is required or failed."""
    code = 401


class HttpForbidden(HttpException):
    """403: the authenticated user may not do this."""
    code = 403


class HttpNotFound(HttpException):
    """404: no such resource."""
    code = 404


class HttpMethodNotAllowed(HttpException):
    """405: the resource does not support the method."""
    code = 405


def ReadOnlyPath(method: str, target: str) -> str:
    """The path a request to a read-only resource tree names (no query,
    no trailing slash); methods other than GET and HEAD are refused."""
    if method.upper() not in (HTTP_GET, HTTP_HEAD):
        raise HttpMethodNotAllowed(headers={HTTP_ALLOW: "GET, HEAD"})
    return target.partition("?")[0].rstrip("/") or "/"


class HttpRequestEntityTooLarge(HttpException):
    """413: the request body exceeds the server's limit."""
    code = 413


class HttpUnsupportedMediaType(HttpException):
    """415: the body has a content type the resource does not accept."""
    code = 415


class HttpInternalServerError(HttpException):
    """500: the server failed to handle the request."""
    code = 500


class HttpNotImplemented(HttpException):
    """501: the server does not implement what the request needs."""
    code = 501


class HttpServiceUnavailable(HttpException):
    """503: the server can't handle the request right now."""
    code = 503


class HttpVersionNotSupported(HttpException):
    """505: an HTTP version other than 1.0 and 1.1."""
    code = 505
