// Reverse-mode differentiation into a training-step routine (autodiff.h).
#include "frontend/autodiff.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/diagnostic.h"
#include "frontend/lower.h"

namespace fp::fe {

std::string grad_name(const std::string& name) {
  return "grad_" + name;
}

namespace {

// Reads through which a value can flow into the assignment's result: not inside a `where`
// condition or a comparison (piecewise constant), not under an undifferentiated max.
void differentiable_reads(const Te& e, std::vector<const TeNode*>& out) {
  switch (e->op) {
    case TeOp::Read:
      out.push_back(e.get());
      return;
    case TeOp::Const:
    case TeOp::Index:
      return;
    case TeOp::Where:
      differentiable_reads(e->args[1], out);
      differentiable_reads(e->args[2], out);
      return;
    default:
      if (is_boolean(e->op)) return;
      for (const auto& a : e->args) differentiable_reads(a, out);
  }
}

std::vector<const TeNode*> differentiable_reads(const Assignment& a, bool differentiable_max) {
  std::vector<const TeNode*> out;
  if (a.reduce == Reduce::Max && !differentiable_max) return out;
  differentiable_reads(a.rhs, out);
  return out;
}

struct Contribution {
  std::string tensor;
  std::vector<std::string> axes;
  Te value;
};

class Backward {
 public:
  Backward(const Program& fwd, const GradRequest& req, std::string file)
      : fwd_(fwd), req_(req), file_(std::move(file)) {}

  Routine run(const std::string& routine_name) {
    validate();
    find_active();
    Program ext = fwd_;  // the forward's tensors plus the gradient nodes, for lowering reads
    std::vector<StmtP> backward;
    seed_gradients(ext, backward);
    for (auto it = fwd_.assignments.rbegin(); it != fwd_.assignments.rend(); ++it)
      adjoint(ext, *it, backward);
    for (const auto& leaf : req_.wrt) grad_node(ext, leaf);  // a leaf the loss ignores: zeros

    Routine r;
    r.name = routine_name.empty() ? fwd_.name + "_train" : routine_name;
    r.attrs = fwd_.attrs;
    for (const auto& t : fwd_.tensors) {
      Node n = node_of(t);
      n.is_output = false;  // a training step outputs gradients only
      r.nodes.push_back(std::move(n));
    }
    std::vector<StmtP> body;
    for (const auto& a : fwd_.assignments)
      for (auto& s : lower_assignment(fwd_, a)) body.push_back(std::move(s));
    // Gradient nodes in the order the backward first writes them, the requested ones last in
    // request order (so the outputs come out as requested); each zeroed once, before any adjoint.
    std::vector<std::string> order;
    for (const auto& g : grad_order_)
      if (!ext.find_tensor(g)->is_output) order.push_back(g);
    for (const auto& leaf : req_.wrt) order.push_back(grad_name(leaf));
    for (const auto& g : order) {
      r.nodes.push_back(node_of(*ext.find_tensor(g)));
      body.push_back(zero(g));
    }
    body.insert(body.end(), backward.begin(), backward.end());
    r.body = seq(std::move(body));
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw UserError(kExitMalformed, file_, 0, 0, msg); }

  void validate() const {
    std::set<std::string> seen;
    for (const auto& w : req_.wrt) {
      const TensorDecl* t = fwd_.find_tensor(w);
      if (!t || !t->is_input) fail(fmt::format("gradient requested for '{}', which is not an input", w));
      if (!is_float(t->prec))
        fail(fmt::format("gradient requested for '{}', which is not a float tensor", w));
      if (!seen.insert(w).second) fail(fmt::format("gradient of '{}' requested twice", w));
    }
    if (req_.wrt.empty()) fail("a training step needs at least one gradient (grad ...)");
    if (req_.loss.empty()) fail("a training step needs a loss (loss TENSOR * SEED)");
    std::set<std::string> outs;
    for (const auto& [o, s] : req_.loss) {
      const TensorDecl* ot = fwd_.find_tensor(o);
      const TensorDecl* st = fwd_.find_tensor(s);
      if (!ot || ot->is_input) fail(fmt::format("loss term '{}' is not a computed tensor", o));
      if (!st || !st->is_input) fail(fmt::format("loss seed '{}' is not an input", s));
      if (st->dims != ot->dims) fail(fmt::format("loss seed '{}' does not have the dims of '{}'", s, o));
      if (!outs.insert(o).second) fail(fmt::format("'{}' appears twice in the loss", o));
    }
    for (const auto& t : fwd_.tensors) {
      const std::string g = grad_name(t.name);
      if (fwd_.find_tensor(g) || fwd_.find_axis(g))
        fail(fmt::format("the gradient node name '{}' is already taken", g));
    }
  }

  // active = depends on a requested leaf AND reaches the loss, both through differentiable reads.
  void find_active() {
    std::set<std::string> depends(req_.wrt.begin(), req_.wrt.end());
    for (const auto& a : fwd_.assignments)
      for (const TeNode* r : differentiable_reads(a, req_.differentiable_max))
        if (depends.count(r->tensor)) depends.insert(a.target);
    std::set<std::string> reaches;
    for (const auto& [o, s] : req_.loss) reaches.insert(o);
    for (auto it = fwd_.assignments.rbegin(); it != fwd_.assignments.rend(); ++it)
      if (reaches.count(it->target))
        for (const TeNode* r : differentiable_reads(*it, req_.differentiable_max)) reaches.insert(r->tensor);
    for (const auto& n : depends)
      if (reaches.count(n)) active_.insert(n);
  }

  bool is_read_anywhere(const std::string& name) const {
    for (const auto& a : fwd_.assignments) {
      bool found = false;
      for_each_te(a.rhs, [&](const TeNode& n) { found = found || (n.op == TeOp::Read && n.tensor == name); });
      if (found) return true;
    }
    return false;
  }

  // The gradient node of `name`, declared in `ext` on first use (zeroing order = first use).
  const std::string& grad_node(Program& ext, const std::string& name) {
    auto it = grad_of_.find(name);
    if (it != grad_of_.end()) return it->second;
    const TensorDecl* t = ext.find_tensor(name);
    TensorDecl g = *t;
    g.name = grad_name(name);
    g.is_input = false;
    g.is_output = std::find(req_.wrt.begin(), req_.wrt.end(), name) != req_.wrt.end();
    ext.tensors.push_back(g);
    grad_order_.push_back(g.name);
    return grad_of_[name] = g.name;
  }

  // The gradient of a loss term is its seed. When nothing else reads the term the seed IS its
  // gradient node (no copy); otherwise the term's gradient node starts from the seed.
  void seed_gradients(Program& ext, std::vector<StmtP>& out) {
    for (const auto& [o, s] : req_.loss) {
      if (!active_.count(o)) continue;
      if (!is_read_anywhere(o)) {
        grad_of_[o] = s;
        continue;
      }
      const TensorDecl* t = fwd_.find_tensor(o);
      const std::string& g = grad_node(ext, o);
      auto idx = iterators(t->axes);
      out.push_back(nest(
          fwd_, t->axes,
          set(g, idx,
              binary(BinOp::Add, get(g, idx, t->prec), get(s, idx, fwd_.find_tensor(s)->prec), t->prec))));
    }
  }

  void backprop(const Te& e, const Te& adj, const Te& self, std::vector<Contribution>& out) const {
    switch (e->op) {
      case TeOp::Read:
        if (active_.count(e->tensor)) out.push_back({e->tensor, e->axes, adj});
        return;
      case TeOp::Neg:
        backprop(e->args[0], neg(adj), nullptr, out);
        return;
      case TeOp::Exp:
        backprop(e->args[0], adj * (self ? self : e), nullptr, out);
        return;
      case TeOp::Add:
        backprop(e->args[0], adj, nullptr, out);
        backprop(e->args[1], adj, nullptr, out);
        return;
      case TeOp::Sub:
        backprop(e->args[0], adj, nullptr, out);
        backprop(e->args[1], neg(adj), nullptr, out);
        return;
      case TeOp::Mul:
        backprop(e->args[0], adj * e->args[1], nullptr, out);
        backprop(e->args[1], e->args[0] * adj, nullptr, out);
        return;
      case TeOp::Div: {
        const Te& a = e->args[0];
        const Te& b = e->args[1];
        backprop(a, adj / b, nullptr, out);
        // d(a/b)/db = -a/(b*b): reads a and b, not the quotient, so the quotient's only other
        // reader stays the consumer that the rewrite tier expects.
        backprop(b, adj * (neg(a) / (b * b)), nullptr, out);
        return;
      }
      case TeOp::Where:
        backprop(e->args[1], where(e->args[0], adj, cst(0)), nullptr, out);
        backprop(e->args[2], where(e->args[0], cst(0), adj), nullptr, out);
        return;
      default:
        return;  // constants, indices, conditions: piecewise constant
    }
  }

  void adjoint(Program& ext, const Assignment& a, std::vector<StmtP>& out) {
    if (!active_.count(a.target)) return;
    if (a.reduce == Reduce::Max && !req_.differentiable_max) return;
    Te g = read(grad_of_.at(a.target), a.axes);
    Te adj = g;
    Te self;
    if (a.reduce == Reduce::Max) adj = g * binary(TeOp::Eq, a.rhs, read(a.target, a.axes));
    if (a.reduce == Reduce::None) self = read(a.target, a.axes);
    std::vector<Contribution> contribs;
    backprop(a.rhs, adj, self, contribs);

    // One nest per distinct (tensor, axes) read; repeated reads of one cell add up in it.
    std::vector<Contribution> grouped;
    for (auto& c : contribs) {
      auto it = std::find_if(grouped.begin(), grouped.end(),
                             [&](const Contribution& d) { return d.tensor == c.tensor && d.axes == c.axes; });
      if (it == grouped.end())
        grouped.push_back(c);
      else
        it->value = it->value + c.value;
    }
    const auto loops = loop_axes(a);
    for (const auto& c : grouped) {
      const std::string gname = grad_node(ext, c.tensor);
      const Prec p = ext.find_tensor(c.tensor)->prec;
      auto idx = iterators(c.axes);
      ExprP v = binary(BinOp::Add, get(gname, idx, p), lower_expr(ext, c.value, p), p);
      out.push_back(nest(ext, loops, set(gname, idx, v)));
    }
  }

  const Program& fwd_;
  const GradRequest& req_;
  std::string file_;
  std::set<std::string> active_;
  std::map<std::string, std::string> grad_of_;  // tensor -> its gradient tensor (node or seed)
  std::vector<std::string> grad_order_;         // gradient nodes, in zeroing order
};

}  // namespace

Routine lower_training_step(const Program& forward, const GradRequest& req, const std::string& file,
                            const std::string& routine_name) {
  return Backward(forward, req, file).run(routine_name);
}

}  // namespace fp::fe
