// Tensor files. The file is memory-mapped and the tensor views the mapping
// (Tensor::Shared keeps it alive) when the data is aligned for its element
// type; otherwise the elements are copied into an aligned buffer.
//
// .npy headers are parsed strictly: the dict must hold exactly 'descr',
// 'fortran_order' and 'shape', with Python literal syntax as numpy writes it.
// Trailing bytes after the data are refused: numpy ignores them, but they mean
// the header does not describe the file (a shape edited by hand, or several
// arrays saved into one file), and reading such a file silently is the class
// of mistake vigil exists to catch.
#include "runtime/tensor_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <optional>

#include <fmt/format.h>

#include "base/image_sizes.h"
#include "base/mapped_file.h"
#include "onnx/tensor_proto.h"

namespace vigil::runtime {
namespace {

using ir::DataType;

constexpr size_t kMaxRank = 64;
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;
constexpr char kMagic[] = "\x93NUMPY";

// ---- dtype descriptors -------------------------------------------------------

struct NpyType {
  const char* code;  // without the byte-order character
  DataType dtype;
};

constexpr NpyType kNpyTypes[] = {
    {"b1", DataType::kBool},     {"i1", DataType::kInt8},      {"i2", DataType::kInt16},
    {"i4", DataType::kInt32},    {"i8", DataType::kInt64},     {"u1", DataType::kUint8},
    {"u2", DataType::kUint16},   {"u4", DataType::kUint32},    {"u8", DataType::kUint64},
    {"f2", DataType::kFloat16},  {"f4", DataType::kFloat32},   {"f8", DataType::kFloat64},
    {"c8", DataType::kComplex64}, {"c16", DataType::kComplex128},
};

Status NpyError(const std::string& path, std::string message) {
  Status s(ErrorCode::kInvalidInput, fmt::format("cannot read '{}': {}", path, message));
  s.WithFact("file", path);
  return s;
}

Result<DataType> ParseDescr(const std::string& path, const std::string& descr) {
  // ml_dtypes' type name, as np.dtype('bfloat16') accepts once ml_dtypes is imported.
  if (descr == "bfloat16") return DataType::kBfloat16;
  if (descr.size() < 2) return NpyError(path, fmt::format("dtype '{}' is not a numpy type descriptor", descr));
  const char order = descr[0];
  const std::string code = descr.substr(1);
  if (code == "O") {
    Status s = NpyError(path, "the array holds Python objects (dtype 'O'), not numbers");
    s.WithCause("an array of arrays of different lengths, or of strings or None, saved with allow_pickle");
    s.WithFix("convert to a numeric array first: np.asarray(x, dtype=np.float32)");
    return s;
  }
  if (code == "V2") {
    Status s = NpyError(path, "dtype '<V2' is an untyped 2-byte element: it may be bfloat16 (ml_dtypes saves "
                              "bfloat16 this way) or anything else, so vigil does not guess");
    s.WithFix("save as float32 (x.astype(np.float32)) or as a TensorProto .pb, which records bfloat16");
    return s;
  }
  for (const NpyType& t : kNpyTypes) {
    if (code != t.code) continue;
    const bool one_byte = ir::DataTypeBits(t.dtype) == 8;
    if (order == '<' || order == '=' || (order == '|' && one_byte) || (order == '>' && one_byte)) return t.dtype;
    if (order == '>') {
      Status s = NpyError(path, fmt::format("dtype '{}' is big-endian; vigil reads little-endian data", descr));
      s.WithFix("convert: x.astype(x.dtype.newbyteorder('<')) before np.save");
      return s;
    }
    return NpyError(path, fmt::format("dtype '{}' has byte order '{}'; expected '<' or '|'", descr, order));
  }
  Status s = NpyError(path, fmt::format("dtype '{}' is not supported", descr));
  s.WithFact("supported", "bool, int8/16/32/64, uint8/16/32/64, float16/32/64, complex64/128, bfloat16");
  return s;
}

std::string_view NpyDescr(DataType dtype) {
  switch (dtype) {
    case DataType::kBool: return "|b1";
    case DataType::kInt8: return "|i1";
    case DataType::kUint8: return "|u1";
    case DataType::kInt16: return "<i2";
    case DataType::kInt32: return "<i4";
    case DataType::kInt64: return "<i8";
    case DataType::kUint16: return "<u2";
    case DataType::kUint32: return "<u4";
    case DataType::kUint64: return "<u8";
    case DataType::kFloat16: return "<f2";
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat64: return "<f8";
    case DataType::kComplex64: return "<c8";
    case DataType::kComplex128: return "<c16";
    case DataType::kBfloat16: return "bfloat16";
    default: return {};
  }
}

// ---- Header dict ---------------------------------------------------------------

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// A strict parser of the Python literal numpy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  Status Parse(NpyHeader* out) {
    bool has_descr = false, has_fortran = false, has_shape = false;
    SkipSpace();
    VIGIL_RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      std::string key;
      VIGIL_RETURN_IF_ERROR(ParseString(&key));
      SkipSpace();
      VIGIL_RETURN_IF_ERROR(Expect(':'));
      SkipSpace();
      if (key == "descr" && !has_descr) {
        has_descr = true;
        VIGIL_RETURN_IF_ERROR(ParseString(&out->descr));
      } else if (key == "fortran_order" && !has_fortran) {
        has_fortran = true;
        VIGIL_RETURN_IF_ERROR(ParseBool(&out->fortran_order));
      } else if (key == "shape" && !has_shape) {
        has_shape = true;
        VIGIL_RETURN_IF_ERROR(ParseShape(&out->shape));
      } else {
        return Error(fmt::format("unexpected key '{}' (a header holds 'descr', 'fortran_order' and 'shape' once each)",
                                 key));
      }
      SkipSpace();
      if (Peek() == ',') ++pos_;
      else if (Peek() != '}') return Error("expected ',' or '}'");
    }
    ++pos_;
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the dict");
    if (!has_descr || !has_fortran || !has_shape) {
      return Error(fmt::format("the dict lacks '{}'", !has_descr ? "descr" : !has_fortran ? "fortran_order" : "shape"));
    }
    return Status::Ok();
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  Status Error(std::string what) const {
    Status s = NpyError(path_, fmt::format("bad .npy header at character {}: {}", pos_, what));
    s.WithFact("header", std::string(text_.substr(0, 200)));
    s.WithCause("the file was not written by numpy, or its header was edited or corrupted");
    s.WithFix("write it again with np.save(path, array)");
    return s;
  }
  Status Expect(char c) {
    if (Peek() != c) return Error(fmt::format("expected '{}'", c));
    ++pos_;
    return Status::Ok();
  }
  Status ParseString(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos || end - pos_ > 64) return Error("unterminated or overlong string");
    *out = std::string(text_.substr(pos_ + 1, end - pos_ - 1));
    if (out->find('\\') != std::string::npos) return Error("escapes in strings are not allowed");
    pos_ = end + 1;
    return Status::Ok();
  }
  Status ParseBool(bool* out) {
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        *out = value;
        return Status::Ok();
      }
    }
    return Error("expected True or False");
  }
  Status ParseInt(int64_t* out) {
    const size_t start = pos_;
    uint64_t v = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (pos_ - start >= 18) return Error("a dim with more than 18 digits");
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
    }
    if (pos_ == start) return Error("expected a non-negative integer dim");
    *out = static_cast<int64_t>(v);
    return Status::Ok();
  }
  Status ParseShape(std::vector<int64_t>* out) {
    VIGIL_RETURN_IF_ERROR(Expect('('));
    SkipSpace();
    while (Peek() != ')') {
      if (out->size() >= kMaxRank) return Error(fmt::format("more than {} dims", kMaxRank));
      VIGIL_RETURN_IF_ERROR(ParseInt(&out->emplace_back()));
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        SkipSpace();
      } else if (Peek() != ')') {
        return Error("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return Status::Ok();
  }

  std::string_view text_;
  const std::string& path_;
  size_t pos_ = 0;
};

// ---- Reading ---------------------------------------------------------------

struct NpyLayout {
  NpyHeader header;
  DataType dtype = DataType::kUndefined;
  size_t data_offset = 0;
  uint64_t data_bytes = 0;
};

Status ParsePreamble(const std::string& path, std::span<const uint8_t> b, size_t* header_start, size_t* header_len) {
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, 6) != 0) {
    Status s = NpyError(path, "not a .npy file (no \\x93NUMPY magic)");
    s.WithFix("write it with np.save(path, array); np.savez archives (.npz) and raw binary files are not .npy");
    return s;
  }
  const uint8_t major = b[6], minor = b[7];
  if ((major < 1 || major > 3) || minor != 0) {
    return NpyError(path, fmt::format(".npy format version {}.{} is not supported (1.0, 2.0 and 3.0 are)", major, minor));
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  if (b.size() < 8 + len_bytes) return NpyError(path, "the file ends inside the header length");
  uint64_t len = 0;
  for (size_t i = 0; i < len_bytes; ++i) len |= uint64_t{b[8 + i]} << (8 * i);
  *header_start = 8 + len_bytes;
  if (len > kMaxHeaderBytes) return NpyError(path, fmt::format("the header claims {} bytes, more than 1 MiB", len));
  if (len > b.size() - *header_start) {
    return NpyError(path, fmt::format("the header claims {} bytes but only {} follow", len, b.size() - *header_start));
  }
  *header_len = static_cast<size_t>(len);
  return Status::Ok();
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? "," : "", shape[i]);
  return s + "]";
}

// The data is not what the header says, and its value count is an image of
// another size under an image-shaped header (seed 003's buffer saved with
// the model's shape): that, on the first line.
std::optional<Status> OtherImageInFile(const std::string& path, const NpyLayout& l, uint64_t elems,
                                       uint64_t present) {
  const uint64_t elem_bytes = static_cast<uint64_t>(std::max(ir::DataTypeBits(l.dtype) / 8, 1));
  const std::optional<ImageShape> image = ImageOf(l.header.shape);
  if (!image || present % elem_bytes != 0) return std::nullopt;
  const uint64_t values = present / elem_bytes;
  const std::string size = OtherImageSize(*image, values);
  if (size.empty()) return std::nullopt;
  Status s = NpyError(path, fmt::format("the data holds {} {} values = {} × {}, a {} image, but the header says "
                                        "{} ({} values)",
                                        values, ir::DataTypeName(l.dtype), image->channels, size, size,
                                        ShapeText(l.header.shape), elems));
  s.WithFact("expected bytes", std::to_string(l.data_bytes)).WithFact("got bytes", std::to_string(present));
  s.WithCause(fmt::format("the pixels of a {} image written under the model's shape", size),
              "the value count matches a common image size, not the header's");
  s.WithFix(fmt::format("resize the image to {} × {} before saving it", image->width, image->height));
  return s;
}

Status CheckDataSize(const std::string& path, const NpyLayout& l, uint64_t elems, uint64_t present) {
  if (present != l.data_bytes) {
    if (std::optional<Status> image = OtherImageInFile(path, l, elems, present)) return std::move(*image);
  }
  if (present < l.data_bytes) {
    Status s = NpyError(path, fmt::format("the data is {} bytes short: shape {} of {} needs {} bytes, the file "
                                          "holds {}",
                                          l.data_bytes - present, ShapeText(l.header.shape),
                                          ir::DataTypeName(l.dtype), l.data_bytes, present));
    s.WithFact("expected bytes", std::to_string(l.data_bytes)).WithFact("got bytes", std::to_string(present));
    s.WithCause("the file is truncated (an interrupted copy or download, or a write that did not finish)");
    return s;
  }
  if (present > l.data_bytes) {
    Status s = NpyError(path, fmt::format("{} bytes follow the data that shape {} needs ({} elements, {} bytes)",
                                          present - l.data_bytes,
                                          ShapeText(l.header.shape), elems,
                                          l.data_bytes));
    s.WithFact("expected bytes", std::to_string(l.data_bytes)).WithFact("got bytes", std::to_string(present));
    s.WithCause("several arrays saved into one file (np.save called repeatedly on one handle), or a header "
                "edited to another shape");
    s.WithFix("save one array per file with np.save(path, array)");
    return s;
  }
  return Status::Ok();
}

Result<NpyLayout> ParseNpy(const std::string& path, std::span<const uint8_t> b) {
  size_t start = 0, len = 0;
  VIGIL_RETURN_IF_ERROR(ParsePreamble(path, b, &start, &len));
  NpyLayout l;
  const std::string_view text(reinterpret_cast<const char*>(b.data() + start), len);
  VIGIL_RETURN_IF_ERROR(HeaderParser(text, path).Parse(&l.header));
  VIGIL_ASSIGN_OR_RETURN(l.dtype, ParseDescr(path, l.header.descr));
  if (l.header.fortran_order) {
    Status s = NpyError(path, "the array is in Fortran (column-major) order; vigil reads C order only");
    s.WithCause("the array is a transposed view, or was made with order='F'");
    s.WithFix("save a C-ordered copy: np.save(path, np.ascontiguousarray(x))");
    return s;
  }
  std::optional<uint64_t> elems = ElementCount(l.header.shape);
  std::optional<uint64_t> bytes = elems ? ir::DataTypeStorageBytes(l.dtype, *elems) : std::nullopt;
  if (!bytes) {
    Status s = NpyError(path, fmt::format("the element count of shape {} overflows 64 bits", ShapeText(l.header.shape)));
    s.WithCause("a corrupted or hand-edited header");
    return s;
  }
  l.data_offset = start + len;
  l.data_bytes = *bytes;
  VIGIL_RETURN_IF_ERROR(CheckDataSize(path, l, *elems, b.size() - l.data_offset));
  return l;
}

// A tensor viewing `bytes` inside the mapping, or an aligned copy when the
// data is not aligned for its element type.
Result<Tensor> TensorOver(DataType dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes,
                          std::shared_ptr<const void> owner) {
  const size_t align = std::max<size_t>(1, static_cast<size_t>(ir::DataTypeBits(dtype) / 8));
  const uintptr_t address = reinterpret_cast<uintptr_t>(bytes.data());
  if (bytes.data() != nullptr && address % std::min<size_t>(align, 8) == 0) {
    return Tensor::Shared(dtype, std::move(shape), const_cast<uint8_t*>(bytes.data()), std::move(owner));
  }
  VIGIL_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, std::move(shape)));
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), std::min(bytes.size(), t.byte_size()));
  return t;
}

Result<std::shared_ptr<const MappedFile>> OpenInput(const std::string& path) {
  auto file = MappedFile::Open(path);
  if (!file.ok()) {
    Status s = file.status();
    s.WithContext("cannot read tensor file");
    return s;
  }
  return file;
}

Status WriteWhole(const std::string& path, std::string_view head, std::span<const uint8_t> body) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return EnvironmentError("cannot write '{}': {}", path, std::strerror(errno));
  }
  bool ok = std::fwrite(head.data(), 1, head.size(), f) == head.size();
  if (ok && !body.empty()) ok = std::fwrite(body.data(), 1, body.size(), f) == body.size();
  const int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return EnvironmentError("cannot write '{}': {}", path, std::strerror(saved ? saved : errno));
  return Status::Ok();
}

std::string NpyHeaderText(std::string_view descr, const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);
  else if (shape.size() == 1) dims.pop_back();
  return fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
}

Status WriteNpyUnguarded(const std::string& path, const Tensor& tensor) {
  const std::string_view descr = NpyDescr(tensor.dtype());
  if (descr.empty()) {
    Status s = UnsupportedError("cannot write '{}': dtype {} has no .npy form", path, ir::DataTypeName(tensor.dtype()));
    s.WithFix("write a TensorProto .pb instead");
    return s;
  }
  std::string header = NpyHeaderText(descr, tensor.shape());
  // Pad with spaces so that the data starts at a multiple of 64 bytes, ending in '\n' (as numpy does).
  const size_t preamble = header.size() + 1 + 10 > 65535 ? 12 : 10;
  const size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  std::string head(kMagic, 6);
  head.push_back(static_cast<char>(preamble == 10 ? 1 : 2));
  head.push_back(0);
  const size_t len = header.size();
  for (size_t i = 0; i < preamble - 8; ++i) head.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  head += header;
  return WriteWhole(path, head, tensor.bytes());
}

Result<TensorFile> ParseTensorProtoUnguarded(std::span<const uint8_t> bytes, const std::string& path,
                                             std::shared_ptr<const void> owner) {
  VIGIL_ASSIGN_OR_RETURN(ir::Tensor c, onnx::ReadTensorProtoBytes(bytes, path, std::move(owner)));
  if (c.dtype == DataType::kString || ir::DataTypeBits(c.dtype) == 0) {
    Status s = UnsupportedError("cannot read '{}': tensor '{}' has dtype {}; vigil reads only fixed-size element "
                                "types",
                                path, c.name, ir::DataTypeName(c.dtype));
    return s.WithFact("file", path);
  }
  VIGIL_ASSIGN_OR_RETURN(Tensor t, TensorOver(c.dtype, c.dims, c.bytes, c.keep_alive));
  return TensorFile{c.name, std::move(t)};
}

}  // namespace

Result<TensorFile> ParseNpyBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                 std::shared_ptr<const void> owner) {
  try {
    VIGIL_ASSIGN_OR_RETURN(NpyLayout l, ParseNpy(display_path, bytes));
    std::span<const uint8_t> data = bytes.subspan(l.data_offset, static_cast<size_t>(l.data_bytes));
    VIGIL_ASSIGN_OR_RETURN(Tensor t, TensorOver(l.dtype, std::move(l.header.shape), data, std::move(owner)));
    return TensorFile{std::string(), std::move(t)};
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", display_path);
  }
}

Result<TensorFile> ReadNpy(const std::string& path) {
  try {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, OpenInput(path));
    return ParseNpyBytes(file->bytes(), path, file);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", path);
  }
}

Status WriteNpy(const std::string& path, const Tensor& tensor) {
  try {
    return WriteNpyUnguarded(path, tensor);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot write '{}': out of memory", path);
  }
}

Result<TensorFile> ParseTensorProtoBytes(std::span<const uint8_t> bytes, const std::string& display_path,
                                         std::shared_ptr<const void> owner) {
  try {
    return ParseTensorProtoUnguarded(bytes, display_path, std::move(owner));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", display_path);
  }
}

Result<TensorFile> ReadTensorProto(const std::string& path) {
  try {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, OpenInput(path));
    return ParseTensorProtoBytes(file->bytes(), path, file);
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", path);
  }
}

Status WriteTensorProto(const std::string& path, const Tensor& tensor, const std::string& name) {
  if (ir::DataTypeBits(tensor.dtype()) == 0) {
    return UnsupportedError("cannot write '{}': dtype {} has no fixed element size", path,
                            ir::DataTypeName(tensor.dtype()));
  }
  try {
    return WriteWhole(path, onnx::EncodeTensorProto(name, tensor.dtype(), tensor.shape(), tensor.bytes()), {});
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot write '{}': out of memory", path);
  }
}

Result<TensorFile> ReadTensorFile(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return ReadNpy(path);
  if (ext == ".pb") return ReadTensorProto(path);
  Status s = InvalidInputError("cannot read '{}': tensor files are .npy or .pb, not '{}'", path,
                               ext.empty() ? "(no extension)" : ext);
  s.WithFact("file", path);
  if (ext == ".npz") s.WithFix("extract one array: np.save('x.npy', np.load(path)['x'])");
  if (ext == ".bin" || ext == ".raw" || ext.empty()) {
    s.WithCause("a raw binary file has no dtype or shape, so it cannot be checked against the model");
  }
  s.WithFix("save the array with np.save(path, x) (.npy) or as an onnx.TensorProto (.pb)");
  return s;
}

}  // namespace vigil::runtime
