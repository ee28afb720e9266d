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
