#include "doctor/probe/version.h"

#include <charconv>
#include <tuple>
#include <vector>

#include <fmt/format.h>

namespace vigil::doctor {

std::string Version::ToString() const {
  switch (parts) {
    case 0: return "unknown";
    case 1: return fmt::format("{}", major);
    case 2: return fmt::format("{}.{}", major, minor);
    default: return fmt::format("{}.{}.{}", major, minor, patch);
  }
}

bool Version::CompatibleWith(const Version& other) const {
  int common = std::min(parts, other.parts);
  if (common >= 1 && major != other.major) return false;
  if (common >= 2 && minor != other.minor) return false;
  if (common >= 3 && patch != other.patch) return false;
  return true;
}

Version MakeVersion(int major, int minor, int patch, int parts) { return {major, minor, patch, parts}; }

Version DecodeCudnnVersion(int64_t raw) {
  if (raw <= 0) return {};
  if (raw < 10000) {  // cuDNN <= 8: MAJOR*1000 + MINOR*100 + PATCH
    return MakeVersion(static_cast<int>(raw / 1000), static_cast<int>(raw % 1000 / 100),
                       static_cast<int>(raw % 100));
  }
  return MakeVersion(static_cast<int>(raw / 10000), static_cast<int>(raw % 10000 / 100),
                     static_cast<int>(raw % 100));
}

Version DecodeCudaVersion(int64_t raw) {
  if (raw <= 0) return {};
  return MakeVersion(static_cast<int>(raw / 1000), static_cast<int>(raw % 1000 / 10), 0, 2);
}

Version DecodeCublasLtVersion(int64_t raw) {
  if (raw <= 0) return {};
  return MakeVersion(static_cast<int>(raw / 10000), static_cast<int>(raw % 10000 / 100),
                     static_cast<int>(raw % 100));
}

Version DecodeDeviceVersion(int64_t raw) {
  if (raw <= 0) return {};
  return MakeVersion(static_cast<int>(raw / 100), static_cast<int>(raw % 100 / 10), 0, 2);
}

std::optional<Version> ParseDottedVersion(std::string_view text) {
  Version v;
  int* fields[3] = {&v.major, &v.minor, &v.patch};
  size_t pos = 0;
  while (pos < text.size() && v.parts < 3) {
    size_t end = text.find('.', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view piece = text.substr(pos, end - pos);
    int value = 0;
    auto [ptr, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), value);
    if (piece.empty() || ec != std::errc() || ptr != piece.data() + piece.size()) return std::nullopt;
    *fields[v.parts++] = value;
    pos = end + 1;
  }
  if (v.parts == 0) return std::nullopt;
  return v;
}

Version VersionFromFileName(std::string_view file_name) {
  size_t slash = file_name.rfind('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  size_t so = file_name.find(".so.");
  if (so == std::string_view::npos) return {};
  return ParseDottedVersion(file_name.substr(so + 4)).value_or(Version{});
}

}  // namespace vigil::doctor
