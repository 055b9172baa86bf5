// Input validation: every binding is checked against the model's declared
// inputs before any kernel sees data. The checks look only at the binding's
// description (name, dtype, shape, pointer, byte size), never at the bytes, so
// a wrong description cannot make us read past the caller's buffer.
//
// Order of checks: names (unknown, bound twice, too many positional, missing),
// then per input: dtype, negative dims, rank, each dim, symbolic dims across
// inputs, byte size against the shape, null data. The first failure is
// reported, with the causes its evidence supports.
#include "runtime/input_binding.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "base/image_sizes.h"
#include "runtime/tensor.h"

namespace vigil::runtime {
namespace {

using ir::DataType;

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += fmt::format("{}{}", i ? "," : "", dims[i]);
  return s + "]";
}

std::string Given(const InputBinding& b) {
  return fmt::format("{}{}", ir::DataTypeName(b.dtype), DimsString(b.shape));
}

std::string Expected(const ir::ValueInfo& vi) {
  return vi.has_type ? ir::TypeToString(vi.type) : std::string("(any tensor)");
}

// The error every check builds on: InvalidInput naming the input, with the
// expected and given descriptions and where the data came from.
Status InputError(const InputBinding& b, const ir::ValueInfo* vi, std::string summary) {
  Status s(ErrorCode::kInvalidInput, std::move(summary));
  s.WithFact("input", b.name);
  if (vi != nullptr) s.WithFact("expected", Expected(*vi));
  s.WithFact("got", Given(b));
  if (!b.source.empty()) s.WithFact("source", b.source);
  return s;
}

// ---- Names -----------------------------------------------------------------

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

std::vector<const ir::ValueInfo*> ModelOrder(const ModelInputs& m) {
  std::vector<const ir::ValueInfo*> all;
  for (const ir::ValueInfo& vi : m.required) all.push_back(&vi);
  for (const ir::ValueInfo& vi : m.optional) all.push_back(&vi);
  return all;
}

const ir::ValueInfo* FindInput(const ModelInputs& m, const std::string& name) {
  for (const ir::ValueInfo* vi : ModelOrder(m)) {
    if (vi->name == name) return vi;
  }
  return nullptr;
}

std::string ListInputs(const ModelInputs& m) {
  std::string s;
  for (const ir::ValueInfo& vi : m.required) s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", vi.name, Expected(vi));
  for (const ir::ValueInfo& vi : m.optional) {
    s += fmt::format("{}{}: {} (optional)", s.empty() ? "" : ", ", vi.name, Expected(vi));
  }
  return s.empty() ? "(none)" : s;
}

Status UnknownName(const ModelInputs& m, const InputBinding& b) {
  Status s = InvalidInputError("input '{}' is not an input of the model", b.name);
  s.WithFact("input", b.name).WithFact("model inputs", ListInputs(m));
  if (!b.source.empty()) s.WithFact("source", b.source);
  const ir::ValueInfo* best = nullptr;
  size_t best_distance = SIZE_MAX;
  for (const ir::ValueInfo* vi : ModelOrder(m)) {
    const size_t d = EditDistance(b.name, vi->name);
    if (d < best_distance) best = vi, best_distance = d;
  }
  const size_t tolerance = std::max<size_t>(2, b.name.size() / 3);
  if (best != nullptr && best_distance <= tolerance) {
    s.WithCause(fmt::format("a misspelling of '{}'", best->name),
                fmt::format("'{}' differs from '{}' by {} character(s)", b.name, best->name, best_distance));
    s.WithFix(fmt::format("bind it as '{}'", best->name));
  }
  if (m.required.size() + m.optional.size() == 1) {
    s.WithFix("the model has one input: give the file alone (--input FILE) to bind it by position");
  }
  s.WithFix("list the model's inputs with `vigil inspect MODEL`");
  return s;
}

Status BoundTwice(const InputBinding& b, size_t first, size_t second) {
  Status s = InvalidInputError("input '{}' is bound twice (bindings #{} and #{})", b.name, first + 1, second + 1);
  s.WithFact("input", b.name);
  s.WithCause("the same name given twice, or a positional binding that fell on an input also bound by name");
  s.WithFix("give each input once");
  return s;
}

Status TooManyPositional(const ModelInputs& m, size_t positional, size_t free_slots, size_t named) {
  const size_t total = m.required.size() + m.optional.size();
  Status s = InvalidInputError("{} inputs given by position, but the model has {} input{}{}", positional, total,
                               total == 1 ? "" : "s",
                               named ? fmt::format(" and {} of them are bound by name", named) : std::string());
  s.WithFact("expected", fmt::format("at most {} positional input(s)", free_slots));
  s.WithFact("got", std::to_string(positional));
  s.WithFact("model inputs", ListInputs(m));
  s.WithCause("an input file meant for another model, or an extra file on the command line");
  s.WithFix("bind inputs by name (NAME=FILE) to say which file is which");
  return s;
}

Status MissingInput(const ModelInputs& m, const ir::ValueInfo& vi, const std::vector<InputBinding>& bindings) {
  std::string given;
  for (const InputBinding& b : bindings) given += fmt::format("{}'{}'", given.empty() ? "" : ", ", b.name);
  Status s = InvalidInputError("input '{}' is required but not given", vi.name);
  s.WithFact("input", vi.name).WithFact("expected", Expected(vi));
  s.WithFact("given inputs", given.empty() ? "(none)" : given);
  s.WithFact("model inputs", ListInputs(m));
  s.WithFix(fmt::format("add --input {}=FILE", vi.name));
  return s;
}

// Names positional bindings in model order (required first), skipping inputs
// bound by name, and refuses unknown and duplicate names.
Status ResolveNames(const ModelInputs& m, std::vector<InputBinding>& bindings) {
  std::set<std::string> named;
  size_t positional = 0;
  for (const InputBinding& b : bindings) {
    if (b.name.empty()) {
      ++positional;
    } else {
      if (FindInput(m, b.name) == nullptr) return UnknownName(m, b);
      named.insert(b.name);
    }
  }
  std::vector<const ir::ValueInfo*> free;
  for (const ir::ValueInfo* vi : ModelOrder(m)) {
    if (!named.count(vi->name)) free.push_back(vi);
  }
  if (positional > free.size()) return TooManyPositional(m, positional, free.size(), named.size());
  size_t next = 0;
  for (InputBinding& b : bindings) {
    if (b.name.empty()) b.name = free[next++]->name;
  }
  for (size_t i = 0; i < bindings.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (bindings[j].name == bindings[i].name) return BoundTwice(bindings[i], j, i);
    }
  }
  for (const ir::ValueInfo& vi : m.required) {
    if (!named.count(vi.name) && std::none_of(bindings.begin(), bindings.end(),
                                               [&](const InputBinding& b) { return b.name == vi.name; })) {
      return MissingInput(m, vi, bindings);
    }
  }
  return Status::Ok();
}

// ---- dtype -------------------------------------------------------------------

bool IsInteger(DataType t) {
  switch (t) {
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUint8: case DataType::kUint16: case DataType::kUint32: case DataType::kUint64: return true;
    default: return false;
  }
}

// Each cause names the input: it leads the first line.
void AddDtypeCauses(const std::string& name, DataType want, DataType got, Status& s) {
  const std::string_view w = ir::DataTypeName(want), g = ir::DataTypeName(got);
  if (got == DataType::kFloat64 && want == DataType::kFloat32) {
    s.WithCause(fmt::format("input '{}' is float64 where float32 is expected: numpy's default dtype", name),
                "np.array of Python floats, np.random.rand and np.zeros all give float64");
    s.WithFix("convert before saving: x.astype(np.float32)");
  } else if (got == DataType::kInt64 && IsInteger(want)) {
    s.WithCause(fmt::format("input '{}' is int64 where {} is expected: numpy's default integer dtype", name, w),
                "np.array of Python ints gives int64");
    s.WithFix(fmt::format("convert before saving: x.astype(np.{})", w));
  } else if (got == DataType::kUint8 && !IsInteger(want) && want != DataType::kBool) {
    s.WithCause(fmt::format("input '{}' is uint8, raw image pixels; the model expects {}", name, w),
                "decoded images are uint8 in [0, 255]");
    s.WithFix(fmt::format("convert and normalise as the model's preprocessing says, e.g. "
                          "(x.astype(np.{}) / 255)",
                          w));
  } else if (want == DataType::kFloat16 && got == DataType::kFloat32) {
    s.WithCause(fmt::format("input '{}' is float32 for a float16 model: the model was converted to float16, the "
                            "input was not",
                            name));
    s.WithFix("convert the input: x.astype(np.float16)");
  }
  const int wb = ir::DataTypeBits(want), gb = ir::DataTypeBits(got);
  if (wb == gb && wb > 0) {
    s.WithCause(fmt::format("input '{}' is {} where {} is expected, a type of the same size: the bytes may be right "
                            "but the type wrong",
                            name, g, w),
                fmt::format("both are {} bits per element; a reinterpreting cast or a wrong dtype tag "
                            "passes every size check",
                            wb));
  }
  if (s.diagnosis().fixes.empty()) s.WithFix(fmt::format("give the input as {}", w));
}

Status CheckDtype(const ir::ValueInfo& vi, const InputBinding& b) {
  const DataType want = vi.type.elem_type;
  if (want == DataType::kUndefined || want == b.dtype) return Status::Ok();
  Status s = InputError(b, &vi,
                        fmt::format("input '{}' has dtype {}, the model expects {}", b.name,
                                    ir::DataTypeName(b.dtype), ir::DataTypeName(want)));
  AddDtypeCauses(b.name, want, b.dtype, s);
  return s;
}

// ---- Shape -------------------------------------------------------------------

// Whether `given` fits the declared dims, each symbolic or unknown dim
// accepting any size (consistency across inputs is checked separately).
bool Fits(const std::vector<ir::Dim>& want, const std::vector<int64_t>& given, size_t want_from = 0) {
  if (want.size() - want_from != given.size()) return false;
  for (size_t i = 0; i < given.size(); ++i) {
    const ir::Dim& d = want[want_from + i];
    if (d.is_known() && *d.value != given[i]) return false;
  }
  return true;
}

std::vector<int64_t> Permute(const std::vector<int64_t>& v, std::initializer_list<size_t> order) {
  std::vector<int64_t> out;
  for (size_t i : order) out.push_back(v[i]);
  return out;
}

// "[1,224,224,3] looks like an NHWC image; this input is NCHW [1,3,224,224]",
// and the reverse, for rank 4 (and CHW/HWC for rank 3).
void AddLayoutCause(const ir::ValueInfo& vi, const InputBinding& b, Status& s) {
  const std::vector<ir::Dim>& want = vi.type.shape.dims;
  const std::vector<int64_t>& g = b.shape;
  const std::string expected = ir::ShapeToString(vi.type.shape);
  if (g.size() == 4 && Fits(want, Permute(g, {0, 3, 1, 2}))) {
    s.WithCause(fmt::format("input '{}' {} looks like an NHWC image; the model takes NCHW {}", b.name, DimsString(g),
                            expected),
                fmt::format("moving the last dim ({}) to position 1 gives a shape the model accepts", g[3]));
    s.WithFix("transpose to NCHW: np.transpose(x, (0, 3, 1, 2)) (in C++, cv::dnn::blobFromImage does this)");
  } else if (g.size() == 4 && Fits(want, Permute(g, {0, 2, 3, 1}))) {
    s.WithCause(fmt::format("input '{}' {} looks like an NCHW image; the model takes NHWC {}", b.name, DimsString(g),
                            expected),
                fmt::format("moving dim 1 ({}) to the end gives a shape the model accepts", g[1]));
    s.WithFix("transpose to NHWC: np.transpose(x, (0, 2, 3, 1))");
  } else if (g.size() == 3 && Fits(want, Permute(g, {2, 0, 1}))) {
    s.WithCause(fmt::format("input '{}' {} looks like an HWC image; the model takes CHW {}", b.name, DimsString(g),
                            expected),
                "moving the last dim to the front gives a shape the model accepts");
    s.WithFix("transpose to CHW: np.transpose(x, (2, 0, 1))");
  }
}

// Values given in another shape: all of them (a flat buffer), or the pixels
// of an image of another size (seed 003's buffer given as [921600]).
void AddReshapedCause(const ir::ValueInfo& vi, const InputBinding& b, Status& s) {
  std::vector<int64_t> want;
  bool known = true;
  for (size_t i = 0; i < vi.type.shape.dims.size(); ++i) {
    const ir::Dim& d = vi.type.shape.dims[i];
    if (d.value) {
      want.push_back(*d.value);
    } else if (i == 0) {
      want.push_back(1);  // a symbolic batch: one item
    } else {
      known = false;
    }
  }
  uint64_t given = 1;
  for (int64_t d : b.shape) {
    if (d < 0) return;
    given *= static_cast<uint64_t>(d);
  }
  uint64_t need = 1;
  for (int64_t d : want) need *= static_cast<uint64_t>(d);
  if (known && given == need && given > 0) {
    s.WithCause(fmt::format("input '{}' holds all the values, in another shape: a flat buffer?", b.name),
                fmt::format("{} values, as many as {} holds", given, DimsString(want)));
    s.WithFix(fmt::format("reshape it: x.reshape({})", fmt::join(want, ", ")));
    return;
  }
  const std::optional<ImageShape> image = known ? ImageOf(want) : std::nullopt;
  const std::string size = image ? OtherImageSize(*image, given) : "";
  if (size.empty()) return;
  s.WithCause(fmt::format("input '{}' holds the pixels of a {} image: {} values = {} × {}, the model takes {} × {} ({} "
                          "values)",
                          b.name, size, given, image->channels, size, image->width, image->height, need),
              "the count matches a common image size, not the model's");
  s.WithFix(fmt::format("resize the image to {} × {} before filling the tensor, then give it the shape {}",
                        image->width, image->height, DimsString(want)));
}

Status CheckRank(const ir::ValueInfo& vi, const InputBinding& b) {
  const std::vector<ir::Dim>& want = vi.type.shape.dims;
  if (want.size() == b.shape.size()) return Status::Ok();
  Status s = InputError(b, &vi,
                        fmt::format("input '{}' has rank {} {}, the model expects rank {} {}", b.name,
                                    b.shape.size(), DimsString(b.shape), want.size(),
                                    ir::ShapeToString(vi.type.shape)));
  if (b.shape.size() + 1 == want.size() && Fits(want, b.shape, 1)) {
    s.WithCause("the batch dim is missing",
                fmt::format("{} matches the model's dims after the first", DimsString(b.shape)));
    s.WithFix("add a leading batch dim of 1: x[np.newaxis] (or x.reshape(1, *x.shape))");
  } else if (want.size() + 1 == b.shape.size() && b.shape[0] == 1 &&
             Fits(want, std::vector<int64_t>(b.shape.begin() + 1, b.shape.end()))) {
    s.WithCause("an extra leading dim of 1", "without it the shape fits the model");
    s.WithFix("drop it: x[0] (or np.squeeze(x, 0))");
  } else {
    AddReshapedCause(vi, b, s);
  }
  return s;
}

Status DimError(const ir::ValueInfo& vi, const InputBinding& b, size_t i) {
  const int64_t want = *vi.type.shape.dims[i].value, got = b.shape[i];
  Status s = InputError(b, &vi,
                        fmt::format("input '{}' dim {} is {}, the model expects {} (shape {}, expected {})",
                                    b.name, i, got, want, DimsString(b.shape), ir::ShapeToString(vi.type.shape)));
  AddLayoutCause(vi, b, s);
  const int64_t elem = ir::DataTypeBits(b.dtype) / 8;
  if (elem > 1 && got == want * elem) {
    s.WithCause(fmt::format("dim {} is {}× too large: bytes passed as elements?", i, elem),
                fmt::format("{} = {} × {}, the size of one {}", got, want, elem, ir::DataTypeName(b.dtype)));
  }
  if (s.diagnosis().causes.empty()) {
    s.WithCause(fmt::format("input '{}' was prepared for another model or another size (resize, crop, sequence "
                            "length): {} given, the model takes {}",
                            b.name, DimsString(b.shape), ir::ShapeToString(vi.type.shape)));
  }
  s.WithFix(fmt::format("give the input with shape {}", ir::ShapeToString(vi.type.shape)));
  return s;
}

// Where a symbolic dim was first bound, for messages.
struct SymbolSite {
  int64_t value;
  std::string input;
  size_t dim;
};

Status CheckDims(const ir::ValueInfo& vi, const InputBinding& b, std::map<std::string, SymbolSite>& symbols) {
  const std::vector<ir::Dim>& want = vi.type.shape.dims;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].is_known() && *want[i].value != b.shape[i]) return DimError(vi, b, i);
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].is_symbolic()) continue;
    auto [it, inserted] = symbols.emplace(want[i].param, SymbolSite{b.shape[i], b.name, i});
    const SymbolSite& first = it->second;
    if (inserted || first.value == b.shape[i]) continue;
    if (first.input == b.name) {
      // One input whose dims share a name: a square image, say.
      Status s = InputError(b, &vi,
                            fmt::format("input '{}' has dims {} and {} both named '{}', but they are {} and {}", b.name,
                                        first.dim, i, want[i].param, first.value, b.shape[i]));
      s.WithFact("symbolic dim", want[i].param);
      s.WithCause(fmt::format("the model says dims {} and {} of input '{}' are the same size '{}' (e.g. a square "
                              "image)",
                              first.dim, i, b.name, want[i].param),
                  "an input of another aspect ratio than the model was exported for");
      s.WithFix(fmt::format("give input '{}' equal dims {} and {} (resize or pad to {} × {}), or re-export the "
                            "model with a separate name for each dim",
                            b.name, first.dim, i, first.value, first.value));
      return s;
    }
    Status s = InputError(b, &vi,
                          fmt::format("'{}' is {} in input '{}' but {} in input '{}'", want[i].param, first.value,
                                      first.input, b.shape[i], b.name));
    s.WithFact("symbolic dim", want[i].param);
    s.WithCause(fmt::format("the model says dim {} of '{}' and dim {} of '{}' are the same size '{}'", first.dim,
                            first.input, i, b.name, want[i].param),
                "inputs prepared separately, e.g. with different batch sizes or sequence lengths");
    s.WithFix(fmt::format("give both inputs the same '{}'", want[i].param));
    return s;
  }
  return Status::Ok();
}

Status CheckNegativeDims(const ir::ValueInfo* vi, const InputBinding& b) {
  for (size_t i = 0; i < b.shape.size(); ++i) {
    if (b.shape[i] >= 0) continue;
    Status s = InputError(b, vi, fmt::format("input '{}' has negative dim {} at index {} in shape {}", b.name,
                                             b.shape[i], i, DimsString(b.shape)));
    s.WithCause("a model's '-1' or '?' (any size) copied into a tensor shape, which must be concrete");
    s.WithFix("give the actual size of every dim");
    return s;
  }
  return Status::Ok();
}

// ---- Byte size -----------------------------------------------------------

// "921600 = 3 × 640 × 480": the buffer holds an image of another size.
void AddImageSizeCause(const InputBinding& b, uint64_t need, uint64_t have, Status& s) {
  const std::optional<ImageShape> image = ImageOf(b.shape);
  if (!image || b.shape.size() != 4) return;
  const std::string size = OtherImageSize(*image, have);
  if (size.empty()) return;
  const int64_t c = image->channels, h = image->height, w = image->width;
  s.WithCause(fmt::format("input '{}': the buffer holds channels*height*width elements of a {} image, the shape "
                          "says {} × {}",
                          b.name, size, w, h),
              fmt::format("{} = {} × {}: {} channels of a {} image, but the shape says {} × {} ({} elements)", have,
                          c, size, c, size, w, h, need));
  s.WithFix(fmt::format("resize the image to {} × {} before filling the tensor, and compute the element count "
                        "from the tensor's shape, not from the image",
                        w, h));
}

void AddByteSizeCauses(const InputBinding& b, uint64_t need_elems, uint64_t need_bytes, Status& s) {
  const uint64_t elem_bytes = static_cast<uint64_t>(std::max(ir::DataTypeBits(b.dtype) / 8, 1));
  const uint64_t have_elems = b.byte_size / elem_bytes;
  const std::string_view dt = ir::DataTypeName(b.dtype);
  const bool as_bytes = elem_bytes > 1 && (b.byte_size == need_bytes * elem_bytes || need_bytes == b.byte_size * elem_bytes);
  if (elem_bytes > 1 && b.byte_size == need_bytes * elem_bytes) {
    s.WithCause(fmt::format("the element count is {}× too large: bytes passed as elements?", elem_bytes),
                fmt::format("the buffer is exactly {} × {} bytes, the size of one {}", need_bytes, elem_bytes, dt));
  } else if (elem_bytes > 1 && need_bytes == b.byte_size * elem_bytes) {
    s.WithCause(fmt::format("the shape counts {}× the elements the buffer holds: bytes passed as elements?",
                            elem_bytes),
                fmt::format("the shape's {} elements equal the buffer's {} bytes", need_elems, b.byte_size));
  }
  AddImageSizeCause(b, need_elems, have_elems, s);
  for (uint64_t k : {uint64_t{1}, uint64_t{2}, uint64_t{4}, uint64_t{8}}) {
    if (!as_bytes && k != elem_bytes && need_elems > 0 && b.byte_size == need_elems * k) {
      s.WithCause(fmt::format("the buffer holds {} elements of {} byte(s) each, not {}: data of another dtype "
                              "described as {}?",
                              need_elems, k, dt, dt),
                  fmt::format("{} bytes = {} elements × {}", b.byte_size, need_elems, k));
    }
  }
  if (b.byte_size < need_bytes) {
    s.WithCause("the buffer is smaller than the shape: reading it would overrun the caller's memory (this is the "
                "access violation ONNX Runtime users hit in GPUDataTransfer::CopyTensorAsync)",
                fmt::format("the shape needs {} bytes, {} more than the buffer's {}", need_bytes,
                            need_bytes - b.byte_size, b.byte_size));
  } else if (!as_bytes && have_elems > need_elems && need_elems > 0 && have_elems % need_elems == 0) {
    s.WithCause(fmt::format("the buffer holds {} tensors of this shape: a batch of {} given with batch size of "
                            "the shape?",
                            have_elems / need_elems, have_elems / need_elems));
  } else if (!as_bytes) {
    s.WithCause("the buffer is larger than the shape: ONNX Runtime would silently use only its first part",
                fmt::format("{} bytes beyond the {} the shape needs", b.byte_size - need_bytes, need_bytes));
  }
  s.WithFix("compute the element count from the tensor's shape (product of dims), and the byte size as "
            "element count × element size");
}

Status CheckByteSize(const ir::ValueInfo* vi, const InputBinding& b) {
  std::optional<uint64_t> elems = ElementCount(b.shape);
  std::optional<uint64_t> bytes = elems ? ir::DataTypeStorageBytes(b.dtype, *elems) : std::nullopt;
  if (!elems || !bytes) {
    Status s = InputError(b, vi, fmt::format("input '{}': the element count of shape {} overflows 64 bits", b.name,
                                             DimsString(b.shape)));
    s.WithCause("garbage dims, e.g. an uninitialised shape array");
    return s;
  }
  if (b.byte_size == *bytes) return Status::Ok();
  const uint64_t elem_bytes = static_cast<uint64_t>(std::max(ir::DataTypeBits(b.dtype) / 8, 1));
  const uint64_t have = b.byte_size / elem_bytes;
  Status s = InputError(b, vi,
                        fmt::format("input '{}' buffer holds {} {} elements ({} bytes), but its shape {} needs {} "
                                    "({} bytes)",
                                    b.name, have, ir::DataTypeName(b.dtype), b.byte_size, DimsString(b.shape),
                                    *elems, *bytes));
  for (Fact& f : s.diagnosis().facts) {
    if (f.name == "got") f.value = fmt::format("{} over a buffer of {} bytes", Given(b), b.byte_size);
  }
  s.WithFact("expected elements", std::to_string(*elems)).WithFact("given elements", std::to_string(have));
  s.WithFact("expected bytes", std::to_string(*bytes)).WithFact("given bytes", std::to_string(b.byte_size));
  AddByteSizeCauses(b, *elems, *bytes, s);
  return s;
}

Status CheckData(const ir::ValueInfo* vi, const InputBinding& b) {
  if (b.data != nullptr || b.byte_size == 0) return Status::Ok();
  Status s = InputError(b, vi,
                        fmt::format("input '{}' has shape {} ({} bytes) but no data (a null pointer)", b.name,
                                    DimsString(b.shape), b.byte_size));
  s.WithCause("the buffer was never allocated, or was moved from / released before the run");
  s.WithFix("pass a pointer to host memory holding the tensor's elements");
  return s;
}

Status CheckBindingDtype(const InputBinding& b) {
  if (b.dtype == DataType::kUndefined) {
    return InputError(b, nullptr, fmt::format("input '{}' has no dtype", b.name));
  }
  if (ir::DataTypeBits(b.dtype) == 0) {
    return UnsupportedError("input '{}' has dtype {}; vigil binds only fixed-size element types", b.name,
                            ir::DataTypeName(b.dtype));
  }
  return Status::Ok();
}

// A sequence or an empty optional, given for an input the model declares as
// a sequence or an optional: the kinds must fit, and a sequence's dtype.
Status CheckNonDense(const ir::ValueInfo& vi, const InputBinding& b) {
  using Kind = ir::TypeInfo::Kind;
  const ir::TypeInfo* t = vi.has_type ? &vi.type : nullptr;
  const bool none = b.value->kind() == Tensor::Kind::kEmptyOptional;
  if (t && t->kind == Kind::kOptional) {
    if (none) return Status::Ok();
    t = t->inner.get();
  }
  if (!t || t->kind == Kind::kUnknown) return Status::Ok();
  if (none || t->kind != Kind::kSequence) {
    Status s = InvalidInputError("input '{}' is {}, but the model declares {}", b.name, b.value->Describe(),
                                 Expected(vi));
    s.WithFact("input", b.name);
    return s;
  }
  const ir::TypeInfo* element = t->inner.get();
  if (element && element->elem_type != ir::DataType::kUndefined && element->elem_type != b.value->elem_type()) {
    Status s = InvalidInputError("input '{}' is a sequence of {}, but the model declares {}", b.name,
                                 ir::DataTypeName(b.value->elem_type()), Expected(vi));
    s.WithFact("input", b.name);
    return s;
  }
  return Status::Ok();
}

Status CheckOne(const ir::ValueInfo& declared, const InputBinding& b, std::map<std::string, SymbolSite>& symbols) {
  if (b.value && !b.value->is_dense()) return CheckNonDense(declared, b);
  // A tensor given for an optional tensor is checked as that tensor.
  ir::ValueInfo unwrapped;
  const bool optional_tensor = declared.has_type && declared.type.kind == ir::TypeInfo::Kind::kOptional &&
                               declared.type.inner && declared.type.inner->kind == ir::TypeInfo::Kind::kTensor;
  if (optional_tensor) {
    unwrapped = declared;
    unwrapped.type = *declared.type.inner;
  }
  const ir::ValueInfo& vi = optional_tensor ? unwrapped : declared;
  VIGIL_RETURN_IF_ERROR(CheckBindingDtype(b));
  if (vi.has_type && vi.type.kind != ir::TypeInfo::Kind::kTensor) {
    Status s = UnsupportedError("input '{}' is a {}; vigil binds only dense tensors", b.name, Expected(vi));
    s.WithFact("input", b.name);
    return s;
  }
  if (vi.has_type) VIGIL_RETURN_IF_ERROR(CheckDtype(vi, b));
  VIGIL_RETURN_IF_ERROR(CheckNegativeDims(&vi, b));
  if (vi.has_type && vi.type.shape.rank_known) {
    VIGIL_RETURN_IF_ERROR(CheckRank(vi, b));
    VIGIL_RETURN_IF_ERROR(CheckDims(vi, b, symbols));
  }
  VIGIL_RETURN_IF_ERROR(CheckByteSize(&vi, b));
  return CheckData(&vi, b);
}

}  // namespace

ModelInputs ListModelInputs(const ir::Graph& graph) {
  std::set<std::string> initialized;
  for (const ir::Tensor& t : graph.initializers) initialized.insert(t.name);
  for (const ir::SparseTensor& t : graph.sparse_initializers) initialized.insert(t.values.name);
  ModelInputs m;
  for (const ir::ValueInfo& vi : graph.inputs) {
    (initialized.count(vi.name) ? m.optional : m.required).push_back(vi);
  }
  return m;
}

Result<DimBindings> ValidateInputs(const ModelInputs& model_inputs, std::vector<InputBinding>& bindings) {
  VIGIL_RETURN_IF_ERROR(ResolveNames(model_inputs, bindings));
  std::map<std::string, SymbolSite> symbols;
  for (const InputBinding& b : bindings) {
    VIGIL_RETURN_IF_ERROR(CheckOne(*FindInput(model_inputs, b.name), b, symbols));
  }
  DimBindings dims;
  for (const auto& [name, site] : symbols) dims[name] = site.value;
  return dims;
}

}  // namespace vigil::runtime
