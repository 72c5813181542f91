// The all-sizes lift of a loop permutation, in Z3's integer arithmetic with symbolic extents.
//
// Iteration vectors are points of the box Π [lo_l, hi_l] (lo_l <= hi_l symbolic). A source
// statement accumulates into target[ti(I)] in the lexicographic order of its loops; the target
// statement visits the same vectors in the lexicographic order of the permuted loops. Three
// facts, each one unsat query:
//   bijection     the permutation maps the target's iteration box onto the source's, one to one
//                 (well-defined into the box, injective, and its inverse lands back)
//   order         no two iterations I != J with ti(I) = ti(J) are ordered I before J in the
//                 source and J before I in the target: every cell receives the same sequence of
//                 contributions
//   hoisted-read  two iterations that agree on the outer loops read the same cell of the
//                 hoisted operand: one read per outer iteration gives every inner iteration the
//                 value it read before
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <z3++.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "core/diagnostic.h"
#include "core/text_printer.h"
#include "verify/smt/smt.h"
#include "verify/smt/z3_common.h"

namespace fp::verify::smt {

namespace {

struct Box {
  std::map<std::string, z3::expr> lo, hi;
};

using Point = std::map<std::string, z3::expr>;

Point make_point(z3::context& c, const std::vector<std::string>& loops, const std::string& prefix) {
  Point p;
  for (const auto& l : loops) p.emplace(l, c.int_const((prefix + l).c_str()));
  return p;
}

z3::expr in_box(const Box& b, const Point& p) {
  z3::expr r = p.begin()->second.ctx().bool_val(true);
  for (const auto& [l, v] : p) r = r && b.lo.at(l) <= v && v <= b.hi.at(l);
  return r;
}

z3::expr index_value(z3::context& c, const Index& idx, const Point& p) {
  z3::expr v = c.int_val(static_cast<int64_t>(idx.offset));
  for (const auto& t : idx.terms) {
    auto it = p.find(t.sym);
    FP_INTERNAL_CHECK(it != p.end(), "index symbol {} is not a loop of the nest", t.sym);
    v = v + c.int_val(static_cast<int64_t>(t.coef)) * it->second;
  }
  return v;
}

z3::expr same_cell(z3::context& c, const std::vector<Index>& idx, const Point& a, const Point& b) {
  z3::expr r = c.bool_val(true);
  for (const auto& i : idx) r = r && index_value(c, i, a) == index_value(c, i, b);
  return r;
}

z3::expr lex_less(z3::context& c, const std::vector<std::string>& order, const Point& a, const Point& b) {
  z3::expr r = c.bool_val(false);
  z3::expr prefix_equal = c.bool_val(true);
  for (const auto& l : order) {
    r = r || (prefix_equal && a.at(l) < b.at(l));
    prefix_equal = prefix_equal && a.at(l) == b.at(l);
  }
  return r;
}

std::string describe(z3::model& m, const Box& box, const std::vector<std::pair<std::string, Point>>& pts) {
  std::string s = "extents:";
  for (const auto& [l, lo] : box.lo)
    s +=
        fmt::format(" {} in {}..{}", l, m.eval(lo, true).to_string(), m.eval(box.hi.at(l), true).to_string());
  for (const auto& [name, p] : pts) {
    s += fmt::format("; {} = (", name);
    bool first = true;
    for (const auto& [l, v] : p) {
      s += fmt::format("{}{}={}", first ? "" : ", ", l, m.eval(v, true).to_string());
      first = false;
    }
    s += ")";
  }
  return s;
}

}  // namespace

namespace {

std::string index_key(const std::vector<Index>& idx) {
  std::string k;
  for (const auto& i : idx) {
    k += fmt::format("{}", i.offset);
    for (const auto& t : i.terms) k += fmt::format("{:+}*{}", t.coef, t.sym);
    k += ',';
  }
  return k;
}

std::string query_key(const OrderQuery& q, const SmtLimits& limits) {
  return fmt::format("{}|{}|{}|{}|{}|{}", fmt::join(q.src_loops, " "), fmt::join(q.tgt_loops, " "), q.outer,
                     index_key(q.target), index_key(q.hoisted), limits.rlimit);
}

std::mutex g_order_mutex;
std::map<std::string, std::vector<OrderFact>> g_order_facts;

}  // namespace

// The three queries themselves (prove_order keeps their answers).
static std::vector<OrderFact> decide_order(const OrderQuery& q, const SmtLimits& limits,
                                           const std::string& dump_prefix);

std::vector<OrderFact> prove_order(const OrderQuery& q, const SmtLimits& limits,
                                   const std::string& dump_prefix) {
  const std::string key = query_key(q, limits);
  if (dump_prefix.empty()) {
    std::lock_guard<std::mutex> lock(g_order_mutex);
    if (auto it = g_order_facts.find(key); it != g_order_facts.end()) {
      std::vector<OrderFact> again = it->second;
      for (auto& f : again) f.shared = true;
      return again;
    }
  }
  std::vector<OrderFact> facts = decide_order(q, limits, dump_prefix);
  const bool decided = std::all_of(facts.begin(), facts.end(),
                                   [](const OrderFact& f) { return f.outcome.status != SmtStatus::Unknown; });
  if (decided) {
    std::lock_guard<std::mutex> lock(g_order_mutex);
    g_order_facts.emplace(key, facts);
  }
  return facts;
}

static std::vector<OrderFact> decide_order(const OrderQuery& q, const SmtLimits& limits,
                                           const std::string& dump_prefix) {
  std::vector<OrderFact> facts;
  auto run = [&](const std::string& name, auto&& build) {
    z3::context c;
    z3::solver s(c);
    detail::apply_limits(c, s, limits);
    Box box;
    for (const auto& l : q.src_loops) {
      box.lo.emplace(l, c.int_const(("lo_" + l).c_str()));
      box.hi.emplace(l, c.int_const(("hi_" + l).c_str()));
      s.add(box.lo.at(l) <= box.hi.at(l));  // no dead loop
    }
    std::vector<std::pair<std::string, Point>> shown = build(c, s, box);
    SmtLimits lim = limits;
    lim.comment = "flashproof verify: all-sizes lift, fact '" + name + "' (unsat = holds for all extents)";
    if (!dump_prefix.empty()) lim.dump_path = dump_prefix + "-" + name + ".smt2";
    OrderFact f{name, detail::run_check(s, lim), ""};
    if (f.outcome.status == SmtStatus::Sat) {
      z3::model m = s.get_model();
      f.witness = describe(m, box, shown);
    }
    facts.push_back(std::move(f));
  };

  FP_INTERNAL_CHECK(q.src_loops.size() == q.tgt_loops.size(), "the target nest has {} loops, the source {}",
                    q.tgt_loops.size(), q.src_loops.size());
  // bijection: the target visits coordinates named by the same loops in another order; sigma maps
  // a target vector (one value per target position) to the source vector with the same loop
  // values. Encoded by positions so the check is not a tautology of naming.
  run("bijection", [&](z3::context& c, z3::solver& s, Box& box) {
    std::map<std::string, std::size_t> src_pos;
    for (std::size_t i = 0; i < q.src_loops.size(); ++i) src_pos[q.src_loops[i]] = i;
    std::vector<z3::expr> j1, j2, src_of1, src_of2;
    for (std::size_t k = 0; k < q.tgt_loops.size(); ++k) {
      j1.push_back(c.int_const(("j1_" + std::to_string(k)).c_str()));
      j2.push_back(c.int_const(("j2_" + std::to_string(k)).c_str()));
    }
    // sigma: source position of the loop at target position k.
    std::vector<std::size_t> sigma;
    for (const auto& l : q.tgt_loops) {
      auto it = src_pos.find(l);
      if (it == src_pos.end()) {
        s.add(c.bool_val(true));  // a target loop the source lacks: not a permutation
        sigma.push_back(SIZE_MAX);
      } else {
        sigma.push_back(it->second);
      }
    }
    z3::expr in_tgt1 = c.bool_val(true), in_tgt2 = c.bool_val(true);
    for (std::size_t k = 0; k < q.tgt_loops.size(); ++k) {
      in_tgt1 = in_tgt1 && box.lo.at(q.tgt_loops[k]) <= j1[k] && j1[k] <= box.hi.at(q.tgt_loops[k]);
      in_tgt2 = in_tgt2 && box.lo.at(q.tgt_loops[k]) <= j2[k] && j2[k] <= box.hi.at(q.tgt_loops[k]);
    }
    // The image sigma(j) in source positions.
    auto image_in_src = [&](const std::vector<z3::expr>& j) {
      z3::expr r = c.bool_val(true);
      for (std::size_t k = 0; k < j.size(); ++k) {
        if (sigma[k] == SIZE_MAX) return c.bool_val(false);
        const std::string& sl = q.src_loops[sigma[k]];
        r = r && box.lo.at(sl) <= j[k] && j[k] <= box.hi.at(sl);
      }
      return r;
    };
    std::set<std::size_t> hit(sigma.begin(), sigma.end());
    bool onto = hit.size() == q.src_loops.size() && !hit.count(SIZE_MAX);
    z3::expr same_image = c.bool_val(true), differ = c.bool_val(false);
    for (std::size_t k = 0; k < j1.size(); ++k) {
      differ = differ || j1[k] != j2[k];
      // positions k and k' with the same source position must agree
      for (std::size_t k2 = 0; k2 < j1.size(); ++k2)
        if (sigma[k] == sigma[k2]) same_image = same_image && j1[k] == j2[k2];
    }
    s.add((in_tgt1 && !image_in_src(j1)) || (in_tgt1 && in_tgt2 && differ && same_image) ||
          c.bool_val(!onto));
    return std::vector<std::pair<std::string, Point>>{};
  });
  run("order", [&](z3::context& c, z3::solver& s, Box& box) {
    Point i = make_point(c, q.src_loops, "i_"), j = make_point(c, q.src_loops, "j_");
    s.add(in_box(box, i) && in_box(box, j) && same_cell(c, q.target, i, j));
    s.add(lex_less(c, q.src_loops, i, j) && lex_less(c, q.tgt_loops, j, i));
    return std::vector<std::pair<std::string, Point>>{{"I", i}, {"J", j}};
  });
  run("hoisted-read", [&](z3::context& c, z3::solver& s, Box& box) {
    Point i = make_point(c, q.src_loops, "i_"), j = make_point(c, q.src_loops, "j_");
    z3::expr same_outer = c.bool_val(true);
    for (int k = 0; k < q.outer; ++k) same_outer = same_outer && i.at(q.tgt_loops[k]) == j.at(q.tgt_loops[k]);
    s.add(in_box(box, i) && in_box(box, j) && same_outer && !same_cell(c, q.hoisted, i, j));
    return std::vector<std::pair<std::string, Point>>{{"I", i}, {"J", j}};
  });
  return facts;
}

}  // namespace fp::verify::smt
