//===- tc-aot-test.cpp - runs an exported graph from C++, checks results -===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// The C++ test of the ahead-of-time runtime (test/python/test_aot.py drives
// it): it links only libtc_aot, loads a folder that tc.aot.export wrote,
// runs it on the inputs in <inputs.bin> (the user inputs' bytes, one after
// the other) and compares the outputs with <expected.bin> (eager PyTorch's,
// laid out the same way): floating-point outputs within |a - e| <= atol +
// rtol * |e|, others exactly. It also checks that bad calls are errors.
//
//   tc-aot-test <folder> <inputs.bin> <expected.bin> [rtol atol]
//
// Prints one line per output and exits 0 when all match.
//
//===----------------------------------------------------------------------===//

#include "tc/AOT/Model.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

using tc::aot::DType;

static bool readAll(const char *path, std::vector<char> &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  return true;
}

static float halfToFloat(uint16_t h, bool bfloat) {
  uint32_t bits;
  if (bfloat) {
    bits = uint32_t(h) << 16;
  } else {
    uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31,
             mant = h & 1023;
    if (exp == 0 && mant == 0)
      bits = sign;
    else if (exp == 31)
      bits = sign | 0x7f800000 | (mant << 13);
    else if (exp == 0) { // subnormal
      float v = std::ldexp(float(mant), -24);
      return sign ? -v : v;
    } else
      bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Element `i` of a floating-point buffer as a double.
static double element(const char *data, DType dtype, int64_t i) {
  switch (dtype) {
  case DType::F32: {
    float v;
    std::memcpy(&v, data + 4 * i, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, data + 8 * i, 8);
    return v;
  }
  default: {
    uint16_t v;
    std::memcpy(&v, data + 2 * i, 2);
    return halfToFloat(v, dtype == DType::BF16);
  }
  }
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 6) {
    std::cerr << "usage: tc-aot-test <folder> <inputs.bin> <expected.bin> "
                 "[rtol atol]\n";
    return 2;
  }
  double rtol = argc == 6 ? std::atof(argv[4]) : 1e-4;
  double atol = argc == 6 ? std::atof(argv[5]) : 1e-5;

  std::string error;
  // A folder that is not an export is an error, not a crash.
  if (tc::aot::Model::load(std::string(argv[1]) + "/missing", error) ||
      error.empty()) {
    std::cerr << "FAIL: loading a missing folder did not fail\n";
    return 1;
  }
  auto model = tc::aot::Model::load(argv[1], error);
  if (!model) {
    std::cerr << "FAIL: " << error << "\n";
    return 1;
  }

  std::vector<char> inputBytes, expectedBytes;
  if (!readAll(argv[2], inputBytes) || !readAll(argv[3], expectedBytes)) {
    std::cerr << "FAIL: cannot read the inputs or expected outputs\n";
    return 1;
  }
  std::vector<const void *> inputs;
  size_t offset = 0;
  for (const tc::aot::TensorSpec &spec : model->inputs()) {
    if (offset + spec.bytes() > inputBytes.size()) {
      std::cerr << "FAIL: inputs.bin is too short for " << spec.name << "\n";
      return 1;
    }
    inputs.push_back(inputBytes.data() + offset);
    offset += spec.bytes();
  }
  std::vector<std::vector<char>> outputStorage;
  std::vector<void *> outputs;
  for (const tc::aot::TensorSpec &spec : model->outputs()) {
    outputStorage.emplace_back(spec.bytes() + 1);
    outputs.push_back(outputStorage.back().data());
  }

  // A wrong number of inputs is an error.
  std::vector<const void *> tooFew(inputs.begin(), inputs.end());
  if (!tooFew.empty()) {
    tooFew.pop_back();
    if (model->run(tooFew, outputs, error) || error.empty()) {
      std::cerr << "FAIL: a call with too few inputs did not fail\n";
      return 1;
    }
  }

  // Twice: the second run reuses the arena the first left dirty.
  for (int round = 0; round < 2; ++round)
    if (!model->run(inputs, outputs, error)) {
      std::cerr << "FAIL: run: " << error << "\n";
      return 1;
    }

  bool ok = true;
  offset = 0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const tc::aot::TensorSpec &spec = model->outputs()[o];
    if (offset + spec.bytes() > expectedBytes.size()) {
      std::cerr << "FAIL: expected.bin is too short for output " << o << "\n";
      return 1;
    }
    const char *got = static_cast<const char *>(outputs[o]);
    const char *want = expectedBytes.data() + offset;
    offset += spec.bytes();
    bool isFloat = spec.dtype == DType::F32 || spec.dtype == DType::F64 ||
                   spec.dtype == DType::F16 || spec.dtype == DType::BF16;
    int64_t bad = 0;
    double worst = 0;
    if (isFloat) {
      for (int64_t i = 0; i < spec.numel(); ++i) {
        double a = element(got, spec.dtype, i),
               e = element(want, spec.dtype, i);
        double err = std::fabs(a - e);
        bool same = err <= atol + rtol * std::fabs(e) ||
                    (std::isnan(a) && std::isnan(e));
        bad += !same;
        if (!std::isnan(err))
          worst = std::max(worst, err);
      }
    } else {
      bad = std::memcmp(got, want, spec.bytes()) != 0;
    }
    std::printf("output %zu (%s, %s, %lld elements): max abs error %g, "
                "%lld mismatches\n",
                o, spec.name.c_str(), tc::aot::dtypeName(spec.dtype),
                static_cast<long long>(spec.numel()), worst,
                static_cast<long long>(bad));
    ok = ok && bad == 0;
  }
  if (offset != expectedBytes.size()) {
    std::cerr << "FAIL: expected.bin holds " << expectedBytes.size()
              << " bytes, the outputs " << offset << "\n";
    return 1;
  }
  std::printf(ok ? "PASS\n" : "FAIL\n");
  return ok ? 0 : 1;
}
