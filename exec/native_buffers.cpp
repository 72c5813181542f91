// Native tensor buffers (exec/native_buffers.h).

#include "exec/native_buffers.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "core/numerics.h"

namespace fp {

NativeBuffer::~NativeBuffer() {
  std::free(data_);
}

NativeBuffer::NativeBuffer(NativeBuffer&& o) noexcept : data_(o.data_), prec_(o.prec_), cells_(o.cells_) {
  o.data_ = nullptr;
  o.cells_ = 0;
}

NativeBuffer& NativeBuffer::operator=(NativeBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    prec_ = o.prec_;
    cells_ = o.cells_;
    o.data_ = nullptr;
    o.cells_ = 0;
  }
  return *this;
}

NativeBuffer NativeBuffer::zeros(Prec p, std::int64_t cells) {
  NativeBuffer b;
  b.prec_ = p;
  b.cells_ = cells;
  const std::size_t n = b.bytes() == 0 ? 1 : b.bytes();
  if (posix_memalign(&b.data_, 64, (n + 63) / 64 * 64) != 0) throw std::bad_alloc();
  std::memset(b.data_, 0, n);
  return b;
}

NativeBuffer NativeBuffer::adopt(void* data, Prec p, std::int64_t cells) {
  NativeBuffer b;
  b.data_ = data;
  b.prec_ = p;
  b.cells_ = cells;
  return b;
}

NativeBuffer NativeBuffer::from_tensor(const Tensor& t) {
  NativeBuffer b = zeros(t.prec, t.size());
  const std::size_t n = t.data.size();
  switch (t.prec) {
    case Prec::F64:
      std::memcpy(b.data_, t.data.data(), n * sizeof(double));
      break;
    case Prec::F32: {
      auto* d = static_cast<float*>(b.data_);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>(t.data[i]);
      break;
    }
    case Prec::F16: {
      auto* d = static_cast<std::uint16_t*>(b.data_);
      for (std::size_t i = 0; i < n; ++i) d[i] = f16_bits(t.data[i]);
      break;
    }
    case Prec::BF16: {
      auto* d = static_cast<std::uint16_t*>(b.data_);
      for (std::size_t i = 0; i < n; ++i) d[i] = bf16_bits(t.data[i]);
      break;
    }
    case Prec::I32: {
      auto* d = static_cast<std::int32_t*>(b.data_);
      for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::int32_t>(t.data[i]);
      break;
    }
  }
  return b;
}

Tensor NativeBuffer::to_tensor(const std::vector<std::int64_t>& dims) const {
  Tensor t;
  t.prec = prec_;
  t.dims = dims;
  t.data.resize(static_cast<std::size_t>(cells_));
  const std::size_t n = t.data.size();
  switch (prec_) {
    case Prec::F64:
      std::memcpy(t.data.data(), data_, n * sizeof(double));
      break;
    case Prec::F32: {
      const auto* s = static_cast<const float*>(data_);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = s[i];
      break;
    }
    case Prec::F16: {
      const auto* s = static_cast<const std::uint16_t*>(data_);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = f16_value(s[i]);
      break;
    }
    case Prec::BF16: {
      const auto* s = static_cast<const std::uint16_t*>(data_);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = bf16_value(s[i]);
      break;
    }
    case Prec::I32: {
      const auto* s = static_cast<const std::int32_t*>(data_);
      for (std::size_t i = 0; i < n; ++i) t.data[i] = s[i];
      break;
    }
  }
  return t;
}

}  // namespace fp
