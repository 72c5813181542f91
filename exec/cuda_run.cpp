// One run of generated CUDA on a device (exec/cuda_run.h).

#include "exec/cuda_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/diagnostic.h"
#include "core/input_validation.h"
#include "exec/native_buffers.h"

namespace fp {

namespace {

constexpr std::uint32_t kPoison32 = 0x7FF47FF4u;  // f64 cells: 0x7FF47FF47FF47FF4 (a NaN); f32: a NaN
constexpr std::uint16_t kPoison16 = 0x7FDAu;      // a NaN in f16 and in bf16
// The i32 outputs' two patterns (every i32 pattern is a legal value, hence two runs).
constexpr std::uint32_t kPoisonI32[2] = {0x7FF47FF4u, 0x80C0FFEEu};

std::uint64_t cell_bits(const NativeBuffer& b, std::int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(b.data());
  const int w = prec_bytes(b.prec());
  std::uint64_t u = 0;
  std::memcpy(&u, bytes + static_cast<std::size_t>(w) * static_cast<std::size_t>(i), static_cast<std::size_t>(w));
  return u;
}

// The float poison pattern of a cell of precision p.
std::uint64_t float_poison(Prec p) {
  switch (prec_bytes(p)) {
    case 8:
      return std::uint64_t{kPoison32} << 32 | kPoison32;
    case 4:
      return kPoison32;
    default:
      return kPoison16;
  }
}

// The first cell holding `pattern`, or -1.
std::int64_t first_holding(const NativeBuffer& b, std::uint64_t pattern) {
  for (std::int64_t i = 0; i < b.cells(); ++i)
    if (cell_bits(b, i) == pattern) return i;
  return -1;
}

std::size_t node_bytes(const Node& n) {
  return static_cast<std::size_t>(n.cell_count()) * static_cast<std::size_t>(prec_bytes(n.prec));
}

struct Outputs {
  std::vector<NativeBuffer> host;  // per node (empty where not an output)
};

class Run {
 public:
  Run(const ProgramPlan& plan, const CudaProgramText& text, const TensorMap& inputs, const std::string& source)
      : plan_(plan), text_(text), source_(source.empty() ? plan.placed.name : source) {
    const auto& nodes = plan_.placed.nodes;
    inputs_.resize(nodes.size());
    bool input_holds_poison = false;
    for (std::size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].is_input) {
        inputs_[i] = NativeBuffer::from_tensor(validated_input(nodes[i], inputs, source));
        input_holds_poison = input_holds_poison || holds_float_poison(inputs_[i]);
      }
    // Outputs whose first writer overwrites every cell (their initial zeros are never observed).
    poisoned_.assign(nodes.size(), false);
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      poisoned_[i] = n.is_output && !n.is_input && !plan_.is_virtual(n.name) &&
                     (n.prec == Prec::I32 || !input_holds_poison) && plan_.overwritten_first(static_cast<int>(i));
    }
  }

  bool needs_second_run() const {
    for (std::size_t i = 0; i < plan_.placed.nodes.size(); ++i)
      if (poisoned_[i] && plan_.placed.nodes[i].prec == Prec::I32) return true;
    return false;
  }

  // One run with the i32 outputs poisoned with kPoisonI32[pass].
  Outputs once(CudaDevice& d, int pass, RunStats& stats) const {
    const auto& nodes = plan_.placed.nodes;
    std::vector<CudaDevice::Buffer> dev(nodes.size(), 0);
    stats.peak_bytes = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (plan_.is_virtual(n.name) || is_private(i)) continue;
      dev[i] = d.alloc(node_bytes(n), n.name);
      stats.peak_bytes += static_cast<std::int64_t>(node_bytes(n));
      if (n.is_input) {
        d.upload(dev[i], inputs_[i].data(), node_bytes(n), "input '" + n.name + "'");
      } else if (poisoned_[i]) {
        const std::uint32_t pattern = n.prec == Prec::I32 ? kPoisonI32[pass] : kPoison32;
        const int w = prec_bytes(n.prec) == 2 ? 2 : 4;
        d.fill(dev[i], w, w == 2 ? kPoison16 : pattern, node_bytes(n) / static_cast<std::size_t>(w),
               "poison '" + n.name + "'");
      } else {
        d.fill(dev[i], 1, 0, node_bytes(n), "zero '" + n.name + "'");
      }
    }
    d.start_clock();
    for (const CudaLaunch& l : text_.launches) {
      const std::string where = fmt::format("statement {} of {}", l.position + 1, source_);
      if (l.kind == CudaLaunch::Kind::Memset) {
        const Node& n = nodes[static_cast<std::size_t>(l.node)];
        d.fill(dev[static_cast<std::size_t>(l.node)], 1, 0, node_bytes(n), where);
        continue;
      }
      std::vector<CudaDevice::Buffer> args;
      for (int p : l.params) args.push_back(dev[static_cast<std::size_t>(p)]);
      d.launch(l, cuda_geometry(l), args, l.kernel + ", " + where);
    }
    stats.compute_seconds = d.stop_clock();
    Outputs out;
    out.host.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (!n.is_output) continue;
      out.host[i] = NativeBuffer::zeros(n.prec, n.cell_count());
      d.download(out.host[i].data(), dev[i], out.host[i].bytes(), "output '" + n.name + "'");
      if (poisoned_[i] && n.prec != Prec::I32) never_written(i, first_holding(out.host[i], float_poison(n.prec)));
    }
    return out;
  }

  // The i32 outputs' cells that held each run's pattern.
  void check_two_runs(const Outputs& a, const Outputs& b) const {
    for (std::size_t i = 0; i < plan_.placed.nodes.size(); ++i) {
      if (!poisoned_[i] || plan_.placed.nodes[i].prec != Prec::I32) continue;
      for (std::int64_t c = 0; c < a.host[i].cells(); ++c)
        if (cell_bits(a.host[i], c) == kPoisonI32[0] && cell_bits(b.host[i], c) == kPoisonI32[1])
          never_written(i, c);
    }
  }

  TensorMap tensors(const Outputs& o) const {
    TensorMap out;
    for (std::size_t i = 0; i < plan_.placed.nodes.size(); ++i) {
      const Node& n = plan_.placed.nodes[i];
      if (n.is_output) out.emplace(n.name, o.host[i].to_tensor(n.dims));
    }
    return out;
  }

 private:
  static bool holds_float_poison(const NativeBuffer& b) {
    return b.prec() != Prec::I32 && first_holding(b, float_poison(b.prec())) >= 0;
  }
  bool is_private(std::size_t i) const {
    return std::find(text_.private_nodes.begin(), text_.private_nodes.end(), static_cast<int>(i)) !=
           text_.private_nodes.end();
  }
  void never_written(std::size_t i, std::int64_t cell) const {
    const Node& n = plan_.placed.nodes[i];
    FP_INTERNAL_CHECK(cell < 0, "CUDA executor: cell {} of output '{}' was never written (its poison survived the run of {})",
                      cell_text(n.dims, cell), n.name, source_);
  }

  const ProgramPlan& plan_;
  const CudaProgramText& text_;
  std::string source_;
  std::vector<NativeBuffer> inputs_;  // per node: the input's cells at its width (empty otherwise)
  std::vector<bool> poisoned_;        // per node: an output poisoned before the run
};

}  // namespace

CudaDevice::Buffer HostMemoryDevice::alloc(std::size_t bytes, const std::string&) {
  buffers_.emplace_back(bytes == 0 ? 1 : bytes, static_cast<unsigned char>(0xCD));
  return buffers_.size();
}

void HostMemoryDevice::upload(Buffer to, const void* from, std::size_t bytes, const std::string&) {
  std::memcpy(at(to), from, bytes);
}

void HostMemoryDevice::download(void* to, Buffer from, std::size_t bytes, const std::string&) {
  std::memcpy(to, at(from), bytes);
}

void HostMemoryDevice::fill(Buffer b, int width, std::uint32_t pattern, std::size_t count, const std::string&) {
  unsigned char* p = at(b);
  const auto w = static_cast<std::size_t>(width);
  for (std::size_t i = 0; i < count; ++i) std::memcpy(p + i * w, &pattern, w);
}

void HostMemoryDevice::start_clock() { t0_ = std::chrono::steady_clock::now(); }

double HostMemoryDevice::stop_clock() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

TensorMap run_cuda_program(const ProgramPlan& plan, const CudaProgramText& text, const CudaDeviceFactory& make,
                           const TensorMap& inputs, const std::string& source_name, RunStats& stats) {
  Run run(plan, text, inputs, source_name);
  Outputs first;
  {
    std::unique_ptr<CudaDevice> d = make();
    first = run.once(*d, 0, stats);
  }
  if (run.needs_second_run()) {
    RunStats ignored;
    std::unique_ptr<CudaDevice> d = make();
    run.check_two_runs(first, run.once(*d, 1, ignored));
  }
  return run.tensors(first);
}

}  // namespace fp
