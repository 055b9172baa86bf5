// ELF reader for the doctor. Layout facts come from the System V gABI and the
// Linux ELF headers (elf(5)); the code is our own. Every read goes through a
// bounds check against the mapped file, so hostile input yields a Status.
#include "doctor/resolver/elf_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "base/mapped_file.h"

namespace vigil::doctor {
namespace {

// Constants from the gABI; named here so the parsing code reads like the spec.
constexpr uint8_t kElfClass32 = 1;
constexpr uint8_t kElfClass64 = 2;
constexpr uint8_t kElfDataLsb = 1;
constexpr uint8_t kElfDataMsb = 2;
constexpr uint32_t kPtLoad = 1;
constexpr uint32_t kPtDynamic = 2;
constexpr uint32_t kPtNote = 4;
constexpr uint32_t kShtStrtab = 3;
constexpr uint32_t kShtDynamic = 6;
constexpr uint32_t kShtNote = 7;
constexpr int64_t kDtNull = 0;
constexpr int64_t kDtNeeded = 1;
constexpr int64_t kDtStrtab = 5;
constexpr int64_t kDtStrsz = 10;
constexpr int64_t kDtSoname = 14;
constexpr int64_t kDtRpath = 15;
constexpr int64_t kDtRunpath = 29;
constexpr uint32_t kNtGnuBuildId = 3;
constexpr uint16_t kPnXnum = 0xffff;  // e_phnum escape: real count in section 0
constexpr size_t kIdentSize = 16;
// Hostile files can claim millions of headers; real objects have far fewer.
constexpr uint64_t kMaxHeaders = 1u << 16;

bool InRange(uint64_t offset, uint64_t length, uint64_t size) {
  return offset <= size && length <= size - offset;
}

// Little-endian reader over the whole file; offsets are absolute.
class Bytes {
 public:
  Bytes(std::span<const uint8_t> data, bool is64) : data_(data), is64_(is64) {}

  bool Has(uint64_t offset, uint64_t length) const { return InRange(offset, length, data_.size()); }
  uint64_t size() const { return data_.size(); }
  bool is64() const { return is64_; }

  uint64_t Uint(uint64_t offset, int width) const {  // caller checked Has()
    uint64_t v = 0;
    for (int i = width - 1; i >= 0; --i) v = (v << 8) | data_[offset + i];
    return v;
  }
  uint16_t U16(uint64_t o) const { return static_cast<uint16_t>(Uint(o, 2)); }
  uint32_t U32(uint64_t o) const { return static_cast<uint32_t>(Uint(o, 4)); }
  // A "word" is 4 bytes in ELF32 and 8 in ELF64 (addresses, offsets, sizes).
  uint64_t Word(uint64_t o) const { return Uint(o, is64_ ? 8 : 4); }
  int WordSize() const { return is64_ ? 8 : 4; }
  const uint8_t* At(uint64_t o) const { return data_.data() + o; }

 private:
  std::span<const uint8_t> data_;
  bool is64_;
};

struct Header {
  uint64_t phoff = 0, shoff = 0;
  uint64_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0, shstrndx = 0;
};

struct Segment {
  uint32_t type = 0;
  uint64_t offset = 0, vaddr = 0, filesz = 0, align = 0;
};

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0, align = 0;
};

Status Corrupt(const std::string& path, std::string_view what) {
  return EnvironmentError("'{}' is a damaged ELF file: {}", path, what)
      .WithFact("path", path)
      .WithFix("reinstall the package that owns this file; it is truncated or corrupted");
}

Status ReadHeader(const Bytes& b, const std::string& path, Header& h) {
  const bool is64 = b.is64();
  if (!b.Has(0, is64 ? 64 : 52)) return Corrupt(path, "the ELF header is truncated");
  h.phoff = b.Word(is64 ? 32 : 28);
  h.shoff = b.Word(is64 ? 40 : 32);
  const uint64_t base = is64 ? 54 : 42;  // e_phentsize, then 5 more halves
  h.phentsize = b.U16(base);
  h.phnum = b.U16(base + 2);
  h.shentsize = b.U16(base + 4);
  h.shnum = b.U16(base + 6);
  h.shstrndx = b.U16(base + 8);
  return Status::Ok();
}

Section ReadSection(const Bytes& b, uint64_t at) {
  Section s;
  s.name = b.U32(at);
  s.type = b.U32(at + 4);
  if (b.is64()) {
    s.offset = b.Word(at + 24);
    s.size = b.Word(at + 32);
    s.link = b.U32(at + 40);
    s.align = b.Word(at + 48);
  } else {
    s.offset = b.U32(at + 16);
    s.size = b.U32(at + 20);
    s.link = b.U32(at + 24);
    s.align = b.U32(at + 32);
  }
  return s;
}

Status ReadSections(const Bytes& b, const std::string& path, Header& h, std::vector<Section>& out) {
  if (h.shoff == 0) return Status::Ok();  // no section table (allowed, e.g. sstrip)
  const uint64_t min_size = b.is64() ? 64 : 40;
  if (h.shentsize < min_size) return Corrupt(path, "section header entries are too small");
  if (!b.Has(h.shoff, h.shentsize)) return Corrupt(path, "the section header table lies outside the file");
  const Section first = ReadSection(b, h.shoff);
  // Extended numbering: counts that do not fit 16 bits live in section 0.
  if (h.shnum == 0) h.shnum = first.size;
  if (h.phnum == kPnXnum) h.phnum = b.U32(h.shoff + (b.is64() ? 44 : 28));
  if (h.shnum > kMaxHeaders) return Corrupt(path, "it claims an implausible number of sections");
  if (!b.Has(h.shoff, h.shnum * h.shentsize)) return Corrupt(path, "the section header table is truncated");
  out.reserve(h.shnum);
  for (uint64_t i = 0; i < h.shnum; ++i) out.push_back(ReadSection(b, h.shoff + i * h.shentsize));
  return Status::Ok();
}

Status ReadSegments(const Bytes& b, const std::string& path, const Header& h, std::vector<Segment>& out) {
  if (h.phnum == 0) return Status::Ok();
  const uint64_t min_size = b.is64() ? 56 : 32;
  if (h.phentsize < min_size) return Corrupt(path, "program header entries are too small");
  if (h.phnum > kMaxHeaders) return Corrupt(path, "it claims an implausible number of program headers");
  if (!b.Has(h.phoff, h.phnum * h.phentsize)) return Corrupt(path, "the program header table is truncated");
  out.reserve(h.phnum);
  for (uint64_t i = 0; i < h.phnum; ++i) {
    const uint64_t at = h.phoff + i * h.phentsize;
    Segment s;
    s.type = b.U32(at);
    if (b.is64()) {
      s.offset = b.Word(at + 8);
      s.vaddr = b.Word(at + 16);
      s.filesz = b.Word(at + 32);
      s.align = b.Word(at + 48);
    } else {
      s.offset = b.U32(at + 4);
      s.vaddr = b.U32(at + 8);
      s.filesz = b.U32(at + 16);
      s.align = b.U32(at + 28);
    }
    out.push_back(s);
  }
  return Status::Ok();
}

// A NUL-terminated string at `offset` inside the table [table, table+size).
Result<std::string> TableString(const Bytes& b, const std::string& path, uint64_t table, uint64_t size,
                                uint64_t offset) {
  if (offset >= size) return Corrupt(path, "a dynamic string offset points past the string table");
  const uint8_t* start = b.At(table + offset);
  const void* nul = std::memchr(start, 0, size - offset);
  if (nul == nullptr) return Corrupt(path, "a dynamic string is not terminated");
  return std::string(reinterpret_cast<const char*>(start), static_cast<const uint8_t*>(nul) - start);
}

std::vector<std::string> SplitPath(const std::string& s) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(':', begin);
    if (end == std::string::npos) end = s.size();
    parts.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

struct DynEntry {
  int64_t tag;
  uint64_t value;
};

// The dynamic table, from PT_DYNAMIC as the loader reads it, else SHT_DYNAMIC.
Status FindDynamic(const Bytes& b, const std::string& path, const std::vector<Segment>& segs,
                   const std::vector<Section>& secs, std::vector<DynEntry>& out, uint32_t& section_link) {
  uint64_t offset = 0, size = 0;
  bool found = false;
  section_link = UINT32_MAX;
  for (const Segment& s : segs) {
    if (s.type == kPtDynamic) { offset = s.offset; size = s.filesz; found = true; break; }
  }
  for (const Section& s : secs) {
    if (s.type != kShtDynamic) continue;
    section_link = s.link;
    if (!found) { offset = s.offset; size = s.size; found = true; }
    break;
  }
  if (!found) return Status::Ok();  // static executable or object file: nothing to resolve
  if (!b.Has(offset, size)) return Corrupt(path, "the dynamic section lies outside the file");
  const uint64_t entsize = 2 * static_cast<uint64_t>(b.WordSize());
  for (uint64_t at = offset; at + entsize <= offset + size; at += entsize) {
    DynEntry e{static_cast<int64_t>(b.Word(at)), b.Word(at + b.WordSize())};
    if (!b.is64()) e.tag = static_cast<int32_t>(e.tag);  // d_tag is signed
    if (e.tag == kDtNull) break;
    out.push_back(e);
  }
  return Status::Ok();
}

// Maps a virtual address to a file offset through the PT_LOAD segments, as
// DT_STRTAB holds an address, not an offset. `avail` gets the bytes left.
bool VaddrToOffset(const std::vector<Segment>& segs, uint64_t vaddr, uint64_t& offset, uint64_t& avail) {
  for (const Segment& s : segs) {
    if (s.type != kPtLoad || vaddr < s.vaddr || vaddr - s.vaddr >= s.filesz) continue;
    offset = s.offset + (vaddr - s.vaddr);
    avail = s.filesz - (vaddr - s.vaddr);
    return true;
  }
  return false;
}

Status LocateStrtab(const Bytes& b, const std::string& path, const std::vector<Segment>& segs,
                    const std::vector<Section>& secs, const std::vector<DynEntry>& dyn, uint32_t link,
                    uint64_t& table, uint64_t& size) {
  std::optional<uint64_t> addr, strsz;
  for (const DynEntry& e : dyn) {
    if (e.tag == kDtStrtab) addr = e.value;
    if (e.tag == kDtStrsz) strsz = e.value;
  }
  uint64_t avail = 0;
  if (addr && VaddrToOffset(segs, *addr, table, avail)) {
    size = strsz ? std::min(*strsz, avail) : avail;
  } else if (link < secs.size() && secs[link].type == kShtStrtab) {
    table = secs[link].offset;  // fall back to .dynstr, found via the dynamic section's link
    size = secs[link].size;
  } else {
    return Corrupt(path, "the dynamic string table (DT_STRTAB) cannot be located");
  }
  if (!b.Has(table, size)) return Corrupt(path, "the dynamic string table lies outside the file");
  return Status::Ok();
}

Status ReadDynamic(const Bytes& b, const std::string& path, const std::vector<Segment>& segs,
                   const std::vector<Section>& secs, ElfInfo& info) {
  std::vector<DynEntry> dyn;
  uint32_t link = UINT32_MAX;
  VIGIL_RETURN_IF_ERROR(FindDynamic(b, path, segs, secs, dyn, link));
  bool wants_strings = false;
  for (const DynEntry& e : dyn) {
    wants_strings |= e.tag == kDtNeeded || e.tag == kDtSoname || e.tag == kDtRpath || e.tag == kDtRunpath;
  }
  if (!wants_strings) return Status::Ok();
  uint64_t table = 0, size = 0;
  VIGIL_RETURN_IF_ERROR(LocateStrtab(b, path, segs, secs, dyn, link, table, size));
  for (const DynEntry& e : dyn) {
    if (e.tag != kDtNeeded && e.tag != kDtSoname && e.tag != kDtRpath && e.tag != kDtRunpath) continue;
    VIGIL_ASSIGN_OR_RETURN(std::string s, TableString(b, path, table, size, e.value));
    if (e.tag == kDtNeeded) info.needed.push_back(std::move(s));
    if (e.tag == kDtSoname) info.soname = std::move(s);
    if (e.tag == kDtRpath) info.rpath = SplitPath(s);
    if (e.tag == kDtRunpath) info.runpath = SplitPath(s);
  }
  return Status::Ok();
}

std::string Hex(const uint8_t* p, uint64_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (uint64_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 15]);
  }
  return out;
}

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Walks one note area; returns the GNU build-id's hex, or "" if absent.
// Notes pad to 4 bytes, except areas aligned to 8 (gABI, as readelf reads them).
std::string BuildIdInNotes(const Bytes& b, uint64_t offset, uint64_t size, uint64_t align) {
  if (!b.Has(offset, size)) return {};
  const uint64_t pad = align == 8 ? 8 : 4;
  uint64_t at = 0;
  while (size - at >= 12) {
    const uint64_t namesz = b.U32(offset + at);
    const uint64_t descsz = b.U32(offset + at + 4);
    const uint32_t type = b.U32(offset + at + 8);
    const uint64_t name_at = at + 12;
    if (namesz > size - name_at) return {};
    const uint64_t desc_at = name_at + AlignUp(namesz, pad);
    if (desc_at > size || descsz > size - desc_at) return {};
    const bool gnu = namesz == 4 && std::memcmp(b.At(offset + name_at), "GNU", 4) == 0;
    if (gnu && type == kNtGnuBuildId && descsz > 0) return Hex(b.At(offset + desc_at), descsz);
    const uint64_t next = desc_at + AlignUp(descsz, pad);
    if (next <= at) return {};
    at = next;
  }
  return {};
}

std::string FindBuildId(const Bytes& b, const std::vector<Segment>& segs, const std::vector<Section>& secs) {
  for (const Segment& s : segs) {
    if (s.type != kPtNote) continue;
    std::string id = BuildIdInNotes(b, s.offset, s.filesz, s.align);
    if (!id.empty()) return id;
  }
  for (const Section& s : secs) {  // objects without program headers (e.g. .o, debug files)
    if (s.type != kShtNote) continue;
    std::string id = BuildIdInNotes(b, s.offset, s.size, s.align);
    if (!id.empty()) return id;
  }
  return {};
}

}  // namespace

Result<ElfIdentity> ParseElfIdentity(std::span<const uint8_t> bytes, const std::string& path) {
  static constexpr std::array<uint8_t, 4> kMagic = {0x7f, 'E', 'L', 'F'};
  if (bytes.size() < 4 || std::memcmp(bytes.data(), kMagic.data(), 4) != 0) {
    return EnvironmentError("'{}' is not an ELF file", path)
        .WithFact("path", path)
        .WithCause("it may be a linker script or a text file that only build tools read");
  }
  if (bytes.size() < kIdentSize + 4) return Corrupt(path, "the file is too short for an ELF header");
  ElfIdentity id;
  const uint8_t cls = bytes[4], data = bytes[5];
  if (cls != kElfClass32 && cls != kElfClass64) return Corrupt(path, "unknown ELF class");
  if (data != kElfDataLsb && data != kElfDataMsb) return Corrupt(path, "unknown ELF data encoding");
  id.is_64bit = cls == kElfClass64;
  id.little_endian = data == kElfDataLsb;
  id.machine = id.little_endian ? static_cast<uint16_t>(bytes[18] | (bytes[19] << 8))
                                : static_cast<uint16_t>((bytes[18] << 8) | bytes[19]);
  return id;
}

Result<ElfInfo> ParseElf(std::span<const uint8_t> bytes, const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(ElfIdentity id, ParseElfIdentity(bytes, path));
  if (!id.little_endian) {
    return UnsupportedError("'{}' is a big-endian ELF file, which vigil does not read", path)
        .WithFact("path", path)
        .WithCause("it was built for another architecture; this machine's loader cannot use it either");
  }
  ElfInfo info;
  info.is_64bit = id.is_64bit;
  info.machine = id.machine;
  const Bytes b(bytes, id.is_64bit);
  Header h;
  std::vector<Section> secs;
  std::vector<Segment> segs;
  VIGIL_RETURN_IF_ERROR(ReadHeader(b, path, h));
  VIGIL_RETURN_IF_ERROR(ReadSections(b, path, h, secs));
  VIGIL_RETURN_IF_ERROR(ReadSegments(b, path, h, segs));
  VIGIL_RETURN_IF_ERROR(ReadDynamic(b, path, segs, secs, info));
  info.build_id = FindBuildId(b, segs, secs);
  for (const Segment& s : segs) {
    if (s.type == kPtLoad) info.loads.push_back({s.offset, s.vaddr, s.filesz});
  }
  return info;
}

uint64_t FileOffsetToVaddr(const ElfInfo& elf, uint64_t file_offset) {
  for (const ElfInfo::LoadSegment& s : elf.loads) {
    if (file_offset >= s.offset && file_offset - s.offset < s.filesz) return s.vaddr + (file_offset - s.offset);
  }
  return file_offset;
}

Result<ElfInfo> ReadElf(const std::string& path) {
  VIGIL_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  return ParseElf(file->bytes(), path);
}

Result<ElfIdentity> ReadElfIdentity(const std::string& path) {
  // Reads 20 bytes instead of mapping: the resolver calls this on many files.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return EnvironmentError("cannot open '{}': {}", path, std::strerror(err)).WithFact("path", path);
  }
  std::array<uint8_t, kIdentSize + 4> head{};
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  if (n < 0) return EnvironmentError("cannot read '{}'", path).WithFact("path", path);
  return ParseElfIdentity(std::span<const uint8_t>(head.data(), static_cast<size_t>(n)), path);
}

}  // namespace vigil::doctor
