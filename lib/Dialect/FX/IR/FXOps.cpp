//===- FXOps.cpp - fx dialect operations ------------------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "tc/Dialect/FX/IR/FXOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "tc/Dialect/Utils/FunctionLike.h"
#include "tc/Dialect/FX/IR/ATenSchemas.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tc::fx;

#include "tc/Dialect/FX/IR/FXEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// GraphOp
//===----------------------------------------------------------------------===//

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  return parseFunctionLike<GraphOp>(parser, result);
}

void GraphOp::print(OpAsmPrinter &p) { printFunctionLike(p, *this); }

void GraphOp::getAsmBlockArgumentNames(Region &region,
                                       OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  for (BlockArgument arg : region.front().getArguments()) {
    if (arg.getArgNumber() >= getNumArguments())
      continue;
    if (auto name =
            getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttrName))
      setNameFn(arg, name.getValue());
  }
}

LogicalResult GraphOp::verify() {
  llvm::StringSet<> names;
  for (unsigned i = 0, e = getNumArguments(); i < e; ++i) {
    Attribute name = getArgAttr(i, kNameAttrName);
    if (!name)
      continue;
    auto str = dyn_cast<StringAttr>(name);
    if (!str || str.getValue().empty())
      return emitOpError() << "placeholder #" << i
                           << " has an '" << kNameAttrName
                           << "' that is not a non-empty string";
    if (!names.insert(str.getValue()).second)
      return emitOpError() << "placeholder name '" << str.getValue()
                           << "' is used twice";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CallFunctionOp
//===----------------------------------------------------------------------===//

void CallFunctionOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (std::optional<StringRef> name = getName())
    for (Value result : getResults())
      setNameFn(result, *name);
}

static bool isIntAttr(Attribute attr) {
  auto intAttr = dyn_cast<IntegerAttr>(attr);
  return intAttr && !intAttr.getType().isInteger(1);
}

static bool isListOf(Attribute attr, function_ref<bool(Attribute)> isElement) {
  if (isa<DenseI64ArrayAttr>(attr))
    return isElement(IntegerAttr::get(
        IntegerType::get(attr.getContext(), 64), 0));
  if (auto array = dyn_cast<ArrayAttr>(attr))
    return llvm::all_of(array, isElement);
  return false;
}

/// Returns true if `attr` can stand for a value of schema kind `kind`.
static bool attrMatchesKind(Attribute attr, ATenArgKind kind) {
  auto isFloat = [](Attribute a) {
    return isa<FloatAttr>(a) || isIntAttr(a);
  };
  auto isBool = [](Attribute a) { return isa<BoolAttr>(a); };
  auto isScalar = [](Attribute a) {
    return isa<FloatAttr, BoolAttr>(a) || isIntAttr(a);
  };
  switch (kind) {
  case ATenArgKind::Int:
    return isIntAttr(attr);
  case ATenArgKind::IntList:
    return isListOf(attr, isIntAttr);
  case ATenArgKind::Float:
    return isFloat(attr);
  case ATenArgKind::FloatList:
    return isa<DenseF64ArrayAttr>(attr) || isListOf(attr, isFloat);
  case ATenArgKind::Bool:
    return isBool(attr);
  case ATenArgKind::BoolList:
    return isa<DenseBoolArrayAttr>(attr) || isListOf(attr, isBool);
  case ATenArgKind::Scalar:
    return isScalar(attr);
  case ATenArgKind::ScalarList:
    return isListOf(attr, isScalar);
  case ATenArgKind::String:
    return isa<StringAttr>(attr);
  case ATenArgKind::ScalarType:
    // A dtype is written as its element type (`f32`); the integer code of
    // torch's ScalarType enum is accepted too.
    return isa<TypeAttr>(attr) || isIntAttr(attr);
  case ATenArgKind::Other:
    return true;
  case ATenArgKind::Tensor:
  case ATenArgKind::OptionalTensor:
  case ATenArgKind::TensorList:
  case ATenArgKind::OptionalTensorList:
    return false;
  }
  return false;
}

LogicalResult CallFunctionOp::verify() {
  StringRef target = getTarget();
  const ATenSchema *schema = lookupATenSchema(target);
  if (!schema)
    return emitOpError() << "unknown ATen operator '" << target
                         << "' (not in PyTorch "
                         << getATenSchemaTorchVersion()
                         << "'s schema registry)";

  // Tensor arguments bind to operands, in schema order.
  SmallVector<const ATenArg *> tensorArgs;
  for (const ATenArg &arg : schema->arguments)
    if (isTensorKind(arg.kind))
      tensorArgs.push_back(&arg);

  unsigned numOperands = getTensors().size();
  if (std::optional<ArrayRef<int32_t>> sizes = getTensorArgSizes()) {
    if (sizes->size() != tensorArgs.size())
      return emitOpError() << "'tensor_arg_sizes' has " << sizes->size()
                           << " entries but '" << target << "' has "
                           << tensorArgs.size() << " tensor arguments";
    int64_t total = 0;
    for (auto [size, arg] : llvm::zip(*sizes, tensorArgs)) {
      bool ok = size >= 0;
      if (arg->kind == ATenArgKind::Tensor)
        ok = size == 1;
      else if (arg->kind == ATenArgKind::OptionalTensor)
        ok = size == 0 || size == 1;
      if (!ok)
        return emitOpError() << "binds " << size << " operands to argument '"
                             << arg->name << "' of type "
                             << stringifyATenArgKind(arg->kind);
      total += size;
    }
    if (total != numOperands)
      return emitOpError() << "'tensor_arg_sizes' adds up to " << total
                           << " operands, but the op has " << numOperands;
  } else {
    if (numOperands > tensorArgs.size())
      return emitOpError() << "'" << target << "' takes at most "
                           << tensorArgs.size()
                           << " tensor operands, but the op has "
                           << numOperands;
    for (auto [idx, arg] : llvm::enumerate(tensorArgs)) {
      bool bound = idx < numOperands;
      bool isList = arg->kind == ATenArgKind::TensorList ||
                    arg->kind == ATenArgKind::OptionalTensorList;
      if (bound && isList)
        return emitOpError() << "binds list argument '" << arg->name
                             << "' and needs 'tensor_arg_sizes'";
      if (!bound && !arg->optional && !arg->hasDefault)
        return emitOpError() << "is missing tensor argument '" << arg->name
                             << "' of '" << target << "'";
    }
  }

  // Every other argument is an entry of `args`.
  DictionaryAttr args = getArgsAttr();
  if (args) {
    for (NamedAttribute entry : args) {
      const ATenArg *arg = llvm::find_if(schema->arguments, [&](auto &a) {
        return a.name == entry.getName().getValue();
      });
      if (arg == schema->arguments.end())
        return emitOpError() << "'" << target << "' has no argument named '"
                             << entry.getName().getValue() << "'";
      if (arg->kind == ATenArgKind::OptionalTensorList) {
        // Which entries of a `Tensor?[]` are present (None entries bind no
        // operand).
        auto mask = dyn_cast<DenseBoolArrayAttr>(entry.getValue());
        if (!mask)
          return emitOpError() << "argument '" << arg->name
                               << "' may only mark its present entries "
                                  "(array<i1: ...>), got "
                               << entry.getValue();
        int64_t present = llvm::count(mask.asArrayRef(), true);
        unsigned index = llvm::find(tensorArgs, arg) - tensorArgs.begin();
        std::optional<ArrayRef<int32_t>> sizes = getTensorArgSizes();
        if (!sizes || (*sizes)[index] != present)
          return emitOpError() << "argument '" << arg->name << "' marks "
                               << present << " entries present but binds "
                               << (sizes ? (*sizes)[index] : 0)
                               << " operands";
        continue;
      }
      if (isTensorKind(arg->kind))
        return emitOpError() << "tensor argument '" << arg->name
                             << "' must be an operand, not an attribute";
      if (isa<UnitAttr>(entry.getValue())) {
        if (!arg->optional)
          return emitOpError() << "argument '" << arg->name
                               << "' is not optional and cannot be None";
        continue;
      }
      if (!attrMatchesKind(entry.getValue(), arg->kind))
        return emitOpError() << "argument '" << arg->name << "' expects "
                             << stringifyATenArgKind(arg->kind) << ", got "
                             << entry.getValue();
    }
  }
  for (const ATenArg &arg : schema->arguments) {
    if (isTensorKind(arg.kind) || arg.hasDefault || arg.optional)
      continue;
    if (!args || !args.get(arg.name))
      return emitOpError() << "is missing required argument '" << arg.name
                           << "' of '" << target << "'";
  }

  // Results: one per tensor return, or any number for a single Tensor[].
  ArrayRef<ATenArgKind> returns = schema->returns;
  if (returns.size() == 1 && returns[0] == ATenArgKind::TensorList)
    return success();
  for (ATenArgKind kind : returns)
    if (kind != ATenArgKind::Tensor && kind != ATenArgKind::OptionalTensor)
      return emitOpError() << "'" << target << "' returns a "
                           << stringifyATenArgKind(kind)
                           << ", which is not a tensor";
  if (getNumResults() != returns.size())
    return emitOpError() << "'" << target << "' returns " << returns.size()
                         << " tensors, but the op has " << getNumResults()
                         << " results";
  return success();
}

//===----------------------------------------------------------------------===//
// GetAttrOp
//===----------------------------------------------------------------------===//

void GetAttrOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  std::string name = getTarget().str();
  std::replace(name.begin(), name.end(), '.', '_');
  setNameFn(getResult(), name);
}

LogicalResult GetAttrOp::verify() {
  SmallVector<StringRef> parts;
  getTarget().split(parts, '.');
  for (StringRef part : parts)
    if (part.empty() || !llvm::all_of(part, [](char c) {
          return llvm::isAlnum(c) || c == '_';
        }))
      return emitOpError() << "target '" << getTarget()
                           << "' is not a dotted attribute path";
  return success();
}

//===----------------------------------------------------------------------===//
// OutputOp
//===----------------------------------------------------------------------===//

LogicalResult OutputOp::verify() {
  auto graph = cast<GraphOp>((*this)->getParentOp());
  ArrayRef<Type> results = graph.getResultTypes();
  if (getNumOperands() != results.size())
    return emitOpError() << "has " << getNumOperands()
                         << " operands, but the enclosing graph returns "
                         << results.size();
  for (auto [idx, types] :
       llvm::enumerate(llvm::zip(getOperandTypes(), results))) {
    auto [actual, expected] = types;
    if (actual != expected)
      return emitOpError() << "operand #" << idx << " has type " << actual
                           << ", but the enclosing graph returns " << expected;
  }
  return success();
}

#define GET_OP_CLASSES
#include "tc/Dialect/FX/IR/FXOps.cpp.inc"
