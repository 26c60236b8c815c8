// SHA-256 of a byte string or a file: the model hash in reports and the provenance header, and the
// key of the nvcc kernel cache (codegen/kernel_cache.h); a library of its own (aotc_sha256).
// Written here (FIPS 180-4, ~80 lines) so that aotc needs no crypto dependency.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace aotc {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex_digest();  // 64 lowercase hex digits; finishes the hash

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(const std::string& bytes);
// Streams the file; an unreadable file is an error naming the path.
Expected<std::string> sha256_file(const std::string& path);

}  // namespace aotc
