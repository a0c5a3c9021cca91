//===- Buffers.h - the buffers a Python call hands a graph ------*- C++ -*-===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//
//
// Shared by tc._tc (TCModule.cpp) and tc._runtime (RuntimeModule.cpp): the
// raw addresses Python passes a compiled graph, as the pointers its runtime
// takes.
//
//===----------------------------------------------------------------------===//

#ifndef TC_PYTHON_BUFFERS_H
#define TC_PYTHON_BUFFERS_H

#include <cstdint>
#include <vector>

/// `pointers` (data pointers from Python) as the runtime's buffers.
inline std::vector<void *> toBuffers(const std::vector<uintptr_t> &pointers) {
  std::vector<void *> buffers;
  buffers.reserve(pointers.size());
  for (uintptr_t p : pointers)
    buffers.push_back(reinterpret_cast<void *>(p));
  return buffers;
}

#endif // TC_PYTHON_BUFFERS_H
