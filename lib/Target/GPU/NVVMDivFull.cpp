//===- NVVMDivFull.cpp - f32 division as PTX div.full.f32 -----------------===//
//
// The tc-nvvm-div-full pass: see its description in
// tc/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Target/GPU/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::tc {
#define GEN_PASS_DEF_NVVMDIVFULLPASS
#include "tc/Target/GPU/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;

namespace {
/// Whether `div`'s quotient, through the arithmetic after it, decides a
/// discrete value: a rounding to an integral value, a conversion to an
/// integer or a comparison. An ulp there moves a value into another bin
/// (histc), index (nearest upsampling) or branch; eager's IEEE division
/// does not, so neither may tc's.
static bool decidesDiscreteValue(LLVM::FDivOp div) {
  SmallVector<std::pair<Operation *, int>> work;
  llvm::SmallPtrSet<Operation *, 16> seen;
  for (Operation *user : div->getUsers())
    work.push_back({user, 0});
  while (!work.empty()) {
    auto [op, depth] = work.pop_back_val();
    if (!seen.insert(op).second)
      continue;
    if (isa<LLVM::FFloorOp, LLVM::FCeilOp, LLVM::FTruncOp, LLVM::RoundOp,
            LLVM::RoundEvenOp, LLVM::RintOp, LLVM::NearbyintOp,
            LLVM::FPToSIOp, LLVM::FPToUIOp, LLVM::FCmpOp>(op))
      return true;
    // The same roundings as libdevice calls.
    if (auto call = dyn_cast<LLVM::CallOp>(op)) {
      StringRef callee = call.getCallee().value_or("");
      if (llvm::any_of(ArrayRef<StringRef>{"__nv_floor", "__nv_ceil",
                                           "__nv_trunc", "__nv_round",
                                           "__nv_rint", "__nv_nearbyint"},
                       [&](StringRef name) {
                         return callee.starts_with(name);
                       }))
        return true;
    }
    // Through the arithmetic that carries the value on (not into memory or
    // a call), a few steps deep.
    if (depth >= 8 || op->getNumResults() != 1 ||
        isa<LLVM::StoreOp, LLVM::CallOp, LLVM::InlineAsmOp>(op))
      continue;
    for (Operation *user : op->getResult(0).getUsers())
      work.push_back({user, depth + 1});
  }
  return false;
}

struct NVVMDivFullPass
    : public tc::impl::NVVMDivFullPassBase<NVVMDivFullPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::FDivOp div) {
      if (!div.getType().isF32() || decidesDiscreteValue(div))
        return;
      OpBuilder builder(div);
      // No side effects: LLVM may still hoist, sink and CSE the division.
      auto full = LLVM::InlineAsmOp::create(
          builder, div.getLoc(), div.getType(),
          ValueRange{div.getLhs(), div.getRhs()}, "div.full.f32 $0, $1, $2;",
          "=f,f,f", /*has_side_effects=*/false, /*is_align_stack=*/false,
          LLVM::tailcallkind::TailCallKind::None,
          /*asm_dialect=*/LLVM::AsmDialectAttr(),
          /*operand_attrs=*/ArrayAttr());
      div.replaceAllUsesWith(full.getRes());
      div.erase();
    });
  }
};
} // namespace
