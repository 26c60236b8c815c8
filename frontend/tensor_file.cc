// Tensor files: ONNX TensorProto .pb (decoded by the same code as initializers) and NumPy .npy
// (format versions 1-3, little-endian, C order; the header is a Python dict literal that we parse
// just far enough for 'descr', 'fortran_order' and 'shape').
#include "frontend/tensor_file.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include "frontend/tensor_proto.h"
#include "ir/graph.h"

namespace aotc {
namespace {

std::string file_label(const std::string& path) { return "'" + escape_for_message(path, 200) + "'"; }

Expected<std::string> read_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::error("cannot open " + file_label(path) + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::error(file_label(path) + " is not a regular file");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error("cannot open " + file_label(path) + ": " + std::strerror(errno));
  size_t got = bytes.empty() ? 0 : std::fread(&bytes[0], 1, bytes.size(), f);
  std::fclose(f);
  if (got != bytes.size()) return Status::error("short read from " + file_label(path));
  return bytes;
}

Status write_file(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::error("cannot write " + file_label(path) + ": " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Status::error("short write to " + file_label(path));
  return Status::ok();
}

struct NpyType {
  DType dtype;
  const char* code;  // kind letter + size, as in numpy's descr without the byte-order mark
};

const NpyType kNpyTypes[] = {
    {DType::kFloat16, "f2"}, {DType::kFloat32, "f4"}, {DType::kFloat64, "f8"},
    {DType::kInt8, "i1"},    {DType::kInt16, "i2"},   {DType::kInt32, "i4"},
    {DType::kInt64, "i8"},   {DType::kUInt8, "u1"},   {DType::kUInt16, "u2"},
    {DType::kUInt32, "u4"},  {DType::kUInt64, "u8"},  {DType::kBool, "b1"},
};

// The text after `'key':` (or "key":) in the header dict, spaces skipped; npos if absent.
size_t find_key(const std::string& header, const std::string& key) {
  for (const char* q : {"'", "\""}) {
    size_t at = header.find(std::string(q) + key + q);
    if (at == std::string::npos) continue;
    at = header.find(':', at + key.size() + 2);
    if (at == std::string::npos) return at;
    ++at;
    while (at < header.size() && header[at] == ' ') ++at;
    return at;
  }
  return std::string::npos;
}

Expected<DType> parse_descr(const std::string& header, const std::string& what) {
  size_t at = find_key(header, "descr");
  if (at == std::string::npos || at >= header.size() || (header[at] != '\'' && header[at] != '"'))
    return Status::error(what + ": header has no 'descr' string");
  size_t end = header.find(header[at], at + 1);
  if (end == std::string::npos) return Status::error(what + ": unterminated 'descr'");
  std::string descr = header.substr(at + 1, end - at - 1);
  if (descr.size() != 3)
    return Status::error(what + ": unsupported dtype '" + escape_for_message(descr) + "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const NpyType& t : kNpyTypes) {
    if (code != t.code) continue;
    bool single_byte = code[1] == '1';
    if (order == '<' || order == '=' || order == '|' || (order == '>' && single_byte)) return t.dtype;
    return Status::error(what + ": big-endian data ('" + escape_for_message(descr) + "') is not supported");
  }
  return Status::error(what + ": unsupported dtype '" + escape_for_message(descr) +
                       "' (supported: f2 f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 b1)");
}

Expected<Shape> parse_shape(const std::string& header, const std::string& what) {
  size_t at = find_key(header, "shape");
  if (at == std::string::npos || at >= header.size() || header[at] != '(')
    return Status::error(what + ": header has no 'shape' tuple");
  size_t end = header.find(')', at);
  if (end == std::string::npos) return Status::error(what + ": unterminated 'shape'");
  Shape shape;
  std::string body = header.substr(at + 1, end - at - 1);
  size_t i = 0;
  while (i < body.size()) {
    while (i < body.size() && (body[i] == ' ' || body[i] == ',')) ++i;
    if (i >= body.size()) break;
    int64_t v = 0;
    size_t digits = 0;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9' && digits < 18) {
      v = v * 10 + (body[i] - '0');
      ++i;
      ++digits;
    }
    if (digits == 0 || (i < body.size() && body[i] != ',' && body[i] != ' ' && body[i] != 'L'))
      return Status::error(what + ": bad 'shape' (" + escape_for_message(body) + ")");
    if (i < body.size() && body[i] == 'L') ++i;  // Python 2 long literal
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

Expected<Tensor> load_tensor_pb(const std::string& path, std::string* name) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  onnx::TensorProto proto;
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes->data()),
                                                static_cast<int>(std::min<size_t>(bytes->size(), INT_MAX)));
  stream.SetTotalBytesLimit(INT_MAX);
  if (bytes->size() > static_cast<size_t>(INT_MAX) || !proto.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage())
    return Status::error(file_label(path) + " is not a valid TensorProto file");
  if (name) *name = proto.name();
  return tensor_from_proto(proto, parent_dir(path), "tensor file " + file_label(path));
}

Expected<Tensor> load_tensor_pb(const std::string& path) { return load_tensor_pb(path, nullptr); }

Status save_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  AOTC_RETURN_IF_ERROR(tensor_to_proto(tensor, name, &proto));
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    return Status::error("cannot serialise tensor for " + file_label(path) + " (over 2 GB?)");
  return write_file(path, bytes);
}

Expected<Tensor> load_npy(const std::string& path) {
  const std::string what = "npy file " + file_label(path);
  auto bytes = read_file(path);
  if (!bytes) return bytes.status();
  const std::string& b = *bytes;
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0)
    return Status::error(what + ": not a NumPy .npy file (bad magic)");
  const int major = static_cast<unsigned char>(b[6]);
  size_t header_len = 0, header_start = 0;
  auto byte_at = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(b[i])); };
  if (major == 1) {
    header_len = byte_at(8) | (byte_at(9) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return Status::error(what + ": truncated header");
    header_len = byte_at(8) | (byte_at(9) << 8) | (byte_at(10) << 16) | (byte_at(11) << 24);
    header_start = 12;
  } else {
    return Status::error(what + ": unsupported format version " + std::to_string(major));
  }
  if (header_len > b.size() - header_start) return Status::error(what + ": truncated header");
  const std::string header = b.substr(header_start, header_len);
  auto dtype = parse_descr(header, what);
  if (!dtype) return dtype.status();
  size_t fortran = find_key(header, "fortran_order");
  if (fortran == std::string::npos) return Status::error(what + ": header has no 'fortran_order'");
  if (header.compare(fortran, 4, "True") == 0)
    return Status::error(what + ": Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  if (header.compare(fortran, 5, "False") != 0) return Status::error(what + ": bad 'fortran_order'");
  auto shape = parse_shape(header, what);
  if (!shape) return shape.status();
  auto numel = checked_numel(*shape, *dtype, what);
  if (!numel) return numel.status();
  const size_t data_start = header_start + header_len;
  const size_t data_bytes = static_cast<size_t>(*numel * dtype_size(*dtype));
  if (b.size() - data_start != data_bytes)
    return Status::error(what + ": has " + std::to_string(b.size() - data_start) +
                         " data bytes, shape and dtype imply " + std::to_string(data_bytes));
  Tensor t(*dtype, *shape);
  if (data_bytes) std::memcpy(t.raw(), b.data() + data_start, data_bytes);
  if (*dtype == DType::kBool)
    for (int64_t i = 0; i < t.numel(); ++i)
      if (t.raw()[i] > 1) return Status::error(what + ": bool element " + std::to_string(i) + " is not 0 or 1");
  return t;
}

Status save_npy(const std::string& path, const Tensor& tensor) {
  const char* code = nullptr;
  for (const NpyType& t : kNpyTypes)
    if (t.dtype == tensor.dtype()) code = t.code;
  if (!code)
    return Status::error("cannot save a " + dtype_name(tensor.dtype()) + " tensor as .npy " + file_label(path));
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(tensor.shape()[i]);
  if (tensor.shape().size() == 1) shape += ",";
  shape += ")";
  std::string order = code[1] == '1' ? "|" : "<";
  std::string header = "{'descr': '" + order + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a final newline so the data starts on a 64-byte boundary, like numpy.
  size_t prefix = 10;
  size_t total = prefix + header.size() + 1;
  bool v2 = false;
  if ((total + 63) / 64 * 64 - prefix > 65535) {
    v2 = true;
    prefix = 12;
    total = prefix + header.size() + 1;
  }
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  out.append(reinterpret_cast<const char*>(tensor.raw()), static_cast<size_t>(tensor.byte_size()));
  return write_file(path, out);
}

Expected<Tensor> load_tensor_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::error("cannot read '" + escape_for_message(path) + "': no such file");
  const bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  return npy ? load_npy(path) : load_tensor_pb(path);
}

}  // namespace aotc
