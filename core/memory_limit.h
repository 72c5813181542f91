#pragma once
// How much memory one run of a routine may take (--max-memory): a size, or unlimited. The default
// is 80% of the memory this process can get: the smaller of MemAvailable (/proc/meminfo) and the
// limit of its memory cgroup (v2 memory.max, v1 memory.limit_in_bytes) when one is set. The 20%
// left is for what the estimate does not count (the program itself, the solver, the allocator's
// slack). Every command that executes a routine checks its estimate against the limit before it
// allocates anything (exec/run_memory.h).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fp {

struct MemoryLimit {
  std::optional<std::int64_t> bytes;  // nullopt: unlimited
  std::string origin;                 // how it was chosen, for messages ("--max-memory 8G", ...)
};

// "unlimited", or a number with an optional binary unit: 4096, 512K, 512M, 8G, 1.5G, 2T (K, M, G,
// T are powers of 1024; "KiB", "MB", ... are read the same way; case does not matter). Anything
// else, or a size past 2^62 bytes, is std::nullopt.
std::optional<MemoryLimit> parse_memory_limit(std::string_view text);

// The default described above; unlimited when no figure can be read.
MemoryLimit default_memory_limit();

// The flag's value when given, else the default. A malformed value is UserError 64.
MemoryLimit resolve_memory_limit(const std::string& flag);

// "512 B", "1.5 KiB", "8.0 GiB": for messages.
std::string format_bytes(std::int64_t bytes);

}  // namespace fp
