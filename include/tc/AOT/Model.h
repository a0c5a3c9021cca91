//===- Model.h - run a graph exported by tc.aot, without Python -*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The ahead-of-time runtime's C++ API (library libtc_aot). `tc.aot.export`
// (Python) turns a model and example inputs into a folder:
//
//   model.so        the kernels, compiled for the exporting host's CPU
//   model.plan      the host program: launches, GEMMs, the arena's layout
//   weights.bin     the parameters and buffers, 64-byte aligned
//   model.manifest  the user inputs' and outputs' names, dtypes and shapes
//
// and this API loads that folder and runs it: no Python, no PyTorch, no
// compiler at run time (libtc_aot needs only BLAS and the C++ runtime).
//
//   std::string error;
//   auto model = tc::aot::Model::load("mlp.tc", error);
//   if (!model) { std::cerr << error; return 1; }
//   std::vector<float> x(model->inputs()[0].numel()), y(...);
//   if (!model->run({x.data()}, {y.data()}, error)) ...
//
// Tensors are dense and contiguous (row-major), of the manifest's shapes.
// run() may be called from several threads; calls run one at a time.
//
//===----------------------------------------------------------------------===//

#ifndef TC_AOT_MODEL_H
#define TC_AOT_MODEL_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tc::aot {

enum class DType { F32, F64, F16, BF16, I64, I32, I16, I8, U8, Bool };

/// The manifest's name of `dtype` ("f32", "bf16", "i64", "bool", ...).
const char *dtypeName(DType dtype);
/// Bytes per element.
int64_t dtypeBytes(DType dtype);

struct TensorSpec {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t numel() const;
  int64_t bytes() const { return numel() * dtypeBytes(dtype); }
};

class Model {
public:
  /// Loads an exported folder. On failure returns nullptr and sets `error`
  /// (which file, what is wrong with it).
  static std::unique_ptr<Model> load(const std::string &directory,
                                     std::string &error);
  ~Model();

  /// The user inputs run() takes, in the exported program's order.
  const std::vector<TensorSpec> &inputs() const;
  /// The outputs run() writes, in order.
  const std::vector<TensorSpec> &outputs() const;

  /// Runs the graph: reads `inputs` (one buffer per inputs() entry, of its
  /// bytes()) and writes `outputs` (one per outputs() entry). Returns false
  /// and sets `error` on a wrong number of buffers or a null buffer.
  bool run(const std::vector<const void *> &inputs,
           const std::vector<void *> &outputs, std::string &error);

  struct Impl;

private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace tc::aot

#endif // TC_AOT_MODEL_H
