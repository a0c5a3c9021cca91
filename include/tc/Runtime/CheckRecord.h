//===- CheckRecord.h - what checked kernels record --------------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Kernels compiled with checks (TC_CPU_CHECKS=1, TC_CUDA_CHECKS=1) record
// their first violation in an array of kRecordWords int64: a flag (nonzero
// once set), the kernel's id (kernelId of its name), the kind, the
// argument's number and the offending element or address. The compiler
// writes it (tc-add-kernel-checks on the CPU, where it is a buffer every
// launch takes last; tc-lower-kernel-to-gpu on GPUs, where it is the
// module's global `kGPURecordName`) and the runtimes read it after a run.
// No MLIR or LLVM here: the CPU's warm runtime (tc._runtime) reads records
// without them.
//
//===----------------------------------------------------------------------===//

#ifndef TC_RUNTIME_CHECKRECORD_H
#define TC_RUNTIME_CHECKRECORD_H

#include <cstdint>
#include <string>
#include <string_view>

namespace tc::checks {

constexpr int64_t kRecordWords = 5;
/// The GPU module's global holding the record.
constexpr const char *kGPURecordName = "tc_check_record";

enum class Kind : int64_t { Bounds = 1, Alignment = 2, NaN = 3 };

/// A kernel's id in a record: the FNV-1a hash of its name.
inline uint64_t kernelId(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : name)
    hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

/// What `record` says, as the error a run raises ("" when it is clear);
/// `kernelName` finds the name of a kernel id ("" when unknown).
template <typename NameOf>
std::string describe(const int64_t *record, NameOf kernelName,
                     int64_t alignment) {
  if (!record[0])
    return "";
  std::string name = kernelName(static_cast<uint64_t>(record[1]));
  std::string text = "tc check failed: kernel " +
                     (name.empty() ? std::string("(unknown)") : name) +
                     ": argument #" + std::to_string(record[3]);
  switch (static_cast<Kind>(record[2])) {
  case Kind::Alignment:
    return text + " at address " + std::to_string(record[4]) + " is not " +
           std::to_string(alignment) +
           "-byte aligned (the kernel did not run)";
  case Kind::NaN:
    return text + ": element " + std::to_string(record[4]) +
           " was written a NaN (the first the checks saw)";
  case Kind::Bounds:
    break;
  }
  return text + ": element " + std::to_string(record[4]) +
         " is out of bounds (the access was skipped)";
}

} // namespace tc::checks

#endif // TC_RUNTIME_CHECKRECORD_H
