#pragma once
// Tensors in the compiled executors' memory layout: C order, each cell at the node's width (f64
// double, f32 float, f16 and bf16 their 16-bit patterns, i32 int32), 64-byte aligned, owned
// (released with free(): buffers the generated C allocates with posix_memalign are adopted).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace fp {

class NativeBuffer {
 public:
  NativeBuffer() = default;
  ~NativeBuffer();
  NativeBuffer(NativeBuffer&& o) noexcept;
  NativeBuffer& operator=(NativeBuffer&& o) noexcept;
  NativeBuffer(const NativeBuffer&) = delete;
  NativeBuffer& operator=(const NativeBuffer&) = delete;

  // A zero-filled buffer of `cells` cells.
  static NativeBuffer zeros(Prec p, std::int64_t cells);
  // The tensor's values at its precision (which they must be representable at).
  static NativeBuffer from_tensor(const Tensor& t);
  // Takes ownership of memory from malloc/posix_memalign.
  static NativeBuffer adopt(void* data, Prec p, std::int64_t cells);

  Tensor to_tensor(const std::vector<std::int64_t>& dims) const;
  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t bytes() const {
    return static_cast<std::size_t>(cells_) * static_cast<std::size_t>(prec_bytes(prec_));
  }
  Prec prec() const { return prec_; }
  std::int64_t cells() const { return cells_; }

 private:
  void* data_ = nullptr;
  Prec prec_ = Prec::F32;
  std::int64_t cells_ = 0;
};

}  // namespace fp
