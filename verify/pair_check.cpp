#include "verify/pair_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "core/diagnostic.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/support/deadline.h"
#include "core/text_printer.h"
#include "verify/phase_clock.h"
#include "verify/smt/smt.h"
#include "verify/program_equality.h"
#include "verify/symbolic/commuted_equality.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

std::string dims_text(const std::vector<std::int64_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Inputs with special values sprinkled in, for the self-check.
TensorMap special_inputs(const Routine& r, std::uint64_t seed) {
  TensorMap in = random_inputs(r, seed);
  SplitMix64 rng(seed ^ 0x5e1fc4ec6ull);
  const double sp[] = {INFINITY, -INFINITY, NAN, 0.0, -0.0, 1e30, -1e30, 1.0};
  for (auto& [name, t] : in)
    for (auto& v : t.data)
      if (t.prec != Prec::I32 && rng.unit() < 0.2) v = round_to(t.prec, sp[rng.range(0, 7)]);
  return in;
}

struct CellRef {
  std::string node;
  std::int64_t cell;
  TermP src, tgt;
};

smt::SmtLimits smt_limits(const PairCheckOptions& o, const std::string& what) {
  smt::SmtLimits l;
  l.rlimit = o.limits.rlimit;
  l.timeout_s = o.limits.timeout_s;
  if (!o.dump_prefix.empty()) l.dump_path = o.dump_prefix + "-" + what + ".smt2";
  return l;
}

}  // namespace

std::vector<NodeCheck> claim_checks(const std::vector<std::string>& nodes, std::optional<double> rel) {
  std::vector<NodeCheck> checks;
  for (const auto& n : nodes) {
    NodeCheck c;
    c.node = n;
    if (rel) {
      c.kind = NodeCheck::Kind::Relative;
      c.rel = *rel;
    }
    checks.push_back(c);
  }
  return checks;
}

std::string pair_mismatch(const Routine& src, const Routine& tgt, const std::vector<std::string>& nodes) {
  auto si = src.inputs(), ti = tgt.inputs();
  if (si.size() != ti.size())
    return fmt::format("the source has {} inputs, the target {}", si.size(), ti.size());
  for (std::size_t i = 0; i < si.size(); ++i) {
    const Node* t = tgt.find_node(si[i]->name);
    if (!t || !t->is_input)
      return fmt::format("input {} of the source is not an input of the target", si[i]->name);
    if (t->dims != si[i]->dims || t->prec != si[i]->prec)
      return fmt::format("input {} is {}{} in the source but {}{} in the target", si[i]->name,
                         prec_name(si[i]->prec), dims_text(si[i]->dims), prec_name(t->prec),
                         dims_text(t->dims));
  }
  for (const auto& n : nodes) {
    const Node* a = src.find_node(n);
    const Node* b = tgt.find_node(n);
    if (!a || !b) return fmt::format("node {} is missing from the {}", n, a ? "target" : "source");
    if (a->dims != b->dims || a->prec != b->prec)
      return fmt::format("node {} is {}{} in the source but {}{} in the target", n, prec_name(a->prec),
                         dims_text(a->dims), prec_name(b->prec), dims_text(b->dims));
  }
  if (nodes.empty()) return "nothing to compare: no covered node (the source has no outputs)";
  return "";
}

std::string concrete_scope(const Routine& r) {
  std::string s = "sizes up to: the routine's own (";
  bool first = true;
  for (const Node* n : r.inputs()) {
    s += fmt::format("{}{}{}", first ? "" : ", ", n->name, dims_text(n->dims));
    first = false;
  }
  if (first) s += "no inputs";
  return s + ")";
}

namespace {

// What the phases of check_pair share: the pair, its runner on the interpreter, the options, the
// claim's word for messages and the one term store both sides run into.
struct PairContext {
  const Routine& src;
  const std::vector<std::string>& nodes;
  PairRunner& runner;
  const PairCheckOptions& o;
  const char* claim;
  TermStore& store;
};

// Symbolic execution of both sides into one store, each side's terms checked against the
// interpreter, into `cells` (every covered cell's pair of terms); false when the term budget ran
// out first.
bool symbolic_cells(PairContext& c, const Routine& tgt, std::vector<CellRef>& cells, PairCheck& res) {
  ScopedPhase phase("symbolic execution");
  try {
    SymMemory ms = symexec(c.src, c.store), mt = symexec(tgt, c.store);
    for (const auto& n : c.nodes) {
      const auto& a = ms.at(n);
      const auto& b = mt.at(n);
      for (std::size_t i = 0; i < a.size(); ++i)
        cells.push_back(CellRef{n, static_cast<std::int64_t>(i), a[i], b[i]});
    }
    res.steps.push_back(fmt::format("symbolic execution: {} cells of {}, {} distinct terms", cells.size(),
                                    fmt::join(c.nodes, ", "), c.store.size()));
    // Self-check against the interpreter: each side's terms are its values.
    check_interpreter_memory(c.runner.src(), c.runner.tgt(), "symbolic execution's self-check");
    for (std::uint64_t seed : {c.o.limits.seed, c.o.limits.seed + 7919}) {
      TensorMap in = seed == c.o.limits.seed ? random_inputs(c.src, seed) : special_inputs(c.src, seed);
      TensorMap os = interpret(c.runner.src(), in), ot = interpret(c.runner.tgt(), in);
      TermEvaluator es(c.store, in);
      std::size_t step = std::max<std::size_t>(1, cells.size() / 2000);
      for (std::size_t k = 0; k < cells.size(); k += step) {
        const CellRef& cell = cells[k];
        double vs = es.eval(cell.src), vt = es.eval(cell.tgt);
        double is = os.at(cell.node).data[static_cast<std::size_t>(cell.cell)];
        double it = ot.at(cell.node).data[static_cast<std::size_t>(cell.cell)];
        FP_INTERNAL_CHECK(
            same_value(vs, is) && same_value(vt, it),
            "symbolic execution disagrees with the interpreter at {}[{}]: terms give {} / {}, the "
            "interpreter {} / {}",
            cell.node, cell.cell, vs, vt, is, it);
      }
    }
    res.steps.push_back(
        "self-check: the terms of each side evaluate to the interpreter's values (2 input sets)");
  } catch (const TermLimitExceeded& e) {
    res.steps.push_back(fmt::format("symbolic execution stopped: {}", e.what()));
    return false;
  }
  return true;
}

// The concrete counterexample search (a real-exp counterexample is the best answer there is):
// true when it refuted the pair (res decided).
bool refuted_by_search(PairContext& c, PairCheck& res) {
  if (auto found = search_counterexample(c.runner, c.o.limits.search_trials, c.o.limits.seed)) {
    res.steps.push_back(
        fmt::format("counterexample search: trial {} ({}) differs", found->trial, found->family));
    res.kind = VerdictKind::Refuted;
    res.message = fmt::format("not {}: {}", c.claim, found->mismatch.text());
    res.counterexample = std::move(*found);
    return true;
  }
  const int trials = scaled_search_trials(c.runner, c.o.limits.search_trials);
  res.steps.push_back(fmt::format("counterexample search: {} trials{}, none differs", trials,
                                  trials < c.o.limits.search_trials ? " (scaled down with the routines' size)" : ""));
  return false;
}

// The encoding compared with itself (Alive2's self-check), and evaluated on concrete inputs
// against the semantics: a failure is a bug of the encoding, never a verdict.
void check_encoding(PairContext& c, const std::vector<CellRef>& differing, PairCheck& res) {
  std::vector<TermP> sample;
  for (std::size_t k = 0; k < differing.size() && sample.size() < 16; ++k) {
    sample.push_back(differing[k].src);
    sample.push_back(differing[k].tgt);
  }
  smt::SmtOutcome self = smt::self_check(c.store, sample, smt_limits(c.o, "self"));
  FP_INTERNAL_CHECK(self.status != smt::SmtStatus::Sat,
                    "the SMT encoding is not reflexive: a term differs from its own second encoding");
  res.steps.push_back(fmt::format("SMT self-check (each side against itself, {} terms): {}", sample.size(),
                                  self.status == smt::SmtStatus::Unsat ? "unsat" : "unknown (" + self.reason + ")"));
  TensorMap in = random_inputs(c.src, c.o.limits.seed);
  TermEvaluator ev(c.store, in);
  std::map<std::uint32_t, double> vals;
  for (std::size_t v = 0; v < c.store.vars().size(); ++v) {
    const VarInfo& vi = c.store.vars()[v];
    vals[static_cast<std::uint32_t>(v)] = in.at(vi.node).data[static_cast<std::size_t>(vi.cell)];
  }
  int checked = 0;
  for (std::size_t k = 0; k < differing.size() && checked < 4; ++k)
    for (TermP t : {differing[k].src, differing[k].tgt}) {
      if (t->approx || reachable_count({t}) > 400) continue;
      auto z = smt::evaluate_encoding(c.store, t, vals);
      FP_INTERNAL_CHECK(z && same_value(*z, ev.eval(t)), "the SMT encoding of {} evaluates to {} where the semantics give {}",
                        print_term(t), z ? *z : 0, ev.eval(t));
      ++checked;
    }
  if (checked) res.steps.push_back(fmt::format("SMT encoding evaluated on concrete inputs: {} terms agree", checked));
}

// Z3's answer for one chunk of differing cells: unsat proves them; a bounded pair first asks for
// bitwise equality, which implies every bound and is often much cheaper for the solver.
smt::SmtOutcome ask_solver(PairContext& c, const std::vector<std::pair<TermP, TermP>>& pairs, std::size_t at,
                           int& query, PairCheck& res, bool& proved_bitwise) {
  proved_bitwise = false;
  if (c.o.rel) {
    smt::FpQueryOptions fo;
    smt::SmtLimits lim = smt_limits(c.o, fmt::format("q{}-bitwise", ++query));
    lim.comment = "flashproof verify: is there an input where a covered cell differs bitwise?";
    smt::SmtOutcome eq = smt::find_difference(c.store, pairs, fo, lim);
    if (eq.status == smt::SmtStatus::Unsat) {
      res.steps.push_back(fmt::format("Z3: cells {}..{} bitwise equal for every input (unsat, {:.2f}s)", at + 1,
                                      at + pairs.size(), eq.seconds));
      proved_bitwise = true;
      return eq;
    }
  }
  auto ask = [&](bool cuts) {
    smt::FpQueryOptions fo;
    fo.cut_shared = cuts;
    smt::SmtLimits lim = smt_limits(c.o, fmt::format("q{}{}", ++query, cuts ? "-cut" : ""));
    lim.comment = fmt::format("flashproof verify: is there an input where a covered cell is not {}? ({} cells)",
                              c.claim, pairs.size());
    return c.o.rel ? smt::find_bound_violation(c.store, pairs, *c.o.rel, fo, lim)
                   : smt::find_difference(c.store, pairs, fo, lim);
  };
  smt::SmtOutcome out = ask(true);
  if (out.status == smt::SmtStatus::Sat && out.used_cuts) out = ask(false);
  return out;
}

// A chunk the solver did not prove: unknown when it could not decide; refuted when its model
// replays on the interpreter; else unknown (approximation) — a model through exp or pow, or within
// the bound comparison's rounding, is no counterexample.
void decide_unproved_chunk(PairContext& c, const smt::SmtOutcome& out, const std::vector<CellRef>& differing,
                           std::size_t at, bool approx, const std::string& cells_text, PairCheck& res) {
  if (out.status == smt::SmtStatus::Unknown) {
    res.kind = VerdictKind::Unknown;
    res.reason = out.timed_out ? UnknownReason::Timeout : UnknownReason::ResourceLimit;
    res.message = fmt::format("Z3 could not decide {} ({}) within --rlimit {} and --timeout {:g} s: raise them to "
                              "decide these cells",
                              cells_text, out.reason, c.o.limits.rlimit, c.o.limits.timeout_s);
    res.steps.push_back(res.message);
    return;
  }
  std::map<std::pair<std::string, std::int64_t>, double> vals;
  for (const auto& [v, x] : out.inputs) vals[{c.store.vars()[v].node, c.store.vars()[v].cell}] = x;
  TensorMap in = inputs_from_cells(c.src, vals);
  if (auto m = c.runner.run(in)) {
    res.steps.push_back(fmt::format("Z3 model for {} replayed on the interpreter: it differs", cells_text));
    res.kind = VerdictKind::Refuted;
    res.message = fmt::format("not {}: {}", c.claim, m->text());
    res.counterexample = Found{std::move(in), *m, "solver model", 0};
    return;
  }
  FP_INTERNAL_CHECK(approx || c.o.rel,
                    "Z3 found a model separating terms without exp or pow that the interpreter does not reproduce "
                    "(an encoding bug); cells {}",
                    cells_text);
  res.kind = VerdictKind::Unknown;
  res.reason = UnknownReason::Approximation;
  if (!approx) {
    // The bound query rounds the difference up and the allowed error down, so that unsat is a
    // proof; a model within that rounding of the bound is not a violation.
    res.message = fmt::format(
        "Z3's model for {} lies within the rounding of the over-approximated bound comparison: the "
        "interpreter shows no violation on it",
        cells_text);
    res.steps.push_back(res.message);
    return;
  }
  const CellRef& w = differing[at + static_cast<std::size_t>(std::max(0, out.witness))];
  res.message = fmt::format(
      "Z3 separates {}[{}] only through exp or pow (uninterpreted); the interpreter's exp does not "
      "reproduce the "
      "difference on the model's inputs",
      w.node, w.cell);
  res.steps.push_back(res.message);
}

// Z3 on the differing cells, in chunks of 4: true when every chunk is proved; else `res` is decided.
bool proved_by_solver(PairContext& c, const std::vector<CellRef>& differing, PairCheck& res) {
  const std::size_t chunk = 4;
  int query = 0;
  for (std::size_t at = 0; at < differing.size(); at += chunk) {
    std::vector<std::pair<TermP, TermP>> pairs;
    bool approx = false;
    for (std::size_t k = at; k < std::min(differing.size(), at + chunk); ++k) {
      pairs.emplace_back(differing[k].src, differing[k].tgt);
      approx = approx || differing[k].src->approx || differing[k].tgt->approx;
    }
    bool proved_bitwise = false;
    const smt::SmtOutcome out = ask_solver(c, pairs, at, query, res, proved_bitwise);
    if (proved_bitwise) continue;
    const std::string cells_text = fmt::format("cells {}..{}", at + 1, at + pairs.size());
    if (out.status == smt::SmtStatus::Unsat) {
      res.steps.push_back(fmt::format("Z3: {} {} for every input (unsat, {:.2f}s)", cells_text, c.claim, out.seconds));
      continue;
    }
    decide_unproved_chunk(c, out, differing, at, approx, cells_text, res);
    return false;
  }
  return true;
}

}  // namespace

PairCheck check_pair(const Routine& src, const Routine& tgt, std::vector<std::string> nodes,
                     const PairCheckOptions& o) {
  PairCheck res;
  if (nodes.empty())
    for (const Node* n : src.outputs()) nodes.push_back(n->name);
  if (std::string why = pair_mismatch(src, tgt, nodes); !why.empty()) {
    res.kind = VerdictKind::Error;
    res.message = why;
    return res;
  }
  res.scope = concrete_scope(src);
  // 0. The same program up to the order of commuting operands (and of index terms and statement
  // grouping): exact without executing it, whatever its size (verify/program_equality.h).
  if (program_difference(src, tgt).empty()) {
    res.kind = VerdictKind::Exact;
    res.message = "the target is the source up to the order of the operands of + and · (which IEEE arithmetic "
                  "commutes exactly), of index terms and of statement grouping";
    res.steps.push_back("program comparison: " + res.message);
    return res;
  }
  PairRunner runner(with_outputs(src, nodes, false), with_outputs(tgt, nodes, false), claim_checks(nodes, o.rel));
  TermStore store(o.limits.max_terms);
  PairContext c{src, nodes, runner, o, o.rel ? "within the bound" : "bitwise", store};

  // 1. Both sides as terms: cells with one term are proved by hash-consing.
  std::vector<CellRef> cells, differing;
  const bool symbolic = symbolic_cells(c, tgt, cells, res);
  res.cells = static_cast<std::int64_t>(cells.size());
  for (const auto& cell : cells)
    if (cell.src != cell.tgt) differing.push_back(cell);
  res.identical = res.cells - static_cast<std::int64_t>(differing.size());
  if (symbolic) {
    res.steps.push_back(fmt::format("{} of {} cells have identical terms (proved by hash-consing)", res.identical,
                                    res.cells));
    if (differing.empty()) {
      res.kind = VerdictKind::Exact;
      res.message = fmt::format("every covered cell ({}) has the same term in source and target", res.cells);
      return res;
    }
    // 1b. Cells whose terms differ only in the order of the operands of +, · (and fma's product):
    // IEEE addition and multiplication commute exactly, so they are proved without the solver.
    CommutedEquality commuted;
    std::vector<CellRef> rest;
    for (const auto& cell : differing)
      if (!commuted(cell.src, cell.tgt)) rest.push_back(cell);
    const std::size_t swapped = differing.size() - rest.size();
    if (swapped > 0) {
      res.steps.push_back(fmt::format("{} cells have the same terms up to the order of the operands of + and · "
                                      "(IEEE addition and multiplication commute exactly)",
                                      swapped));
      differing = std::move(rest);
    }
    if (differing.empty()) {
      res.kind = VerdictKind::Exact;
      res.message = fmt::format("every covered cell ({}) has the same term in source and target up to the order of "
                                "the operands of + and ·, which IEEE arithmetic commutes exactly",
                                res.cells);
      return res;
    }
  }

  // 2. A concrete counterexample, before any solver time.
  if (refuted_by_search(c, res)) return res;
  if (!symbolic) {
    res.kind = VerdictKind::Unknown;
    res.reason = UnknownReason::ResourceLimit;
    res.message = fmt::format("{}; no counterexample in {} trials", TermLimitExceeded(o.limits.max_terms).what(),
                              scaled_search_trials(runner, o.limits.search_trials));
    return res;
  }

  // 3. The solver on the cells whose terms differ, its encoding checked first.
  ScopedPhase phase("solver");
  check_encoding(c, differing, res);
  if (!proved_by_solver(c, differing, res)) return res;
  res.kind = o.rel ? VerdictKind::Bounded : VerdictKind::Exact;
  res.message = fmt::format("{} cells identical as terms, {} proved {} by Z3 for every input (exp, pow uninterpreted)",
                            res.identical, differing.size(), c.claim);
  return res;
}

}  // namespace fp::verify
