"""What every family of node procedures shares: failing with a
message for the master, decoding uploaded content, localizing paths.
"""

import base64
import binascii
import logging
import os
import zlib
from typing import Any, NoReturn

from ganeti import constants, errors, pathutils, vcluster
from ganeti.utils import io


def Fail(msg: str, *args) -> NoReturn:
    """Log and raise an expected failure; its message is sent back."""
    if args:
        msg = msg % args
    logging.error("%s", msg)
    raise errors.GenericError(msg)


def DecodeContent(content: Any) -> bytes:
    """Decode file content sent as ``[encoding, data]``."""
    if not (isinstance(content, (list, tuple)) and len(content) == 2 and
            isinstance(content[1], str)):
        Fail("Invalid file content, expected [encoding, data]")
    encoding, data = content
    if encoding == constants.RPC_ENCODING_NONE:
        return data.encode("utf-8")
    if encoding == constants.RPC_ENCODING_ZLIB_BASE64:
        try:
            return zlib.decompress(base64.b64decode(data, validate=True))
        except (binascii.Error, zlib.error) as err:
            Fail("Can't decode file content: %s", err)
    Fail("Unknown content encoding %r", encoding)


def LocalPath(vpath: Any) -> str:
    """Localize a virtual path received from another node."""
    if not isinstance(vpath, str) or not os.path.isabs(vpath):
        Fail("Invalid path %r, expected an absolute path", vpath)
    if "\0" in vpath:
        Fail("Invalid path %r", vpath)
    return os.path.normpath(vcluster.LocalizeVirtualPath(vpath))


def QueuePath(vpath: Any) -> str:
    """Localize a path that must be inside the job queue directory."""
    path = LocalPath(vpath)
    if not io.IsBelowDir(pathutils.QUEUE_DIR, path):
        Fail("Refusing to touch %s: not in the job queue directory %s",
              vpath, vcluster.MakeVirtualPath(pathutils.QUEUE_DIR))
    return path
