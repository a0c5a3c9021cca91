# -*- Python -*-
"""lit configuration for tc's regression tests."""

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "TC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".py", ".test"]
# test/python holds pytest suites, run by utils/test.sh.
# Inputs/ folders hold files tests read.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "python",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tc_obj_root, "test")

config.substitutions.append(("%PYTHON", config.python_executable))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.tc_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("tc-opt", unresolved="fatal"),
         ToolSubst("tc-fuzz", unresolved="fatal"),
         ToolSubst("tc-translate", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# GPU binaries: PTX needs libdevice, cubin also ptxas (CUDA toolkit); hsaco
# needs the AMDGPU device libraries (Debian's rocm-device-libs).
def _found(path):
    return path and not path.endswith("NOTFOUND") and os.path.exists(path)

if _found(config.tc_libdevice):
    config.available_features.add("libdevice")
    if _found(config.tc_ptxas):
        config.available_features.add("ptxas")
if _found(config.tc_amdgcn_bitcode):
    config.available_features.add("rocm-device-libs")
