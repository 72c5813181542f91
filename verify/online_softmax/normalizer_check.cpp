#include "verify/online_softmax/normalizer_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <functional>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "core/numerics.h"
#include "core/random_inputs.h"
#include "core/support/build_identity.h"
#include "verify/bounds/exp_reference.h"
#include "verify/downstream_bounds.h"
#include "verify/loop_nest.h"
#include "verify/online_softmax/block_skip_lemma.h"
#include "verify/online_softmax/bounds/induction_instance.h"
#include "verify/online_softmax/bounds/normalizer_bound.h"
#include "verify/online_softmax/fold_lift.h"
#include "verify/online_softmax/normalizer_lift.h"
#include "verify/online_softmax/smt/queries.h"
#include "verify/phase_clock.h"
#include "verify/proof_cache.h"
#include "verify/size_reduction.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

std::int64_t eval_index(const Index& idx, const std::map<std::string, std::int64_t>& env) {
  std::int64_t v = idx.offset;
  for (const auto& t : idx.terms) v += t.coef * env.at(t.sym);
  return v;
}

// Calls f(env) for every point of the loops' box.
void for_box(const std::vector<Loop>& loops, std::map<std::string, std::int64_t>& env, std::size_t k,
             const std::function<void()>& f) {
  if (k == loops.size()) {
    f();
    return;
  }
  for (std::int64_t i = loops[k].from; i <= loops[k].to; ++i) {
    env[loops[k].sym] = i;
    for_box(loops, env, k + 1, f);
  }
}

// The anchor `m[mi] = max(m[mi], x[xi])` under its loops.
struct Anchor {
  bool self_first = true;  // max(m, x) rather than max(x, m)
  std::vector<Loop> rows;
  Loop t;
  std::string m, x;
  std::vector<Index> mi, xi;
};

std::optional<Anchor> parse_anchor(const Stmt& s, std::string& why) {
  Anchor a;
  std::vector<Loop> loops;
  const Stmt* st = peel(&s, loops);
  if (st->kind != StmtKind::Set) {
    why = "the anchor statement is not a loop nest around one store";
    return std::nullopt;
  }
  const ExprP& v = st->value;
  if (!v || v->kind != ExprKind::Binary || v->binop() != BinOp::Max) {
    why = "the anchor store is not a max";
    return std::nullopt;
  }
  auto self = [&](const ExprP& e) {
    return e->kind == ExprKind::Get && e->name == st->name && e->indices == st->indices;
  };
  int other = self(v->args[0]) ? 1 : self(v->args[1]) ? 0 : -1;
  if (other < 0 || v->args[static_cast<std::size_t>(other)]->kind != ExprKind::Get) {
    why = "the anchor is not m = max(m, x[...])";
    return std::nullopt;
  }
  const Expr& x = *v->args[static_cast<std::size_t>(other)];
  a.self_first = other == 1;
  a.m = st->name;
  a.mi = st->indices;
  a.x = x.name;
  a.xi = x.indices;
  int reduced = 0;
  for (const auto& l : loops) {
    if (mentions(a.mi, l.sym)) {
      a.rows.push_back(l);
    } else {
      a.t = l;
      ++reduced;
    }
  }
  if (reduced != 1) {
    why = "the anchor does not reduce over exactly one loop";
    return std::nullopt;
  }
  return a;
}

std::string fraction(double v) {
  return fmt::format("{:.3g}", v);
}

// ---- certificates --------------------------------------------------------------------------

// The wall-clock backstop of each induction query: they take 0.03–4 s on a loaded 2-core machine
// (docs/bounds.md §5); nlsat does not honour the rlimit promptly.
constexpr double kInductionQueryTimeoutS = 30;
// The per-pattern reals certificate's reach when the induction is not proved.
constexpr int kFallbackRealN = 3;

std::mutex g_cert_mutex;
std::map<std::string, Certificate> g_certs;
std::map<std::string, std::shared_ptr<std::mutex>> g_cert_once;

nlohmann::json cert_json(const Certificate& c) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : c.parts)
    parts.push_back({{"name", p.name}, {"status", p.status}, {"detail", p.detail}});
  return {{"parts", parts}, {"tightness", c.tightness}, {"output_tightness", c.output_tightness}, {"mpfr_ok", c.mpfr_ok}};
}

Certificate cert_of(const nlohmann::json& j) {
  Certificate c;
  for (const auto& p : j.at("parts"))
    c.parts.push_back(CertificatePart{p.at("name"), p.at("status"), p.at("detail")});
  c.tightness = j.at("tightness");
  c.output_tightness = j.value("output_tightness", 0.0);
  c.mpfr_ok = j.at("mpfr_ok");
  return c;
}

// The fold's induction (docs/bounds.md §7): its own queries for l and for O and, of the scan's,
// those about the composed side, the summed lemma, the final store and REL's closing (not the
// scan's steps); and its blocks' cover of the keys (tail.*).
std::vector<smt::InductionStep> fold_induction_steps(const smt::InductionQuery& q, Prec state,
                                                     const smt::SmtLimits& lim) {
  // Four independent groups of queries, each query in its own Z3 context: two run beside the
  // caller's two (the steps keep their order; each query keeps its own rlimit and backstop).
  auto normalizer = std::async(std::launch::async, [&] { return smt::prove_normalizer_induction(q, lim); });
  auto fold = std::async(std::launch::async, [&] { return smt::prove_fold_induction(q, lim); });
  std::vector<smt::InductionStep> output = smt::prove_fold_output_induction(q, lim);
  std::vector<smt::InductionStep> cover = smt::prove_block_cover(state, lim);
  std::vector<smt::InductionStep> steps;
  for (auto& st : normalizer.get())
    if (st.name.rfind("tgt.", 0) != 0 || st.name == "tgt.store") steps.push_back(std::move(st));
  for (auto& st : fold.get()) steps.push_back(std::move(st));
  for (auto& st : output) steps.push_back(std::move(st));
  for (auto& st : cover) steps.push_back(std::move(st));
  return steps;
}

Certificate compute_certificate(Prec storage, std::int64_t n, const Limits& limits,
                                const std::string& dump_prefix, std::int64_t block) {
  Certificate cert;
  const Prec state = state_prec(storage);
  // (b)'s MPFR rows do not depend on (a): they run beside the induction's queries (a bounded
  // amount of work; the wait below is where its time shows).
  auto mpfr_rows = std::async(std::launch::async, [&] { return mpfr_check_normalizer(storage, n, limits, block); });
  // (a) induction: the formula for every n (docs/bounds.md §5), then its value at n against the
  // REL the report states.
  {
    ScopedPhase phase("certificate: induction");
    const smt::InductionQuery q = induction_query(storage, state, limits.exp_ulp);
    smt::SmtLimits lim;
    lim.rlimit = limits.rlimit;
    lim.timeout_s = kInductionQueryTimeoutS;
    if (!dump_prefix.empty()) lim.dump_path = fmt::format("{}-induction-{}", dump_prefix, prec_name(storage));
    const std::vector<smt::InductionStep> steps =
        block > 0 ? fold_induction_steps(q, state, lim) : smt::prove_normalizer_induction(q, lim);
    double total = 0, slowest = 0;
    std::string slowest_name, undecided;
    int proved = 0;
    for (const auto& st : steps) {
      total += st.outcome.seconds;
      if (st.outcome.seconds > slowest) {
        slowest = st.outcome.seconds;
        slowest_name = st.name;
      }
      if (st.outcome.status == smt::SmtStatus::Unsat) {
        ++proved;
      } else if (st.outcome.status == smt::SmtStatus::Sat) {
        undecided += fmt::format(
            " {}: Z3 found a counterexample (the invariant is too weak or the bound wrong);", st.name);
      } else {
        undecided +=
            fmt::format(" {}: undecided ({});", st.name,
                        st.outcome.timed_out      ? fmt::format("timeout after {:.1f} s", st.outcome.seconds)
                        : st.outcome.resource_out ? std::string("resource limit")
                                                  : st.outcome.reason);
      }
    }
    // The fold's stated bound is its proved recurrences evaluated at (n, b) (fold_bound, MPFR
    // rounded up, with the queries' own constants): covered by construction.
    const NormalizerBound nb = block > 0 ? fold_bound(storage, state, n, block, limits.exp_ulp)
                                         : normalizer_bound(storage, state, n, limits.exp_ulp);
    const InductionInstance inst = block > 0 ? InductionInstance{nb.defined, nb.b_src, nb.b_tgt, nb.rel, nb.defined}
                                             : induction_instance(q, n, nb.rel);
    const bool all = proved == static_cast<int>(steps.size());
    const bool covers = nb.defined && inst.defined && inst.covered;
    const std::string what = fmt::format(
        "{}/{} queries unsat in {:.2f} s (slowest {} {:.2f} s; backstop {:.0f} s each): base case, inductive "
        "steps (k a real variable) and closings of the composed sum and the {} at storage {} / state {}, "
        "rounding |δ| <= u, exp error ε_s = {:.4g}, ε_t = {:.4g}, underflow terms <= 2^{} + 2^{} / 2^{} + "
        "2^{}",
        proved, steps.size(), total, slowest_name, slowest, kInductionQueryTimeoutS,
        block > 0 ? fmt::format("block fold (b a real variable; here b = {})", block) : std::string("scan"),
        prec_name(storage),
        prec_name(state), q.eps_storage, q.eps_state, q.omega_storage_log2, q.omega_tail_log2,
        q.omega_state_log2, q.omega_tail_log2);
    std::string detail;
    if (!all)
      detail = "unknown: " + what + ";" + undecided;
    else if (!covers)
      detail = fmt::format(
          "unknown: {}; but at n = {} the proved REL {} is above the stated {:.17g} (the proof's "
          "underflow terms are larger than the formula's)",
          what, n,
          inst.defined ? fmt::format("{:.17g} (MPFR, rounded up)", inst.rel) : std::string("(undefined)"),
          nb.rel);
    else
      detail = fmt::format(
          "proved for every n{}: {}; at n = {} the proved REL (MPFR, 256 bits rounded up) is at or below the "
          "stated "
          "{:.17g}",
          block > 0 ? " and every b" : "", what, n, nb.rel);
    cert.parts.push_back(CertificatePart{"induction", all && covers ? "proved" : "unknown", detail});
  }
  // (a) Z3 over the reals, every pattern of new maxima for n = 1..real_n: what the induction
  // replaces; run when asked for (--real-n) or when the induction is not proved.
  const bool induction_proved = cert.parts.back().status == "proved";
  // (The fold has no per-pattern encoding: its certificate is the induction and the MPFR rows.)
  const int real_n = block > 0          ? 0
                     : induction_proved ? limits.real_n
                                        : std::max(limits.real_n, kFallbackRealN);
  if (real_n > 0) {
    ScopedPhase phase("certificate: reals");
    std::vector<std::string> per_n;
    int proved = 0, total = 0;
    std::string undecided;
    for (int k = 1; k <= real_n; ++k) {
      NormalizerBound b = normalizer_bound(storage, state, k, limits.exp_ulp);
      if (!b.defined) continue;
      int ok = 0, count = 0;
      for (int pat = 0; pat < (1 << (k - 1)); ++pat) {
        smt::RealBoundQuery q;
        q.n = k;
        for (int i = 0; i < k - 1; ++i) q.pattern += ((pat >> i) & 1) ? '1' : '0';
        q.storage_bits = significand_bits(storage);
        q.state_bits = significand_bits(state);
        q.storage_exp_eps = exp_error(storage, limits.exp_ulp);
        q.state_exp_eps = exp_error(state, limits.exp_ulp);
        q.rel = b.rel;
        smt::SmtLimits lim;
        lim.rlimit = limits.rlimit;
        lim.timeout_s = limits.real_timeout_s;
        if (!dump_prefix.empty())
          lim.dump_path = fmt::format("{}-reals-{}-n{}-{}.smt2", dump_prefix, prec_name(storage), k,
                                      q.pattern.empty() ? "x" : q.pattern);
        smt::SmtOutcome o = smt::check_real_bound(q, lim);
        ++count;
        if (o.status == smt::SmtStatus::Unsat) {
          ++ok;
        } else if (o.status == smt::SmtStatus::Sat) {
          undecided += fmt::format(
              " n={} pattern {}: Z3 found an assignment above the bound (the relaxed exp "
              "model may be too weak, or the bound wrong);",
              k, q.pattern);
        } else {
          undecided += fmt::format(" n={} pattern {}: undecided ({});", k, q.pattern,
                                   o.timed_out      ? "timeout"
                                   : o.resource_out ? "resource limit"
                                                    : o.reason);
        }
      }
      per_n.push_back(fmt::format("n={}: {}/{} patterns proved", k, ok, count));
      proved += ok;
      total += count;
    }
    std::string detail = fmt::format("Z3 over the reals (|δ| <= u, exp constrained by its identities): {}",
                                     fmt::join(per_n, "; "));
    if (!undecided.empty()) detail += ";" + undecided;
    cert.parts.push_back(CertificatePart{"(a) reals", proved == total ? "proved" : "unknown", detail});
  }
  // (b) MPFR rows, (c) tightness.
  {
    ScopedPhase phase("certificate: MPFR rows");
    MpfrReport r = mpfr_rows.get();
    cert.mpfr_ok = r.violations == 0 && r.nan_mismatches == 0 && r.max_mismatches == 0;
    std::vector<std::string> fams;
    for (const auto& f : r.families)
      fams.push_back(fmt::format("{} {} rows worst {}", f.name, f.rows, fraction(f.worst)));
    cert.parts.push_back(CertificatePart{
        "(b) mpfr", cert.mpfr_ok ? "confirmed" : "failed",
        fmt::format(
            "{} rows{} ({} finite, {} NaN rows with NaN positions compared) at {} bits, n in {{{}}}, storage "
            "{} "
            "state {}: {} violations, {} NaN mismatches, {} max mismatches{}; worst against the exact sum: "
            "composed {} of B_src, rewrite {} of B_tgt; families: {}",
            r.rows, block > 0 ? fmt::format(" through the fold in blocks of min({}, n)", block) : std::string(),
            r.finite_rows, r.special_rows, r.bits, fmt::join(r.key_counts, ", "), prec_name(storage),
            prec_name(state), r.violations, r.nan_mismatches, r.max_mismatches,
            r.first_violation.empty() ? "" : " (first: " + r.first_violation + ")", fraction(r.worst_src),
            fraction(r.worst_tgt), fmt::join(fams, "; "))});
    cert.tightness = r.worst_pair;
    if (block > 0) {
      // The fold's output on the same rows (one signed value column per key count).
      const bool out_ok = r.output_violations == 0 && r.output_rows > 0;
      cert.mpfr_ok = cert.mpfr_ok && out_ok;
      cert.output_tightness = r.worst_output;
      cert.parts.push_back(CertificatePart{
          "(b) mpfr output", out_ok ? "confirmed" : "failed",
          fmt::format("O through the fold on {} finite rows (signed values, magnitudes 2^-20 .. 2^20, 2^±10 at f16): {} outside "
                      "|O_fold - O_src| <= rel_z·Σ(|p̂| + κ)|v| + abs{}; worst {} of the bound on {}",
                      r.output_rows, r.output_violations,
                      r.first_output_violation.empty() ? "" : " (first: " + r.first_output_violation + ")",
                      fraction(r.worst_output),
                      r.worst_output_row)});
    }
    cert.parts.push_back(CertificatePart{"(c) tightness", "measured",
                                         fmt::format("worst |l_tgt - l_src| / (REL·|l_src|) = {} on {}",
                                                     fraction(r.worst_pair), r.worst_row)});
  }
  std::optional<ScopedPhase> exp_phase;
  exp_phase.emplace("certificate: exp measure");
  ExpUlpMeasure e = measure_exp_ulp(20000, limits.seed);
  ExpUlpMeasure e32 = measure_exp32_ulp(20000, limits.seed);
  // A measured error above the figure the bound uses voids the bound's premise.
  const bool exp_ok = e.max_ulp <= limits.exp_ulp && e32.max_ulp <= kExp32MaxUlp;
  cert.mpfr_ok = cert.mpfr_ok && exp_ok;
  cert.parts.push_back(CertificatePart{
      "exp assumption", exp_ok ? "measured" : "failed",
      fmt::format("{}; measured here: fp_exp64 max {:.4f} ulp on {} normal-range samples (worst x = {:a}), "
                  "fp_exp32 max {:.4f} ulp on {} f32 samples (worst x = {:a})",
                  exp_assumption_text(limits.exp_ulp), e.max_ulp, e.samples, e.worst_x, e32.max_ulp,
                  e32.samples, e32.worst_x)});
  return cert;
}

// (i) at the routines' own sizes: each covered cell of l is, as a hash-consed term over the
// scores at the max reduction, the composed sum in the source and the online recurrence in the
// target (the fallback when the all-sizes lift does not apply).
// Runs a recurrence check: `body` throws std::runtime_error with the reason on a mismatch and
// returns the proof's sentence.
RecurrenceCheck established(const std::function<std::string()>& body) {
  RecurrenceCheck out;
  try {
    out.detail = body();
    out.proved = true;
  } catch (const TermLimitExceeded& e) {
    out.detail = e.what();
    out.term_limit = true;
  } catch (const std::runtime_error& e) {
    out.detail = e.what();
  }
  return out;
}

// The fold's row (rewrites/online_softmax/block_fold.h, emitted form) over the row's score terms
// X at the state precision q, in blocks of b (a tail padded with -inf cells): per block the
// rescale and the cells' exponentials, and the last block's norm; l stored at p. With `skip`, a
// block whose cells are all the constant -inf (masked or padded) takes the fold's skip branch
// instead (no exponentials; its sum is 0 + exp(-inf - fl)): block_skip_lemma.h makes that the
// computed block's state bit for bit.
struct FoldRowTerms {
  std::vector<TermP> alpha;               // per block
  std::vector<std::vector<TermP>> exps;   // per block, b cells; empty for a skipped block
  std::vector<char> skipped;              // per block
  TermP norm = nullptr, stored = nullptr;
  int skips = 0;
};
FoldRowTerms fold_row_terms(TermStore& store, const std::vector<TermP>& X, std::int64_t b, Prec p, Prec q,
                            bool skip = false) {
  const auto n = static_cast<std::int64_t>(X.size());
  TermP LOW = store.constant(lowest_finite(q), q), NEG = store.constant(-INFINITY, q);
  TermP mp = NEG, lp = store.constant(0.0, q);
  FoldRowTerms out;
  for (std::int64_t k0 = 0; k0 < n; k0 += b) {
    std::vector<TermP> T;
    bool masked = skip;
    for (std::int64_t j = 0; j < b; ++j) {
      T.push_back(k0 + j < n ? store.convert(X[static_cast<std::size_t>(k0 + j)], q) : NEG);
      masked = masked && T.back() == NEG;
    }
    TermP mn = mp;
    for (TermP t : T) mn = store.binary(BinOp::Max, mn, t, q);
    TermP fl = store.binary(BinOp::Max, mn, LOW, q);
    TermP alpha = store.unary(UnOp::Exp, store.binary(BinOp::Sub, store.binary(BinOp::Max, mp, LOW, q), fl, q), q);
    TermP rs = store.constant(0.0, q);
    std::vector<TermP> E;
    if (masked) {
      rs = store.binary(BinOp::Add, rs, store.unary(UnOp::Exp, store.binary(BinOp::Sub, NEG, fl, q), q), q);
      ++out.skips;
    } else {
      for (TermP t : T) {
        E.push_back(store.unary(UnOp::Exp, store.binary(BinOp::Sub, t, fl, q), q));
        rs = store.binary(BinOp::Add, rs, E.back(), q);
      }
    }
    TermP ln = store.binary(BinOp::Add, store.binary(BinOp::Mul, lp, alpha, q), rs, q);
    out.norm = store.ternary(TernOp::Where, store.binary(BinOp::Eq, mn, NEG, q), store.constant(NAN, q), ln, q);
    out.stored = store.convert(out.norm, p);
    out.alpha.push_back(alpha);
    out.exps.push_back(std::move(E));
    out.skipped.push_back(masked);
    mp = mn;
    lp = ln;
  }
  return out;
}

TermP fold_recurrence(TermStore& store, const std::vector<TermP>& X, std::int64_t b, Prec p, Prec q, bool skip) {
  return fold_row_terms(store, X, b, p, q, skip).stored;
}

RecurrenceCheck concrete_recurrence(const Routine& src, const Routine& tgt, std::size_t anchor_pos,
                                    const std::string& l, const osm::SumTerms& bt, const Limits& limits) {
  ScopedPhase phase("symbolic execution");
  std::vector<StmtP> S = top_level_statements(src);
  return established([&]() -> std::string {
    std::string why;
    std::optional<Anchor> an = anchor_pos < S.size() ? parse_anchor(*S[anchor_pos], why) : std::nullopt;
    if (!an) throw std::runtime_error(why.empty() ? "no anchor statement" : why);
    if (trips(an->t) != bt.terms)
      throw std::runtime_error(
          fmt::format("the anchor reduces over {} keys, the obligation says {}", trips(an->t), bt.terms));
    const Node* xnode = src.find_node(an->x);
    if (!xnode || xnode->prec != bt.storage)
      throw std::runtime_error("the scores are not at the storage precision");
    TermStore store(limits.max_terms);
    std::vector<TermP> x_cells;
    SymexecOptions so;
    so.at_top_level = [&](int pos, const SymMemory& mem) {
      if (pos == static_cast<int>(anchor_pos)) x_cells = mem.at(an->x);
    };
    SymMemory ms = symexec(src, store, so);
    SymMemory mt = symexec(tgt, store);
    const Prec p = bt.storage, q = bt.state;
    const double low = lowest_finite(q);
    // Canonical terms per row.
    std::unordered_map<TermP, std::vector<TermP>> composed_to_scan;
    std::set<TermP> skip_terms;  // the rows' stored l when their fully masked blocks are skipped
    std::map<std::string, std::int64_t> env;
    std::int64_t rows = 0;
    for_box(an->rows, env, 0, [&] {
      ++rows;
      std::vector<TermP> X;
      for (std::int64_t t = an->t.from; t <= an->t.to; ++t) {
        env[an->t.sym] = t;
        std::vector<std::int64_t> idx;
        for (const auto& i : an->xi) idx.push_back(eval_index(i, env));
        X.push_back(x_cells[static_cast<std::size_t>(flat_cell(xnode->dims, idx))]);
      }
      // Composed: m = max over x from -inf; l = 0 + Σ exp(x_t - m), left to right, all at p.
      TermP M = store.constant(-INFINITY, p);
      for (TermP x : X)
        M = an->self_first ? store.binary(BinOp::Max, M, x, p) : store.binary(BinOp::Max, x, M, p);
      TermP acc = store.constant(0.0, p);
      for (TermP x : X)
        acc = store.binary(BinOp::Add, acc, store.unary(UnOp::Exp, store.binary(BinOp::Sub, x, M, p), p), p);
      if (bt.block > 0) {
        // The fold computing every block, and the fold skipping its fully masked ones.
        composed_to_scan[acc].push_back(fold_recurrence(store, X, bt.block, p, q, false));
        const FoldRowTerms skipping = fold_row_terms(store, X, bt.block, p, q, true);
        if (skipping.skips > 0) {
          composed_to_scan[acc].push_back(skipping.stored);
          skip_terms.insert(skipping.stored);
        }
        return;
      }
      // The online recurrence at q (rewrites/online_softmax/normalizer_scan.h, emitted form).
      TermP mp = store.constant(-INFINITY, q), lp = store.constant(0.0, q), stored = nullptr;
      TermP LOW = store.constant(low, q);
      for (TermP x : X) {
        TermP xs = store.convert(x, q);
        TermP mn = store.binary(BinOp::Max, mp, xs, q);
        TermP resc = store.unary(UnOp::Exp,
                                 store.binary(BinOp::Sub, store.binary(BinOp::Max, mp, LOW, q),
                                              store.binary(BinOp::Max, mn, LOW, q), q),
                                 q);
        TermP term =
            store.unary(UnOp::Exp, store.binary(BinOp::Sub, xs, store.binary(BinOp::Max, mn, LOW, q), q), q);
        TermP ln = store.binary(BinOp::Add, store.binary(BinOp::Mul, lp, resc, q), term, q);
        stored = store.convert(
            store.ternary(TernOp::Where, store.binary(BinOp::Eq, mn, store.constant(-INFINITY, q), q),
                          store.constant(NAN, q), ln, q),
            p);
        mp = mn;
        lp = ln;
      }
      composed_to_scan[acc].push_back(stored);
    });
    const auto& ls = ms.at(l);
    const auto& lt = mt.at(l);
    std::int64_t matched = 0, identical = 0, skipping = 0;
    for (std::size_t c = 0; c < ls.size(); ++c) {
      if (ls[c] == lt[c]) {
        ++identical;
        continue;
      }
      auto it = composed_to_scan.find(ls[c]);
      if (it == composed_to_scan.end())
        throw std::runtime_error(fmt::format("source cell {}[{}] is not the composed sum of any row", l, c));
      if (std::find(it->second.begin(), it->second.end(), lt[c]) == it->second.end())
        throw std::runtime_error(fmt::format(
            "target cell {}[{}] is not the {} of its row (n = {}, state {}, storage {})", l, c,
            bt.block > 0 ? fmt::format("block fold (blocks of {})", bt.block) : std::string("online recurrence"),
            bt.terms, prec_name(q), prec_name(p)));
      ++matched;
      skipping += skip_terms.count(lt[c]) > 0;
    }
    if (matched == 0) throw std::runtime_error("no covered cell is a normalizer");
    std::string skip_text;
    if (skipping > 0) {
      const SkipLemma lemma = block_skip_lemma(q, q, std::nullopt, limits);
      if (!lemma.proved) throw std::runtime_error(lemma.detail);
      skip_text = fmt::format("; {} rows skip their fully masked blocks, {}", skipping, lemma.detail);
    }
    return fmt::format("(i) recurrence: {} cells of {}: {} are the composed sum (source) and the {} "
                    "at {} (target) of "
                    "their row, as hash-consed terms over the scores at the max reduction; {} identical; {} "
                    "distinct terms{}",
                    ls.size(), l, matched,
                    bt.block > 0 ? fmt::format("block fold in blocks of {}", bt.block) : std::string("online recurrence"),
                    prec_name(q), identical, store.size(), skip_text);
  });
}

}  // namespace

Certificate certificate_for(Prec storage, std::int64_t n, const Limits& limits, ProofCache* disk,
                            const std::string& dump_prefix, std::int64_t block) {
  nlohmann::json lj = to_json(limits);
  lj.erase("search_trials");
  lj.erase("max_terms");
  lj.erase("timeout_s");
  lj.erase("budget_s");
  const nlohmann::json identity{{"kind", "certificate"},
                                {"build", build_identity()},
                                {"engine", kEngineVersion},
                                {"semantics", kSemanticsVersion},
                                {"solver", smt::solver_version()},
                                {"storage", prec_name(storage)},
                                {"n", n},
                                {"block", block},
                                {"limits", lj}};
  const std::string key = ProofCache::key_of(identity);
  {
    std::lock_guard<std::mutex> lock(g_cert_mutex);
    if (auto it = g_certs.find(key); it != g_certs.end()) return it->second;
  }
  // One computation per key: parallel obligations with the same parameters wait for the first
  // (with --jobs 2 the model's two first layers each computed the n = 4096 certificate).
  std::shared_ptr<std::mutex> once;
  {
    std::lock_guard<std::mutex> lock(g_cert_mutex);
    auto& m = g_cert_once[key];
    if (!m) m = std::make_shared<std::mutex>();
    once = m;
  }
  std::lock_guard<std::mutex> computing(*once);
  {
    std::lock_guard<std::mutex> lock(g_cert_mutex);
    if (auto it = g_certs.find(key); it != g_certs.end()) return it->second;
  }
  if (disk && dump_prefix.empty())
    if (auto j = disk->get(identity)) {
      try {
        Certificate c = cert_of(*j);
        std::lock_guard<std::mutex> lock(g_cert_mutex);
        g_certs.emplace(key, c);
        return c;
      } catch (const std::exception&) {
      }
    }
  Certificate c = compute_certificate(storage, n, limits, dump_prefix, block);
  if (disk) disk->put(identity, cert_json(c));
  std::lock_guard<std::mutex> lock(g_cert_mutex);
  g_certs.emplace(key, c);
  return c;
}

namespace {

// What the structural lift says about l: proved for every extent, or the first condition that failed.
struct SumLift {
  bool proved = false;
  std::string why_not;
  std::vector<std::string> steps;
};

SumLift scan_sum_lift(const Routine& src, const Routine& tgt, const Application& app, const std::string& l,
                      const osm::SumTerms& bt) {
  const NormalizerLift lift = lift_normalizer(src, tgt, app);
  SumLift out{lift.proved && lift.l == l && lift.row_terms == bt.terms, lift.why_not, lift.steps};
  if (lift.proved && !out.proved) out.why_not = fmt::format("the scan's row sum is not {} over {} terms", l, bt.terms);
  return out;
}

SumLift fold_sum_lift(const Routine& src, const Routine& tgt, const Application& app, const std::string& l,
                      const osm::SumTerms& bt, const Limits& limits) {
  const FoldLift lift = lift_fold(src, tgt, app, limits);
  SumLift out{lift.proved && lift.l == l && lift.l_stored && lift.keys == bt.terms && lift.block == bt.block,
              lift.why_not, lift.steps};
  if (lift.proved && !out.proved)
    out.why_not = fmt::format("the fold's stored row sum is not {} over {} keys in blocks of {}", l, bt.terms, bt.block);
  return out;
}

}  // namespace

BoundedCheck check_normalizer_sum(const Routine& src, const Routine& tgt, const Application& app,
                                  const Obligation& ob, const Limits& limits, ProofCache* disk,
                                  const std::string& dump_prefix, const std::function<ShrunkPair()>& small_instance) {
  BoundedCheck res;
  res.scope = concrete_scope(src);
  FP_INTERNAL_CHECK(osm::sum_terms(ob) && !ob.covers.empty(), "bounded obligation {} without bound terms or covers",
                    ob.claim);
  const std::string l = ob.covers[0].node;
  const osm::SumTerms bt = *osm::sum_terms(ob);
  const Node* lnode = src.find_node(l);
  if (std::string why = pair_mismatch(src, tgt, {l}); !why.empty() || !lnode) {
    res.kind = VerdictKind::Error;
    res.message = why.empty() ? "no node " + l : why;
    return res;
  }
  BoundInfo& bi = res.bound;
  const bool fold = bt.block > 0;  // the block fold's l (docs/bounds.md §7)
  const NormalizerBound nb = fold ? fold_bound(bt.storage, bt.state, bt.terms, bt.block, limits.exp_ulp)
                                  : normalizer_bound(bt.storage, bt.state, bt.terms, limits.exp_ulp);
  bi.formula = fold ? fold_formula_text() : normalizer_formula_text();
  bi.instantiated = normalizer_instantiated_text(nb);
  bi.value = nb.rel;
  bi.relative_to = "|" + l + "_src|";
  bi.n = bt.terms;
  bi.exp_assumption = exp_assumption_text(limits.exp_ulp);
  res.steps.push_back("bound: " + bi.instantiated);
  if (!nb.defined) {
    res.kind = VerdictKind::Unknown;
    res.reason = UnknownReason::Unsupported;
    res.message = "no bound: " + nb.undefined_reason;
    return res;
  }
  if (lnode->prec != bt.storage) {
    res.kind = VerdictKind::Error;
    res.message = fmt::format("{} is stored at {} but the obligation says {}", l, prec_name(lnode->prec),
                              prec_name(bt.storage));
    return res;
  }

  // (i) the recurrence: for every extent by the structural lift, else at the routine's sizes.
  std::vector<StmtP> S = top_level_statements(src);
  std::size_t anchor_pos = app.statements.empty() ? S.size() : static_cast<std::size_t>(app.statements[0] - 1);
  if (fold) {
    // The fold's anchor is its value pass; the max reduction is one of the statements it consumed.
    anchor_pos = S.size();
    for (int st : app.statements) {
      std::string why;
      const auto pos = static_cast<std::size_t>(st - 1);
      if (pos < S.size() && parse_anchor(*S[pos], why)) {
        anchor_pos = pos;
        break;
      }
    }
  }
  // The structural lift of the scan (normalizer_lift.h) or of the fold (fold_lift.h).
  const SumLift lift = fold ? fold_sum_lift(src, tgt, app, l, bt, limits) : scan_sum_lift(src, tgt, app, l, bt);
  const bool all_sizes = lift.proved;
  res.all_sizes = all_sizes;
  RecurrenceCheck rc;
  if (all_sizes) {
    rc.proved = true;
    rc.detail = fmt::format("(i) recurrence: for every extent, {} is the composed sum (source) and the {} at {} "
                            "(target) of the same row of scores: {}",
                            l, fold ? fmt::format("block fold (blocks of {})", bt.block) : "online recurrence",
                            prec_name(state_prec(bt.storage)), fmt::join(lift.steps, "; "));
  } else {
    for (const auto& st : lift.steps) res.steps.push_back(st);
    if (!lift.why_not.empty())
      res.steps.push_back("the structural lift does not hold (" + lift.why_not +
                          "); the recurrence is checked at the routine's sizes");
    rc = concrete_recurrence(src, tgt, anchor_pos, l, bt, limits);
  }
  const bool recurrence = rc.proved, term_limit = rc.term_limit;
  const std::string why_not = rc.proved ? "" : rc.detail;
  if (recurrence) res.steps.push_back(rc.detail);
  if (!recurrence) res.steps.push_back("(i) recurrence not established: " + why_not);
  bi.parts.push_back(CertificatePart{"(i) recurrence", recurrence ? "proved" : "failed",
                                     recurrence ? res.steps.back() : why_not});

  // Downstream nodes (verify/downstream_bounds.h), their bounds at the routine's sizes.
  // The fold changes O too, under its own claim (fold-output): nothing computed from O is l's.
  const std::vector<std::string> co_perturbed =
      fold ? std::vector<std::string>{osm::fold_roles(app).o} : std::vector<std::string>{};
  const DownstreamPlan plan = plan_downstream(src, app.statements, anchor_pos, l, nb.rel, co_perturbed);
  bi.downstream = plan.bounds;
  for (const auto& n : plan.notes) res.steps.push_back(n);
  // The concrete checks run on a small instance of the family when the recurrence holds for
  // every extent (a violation there refutes the all-sizes claim), else at the routine's sizes.
  // A fold's instance may have another block size: it is checked against its own REL(n', b') (a
  // smaller key count alone only lowers REL, so a scan's instance keeps the stated one).
  ShrunkPair instance = !all_sizes    ? ShrunkPair{src, tgt, {}}
                        : small_instance ? small_instance()
                                         : cross_check_instance(src, tgt);
  double run_rel = nb.rel;
  std::string own_bound;
  if (fold && !instance.extents.empty()) {
    const FoldLift il = lift_fold(instance.src, instance.tgt, app, limits);
    const NormalizerBound inb = fold_bound(bt.storage, bt.state, il.keys, il.block, limits.exp_ulp);
    if (il.proved && inb.defined) {
      run_rel = inb.rel;
      own_bound = fmt::format("; its own bound, n = {}, b = {}", il.keys, il.block);
    } else {
      instance = ShrunkPair{src, tgt, {}};
    }
  }
  const std::string where =
      instance.extents.empty()
          ? std::string("routine's own random inputs")
          : fmt::format("random inputs at reduced sizes ({}{})", extents_text(instance.extents), own_bound);
  const DownstreamPlan run_plan =
      instance.extents.empty() ? plan : plan_downstream(instance.src, app.statements, anchor_pos, l, run_rel, co_perturbed);
  std::vector<std::string> watched;
  for (const auto& c : run_plan.checks) watched.push_back(c.node);
  std::vector<std::string> kept = watched;  // what the checks read: the nodes and their scales
  for (const auto& c : run_plan.checks)
    if (!c.scale_node.empty()) kept.push_back(c.scale_node);
  Routine src_run = through_last_writer(instrument_source(instance.src, {&run_plan}, watched, false), kept);
  Routine tgt_run = through_last_writer(with_outputs(instance.tgt, watched, false), kept);
  res.checks = run_plan.checks;
  PairRunner runner(src_run, tgt_run, res.checks);
  res.src_run = src_run;
  res.tgt_run = tgt_run;
  res.case_src = instance.src;
  res.case_tgt = instance.tgt;

  // Differential on random inputs (a few seeds; on a small instance, as many as the cross-check's
  // work allows), recording the worst ratios.
  const int seeds = all_sizes ? cross_check_runs(runner, 4) : 4;
  std::optional<ScopedPhase> differential;
  differential.emplace("differential");
  std::map<std::string, double> worst;
  std::optional<Mismatch> diff_fail;
  TensorMap diff_inputs;
  for (int k = 0; k < seeds && !diff_fail; ++k) {
    diff_inputs = random_inputs(instance.src, limits.seed + static_cast<std::uint64_t>(k));
    diff_fail = runner.run(diff_inputs, &worst);
  }
  for (auto& d : bi.downstream) d.worst_observed = worst[d.node];
  bi.worst_observed = worst[l];
  bi.parts.push_back(CertificatePart{
      "differential", diff_fail ? "failed" : "confirmed",
      diff_fail ? diff_fail->text()
                : fmt::format("{} ({} seed{}): worst {} of the bound on {}{}", where, seeds, seeds == 1 ? "" : "s",
                              fraction(worst[l]), l, [&] {
                                std::string s;
                                for (const auto& d : bi.downstream)
                                  s += fmt::format(", {} of its bound on {}", fraction(d.worst_observed),
                                                   d.node);
                                return s;
                              }())});
  if (diff_fail) {
    res.kind = VerdictKind::Refuted;
    res.message = "outside the bound on the " + where + ": " + diff_fail->text();
    res.counterexample = Found{diff_inputs, *diff_fail, "random (differential)", 0};
    return res;
  }
  res.steps.push_back(bi.parts.back().detail);
  differential.reset();

  // (ii) the certificate (shared by every obligation with the same parameters), when the target
  // is the recurrence it is about.
  std::optional<Certificate> cert;
  if (recurrence) {
    cert = certificate_for(bt.storage, bt.terms, limits, disk, dump_prefix, bt.block);
    for (const auto& p : cert->parts) bi.parts.push_back(p);
    bi.tightness = cert->tightness;
  }
  auto status_of = [&](const char* part) {
    if (cert)
      for (const auto& p : cert->parts)
        if (p.name == part) return p.status;
    return std::string();
  };
  const bool proved = cert && cert->mpfr_ok && status_of("induction") == "proved";
  // Adversarial search: the full budget when the recurrence is not established, a quarter when
  // the certificate is incomplete, a cross-check's worth after a proof for every extent.
  const int trials = !recurrence ? scaled_search_trials(runner, limits.search_trials)
                     : !proved || !all_sizes
                         ? scaled_search_trials(runner, std::max(1, limits.search_trials / 4))
                         : std::max(0, cross_check_runs(runner, std::min(kProvedSearchTrials, limits.search_trials)) - seeds);
  if (auto found = search_counterexample(runner, trials, limits.seed)) {
    res.kind = VerdictKind::Refuted;
    res.message = "outside the bound: " + found->mismatch.text();
    res.steps.push_back(
        fmt::format("counterexample search: trial {} ({}) violates the bound", found->trial, found->family));
    res.counterexample = std::move(*found);
    return res;
  }
  res.steps.push_back(fmt::format("counterexample search: {} adversarial trials within the bound{}", trials,
                                  instance.extents.empty() ? "" : " at reduced sizes"));
  if (!recurrence) {
    res.kind = VerdictKind::Unknown;
    res.reason = term_limit ? UnknownReason::ResourceLimit : UnknownReason::Approximation;
    res.message = (term_limit ? "the recurrence could not be established (" + why_not + ")"
                              : "the target is not the recurrence the bound certifies (" + why_not + ")") +
                  "; no counterexample in " + std::to_string(trials) + " trials";
    return res;
  }
  if (!cert->mpfr_ok) {
    res.kind = VerdictKind::Unknown;
    res.reason = UnknownReason::Approximation;
    res.message = "the bound formula is not confirmed (MPFR reference or exp assumption failed)";
    return res;
  }
  res.kind = VerdictKind::Bounded;
  const std::string reals_status = status_of("(a) reals"), induction_status = status_of("induction");
  res.message = fmt::format(
      "{} is the {} of the composed sum (i{}); bound REL = {:.3g}: induction (every n{}) {}, "
      "confirmed by MPFR (tightness {}){}, differential inside the bound",
      l, fold ? fmt::format("block fold (blocks of {})", bt.block) : std::string("online recurrence"),
      all_sizes ? ", every extent" : ", the routine's sizes", nb.rel, fold ? " and b" : "", induction_status,
      fraction(cert->tightness),
      reals_status.empty() ? "" : ", reals certificate " + reals_status);
  return res;
}

}  // namespace fp::verify

namespace fp::verify {

RecurrenceCheck fold_output_identity(const Routine& src, const Routine& tgt, const Application& app,
                                     const osm::SumTerms& bt, const std::string& o, const std::string& p,
                                     const Limits& limits) {
  ScopedPhase phase("symbolic execution");
  const std::vector<StmtP> S = top_level_statements(src);
  return established([&]() -> std::string {
    std::optional<Anchor> an;
    std::size_t anchor_pos = S.size();
    for (int st : app.statements) {
      std::string why;
      const auto pos = static_cast<std::size_t>(st - 1);
      if (pos < S.size() && (an = parse_anchor(*S[pos], why))) {
        anchor_pos = pos;
        break;
      }
    }
    if (!an) throw std::runtime_error("no max reduction among the application's statements");
    const std::int64_t n = trips(an->t);
    if (n != bt.terms) throw std::runtime_error("the max reduces over another key count than the obligation's");
    const Node *xnode = src.find_node(an->x), *pnode = src.find_node(p), *onode = src.find_node(o);
    if (!xnode || !pnode || !onode || pnode->dims != xnode->dims || xnode->prec != bt.storage)
      throw std::runtime_error("the probabilities are not at the scores' cells, or the scores not at the storage precision");
    // The value pass: o[..] = add(o[..], mul(a, b)), one factor p.
    const auto vpos = static_cast<std::size_t>(app.statements[0] - 1);
    std::vector<Loop> vloops;
    const Stmt* vst = vpos < S.size() ? peel(S[vpos].get(), vloops) : nullptr;
    if (!vst || vst->kind != StmtKind::Set || vst->name != o || !vst->value || vst->value->kind != ExprKind::Binary ||
        vst->value->binop() != BinOp::Add)
      throw std::runtime_error("the application's first statement is not the value pass");
    const ExprP& add = vst->value;
    const bool self_first = add->args[0]->kind == ExprKind::Get && add->args[0]->name == o;
    const ExprP& prod = add->args[self_first ? 1 : 0];
    if (prod->kind != ExprKind::Binary || prod->binop() != BinOp::Mul)
      throw std::runtime_error("the value pass does not accumulate a product");
    const bool p_first = prod->args[0]->kind == ExprKind::Get && prod->args[0]->name == p;
    const ExprP& pf = prod->args[p_first ? 0 : 1];
    const ExprP& vf = prod->args[p_first ? 1 : 0];
    if (pf->kind != ExprKind::Get || pf->name != p || vf->kind != ExprKind::Get || !src.find_node(vf->name))
      throw std::runtime_error("the value pass's product is not p times a node's cell");
    const Node* vnode = src.find_node(vf->name);
    TermStore store(limits.max_terms);
    std::vector<TermP> x_cells, p_cells;
    SymexecOptions so;
    so.at_top_level = [&](int pos, const SymMemory& mem) {
      if (pos == static_cast<int>(anchor_pos)) x_cells = mem.at(an->x);
      if (pos == static_cast<int>(vpos)) p_cells = mem.at(p);
    };
    SymMemory ms = symexec(src, store, so);
    SymMemory mt = symexec(tgt, store);
    const std::vector<TermP>& v_cells = ms.at(vf->name);
    const Prec sp = bt.storage, q = bt.state, op = onode->prec;
    const Prec up = (q == Prec::F64 || state_prec(op) == Prec::F64) ? Prec::F64 : Prec::F32;
    // Per row: the scores, the composed max and sum; each score cell's (row, key).
    std::vector<std::vector<TermP>> rows_x;
    std::vector<TermP> rows_m, rows_l;
    std::map<std::int64_t, std::pair<std::size_t, std::int64_t>> key_of;
    std::map<std::string, std::int64_t> env;
    for_box(an->rows, env, 0, [&] {
      std::vector<TermP> X;
      for (std::int64_t t = an->t.from; t <= an->t.to; ++t) {
        env[an->t.sym] = t;
        std::vector<std::int64_t> idx;
        for (const auto& i : an->xi) idx.push_back(eval_index(i, env));
        const std::int64_t cell = flat_cell(xnode->dims, idx);
        key_of[cell] = {rows_x.size(), t - an->t.from};
        X.push_back(x_cells[static_cast<std::size_t>(cell)]);
      }
      TermP M = store.constant(-INFINITY, sp);
      for (TermP x : X) M = an->self_first ? store.binary(BinOp::Max, M, x, sp) : store.binary(BinOp::Max, x, M, sp);
      TermP acc = store.constant(0.0, sp);
      for (TermP x : X)
        acc = store.binary(BinOp::Add, acc, store.unary(UnOp::Exp, store.binary(BinOp::Sub, x, M, sp), sp), sp);
      rows_x.push_back(std::move(X));
      rows_m.push_back(M);
      rows_l.push_back(acc);
    });
    // The source's contributions to each output cell, in its loop order.
    std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>> per_cell;  // o cell -> (p, v) cells
    auto cell_of = [&](const Node& nd, const std::vector<Index>& idcs) {
      std::vector<std::int64_t> idx;
      for (const auto& i : idcs) idx.push_back(eval_index(i, env));
      return flat_cell(nd.dims, idx);
    };
    env.clear();
    for_box(vloops, env, 0, [&] {
      per_cell[cell_of(*onode, vst->indices)].emplace_back(cell_of(*pnode, pf->indices), cell_of(*vnode, vf->indices));
    });
    std::map<std::pair<std::size_t, bool>, FoldRowTerms> folds;  // (row, skipping)
    std::int64_t matched = 0, skipping = 0;
    for (const auto& [oc, contributions] : per_cell) {
      TermP acc = store.constant(0.0, op);
      std::optional<std::size_t> row;
      std::vector<TermP> v_of_key(static_cast<std::size_t>(n), nullptr);
      for (const auto& [pc, vc] : contributions) {
        auto it = key_of.find(pc);
        if (it == key_of.end() || (row && *row != it->second.first))
          throw std::runtime_error(fmt::format("{}[{}] reads probabilities outside one row of the normalizer", o, oc));
        row = it->second.first;
        const auto t = static_cast<std::size_t>(it->second.second);
        const std::vector<TermP>& X = rows_x[*row];
        TermP P = store.binary(BinOp::Div, store.unary(UnOp::Exp, store.binary(BinOp::Sub, X[t], rows_m[*row], sp), sp),
                               rows_l[*row], pnode->prec);
        if (p_cells[static_cast<std::size_t>(pc)] != P)
          throw std::runtime_error(fmt::format("{}[{}] is not exp(x - m) / l of its row", p, pc));
        if (v_of_key[t]) throw std::runtime_error(fmt::format("{}[{}] reads key {} twice", o, oc, t));
        TermP V = v_cells[static_cast<std::size_t>(vc)];
        v_of_key[t] = V;
        acc = store.binary(BinOp::Add, acc, p_first ? store.binary(BinOp::Mul, P, V, prod->prec) : store.binary(BinOp::Mul, V, P, prod->prec),
                           add->prec);
      }
      if (!row || ms.at(o)[static_cast<std::size_t>(oc)] != acc)
        throw std::runtime_error(fmt::format("source cell {}[{}] is not the composed value pass of its row", o, oc));
      // The fold computing every block, then the fold skipping its fully masked ones: a skipped
      // block's numerator is U·α + Z, Z = -0 + 0·v over the block's keys.
      const TermP target = mt.at(o)[static_cast<std::size_t>(oc)];
      bool found = false;
      for (const bool skip : {false, true}) {
        auto [fit, fresh] = folds.try_emplace(std::make_pair(*row, skip));
        if (fresh) fit->second = fold_row_terms(store, rows_x[*row], bt.block, sp, q, skip);
        const FoldRowTerms& fr = fit->second;
        if (skip && fr.skips == 0) break;
        TermP U = store.constant(0.0, up);
        for (std::size_t k = 0; k < fr.alpha.size(); ++k) {
          U = store.binary(BinOp::Mul, U, fr.alpha[k], up);
          TermP Z = store.constant(-0.0, up);
          for (std::int64_t j = 0; j < bt.block; ++j) {
            const std::size_t key = k * static_cast<std::size_t>(bt.block) + static_cast<std::size_t>(j);
            if (key >= static_cast<std::size_t>(n)) continue;
            if (!v_of_key[key]) throw std::runtime_error(fmt::format("{}[{}] does not read key {}", o, oc, key));
            if (fr.skipped[k])
              Z = store.binary(BinOp::Add, Z, store.binary(BinOp::Mul, store.constant(0.0, q), v_of_key[key], up), up);
            else
              U = store.binary(BinOp::Add, U, store.binary(BinOp::Mul, fr.exps[k][static_cast<std::size_t>(j)],
                                                           v_of_key[key], up), up);
          }
          if (fr.skipped[k]) U = store.binary(BinOp::Add, U, Z, up);
        }
        if (target == store.convert(store.binary(BinOp::Div, U, fr.norm, up), op)) {
          found = true;
          skipping += skip;
          break;
        }
      }
      if (!found)
        throw std::runtime_error(fmt::format(
            "target cell {}[{}] is not the fold's numerator (blocks of {}) over its norm", o, oc, bt.block));
      ++matched;
    }
    if (matched == 0) throw std::runtime_error("no output cell is a value pass");
    std::string skip_text;
    if (skipping > 0) {
      const SkipLemma lemma = block_skip_lemma(q, up, vnode->prec, limits);
      if (!lemma.proved) throw std::runtime_error(lemma.detail);
      skip_text = fmt::format("; {} cells skip their row's fully masked blocks, {}", skipping, lemma.detail);
    }
    return fmt::format(
        "(i) recurrence: {} cells of {}: each is the composed (exp(x - m) / l)·v (source) and the fold's numerator in "
        "blocks of {} over its norm (target) of its row, as hash-consed terms over the scores at the max reduction "
        "and the values; {} distinct terms{}",
        matched, o, bt.block, store.size(), skip_text);
  });
}

}  // namespace fp::verify
