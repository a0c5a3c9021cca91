//===- FXToPrim.cpp - decompose ATen ops into prim ops ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Decomposes the ATen ops of `fx.graph`s into the closed `prim` op set. The
// importer records each node's result type as PyTorch computed it (its fake
// tensor), so every decomposition has a known target: operands are
// broadcast to the result shape and converted to the computation dtype
// explicitly, which is how PyTorch's broadcasting and type promotion become
// visible in the IR.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "Decomposer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "tc/Conversion/FXToPrim/Decompositions.h"
#include "tc/Dialect/FX/IR/FXOps.h"
#include "tc/Dialect/Prim/IR/PrimOps.h"
#include "tc/Dialect/Prim/Transforms/Passes.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <limits>
#include <numeric>

namespace mlir::tc {
#define GEN_PASS_DEF_CONVERTFXTOPRIMPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;
using namespace mlir::tc;

using namespace mlir::tc::decompose;

/// The table entry of `target` (Decompositions.def), or null: an op tc
/// does not decompose.
static const decompositions::Decomposition *lookup(StringRef target) {
  static const llvm::StringMap<const decompositions::Decomposition *> table =
      [] {
        llvm::StringMap<const decompositions::Decomposition *> map;
        for (const decompositions::Decomposition &entry :
             decompositions::kDecompositions)
          map[entry.op] = &entry;
        return map;
      }();
  return table.lookup(target);
}

/// Whether the decomposition of `target` handles a symbolic leading
/// dimension (a `?` that stands for the graph's one symbolic size, see
/// docs/DynamicShapes.md): elementwise math, matrix products with a
/// symbolic M, and reductions, normalizations and views over the static
/// dimensions (kSymbolic in Decompositions.def). Every other op needs
/// static shapes.
static bool admitsSymbolicSize(StringRef target) {
  const decompositions::Decomposition *entry = lookup(target);
  return entry && (entry->flags & decompositions::kSymbolic);
}

LogicalResult Decomposer::checkSymbolicSizes(StringRef target) {
  bool symbolic = false;
  auto check = [&](Value v) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.hasStaticShape())
      return success();
    symbolic = true;
    for (int64_t d = 1; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        return fail("a symbolic size is supported as the leading dimension "
                    "only, not in " + quoted(type));
    return success();
  };
  for (Value v : op.getResults())
    if (failed(check(v)))
      return failure();
  for (Value v : operands)
    if (failed(check(v)))
      return failure();
  if (symbolic && !admitsSymbolicSize(target))
    return fail("symbolic sizes are not supported by this op yet");
  return success();
}

FailureOr<SmallVector<Value>> Decomposer::dispatch() {
  StringRef target = op.getTarget();
  if (failed(checkSymbolicSizes(target)))
    return failure();

  if (std::optional<Result> r = complexOrFFT(target))
    return *r;
  // The table is the list of what tc decomposes (tc.support offers the
  // partitioner nothing else) and names the family that decomposes each.
  const decompositions::Decomposition *entry = lookup(target);
  if (!entry)
    return fail("no decomposition into prim ops");
  using decompositions::Family;
  std::optional<Result> result;
  switch (entry->family) {
  case Family::Elementwise:
    result = elementwise(target);
    break;
  case Family::Shapes:
    result = shapes(target);
    break;
  case Family::Reductions:
    result = reductions(target);
    break;
  case Family::Networks:
    result = networks(target);
    break;
  case Family::Indexing:
    result = indexing(target);
    break;
  case Family::MasksAndSegments:
    result = masksAndSegments(target);
    break;
  case Family::SortAndScan:
    result = sortAndScan(target);
    break;
  case Family::SpecialFunctions:
    result = specialFunction(target);
    break;
  case Family::PoolingAndProducts:
    result = poolingAndProducts(target);
    break;
  case Family::Linalg:
    result = linalg(target);
    break;
  case Family::ComplexAndFFT:
    // Decomposed above when its operands are complex.
    break;
  }
  if (!result)
    return fail(Twine("no decomposition into prim ops (the table gives it "
                      "to ") +
                getFamilyName(entry->family) + ".cpp, which has none)");
  return *result;
}

namespace {

struct ConvertFXToPrimPass
    : public tc::impl::ConvertFXToPrimPassBase<ConvertFXToPrimPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<fx::GraphOp> graphs(module.getOps<fx::GraphOp>());
    for (fx::GraphOp graph : graphs)
      if (failed(convertGraph(graph)))
        return signalPassFailure();
  }

  LogicalResult convertGraph(fx::GraphOp graph) {
    OpBuilder b(graph);
    // Complex values become real pairs (`loweredType`).
    FunctionType graphType = graph.getFunctionType();
    SmallVector<Type> inputs, outputs;
    for (Type t : graphType.getInputs())
      inputs.push_back(loweredType(t));
    for (Type t : graphType.getResults())
      outputs.push_back(loweredType(t));
    auto func = func::FuncOp::create(b, graph.getLoc(), graph.getSymName(),
                                     b.getFunctionType(inputs, outputs));
    if (ArrayAttr argAttrs = graph.getArgAttrsAttr())
      func.setArgAttrsAttr(argAttrs);
    Block *entry = func.addEntryBlock();
    IRMapping mapping;
    for (auto [from, to] :
         llvm::zip(graph.getBody().getArguments(), entry->getArguments())) {
      mapping.map(from, to);
      to.setLoc(from.getLoc());
    }

    Decomposer::RandomState random;
    for (BlockArgument arg : entry->getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kRngSeedAttrName)) {
        if (arg.getType() != RankedTensorType::get({}, b.getI64Type())) {
          // The argument dies with the function: word the error first.
          unsigned number = arg.getArgNumber();
          func.erase();
          return graph.emitOpError()
                 << "argument #" << number << " marked " << kRngSeedAttrName
                 << " must be a 'tensor<i64>'";
        }
        random.seed = arg;
      }

    b.setInsertionPointToStart(entry);
    for (Operation &op : graph.getBody().front()) {
      if (auto output = dyn_cast<fx::OutputOp>(op)) {
        SmallVector<Value> results;
        for (Value v : output.getOperands())
          results.push_back(mapping.lookup(v));
        func::ReturnOp::create(b, output.getLoc(), results);
        continue;
      }
      auto call = dyn_cast<fx::CallFunctionOp>(op);
      if (!call) {
        func.erase();
        return op.emitOpError()
               << "cannot be decomposed: tc compiles call_function nodes; "
                  "parameters and constants are passed as graph inputs";
      }
      if (!crashForTesting.empty() && call.getTarget() == crashForTesting)
        llvm::report_fatal_error("tc-decompose: crash-for-testing met " +
                                 llvm::Twine(crashForTesting));
      SmallVector<Value> operands;
      for (Value v : call.getTensors())
        operands.push_back(mapping.lookup(v));
      Decomposer decomposer(b, call, operands, random);
      FailureOr<SmallVector<Value>> results = decomposer.run();
      if (failed(results)) {
        func.erase();
        return failure();
      }
      for (auto [from, to] : llvm::zip(call.getResults(), *results)) {
        if (Type produced = to.getType();
            loweredType(from.getType()) != produced) {
          func.erase(); // `to` with it: its type is kept above
          return call.emitOpError()
                 << "decomposition produced " << produced
                 << " where PyTorch computes " << from.getType();
        }
        if (!miscompileForTesting.empty() &&
            call.getTarget() == miscompileForTesting)
          to = plantWrongResult(b, call.getLoc(), to);
        mapping.map(from, to);
      }
    }
    graph.erase();
    widenBoolReductions(func);
    return success();
  }

  /// `value + 1` for a float tensor (the miscompile-for-testing option's
  /// wrong result), `value` otherwise.
  static Value plantWrongResult(OpBuilder &b, Location loc, Value value) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !isa<FloatType>(type.getElementType()))
      return value;
    Value one = prim::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            type, Attribute(b.getFloatAttr(type.getElementType(), 1.0))));
    return prim::AddOp::create(b, loc, value, one);
  }

  /// Reductions of bools reduce their values as i32 and convert back
  /// (nonzero is true): a sum or max is `any`, a product or min `all`.
  /// Kernels reduce numbers, and decompositions need not care.
  static void widenBoolReductions(func::FuncOp func) {
    SmallVector<prim::ReduceOp> reductions;
    func.walk([&](prim::ReduceOp op) {
      if (cast<RankedTensorType>(op.getType()).getElementType().isInteger(1))
        reductions.push_back(op);
    });
    for (prim::ReduceOp op : reductions) {
      OpBuilder b(op);
      Type i32 = b.getI32Type();
      Value wide = prim::ConvertOp::create(b, op.getLoc(), op.getOperand(),
                                           TypeAttr::get(i32));
      Value reduced = prim::ReduceOp::create(b, op.getLoc(), op.getKind(),
                                             wide, op.getDims());
      Value back = prim::ConvertOp::create(b, op.getLoc(), reduced,
                                           TypeAttr::get(b.getI1Type()));
      op.getResult().replaceAllUsesWith(back);
      op.erase();
    }
  }
};

} // namespace
