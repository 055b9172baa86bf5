// TensorProto and SparseTensorProto. A tensor is read in two steps: one pass
// collects and counts its fields, then the counts are checked against the
// dims and dtype before anything sized by the file is allocated. Element
// bytes stay in place where the file already holds them in final form
// (raw_data, packed float_data/double_data, external data); varint fields are
// decoded by a second pass into an owned buffer whose size is already known.
#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstring>
#include <optional>

#include "base/image_sizes.h"
#include "onnx/external_data.h"
#include "onnx/readers.h"

namespace vigil::onnx {
namespace {

using ir::DataType;
using ir::Tensor;
using wire::Field;
using wire::WireType;

// The typed data fields of TensorProto (onnx.proto field numbers).
constexpr uint32_t kFloatData = 4, kInt32Data = 5, kInt64Data = 7, kDoubleData = 10, kUint64Data = 11;
constexpr std::array<uint32_t, 5> kTypedFields = {kFloatData, kInt32Data, kInt64Data, kDoubleData, kUint64Data};

std::string_view TypedFieldName(uint32_t number) {
  switch (number) {
    case kFloatData: return "float_data";
    case kInt32Data: return "int32_data";
    case kInt64Data: return "int64_data";
    case kDoubleData: return "double_data";
    case kUint64Data: return "uint64_data";
  }
  return "?";
}

// How one element of a typed field travels when unpacked.
WireType ElementWireType(uint32_t number) {
  if (number == kFloatData) return WireType::kFixed32;
  if (number == kDoubleData) return WireType::kFixed64;
  return WireType::kVarint;
}

// What the file holds for one typed field, summed over all its occurrences.
struct TypedData {
  uint64_t count = 0;        // entries present
  uint32_t occurrences = 0;  // fields seen (protobuf allows splitting a repeated field)
  bool any_unpacked = false;
  Bytes packed;              // payload of the last packed occurrence
  uint64_t offset = 0;       // of the first occurrence
};

struct TensorFields {
  int32_t data_type = 0;
  bool has_data_type = false;
  bool has_raw = false;
  Bytes raw;
  uint64_t raw_offset = 0;
  std::array<TypedData, kTypedFields.size()> typed;
  std::vector<std::pair<std::string, std::string>> external;
  int32_t data_location = 0;
  bool has_segment = false;
  uint64_t segment_offset = 0;
};

size_t TypedIndex(uint32_t number) {
  return static_cast<size_t>(std::find(kTypedFields.begin(), kTypedFields.end(), number) - kTypedFields.begin());
}

std::string Describe(const Tensor& t) { return t.name.empty() ? "unnamed tensor" : fmt::format("tensor '{}'", t.name); }

Status CountTyped(const ReadContext& ctx, const Field& f, TypedData* t) {
  if (t->occurrences == 0) t->offset = f.offset;
  ++t->occurrences;
  const WireType elem = ElementWireType(f.number);
  const std::string_view name = TypedFieldName(f.number);
  if (f.type == elem) {
    ++t->count;
    t->any_unpacked = true;
    return Status::Ok();
  }
  VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, name));
  if (elem == WireType::kVarint) {
    auto n = wire::CountPackedVarints(f.payload, ctx.OffsetOf(f.payload));
    if (!n.ok()) return ctx.Wrap(n.status());
    t->count += *n;
  } else {
    const size_t width = elem == WireType::kFixed32 ? 4 : 8;
    if (f.payload.size() % width != 0) {
      return ctx.Error(f.offset, "packed {} has {} bytes, not a multiple of {}", name, f.payload.size(), width);
    }
    t->count += f.payload.size() / width;
  }
  t->packed = f.payload;
  return Status::Ok();
}

Status ReadExternalEntry(ReadContext& ctx, const Field& f, TensorFields* fields) {
  std::vector<std::pair<std::string, std::string>>& entries = fields->external;
  return ReadRepeatedMessage(ctx, f, "external_data", &entries, ReadStringEntry);
}

// Pass one: every field of the TensorProto, counting typed data.
Status CollectFields(ReadContext& ctx, Bytes bytes, Tensor* out, TensorFields* fields) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1: VIGIL_RETURN_IF_ERROR(AppendInt64s(ctx, f, "dims", ctx.limits.max_rank, &out->dims)); break;
      case 2:
        VIGIL_RETURN_IF_ERROR(ReadInt32(ctx, f, "data_type", &fields->data_type));
        fields->has_data_type = true;
        break;
      case 3:
        fields->has_segment = true;
        fields->segment_offset = f.offset;
        break;
      case 6: VIGIL_RETURN_IF_ERROR(AppendString(ctx, f, "string_data", &out->strings)); break;
      case 8: VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "name", &out->name)); break;
      case 9:
        VIGIL_RETURN_IF_ERROR(ExpectWireType(ctx, f, WireType::kLen, "raw_data"));
        fields->has_raw = true;  // protobuf semantics: the last occurrence wins
        fields->raw = f.payload;
        fields->raw_offset = f.offset;
        break;
      case 13: VIGIL_RETURN_IF_ERROR(ReadExternalEntry(ctx, f, fields)); break;
      case 14: VIGIL_RETURN_IF_ERROR(ReadInt32(ctx, f, "data_location", &fields->data_location)); break;
      case kFloatData:
      case kInt32Data:
      case kInt64Data:
      case kDoubleData:
      case kUint64Data: VIGIL_RETURN_IF_ERROR(CountTyped(ctx, f, &fields->typed[TypedIndex(f.number)])); break;
      default: break;  // doc_string, metadata_props, fields from newer ONNX versions
    }
  }
  return Status::Ok();
}

Status CheckDtypeAndDims(const ReadContext& ctx, uint64_t offset, const TensorFields& fields, Tensor* out,
                         uint64_t* elements) {
  if (!fields.has_data_type || fields.data_type == 0) {
    return ctx.Error(offset, "{} has no data_type", Describe(*out));
  }
  if (!ir::IsKnownDataType(fields.data_type)) {
    return ctx.MakeAt(ErrorCode::kUnsupported, offset,
                      fmt::format("{} has data_type {}, which vigil does not know", Describe(*out),
                                  fields.data_type));
  }
  out->dtype = static_cast<DataType>(fields.data_type);
  for (size_t i = 0; i < out->dims.size(); ++i) {
    if (out->dims[i] < 0) {
      return ctx.Error(offset, "{} has negative dim {} at axis {} in dims {}", Describe(*out), out->dims[i], i,
                       DimsToString(out->dims));
    }
  }
  std::optional<uint64_t> n = out->ElementCount();
  if (!n) return ctx.Error(offset, "{}: the product of dims {} overflows", Describe(*out), DimsToString(out->dims));
  if (*n > ctx.limits.max_elements) {
    return ctx.Error(offset, "{} has {} elements (dims {}), more than the limit of {}", Describe(*out), *n,
                     DimsToString(out->dims), ctx.limits.max_elements);
  }
  *elements = *n;
  return Status::Ok();
}

// Whether `number` may hold elements of `dtype` (onnx.proto's rules).
bool TypedFieldFits(uint32_t number, DataType dtype) {
  switch (number) {
    case kFloatData: return dtype == DataType::kFloat32 || dtype == DataType::kComplex64;
    case kDoubleData: return dtype == DataType::kFloat64 || dtype == DataType::kComplex128;
    case kInt64Data: return dtype == DataType::kInt64;
    case kUint64Data: return dtype == DataType::kUint32 || dtype == DataType::kUint64;
    case kInt32Data:
      return ir::DataTypeBits(dtype) > 0 && ir::DataTypeBits(dtype) <= 32 && dtype != DataType::kFloat32 &&
             dtype != DataType::kUint32;
  }
  return false;
}

// Entries a typed field needs for `n` elements: complex types take two
// floats or doubles per element; 4-bit types pack two elements per int32_data
// entry, as onnx.proto specifies.
uint64_t EntriesNeeded(uint32_t number, DataType dtype, uint64_t n) {
  if (dtype == DataType::kComplex64 || dtype == DataType::kComplex128) return 2 * n;
  if (number == kInt32Data && ir::DataTypeBits(dtype) == 4) return (n + 1) / 2;
  return n;
}

// raw_data of another size than the dims: the likely reason first (the
// pixels of an image of another size, more data than the dims, or less).
Status RawSizeError(const ReadContext& ctx, const TensorFields& fields, const Tensor& t, uint64_t need) {
  const uint64_t have = fields.raw.size();
  const uint64_t elem_bytes = static_cast<uint64_t>(std::max(ir::DataTypeBits(t.dtype) / 8, 1));
  const std::optional<ImageShape> image = ImageOf(t.dims);
  const std::string size = image && have % elem_bytes == 0 ? OtherImageSize(*image, have / elem_bytes) : "";
  if (!size.empty()) {
    Status s = ctx.Error(fields.raw_offset, "{}: raw_data holds {} {} values = {} × {}, a {} image, but the dims "
                                            "say {} ({} bytes)",
                         Describe(t), have / elem_bytes, ir::DataTypeName(t.dtype), image->channels, size, size,
                         DimsToString(t.dims), need);
    s.WithCause(fmt::format("the pixels of a {} image written under the model's shape", size),
                "the value count matches a common image size, not the dims");
    s.WithFix(fmt::format("resize the image to {} × {} before saving it", image->width, image->height));
    return s;
  }
  Status s = ctx.Error(fields.raw_offset, "{}: raw_data has {} bytes, dims {} of {} need {}", Describe(t), have,
                       DimsToString(t.dims), ir::DataTypeName(t.dtype), need);
  if (have > need) {
    s.WithCause("the data and the dims were written for different tensors (the dims edited, or raw_data of "
                "another array)",
                fmt::format("raw_data is {} bytes longer than the dims need", have - need));
    s.WithFix("write the tensor again from one array, e.g. onnx.numpy_helper.from_array(x)");
  } else {
    s.WithCause("the file is truncated (an interrupted copy or download)",
                fmt::format("raw_data is {} bytes short", need - have));
    s.WithFix("copy or write the file again");
  }
  return s;
}

Status UseRaw(const ReadContext& ctx, const TensorFields& fields, uint64_t n, Tensor* out) {
  if (out->dtype == DataType::kString) {
    return ctx.Error(fields.raw_offset, "{} is a string tensor in raw_data; strings must use string_data",
                     Describe(*out));
  }
  const uint64_t need = *ir::DataTypeStorageBytes(out->dtype, n);
  if (fields.raw.size() != need) return RawSizeError(ctx, fields, *out, need);
  out->storage = Tensor::Storage::kRawInPlace;
  out->bytes = fields.raw;
  out->keep_alive = ctx.owner;
  return Status::Ok();
}

// Pass two: decodes every occurrence of field `number` into `buffer`, each
// entry stored as `width` little-endian bytes (truncating, as the spec packs
// narrow types into int32_data).
Status DecodeTyped(const ReadContext& ctx, Bytes bytes, uint32_t number, size_t width, std::vector<uint8_t>* buffer) {
  size_t at = 0;
  auto put = [&](uint64_t v) {
    if (at + width > buffer->size()) return false;  // counts were checked; defensive
    for (size_t i = 0; i < width; ++i) (*buffer)[at + i] = static_cast<uint8_t>(v >> (8 * i));
    at += width;
    return true;
  };
  const WireType elem = ElementWireType(number);
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number != number) continue;
    bool fits = true;
    if (f.type == elem) {
      fits = put(f.value);
    } else if (elem == WireType::kVarint) {
      size_t pos = 0;
      while (fits && pos < f.payload.size()) {
        uint64_t v = 0;
        VIGIL_RETURN_IF_ERROR(ctx.Wrap(wire::DecodeVarint(f.payload, &pos, ctx.OffsetOf(f.payload), &v)));
        fits = put(v);
      }
    } else {
      const size_t w = elem == WireType::kFixed32 ? 4 : 8;
      for (size_t i = 0; fits && i + w <= f.payload.size(); i += w) {
        fits = put(w == 4 ? wire::LoadLe32(f.payload.data() + i) : wire::LoadLe64(f.payload.data() + i));
      }
    }
    if (!fits) return ctx.Error(f.offset, "{} holds more entries than counted", TypedFieldName(number));
  }
  if (at != buffer->size()) return ctx.Error(ctx.OffsetOf(bytes), "{} holds fewer entries than counted",
                                             TypedFieldName(number));
  return Status::Ok();
}

Status UseTyped(const ReadContext& ctx, Bytes bytes, uint32_t number, const TypedData& typed, uint64_t n,
                Tensor* out) {
  const std::string_view name = TypedFieldName(number);
  if (!TypedFieldFits(number, out->dtype)) {
    return ctx.Error(typed.offset, "{} has dtype {} but stores its data in {}", Describe(*out),
                     ir::DataTypeName(out->dtype), name);
  }
  const uint64_t need = EntriesNeeded(number, out->dtype, n);
  if (typed.count != need) {
    return ctx.Error(typed.offset, "{}: {} has {} entries, dims {} of {} need {}", Describe(*out), name,
                     typed.count, DimsToString(out->dims), ir::DataTypeName(out->dtype), need);
  }
  const uint64_t size = *ir::DataTypeStorageBytes(out->dtype, n);
  // One packed run of fixed-width little-endian values is already the final layout.
  const bool in_place = std::endian::native == std::endian::little && typed.occurrences == 1 &&
                        !typed.any_unpacked && (number == kFloatData || number == kDoubleData);
  if (in_place) {
    out->storage = Tensor::Storage::kTypedInPlace;
    out->bytes = typed.packed;
    out->keep_alive = ctx.owner;
    return Status::Ok();
  }
  // Safe to allocate: `need` entries are present in the file, each at least one byte.
  auto buffer = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(size));
  const size_t width = need == 0 ? 0 : static_cast<size_t>(size / need);
  VIGIL_RETURN_IF_ERROR(DecodeTyped(ctx, bytes, number, width, buffer.get()));
  out->storage = Tensor::Storage::kTypedDecoded;
  out->bytes = std::span<const uint8_t>(buffer->data(), buffer->size());
  out->keep_alive = std::move(buffer);
  return Status::Ok();
}

Status UseStrings(const ReadContext& ctx, uint64_t offset, uint64_t n, Tensor* out) {
  if (out->dtype != DataType::kString) {
    return ctx.Error(offset, "{} has dtype {} but stores its data in string_data", Describe(*out),
                     ir::DataTypeName(out->dtype));
  }
  if (out->strings.size() != n) {
    return ctx.Error(offset, "{}: string_data has {} entries, dims {} need {}", Describe(*out), out->strings.size(),
                     DimsToString(out->dims), n);
  }
  out->storage = Tensor::Storage::kStrings;
  return Status::Ok();
}

// Strict decimal: external_data offsets and lengths are digits only.
std::optional<uint64_t> ParseDecimal(const std::string& s) {
  uint64_t v = 0;
  if (s.empty() || s.size() > 20) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

Status UseExternal(const ReadContext& ctx, uint64_t offset, const TensorFields& fields, uint64_t n, Tensor* out) {
  std::optional<uint64_t> file_offset = 0, length;
  bool has_location = false;
  for (const auto& [key, value] : fields.external) {
    if (key == "location") {
      out->external_location = value;
      has_location = true;
    } else if (key == "offset" || key == "length") {
      std::optional<uint64_t> v = ParseDecimal(value);
      if (!v) return ctx.Error(offset, "{}: external_data {} '{}' is not a decimal number", Describe(*out), key, value);
      (key == "offset" ? file_offset : length) = v;
    }  // "checksum" and unknown keys are ignored
  }
  if (!has_location) return ctx.Error(offset, "{}: external data has no 'location'", Describe(*out));
  if (out->dtype == DataType::kString) {
    return ctx.Error(offset, "{}: string tensors cannot use external data", Describe(*out));
  }
  out->storage = Tensor::Storage::kExternal;
  if (ctx.external == nullptr) return Status::Ok();  // the caller asked not to load it
  std::shared_ptr<const MappedFile> file;
  Status s = ctx.external->Slice(out->external_location, *file_offset, length,
                                 *ir::DataTypeStorageBytes(out->dtype, n), &out->bytes, &file);
  if (!s.ok()) {
    s.WithContext(fmt::format("{}: {}: external data '{}'", ctx.Path(), Describe(*out), out->external_location));
    s.WithFact("tensor", out->name).WithFact("location", out->external_location);
    s.WithFact("byte offset", std::to_string(offset));
    return s;
  }
  out->keep_alive = std::move(file);
  return Status::Ok();
}

// Picks the one data field the tensor uses and checks it against dims and dtype.
Status AttachData(const ReadContext& ctx, Bytes bytes, uint64_t offset, const TensorFields& fields, uint64_t n,
                  Tensor* out) {
  if (fields.data_location == 1) return UseExternal(ctx, offset, fields, n, out);
  if (fields.data_location != 0) {
    return ctx.Error(offset, "{} has data_location {}; only 0 (default) and 1 (external) exist", Describe(*out),
                     fields.data_location);
  }
  std::vector<std::string_view> present;
  if (fields.has_raw) present.push_back("raw_data");
  if (!out->strings.empty()) present.push_back("string_data");
  for (uint32_t number : kTypedFields) {
    if (fields.typed[TypedIndex(number)].count > 0) present.push_back(TypedFieldName(number));
  }
  if (present.size() > 1) {
    return ctx.Error(offset, "{} sets both {} and {}; a tensor uses one data field", Describe(*out), present[0],
                     present[1]);
  }
  if (fields.has_raw) return UseRaw(ctx, fields, n, out);
  if (!out->strings.empty()) return UseStrings(ctx, offset, n, out);
  for (uint32_t number : kTypedFields) {
    const TypedData& typed = fields.typed[TypedIndex(number)];
    if (typed.count > 0) return UseTyped(ctx, bytes, number, typed, n, out);
  }
  if (n != 0) {
    return ctx.Error(offset, "{} has dims {} ({} elements) but no data", Describe(*out), DimsToString(out->dims), n);
  }
  out->storage = Tensor::Storage::kEmpty;
  return Status::Ok();
}

// A sparse tensor's indices: int64, [NNZ] (linear) or [NNZ, rank], each in range.
Status CheckSparseIndices(const ReadContext& ctx, uint64_t offset, const ir::SparseTensor& st, uint64_t nnz,
                          uint64_t dense_count) {
  const Tensor& idx = st.indices;
  const size_t rank = st.dims.size();
  const bool linear = idx.dims.size() == 1 && static_cast<uint64_t>(idx.dims[0]) == nnz;
  const bool coords = idx.dims.size() == 2 && static_cast<uint64_t>(idx.dims[0]) == nnz &&
                      static_cast<uint64_t>(idx.dims[1]) == rank;
  if (idx.dtype != DataType::kInt64 || (!linear && !coords)) {
    return ctx.Error(offset, "sparse tensor indices are {}{}, expected int64[{}] or int64[{},{}]",
                     ir::DataTypeName(idx.dtype), DimsToString(idx.dims), nnz, nnz, rank);
  }
  if (idx.bytes.size() != nnz * (linear ? 1 : rank) * 8) return Status::Ok();  // external data not loaded
  for (uint64_t i = 0; i < nnz * (linear ? 1 : rank); ++i) {
    const int64_t v = static_cast<int64_t>(wire::LoadLe64(idx.bytes.data() + 8 * i));
    const uint64_t bound = linear ? dense_count : static_cast<uint64_t>(st.dims[i % rank]);
    if (v < 0 || static_cast<uint64_t>(v) >= bound) {
      return ctx.Error(offset, "sparse tensor index #{} is {}, outside [0, {})", i, v, bound);
    }
  }
  return Status::Ok();
}

Status CheckSparse(const ReadContext& ctx, uint64_t offset, bool has_values, bool has_indices,
                   const ir::SparseTensor& st) {
  if (!has_values || !has_indices) {
    return ctx.Error(offset, "sparse tensor '{}' lacks {}", st.values.name, has_values ? "indices" : "values");
  }
  Tensor dense;
  dense.dims = st.dims;
  for (int64_t d : st.dims) {
    if (d < 0) return ctx.Error(offset, "sparse tensor '{}' has negative dims {}", st.values.name, DimsToString(st.dims));
  }
  std::optional<uint64_t> dense_count = dense.ElementCount();
  if (!dense_count) {
    return ctx.Error(offset, "sparse tensor '{}': the product of dims {} overflows", st.values.name,
                     DimsToString(st.dims));
  }
  if (st.values.dims.size() != 1) {
    return ctx.Error(offset, "sparse tensor '{}': values must be 1-D, got dims {}", st.values.name,
                     DimsToString(st.values.dims));
  }
  const uint64_t nnz = static_cast<uint64_t>(st.values.dims[0]);
  if (nnz > *dense_count) {
    return ctx.Error(offset, "sparse tensor '{}' has {} values but dims {} hold only {}", st.values.name, nnz,
                     DimsToString(st.dims), *dense_count);
  }
  return CheckSparseIndices(ctx, offset, st, nnz, *dense_count);
}

}  // namespace

Status ReadSparseTensor(ReadContext& ctx, Bytes bytes, ir::SparseTensor* out) {
  const uint64_t offset = ctx.OffsetOf(bytes);
  bool has_values = false, has_indices = false;
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    switch (f.number) {
      case 1:
        out->values = Tensor();  // a repeated singular message field: the last one wins
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "values", &out->values, ReadTensor));
        has_values = true;
        break;
      case 2:
        out->indices = Tensor();
        VIGIL_RETURN_IF_ERROR(ReadMessage(ctx, f, "indices", &out->indices, ReadTensor));
        has_indices = true;
        break;
      case 3: VIGIL_RETURN_IF_ERROR(AppendInt64s(ctx, f, "dims", ctx.limits.max_rank, &out->dims)); break;
      default: break;
    }
  }
  return CheckSparse(ctx, offset, has_values, has_indices, *out);
}

Status ReadTensor(ReadContext& ctx, Bytes bytes, ir::Tensor* out) {
  const uint64_t offset = ctx.OffsetOf(bytes);
  TensorFields fields;
  VIGIL_RETURN_IF_ERROR(CollectFields(ctx, bytes, out, &fields));
  uint64_t n = 0;
  VIGIL_RETURN_IF_ERROR(CheckDtypeAndDims(ctx, offset, fields, out, &n));
  if (fields.has_segment) {
    return ctx.MakeAt(ErrorCode::kUnsupported, fields.segment_offset,
                      fmt::format("{} is a segment of a larger tensor; vigil does not read segmented tensors",
                                  Describe(*out)));
  }
  return AttachData(ctx, bytes, offset, fields, n, out);
}

}  // namespace vigil::onnx
