//===- Networks.cpp - network layers and random ops -------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// tc-decompose for the layers with their own decompositions: convolution
// (a library call, or windows times the weights), batch norm in training
// and evaluation, max pooling with indices, dropout, the random ops
// (Philox counters from the graph's seed) and embedding.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace mlir::tc;
using namespace mlir::tc::decompose;

std::optional<Decomposer::Result> Decomposer::networks(StringRef target) {
  auto one = [](FailureOr<Value> v) -> Result {
    if (failed(v))
      return failure();
    return SmallVector<Value>{*v};
  };

  if (target == "aten::convolution")
    return convolution();
  if (target == "aten::native_batch_norm" ||
      target == "aten::_native_batch_norm_legit_functional" ||
      target == "aten::_native_batch_norm_legit_no_training")
    return batchNorm(target != "aten::_native_batch_norm_legit_no_training" &&
                     boolArg("training", false));
  if (target == "aten::_batch_norm_with_update_functional")
    return batchNorm(/*training=*/true);
  if (target == "aten::max_pool2d_with_indices")
    return maxPool(2);
  if (target == "aten::max_pool3d_with_indices")
    return maxPool(3);
  if (target == "aten::native_dropout")
    return dropout();
  if (target == "aten::rand" || target == "aten::rand_like") {
    RankedTensorType type = resultType();
    if (!isa<FloatType>(type.getElementType()))
      return fail("random numbers of " + quoted(type) + " are not floats");
    return one(uniform(type));
  }
  if (target == "aten::randn" || target == "aten::randn_like" ||
      target == "aten::uniform" || target == "aten::normal_functional" ||
      target == "aten::exponential" || target == "aten::log_normal" ||
      target == "aten::cauchy" || target == "aten::geometric" ||
      target == "aten::bernoulli.p" || target.starts_with("aten::normal.") ||
      target.starts_with("aten::randint") ||
      target == "aten::rrelu_with_noise_functional")
    return randomOf(target);
  if (target == "aten::embedding")
    return embedding();
  if (target == "tc::attention")
    return attention();
  return std::nullopt;
}

/// Batch norm over every dimension but the channels (dim 1). Training
/// normalizes with the batch's statistics and (the functional form) returns
/// the updated running statistics, `(1 - momentum) * running + momentum *
/// batch` with the unbiased variance, as eager does in place; evaluation
/// normalizes with the running statistics. Results: output, the mean and
/// inverse deviation used (empty in evaluation), and for
/// `_native_batch_norm_legit_functional` the new running mean and variance.
FailureOr<SmallVector<Value>> Decomposer::batchNorm(bool training) {
  RankedTensorType type = resultType();
  Type elt = opmathType(type.getElementType());
  ArrayRef<int32_t> sizes;
  if (auto attr = op.getTensorArgSizes())
    sizes = *attr;
  // Operands: input, then weight, bias, running mean, running var when
  // present.
  SmallVector<Value> present(5);
  unsigned next = 0;
  for (unsigned i = 0; i < 5; ++i)
    if (sizes.empty() ? i < operands.size() : sizes[i] == 1)
      present[i] = operands[next++];
  Value x = convert(present[0], elt);
  RankedTensorType xType = typeOf(x);
  int64_t rank = xType.getRank();
  if (rank < 2)
    return fail("input " + quoted(xType) + " has no channel dimension");
  int64_t channels = xType.getDimSize(1), count = 1;
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != 1) {
      dims.push_back(d);
      count *= xType.getDimSize(d);
    }
  auto statType = RankedTensorType::get({channels}, elt);
  auto toInput = [&](Value v) {
    return prim::BroadcastInDimOp::create(b, loc, convert(v, elt),
                                          xType.getShape(),
                                          ArrayRef<int64_t>{1})
        .getResult();
  };
  double eps = floatArg("eps", 1e-5), momentum = floatArg("momentum", 0.1);
  Value mean, var;
  if (training) {
    mean = prim::DivOp::create(
        b, loc, prim::ReduceOp::create(b, loc, prim::ReductionKind::Sum, x, dims),
        splat(statType, count));
    Value centered = prim::SubOp::create(b, loc, x, toInput(mean));
    var = prim::DivOp::create(
        b, loc,
        prim::ReduceOp::create(
            b, loc, prim::ReductionKind::Sum,
            prim::MulOp::create(b, loc, centered, centered), dims),
        splat(statType, count));
  } else {
    if (!present[3] || !present[4])
      return fail("evaluation needs the running statistics");
    mean = convert(present[3], elt);
    var = convert(present[4], elt);
  }
  Value rstd = prim::RsqrtOp::create(
      b, loc, prim::AddOp::create(b, loc, var, splat(statType, eps)));
  Value y;
  if (training) {
    y = prim::MulOp::create(
        b, loc, prim::SubOp::create(b, loc, x, toInput(mean)), toInput(rstd));
    if (present[1])
      y = prim::MulOp::create(b, loc, y, toInput(present[1]));
    if (present[2])
      y = prim::AddOp::create(b, loc, y, toInput(present[2]));
  } else {
    // Evaluation as eager's CPU kernel computes it: per channel
    // alpha = rstd * weight and beta = bias - mean * alpha, then
    // x * alpha + beta, one multiply and one add a point (with four
    // per-channel operands, each converted from bf16 at every point,
    // ResNet-50's bf16 batch norms ran at a third of the memory's speed).
    Value alpha = present[1] ? prim::MulOp::create(b, loc, rstd,
                                                   convert(present[1], elt))
                                   .getResult()
                             : rstd;
    Value shift = prim::MulOp::create(b, loc, mean, alpha);
    Value beta = present[2] ? prim::SubOp::create(
                                  b, loc, convert(present[2], elt), shift)
                                  .getResult()
                            : prim::NegOp::create(b, loc, shift).getResult();
    y = prim::AddOp::create(
        b, loc, prim::MulOp::create(b, loc, x, toInput(alpha)),
        toInput(beta));
  }
  SmallVector<Value> results = {coerce(y, type)};
  for (unsigned i : {1u, 2u}) {
    RankedTensorType t = resultType(i);
    if (t.getNumElements() == 0)
      results.push_back(splat(t, 0));
    else
      results.push_back(coerce(i == 1 ? mean : rstd, t));
  }
  if (op.getNumResults() == 6) {
    // _batch_norm_with_update_functional: an empty "reserve" (for cuDNN)
    // comes before the running statistics.
    if (resultType(3).getNumElements() != 0)
      return fail("expected an empty reserve result");
    results.push_back(splat(resultType(3), 0));
  }
  if (op.getNumResults() >= 5) {
    unsigned next = results.size();
    if (!present[3] || !present[4])
      return fail("the functional form needs running statistics");
    // Evaluation leaves the running statistics as they are.
    if (!training) {
      results.push_back(coerce(present[3], resultType(next)));
      results.push_back(coerce(present[4], resultType(next + 1)));
      return results;
    }
    auto update = [&](Value running, Value batch, double scale) {
      Value kept = prim::MulOp::create(b, loc, convert(running, elt),
                                       splat(statType, 1 - momentum));
      Value added = prim::MulOp::create(b, loc, batch,
                                        splat(statType, momentum * scale));
      return prim::AddOp::create(b, loc, kept, added).getResult();
    };
    results.push_back(coerce(update(present[3], mean, 1), resultType(next)));
    results.push_back(coerce(
        update(present[4], var, count > 1 ? double(count) / (count - 1) : 1),
        resultType(next + 1)));
  }
  return results;
}

/// 2-d and 3-d max pooling: the position of each window's maximum
/// (`prim.window_argmax`, PyTorch's tie rule), then the value there. The
/// positions are what the backward keeps (i8 for windows of up to 128
/// points), and the indices result, when used, is computed from them as
/// eager's: the flat index of the maximum in its input plane (or volume).
FailureOr<SmallVector<Value>> Decomposer::maxPool(int64_t spatial) {
  RankedTensorType type = resultType(), indexType = resultType(1);
  Value x = operands[0];
  RankedTensorType xType = typeOf(x);
  int64_t rank = xType.getRank(), lead = rank - spatial;
  if (rank != spatial + 1 && rank != spatial + 2)
    return fail("input " + quoted(xType) + " is not (N,) C, and " +
                Twine(spatial) + " spatial dimensions");
  if (xType.getElementType() != type.getElementType())
    return fail("result " + quoted(type) + " does not have the element type "
                "of the input " + quoted(xType));
  SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
  SmallVector<int64_t> kernel = spatialListArg("kernel_size", spatial, ones);
  SmallVector<int64_t> stride = spatialListArg("stride", spatial, kernel);
  SmallVector<int64_t> padding = spatialListArg("padding", spatial, zeros);
  SmallVector<int64_t> dilation = spatialListArg("dilation", spatial, ones);
  for (ArrayRef<int64_t> list : {kernel, stride, padding, dilation})
    if (static_cast<int64_t>(list.size()) != spatial)
      return fail("kernel_size, stride, padding and dilation need " +
                  Twine(spatial) + " entries");
  int64_t positions = 1;
  for (int64_t size : kernel)
    positions *= size;
  if (positions < 1 || positions > kMaxPoolPositions)
    return fail("windows of " + Twine(positions) + " points are not "
                "supported (at most " + Twine(kMaxPoolPositions) + ")");
  Type positionElt = positions <= 128 ? b.getI8Type() : b.getI16Type();
  auto positionType = type.clone(positionElt);
  // Diagnose a result that is not the pooling's shape here, with the op's
  // words, rather than in the window ops' verifiers.
  if (type.getRank() != rank ||
      xType.getShape().take_front(lead) != type.getShape().take_front(lead))
    return fail("result " + quoted(type) + " does not match the input " +
                quoted(xType));
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = xType.getDimSize(lead + i), out = type.getDimSize(lead + i);
    int64_t span = in + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1;
    int64_t floor = span < 0 ? -1 : span / stride[i] + 1;
    bool ceil = out == floor + 1 && (out - 1) * stride[i] < in + padding[i];
    if (out != floor && !ceil)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + " and window");
  }
  Value argmax = prim::WindowArgmaxOp::create(
      b, loc, positionType, x, kernel, stride, padding, dilation);
  Value values = prim::WindowGatherOp::create(
      b, loc, type, x, argmax, kernel, stride, padding, dilation);
  if (op.getResult(1).use_empty())
    return SmallVector<Value>{values, splat(indexType, 0)};

  // indices = sum over spatial d of i_d * (the input's size after d), with
  // i_d = o_d * stride - padding + (the position's offset along d) *
  // dilation; offsets are the row-major digits of the position.
  Value k = convert(argmax, indexType.getElementType());
  Value indices;
  int64_t scale = 1;
  for (int64_t i = spatial - 1; i >= 0; --i) {
    Value offset = k;
    if (i > 0) {
      offset = prim::RemOp::create(b, loc, k, splat(indexType, kernel[i]));
      k = prim::DivOp::create(b, loc, k, splat(indexType, kernel[i]));
    }
    Value o = prim::IotaOp::create(b, loc, indexType.getShape(), lead + i,
                                   indexType.getElementType());
    Value coordinate = prim::AddOp::create(
        b, loc,
        prim::SubOp::create(
            b, loc, prim::MulOp::create(b, loc, o, splat(indexType, stride[i])),
            splat(indexType, padding[i])),
        prim::MulOp::create(b, loc, offset, splat(indexType, dilation[i])));
    Value term = prim::MulOp::create(b, loc, coordinate,
                                     splat(indexType, scale));
    indices = indices ? prim::AddOp::create(b, loc, indices, term).getResult()
                      : term;
    scale *= xType.getDimSize(lead + i);
  }
  return SmallVector<Value>{values, indices};
}

/// Dropout: an element is kept with probability 1 - p (a uniform number
/// below 1 - p) and scaled by 1 / (1 - p), as `mask * x * scale`, eager's
/// formula (a NaN dropped stays NaN). Results: the output and the bool keep
/// mask. The mask is a function of the graph's seed and the element's
/// counter, so a backward that recomputes it gets the same one.
FailureOr<SmallVector<Value>> Decomposer::dropout() {
  RankedTensorType type = resultType(0), maskType = resultType(1);
  Value x = coerce(operands[0], type);
  double p = floatArg("p", 0.5);
  bool train = boolArg("train", true);
  if (!isa<FloatType>(type.getElementType()))
    return fail("dropout of " + quoted(type) + " needs floats");
  if (p < 0 || p > 1)
    return fail("the dropout probability is not in [0, 1]");
  if (!train || p == 0)
    return SmallVector<Value>{x, splat(maskType, 1)};
  if (p == 1)
    return SmallVector<Value>{prim::MulOp::create(b, loc, x, splat(type, 0)),
                              splat(maskType, 0)};
  // Draw in f32 at least: f16's 11 bits would quantize 1 - p coarsely.
  Type drawn = type.getElementType().getIntOrFloatBitWidth() < 32
                   ? Type(b.getF32Type())
                   : type.getElementType();
  auto drawnType = type.clone(drawn);
  FailureOr<Value> u = uniform(drawnType);
  if (failed(u))
    return failure();
  Value keep = prim::CompareOp::create(b, loc, prim::ComparisonPredicate::LT,
                                       *u, splat(drawnType, 1 - p));
  Value scaled = prim::MulOp::create(
      b, loc, prim::MulOp::create(b, loc, convert(keep, type.getElementType()), x),
      splat(type, 1 / (1 - p)));
  return SmallVector<Value>{scaled, keep};
}

/// The random ops of one distribution: numbers drawn in f32 at least (f16
/// would quantize them coarsely) from uniform ones on [0, 1), by PyTorch's
/// formulas, rounded once to the result type. Normal numbers by Box-Muller
/// (two uniform draws per number).
FailureOr<SmallVector<Value>> Decomposer::randomOf(StringRef target) {
  RankedTensorType type = resultType();
  if (target.starts_with("aten::randint")) {
    // Integers in [low, high): floor(low + u (high - low)), drawn in f64 so
    // that every integer of a range up to 2^53 can come up. The result
    // type may be a float type (randint(..., dtype=torch.float32)).
    int64_t low = intArg("low", 0), high = intArg("high", 0);
    if (high <= low)
      return fail("randint's range [" + Twine(low) + ", " + Twine(high) +
                  ") is empty");
    RankedTensorType wide = type.clone(b.getF64Type());
    FailureOr<Value> u = uniform(wide);
    if (failed(u))
      return failure();
    Value drawnInt = prim::FloorOp::create(
        b, loc,
        add(splat(wide, double(low)),
            mul(splat(wide, double(high - low)), *u)));
    drawnInt = prim::MinimumOp::create(b, loc, drawnInt,
                                       splat(wide, double(high - 1)));
    // Integers below 2^24 are exact in f32; the CPU has no direct f64 to
    // half conversion.
    if (isa<FloatType>(type.getElementType()) &&
        type.getElementType().getIntOrFloatBitWidth() < 32)
      drawnInt = convert(drawnInt, b.getF32Type());
    return SmallVector<Value>{convert(drawnInt, type.getElementType())};
  }
  if (target == "aten::bernoulli.p") {
    // 1 with probability p: a uniform number below p (f64 draws for f64).
    double p = floatArg("p", 0.5);
    RankedTensorType drawnType = type.clone(
        type.getElementType().isF64() ? Type(b.getF64Type())
                                      : Type(b.getF32Type()));
    FailureOr<Value> u = uniform(drawnType);
    if (failed(u))
      return failure();
    Value hit = cmp(P::LT, *u, splat(drawnType, p));
    return SmallVector<Value>{convert(hit, type.getElementType())};
  }
  if (!isa<FloatType>(type.getElementType()))
    return fail("random numbers of " + quoted(type) + " are not floats");
  RankedTensorType drawn =
      type.getElementType().getIntOrFloatBitWidth() < 32
          ? type.clone(b.getF32Type())
          : type;
  auto draw = [&]() -> FailureOr<Value> { return uniform(drawn); };
  auto c = [&](double v) { return splat(drawn, v); };
  auto add = [&](Value x, Value y) -> Value {
    return prim::AddOp::create(b, loc, x, y);
  };
  auto mul = [&](Value x, Value y) -> Value {
    return prim::MulOp::create(b, loc, x, y);
  };
  auto done = [&](Value v) -> FailureOr<SmallVector<Value>> {
    return SmallVector<Value>{convert(v, type.getElementType())};
  };
  // -log(1 - u) > 0: an exponential number of rate 1.
  auto exponentialOf = [&](Value u) -> Value {
    return prim::NegOp::create(
        b, loc, prim::Log1pOp::create(b, loc, prim::NegOp::create(b, loc, u)));
  };
  FailureOr<Value> u = draw();
  if (failed(u))
    return failure();
  if (target == "aten::rrelu_with_noise_functional") {
    // Training: a negative x times a slope drawn uniformly from
    // [lower, upper], which the noise result records (1 where x >= 0).
    // Otherwise the mean slope, and the noise passes through.
    double lower = floatArg("lower", 1.0 / 8), upper = floatArg("upper", 1.0 / 3);
    Value x = operands[0];
    Value negative = cmp(P::LT, x, splat(typeOf(x), 0));
    if (!boolArg("training", false)) {
      Value slope = splat(type, (lower + upper) / 2);
      return SmallVector<Value>{sel(negative, mul(x, slope), x),
                                operands[1]};
    }
    Value slope = convert(add(c(lower), mul(c(upper - lower), *u)),
                          type.getElementType());
    Value noise = sel(negative, slope, splat(type, 1));
    return SmallVector<Value>{mul(x, noise),
                              convert(noise, resultType(1).getElementType())};
  }
  bool normal = target == "aten::randn" || target == "aten::randn_like" ||
                target == "aten::normal_functional" ||
                target == "aten::log_normal" ||
                target.starts_with("aten::normal.");
  if (normal) {
    FailureOr<Value> v = draw();
    if (failed(v))
      return failure();
    Value radius = prim::SqrtOp::create(b, loc, mul(c(2), exponentialOf(*u)));
    Value z = mul(radius, prim::CosOp::create(b, loc, mul(c(2 * M_PI), *v)));
    if (target == "aten::randn" || target == "aten::randn_like")
      return done(z);
    double mean = floatArg("mean", target == "aten::log_normal" ? 1 : 0);
    double std = floatArg("std", target == "aten::log_normal" ? 2 : 1);
    // normal.Tensor_Tensor, .Tensor_float and .float_Tensor take the mean
    // and/or the standard deviation as tensors (in that order), broadcast
    // to the result.
    auto tensorOr = [&](bool isTensor, unsigned index, double value) {
      return isTensor ? broadcast(convert(operands[index], drawn.getElementType()),
                                  drawn.getShape())
                      : c(value);
    };
    bool meanTensor = target == "aten::normal.Tensor_Tensor" ||
                      target == "aten::normal.Tensor_float";
    bool stdTensor = target == "aten::normal.Tensor_Tensor" ||
                     target == "aten::normal.float_Tensor";
    Value x = add(tensorOr(meanTensor, 0, mean),
                  mul(tensorOr(stdTensor, meanTensor ? 1 : 0, std), z));
    if (target == "aten::log_normal")
      x = prim::ExpOp::create(b, loc, x);
    return done(x);
  }
  if (target == "aten::uniform") {
    double from = floatArg("from", 0), to = floatArg("to", 1);
    return done(add(c(from), mul(c(to - from), *u)));
  }
  if (target == "aten::exponential")
    return done(prim::DivOp::create(b, loc, exponentialOf(*u),
                                    c(floatArg("lambd", 1))));
  if (target == "aten::cauchy")
    return done(add(c(floatArg("median", 0)),
                    mul(c(floatArg("sigma", 1)),
                        prim::TanOp::create(
                            b, loc, mul(c(M_PI), add(*u, c(-0.5)))))));
  // geometric: the number of trials to the first success, at least 1.
  double p = floatArg("p", 0.5);
  if (!(p > 0 && p <= 1))
    return fail("geometric's p is not in (0, 1]");
  if (p == 1)
    return done(c(1));
  Value trials = prim::DivOp::create(
      b, loc, prim::NegOp::create(b, loc, exponentialOf(*u)),
      c(std::log1p(-p)));
  return done(prim::MaximumOp::create(
      b, loc, prim::CeilOp::create(b, loc, trials), c(1)));
}

/// aten::embedding: the rows of the table the indices select, a gather
/// along dimension 0. `padding_idx` only changes the gradient (the padding
/// row gets none): in a graph that tc-autodiff differentiates, the rows at
/// the positions whose index is `padding_idx` come from a second gather
/// that stops gradients (the same values). `scale_grad_by_freq` and
/// `sparse` are refused.
FailureOr<SmallVector<Value>> Decomposer::embedding() {
  RankedTensorType type = resultType();
  Value table = operands[0], indices = operands[1];
  if (typeOf(table).getRank() != 2)
    return fail("the table " + quoted(typeOf(table)) + " is not 2-d");
  if (!isa<IntegerType>(typeOf(indices).getElementType()) ||
      typeOf(indices).getElementType().isInteger(1))
    return fail("indices " + quoted(typeOf(indices)) + " are not integers");
  if (boolArg("sparse", false) || boolArg("scale_grad_by_freq", false))
    return fail("sparse and scale_grad_by_freq gradients are not supported");
  auto func = op->getParentOfType<fx::GraphOp>();
  bool differentiated = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    differentiated |=
        static_cast<bool>(func.getArgAttr(i, prim::kRequiresGradAttrName));
  Value rows = prim::GatherOp::create(b, loc, table, indices, 0);
  int64_t padding = intArg("padding_idx", -1);
  if (padding >= 0 && differentiated) {
    auto still = prim::GatherOp::create(b, loc, table, indices, 0);
    still->setAttr(prim::PrimDialect::getStopGradientAttrName(),
                   b.getUnitAttr());
    RankedTensorType indexType = typeOf(indices);
    Value isPadding =
        prim::CompareOp::create(b, loc, prim::ComparisonPredicate::EQ,
                                indices, splat(indexType, padding));
    // [indices..., D]: the mask spans each selected row.
    SmallVector<int64_t> dims =
        llvm::to_vector(llvm::seq<int64_t>(0, indexType.getRank()));
    Value mask = prim::BroadcastInDimOp::create(
        b, loc, isPadding, typeOf(rows).getShape(), dims);
    rows = prim::WhereOp::create(b, loc, mask, still, rows);
  }
  return SmallVector<Value>{coerce(rows, type)};
}

/// tc::attention (PyTorch's scaled_dot_product_attention, which the backend
/// makes of a fused attention it hands to tc) as prim.attention: a boolean
/// mask becomes a bias of 0 and -inf, a bias is brought to (batch or 1,
/// heads or 1, queries, keys padded to a multiple of 8). Dropout is not
/// decomposed here.
FailureOr<SmallVector<Value>> Decomposer::attention() {
  RankedTensorType type = resultType();
  SmallVector<Value> query = tensorArg(0), key = tensorArg(1),
                     value = tensorArg(2), mask = tensorArg(3);
  if (query.size() != 1 || key.size() != 1 || value.size() != 1)
    return fail("query, key and value must be tensors");
  if (floatArg("dropout_p", 0.0) != 0.0)
    return fail("attention dropout is not supported");
  RankedTensorType q = typeOf(query[0]), k = typeOf(key[0]),
                   v = typeOf(value[0]);
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4 ||
      !q.hasStaticShape() || !k.hasStaticShape() || !v.hasStaticShape())
    return fail("query, key and value must be static 4-d tensors");
  Type elt = q.getElementType();
  if (!elt.isF16() && !elt.isBF16())
    return fail("only f16 and bf16 attention is a library call");
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  double scale = floatArg("scale", std::numeric_limits<double>::quiet_NaN());
  if (std::isnan(scale))
    scale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
  Value bias;
  if (!mask.empty()) {
    Value m = mask[0];
    RankedTensorType mt = typeOf(m);
    if (mt.getRank() > 4 || !mt.hasStaticShape())
      return fail("the mask " + quoted(mt) + " is not a static tensor of at "
                  "most 4 dimensions");
    if (mt.getElementType().isInteger(1)) {
      RankedTensorType biasType = RankedTensorType::get(mt.getShape(), elt);
      m = sel(m, splat(biasType, 0.0),
              splat(biasType, -std::numeric_limits<double>::infinity()));
    } else {
      m = convert(m, elt);
    }
    // Right-aligned to 4-d, then (batch or 1, heads or 1, queries, keys).
    SmallVector<int64_t> dims(4 - mt.getRank(), 1);
    llvm::append_range(dims, mt.getShape());
    m = reshape(m, dims);
    SmallVector<int64_t> full = {dims[0] == 1 ? 1 : qs[0],
                                 dims[1] == 1 ? 1 : qs[1], qs[2], ks[2]};
    bias = broadcast(m, full);
    // Rows of whole 16-byte groups (the padding is never read).
    int64_t width = prim::AttentionOp::getBiasWidth(ks[2]);
    if (width != ks[2])
      bias = prim::PadOp::create(b, loc, bias, {0, 0, 0, 0},
                                 {0, 0, 0, width - ks[2]}, {0, 0, 0, 0},
                                 APFloat(0.0));
  }
  auto op = prim::AttentionOp::create(
      b, loc, RankedTensorType::get(type.getShape(), elt), query[0], key[0],
      value[0], bias, b.getF64FloatAttr(scale),
      boolArg("is_causal", false) ? b.getUnitAttr() : UnitAttr());
  if (failed(mlir::verify(op)))
    return failure();
  return SmallVector<Value>{coerce(op.getResult(), type)};
}

/// aten::convolution (not transposed) as prim.convolution, its bias as an
/// add. Targets without a library convolution expand it into a matrix
/// product (tc-expand-convolutions).
FailureOr<SmallVector<Value>> Decomposer::convolution() {
  RankedTensorType type = resultType();
  Type elt = type.getElementType();
  int64_t groups = intArg("groups", 1);
  ArrayRef<int32_t> sizes;
  if (auto attr = op.getTensorArgSizes())
    sizes = *attr;
  bool hasBias = sizes.empty() ? operands.size() > 2 : sizes[2] == 1;
  Value x = convert(operands[0], elt), w = convert(operands[1], elt);
  if (boolArg("transposed", false)) {
    // A transposed convolution is the convolution, stride 1, of the input
    // dilated by the stride (interior padding) and padded by
    // dilation * (kernel - 1) - padding (+ output_padding after), with the
    // kernel flipped and its channel dimensions swapped.
    RankedTensorType xType = typeOf(x), wType = typeOf(w);
    int64_t rank = xType.getRank(), spatial = rank - 2;
    if (spatial < 1 || wType.getRank() != rank || groups < 1 ||
        xType.getDimSize(1) != wType.getDimSize(0) ||
        wType.getDimSize(0) % groups != 0)
      return fail("input " + quoted(xType) + " and weight " + quoted(wType) +
                  " do not make a transposed convolution");
    SmallVector<int64_t> ones(spatial, 1), zeros(spatial, 0);
    SmallVector<int64_t> stride = spatialListArg("stride", spatial, ones),
                         padding = spatialListArg("padding", spatial, zeros),
                         dilation = spatialListArg("dilation", spatial, ones),
                         outputPadding =
                             spatialListArg("output_padding", spatial, zeros);
    SmallVector<int64_t> low(rank, 0), high(rank, 0), interior(rank, 0);
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t edge = dilation[d] * (wType.getDimSize(2 + d) - 1) - padding[d];
      low[2 + d] = edge;
      high[2 + d] = edge + outputPadding[d];
      interior[2 + d] = stride[d] - 1;
    }
    Value dilated =
        prim::PadOp::create(b, loc, x, low, high, interior, APFloat(0.0));
    // (C_in, C_out / groups, k...) -> (C_out, C_in / groups, k...): the
    // channel dimensions swap within each group.
    int64_t cin = wType.getDimSize(0), coutGroup = wType.getDimSize(1);
    SmallVector<int64_t> grouped = {groups, cin / groups, coutGroup};
    SmallVector<int64_t> swap = {0, 2, 1};
    SmallVector<int64_t> swapped = {groups * coutGroup, cin / groups};
    for (int64_t d = 0; d < spatial; ++d) {
      grouped.push_back(wType.getDimSize(2 + d));
      swap.push_back(3 + d);
      swapped.push_back(wType.getDimSize(2 + d));
    }
    SmallVector<int64_t> swapOne = {1, 0};
    for (int64_t d = 0; d < spatial; ++d)
      swapOne.push_back(2 + d);
    Value kernel =
        groups == 1
            ? prim::PermuteOp::create(b, loc, w, swapOne).getResult()
            : reshape(prim::PermuteOp::create(b, loc, reshape(w, grouped),
                                              swap),
                      swapped);
    for (int64_t d = 0; d < spatial; ++d) {
      int64_t size = wType.getDimSize(2 + d);
      auto indexType = RankedTensorType::get({size}, b.getI64Type());
      Value reversed = prim::SubOp::create(
          b, loc, splat(indexType, size - 1),
          prim::IotaOp::create(b, loc, ArrayRef<int64_t>{size}, 0,
                               b.getI64Type()));
      kernel = prim::GatherOp::create(b, loc, kernel, reversed, 2 + d);
    }
    Value y = prim::ConvolutionOp::create(b, loc, dilated, kernel, ones,
                                          zeros, dilation, groups);
    if (typeOf(y) != type)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + ", weight and window");
    if (hasBias)
      y = prim::AddOp::create(
          b, loc, y,
          prim::BroadcastInDimOp::create(b, loc, convert(operands[2], elt),
                                         type.getShape(),
                                         ArrayRef<int64_t>{1}));
    return SmallVector<Value>{y};
  }
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  int64_t rank = xType.getRank(), spatial = rank - 2;
  if (spatial < 1 || wType.getRank() != rank || type.getRank() != rank ||
      groups < 1 || xType.getDimSize(1) != wType.getDimSize(1) * groups ||
      wType.getDimSize(0) % groups != 0)
    return fail("input " + quoted(xType) + " and weight " + quoted(wType) +
                " do not make a convolution");
  SmallVector<int64_t> stride = spatialListArg(
                           "stride", spatial, SmallVector<int64_t>(spatial, 1)),
                       padding = spatialListArg(
                           "padding", spatial, SmallVector<int64_t>(spatial, 0)),
                       dilation = spatialListArg(
                           "dilation", spatial,
                           SmallVector<int64_t>(spatial, 1));
  if (static_cast<int64_t>(stride.size()) != spatial ||
      static_cast<int64_t>(padding.size()) != spatial ||
      static_cast<int64_t>(dilation.size()) != spatial)
    return fail("stride, padding and dilation need " + Twine(spatial) +
                " entries");
  int64_t o = wType.getDimSize(0);
  for (int64_t d = 0; d < spatial; ++d) {
    int64_t expected = (xType.getDimSize(2 + d) + 2 * padding[d] -
                        dilation[d] * (wType.getDimSize(2 + d) - 1) - 1) /
                           stride[d] +
                       1;
    if (expected != type.getDimSize(2 + d) || stride[d] < 1 || dilation[d] < 1 ||
        padding[d] < 0)
      return fail("result " + quoted(type) + " does not match the input " +
                  quoted(xType) + ", weight and window");
  }
  Value y = prim::ConvolutionOp::create(b, loc, x, w, stride, padding,
                                        dilation, groups);
  if (hasBias) {
    Value bias = convert(operands[2], elt);
    if (typeOf(bias).getShape() != ArrayRef<int64_t>{o})
      return fail("bias " + quoted(typeOf(bias)) + " is not one per output "
                  "channel");
    y = prim::AddOp::create(b, loc, y,
                            prim::BroadcastInDimOp::create(
                                b, loc, bias, type.getShape(),
                                ArrayRef<int64_t>{1}));
  }
  return SmallVector<Value>{y};
}
