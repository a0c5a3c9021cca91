//===- GPUProgram.cpp - what the CUDA and ROCm runtimes share ---*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "GPUProgram.h"
#include "ScheduleReader.h"
#include "DiskCache.h"
#include "tc/Runtime/Diagnostics.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "tc/Dialect/Kernel/IR/KernelOps.h"
#include "tc/Dialect/Kernel/Transforms/ArenaPlacement.h"
#include "tc/InitAll.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <mutex>

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::gpu_runtime;

void *gpu_runtime::openLibrary(std::initializer_list<const char *> names) {
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD))
      return lib;
  for (const char *name : names)
    if (void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return lib;
  return nullptr;
}

void gpu_runtime::setOperandViews(runtime::AttentionCall &call,
                                  ArrayRef<int64_t> views) {
  int64_t *offsets[4] = {&call.qOffset, &call.kOffset, &call.vOffset,
                         &call.outOffset};
  int64_t *strides[4] = {call.qStrides, call.kStrides, call.vStrides,
                         call.outStrides};
  for (int i = 0; i < 4; ++i) {
    *offsets[i] = views[5 * i];
    for (int d = 0; d < 4; ++d)
      strides[i][d] = views[5 * i + 1 + d];
  }
}

runtime::AttentionCall gpu_runtime::denseAttentionCall(
    bool bf16, ArrayRef<int64_t> sizes, int64_t biasBatch, int64_t biasHeads,
    int64_t biasWidth, bool causal, float scale) {
  runtime::AttentionCall c;
  c.element = bf16 ? runtime::ConvElement::BF16 : runtime::ConvElement::F16;
  c.batch = sizes[0];
  c.heads = sizes[1];
  c.kvHeads = sizes[2];
  c.queries = sizes[3];
  c.keys = sizes[4];
  c.headDim = sizes[5];
  c.valueDim = sizes[6];
  c.causal = causal;
  c.scale = scale;
  auto dense = [](int64_t (&strides)[4], std::array<int64_t, 4> dims) {
    strides[3] = 1;
    for (int i = 2; i >= 0; --i)
      strides[i] = strides[i + 1] * dims[i + 1];
  };
  dense(c.qStrides, {c.batch, c.heads, c.queries, c.headDim});
  dense(c.kStrides, {c.batch, c.kvHeads, c.keys, c.headDim});
  dense(c.vStrides, {c.batch, c.kvHeads, c.keys, c.valueDim});
  dense(c.outStrides, {c.batch, c.heads, c.queries, c.valueDim});
  if (biasBatch >= 0) {
    c.hasBias = true;
    c.biasDims[0] = biasBatch;
    c.biasDims[1] = biasHeads;
    c.biasDims[2] = c.queries;
    c.biasDims[3] = c.keys;
    dense(c.biasStrides, {biasBatch, biasHeads, c.queries,
                          std::max(biasWidth, c.keys)});
  }
  return c;
}

namespace {
/// A GPU program's buffers and steps from a schedule (see
/// ScheduleReader.h): launches configured by tc-lower-kernel-to-gpu,
/// cuBLAS/hipBLAS GEMMs, cuDNN convolutions and attentions.
class GPUScheduleReader : public runtime::ScheduleReader {
public:
  GPUScheduleReader(GPUProgram &p, StringRef platform)
      : p(p), platform(platform) {}

private:
  /// A buffer's bytes in all (`perSymbol` false), or per unit of the
  /// symbolic size.
  static int64_t bytesOf(MemRefType type, bool &perSymbol) {
    int64_t bytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    for (int64_t size : type.getShape())
      if (!ShapedType::isDynamic(size))
        bytes *= size;
    perSymbol = !type.hasStaticShape();
    return bytes;
  }
  void onArgument(BlockArgument arg) override {
    // An argument's bytes only name what a profiled step moves.
    BufferRef ref{static_cast<int64_t>(arg.getArgNumber()), 0};
    if (auto type = dyn_cast<MemRefType>(arg.getType())) {
      bool perSymbol = false;
      int64_t bytes = bytesOf(type, perSymbol);
      (perSymbol ? ref.bytesPerSymbol : ref.bytes) = bytes;
    }
    p.buffers.push_back(ref);
  }
  void onBuffer(kernel::BufferOp buffer) override {
    bool perSymbol = false;
    int64_t bytes = bytesOf(cast<MemRefType>(buffer.getType()), perSymbol);
    p.buffers.push_back({-1, static_cast<int64_t>(buffer.getOffset()),
                         perSymbol ? 0 : bytes,
                         static_cast<int64_t>(buffer.getOffsetPerSymbol()),
                         perSymbol ? bytes : 0});
  }
  LogicalResult onLaunch(kernel::LaunchOp launch,
                         SmallVector<int64_t> buffers) override {
    if (!launch.getBlock() ||
        !(launch.getGrid() || launch.getGridPerSymbol() ||
          launch.getThreadsPerSymbol()))
      return launch.emitOpError() << "was not configured for a GPU";
    Launch step;
    step.kernel = launch.getKernelAttr().getLeafReference().str();
    step.grid = launch.getGrid().value_or(0);
    step.block = *launch.getBlock();
    step.gridPerSymbol = launch.getGridPerSymbol().value_or(0);
    step.threadsPerSymbol = launch.getThreadsPerSymbol().value_or(0);
    step.buffers.assign(buffers.begin(), buffers.end());
    p.steps.push_back({std::move(step), std::nullopt, std::nullopt, {}});
    return success();
  }
  LogicalResult onGemm(kernel::GemmOp gemm,
                       const runtime::GemmBuffers &buffers) override {
    Type elt = buffers.element;
    // Half-precision GEMMs (f32 accumulation) are cuBLAS's; the other
    // targets widen such products before they get here.
    bool cuda = platform == "CUDA";
    bool half = elt.isF16() || elt.isBF16();
    if (!elt.isF32() && !elt.isF64() && !(half && cuda))
      return gemm.emitOpError()
             << platform << " GEMM supports "
             << (cuda ? "f32, f64, f16 and bf16" : "f32 and f64") << ", not "
             << elt;
    Gemm g;
    runtime::assignGemm(g, buffers);
    g.element = elt.isF64()    ? GemmElement::F64
                : elt.isF16()  ? GemmElement::F16
                : elt.isBF16() ? GemmElement::BF16
                               : GemmElement::F32;
    // (The runtimes grow the ones of a bias GEMM with a symbolic m.)
    if (g.bias >= 0 && !(g.perSymbol & 2u))
      p.maxBiasRows = std::max(p.maxBiasRows, g.m);
    p.steps.push_back({std::nullopt, g, std::nullopt, {}});
    return success();
  }
  LogicalResult onConv(kernel::ConvOp conv, runtime::ConvCall call) override {
    if (call.weightChannelsFirst)
      return conv.emitOpError()
             << "weight_channels_first is for CPU library calls (cuDNN "
                "takes its filter in the tensors' layout)";
    p.steps.push_back({std::nullopt, std::nullopt, std::move(call), {}});
    return success();
  }
  LogicalResult onAttention(kernel::AttentionOp op,
                            ArrayRef<int64_t> ids) override {
    if (platform != "CUDA")
      return op.emitOpError() << "needs cuDNN's fused attention, which "
                              << platform << " has not";
    auto q = cast<MemRefType>(op.getQuery().getType());
    kernel::AttentionOp::View views[4] = {
        op.getOperandView(0), op.getOperandView(1), op.getOperandView(2),
        op.getOperandView(3)};
    ArrayRef<int64_t> qs = views[0].sizes, ks = views[1].sizes,
                      vs = views[2].sizes;
    SmallVector<int64_t, 4> bs = {-1, -1, -1, 0};
    if (Value bias = op.getBias())
      bs.assign(cast<MemRefType>(bias.getType()).getShape().begin(),
                cast<MemRefType>(bias.getType()).getShape().end());
    Attention a{ids[0], ids[1], ids[2], ids[3], ids[4],
                denseAttentionCall(
                    q.getElementType().isBF16(),
                    {qs[0], qs[1], ks[1], qs[2], ks[2], qs[3], vs[3]}, bs[0],
                    bs[1], bs[3], op.getCausal(),
                    static_cast<float>(op.getScale().convertToDouble()))};
    SmallVector<int64_t, 20> placed;
    for (const kernel::AttentionOp::View &view : views) {
      placed.push_back(view.offset);
      llvm::append_range(placed, view.strides);
    }
    setOperandViews(a.call, placed);
    const runtime::AttentionCall &c = a.call;
    if (std::string why = gpu_runtime::attentionUnsupportedReason(c); !why.empty())
      return op.emitOpError() << "cannot run on cuDNN: " << why;
    p.steps.push_back({std::nullopt, std::nullopt, std::nullopt, a});
    return success();
  }

  GPUProgram &p;
  StringRef platform;
};
} // namespace

LogicalResult GPUProgram::extract(ModuleOp module, StringRef platform) {
  GPUScheduleReader reader(*this, platform);
  if (failed(reader.read(module, platform)))
    return failure();
  arenaBytes = reader.arenaBytes;
  intermediateBytes = reader.intermediateBytes;
  arenaBytesPerSymbol = reader.arenaBytesPerSymbol;
  numArguments = reader.numArguments;
  numKernels = reader.numKernels;

  auto binaryOp = module.lookupSymbol<gpu::BinaryOp>("tc_kernels");
  if (!binaryOp) {
    if (numKernels)
      return module.emitError() << "the kernels were not serialized";
    return success();
  }
  for (auto object : binaryOp.getObjects().getAsRange<gpu::ObjectAttr>()) {
    binaries.push_back(object.getObject().getValue().str());
    format = object.getFormat() == gpu::CompilationTarget::Assembly ? "isa"
                                                                     : "bin";
  }
  return success();
}

bool GPUProgram::symbolic() const {
  if (arenaBytesPerSymbol)
    return true;
  return llvm::any_of(steps, [](const Step &step) {
    return (step.launch && step.launch->symbolic()) ||
           (step.gemm && step.gemm->perSymbol);
  });
}

bool GPUProgram::checkAlignment(ArrayRef<void *> args,
                                std::string &error) const {
  for (auto [index, arg] : llvm::enumerate(args)) {
    auto address = reinterpret_cast<uintptr_t>(arg);
    if (address % kernel::kGPUBufferAlignment == 0)
      continue;
    std::string what = index + 1 == args.size()
                           ? std::string("the arena")
                           : "buffer #" + std::to_string(index) +
                                 " (inputs, then outputs)";
    error = what + " is not " + std::to_string(kernel::kGPUBufferAlignment) +
            "-byte aligned (address " + std::to_string(address) +
            "); tc's kernels read it with vector accesses, nothing was "
            "launched";
    return false;
  }
  return true;
}

SmallVector<void *, 16> GPUProgram::bind(ArrayRef<void *> args,
                                         int64_t symbol) const {
  auto *arena = static_cast<char *>(args.back());
  SmallVector<void *, 16> ptrs;
  for (const BufferRef &ref : buffers)
    ptrs.push_back(ref.argument >= 0
                       ? args[ref.argument]
                       : arena + ref.offset + ref.offsetPerSymbol * symbol);
  return ptrs;
}

/// The buffers step `step` reads or writes.
static void usedBy(const Step &step, SmallVectorImpl<int64_t> &ids) {
  ids.clear();
  if (step.launch)
    llvm::append_range(ids, step.launch->buffers);
  if (step.gemm) {
    ids.append({step.gemm->a, step.gemm->b, step.gemm->out});
    if (step.gemm->bias >= 0)
      ids.push_back(step.gemm->bias);
  }
  if (step.conv)
    ids.append({step.conv->input, step.conv->weight, step.conv->output});
  if (step.attention) {
    const Attention &a = *step.attention;
    ids.append({a.query, a.key, a.value, a.out});
    if (a.bias >= 0)
      ids.push_back(a.bias);
  }
}

std::string GPUProgram::stepName(size_t index) const {
  const Step &step = steps[index];
  if (step.launch)
    return step.launch->kernel;
  if (step.gemm)
    return "gemm " + std::to_string(step.gemm->m) + "x" +
           std::to_string(step.gemm->n) + "x" + std::to_string(step.gemm->k);
  if (step.attention)
    return "attention";
  return "convolution";
}

int64_t GPUProgram::stepBytes(size_t index, int64_t symbol) const {
  SmallVector<int64_t> ids;
  usedBy(steps[index], ids);
  llvm::sort(ids);
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  int64_t bytes = 0;
  for (int64_t id : ids) {
    const BufferRef &ref = buffers[id];
    if (ref.bytes == 0 && ref.bytesPerSymbol == 0)
      return -1; // not recorded (a program from an older cache)
    bytes += ref.bytes + ref.bytesPerSymbol * symbol;
  }
  return bytes;
}

std::optional<size_t> GPUProgram::lastStepTaking(int64_t argument) const {
  SmallVector<int64_t> ids;
  for (size_t index = steps.size(); index-- > 0;) {
    usedBy(steps[index], ids);
    if (llvm::any_of(ids, [&](int64_t id) {
          return buffers[id].argument == argument;
        }))
      return index;
  }
  return std::nullopt;
}

namespace {
/// The steps from the first that uses a buffer to the last: while its
/// contents matter.
struct LiveRange {
  size_t first = SIZE_MAX, last = 0;
  bool used() const { return first != SIZE_MAX; }
};
} // namespace

static std::vector<LiveRange> liveRanges(const GPUProgram &program) {
  std::vector<LiveRange> live(program.buffers.size());
  SmallVector<int64_t> ids;
  for (auto [index, step] : llvm::enumerate(program.steps)) {
    usedBy(step, ids);
    for (int64_t id : ids) {
      live[id].first = std::min(live[id].first, index);
      live[id].last = std::max(live[id].last, index);
    }
  }
  return live;
}

SmallVector<int64_t> GPUProgram::liveArenaBytes() const {
  std::vector<LiveRange> live = liveRanges(*this);
  SmallVector<int64_t> bytes(steps.size() + 1, 0);
  for (auto [id, ref] : llvm::enumerate(buffers))
    if (ref.argument < 0 && live[id].used()) {
      bytes[live[id].first] += ref.bytes;
      bytes[live[id].last + 1] -= ref.bytes;
    }
  for (size_t i = 1; i < bytes.size(); ++i)
    bytes[i] += bytes[i - 1];
  bytes.pop_back();
  return bytes;
}

SmallVector<int64_t> GPUProgram::repackArena(ArrayRef<int64_t> scratch) {
  if (symbolic()) {
    assert(llvm::all_of(scratch, [](int64_t b) { return b == 0; }) &&
           "a symbolic program has no library scratch");
    return SmallVector<int64_t>(steps.size(), 0);
  }
  // The arena's buffers that some step uses, then the steps' scratch.
  std::vector<LiveRange> live = liveRanges(*this);
  SmallVector<kernel::LiveBlock> blocks;
  SmallVector<int64_t> owners; // buffer id, or -1 - step for scratch
  for (auto [id, ref] : llvm::enumerate(buffers))
    if (ref.argument < 0 && live[id].used()) {
      blocks.push_back({ref.bytes, live[id].first, live[id].last});
      owners.push_back(static_cast<int64_t>(id));
    }
  // tc-plan-memory's in-place epilogues: a buffer it placed over another
  // of the same size that dies at the step writing this one (two live
  // buffers it placed together otherwise never share bytes).
  for (auto [b, writtenId] : llvm::enumerate(owners))
    for (auto [a, readId] : llvm::enumerate(owners)) {
      const BufferRef &written = buffers[writtenId], &read = buffers[readId];
      if (a != b && read.offset == written.offset &&
          read.bytes == written.bytes &&
          live[readId].last == live[writtenId].first) {
        blocks[b].inPlaceOf = static_cast<int64_t>(a);
        break;
      }
    }
  for (auto [step, bytes] : llvm::enumerate(scratch))
    if (bytes > 0) {
      blocks.push_back({bytes, step, step});
      owners.push_back(-1 - static_cast<int64_t>(step));
    }
  SmallVector<int64_t> placed =
      kernel::placeLiveBlocks(blocks, /*alignment=*/256, arenaBytes);
  SmallVector<int64_t> offsets(steps.size(), 0);
  for (auto [owner, offset] : llvm::zip_equal(owners, placed)) {
    if (owner >= 0)
      buffers[owner].offset = offset;
    else
      offsets[-1 - owner] = offset;
  }
  return offsets;
}

static std::string printIR(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(false).assumeVerified());
  return text;
}

std::unique_ptr<GPUProgram>
GPUProgram::compile(StringRef source, Target target,
                    const GPUPipelineOptions &options, bool keepStageIR,
                    std::string &diagnostics, StringRef cacheDir,
                    StringRef cacheOptions) {
  StringRef platform = getTargetName(target);
  // The disk cache holds the host program and the kernels' binaries (what
  // follows, library planning and loading, runs again), keyed on the
  // graph's structure: a model's identical layers, whose subgraphs differ in
  // names and locations only, compile once. Stage IR is only produced by a
  // real compile.
  std::string cacheName;
  if (!cacheDir.empty() && !keepStageIR) {
    cacheName =
        runtime::cacheKey({kGPUCacheVersion, platform,
                           runtime::structuralText(source), cacheOptions}) +
        ".gpu";
    SmallString<256> path(cacheDir);
    llvm::sys::path::append(path, cacheName);
    if (auto bytes = llvm::MemoryBuffer::getFile(path))
      if (auto cached = deserialize((*bytes)->getBuffer())) {
        cached->fromCache = true;
        return cached;
      }
  }
  std::unique_ptr<GPUProgram> program =
      compileUncached(source, target, options, keepStageIR, diagnostics);
  if (program && !cacheName.empty())
    runtime::writeCacheFile(cacheDir, cacheName, program->serialize());
  return program;
}

std::unique_ptr<GPUProgram>
GPUProgram::compileUncached(StringRef source, Target target,
                            const GPUPipelineOptions &options,
                            bool keepStageIR, std::string &diagnostics) {
  auto program = std::make_unique<GPUProgram>();
  // Contexts are reused across the GPU compiles of the process: making one
  // and loading its dialects costs as much as the passes of a small graph.
  // Compiles on several threads at once (a training graph's two halves)
  // each take one of their own. (What a compile interns, such as locations
  // and constants, stays; compiles are few.) Never destroyed: LLVM's own
  // static objects may be gone by then.
  static std::mutex poolMutex;
  static std::vector<MLIRContext *> idle;
  MLIRContext *taken = nullptr;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    if (!idle.empty()) {
      taken = idle.back();
      idle.pop_back();
    }
  }
  if (!taken) {
    // All contexts share one pool of threads, on which the kernels'
    // shards are serialized in parallel (never destroyed either).
    static auto *threads = new llvm::DefaultThreadPool();
    taken = new MLIRContext(MLIRContext::Threading::DISABLED);
    taken->setThreadPool(*threads);
    DialectRegistry registry;
    registerAllDialects(registry);
    taken->appendDialectRegistry(registry);
    taken->loadAllAvailableDialects();
  }
  llvm::scope_exit giveBack([taken] {
    std::lock_guard<std::mutex> lock(poolMutex);
    idle.push_back(taken);
  });
  MLIRContext &context = *taken;

  llvm::raw_string_ostream diag(diagnostics);
  DiagnosticCollector handler(&context, diag);

  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return nullptr;

  for (Stage stage : kAllStages) {
    std::string name = getStageName(target, stage).str();
    auto start = std::chrono::steady_clock::now();
    PassManager pm(&context);
    buildPipeline(pm, target, options, stage, stage);
    if (failed(pm.run(*module)))
      return nullptr;
    program->compileSeconds[name] = std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() -
                                        start)
                                        .count();
    if (keepStageIR && stage != Stage::Binary)
      program->stageIR[name] = printIR(*module);
  }
  if (failed(program->extract(*module, getTargetName(target))))
    return nullptr;
  if (keepStageIR) {
    // The host program, without the (binary) kernels.
    if (auto binary = module->lookupSymbol<gpu::BinaryOp>("tc_kernels"))
      binary.erase();
    program->stageIR["schedule"] = printIR(*module);
  }
  return program;
}

//===----------------------------------------------------------------------===//
// Disk cache format
//===----------------------------------------------------------------------===//
//
// Text lines, then the binaries: "binary <bytes>" followed by that many
// bytes and a newline, for each.

std::string GPUProgram::serialize() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto list = [&](ArrayRef<int64_t> values) {
    os << " " << values.size();
    for (int64_t v : values)
      os << " " << v;
  };
  os << kGPUCacheVersion << "\n"
     << "args " << numArguments << "\n"
     << "sizes " << arenaBytes << " " << intermediateBytes << " "
     << numKernels << " " << maxBiasRows << " " << arenaBytesPerSymbol
     << "\n"
     << "format " << format << "\n";
  for (const BufferRef &ref : buffers)
    os << "buffer " << ref.argument << " " << ref.offset << " " << ref.bytes
       << " " << ref.offsetPerSymbol << " " << ref.bytesPerSymbol << "\n";
  for (const Step &step : steps) {
    if (step.launch) {
      os << "launch " << step.launch->kernel << " " << step.launch->grid
         << " " << step.launch->block << " " << step.launch->gridPerSymbol
         << " " << step.launch->threadsPerSymbol;
      list(step.launch->buffers);
    } else if (step.gemm) {
      const Gemm &g = *step.gemm;
      os << "gemm " << g.a << " " << g.b << " " << g.out << " " << g.bias
         << " " << g.transA << " " << g.transB << " "
         << static_cast<int64_t>(g.element) << " "
         << g.batch << " " << g.m << " " << g.n << " " << g.k << " "
         << g.perSymbol;
    } else if (step.attention) {
      const Attention &a = *step.attention;
      const runtime::AttentionCall &c = a.call;
      uint32_t scaleBits;
      std::memcpy(&scaleBits, &c.scale, sizeof(scaleBits));
      os << "attention " << a.query << " " << a.key << " " << a.value << " "
         << a.out << " " << a.bias << " " << static_cast<int64_t>(c.element)
         << " " << c.batch << " " << c.heads << " " << c.kvHeads << " "
         << c.queries << " " << c.keys << " " << c.headDim << " "
         << c.valueDim << " " << c.causal << " " << scaleBits << " "
         << c.biasDims[0] << " " << c.biasDims[1] << " "
         << (c.hasBias ? c.biasStrides[2] : 0);
      for (auto [offset, strides] :
           {std::pair(c.qOffset, c.qStrides), std::pair(c.kOffset, c.kStrides),
            std::pair(c.vOffset, c.vStrides),
            std::pair(c.outOffset, c.outStrides)})
        os << " " << offset << " " << strides[0] << " " << strides[1] << " "
           << strides[2] << " " << strides[3];
    } else {
      const runtime::ConvCall &c = *step.conv;
      os << "conv " << static_cast<int64_t>(c.kind) << " " << c.input << " "
         << c.weight << " " << c.output << " " << c.groups << " "
         << static_cast<int64_t>(c.element) << " " << c.channelsLast;
      for (ArrayRef<int64_t> values :
           {ArrayRef<int64_t>(c.inputShape), ArrayRef<int64_t>(c.weightShape),
            ArrayRef<int64_t>(c.outputShape), ArrayRef<int64_t>(c.stride),
            ArrayRef<int64_t>(c.padding), ArrayRef<int64_t>(c.dilation)})
        list(values);
    }
    os << "\n";
  }
  for (const std::string &binary : binaries)
    os << "binary " << binary.size() << "\n" << binary << "\n";
  return text;
}

std::unique_ptr<GPUProgram> GPUProgram::deserialize(StringRef bytes) {
  auto program = std::make_unique<GPUProgram>();
  auto nextLine = [&](StringRef &line) {
    if (bytes.empty())
      return false;
    std::tie(line, bytes) = bytes.split('\n');
    return true;
  };
  StringRef line;
  if (!nextLine(line) || line != kGPUCacheVersion)
    return nullptr;
  while (nextLine(line)) {
    auto [tag, rest] = line.split(' ');
    if (tag == "format") {
      program->format = rest.str();
      continue;
    }
    if (tag == "binary") {
      size_t size;
      if (rest.getAsInteger(10, size) || bytes.size() < size + 1 ||
          bytes[size] != '\n')
        return nullptr;
      program->binaries.push_back(bytes.take_front(size).str());
      bytes = bytes.drop_front(size + 1);
      continue;
    }
    std::string kernel;
    if (tag == "launch") {
      auto [name, tail] = rest.split(' ');
      kernel = name.str();
      rest = tail;
    }
    SmallVector<StringRef> words;
    rest.split(words, ' ', -1, /*KeepEmpty=*/false);
    SmallVector<int64_t> n;
    for (StringRef w : words) {
      int64_t v;
      if (w.getAsInteger(10, v))
        return nullptr;
      n.push_back(v);
    }
    // Reads a counted list at n[at], advancing `at`.
    auto takeList = [&](size_t &at, SmallVector<int64_t> &out) {
      if (at >= n.size() || n[at] < 0 ||
          at + 1 + static_cast<size_t>(n[at]) > n.size())
        return false;
      out.assign(n.begin() + at + 1, n.begin() + at + 1 + n[at]);
      at += 1 + n[at];
      return true;
    };
    if (tag == "args" && n.size() == 1) {
      program->numArguments = n[0];
    } else if (tag == "sizes" && n.size() == 5) {
      program->arenaBytes = n[0];
      program->intermediateBytes = n[1];
      program->numKernels = n[2];
      program->maxBiasRows = n[3];
      program->arenaBytesPerSymbol = n[4];
    } else if (tag == "buffer" && n.size() == 5) {
      program->buffers.push_back({n[0], n[1], n[2], n[3], n[4]});
    } else if (tag == "launch" && n.size() >= 5) {
      Launch launch;
      launch.kernel = kernel;
      launch.grid = n[0];
      launch.block = n[1];
      launch.gridPerSymbol = n[2];
      launch.threadsPerSymbol = n[3];
      if (launch.block < 1 || launch.grid < 0 || launch.gridPerSymbol < 0 ||
          launch.threadsPerSymbol < 0)
        return nullptr;
      size_t at = 4;
      if (!takeList(at, launch.buffers) || at != n.size())
        return nullptr;
      program->steps.push_back({std::move(launch), std::nullopt,
                                std::nullopt, {}});
    } else if (tag == "gemm" && n.size() == 12) {
      if (n[6] < 0 || n[6] > static_cast<int64_t>(GemmElement::BF16))
        return nullptr;
      Gemm g{n[0], n[1], n[2], n[3], n[4] != 0, n[5] != 0,
             static_cast<GemmElement>(n[6]), n[7], n[8], n[9], n[10],
             static_cast<unsigned>(n[11]) & 15u};
      program->steps.push_back({std::nullopt, g, std::nullopt, {}});
    } else if (tag == "conv" && n.size() >= 7) {
      runtime::ConvCall c;
      c.kind = static_cast<kernel::ConvKind>(n[0]);
      c.input = n[1];
      c.weight = n[2];
      c.output = n[3];
      c.groups = n[4];
      c.element = static_cast<runtime::ConvElement>(n[5]);
      c.channelsLast = n[6] != 0;
      size_t at = 7;
      if (!takeList(at, c.inputShape) || !takeList(at, c.weightShape) ||
          !takeList(at, c.outputShape) || !takeList(at, c.stride) ||
          !takeList(at, c.padding) || !takeList(at, c.dilation) ||
          at != n.size())
        return nullptr;
      program->steps.push_back(
          {std::nullopt, std::nullopt, std::move(c), {}});
    } else if (tag == "attention" && n.size() == 38) {
      if (n[5] != static_cast<int64_t>(runtime::ConvElement::F16) &&
          n[5] != static_cast<int64_t>(runtime::ConvElement::BF16))
        return nullptr;
      uint32_t scaleBits = static_cast<uint32_t>(n[14]);
      float scale;
      std::memcpy(&scale, &scaleBits, sizeof(scale));
      bool biased = n[4] >= 0;
      Attention a{n[0], n[1], n[2], n[3], n[4],
                  denseAttentionCall(
                      n[5] == static_cast<int64_t>(runtime::ConvElement::BF16),
                      ArrayRef<int64_t>(n).slice(6, 7), biased ? n[15] : -1,
                      n[16], n[17], n[13] != 0, scale)};
      setOperandViews(a.call, ArrayRef<int64_t>(n).slice(18, 20));
      const runtime::AttentionCall &c = a.call;
      if (!gpu_runtime::attentionUnsupportedReason(c).empty())
        return nullptr;
      program->steps.push_back(
          {std::nullopt, std::nullopt, std::nullopt, std::move(a)});
    } else {
      return nullptr;
    }
  }
  // Every id must name a buffer.
  int64_t count = program->buffers.size();
  auto valid = [&](int64_t id) { return id >= 0 && id < count; };
  for (const Step &step : program->steps) {
    if (step.launch && !llvm::all_of(step.launch->buffers, valid))
      return nullptr;
    if (step.gemm && !(valid(step.gemm->a) && valid(step.gemm->b) &&
                       valid(step.gemm->out) &&
                       (step.gemm->bias == -1 || valid(step.gemm->bias))))
      return nullptr;
    if (step.conv && !(valid(step.conv->input) && valid(step.conv->weight) &&
                       valid(step.conv->output)))
      return nullptr;
    if (step.attention) {
      const Attention &a = *step.attention;
      if (!(valid(a.query) && valid(a.key) && valid(a.value) &&
            valid(a.out) && (a.bias == -1 || valid(a.bias))))
        return nullptr;
    }
  }
  return program;
}
