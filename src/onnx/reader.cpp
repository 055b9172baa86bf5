// ModelProto and FunctionProto, and the entry points. The entry points are
// the one place that turns exceptions (std::bad_alloc from a vector that the
// file made grow, within the limits) into a Status, so nothing leaves the
// library as an exception.
#include "onnx/reader.h"

#include <filesystem>
#include <new>

#include "base/mapped_file.h"
#include "onnx/external_data.h"
#include "onnx/readers.h"

namespace vigil::onnx {

using wire::Field;

Status ReadOpsetImport(ReadContext& ctx, Bytes bytes, ir::OpsetImport* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "domain", &out->domain));
    if (f.number == 2) VIGIL_RETURN_IF_ERROR(ReadInt64(ctx, f, "version", &out->version));
  }
  return Status::Ok();
}

Status ReadStringEntry(ReadContext& ctx, Bytes bytes, std::pair<std::string, std::string>* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    if (f.number == 1) VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "key", &out->first));
    if (f.number == 2) VIGIL_RETURN_IF_ERROR(ReadString(ctx, f, "value", &out->second));
  }
  return Status::Ok();
}

namespace {

Status ReadFunctionField(ReadContext& ctx, const Field& f, ir::Function* out) {
  switch (f.number) {
    case 1: return ReadString(ctx, f, "name", &out->name);
    case 4: return AppendString(ctx, f, "input", &out->inputs);
    case 5: return AppendString(ctx, f, "output", &out->outputs);
    case 6: return AppendString(ctx, f, "attribute", &out->attributes);
    case 7: return ReadRepeatedMessage(ctx, f, "node", &out->nodes, ReadNode);
    case 8: return ReadString(ctx, f, "doc_string", &out->doc_string);
    case 9: return ReadRepeatedMessage(ctx, f, "opset_import", &out->opset_imports, ReadOpsetImport);
    case 10: return ReadString(ctx, f, "domain", &out->domain);
    case 11: return ReadRepeatedMessage(ctx, f, "attribute_proto", &out->attribute_defaults, ReadAttribute);
    case 12: return ReadRepeatedMessage(ctx, f, "value_info", &out->value_infos, ReadValueInfo);
    case 13: return ReadString(ctx, f, "overload", &out->overload);
    default: return Status::Ok();  // metadata_props, newer fields
  }
}

Status ReadFunction(ReadContext& ctx, Bytes bytes, ir::Function* out) {
  wire::FieldReader r = ctx.Reader(bytes);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    VIGIL_RETURN_IF_ERROR(ReadFunctionField(ctx, f, out));
  }
  return Status::Ok();
}

Status ReadModelField(ReadContext& ctx, const Field& f, ir::Model* out, bool* has_graph) {
  switch (f.number) {
    case 1: return ReadInt64(ctx, f, "ir_version", &out->ir_version);
    case 2: return ReadString(ctx, f, "producer_name", &out->producer_name);
    case 3: return ReadString(ctx, f, "producer_version", &out->producer_version);
    case 4: return ReadString(ctx, f, "domain", &out->domain);
    case 5: return ReadInt64(ctx, f, "model_version", &out->model_version);
    case 6: return ReadString(ctx, f, "doc_string", &out->doc_string);
    case 7:
      *has_graph = true;
      out->graph = ir::Graph();
      return ReadMessage(ctx, f, "graph", &out->graph, ReadGraph);
    case 8: return ReadRepeatedMessage(ctx, f, "opset_import", &out->opset_imports, ReadOpsetImport);
    case 14: return ReadRepeatedMessage(ctx, f, "metadata_props", &out->metadata_props, ReadStringEntry);
    case 25: return ReadRepeatedMessage(ctx, f, "functions", &out->functions, ReadFunction);
    default: return Status::Ok();  // training_info, configuration, newer fields
  }
}

Status ReadModelProto(ReadContext& ctx, ir::Model* out) {
  bool has_graph = false;
  wire::FieldReader r = ctx.Reader(ctx.file);
  while (!r.done()) {
    Field f;
    VIGIL_RETURN_IF_ERROR(ctx.Wrap(r.Next(&f)));
    VIGIL_RETURN_IF_ERROR(ReadModelField(ctx, f, out, &has_graph));
  }
  if (!has_graph) return ctx.Error(ctx.file.size(), "the model has no graph");
  return Status::Ok();
}

Result<ir::Model> ReadGuarded(std::span<const uint8_t> bytes, const std::string& display_name,
                              const std::string& base_dir, const ReadOptions& options,
                              std::shared_ptr<const MappedFile> file) {
  ReadContext ctx;
  ctx.limits = options.limits;
  ctx.file = bytes;
  ctx.owner = file;
  // Room for any real model's structure (attributes are the densest: about
  // 900 bytes of IR for ~20 bytes of file), while a hostile file of empty
  // messages stays within a small multiple of its own size.
  ctx.object_budget = options.limits.max_structure_bytes != 0
                          ? options.limits.max_structure_bytes
                          : (uint64_t{256} << 20) + 16 * static_cast<uint64_t>(bytes.size());
  ExternalDataFiles external(base_dir);
  if (options.load_external_data) ctx.external = &external;

  ir::Model model;
  model.path = display_name;
  model.file = std::move(file);
  Status s = ReadModelProto(ctx, &model);
  if (!s.ok()) {
    s.WithContext(fmt::format("cannot read '{}'", display_name)).WithFact("model", display_name);
    if (s.code() == ErrorCode::kInvalidModel && s.diagnosis().fixes.empty()) {
      s.WithCause("the file is truncated, corrupted or not an ONNX model");
      s.WithFix("re-export or re-download the model; check it with onnx.checker.check_model");
    }
    return s;
  }
  return model;
}

Result<ir::Model> ReadCatching(std::span<const uint8_t> bytes, const std::string& display_name,
                               const std::string& base_dir, const ReadOptions& options,
                               std::shared_ptr<const MappedFile> file) {
  try {
    return ReadGuarded(bytes, display_name, base_dir, options, std::move(file));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory while decoding ({} bytes)", display_name,
                           bytes.size());
  } catch (const std::exception& e) {
    return InternalError("cannot read '{}': {}", display_name, e.what());
  }
}

}  // namespace

Result<ir::Model> ReadModel(const std::string& path, const ReadOptions& options) {
  try {
    VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> file, MappedFile::Open(path));
    std::string base_dir = std::filesystem::path(path).parent_path().string();
    if (base_dir.empty()) base_dir = ".";
    std::span<const uint8_t> bytes = file->bytes();
    return ReadCatching(bytes, path, base_dir, options, std::move(file));
  } catch (const std::bad_alloc&) {
    return OutOfMemoryError("cannot read '{}': out of memory", path);
  } catch (const std::exception& e) {
    return InternalError("cannot read '{}': {}", path, e.what());
  }
}

Result<ir::Model> ReadModelFromBytes(std::span<const uint8_t> bytes, const std::string& display_name,
                                     const std::string& base_dir, const ReadOptions& options) {
  return ReadCatching(bytes, display_name, base_dir, options, nullptr);
}

}  // namespace vigil::onnx
