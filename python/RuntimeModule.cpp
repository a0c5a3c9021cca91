//===- RuntimeModule.cpp - the tc._runtime Python extension -----*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Runs CPU graphs from tc's disk cache without loading the compiler: the
// cache entry's kernels linked into a shared library (`<entry>.so`) and its
// host program (`<entry>.plan`). It links the host program's interpreter
// and BLAS only (no MLIR, no LLVM), so a process whose graphs are all in
// the cache starts in a few milliseconds instead of the tens that loading
// tc._tc takes. Its graphs quack like tc._tc's CompiledGraph.
//
//===----------------------------------------------------------------------===//

#include "Buffers.h"
#include "LibraryGemm.h"

#include "tc/Conversion/FXToPrim/CostModel.h"
#include "tc/Conversion/FXToPrim/Decompositions.h"
#include "tc/Conversion/FXToPrim/Limits.h"
#include "tc/Runtime/HostProgram.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <algorithm>
#include <vector>

namespace nb = nanobind;

namespace {

/// tc.library.gemm, which runs cached graphs' large products (as tc._tc's
/// graphs'). Lives until the interpreter exits.
nb::object *pythonGemm = nullptr;

std::string runPythonGemm(const tc::host::LibraryGemm &g) {
  return callPythonGemm(*pythonGemm, {g.isDouble, g.transA, g.transB, g.batch,
                                      g.m, g.n, g.k, g.a, g.b, g.bias, g.out});
}

class CachedGraph {
public:
  CachedGraph(tc::host::HostProgram program, void *library)
      : program(std::move(program)), library(library) {}
  ~CachedGraph() { dlclose(library); }
  CachedGraph(const CachedGraph &) = delete;
  CachedGraph &operator=(const CachedGraph &) = delete;

  void run(const std::vector<uintptr_t> &pointers, uintptr_t /*stream*/,
           int64_t symbol) {
    std::vector<void *> buffers = toBuffers(pointers);
    std::string error;
    bool ok;
    {
      // Kernels do not touch Python objects: let other threads run.
      nb::gil_scoped_release release;
      ok = program.run(buffers.data(), buffers.size(), error,
                       std::max<int64_t>(symbol, 0));
    }
    if (!ok)
      throw std::runtime_error(error);
  }

  /// As run, timing each step: [(name, seconds, bytes)].
  nb::list runProfiled(const std::vector<uintptr_t> &pointers,
                       int64_t symbol) {
    std::vector<void *> buffers = toBuffers(pointers);
    std::string error;
    std::vector<tc::host::StepTime> steps;
    bool ok;
    {
      nb::gil_scoped_release release;
      ok = program.run(buffers.data(), buffers.size(), error,
                       std::max<int64_t>(symbol, 0), &steps);
    }
    if (!ok)
      throw std::runtime_error(error);
    nb::list out;
    for (const tc::host::StepTime &step : steps)
      out.append(
          nb::make_tuple(step.name, step.seconds, step.bytes, step.faults));
    return out;
  }

  tc::host::HostProgram program;
  void *library;
};

/// The graph cached at `entry`, or None when the entry is absent,
/// incomplete or of another tc build.
CachedGraph *loadCPU(const std::string &entry) {
  std::ifstream file(entry + ".plan", std::ios::binary);
  if (!file)
    return nullptr;
  std::stringstream text;
  text << file.rdbuf();
  tc::host::HostProgram program;
  if (!program.parse(text.str(), tc::host::kCPUCacheVersion))
    return nullptr;
  std::string error;
  void *library = program.loadKernelLibrary(entry + ".so", error);
  if (!library)
    return nullptr;
  return new CachedGraph(std::move(program), library);
}

} // namespace

NB_MODULE(_runtime, m) {
  m.doc() = "tc's CPU runtime for cached graphs (no compiler loaded)";
  nb::set_leak_warnings(false);

  nb::class_<CachedGraph>(m, "CachedGraph")
      .def("run", &CachedGraph::run, nb::arg("pointers"),
           nb::arg("stream") = 0, nb::arg("symbol") = -1,
           "Runs the graph on raw buffers: inputs, outputs, then the "
           "arena; `symbol` is the value of its symbolic size, if any.")
      .def("run_profiled", &CachedGraph::runProfiled, nb::arg("pointers"),
           nb::arg("symbol") = -1,
           "As run, timing each step: a list of (kernel name or 'gemm "
           "MxNxK' or 'library call', seconds, bytes of its buffers or "
           "-1, the process's minor page faults during it or -1).")
      .def_prop_ro("target", [](CachedGraph &) { return std::string("cpu"); })
      .def_prop_ro("arena_bytes",
                   [](CachedGraph &g) { return g.program.arenaBytes; })
      .def_prop_ro("arena_bytes_per_symbol",
                   [](CachedGraph &g) { return g.program.arenaBytesPerSymbol; })
      .def_prop_ro("symbolic",
                   [](CachedGraph &g) { return g.program.symbolic(); })
      .def_prop_ro("intermediate_bytes",
                   [](CachedGraph &g) { return g.program.intermediateBytes; })
      .def_prop_ro("num_kernels",
                   [](CachedGraph &g) { return g.program.numKernels; })
      .def_prop_ro("num_buffers",
                   [](CachedGraph &g) { return g.program.numArguments + 1; })
      .def_prop_ro("num_convolution_plans", [](CachedGraph &) { return 0; })
      .def_prop_ro("compile_seconds", [](CachedGraph &) { return nb::dict(); })
      .def_prop_ro("graph_replays", [](CachedGraph &) { return 0; })
      .def_prop_ro("graph_captures", [](CachedGraph &) { return 0; })
      .def_prop_ro("from_cache", [](CachedGraph &) { return true; })
      .def_prop_ro("stage_ir", [](CachedGraph &) { return nb::dict(); });

  m.def("load_cpu", &loadCPU, nb::arg("entry"),
        nb::rv_policy::take_ownership,
        "The CPU graph cached at `entry` (a path without extension: "
        "`<entry>.plan` and `<entry>.so`), or None.");
  m.def(
      "set_cpu_gemm",
      [](nb::object fn) {
        if (fn.is_none()) {
          tc::host::setLibraryGemm(nullptr);
          return;
        }
        if (!pythonGemm)
          pythonGemm = new nb::object();
        *pythonGemm = fn;
        tc::host::setLibraryGemm(runPythonGemm);
      },
      nb::arg("fn").none(),
      "As tc._tc.set_cpu_gemm, for the graphs this module runs.");
  m.attr("LIBRARY_GEMM_FLOPS") = tc::host::kLibraryGemmFlops;
  m.attr("CPU_CACHE_VERSION") = tc::host::kCPUCacheVersion;
  // The sizes tc's decompositions take, for tc.support's checks.
  nb::dict limits;
  for (const auto &limit : mlir::tc::limits::kNamedLimits)
    limits[limit.name] = limit.value;
  m.attr("DECOMPOSITION_LIMITS") = limits;
  // The ATen ops tc decomposes (tc/Conversion/FXToPrim/Decompositions.def):
  // op -> {"symbolic": whether it takes the symbolic size, "family": the
  // file that decomposes it}, for tc.support.
  nb::dict decompositions;
  for (const auto &entry : mlir::tc::decompositions::kDecompositions) {
    nb::dict properties;
    properties["symbolic"] =
        (entry.flags & mlir::tc::decompositions::kSymbolic) != 0;
    properties["family"] =
        mlir::tc::decompositions::getFamilyName(entry.family);
    decompositions[entry.op] = properties;
  }
  m.attr("DECOMPOSITIONS") = decompositions;
  // tc's cost model (tc/Conversion/FXToPrim/CostModel.h), for tc.support.
  m.def(
      "op_cost",
      [](const std::string &op,
         const std::map<std::string, std::vector<int64_t>> &shapes,
         const std::map<std::string, std::string> &kinds,
         const std::map<std::string, int64_t> &ints, const std::string &target,
         int64_t elementBytes) -> nb::object {
        namespace cost = mlir::tc::cost;
        cost::Query q;
        q.op = op;
        q.shapes = shapes;
        for (const auto &[name, kind] : kinds)
          q.kinds[name] = kind.empty() ? 'i' : kind[0];
        q.ints = ints;
        q.target = target == "cpu" ? cost::Target::CPU : cost::Target::GPU;
        q.elementBytes = elementBytes;
        std::optional<cost::Estimate> e = cost::estimate(q);
        if (!e)
          return nb::none();
        return nb::make_tuple(e->tcSeconds, e->eagerSeconds, e->algorithm,
                              cost::eagerReason(q),
                              cost::eagerReason(q, /*compareTimes=*/false));
      },
      nb::arg("op"), nb::arg("shapes"), nb::arg("kinds"), nb::arg("ints"),
      nb::arg("target"), nb::arg("element_bytes"),
      "(tc seconds, eager seconds, tc's algorithm, why it is left to eager "
      "or '', why tc's decomposition cannot take it or '') for an op the "
      "cost model knows, else None.");
}
