"""Packaging with setuptools: ``pip install .`` or ``python setup.py install``.

The package "ganeti" comes from lib/ (sub-packages are found automatically)
and the commands from scripts/ and daemons/. The build writes
ganeti/_autoconf.py with the installation directories, taken from the
environment (GANETI_PREFIX, GANETI_LOCALSTATEDIR, GANETI_SYSCONFDIR; by
default /usr/local, /var and /etc) and the path of daemon-util
(GANETI_DAEMON_UTIL; by default in the interpreter's scripts directory,
where setuptools installs the commands). The autotools build
(configure, make) is the alternative that takes them from ./configure.
"""

import glob
import os
import re

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

_TOP = os.path.dirname(os.path.abspath(__file__))


def _Version() -> str:
    with open(os.path.join(_TOP, "lib", "constants.py"),
              encoding="utf-8") as fobj:
        text = fobj.read()
    parts = [re.search(r"^VERSION_%s = (\d+)" % name, text, re.M).group(1)
             for name in ("MAJOR", "MINOR", "REVISION")]
    return ".".join(parts)


def _Requirements() -> list[str]:
    with open(os.path.join(_TOP, "requirements.txt"),
              encoding="utf-8") as fobj:
        return [line.strip() for line in fobj
                if line.strip() and not line.startswith("#")]


class BuildPyWithAutoconf(build_py):
    """build_py that also writes ganeti/_autoconf.py into the build."""

    def run(self) -> None:
        super().run()
        values = {
            "PREFIX": os.environ.get("GANETI_PREFIX", "/usr/local"),
            "LOCALSTATEDIR": os.environ.get("GANETI_LOCALSTATEDIR", "/var"),
            "SYSCONFDIR": os.environ.get("GANETI_SYSCONFDIR", "/etc"),
        }
        for name, value in values.items():
            if not os.path.isabs(value):
                raise SystemExit("GANETI_%s must be an absolute path" % name)
        values["IALLOCATOR_SEARCH_PATH"] = os.environ.get(
            "GANETI_IALLOCATOR_SEARCH_PATH",
            "/usr/local/lib/ganeti/iallocators:/usr/lib/ganeti/iallocators")
        daemon_util = os.environ.get("GANETI_DAEMON_UTIL")
        # By default in the interpreter's scripts directory, where
        # setuptools installs it; looked up when running, since the install
        # location is unknown while building
        daemon_util_code = (
            'os.path.join(sysconfig.get_path("scripts"), "daemon-util")'
            if daemon_util is None else repr(daemon_util))
        target = os.path.join(self.build_lib, "ganeti", "_autoconf.py")
        self.mkpath(os.path.dirname(target))
        with open(target, "w", encoding="utf-8") as fobj:
            fobj.write('"""Directories chosen at build time (generated, do'
                       ' not edit)."""\n\nimport os\nimport sysconfig\n\n')
            for name, value in values.items():
                fobj.write("%s = %r\n" % (name, value))
            fobj.write("DAEMON_UTIL = %s\n" % daemon_util_code)


# Installed where allocators are looked for (lib/ganeti/iallocators below
# the prefix, as Ganeti installs hail), not among the commands
_BUILTIN_IALLOCATOR = "scripts/halloc"


def _Scripts() -> list[str]:
    scripts = sorted(path for path in glob.glob("scripts/*")
                     if path != _BUILTIN_IALLOCATOR)
    scripts += sorted(glob.glob("daemons/ganeti-*"))
    for helper in ("daemons/daemon-util", "daemons/kvm-ifup"):
        if os.path.exists(helper):
            scripts.append(helper)
    return scripts


os.chdir(_TOP)
setup(
    name="ganeti",
    version=_Version(),
    description="Cluster virtualization manager",
    license="BSD-2-Clause",
    python_requires=">=3.11",
    package_dir={"ganeti": "lib"},
    packages=["ganeti"] + ["ganeti." + name for name in
                           find_namespace_packages(
                               where="lib",
                               exclude=["__pycache__", "*.__pycache__"])],
    scripts=_Scripts(),
    data_files=[("lib/ganeti/iallocators", [_BUILTIN_IALLOCATOR])],
    install_requires=_Requirements(),
    extras_require={"test": ["pytest>=7.0"]},
    cmdclass={"build_py": BuildPyWithAutoconf},
)
