#include "verify/normalizer_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "core/diagnostic.h"
#include "core/ir_visit.h"
#include "core/random_inputs.h"
#include "verify/bounds/bound_formula.h"
#include "verify/proof_cache.h"
#include "verify/smt/smt.h"
#include "verify/symbolic/symexec.h"

namespace fp::verify {

namespace {

struct Loop {
  std::string sym;
  std::int64_t from, to;
};

const Stmt* peel(const Stmt* s, std::vector<Loop>& loops) {
  while (s->kind == StmtKind::For && s->body.size() == 1) {
    loops.push_back(Loop{s->sym, s->from, s->to});
    s = s->body[0].get();
  }
  return s;
}

bool mentions(const std::vector<Index>& idx, const std::string& sym) {
  for (const auto& i : idx)
    if (i.mentions(sym)) return true;
  return false;
}

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

double lowest_finite_of(Prec state) {
  return state == Prec::F64 ? -std::numeric_limits<double>::max()
                            : -static_cast<double>(std::numeric_limits<float>::max());
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

std::mutex g_cert_mutex;
std::map<std::string, Certificate> g_certs;

nlohmann::json cert_json(const Certificate& c) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& p : c.parts)
    parts.push_back({{"name", p.name}, {"status", p.status}, {"detail", p.detail}});
  return {{"parts", parts}, {"tightness", c.tightness}, {"mpfr_ok", c.mpfr_ok}};
}

Certificate cert_of(const nlohmann::json& j) {
  Certificate c;
  for (const auto& p : j.at("parts"))
    c.parts.push_back(CertificatePart{p.at("name"), p.at("status"), p.at("detail")});
  c.tightness = j.at("tightness");
  c.mpfr_ok = j.at("mpfr_ok");
  return c;
}

Certificate compute_certificate(Prec storage, std::int64_t n, const Limits& limits,
                                const std::string& dump_prefix) {
  Certificate cert;
  const Prec state = state_prec(storage);
  // (a) Z3 over the reals, every pattern of new maxima for n = 1..real_n.
  {
    std::vector<std::string> per_n;
    int proved = 0, total = 0;
    std::string undecided;
    for (int k = 1; k <= limits.real_n; ++k) {
      NormalizerBound b = normalizer_bound(storage, state, k, limits.exp_ulp);
      if (!b.defined) continue;
      int ok = 0, count = 0;
      for (int pat = 0; pat < (1 << (k - 1)); ++pat) {
        smt::RealBoundQuery q;
        q.n = k;
        for (int i = 0; i < k - 1; ++i) q.pattern += ((pat >> i) & 1) ? '1' : '0';
        q.storage_bits = significand_bits(storage);
        q.state_bits = significand_bits(state);
        q.exp_ulp = limits.exp_ulp;
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
    MpfrReport r = mpfr_check_normalizer(storage, n, limits);
    cert.mpfr_ok = r.violations == 0 && r.nan_mismatches == 0 && r.max_mismatches == 0;
    std::vector<std::string> fams;
    for (const auto& f : r.families)
      fams.push_back(fmt::format("{} {} rows worst {}", f.name, f.rows, fraction(f.worst)));
    cert.parts.push_back(CertificatePart{
        "(b) mpfr", cert.mpfr_ok ? "confirmed" : "failed",
        fmt::format(
            "{} rows ({} finite, {} NaN rows with NaN positions compared) at {} bits, n in {{{}}}, storage "
            "{} "
            "state {}: {} violations, {} NaN mismatches, {} max mismatches{}; worst against the exact sum: "
            "composed {} of B_src, scan {} of B_tgt; families: {}",
            r.rows, r.finite_rows, r.special_rows, r.bits, fmt::join(r.key_counts, ", "), prec_name(storage),
            prec_name(state), r.violations, r.nan_mismatches, r.max_mismatches,
            r.first_violation.empty() ? "" : " (first: " + r.first_violation + ")", fraction(r.worst_src),
            fraction(r.worst_tgt), fmt::join(fams, "; "))});
    cert.tightness = r.worst_pair;
    cert.parts.push_back(CertificatePart{"(c) tightness", "measured",
                                         fmt::format("worst |l_tgt - l_src| / (REL·|l_src|) = {} on {}",
                                                     fraction(r.worst_pair), r.worst_row)});
  }
  ExpUlpMeasure e = measure_exp_ulp(20000, limits.seed);
  // A measured error above the assumption voids the bound's premise.
  cert.mpfr_ok = cert.mpfr_ok && e.max_ulp <= limits.exp_ulp;
  cert.parts.push_back(CertificatePart{
      "exp assumption", e.max_ulp <= limits.exp_ulp ? "measured" : "failed",
      fmt::format("{}; measured here: fp_exp64 max {:.4f} ulp on {} normal-range samples (worst x = {:a})",
                  exp_assumption_text(limits.exp_ulp), e.max_ulp, e.samples, e.worst_x)});
  return cert;
}

// ---- downstream bounds -----------------------------------------------------------------------

struct Affected {
  double rho = 0;
  bool scaled = false;   // relative to Σ|w·v| (absdot node) instead of |value|
  bool tainted = false;  // perturbed by an unknown amount: no bound, and none downstream of it
  std::string formula;
};

std::optional<double> rel_of(const Expr& e, const std::map<std::string, Affected>& aff) {
  auto conv = [&](const ExprP& a, Prec to) -> std::optional<double> {
    auto r = rel_of(*a, aff);
    if (!r) return r;
    return conversion_perturbation(*r, a->prec, to);
  };
  switch (e.kind) {
    case ExprKind::Get: {
      auto it = aff.find(e.name);
      if (it == aff.end()) return 0.0;
      if (it->second.scaled || it->second.tainted) return std::nullopt;
      return it->second.rho;
    }
    case ExprKind::GetLocal:
    case ExprKind::Const:
    case ExprKind::EmbedIndex:
      return 0.0;
    case ExprKind::Unary: {
      auto r = conv(e.args[0], e.prec);
      if (!r) return r;
      switch (e.unop()) {
        case UnOp::Neg:
        case UnOp::Abs:
        case UnOp::Cast:
          return r;
        default:
          return *r == 0 ? std::optional<double>(0.0) : std::nullopt;
      }
    }
    case ExprKind::Binary: {
      auto a = conv(e.args[0], e.prec), b = conv(e.args[1], e.prec);
      if (!a || !b) return std::nullopt;
      switch (e.binop()) {
        case BinOp::Mul:
          return product_perturbation(*a, *b, e.prec);
        case BinOp::Div:
          return quotient_perturbation(*a, *b, e.prec);
        default:
          return *a == 0 && *b == 0 ? std::optional<double>(0.0) : std::nullopt;
      }
    }
    case ExprKind::Ternary: {
      if (e.ternop() != TernOp::Where) {
        for (const auto& a : e.args) {
          auto r = rel_of(*a, aff);
          if (!r || *r != 0) return std::nullopt;
        }
        return 0.0;
      }
      auto c = rel_of(*e.args[0], aff);
      auto a = conv(e.args[1], e.prec), b = conv(e.args[2], e.prec);
      if (!c || *c != 0 || !a || !b) return std::nullopt;
      return std::max(*a, *b);
    }
  }
  return std::nullopt;
}

std::int64_t trips(const Loop& l) {
  return std::max<std::int64_t>(0, l.to - l.from + 1);
}

}  // namespace

Certificate certificate_for(Prec storage, std::int64_t n, const Limits& limits, ProofCache* disk,
                            const std::string& dump_prefix) {
  nlohmann::json lj = to_json(limits);
  lj.erase("search_trials");
  lj.erase("max_terms");
  lj.erase("timeout_s");
  const std::string key =
      sha256_hex(fmt::format("flashproof-certificate|engine {}|semantics {}|z3 {}|{}|n {}|{}", kEngineVersion,
                             kSemanticsVersion, smt::solver_version(), prec_name(storage), n, lj.dump()));
  {
    std::lock_guard<std::mutex> lock(g_cert_mutex);
    if (auto it = g_certs.find(key); it != g_certs.end()) return it->second;
  }
  if (disk && dump_prefix.empty())
    if (auto j = disk->get(key)) {
      try {
        Certificate c = cert_of(*j);
        std::lock_guard<std::mutex> lock(g_cert_mutex);
        g_certs.emplace(key, c);
        return c;
      } catch (const std::exception&) {
      }
    }
  Certificate c = compute_certificate(storage, n, limits, dump_prefix);
  if (disk) disk->put(key, cert_json(c));
  std::lock_guard<std::mutex> lock(g_cert_mutex);
  g_certs.emplace(key, c);
  return c;
}

BoundedCheck check_normalizer_sum(const Routine& src, const Routine& tgt, const Application& app,
                                  const Obligation& ob, const Limits& limits, ProofCache* disk,
                                  const std::string& dump_prefix) {
  BoundedCheck res;
  res.scope = concrete_scope(src);
  FP_INTERNAL_CHECK(ob.bound && !ob.covers.empty(), "bounded obligation {} without bound terms or covers",
                    ob.claim);
  const std::string l = ob.covers[0].node;
  const BoundTerms bt = *ob.bound;
  const Node* lnode = src.find_node(l);
  if (std::string why = pair_mismatch(src, tgt, {l}); !why.empty() || !lnode) {
    res.kind = VerdictKind::Error;
    res.message = why.empty() ? "no node " + l : why;
    return res;
  }
  BoundInfo& bi = res.bound;
  const NormalizerBound nb = normalizer_bound(bt.storage, bt.state, bt.terms, limits.exp_ulp);
  bi.formula = normalizer_formula_text();
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

  // (i) the recurrence.
  bool recurrence = false;
  bool term_limit = false;  // (i) could not run: a resource limit, not a structural mismatch
  std::string why_not;
  std::vector<StmtP> S = top_level_statements(src);
  const std::size_t anchor_pos =
      app.statements.empty() ? S.size() : static_cast<std::size_t>(app.statements[0] - 1);
  try {
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
    const double low = lowest_finite_of(q);
    // Canonical terms per row.
    std::unordered_map<TermP, std::vector<TermP>> composed_to_scan;
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
    std::int64_t matched = 0, identical = 0;
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
            "target cell {}[{}] is not the online recurrence of its row (n = {}, state {}, storage {})", l, c,
            bt.terms, prec_name(q), prec_name(p)));
      ++matched;
    }
    if (matched == 0) throw std::runtime_error("no covered cell is a normalizer");
    recurrence = true;
    res.steps.push_back(
        fmt::format("(i) recurrence: {} cells of {}: {} are the composed sum (source) and the online "
                    "recurrence at {} (target) of "
                    "their row, as hash-consed terms over the scores at the max reduction; {} identical; {} "
                    "distinct terms",
                    ls.size(), l, matched, prec_name(q), identical, store.size()));
  } catch (const TermLimitExceeded& e) {
    why_not = e.what();
    term_limit = true;
  } catch (const std::runtime_error& e) {
    why_not = e.what();
  }
  if (!recurrence) res.steps.push_back("(i) recurrence not established: " + why_not);
  bi.parts.push_back(CertificatePart{"(i) recurrence", recurrence ? "proved" : "failed",
                                     recurrence ? res.steps.back() : why_not});

  // Downstream nodes and the differential.
  std::map<std::string, Affected> aff{{l, Affected{nb.rel, false, false, "REL"}}};
  std::vector<std::string> notes;
  std::vector<std::pair<std::size_t, StmtP>> aux;  // statements to insert after a position
  std::vector<std::string> absdot_nodes;
  for (std::size_t pos = anchor_pos + 1; pos < S.size(); ++pos) {
    bool part_of_match = std::find(app.statements.begin(), app.statements.end(), static_cast<int>(pos + 1)) !=
                         app.statements.end();
    if (part_of_match) continue;
    std::set<std::string> reads, writes;
    for_each_stmt(S[pos], [&](const Stmt& st) {
      if (st.kind == StmtKind::Set || st.kind == StmtKind::Zero) writes.insert(st.name);
      for_each_own_expr(st, [&](const ExprP& e) {
        for_each_expr(e, [&](const Expr& x) {
          if (x.kind == ExprKind::Get) reads.insert(x.name);
        });
      });
    });
    bool reads_aff = false;
    for (const auto& r : reads) reads_aff = reads_aff || aff.count(r);
    for (const auto& w : writes)
      if (aff.count(w) && !aff.at(w).tainted && w != l) {
        aff[w].tainted = true;
        notes.push_back(fmt::format("{} is written again by statement {}: no downstream bound", w, pos + 1));
      }
    if (!reads_aff) continue;
    std::vector<Loop> loops;
    const Stmt* st = peel(S[pos].get(), loops);
    // Everything a statement without a derived bound writes is perturbed by an unknown amount,
    // and so is everything computed from it: it must never count as unperturbed further down.
    auto no_bound = [&] {
      for (const auto& w : writes) {
        if (!aff.count(w) || !aff.at(w).tainted)
          notes.push_back(fmt::format("no bound derived for {} (statement {})", w, pos + 1));
        Affected t;
        t.tainted = true;
        aff[w] = t;
      }
    };
    if (st->kind != StmtKind::Set || writes.size() != 1) {
      no_bound();
      continue;
    }
    const Node* out = src.find_node(st->name);
    bool self = reads.count(st->name) > 0;
    if (!self) {
      auto r = rel_of(*st->value, aff);
      if (!r || !std::isfinite(*r)) {
        no_bound();
        continue;
      }
      double rho = conversion_perturbation(*r, st->value->prec, out->prec);
      aff[st->name] = Affected{rho, false, false, "pointwise"};
      continue;
    }
    // A reduction T[ti] = add(T[ti], mul(a, b)) with one perturbed factor.
    const ExprP& v = st->value;
    auto is_self = [&](const ExprP& e) {
      return e->kind == ExprKind::Get && e->name == st->name && e->indices == st->indices;
    };
    int pi = v->kind == ExprKind::Binary && v->binop() == BinOp::Add ? (is_self(v->args[0])   ? 1
                                                                        : is_self(v->args[1]) ? 0
                                                                                              : -1)
                                                                     : -1;
    if (pi < 0 || v->args[static_cast<std::size_t>(pi)]->kind != ExprKind::Binary ||
        v->args[static_cast<std::size_t>(pi)]->binop() != BinOp::Mul) {
      no_bound();
      continue;
    }
    const ExprP& prod = v->args[static_cast<std::size_t>(pi)];
    auto ra = rel_of(*prod->args[0], aff), rb = rel_of(*prod->args[1], aff);
    if (!ra || !rb || (*ra != 0 && *rb != 0)) {
      no_bound();
      continue;
    }
    std::int64_t n_red = 1;
    for (const auto& lp : loops)
      if (!mentions(st->indices, lp.sym)) n_red *= trips(lp);
    double rw = conversion_perturbation(std::max(*ra, *rb), (*ra != 0 ? prod->args[0] : prod->args[1])->prec,
                                        prod->prec);
    double rho = dot_perturbation(rw, n_red, out->prec) * (1 + static_cast<double>(n_red) * 0x1p-50);
    if (!std::isfinite(rho)) {
      no_bound();
      continue;
    }
    aff[st->name] = Affected{rho, true, false, "dot"};
    const std::string absdot = "__fp_absdot_" + st->name;
    absdot_nodes.push_back(absdot);
    ExprP mag = binary(BinOp::Mul, unary(UnOp::Abs, prod->args[0], Prec::F64),
                       unary(UnOp::Abs, prod->args[1], Prec::F64), Prec::F64);
    StmtP nest =
        set(absdot, st->indices, binary(BinOp::Add, get(absdot, st->indices, Prec::F64), mag, Prec::F64));
    for (auto it = loops.rbegin(); it != loops.rend(); ++it)
      nest = for_loop(it->sym, it->from, it->to, {nest});
    aux.emplace_back(pos, nest);
  }
  // The routines the differential runs: covered and downstream nodes as outputs, absdot nodes.
  std::vector<std::string> watched;
  for (const auto& [node, a] : aff)
    if (!a.tainted) watched.push_back(node);
  Routine src_run = with_outputs(src, watched, false);
  {
    std::vector<StmtP> body;
    for (std::size_t pos = 0; pos < S.size(); ++pos) {
      body.push_back(S[pos]);
      for (const auto& [at, st] : aux)
        if (at == pos) body.push_back(st);
    }
    src_run.body = seq(std::move(body));
    for (const auto& n : absdot_nodes) {
      const Node* base = src.find_node(n.substr(std::string("__fp_absdot_").size()));
      Node nd;
      nd.name = n;
      nd.dims = base->dims;
      nd.prec = Prec::F64;
      nd.is_output = true;
      src_run.nodes.push_back(nd);
    }
  }
  Routine tgt_run = with_outputs(tgt, watched, false);
  std::vector<std::string> order{l};
  for (const auto& [node, a] : aff)
    if (node != l && !a.tainted) order.push_back(node);
  for (const auto& node : order) {
    const Affected& a = aff.at(node);
    NodeCheck c;
    c.node = node;
    c.rel = a.rho;
    const Node* nd = src.find_node(node);
    c.prec = nd->prec;
    c.overflow_tolerant = node != l;  // l <= n never overflows; downstream values may
    if (a.scaled) {
      c.kind = NodeCheck::Kind::Scaled;
      c.scale_node = "__fp_absdot_" + node;
      c.abs = 4 * static_cast<double>(nd->cell_count()) * underflow_error(nd->prec);
    } else {
      c.kind = NodeCheck::Kind::Relative;
      c.abs = node == l ? 0 : 4 * underflow_error(nd->prec);
    }
    res.checks.push_back(c);
    if (node != l)
      bi.downstream.push_back(DownstreamBound{
          node,
          a.scaled
              ? fmt::format("|{0}_tgt - {0}_src| <= rho·Σ|w·v| + abs, rho = REL_w + γ_n(u)(2 + REL_w)", node)
              : fmt::format("|{0}_tgt - {0}_src| <= rho·|{0}_src| + abs (propagated through mul/div/where)",
                            node),
          a.rho, a.scaled ? "Σ|w·v|" : "|" + node + "_src|", 0});
  }
  for (const auto& n : notes) res.steps.push_back(n);
  PairRunner runner(src_run, tgt_run, res.checks);
  res.src_run = src_run;
  res.tgt_run = tgt_run;

  // Differential on the routine's own random inputs (a few seeds), recording the worst ratios.
  std::map<std::string, double> worst;
  std::optional<Mismatch> diff_fail;
  TensorMap diff_inputs;
  for (std::uint64_t k = 0; k < 4 && !diff_fail; ++k) {
    diff_inputs = random_inputs(src, limits.seed + k);
    diff_fail = runner.run(diff_inputs, &worst);
  }
  for (auto& d : bi.downstream) d.worst_observed = worst[d.node];
  bi.worst_observed = worst[l];
  bi.parts.push_back(CertificatePart{
      "differential", diff_fail ? "failed" : "confirmed",
      diff_fail ? diff_fail->text()
                : fmt::format("routine's own random inputs (4 seeds): worst {} of the bound on {}{}",
                              fraction(worst[l]), l, [&] {
                                std::string s;
                                for (const auto& d : bi.downstream)
                                  s += fmt::format(", {} of its bound on {}", fraction(d.worst_observed),
                                                   d.node);
                                return s;
                              }())});
  if (diff_fail) {
    res.kind = VerdictKind::Refuted;
    res.message = "outside the bound on the routine's own random inputs: " + diff_fail->text();
    res.counterexample = Found{diff_inputs, *diff_fail, "random (differential)", 0};
    return res;
  }
  res.steps.push_back(bi.parts.back().detail);
  // Adversarial search: the full budget when the recurrence is not established.
  const int trials = recurrence ? std::max(1, limits.search_trials / 4) : limits.search_trials;
  if (auto found = search_counterexample(runner, trials, limits.seed)) {
    res.kind = VerdictKind::Refuted;
    res.message = "outside the bound: " + found->mismatch.text();
    res.steps.push_back(
        fmt::format("counterexample search: trial {} ({}) violates the bound", found->trial, found->family));
    res.counterexample = std::move(*found);
    return res;
  }
  res.steps.push_back(fmt::format("counterexample search: {} adversarial trials within the bound", trials));
  if (!recurrence) {
    res.kind = VerdictKind::Unknown;
    res.reason = term_limit ? UnknownReason::ResourceLimit : UnknownReason::Approximation;
    res.message = (term_limit ? "the recurrence could not be established (" + why_not + ")"
                              : "the target is not the recurrence the bound certifies (" + why_not + ")") +
                  "; no counterexample in " + std::to_string(trials) + " trials";
    return res;
  }

  // (ii) the certificate.
  Certificate cert = certificate_for(bt.storage, bt.terms, limits, disk, dump_prefix);
  for (const auto& p : cert.parts) bi.parts.push_back(p);
  bi.tightness = cert.tightness;
  if (!cert.mpfr_ok) {
    res.kind = VerdictKind::Unknown;
    res.reason = UnknownReason::Approximation;
    res.message = "the bound formula is not confirmed (MPFR reference or exp assumption failed)";
    return res;
  }
  res.kind = VerdictKind::Bounded;
  std::string reals_status;
  for (const auto& p : cert.parts)
    if (p.name == "(a) reals") reals_status = p.status;
  res.message = fmt::format(
      "{} is the online recurrence of the composed sum (i); bound REL = {:.3g} confirmed by MPFR (tightness "
      "{}), "
      "reals certificate {}, differential inside the bound",
      l, nb.rel, fraction(cert.tightness), reals_status);
  return res;
}

}  // namespace fp::verify
