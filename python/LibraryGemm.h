//===- LibraryGemm.h - CPU graphs' products through Python ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Shared by tc._tc (TCModule.cpp, through the C API's tcSetCPUGemm) and
// tc._runtime (RuntimeModule.cpp, through tc::host::setLibraryGemm): one
// `kernel.gemm` of a CPU graph run by a Python function (tc.library.gemm,
// PyTorch's BLAS) on tensors viewing the graph's buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TC_PYTHON_LIBRARYGEMM_H
#define TC_PYTHON_LIBRARYGEMM_H

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

/// The operands of one product as tc::host::LibraryGemm describes them.
struct PythonGemmCall {
  bool isDouble, transA, transB;
  int64_t batch, m, n, k;
  const void *a, *b, *bias;
  void *out;
};

/// Calls `fn(a, b, out, bias, trans_a, trans_b)` with tensors of (batch,
/// rows, columns) viewing the buffers as stored (`bias` a tensor of n, or
/// None). Takes the GIL (graphs run without it). Returns "" or the
/// exception's message.
inline std::string callPythonGemm(nanobind::object &fn,
                                  const PythonGemmCall &g) {
  namespace nb = nanobind;
  nb::gil_scoped_acquire gil;
  try {
    nb::dlpack::dtype dtype =
        g.isDouble ? nb::dtype<double>() : nb::dtype<float>();
    auto view = [&](const void *data, std::vector<size_t> sizes) {
      return nb::ndarray<nb::pytorch>(const_cast<void *>(data), sizes.size(),
                                      sizes.data(), nb::handle(), nullptr,
                                      dtype, nb::device::cpu::value)
          .cast(nb::rv_policy::reference);
    };
    size_t batch = g.batch, m = g.m, n = g.n, k = g.k;
    nb::object a = g.transA ? view(g.a, {batch, k, m}) : view(g.a, {batch, m, k});
    nb::object b = g.transB ? view(g.b, {batch, n, k}) : view(g.b, {batch, k, n});
    nb::object bias = nb::none();
    if (g.bias)
      bias = view(g.bias, {n});
    fn(a, b, view(g.out, {batch, m, n}), bias, g.transA, g.transB);
    return "";
  } catch (const std::exception &e) {
    std::string message = e.what();
    return message.empty() ? "the library GEMM raised" : message;
  }
}

#endif // TC_PYTHON_LIBRARYGEMM_H
