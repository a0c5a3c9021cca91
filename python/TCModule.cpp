//===- TCModule.cpp - the tc._tc Python extension ---------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// A thin nanobind layer over the C API in tc-c/Compiler.h.
//
//===----------------------------------------------------------------------===//

#include "Buffers.h"
#include "LibraryGemm.h"

#include "tc-c/Compiler.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nb = nanobind;

namespace {

/// Takes ownership of a malloc'ed C API message.
std::string takeMessage(char *message) {
  std::string text = message ? message : "unknown error";
  tcFreeString(message);
  return text;
}

class Executable {
public:
  explicit Executable(TcExecutableRef exe) : exe(exe) {}
  ~Executable() { tcExecutableDestroy(exe); }
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  void run(const std::vector<uintptr_t> &pointers, uintptr_t stream,
           int64_t symbol) {
    std::vector<void *> buffers = toBuffers(pointers);
    char *error = nullptr;
    int status;
    {
      // Kernels do not touch Python objects: let other threads run.
      nb::gil_scoped_release release;
      status = symbol >= 0
                   ? tcExecutableRunSymbolicOnStream(
                         exe, buffers.data(), buffers.size(),
                         reinterpret_cast<void *>(stream), symbol, &error)
                   : tcExecutableRunOnStream(exe, buffers.data(),
                                             buffers.size(),
                                             reinterpret_cast<void *>(stream),
                                             &error);
    }
    if (status)
      throw std::runtime_error(takeMessage(error));
  }

  /// CUDA graphs: reads these arguments back early (runReading); None
  /// when it will, else why not.
  std::optional<std::string> readEarly(const std::vector<int64_t> &arguments) {
    char *why = nullptr;
    if (tcExecutableReadEarly(exe, arguments.data(), arguments.size(), &why))
      return std::nullopt;
    return takeMessage(why);
  }

  /// As run; returns the arguments readEarly named, read while the run
  /// goes on (None where the stream captures: nothing read).
  std::optional<std::vector<int>>
  runReading(const std::vector<uintptr_t> &pointers, uintptr_t stream,
             int64_t symbol, size_t count) {
    std::vector<void *> buffers = toBuffers(pointers);
    std::vector<uint8_t> values(count);
    char *error = nullptr;
    int status, read = 0;
    {
      nb::gil_scoped_release release;
      status = tcExecutableRunReadingOnStream(
          exe, buffers.data(), buffers.size(),
          reinterpret_cast<void *>(stream), symbol, values.data(), &read,
          &error);
    }
    if (status)
      throw std::runtime_error(takeMessage(error));
    if (!read)
      return std::nullopt;
    return std::vector<int>(values.begin(), values.end());
  }

  /// Runs a CPU or CUDA graph timing each step: [(name, seconds, bytes,
  /// page faults or -1)].
  nb::list runProfiled(const std::vector<uintptr_t> &pointers,
                       uintptr_t stream, int64_t symbol) {
    std::vector<void *> buffers = toBuffers(pointers);
    char *error = nullptr, *profile = nullptr;
    int status;
    {
      nb::gil_scoped_release release;
      status = tcExecutableRunProfiledOnStream(
          exe, buffers.data(), buffers.size(),
          reinterpret_cast<void *>(stream), symbol, &profile, &error);
    }
    if (status)
      throw std::runtime_error(takeMessage(error));
    std::string text = takeMessage(profile);
    nb::list steps;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      std::string line = text.substr(start, end - start);
      start = end == std::string::npos ? text.size() : end + 1;
      // name \t seconds \t bytes \t faults
      std::vector<std::string> fields;
      for (size_t at = 0; at <= line.size();) {
        size_t tab = std::min(line.find('\t', at), line.size());
        fields.push_back(line.substr(at, tab - at));
        at = tab + 1;
      }
      if (fields.size() != 4)
        continue;
      steps.append(nb::make_tuple(fields[0], std::stod(fields[1]),
                                  std::stoll(fields[2]),
                                  std::stoll(fields[3])));
    }
    return steps;
  }

  nb::dict stageIR() const {
    nb::dict stages;
    for (const char *name :
         {"prim", "kernel", "loops", "llvm", "gpu", "schedule"})
      if (const char *ir = tcExecutableStageIR(exe, name))
        stages[name] = std::string(ir);
    return stages;
  }

  TcExecutableRef exe;
};

/// The Python function that runs CPU graphs' library convolutions
/// (tc.library.convolution), called as fn(kind, input, weight, output,
/// stride, padding, dilation, groups, may_return) with torch tensors
/// viewing the graph's buffers; it returns None, or (where `may_return`)
/// a tensor holding the result in place of the buffer it writes. Lives
/// until the interpreter exits.
nb::object *pythonConvolution = nullptr;

/// Drops a result tensor tc held for the rest of a graph's run.
void releasePythonResult(void *owner) {
  nb::gil_scoped_acquire gil;
  delete static_cast<nb::object *>(owner);
}

int callPythonConvolution(TcConvolution *c, char **error) {
  // The graph runs with the GIL released (Executable::run).
  nb::gil_scoped_acquire gil;
  try {
    nb::dlpack::dtype dtype;
    switch (c->element) {
    case 0: dtype = nb::dtype<float>(); break;
    case 1: dtype = nb::dtype<double>(); break;
    case 2: dtype = {uint8_t(nb::dlpack::dtype_code::Float), 16, 1}; break;
    default: dtype = {uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1}; break;
    }
    auto view = [&](void *data, const int64_t *shape,
                    const int64_t *strides) {
      return cachedTensorView(
          data, dtype, std::vector<size_t>(shape, shape + c->rank),
          strides ? std::vector<int64_t>(strides, strides + c->rank)
                  : std::vector<int64_t>());
    };
    auto list = [&](const int64_t *values) {
      nb::list out;
      for (int i = 0; i < c->rank - 2; ++i)
        out.append(values[i]);
      return out;
    };
    nb::object result = (*pythonConvolution)(
        c->kind, view(c->input, c->inputShape, c->inputStrides),
        view(c->weight, c->weightShape, c->weightStrides),
        view(c->output, c->outputShape, c->outputStrides), list(c->stride),
        list(c->padding), list(c->dilation), c->groups, bool(c->mayReturn));
    if (!result.is_none()) {
      c->result = reinterpret_cast<void *>(
          nb::cast<uintptr_t>(result.attr("data_ptr")()));
      c->resultOwner = new nb::object(std::move(result));
      c->releaseResult = releasePythonResult;
    }
    return 0;
  } catch (const std::exception &e) {
    *error = strdup(e.what());
    return 1;
  }
}

/// The Python function that runs CPU graphs' large products
/// (tc.library.gemm, see LibraryGemm.h). Lives until the interpreter exits.
nb::object *pythonGemm = nullptr;

int callPythonGemmC(const TcGemm *g, char **error) {
  std::string message = callPythonGemm(
      *pythonGemm, {g->element == 1, g->transA != 0, g->transB != 0, g->batch,
                    g->m, g->n, g->k, g->a, g->b, g->bias, g->out});
  if (message.empty())
    return 0;
  *error = strdup(message.c_str());
  return 1;
}

/// Runs a command-line driver of the C API on `args` without the GIL.
int runDriver(int (*driver)(int, char **),
              const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  nb::gil_scoped_release release;
  return driver(static_cast<int>(args.size()), argv.data());
}

} // namespace

NB_MODULE(_tc, m) {
  m.doc() = "tc's native compiler and its CPU, CUDA and ROCm runtimes";
  // Dynamo caches hold compiled graphs until the interpreter is gone.
  nb::set_leak_warnings(false);
  m.attr("gpu_buffer_alignment") = tcGPUBufferAlignment();
  m.def(
      "cuda_attention_unavailable",
      [](bool bf16, std::vector<int64_t> sizes, std::vector<int64_t> bias,
         bool causal, float scale) -> std::string {
        if (sizes.size() != 7 || bias.size() != 2)
          throw nb::value_error("expected 7 sizes and 2 bias sizes");
        char *why = tcCUDAAttentionUnavailable(bf16, sizes.data(),
                                               bias.data(), causal, scale);
        std::string out(why ? why : "");
        tcFreeString(why);
        return out;
      },
      nb::arg("bf16"), nb::arg("sizes"), nb::arg("bias_dims"),
      nb::arg("causal"), nb::arg("scale"),
      "Why cuDNN cannot run a fused attention of these sizes on the current "
      "CUDA device (\"\" when it can; the plan is kept): sizes are batch, "
      "heads, key/value heads, queries, keys, head and value features; "
      "bias_dims the bias's batch and heads, -1 without one.");
  m.def(
      "graph_structure",
      [](const std::string &source) {
        char *text = tcGraphStructure(source.data(), source.size());
        std::string out(text ? text : "");
        tcFreeString(text);
        return out;
      },
      nb::arg("source"),
      "The graph's text without value names and locations: the key under "
      "which structurally identical graphs share one compile.");
  m.def(
      "opt_main",
      [](const std::vector<std::string> &args) {
        return runDriver(tcOptMain, args);
      },
      nb::arg("argv"),
      "Runs tc-opt with `argv` (argv[0] the program's name) in this "
      "process and returns its exit code; once per process (the `tc-opt` "
      "console script).");
  m.def(
      "translate_main",
      [](const std::vector<std::string> &args) {
        return runDriver(tcTranslateMain, args);
      },
      nb::arg("argv"),
      "Runs tc-translate as opt_main runs tc-opt (the `tc-translate` "
      "console script).");
  m.def("build_info", &tcBuildInfo,
        "What this native build is, as key=value lines (tcBuildInfo).");
  m.def("cpu_threads", &tcCPUThreads,
        "How many threads a CPU graph's launches run on now: PyTorch's "
        "OpenMP team (torch.set_num_threads) where it is loaded, else "
        "tc's own pool ($TC_NUM_THREADS).");
  m.def(
      "cpu_gemm_kernels", [] { return std::string(tcCPUGemmKernels()); },
      "The kernels the CPU's GEMM library (OpenBLAS) chose when it loaded: "
      "'SkylakeX' (AVX-512), 'Haswell' (AVX2), ...");
  m.def(
      "half_product_padding",
      [](int64_t m, int64_t k, int64_t n, bool lhsTransposed,
         bool rhsTransposed, int64_t elementBytes, int64_t resultElements,
         int64_t lhsElements, int64_t rhsElements,
         bool resultViewed) -> nb::object {
        int64_t padM, padK, padN;
        if (!tcHalfProductPadding(m, k, n, lhsTransposed, rhsTransposed,
                                  elementBytes, resultElements, lhsElements,
                                  rhsElements, resultViewed, &padM, &padK,
                                  &padN))
          return nb::none();
        return nb::make_tuple(padM, padK, padN);
      },
      nb::arg("m"), nb::arg("k"), nb::arg("n"), nb::arg("lhs_transposed"),
      nb::arg("rhs_transposed"), nb::arg("element_bytes"),
      nb::arg("result_elements"), nb::arg("lhs_elements"),
      nb::arg("rhs_elements"), nb::arg("result_viewed") = false,
      "(pad_m, pad_k, pad_n) that tc-align-half-products appends to a "
      "half-precision GEMM's dimensions, or None when it leaves the "
      "product as it is. `result_viewed`: the padded result is returned "
      "as a view, so no copy slices it.");

  nb::class_<Executable>(m, "CompiledGraph")
      .def("run", &Executable::run, nb::arg("pointers"),
           nb::arg("stream") = 0, nb::arg("symbol") = -1,
           "Runs the graph on raw buffers: inputs, outputs, then the arena "
           "(device pointers and a CUstream or hipStream_t for a GPU "
           "graph); `symbol` is the value of the graph's symbolic size "
           "(CPU and CUDA graphs).")
      .def("read_early", &Executable::readEarly, nb::arg("arguments"),
           "CUDA graphs: makes run_reading read back the first byte of "
           "each of these arguments (one-byte outputs: flags) as soon as "
           "the last step taking it has run. None when it will, else the "
           "reason it cannot.")
      .def("run_reading", &Executable::runReading, nb::arg("pointers"),
           nb::arg("stream"), nb::arg("symbol"), nb::arg("count"),
           "As run, returning the `count` bytes read_early named (in its "
           "order) as soon as they are written, while the rest of the run "
           "goes on; None where the stream captures (nothing read).")
      .def("run_profiled", &Executable::runProfiled, nb::arg("pointers"),
           nb::arg("stream") = 0, nb::arg("symbol") = -1,
           "As run, for a CPU or CUDA graph, timing each step: a list of "
           "(kernel name or 'gemm MxNxK' or 'library call' / "
           "'convolution', seconds, bytes of its buffers or -1, the "
           "process's minor page faults during it or -1). A CUDA "
           "graph's steps are timed by CUDA events around each, and the "
           "call waits for the run.")
      .def_prop_ro("target",
                   [](Executable &e) {
                     return std::string(tcExecutableTarget(e.exe));
                   })
      .def_prop_ro("arena_bytes",
                   [](Executable &e) { return tcExecutableArenaBytes(e.exe); })
      .def_prop_ro("arena_bytes_per_symbol",
                   [](Executable &e) {
                     return tcExecutableArenaBytesPerSymbol(e.exe);
                   })
      .def_prop_ro("symbolic",
                   [](Executable &e) {
                     return tcExecutableIsSymbolic(e.exe) != 0;
                   })
      .def_prop_ro("intermediate_bytes",
                   [](Executable &e) {
                     return tcExecutableIntermediateBytes(e.exe);
                   })
      .def_prop_ro("num_kernels",
                   [](Executable &e) { return tcExecutableNumKernels(e.exe); })
      .def_prop_ro("num_buffers",
                   [](Executable &e) { return tcExecutableNumBuffers(e.exe); })
      .def_prop_ro("num_convolution_plans",
                   [](Executable &e) {
                     return tcExecutableNumConvolutionPlans(e.exe);
                   })
      .def_prop_ro("compile_seconds",
                   [](Executable &e) {
                     nb::dict phases;
                     for (const char *phase : {"prim", "kernel", "gpu",
                                               "schedule", "cudnn", "load"}) {
                       double s = tcExecutableCompileSeconds(e.exe, phase);
                       if (s >= 0)
                         phases[phase] = s;
                     }
                     return phases;
                   })
      .def_prop_ro("graph_replays",
                   [](Executable &e) {
                     return tcExecutableGraphReplays(e.exe);
                   })
      .def_prop_ro("graph_captures",
                   [](Executable &e) {
                     return tcExecutableGraphCaptures(e.exe);
                   })
      .def_prop_ro("from_cache",
                   [](Executable &e) {
                     return tcExecutableFromCache(e.exe) != 0;
                   })
      .def_prop_ro("stage_ir", &Executable::stageIR);

  m.def(
      "set_cpu_convolution",
      [](nb::object fn) {
        if (fn.is_none()) {
          tcSetCPUConvolution(nullptr);
          return;
        }
        if (!pythonConvolution)
          pythonConvolution = new nb::object();
        *pythonConvolution = fn;
        tcSetCPUConvolution(callPythonConvolution);
      },
      nb::arg("fn").none(),
      "Sets the function that runs CPU graphs' convolutions, "
      "fn(kind, input, weight, output, stride, padding, dilation, groups) "
      "(kind 0 forward into output, 1 input's gradient into input, 2 "
      "weight's into weight; tensors view the graph's buffers), or None for "
      "the runtime's reference loops.");

  m.def(
      "set_cpu_gemm",
      [](nb::object fn) {
        if (fn.is_none()) {
          tcSetCPUGemm(nullptr);
          return;
        }
        if (!pythonGemm)
          pythonGemm = new nb::object();
        *pythonGemm = fn;
        tcSetCPUGemm(callPythonGemmC);
      },
      nb::arg("fn").none(),
      "Sets the function that runs CPU graphs' large products, "
      "fn(a, b, out, bias, trans_a, trans_b) (tensors of (batch, rows, "
      "columns) viewing the graph's buffers as stored; out = op(a) op(b) + "
      "bias), or None for OpenBLAS.");

  m.def(
      "compile",
      [](const std::string &ir, bool dumpStages,
         const std::string &cacheEntry, const std::string &options) {
        char *error = nullptr;
        TcExecutableRef exe;
        {
          nb::gil_scoped_release release;
          exe = tcCompileCPU(ir.data(), ir.size(), options.c_str(),
                             dumpStages ? 1 : 0,
                             cacheEntry.empty() ? nullptr : cacheEntry.c_str(),
                             &error);
        }
        if (!exe)
          throw std::runtime_error(takeMessage(error));
        return new Executable(exe);
      },
      nb::arg("ir"), nb::arg("dump_stages") = false,
      nb::arg("cache_entry") = std::string(),
      nb::arg("options") = std::string(),
      "Compiles an fx-dialect module for the CPU; raises RuntimeError with "
      "the compiler's diagnostics on failure. With a `cache_entry` (a path "
      "without extension), the compiled graph is cached there, or loaded "
      "from there.");

  m.def(
      "export_cpu",
      [](const std::string &ir, const std::string &options,
         const std::string &objectPath, const std::string &planPath) {
        char *error = nullptr;
        int status;
        {
          nb::gil_scoped_release release;
          status = tcExportCPU(ir.data(), ir.size(), options.c_str(),
                               objectPath.c_str(), planPath.c_str(), &error);
        }
        if (status)
          throw std::runtime_error(takeMessage(error));
      },
      nb::arg("ir"), nb::arg("options"), nb::arg("object_path"),
      nb::arg("plan_path"),
      "Compiles an fx-dialect module ahead of time for this host's CPU: "
      "the kernels' object file and the host program (tc.aot); raises "
      "RuntimeError with the compiler's diagnostics on failure.");

  m.def(
      "split_training",
      [](const std::string &ir, const std::string &options) {
        char *forward = nullptr, *backward = nullptr, *layout = nullptr;
        char *error = nullptr;
        int status;
        {
          nb::gil_scoped_release release;
          status = tcSplitTrainingGraph(ir.data(), ir.size(), options.c_str(),
                                        &forward, &backward, &layout, &error);
        }
        if (status)
          throw std::runtime_error(takeMessage(error));
        return nb::make_tuple(takeMessage(forward), takeMessage(backward),
                              takeMessage(layout));
      },
      nb::arg("ir"), nb::arg("options") = std::string(),
      "Splits an fx-dialect training graph into (forward, backward, "
      "layout): two prim-dialect modules and where each value the backward "
      "saves comes from (see tcSplitTrainingGraph).");

  // The GPU compilers: (source, pipeline options, dump stages).
  auto gpuCompiler = [](TcExecutableRef (*compile)(const char *, size_t,
                                                   const char *, int,
                                                   const char *, char **)) {
    return [compile](const std::string &ir, const std::string &options,
                     bool dumpStages, const std::string &cacheDir) {
      char *error = nullptr;
      TcExecutableRef exe;
      {
        nb::gil_scoped_release release;
        exe = compile(ir.data(), ir.size(), options.c_str(),
                      dumpStages ? 1 : 0,
                      cacheDir.empty() ? nullptr : cacheDir.c_str(), &error);
      }
      if (!exe)
        throw std::runtime_error(takeMessage(error));
      return new Executable(exe);
    };
  };
  m.def("compile_cuda", gpuCompiler(tcCompileCUDA), nb::arg("ir"),
        nb::arg("options") = std::string(), nb::arg("dump_stages") = false,
        nb::arg("cache_dir") = std::string(),
        "Compiles an fx-dialect module for NVIDIA GPUs with "
        "tc-cuda-pipeline's options (\"chip=sm_90 format=bin toolkit=... "
        "link=...\").");
  m.def("compile_rocm", gpuCompiler(tcCompileROCm), nb::arg("ir"),
        nb::arg("options") = std::string(), nb::arg("dump_stages") = false,
        nb::arg("cache_dir") = std::string(),
        "Compiles an fx-dialect module for AMD GPUs with tc-rocm-pipeline's "
        "options (\"chip=gfx942 toolkit=/opt/rocm\").");
}
