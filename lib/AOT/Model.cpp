//===- Model.cpp - run a graph exported by tc.aot, without Python --------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/AOT/Model.h"

#include "tc/Runtime/HostProgram.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <mutex>
#include <sstream>

using namespace tc::aot;

namespace {

/// The first line of model.manifest; the plan's is kAOTPlanVersion
/// (tc/Runtime/CPURuntime.h), repeated here: this library does not depend
/// on the compiler's headers.
constexpr const char *kManifestVersion = "tc-aot-model-1";
constexpr const char *kPlanVersion = "tc-aot-plan-2";

struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t bytes;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4},  {DType::F64, "f64", 8}, {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I64, "i64", 8}, {DType::I32, "i32", 4},
    {DType::I16, "i16", 2},  {DType::I8, "i8", 1},   {DType::U8, "u8", 1},
    {DType::Bool, "bool", 1}};

bool parseDType(const std::string &name, DType &dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name) {
      dtype = info.dtype;
      return true;
    }
  return false;
}

bool readFile(const std::string &path, std::string &contents,
              std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  std::ostringstream os;
  os << in.rdbuf();
  contents = os.str();
  return true;
}

/// Memory aligned for the kernels' vector accesses (64 bytes).
struct AlignedBuffer {
  void *data = nullptr;
  explicit AlignedBuffer(int64_t bytes) {
    if (bytes > 0)
      data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  }
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
};

} // namespace

const char *tc::aot::dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

int64_t tc::aot::dtypeBytes(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.bytes;
  return 0;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

struct Model::Impl {
  /// Per graph argument: a user input (its index in `inputs`) or a weight
  /// (its byte offset in weights.bin).
  struct Argument {
    int64_t input = -1;
    int64_t weightOffset = 0;
  };
  std::vector<Argument> arguments;
  std::vector<TensorSpec> inputs, outputs;
  tc::host::HostProgram program;
  void *library = nullptr;
  std::unique_ptr<AlignedBuffer> weights, arena;
  std::mutex mutex;

  ~Impl() {
    if (library)
      dlclose(library);
  }

  bool parseManifest(const std::string &text, int64_t weightBytes,
                     std::string &error);
};

bool Model::Impl::parseManifest(const std::string &text, int64_t weightBytes,
                                std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kManifestVersion) {
    error = "model.manifest: expected '" + std::string(kManifestVersion) +
            "' on its first line (exported by another tc version?)";
    return false;
  }
  int lineNo = 1;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    std::istringstream words(line);
    std::string tag, kind, dtypeName;
    TensorSpec spec;
    words >> tag;
    if (tag == "argument")
      words >> kind;
    words >> spec.name >> dtypeName;
    Argument argument;
    if (kind == "weight")
      words >> argument.weightOffset;
    int64_t size;
    while (words >> size)
      spec.shape.push_back(size);
    bool known = parseDType(dtypeName, spec.dtype);
    bool ok = known && words.eof() && !spec.name.empty() &&
              (tag == "output" ||
               (tag == "argument" && (kind == "input" || kind == "weight")));
    for (int64_t dim : spec.shape)
      ok = ok && dim >= 0;
    if (ok && kind == "weight")
      ok = argument.weightOffset >= 0 &&
           argument.weightOffset + spec.bytes() <= weightBytes;
    if (!ok) {
      error = "model.manifest:" + std::to_string(lineNo) + ": malformed: '" +
              line + "'";
      return false;
    }
    if (tag == "output") {
      outputs.push_back(std::move(spec));
      continue;
    }
    if (kind == "input") {
      argument.input = inputs.size();
      inputs.push_back(std::move(spec));
    }
    arguments.push_back(argument);
  }
  return true;
}

Model::Model(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Model::~Model() = default;

std::unique_ptr<Model> Model::load(const std::string &directory,
                                   std::string &error) {
  auto impl = std::make_unique<Impl>();
  std::string manifest, plan, weights;
  if (!readFile(directory + "/model.manifest", manifest, error) ||
      !readFile(directory + "/model.plan", plan, error) ||
      !readFile(directory + "/weights.bin", weights, error))
    return nullptr;
  if (!impl->parseManifest(manifest, weights.size(), error))
    return nullptr;
  tc::host::HostProgram &program = impl->program;
  if (!program.parse(plan, kPlanVersion)) {
    error = "model.plan: malformed or of another tc version";
    return nullptr;
  }
  if (program.symbolic()) {
    error = "model.plan has a symbolic size; AOT models have static shapes";
    return nullptr;
  }
  int64_t expected = impl->arguments.size() + impl->outputs.size();
  if (program.numArguments != expected) {
    error = "model.plan takes " + std::to_string(program.numArguments) +
            " buffers, the manifest lists " + std::to_string(expected);
    return nullptr;
  }

  std::string libraryPath = directory + "/model.so";
  impl->library = program.loadKernelLibrary(libraryPath, error);
  if (!impl->library)
    return nullptr;

  impl->weights = std::make_unique<AlignedBuffer>(weights.size());
  if (!weights.empty())
    std::memcpy(impl->weights->data, weights.data(), weights.size());
  impl->arena = std::make_unique<AlignedBuffer>(program.arenaBytes);
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

const std::vector<TensorSpec> &Model::inputs() const { return impl->inputs; }
const std::vector<TensorSpec> &Model::outputs() const {
  return impl->outputs;
}

bool Model::run(const std::vector<const void *> &inputs,
                const std::vector<void *> &outputs, std::string &error) {
  if (inputs.size() != impl->inputs.size() ||
      outputs.size() != impl->outputs.size()) {
    error = "the model takes " + std::to_string(impl->inputs.size()) +
            " inputs and " + std::to_string(impl->outputs.size()) +
            " outputs, got " + std::to_string(inputs.size()) + " and " +
            std::to_string(outputs.size());
    return false;
  }
  auto missing = [&](const char *what, size_t i) {
    error = std::string("null buffer for ") + what + " " + std::to_string(i);
    return false;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i] && impl->inputs[i].bytes())
      return missing("input", i);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i] && impl->outputs[i].bytes())
      return missing("output", i);
  std::vector<void *> args;
  args.reserve(impl->program.numArguments + 1);
  for (const Impl::Argument &argument : impl->arguments)
    args.push_back(argument.input >= 0
                       ? const_cast<void *>(inputs[argument.input])
                       : static_cast<char *>(impl->weights->data) +
                             argument.weightOffset);
  args.insert(args.end(), outputs.begin(), outputs.end());
  std::lock_guard<std::mutex> oneAtATime(impl->mutex);
  args.push_back(impl->arena->data);
  return impl->program.run(args.data(), args.size(), error);
}
