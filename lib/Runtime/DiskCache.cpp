//===- DiskCache.cpp - compiled graphs cached across processes -----------===//
//
// Part of the tc project.
//
//===----------------------------------------------------------------------===//

#include "DiskCache.h"

#include "tc/Dialect/FX/IR/FXAttrNames.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
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

/// The length of the string literal at the start of `text` (which starts
/// with a quote), closing quote included; all of `text` when unterminated.
static size_t stringLength(llvm::StringRef text) {
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] == '\\')
      ++i;
    else if (text[i] == '"')
      return i + 1;
  }
  return text.size();
}

/// The length of the parenthesized group at the start of `text` (which
/// starts with '('), nested groups and string literals included.
static size_t groupLength(llvm::StringRef text) {
  int depth = 0;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '"') {
      i += stringLength(text.drop_front(i));
      continue;
    }
    if (c == '(')
      ++depth;
    else if (c == ')' && --depth == 0)
      return i + 1;
    ++i;
  }
  return text.size();
}

static bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

std::string runtime::structuralText(llvm::StringRef source) {
  std::string out;
  out.reserve(source.size());
  llvm::StringMap<unsigned> values;
  size_t i = 0, n = source.size();
  auto atLineStart = [&] { return i == 0 || source[i - 1] == '\n'; };
  // Braces open, and how many were open inside an `args = {...}`
  // dictionary (an ATen op's arguments, whose strings are values even
  // where an argument is called `name`); -1 outside one.
  int depth = 0, argsDepth = -1;
  while (i < n) {
    char c = source[i];
    llvm::StringRef rest = source.drop_front(i);
    if (c == '{' || c == '}') {
      if (c == '}' && depth-- == argsDepth)
        argsDepth = -1;
      if (c == '{')
        ++depth;
      out += c;
      ++i;
      continue;
    }
    if (c == '"') {
      size_t length = stringLength(rest);
      out += rest.take_front(length);
      i += length;
      continue;
    }
    if (c == '#' && atLineStart() && rest.starts_with("#loc")) {
      // A location alias's definition: the whole line.
      size_t end = rest.find('\n');
      i += end == llvm::StringRef::npos ? rest.size() : end + 1;
      continue;
    }
    if (c == '%') {
      size_t length = 1;
      while (length < rest.size() && isIdentifierChar(rest[length]))
        ++length;
      if (length > 1) {
        unsigned number =
            values.try_emplace(rest.slice(1, length), values.size())
                .first->second;
        out += "%" + std::to_string(number);
        i += length;
        continue;
      }
    }
    if (llvm::isAlpha(c) || c == '_') {
      size_t length = 1;
      while (length < rest.size() && isIdentifierChar(rest[length]))
        ++length;
      llvm::StringRef word = rest.take_front(length);
      bool startsToken = i == 0 || !isIdentifierChar(source[i - 1]);
      if (startsToken && word == "loc" && rest.drop_front(length)
                                              .starts_with("(")) {
        // Drops the location and the blanks before it.
        while (!out.empty() && out.back() == ' ')
          out.pop_back();
        i += length + groupLength(rest.drop_front(length));
        continue;
      }
      if (startsToken && word == "args" && argsDepth < 0 &&
          rest.drop_front(length).starts_with(" = {"))
        argsDepth = depth + 1;
      if (startsToken && argsDepth < 0 &&
          (word == "name" || word == fx::kNameAttrName)) {
        llvm::StringRef after = rest.drop_front(length);
        if (after.consume_front(" = ") && after.starts_with("\"")) {
          out += word;
          out += " = \"\"";
          i += length + 3 + stringLength(after);
          continue;
        }
      }
      out += word;
      i += length;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
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
