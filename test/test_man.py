"""The committed man pages are the ones the command tables generate."""

import os
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_man_pages_up_to_date(tmp_path):
    subprocess.run([sys.executable, os.path.join(TOP, "autotools",
                                                 "build-man"), str(tmp_path)],
                   check=True)
    generated = sorted(os.listdir(tmp_path))
    assert generated == sorted(n for n in os.listdir(os.path.join(TOP, "man"))
                               if n.endswith(".8"))
    for name in generated:
        with open(tmp_path / name, encoding="utf-8") as fobj:
            new = fobj.read()
        with open(os.path.join(TOP, "man", name), encoding="utf-8") as fobj:
            assert fobj.read() == new, ("man/%s is stale: run"
                                        " autotools/build-man man" % name)


def test_opcode_docs_reach_man_page():
    with open(os.path.join(TOP, "man", "gnt-cluster.8"),
              encoding="utf-8") as fobj:
        text = fobj.read()
    assert "Number of master candidates the cluster keeps" in text


def _ReadPage(name):
    with open(os.path.join(TOP, "man", name), encoding="utf-8") as fobj:
        return fobj.read()


def test_daemon_pages_come_from_the_parsers():
    from ganeti.server import maintd, masterd, mond, noded, rapi
    for name, module in [("ganeti-masterd.8", masterd),
                         ("ganeti-maintd.8", maintd),
                         ("ganeti-noded.8", noded), ("ganeti-rapi.8", rapi),
                         ("ganeti-mond.8", mond)]:
        text = _ReadPage(name)
        for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS",
                        "EXIT STATUS", "SEE ALSO"):
            assert ".SH %s\n" % section in text, (name, section)
        # Every option the daemon accepts, the common ones included
        options = text.split(".SH OPTIONS\n")[1].split(".SH ")[0]
        for option in module.BuildParser().option_list:
            for opt in option._short_opts + option._long_opts:
                assert opt.replace("-", "\\-") in options, (name, opt)
    assert "(default: 1811)" in _ReadPage("ganeti-noded.8")
    assert "(default: 1815)" in _ReadPage("ganeti-mond.8")
    assert "(default: 1816)" in _ReadPage("ganeti-maintd.8")


def test_daemon_util_page_lists_its_commands():
    text = _ReadPage("daemon-util.8")
    for command in ("start DAEMON [ARGS...]", "stop DAEMON", "check DAEMON",
                    "start\\-all", "stop\\-all", "list"):
        assert ".B %s\n" % command in text, command
    assert "ganeti\\-noded, ganeti\\-masterd" in text


def test_negative_options_documented_as_negative():
    text = _ReadPage("gnt-instance.8")
    assert ".B \\-\\-no\\-start\nDo not start the instance after creation\n" \
        in text
    assert ".B \\-\\-no\\-name\\-check\nDo not resolve and check the" \
        " instance's name\n" in text


def test_titles_and_exit_codes_come_from_the_code():
    import importlib

    from ganeti import constants
    for name in ("gnt-cluster", "gnt-backup", "gnt-instance"):
        module = importlib.import_module("ganeti.client." +
                                         name.replace("-", "_"))
        title = module.__doc__.split(":")[0]
        text = _ReadPage(name + ".8")
        assert ".SH NAME\n%s \\- %s\n" % (name.replace("-", "\\-"), title) \
            in text
        status = text.split(".SH EXIT STATUS\n")[1]
        assert "%d for unknown fields" % constants.EXIT_UNKNOWN_FIELD \
            in status
        assert "%d when it is not the master" % constants.EXIT_NOTMASTER \
            in status
    assert "%d when it must run on the master node" % \
        constants.EXIT_NOTMASTER in _ReadPage("ganeti-rapi.8")
