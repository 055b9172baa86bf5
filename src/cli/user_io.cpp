#include "user_io.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "vigil/float16.h"

namespace vigil::cli {

vigil::SessionOptions ToSessionOptions(const BackendChoice& c) {
  vigil::SessionOptions o;
  if (c.backend == "cuda") {
    o.backends = {vigil::Backend::kCuda};
    if (!c.no_fallback) o.backends.push_back(vigil::Backend::kCpu);
  } else {
    o.backends = {vigil::Backend::kCpu};
  }
  o.device_id = c.device;
  o.allow_tf32 = c.tf32;
  o.run_as_float16 = c.fp16;
  o.allow_tf32x3 = !c.no_tf32x3;
  o.measure_first_run = !c.no_measure_first_run;
  o.tf32x3_convolutions = c.tf32x3_convs;
  o.deterministic = c.deterministic;
  if (!c.gpu_mem_limit.empty()) ParseByteSize(c.gpu_mem_limit, &o.gpu_mem_limit);  // checked when parsed
  o.layout = c.layout == "nchw" ? vigil::Layout::kNchw : vigil::Layout::kAuto;
  o.cuda_graphs = c.device_graphs;
  o.cudnn_log_file = c.cudnn_log;
  o.tune = c.tune;
  o.tuning_cache_file = c.tuning_cache;
  o.enable_profiling = c.profiling;
  o.intra_op_num_threads = c.threads;
  return o;
}

std::shared_ptr<const vigil_session_options> ToCSessionOptions(const BackendChoice& choice) {
  auto holder = std::make_shared<const vigil::CSessionOptions>(ToSessionOptions(choice));
  return std::shared_ptr<const vigil_session_options>(holder, holder->get());
}

InputFileSet ReadInputFileSet(const std::vector<std::string>& specs) {
  InputFileSet set;
  for (const std::string& spec : specs) {
    auto [name, path] = SplitInputSpec(spec);
    set.values.push_back(vigil::ReadTensorFile(path));
    vigil::TensorRef ref = set.values.back().AsInput(name);
    ref.source = path;
    set.refs.push_back(std::move(ref));
  }
  return set;
}

int ReportError(const vigil::Error& error, bool json) {
  if (json) {
    std::printf("{\"ok\":false,\"error\":%s}\n", error.json().c_str());
  } else {
    std::fputs(error.what(), stderr);
  }
  return error.code() == vigil::ErrorCode::kInternal ? kExitInternal : kExitDiagnosed;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

bool ElementAsDouble(const vigil::Value& v, size_t i, double* out) {
  const void* p = v.RawData();
  switch (v.GetDType()) {
    case DType::kFloat32: *out = static_cast<const float*>(p)[i]; return true;
    case DType::kFloat64: *out = static_cast<const double*>(p)[i]; return true;
    case DType::kFloat16: *out = vigil::Float16ToFloat(static_cast<const uint16_t*>(p)[i]); return true;
    case DType::kBfloat16: *out = vigil::Bfloat16ToFloat(static_cast<const uint16_t*>(p)[i]); return true;
    case DType::kInt8: *out = static_cast<const int8_t*>(p)[i]; return true;
    case DType::kInt16: *out = static_cast<const int16_t*>(p)[i]; return true;
    case DType::kInt32: *out = static_cast<const int32_t*>(p)[i]; return true;
    case DType::kInt64: *out = static_cast<double>(static_cast<const int64_t*>(p)[i]); return true;
    case DType::kUint8: *out = static_cast<const uint8_t*>(p)[i]; return true;
    case DType::kBool: *out = static_cast<const uint8_t*>(p)[i] != 0; return true;
    case DType::kUint16: *out = static_cast<const uint16_t*>(p)[i]; return true;
    case DType::kUint32: *out = static_cast<const uint32_t*>(p)[i]; return true;
    case DType::kUint64: *out = static_cast<double>(static_cast<const uint64_t*>(p)[i]); return true;
  }
  return false;
}

}  // namespace vigil::cli
