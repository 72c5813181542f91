// The `exec` target: the compiled executors against the interpreter, bitwise.
//
// Property: on a random well-formed routine (fuzz/random_routine.h: every op and precision, scans,
// guards, locals, dead loops, special constants) and FP-hostile inputs (fuzz/hostile_data.h), the
// compiled C program's outputs are the interpreter's, bit for bit (NaN payloads aside, as
// verify/compare.h's bitwise check says), and so are CUDA's where a GPU is present (without one,
// FLASHPROOF_FUZZ_CUDA_EMU=1 runs the CUDA kernels on the CPU emulation, exec/cuda_emulator.h).
//
// Input format: one header line `data-seed N hostile P`, then the routine's .fp text.
#include <fmt/format.h>

#include <charconv>
#include <cstdlib>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "exec/executor.h"
#include "fuzz/case_header.h"
#include "fuzz/hostile_data.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"
#include "verify/compare.h"

namespace fp::fuzz {
namespace {

const char* const kExpectedHeader = "expected the header `data-seed N hostile P` (P from 0 to 100), then a routine";

rc::Gen<std::string> exec_input() {
  RandomRoutineOptions wide;
  wide.max_extent = 9;
  return rc::gen::apply(
      [](const Routine& r, std::uint64_t seed, int hostile) {
        return case_header_text("data-seed", static_cast<std::int64_t>(seed), "hostile", hostile, print_routine(r));
      },
      rc::gen::weightedOneOf<Routine>({{3, gen_routine()}, {1, gen_routine(wide)}}),
      rc::gen::inRange<std::uint64_t>(1, 1000000), rc::gen::element(0, 0, 5, 25, 100));
}

// The ops and statement kinds a routine uses, with their precisions: what an execution covered.
std::set<std::string> routine_features(const Routine& r) {
  std::set<std::string> f;
  for_each_stmt(r.body, [&](const Stmt& s) {
    if (s.kind == StmtKind::Scan) f.insert("stmt:scan");
    if (s.kind == StmtKind::If) f.insert("stmt:if");
    if (s.kind == StmtKind::For && s.to < s.from) f.insert("stmt:dead-loop");
    for_each_own_expr(s, [&](const ExprP& e) {
      for_each_expr(e, [&](const Expr& x) {
        const char* p = prec_name(x.prec);
        if (x.kind == ExprKind::Unary) f.insert(fmt::format("op:{}.{}", unop_name(x.unop()), p));
        if (x.kind == ExprKind::Binary) f.insert(fmt::format("op:{}.{}", binop_name(x.binop()), p));
        if (x.kind == ExprKind::Ternary) f.insert(fmt::format("op:{}.{}", ternop_name(x.ternop()), p));
      });
    });
  });
  for (const Node& n : r.nodes) f.insert(fmt::format("node:{}.{}", mem_mode_name(n.mode), prec_name(n.prec)));
  return f;
}

bool cuda_emulation_requested() {
  const char* e = std::getenv("FLASHPROOF_FUZZ_CUDA_EMU");
  return e && std::string(e) == "1";
}

Execution run_exec(const std::string& input, const std::string& name) {
  const CaseHeader c = parse_case_header(input, name, "data-seed", 0, "hostile", 0, 100, kExpectedHeader);
  const Routine r = parse_routine(c.body, name);
  if (auto problems = check_routine(r); !problems.empty())
    throw UserError(kExitMalformed, name, problems[0].loc.line, problems[0].loc.col,
                    "the routine is not well formed: " + problems[0].message);
  Execution x;
  x.features = routine_features(r);
  const TensorMap in = hostile_inputs(r, static_cast<std::uint64_t>(c.first), static_cast<int>(c.second));
  const TensorMap want = interpret(r, in);
  static const bool cuda_available = static_cast<bool>(make_executor("cuda")->available());
  // Without a GPU, FLASHPROOF_FUZZ_CUDA_EMU=1 runs the CUDA kernels on the CPU emulation instead.
  static const char* const cuda = cuda_available || !cuda_emulation_requested() ? "cuda" : "cuda-emu";
  for (const char* executor : {"c", cuda}) {
    auto ex = make_executor(executor, ExecOptions{});
    if (std::string(executor) == "cuda" ? !cuda_available : !ex->available()) {
      x.features.insert(fmt::format("skipped:{}", executor));
      continue;
    }
    x.features.insert(fmt::format("ran:{}", executor));
    const TensorMap got = ex->compile(r)->run(in);
    if (auto m = verify::compare_outputs(verify::bitwise_output_checks(r), want, got)) {
      x.finding = Finding{"exec-mismatch", executor,
                          fmt::format("the {} executor and the interpreter differ: {}", executor, m->text()), {}};
      return x;
    }
  }
  return x;
}

}  // namespace

Target exec_target() {
  return Target{.name = "exec",
                .description = "interpreter vs compiled C (vs CUDA with a GPU), bitwise, on random routines and hostile data",
                .input_kind = "`data-seed N hostile P` line + .fp text",
                .generate = drawing_from(exec_input()),
                .run = run_exec};
}

}  // namespace fp::fuzz
