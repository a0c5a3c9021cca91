//===- NVVMDivFull.cpp - f32 division as PTX div.full.f32 -----------------===//
//
// The tc-nvvm-div-full pass: see its description in
// tc/Conversion/Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tc/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::tc {
#define GEN_PASS_DEF_NVVMDIVFULLPASS
#include "tc/Conversion/Passes.h.inc"
} // namespace mlir::tc

using namespace mlir;

namespace {
struct NVVMDivFullPass
    : public tc::impl::NVVMDivFullPassBase<NVVMDivFullPass> {
  void runOnOperation() override {
    getOperation().walk([](LLVM::FDivOp div) {
      if (!div.getType().isF32())
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
