#pragma once
// Results computed from a (source, target) pair, kept per process: several claims of one
// application ask for the same structural lift or cross-check instance. An entry is keyed by the
// two statement trees' addresses — pinned by the entry, so an address is never reused while it
// lives —, both routines' node declarations and the caller's own key (the application, limits);
// only what the caller chooses to put is kept.

#include <fmt/format.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ir.h"
#include "verify/program_equality.h"

namespace fp::verify {

template <class T>
class RoutinePairMemo {
 public:
  explicit RoutinePairMemo(std::size_t capacity) : capacity_(capacity) {}

  std::optional<T> find(const Routine& src, const Routine& tgt, const std::string& extra) {
    const std::string k = key(src, tgt, extra);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(k);
    if (it == entries_.end()) return std::nullopt;
    return it->second.second;
  }

  void put(const Routine& src, const Routine& tgt, const std::string& extra, T value) {
    std::string k = key(src, tgt, extra);
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= capacity_) entries_.clear();
    entries_.emplace(std::move(k), std::make_pair(std::vector<StmtP>{src.body, tgt.body}, std::move(value)));
  }

 private:
  static std::string key(const Routine& src, const Routine& tgt, const std::string& extra) {
    return fmt::format("{}|{}|{}|{}|{}", static_cast<const void*>(src.body.get()),
                       static_cast<const void*>(tgt.body.get()), declarations_signature(src),
                       declarations_signature(tgt), extra);
  }

  std::size_t capacity_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::vector<StmtP>, T>> entries_;
};

}  // namespace fp::verify
