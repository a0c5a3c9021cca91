//===- FunctionLike.h - tc's function-like ops' syntax ----------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The custom assembly format of tc's function-like ops (fx.graph,
// kernel.kernel, kernel.schedule): func.func's, without variadic
// arguments. Header-only, so that each dialect uses it without linking
// another.
//
//===----------------------------------------------------------------------===//

#ifndef TC_DIALECT_UTILS_FUNCTIONLIKE_H
#define TC_DIALECT_UTILS_FUNCTIONLIKE_H

#include "mlir/Interfaces/FunctionImplementation.h"

namespace mlir::tc {

/// Parses `OpTy` as func.func is written.
template <typename OpTy>
ParseResult parseFunctionLike(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType = [](Builder &builder, ArrayRef<Type> argTypes,
                          ArrayRef<Type> results,
                          function_interface_impl::VariadicFlag,
                          std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      OpTy::getFunctionTypeAttrName(result.name), buildFuncType,
      OpTy::getArgAttrsAttrName(result.name),
      OpTy::getResAttrsAttrName(result.name));
}

/// Prints `op` as func.func is written.
template <typename OpTy>
void printFunctionLike(OpAsmPrinter &p, OpTy op) {
  function_interface_impl::printFunctionOp(
      p, op, /*isVariadic=*/false, op.getFunctionTypeAttrName(),
      op.getArgAttrsAttrName(), op.getResAttrsAttrName());
}

} // namespace mlir::tc

#endif // TC_DIALECT_UTILS_FUNCTIONLIKE_H
