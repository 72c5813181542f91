// The `exec` target: the compiled executors against the interpreter, bitwise.
//
// Property: on a random well-formed routine (fuzz/random_routine.h: every op and precision, scans,
// guards, locals, dead loops, special constants) and FP-hostile inputs (fuzz/hostile_data.h), the
// compiled C program's outputs are the interpreter's, bit for bit (NaN payloads aside, as
// verify/compare.h's bitwise check says), and so are CUDA's where a GPU is present.
//
// Input format: one header line `data-seed N hostile P`, then the routine's .fp text.
#include <fmt/format.h>

#include <charconv>

#include "core/checker.h"
#include "core/diagnostic.h"
#include "core/interpreter.h"
#include "core/ir_visit.h"
#include "core/text_parser.h"
#include "core/text_printer.h"
#include "exec/executor.h"
#include "fuzz/hostile_data.h"
#include "fuzz/random_routine.h"
#include "fuzz/target.h"
#include "verify/compare.h"

namespace fp::fuzz {
namespace {

struct ExecCase {
  std::uint64_t data_seed = 1;
  int hostile_percent = 0;
  std::string routine_text;
};

std::string exec_case_text(const ExecCase& c) {
  return fmt::format("data-seed {} hostile {}\n{}", c.data_seed, c.hostile_percent, c.routine_text);
}

ExecCase parse_exec_case(const std::string& text, const std::string& name) {
  const auto eol = text.find('\n');
  const std::string head = text.substr(0, eol);
  ExecCase c;
  char seed_word[16] = {}, hostile_word[16] = {};
  unsigned long long seed = 0;
  int hostile = -1, used = 0;
  if (std::sscanf(head.c_str(), "%15s %llu %15s %d%n", seed_word, &seed, hostile_word, &hostile, &used) != 4 ||
      std::string(seed_word) != "data-seed" || std::string(hostile_word) != "hostile" ||
      static_cast<std::size_t>(used) != head.size() || hostile < 0 || hostile > 100)
    throw UserError(kExitMalformed, name, 1, 1,
                    "expected the header `data-seed N hostile P` (P from 0 to 100), then a routine");
  c.data_seed = seed;
  c.hostile_percent = hostile;
  c.routine_text = eol == std::string::npos ? "" : text.substr(eol + 1);
  return c;
}

rc::Gen<std::string> exec_input() {
  RandomRoutineOptions wide;
  wide.max_extent = 9;
  return rc::gen::apply(
      [](const Routine& r, std::uint64_t seed, int hostile) {
        return exec_case_text(ExecCase{seed, hostile, print_routine(r)});
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

// The first output of `r` whose cells differ bitwise between two runs.
std::optional<verify::Mismatch> bitwise_difference(const Routine& r, const TensorMap& a, const TensorMap& b) {
  for (const Node* n : r.outputs()) {
    verify::NodeCheck check;
    check.node = n->name;
    const verify::OutputComparison c = verify::compare_output(check, a, b);
    if (!c.ok()) return c.first;
  }
  return std::nullopt;
}

Execution run_exec(const std::string& input, const std::string& name) {
  const ExecCase c = parse_exec_case(input, name);
  const Routine r = parse_routine("\n" + c.routine_text, name);  // line numbers are the file's
  if (auto problems = check_routine(r); !problems.empty())
    throw UserError(kExitMalformed, name, problems[0].loc.line, problems[0].loc.col,
                    "the routine is not well formed: " + problems[0].message);
  Execution x;
  x.features = routine_features(r);
  const TensorMap in = hostile_inputs(r, c.data_seed, c.hostile_percent);
  const TensorMap want = interpret(r, in);
  static const bool cuda_available = static_cast<bool>(make_executor("cuda")->available());
  for (const char* executor : {"c", "cuda"}) {
    auto ex = make_executor(executor, ExecOptions{});
    if (std::string(executor) == "cuda" ? !cuda_available : !ex->available()) {
      x.features.insert(fmt::format("skipped:{}", executor));
      continue;
    }
    x.features.insert(fmt::format("ran:{}", executor));
    const TensorMap got = ex->compile(r)->run(in);
    if (auto m = bitwise_difference(r, want, got)) {
      x.finding = Finding{"exec-mismatch", executor,
                          fmt::format("the {} executor and the interpreter differ: {}", executor, m->text()), {}};
      return x;
    }
  }
  return x;
}

}  // namespace

Target exec_target() {
  Target t;
  t.name = "exec";
  t.description = "interpreter vs compiled C (vs CUDA with a GPU), bitwise, on random routines and hostile data";
  t.input_kind = "`data-seed N hostile P` line + .fp text";
  t.generate = [](std::uint64_t seed) { return draw(exec_input(), seed); };
  t.run = run_exec;
  t.expected_rate = 3;
  return t;
}

}  // namespace fp::fuzz
