"""The tc package is installed and finds the build's tools."""

import subprocess

import tc


def test_tc_opt_lists_the_tc_dialects():
    out = subprocess.run([str(tc.tc_opt_path()), "--show-dialects"],
                         capture_output=True, text=True, check=True).stdout
    dialects = out.split(":", 1)[1].strip().split(",")
    for dialect in ("fx", "prim", "kernel"):
        assert dialect in dialects
