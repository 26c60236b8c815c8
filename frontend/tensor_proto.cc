// TensorProto decoding and encoding. Data comes from raw_data, the typed repeated fields (whose
// use per dtype follows onnx.proto: int32_data also carries the narrow ints, bool and the bit
// patterns of float16/bfloat16 and the bytes of the sub-16-bit types, packed like raw_data), or an
// external file that must resolve inside the model's folder. Sub-16-bit types are unpacked to one
// byte per element (ir/small_dtypes.h).
#include "frontend/tensor_proto.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir/graph.h"
#include "ir/small_dtypes.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "raw_data and .npy bytes are copied as-is: aotc assumes a little-endian host");

namespace aotc {
namespace {

Status tensor_error(const std::string& what, const std::string& reason) {
  return Status::error(what + ": " + reason);
}

// realpath() as a std::string; empty when the path does not resolve.
std::string resolved_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return std::string();
  return std::string(buf);
}

struct ExternalRef {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;  // -1: not given, the rest is implied by dims and dtype
};

Expected<int64_t> parse_nonnegative(const std::string& text, const std::string& what,
                                    const std::string& key) {
  if (text.empty() || text.size() > 18)
    return tensor_error(what, "external data " + key + " '" + escape_for_message(text) + "' is not a valid number");
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return tensor_error(what, "external data " + key + " '" + escape_for_message(text) + "' is not a valid number");
    v = v * 10 + (c - '0');
  }
  return v;
}

Expected<ExternalRef> parse_external_ref(const onnx::TensorProto& proto, const std::string& what) {
  ExternalRef ref;
  bool has_location = false;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      ref.location = kv.value();
      has_location = true;
    } else if (kv.key() == "offset") {
      auto v = parse_nonnegative(kv.value(), what, "offset");
      if (!v) return v.status();
      ref.offset = *v;
    } else if (kv.key() == "length") {
      auto v = parse_nonnegative(kv.value(), what, "length");
      if (!v) return v.status();
      ref.length = *v;
    }
    // "checksum" and unknown keys are informational.
  }
  if (!has_location || ref.location.empty())
    return tensor_error(what, "external data has no location");
  return ref;
}

// Reads external bytes, refusing any location that leaves `base_dir` (absolute paths, "..",
// symlinks pointing outside: realpath resolves all of them before the prefix check).
// Every check comes before the tensor is allocated: a 16-byte file claimed as 4 GiB used to
// allocate (and zero) the 4 GiB first, taking seconds before the refusal. Sub-byte storage types
// (int4, float4e2m1, ...) are read packed and unpacked to one byte per element.
Expected<Tensor> read_external(const onnx::TensorProto& proto, const std::string& base_dir,
                               const std::string& what, int64_t expected_bytes, DType dt, const Shape& dims) {
  if (base_dir.empty()) return tensor_error(what, "external data is not allowed here");
  auto ref = parse_external_ref(proto, what);
  if (!ref) return ref.status();
  const std::string loc_msg = "'" + escape_for_message(ref->location) + "'";
  if (ref->location.find('\0') != std::string::npos)
    return tensor_error(what, "external data location " + loc_msg + " contains a NUL byte");
  if (ref->location[0] == '/')
    return tensor_error(what, "external data location " + loc_msg +
                                  " is an absolute path; it must be relative to the model's folder");
  const std::string base = resolved_path(base_dir);
  if (base.empty())
    return tensor_error(what, "cannot resolve the model's folder '" + escape_for_message(base_dir) + "'");
  const std::string target = resolved_path(base_dir + "/" + ref->location);
  if (target.empty())
    return tensor_error(what, "external data file " + loc_msg + " does not exist");
  const std::string prefix = base == "/" ? base : base + "/";
  if (target.compare(0, prefix.size(), prefix) != 0)
    return tensor_error(what, "external data location " + loc_msg + " resolves outside the model's folder");
  // Opened once, without following a last-component link and without blocking on a FIFO; every
  // check below is on the opened file (fstat), so nothing can be swapped in between.
  const int fd = ::open(target.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return tensor_error(what, "cannot open external data file " + loc_msg);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return tensor_error(what, "external data file " + loc_msg + " is not a regular file");
  }
  // A second name of a file is indistinguishable from the file: a hard link in the model's folder
  // can be a file from anywhere on the same file system, so only singly linked files are read.
  if (st.st_nlink != 1) {
    ::close(fd);
    return tensor_error(what, "external data file " + loc_msg + " has " + std::to_string(st.st_nlink) +
                                  " hard links; only files with one link are read (a hard link may name a "
                                  "file outside the model's folder)");
  }
  const int64_t file_size = static_cast<int64_t>(st.st_size);
  const int64_t length = ref->length < 0 ? expected_bytes : ref->length;
  if (length != expected_bytes) {
    ::close(fd);
    return tensor_error(what, "external data length " + std::to_string(length) + " does not match " +
                                  std::to_string(expected_bytes) + " bytes implied by dims and dtype");
  }
  if (ref->offset > file_size || length > file_size - ref->offset) {
    ::close(fd);
    return tensor_error(what, "external data range [" + std::to_string(ref->offset) + ", +" +
                                  std::to_string(length) + ") exceeds file " + loc_msg + " of " +
                                  std::to_string(file_size) + " bytes");
  }
  FILE* f = ::fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    return tensor_error(what, "cannot open external data file " + loc_msg);
  }
  Tensor out(dt, dims);
  const bool small = dtype_is_small(dt);
  std::vector<uint8_t> packed(small ? static_cast<size_t>(length) : 0);
  uint8_t* dst = small ? packed.data() : out.raw();
  bool ok = ::fseeko(f, static_cast<off_t>(ref->offset), SEEK_SET) == 0 &&
            (length == 0 || std::fread(dst, 1, static_cast<size_t>(length), f) ==
                                static_cast<size_t>(length));
  std::fclose(f);
  if (!ok) return tensor_error(what, "short read from external data file " + loc_msg);
  if (small) unpack_small(dt, packed.data(), out.numel(), out.raw());
  return out;
}

Status count_mismatch(const std::string& what, const char* field, int64_t got, int64_t numel) {
  return tensor_error(what, std::string(field) + " has " + std::to_string(got) +
                                " elements, dims imply " + std::to_string(numel));
}

// int32_data -> narrow element type, refusing values that do not fit (a corrupted file,
// not something to truncate silently).
template <class T>
Status narrow_from_int32(const onnx::TensorProto& proto, const std::string& what, int64_t lo,
                         int64_t hi, Tensor& out) {
  T* dst = out.data<T>();
  for (int i = 0; i < proto.int32_data_size(); ++i) {
    int64_t v = proto.int32_data(i);
    if (v < lo || v > hi)
      return tensor_error(what, "int32_data value " + std::to_string(v) + " does not fit " +
                                    dtype_name(out.dtype()));
    dst[i] = static_cast<T>(v);
  }
  return Status::ok();
}

Status decode_typed(const onnx::TensorProto& proto, const std::string& what, int64_t numel,
                    Tensor& out) {
  const DType dt = out.dtype();
  switch (dt) {
    case DType::kFloat32:
      if (proto.float_data_size() != numel) return count_mismatch(what, "float_data", proto.float_data_size(), numel);
      if (numel) std::memcpy(out.raw(), proto.float_data().data(), static_cast<size_t>(numel) * 4);
      return Status::ok();
    case DType::kFloat64:
      if (proto.double_data_size() != numel) return count_mismatch(what, "double_data", proto.double_data_size(), numel);
      if (numel) std::memcpy(out.raw(), proto.double_data().data(), static_cast<size_t>(numel) * 8);
      return Status::ok();
    case DType::kInt64:
      if (proto.int64_data_size() != numel) return count_mismatch(what, "int64_data", proto.int64_data_size(), numel);
      if (numel) std::memcpy(out.raw(), proto.int64_data().data(), static_cast<size_t>(numel) * 8);
      return Status::ok();
    case DType::kUInt64:
      if (proto.uint64_data_size() != numel) return count_mismatch(what, "uint64_data", proto.uint64_data_size(), numel);
      if (numel) std::memcpy(out.raw(), proto.uint64_data().data(), static_cast<size_t>(numel) * 8);
      return Status::ok();
    case DType::kUInt32: {
      if (proto.uint64_data_size() != numel) return count_mismatch(what, "uint64_data", proto.uint64_data_size(), numel);
      uint32_t* dst = out.data<uint32_t>();
      for (int64_t i = 0; i < numel; ++i) {
        uint64_t v = proto.uint64_data(static_cast<int>(i));
        if (v > 0xffffffffu) return tensor_error(what, "uint64_data value " + std::to_string(v) + " does not fit uint32");
        dst[i] = static_cast<uint32_t>(v);
      }
      return Status::ok();
    }
    default:
      break;
  }
  if (dtype_is_small(dt)) {  // one byte per int32 (packed for the 4-bit / 2-bit types)
    const int64_t count = packed_small_bytes(dt, numel);
    if (proto.int32_data_size() != count) return count_mismatch(what, "int32_data", proto.int32_data_size(), count);
    std::vector<uint8_t> bytes(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
      const int32_t v = proto.int32_data(static_cast<int>(i));
      if (v < 0 || v > 255)
        return tensor_error(what, "int32_data value " + std::to_string(v) + " is not a byte of " + dtype_name(dt));
      bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(v);
    }
    unpack_small(dt, bytes.data(), numel, out.raw());
    return Status::ok();
  }
  if (proto.int32_data_size() != numel) return count_mismatch(what, "int32_data", proto.int32_data_size(), numel);
  switch (dt) {
    case DType::kInt32:
      if (numel) std::memcpy(out.raw(), proto.int32_data().data(), static_cast<size_t>(numel) * 4);
      return Status::ok();
    case DType::kInt8: return narrow_from_int32<int8_t>(proto, what, -128, 127, out);
    case DType::kUInt8: return narrow_from_int32<uint8_t>(proto, what, 0, 255, out);
    case DType::kInt16: return narrow_from_int32<int16_t>(proto, what, -32768, 32767, out);
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:  // 16-bit patterns stored in the low half of an int32
      return narrow_from_int32<uint16_t>(proto, what, 0, 65535, out);
    case DType::kBool: return narrow_from_int32<uint8_t>(proto, what, 0, 1, out);
    default:
      return tensor_error(what, "dtype " + dtype_name(dt) + " cannot be stored in int32_data");
  }
}

bool has_typed_data(const onnx::TensorProto& p) {
  return p.float_data_size() || p.int32_data_size() || p.int64_data_size() ||
         p.double_data_size() || p.uint64_data_size() || p.string_data_size();
}

}  // namespace

Expected<int64_t> checked_numel(const Shape& dims, DType dtype, const std::string& what) {
  int64_t numel = 1, nonzero = 1;
  bool too_big = false, nonzero_over = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0)
      return tensor_error(what, "dim " + std::to_string(i) + " is negative (" + std::to_string(dims[i]) + ")");
    if (__builtin_mul_overflow(numel, dims[i], &numel)) too_big = true;
    if (dims[i] != 0 && __builtin_mul_overflow(nonzero, dims[i], &nonzero)) nonzero_over = true;
  }
  // An empty tensor's other dims must still multiply within int64: ops multiply subsets of a
  // shape's dims (strides, line counts), and [2^62, 5, 0] made each of them an overflow (fuzz finds
  // in BatchNormalization, RotaryEmbedding, Flatten, LpNormalization, UBSan).
  const bool empty = std::find(dims.begin(), dims.end(), int64_t{0}) != dims.end();
  if (empty && nonzero_over)
    return tensor_error(what, "shape " + shape_str(dims) + ": an empty tensor whose other dims multiply past int64");
  // A zero dim makes the tensor empty however large the others are.
  for (int64_t d : dims)
    if (d == 0) return int64_t{0};
  int64_t bytes = 0;
  if (too_big || __builtin_mul_overflow(numel, std::max<int64_t>(dtype_size(dtype), 1), &bytes) ||
      bytes > kMaxTensorBytes)
    return tensor_error(what, "shape " + shape_str(dims) + " of " + dtype_name(dtype) +
                                  " exceeds the 1 TiB tensor limit");
  return numel;
}

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                                   const std::string& what) {
  const int32_t type = proto.data_type();
  if (type == static_cast<int32_t>(DType::kString))
    return tensor_error(what, "string tensors are not supported");
  if (!dtype_is_known(type))
    return tensor_error(what, "unsupported data_type " + std::to_string(type));
  if (proto.has_segment()) return tensor_error(what, "segmented tensors are not supported");
  const DType dt = static_cast<DType>(type);
  Shape dims(proto.dims().begin(), proto.dims().end());
  auto numel = checked_numel(dims, dt, what);
  if (!numel) return numel.status();
  // Bytes in the proto: packed (two 4-bit / four 2-bit elements per byte) for the small types.
  const bool small = dtype_is_small(dt);
  const int64_t bytes = small ? packed_small_bytes(dt, *numel) : *numel * dtype_size(dt);

  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  if (external && (proto.has_raw_data() || has_typed_data(proto)))
    return tensor_error(what, "has both external data and inline data");
  if (proto.has_raw_data() && has_typed_data(proto))
    return tensor_error(what, "has both raw_data and a typed data field");

  // Inline data must match the claimed size BEFORE the tensor is allocated: a 16-byte tensor
  // claiming 2 GiB used to be allocated in full (or end in std::bad_alloc) before being refused.
  if (!external && proto.has_raw_data() && static_cast<int64_t>(proto.raw_data().size()) != bytes)
    return tensor_error(what, "raw_data has " + std::to_string(proto.raw_data().size()) +
                                  " bytes, dims and dtype imply " + std::to_string(bytes));
  if (!external && !proto.has_raw_data()) {
    const std::pair<const char*, int64_t> fields[] = {
        {"float_data", proto.float_data_size()}, {"int32_data", proto.int32_data_size()},
        {"int64_data", proto.int64_data_size()}, {"double_data", proto.double_data_size()},
        {"uint64_data", proto.uint64_data_size()}};
    const char* field = "typed data";
    int64_t count = 0;
    for (const auto& [name, n] : fields)
      if (n > 0) field = name, count += n;
    const int64_t want = small ? bytes : *numel;
    if (count != want) return count_mismatch(what, field, count, want);
  }
  if (external) return read_external(proto, base_dir, what, bytes, dt, dims);
  Tensor out(dt, dims);
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes)
      return tensor_error(what, "raw_data has " + std::to_string(proto.raw_data().size()) +
                                    " bytes, dims and dtype imply " + std::to_string(bytes));
    const auto* src = reinterpret_cast<const uint8_t*>(proto.raw_data().data());
    if (small) unpack_small(dt, src, *numel, out.raw());
    else if (bytes) std::memcpy(out.raw(), src, static_cast<size_t>(bytes));
  } else {
    AOTC_RETURN_IF_ERROR(decode_typed(proto, what, *numel, out));
  }
  return out;
}

Status tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto) {
  if (tensor.dtype() == DType::kUndefined || tensor.dtype() == DType::kString)
    return Status::error("cannot encode a tensor of dtype " + dtype_name(tensor.dtype()));
  proto->Clear();
  if (!name.empty()) proto->set_name(name);
  proto->set_data_type(static_cast<int32_t>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto->add_dims(d);
  if (dtype_is_small(tensor.dtype())) {
    const std::vector<uint8_t> packed = pack_small(tensor.dtype(), tensor.raw(), tensor.numel());
    proto->set_raw_data(reinterpret_cast<const char*>(packed.data()), packed.size());
    return Status::ok();
  }
  proto->set_raw_data(reinterpret_cast<const char*>(tensor.raw()),
                      static_cast<size_t>(tensor.byte_size()));
  return Status::ok();
}

}  // namespace aotc
