#include "rewrites/online_softmax/online_softmax.h"

#include <map>
#include <set>

#include "rewrites/name_minter.h"
#include "rewrites/online_softmax/mutants.h"
#include "rewrites/online_softmax/normalizer_scan.h"
#include "rewrites/online_softmax/routine_view.h"
#include "rewrites/online_softmax/value_pass_hoist.h"

namespace fp {

MemberOutput rewrite_online_softmax(const Routine& r, const MemberContext& ctx) {
  using namespace osm;
  auto enabled = [&](const char* id) { return !ctx.shape_enabled || ctx.shape_enabled(id); };
  const bool scan_on = enabled(kNormalizerScanId);
  const bool hoist_on = enabled(kValuePassHoistId);

  MemberOutput out;
  RoutineView view(r);
  NormalizerSearch search = find_normalizers(view);
  if (scan_on)
    for (auto& d : search.declines) {
      d.round = ctx.round;
      out.declines.push_back(std::move(d));
    }
  if (search.found.empty()) {
    out.routine = r;
    return out;
  }

  NameMinter names(r);
  std::map<int, std::vector<StmtP>> replacements;
  std::set<int> consumed;
  for (const auto& nz : search.found) {
    for (int p : {nz.a_init, nz.a, nz.c_init, nz.c}) consumed.insert(p);
    if (!scan_on) continue;
    StmtP scan = emit_normalizer_scan(nz, names);
    Application app = normalizer_application(nz, view, *scan);
    app.round = ctx.round;
    out.applications.push_back(std::move(app));
    replacements[nz.a] = {scan};
    replacements[nz.a_init] = {};
    replacements[nz.c_init] = {};
    replacements[nz.c] = {};
  }

  if (hoist_on) {
    std::set<std::string> normalized = normalized_nodes(view, search.found);
    for (int p = 0; p < view.size(); ++p) {
      if (consumed.count(p)) continue;
      auto m = match_hoist(view, p, normalized);
      if (!m) continue;
      if (auto* d = std::get_if<Decline>(&*m)) {
        d->round = ctx.round;
        out.declines.push_back(std::move(*d));
        continue;
      }
      const Hoist& h = std::get<Hoist>(*m);
      StmtP s = emit_hoist(h, view, names);
      Application app = hoist_application(h, view, *s);
      app.round = ctx.round;
      out.applications.push_back(std::move(app));
      replacements[p] = {s};
    }
  }
  out.routine = replacements.empty() ? r : view.rebuild(replacements);
  return out;
}

namespace {

std::vector<ConfigKeySpec> online_softmax_keys() {
  return {
      ConfigKeySpec{"online_softmax", ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                    "the online-softmax normalizer scan and value-pass hoist (a numerics policy: the "
                    "normalizer's sum is reassociated)"},
      ConfigKeySpec{"online_softmax_backward", ConfigType::Bool, "false", {{"approximate", "true"}}, true,
                    "the fused backward (shape 3; not implemented yet: shapes 1 and 2 apply)"},
      ConfigKeySpec{"online_softmax_block", ConfigType::IntOrAuto, "0", {{"approximate", "auto"}}, true,
                    "block size of the FlashAttention fold (shape 4; 0: the two-pass form; not implemented "
                    "yet: shapes 1 and 2 apply)"},
  };
}

}  // namespace

Member online_softmax_member() {
  Member m;
  m.id = kOnlineSoftmaxId;
  m.gate = "online_softmax";
  m.version = "1";
  m.description =
      "online softmax: the (max, sum-of-exp) normalizer as one scan per row, and the value pass reading the "
      "probabilities once (default off; on in the approximate profile)";
  m.config_keys = online_softmax_keys();
  m.shapes = {
      ShapeInfo{osm::kNormalizerScanId,
                "exact (max), bounded (sum)",
                "a max reduction and the sum of exp(x - max) over one axis become one scan per row carrying the "
                "running max and the rescaled running sum, writing both to their nodes",
                {ClaimSpec{"normalizer-max", ObligationKind::Exact, "all-sizes-lift.normalizer-scan",
                           "the scan's running max is the composed max, bit for bit, for every extent"},
                 ClaimSpec{"normalizer-sum", ObligationKind::Bounded, "certified-bound.online-normalizer",
                           "the scan's rescaled sum is the composed sum within the certified bound"}},
                [](const Routine& tgt, const Application&) { return osm::normalizer_scan_mutants(tgt); }},
      ShapeInfo{osm::kValuePassHoistId,
                "exact",
                "a reduction of (normalized probabilities) * v moves the loops the probabilities do not index "
                "innermost, behind one read of the probability into a local",
                {ClaimSpec{"value-pass", ObligationKind::Exact, "all-sizes-lift.loop-permutation",
                           "every target cell receives the same contributions in the same order"}},
                osm::value_pass_mutants},
  };
  m.apply = rewrite_online_softmax;
  return m;
}

}  // namespace fp
