//===- DiskCache.cpp - compiled graphs cached across processes -----------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "DiskCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>

using namespace mlir::tc;

const std::string &runtime::buildIdentity() {
  static const std::string identity = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&runtime::buildIdentity), &info) ||
        !info.dli_fname)
      return std::string("unknown-build");
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(info.dli_fname, status))
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" +
           std::to_string(status.getSize()) + ":" +
           std::to_string(
               status.getLastModificationTime().time_since_epoch().count());
  }();
  return identity;
}

std::string runtime::cacheKey(llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::SHA256 hash;
  hash.update(buildIdentity());
  for (llvm::StringRef part : parts) {
    // Lengths too, so that ("ab", "c") and ("a", "bc") differ.
    hash.update(std::to_string(part.size()));
    hash.update(part);
  }
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

bool runtime::writeCacheFile(llvm::StringRef dir, llvm::StringRef name,
                             llvm::StringRef bytes) {
  if (llvm::sys::fs::create_directories(dir))
    return false;
  llvm::SmallString<256> path(dir), tmp;
  llvm::sys::path::append(path, name);
  int fd;
  if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, tmp))
    return false;
  bool ok;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
    os.close();
    ok = !os.has_error();
    if (!ok)
      os.clear_error();
  }
  if (ok && !llvm::sys::fs::rename(tmp, path))
    return true;
  (void)llvm::sys::fs::remove(tmp);
  return false;
}
