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
#include <map>
#include <string>
#include <tuple>
#include <vector>

/// The operands of one product as tc::host::LibraryGemm describes them.
struct PythonGemmCall {
  bool isDouble, transA, transB;
  int64_t batch, m, n, k;
  const void *a, *b, *bias;
  void *out;
};

/// A tensor viewing `data` with `sizes` (and `strides`, in elements; dense
/// when empty) of `dtype`, made once per address, layout and type: made
/// through DLPack, a view cost ~15 us, three or four of them most of a
/// library call's overhead (a 64x128x128 product took 77 us through tc,
/// 15 in eager). A view owns nothing, so the one made for an address is
/// right for any buffer later there. Needs the GIL.
inline nanobind::object cachedTensorView(const void *data,
                                         nanobind::dlpack::dtype dtype,
                                         std::vector<size_t> sizes,
                                         std::vector<int64_t> strides = {}) {
  namespace nb = nanobind;
  using Key = std::tuple<const void *, uint8_t, uint8_t, std::vector<size_t>,
                         std::vector<int64_t>>;
  // Leaked on purpose: tensors must not be released after the interpreter.
  static auto *views = new std::map<Key, nb::object>();
  Key key{data, dtype.code, dtype.bits, sizes, strides};
  auto it = views->find(key);
  if (it != views->end())
    return it->second;
  if (views->size() >= 4096)
    views->clear();
  nb::object view =
      nb::ndarray<nb::pytorch>(const_cast<void *>(data), sizes.size(),
                               sizes.data(), nb::handle(),
                               strides.empty() ? nullptr : strides.data(),
                               dtype, nb::device::cpu::value)
          .cast(nb::rv_policy::reference);
  views->emplace(std::move(key), view);
  return view;
}

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
      return cachedTensorView(data, dtype, std::move(sizes));
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
