#include "isolation/isolation_wire.h"

#include <cstring>
#include <optional>

#include "base/diagnosis_render.h"

namespace vigil::doctor {
namespace {

constexpr char kTensorsMagic[4] = {'V', 'G', 'T', 'N'};
constexpr uint64_t kMaxRank = 64;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// A bounds-checked reader over the shared bytes.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  bool Get(T& v) {
    if (b_.size() - at_ < sizeof v) return false;
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return true;
  }
  bool Bytes(uint64_t n, const uint8_t** p) {
    if (b_.size() - at_ < n) return false;
    *p = b_.data() + at_;
    at_ += n;
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

Status Truncated() { return InternalError("the isolated run's tensor data is truncated or corrupt"); }

}  // namespace

const char* IsolationStageName(int32_t stage) {
  switch (static_cast<IsolationStage>(stage)) {
    case IsolationStage::kStarted: return "starting";
    case IsolationStage::kReadingInputs: return "reading the inputs";
    case IsolationStage::kLoadingSession: return "loading the model and backends";
    case IsolationStage::kRunning: return "running the model";
    case IsolationStage::kWritingOutputs: return "writing the outputs";
    case IsolationStage::kDone: return "done";
  }
  return "unknown";
}

Result<std::string> EncodeTensors(const std::vector<runtime::NamedTensor>& tensors) {
  std::string out(kTensorsMagic, 4);
  Put<uint64_t>(out, tensors.size());
  for (const runtime::NamedTensor& t : tensors) {
    if (!t.tensor.on_host()) return InternalError("tensor '{}' is not on the host", t.name);
    if (ir::DataTypeBits(t.tensor.dtype()) == 0) {
      return UnsupportedError("tensor '{}' has dtype {}, which an isolated run cannot pass", t.name,
                              ir::DataTypeName(t.tensor.dtype()));
    }
    Put<uint64_t>(out, t.name.size());
    out += t.name;
    Put<int32_t>(out, static_cast<int32_t>(t.tensor.dtype()));
    Put<uint64_t>(out, t.tensor.rank());
    for (int64_t d : t.tensor.shape()) Put<int64_t>(out, d);
    Put<uint64_t>(out, t.tensor.byte_size());
    if (t.tensor.byte_size() > 0) out.append(static_cast<const char*>(t.tensor.raw_data()), t.tensor.byte_size());
  }
  return out;
}

Result<std::vector<runtime::NamedTensor>> DecodeTensors(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  const uint8_t* magic = nullptr;
  uint64_t count = 0;
  if (!r.Bytes(4, &magic) || std::memcmp(magic, kTensorsMagic, 4) != 0 || !r.Get(count)) return Truncated();
  if (count > bytes.size()) return Truncated();
  std::vector<runtime::NamedTensor> out;
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t name_size = 0, rank = 0, nbytes = 0;
    int32_t dtype = 0;
    const uint8_t* name = nullptr;
    if (!r.Get(name_size) || !r.Bytes(name_size, &name) || !r.Get(dtype) || !r.Get(rank) || rank > kMaxRank) {
      return Truncated();
    }
    std::vector<int64_t> shape(rank);
    for (int64_t& d : shape) {
      if (!r.Get(d)) return Truncated();
    }
    const uint8_t* data = nullptr;
    if (!r.Get(nbytes) || !r.Bytes(nbytes, &data)) return Truncated();
    if (!ir::IsKnownDataType(dtype)) return Truncated();
    // The shape must account for exactly the bytes present before anything is
    // allocated: a corrupt shape would otherwise ask for up to 64 TiB.
    const std::optional<uint64_t> count = runtime::ElementCount(shape);
    const std::optional<uint64_t> expected =
        count ? ir::DataTypeStorageBytes(static_cast<ir::DataType>(dtype), *count) : std::nullopt;
    if (!expected || *expected != nbytes) return Truncated();
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(static_cast<ir::DataType>(dtype), shape));
    if (t.byte_size() != nbytes) return Truncated();
    if (nbytes > 0) std::memcpy(t.raw_data(), data, nbytes);
    out.push_back({std::string(reinterpret_cast<const char*>(name), name_size), std::move(t)});
  }
  return out;
}

std::string EncodeAnswer(const Result<std::vector<runtime::NamedTensor>>& answer) {
  if (answer.ok()) {
    Result<std::string> tensors = EncodeTensors(*answer);
    if (tensors.ok()) return "T" + *tensors;
    return "S" + ToJson(tensors.status().diagnosis()).dump();
  }
  return "S" + ToJson(answer.status().diagnosis()).dump();
}

Result<std::vector<runtime::NamedTensor>> DecodeAnswer(std::span<const uint8_t> bytes) {
  if (bytes.empty()) return InternalError("the isolated run ended without an answer");
  if (bytes[0] == 'T') return DecodeTensors(bytes.subspan(1));
  if (bytes[0] != 'S') return Truncated();
  std::string text(reinterpret_cast<const char*>(bytes.data() + 1), bytes.size() - 1);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Truncated();
  Diagnosis d = DiagnosisFromJson(j);
  return Status(std::move(d));
}

}  // namespace vigil::doctor
