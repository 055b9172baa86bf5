// Helpers for the resolver tests: private temporary folders, the fake
// libraries CMake built, a tiny ld.so.cache encoder and a crafted ELF32 file.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace vigil::doctor::testing {

namespace fs = std::filesystem;

// A fresh folder, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "vigil-resolver-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    EXPECT_NE(made, nullptr);
    path_ = made != nullptr ? fs::path(made) : fs::path(tmpl);
    // realpath form, so comparisons with resolved paths hold on systems
    // where /tmp is a symlink.
    path_ = fs::canonical(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string Sub(const std::string& rel) const {
    fs::create_directories(path_ / rel);
    return (path_ / rel).string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

inline std::string FakePath(const char* file_name) { return std::string(VIGIL_FAKE_DIR) + "/" + file_name; }

// Copies a fake library into `dir` as `name`; returns the new path.
inline std::string PlaceFake(const char* file_name, const std::string& dir, const std::string& name) {
  fs::create_directories(dir);
  const fs::path to = fs::path(dir) / name;
  fs::copy_file(FakePath(file_name), to, fs::copy_options::overwrite_existing);
  return to.string();
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

inline void Put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  if (b.size() < at + 4) b.resize(at + 4);
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void Put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  if (b.size() < at + 2) b.resize(at + 2);
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

// A minimal, valid 32-bit i386 ELF shared object header (no sections, no
// segments): enough for the loader, and for us, to see "wrong class".
inline std::vector<uint8_t> Elf32Header() {
  std::vector<uint8_t> b(52, 0);
  b[0] = 0x7f; b[1] = 'E'; b[2] = 'L'; b[3] = 'F';
  b[4] = 1;  // ELFCLASS32
  b[5] = 1;  // little-endian
  b[6] = 1;  // EV_CURRENT
  Put16(b, 16, 3);   // ET_DYN
  Put16(b, 18, 3);   // EM_386
  Put32(b, 20, 1);   // e_version
  Put16(b, 40, 52);  // e_ehsize
  return b;
}

struct CacheEntry {
  std::string soname;
  std::string path;
  int32_t flags = 0x0303;
  uint64_t hwcap = 0;
};

// Our own encoder for the glibc ld.so.cache formats (see ld_so_cache.cpp).
// `old_format` writes "ld.so-1.7.0" entries; `with_new` appends the new
// format after them (or writes only the new format when !old_format).
inline std::vector<uint8_t> EncodeLdSoCache(const std::vector<CacheEntry>& entries, bool old_format, bool with_new) {
  std::vector<uint8_t> b;
  const std::string old_magic = "ld.so-1.7.0";
  const std::string new_magic = "glibc-ld.so.cache1.1";
  size_t new_at = 0;
  size_t old_strings = 0;
  if (old_format) {
    b.assign(16, 0);
    std::copy(old_magic.begin(), old_magic.end(), b.begin());
    Put32(b, 12, static_cast<uint32_t>(entries.size()));
    old_strings = 16 + 12 * entries.size();
    b.resize(old_strings, 0);
    new_at = (old_strings + 7) / 8 * 8;
  }
  if (with_new) {
    b.resize(new_at + 48 + 24 * entries.size(), 0);
    std::copy(new_magic.begin(), new_magic.end(), b.begin() + static_cast<long>(new_at));
    Put32(b, new_at + 20, static_cast<uint32_t>(entries.size()));
    b[new_at + 28] = 2;  // little-endian
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const CacheEntry& e = entries[i];
    const size_t key = b.size();
    b.insert(b.end(), e.soname.begin(), e.soname.end());
    b.push_back(0);
    const size_t value = b.size();
    b.insert(b.end(), e.path.begin(), e.path.end());
    b.push_back(0);
    if (old_format) {
      const size_t at = 16 + 12 * i;
      Put32(b, at, static_cast<uint32_t>(e.flags));
      Put32(b, at + 4, static_cast<uint32_t>(key - old_strings));
      Put32(b, at + 8, static_cast<uint32_t>(value - old_strings));
    }
    if (with_new) {
      const size_t at = new_at + 48 + 24 * i;
      Put32(b, at, static_cast<uint32_t>(e.flags));
      Put32(b, at + 4, static_cast<uint32_t>(key - new_at));
      Put32(b, at + 8, static_cast<uint32_t>(value - new_at));
      Put32(b, at + 16, static_cast<uint32_t>(e.hwcap));
      Put32(b, at + 20, static_cast<uint32_t>(e.hwcap >> 32));
    }
  }
  return b;
}

}  // namespace vigil::doctor::testing
