// The running build's identity (core/support/build_identity.h).

#include "core/support/build_identity.h"

#include <elf.h>
#include <link.h>
#include <sys/random.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "core/support/sha256.h"

namespace fp {

namespace {

std::size_t align_up(std::size_t v, std::size_t a) {
  return (v + a - 1) / a * a;
}

// The build-id in one PT_NOTE segment, or "".
std::string build_id_in(const unsigned char* p, std::size_t size, std::size_t align) {
  std::size_t at = 0;
  while (at + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) h;
    std::memcpy(&h, p + at, sizeof h);
    const std::size_t name_at = at + sizeof h;
    const std::size_t desc_at = name_at + align_up(h.n_namesz, align);
    const std::size_t next = desc_at + align_up(h.n_descsz, align);
    if (desc_at + h.n_descsz > size) break;
    if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && std::memcmp(p + name_at, "GNU", 4) == 0 &&
        h.n_descsz > 0)
      return hex_of(p + desc_at, h.n_descsz);
    at = next;
  }
  return "";
}

// The first object dl_iterate_phdr reports is the executable.
int find_executable_build_id(dl_phdr_info* info, std::size_t, void* out) {
  auto* id = static_cast<std::string*>(out);
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && id->empty(); ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    *id = build_id_in(p, ph.p_memsz, ph.p_align == 8 ? 8 : 4);
  }
  return 1;  // stop after the executable
}

std::string compute() {
  std::string id;
  dl_iterate_phdr(find_executable_build_id, &id);
  if (!id.empty()) return "gnu-build-id:" + id;
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(exe)), std::istreambuf_iterator<char>());
  if (exe.good() || (exe.eof() && !bytes.empty())) return "exe-sha256:" + sha256_hex(bytes);
  unsigned char r[16] = {};
  if (getrandom(r, sizeof r, 0) != static_cast<ssize_t>(sizeof r)) {
    const auto addr = reinterpret_cast<std::uintptr_t>(&r);
    std::memcpy(r, &addr, sizeof addr);
  }
  return "unidentified:" + hex_of(r, sizeof r);
}

}  // namespace

const std::string& build_identity() {
  static const std::string id = compute();
  return id;
}

}  // namespace fp
