// A program outside the flashproof tree, built against an installed flashproof (tests/package/):
// once through find_package(flashproof), once with `pkg-config --cflags --libs flashproof`.
// Usage: flashproof_consumer ROUTINE.fp — parses the routine, checks it, interprets it on inputs
// 1, 2, 3, ... and prints every output (in name order).
#include <cstdio>
#include <utility>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/text_parser.h"
#include "flashproof/version.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s ROUTINE.fp\n", argv[0]);
    return fp::kExitUsage;
  }
  try {
    const fp::Routine routine = fp::parse_routine_file(argv[1]);
    fp::check_routine_or_throw(routine, argv[1]);
    fp::TensorMap inputs;
    for (const fp::Node* node : routine.inputs()) {
      fp::Tensor t = fp::Tensor::zeros(node->prec, node->dims);
      for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<double>(i + 1);
      inputs.emplace(node->name, std::move(t));
    }
    const fp::TensorMap outputs = fp::interpret(routine, inputs, {argv[1]});
    std::printf("flashproof %s: %s:", FLASHPROOF_VERSION, routine.name.c_str());
    const char* sep = " ";
    for (const auto& [name, value] : outputs) {
      for (double v : value.data) {
        std::printf("%s%s = %.9g", sep, name.c_str(), v);
        sep = ", ";
      }
    }
    std::printf("\n");
  } catch (const fp::UserError& e) {
    std::fprintf(stderr, "%s:%d:%d: %s\n", e.file().c_str(), e.line(), e.col(), e.message().c_str());
    return e.code();
  }
  return 0;
}
