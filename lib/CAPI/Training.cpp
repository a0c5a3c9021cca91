//===- Training.cpp - C API: split a training graph -------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Runs tc-split-training-pipeline on an fx graph with arguments marked
// tc.requires_grad and hands back the forward and the backward as two
// modules of prim ops, each compiled afterwards like any graph. The forward
// returns the graph's outputs, then the values the backward saves that are
// neither inputs nor outputs ("extras"); the layout says where each of the
// backward's saved arguments comes from, so that inputs and outputs are
// kept by reference instead of being copied into new buffers.
//
//===----------------------------------------------------------------------===//

#include "tc-c/Compiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"
#include "tc/InitAll.h"
#include "tc/Runtime/Diagnostics.h"
#include "tc/Pipelines/Phases.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <string>

using namespace mlir;

static char *copyString(const std::string &s) {
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

static std::string printModule(func::FuncOp func) {
  OpBuilder b(func.getContext());
  OwningOpRef<ModuleOp> module = ModuleOp::create(func.getLoc());
  b.setInsertionPointToEnd(module->getBody());
  b.clone(*func);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(true));
  return text;
}

namespace {
struct Split {
  std::string forward, backward, layout;
  int64_t numOutputs = 0;
};
} // namespace

/// The split of the fx module `source`, or failure after diagnostics.
static FailureOr<Split> split(StringRef source, StringRef pipelineOptions,
                              MLIRContext &context) {
  auto options = tc::DecomposeOptions::createFromString(pipelineOptions);
  if (!options)
    return emitError(UnknownLoc::get(&context))
           << "invalid tc-split-training-pipeline options '"
           << pipelineOptions << "'";
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&context));
  if (!module)
    return failure();
  // The number of forward results, before autodiff appends the gradients.
  int64_t numOutputs = -1;
  module->walk([&](FunctionOpInterface f) {
    numOutputs = f.getNumResults();
  });
  PassManager pm(&context);
  tc::buildTrainingSplitPipeline(pm, *options);
  if (failed(pm.run(*module)))
    return failure();

  SmallVector<func::FuncOp> funcs(module->getOps<func::FuncOp>());
  func::FuncOp forward, backward;
  for (func::FuncOp f : funcs) {
    if (f.getSymName().ends_with("_forward"))
      forward = f;
    else if (f.getSymName().ends_with("_backward"))
      backward = f;
  }
  if (funcs.size() != 2 || !forward || !backward || numOutputs < 0 ||
      forward.getNumResults() < numOutputs)
    return emitError(module->getLoc())
           << "tc-split-training-pipeline: expected one forward and one "
              "backward function (no argument marked tc.requires_grad?)";

  // Where each saved value comes from: an input ("i<n>"), an output
  // ("o<n>") or an extra result of the forward ("s<n>:<tensor type>").
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> results(ret.getOperands().take_front(numOutputs));
  llvm::DenseMap<Value, std::string> origin;
  for (auto [i, v] : llvm::enumerate(results))
    origin.try_emplace(v, "o" + std::to_string(i));
  Split result;
  result.numOutputs = numOutputs;
  int64_t extras = 0;
  for (Value v : ret.getOperands().drop_front(numOutputs)) {
    auto it = origin.find(v);
    if (it == origin.end()) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        it = origin.try_emplace(v, "i" + std::to_string(arg.getArgNumber()))
                 .first;
      } else {
        std::string entry = "s" + std::to_string(extras++) + ":";
        llvm::raw_string_ostream(entry) << v.getType();
        it = origin.try_emplace(v, entry).first;
        results.push_back(v);
      }
    }
    if (!result.layout.empty())
      result.layout += ",";
    result.layout += it->second;
  }
  // The forward returns the outputs and the extras only.
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  forward.setFunctionType(
      b.getFunctionType(forward.getArgumentTypes(), resultTypes));

  result.forward = printModule(forward);
  result.backward = printModule(backward);
  return result;
}

int tcSplitTrainingGraph(const char *source, size_t length,
                         const char *options, char **forward,
                         char **backward, char **layout, char **error) {
  std::string diagnostics;
  FailureOr<Split> result = failure();
  llvm::CrashRecoveryContext::Enable();
  llvm::CrashRecoveryContext recovery;
  bool survived = recovery.RunSafely([&] {
    MLIRContext context(MLIRContext::Threading::DISABLED);
    DialectRegistry registry;
    tc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    llvm::raw_string_ostream diag(diagnostics);
    tc::DiagnosticCollector handler(&context, diag);
    result = split(StringRef(source, length), options ? options : "",
                   context);
  });
  if (!survived)
    diagnostics += "error: tc crashed while splitting this training graph "
                   "(the crash was contained); this is a bug in tc\n";
  if (!survived || failed(result)) {
    if (error)
      *error = copyString(diagnostics);
    return 1;
  }
  *forward = copyString(result->forward);
  *backward = copyString(result->backward);
  *layout = copyString(result->layout);
  return 0;
}
