// Parser of the tensor-expression language (te_parser.h); grammar in docs/frontend.md.
#include "frontend/te_parser.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "core/diagnostic.h"
#include "frontend/lower.h"
#include "frontend/te_lexer.h"

namespace fp::fe {

namespace {

constexpr int kMaxDepth = 256;

struct Located {
  std::string name;
  SrcLoc loc;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file, const std::string& default_name)
      : lex_(text),
        file_(file),
        b_(is_identifier(default_name) && !is_reserved_name(default_name) ? default_name : "main", file) {}

  ParsedProgram parse() {
    next();
    while (tok_.kind != TeTok::End) {
      if (tok_.kind != TeTok::Newline) {
        statement();
        if (tok_.kind != TeTok::Newline && tok_.kind != TeTok::End)
          fail_at(tok_, fmt::format("expected end of line, found {}", describe(tok_)));
      }
      if (tok_.kind == TeTok::Newline) next();
    }
    return finish();
  }

 private:
  // ---- tokens ----
  [[noreturn]] void fail(SrcLoc loc, const std::string& msg) const {
    throw UserError(kExitMalformed, file_, loc.line, loc.col, msg);
  }
  [[noreturn]] void fail_at(const TeToken& t, const std::string& msg) const { fail(loc_of(t), msg); }
  static SrcLoc loc_of(const TeToken& t) { return SrcLoc{t.line, t.col}; }

  void next() {
    tok_ = lex_.next();
    if (tok_.kind == TeTok::Error) fail_at(tok_, tok_.text);
  }
  bool at_word(std::string_view w) const { return tok_.kind == TeTok::Ident && tok_.text == w; }
  TeToken expect(TeTok k, std::string_view what) {
    if (tok_.kind != k) fail_at(tok_, fmt::format("expected {}, found {}", what, describe(tok_)));
    TeToken t = tok_;
    next();
    return t;
  }
  Located name(std::string_view what) {
    TeToken t = expect(TeTok::Ident, what);
    return {t.text, loc_of(t)};
  }
  std::int64_t integer(std::string_view what) {
    bool negative = false;
    if (tok_.kind == TeTok::Minus) {
      negative = true;
      next();
    }
    if (tok_.kind != TeTok::Number || !tok_.integer)
      fail_at(tok_, fmt::format("expected {}, found {}", what, describe(tok_)));
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v);
    if (ec != std::errc() || p != tok_.text.data() + tok_.text.size())
      fail_at(tok_, fmt::format("integer {} is too large", tok_.text));
    next();
    return negative ? -v : v;
  }
  Prec precision() {
    TeToken t = expect(TeTok::Ident, "a precision (f64, f32, f16, bf16)");
    auto p = parse_prec(t.text);
    if (!p) fail_at(t, fmt::format("expected a precision (f64, f32, f16, bf16), found '{}'", t.text));
    return *p;
  }
  std::vector<std::string> axis_list(std::string_view what) {
    std::vector<std::string> out{name(what).name};
    while (tok_.kind == TeTok::Comma) {
      next();
      out.push_back(name(what).name);
    }
    return out;
  }
  std::vector<Located> name_list(std::string_view what) {
    std::vector<Located> out{name(what)};
    while (tok_.kind == TeTok::Comma) {
      next();
      out.push_back(name(what));
    }
    return out;
  }

  // ---- statements ----
  void statement() {
    if (tok_.kind != TeTok::Ident)
      fail_at(tok_, fmt::format("expected a statement, found {}", describe(tok_)));
    const TeToken kw = tok_;
    if (kw.text == "routine") {
      next();
      Located n = name("a routine name");
      b_.set_name(n.name, n.loc);
    } else if (kw.text == "axes") {
      next();
      do {
        Located n = name("an axis name");
        expect(TeTok::Assign, "'='");
        b_.axis(n.name, integer("an extent"), n.loc);
      } while (tok_.kind == TeTok::Ident);
    } else if (kw.text == "precision") {
      next();
      TeToken t = tok_;
      default_prec_ = precision();
      if (!is_float(default_prec_)) fail_at(t, "the default precision must be a float precision");
    } else if (kw.text == "attr") {
      next();
      Located n = name("an attribute name");
      expect(TeTok::Assign, "'='");
      b_.attr(n.name, integer("an integer"), n.loc);
    } else if (kw.text == "input") {
      next();
      Located n = name("a tensor name");
      expect(TeTok::LBracket, "'['");
      auto axes = axis_list("an axis name");
      expect(TeTok::RBracket, "']'");
      expect(TeTok::Colon, "':'");
      b_.input(n.name, axes, precision(), n.loc);
    } else if (kw.text == "output") {
      next();
      for (auto& n : name_list("a tensor name")) outputs_.push_back(n);
    } else if (kw.text == "grad") {
      next();
      for (auto& n : name_list("an input name")) grads_.push_back(n);
    } else if (kw.text == "loss") {
      next();
      do {
        if (tok_.kind == TeTok::Comma) next();
        Located o = name("a tensor name");
        expect(TeTok::Star, "'*'");
        Located s = name("a seed input name");
        losses_.push_back({o, s});
      } while (tok_.kind == TeTok::Comma);
    } else {
      assignment();
    }
  }

  void assignment() {
    Located target = name("a tensor name");
    expect(TeTok::LBracket, "'['");
    auto axes = axis_list("an axis name");
    expect(TeTok::RBracket, "']'");
    Prec prec = default_prec_;
    if (tok_.kind == TeTok::Colon) {
      next();
      prec = precision();
    }
    expect(TeTok::Assign, "'='");
    Reduce reduce = Reduce::None;
    std::vector<std::string> over;
    if (at_word("sum") || at_word("max")) {
      reduce = at_word("sum") ? Reduce::Sum : Reduce::Max;
      next();
      expect(TeTok::LParen, "'(' and the reduced axes");
      over = axis_list("an axis name");
      expect(TeTok::RParen, "')'");
    }
    Te rhs = expr(0);
    b_.assign(target.name, axes, prec, rhs, reduce, over, target.loc);
  }

  // ---- expressions (precedence climbing, lowest first) ----
  void enter(int depth) const {
    if (depth > kMaxDepth) fail_at(tok_, "expression nested deeper than 256 levels");
  }

  Te expr(int depth) {
    enter(depth);
    Te a = conjunction(depth + 1);
    while (tok_.kind == TeTok::OrOr) {
      SrcLoc l = loc_of(tok_);
      next();
      a = binary(TeOp::Or, a, conjunction(depth + 1), l);
    }
    return a;
  }

  Te conjunction(int depth) {
    enter(depth);
    Te a = negation(depth + 1);
    while (tok_.kind == TeTok::AndAnd) {
      SrcLoc l = loc_of(tok_);
      next();
      a = binary(TeOp::And, a, negation(depth + 1), l);
    }
    return a;
  }

  Te negation(int depth) {
    enter(depth);
    if (tok_.kind == TeTok::Bang) {
      SrcLoc l = loc_of(tok_);
      next();
      return unary(TeOp::Not, negation(depth + 1), l);
    }
    return comparison(depth + 1);
  }

  Te comparison(int depth) {
    enter(depth);
    Te a = additive(depth + 1);
    TeOp op;
    switch (tok_.kind) {
      case TeTok::Lt:
        op = TeOp::Lt;
        break;
      case TeTok::Le:
        op = TeOp::Le;
        break;
      case TeTok::Gt:
        op = TeOp::Gt;
        break;
      case TeTok::Ge:
        op = TeOp::Ge;
        break;
      case TeTok::EqEq:
        op = TeOp::Eq;
        break;
      case TeTok::NotEq:
        op = TeOp::Ne;
        break;
      default:
        return a;
    }
    SrcLoc l = loc_of(tok_);
    next();
    return binary(op, a, additive(depth + 1), l);
  }

  Te additive(int depth) {
    enter(depth);
    Te a = multiplicative(depth + 1);
    while (tok_.kind == TeTok::Plus || tok_.kind == TeTok::Minus) {
      TeOp op = tok_.kind == TeTok::Plus ? TeOp::Add : TeOp::Sub;
      SrcLoc l = loc_of(tok_);
      next();
      a = binary(op, a, multiplicative(depth + 1), l);
    }
    return a;
  }

  Te multiplicative(int depth) {
    enter(depth);
    Te a = signed_term(depth + 1);
    while (tok_.kind == TeTok::Star || tok_.kind == TeTok::Slash) {
      TeOp op = tok_.kind == TeTok::Star ? TeOp::Mul : TeOp::Div;
      SrcLoc l = loc_of(tok_);
      next();
      a = binary(op, a, signed_term(depth + 1), l);
    }
    return a;
  }

  Te signed_term(int depth) {
    enter(depth);
    if (tok_.kind != TeTok::Minus) return primary(depth + 1);
    SrcLoc l = loc_of(tok_);
    next();
    Te a = signed_term(depth + 1);
    // A negative literal is a constant (so `-inf` is the constant -inf, not neg(inf)).
    if (a->op == TeOp::Const) {
      if (a->integer_literal && a->value != std::numeric_limits<double>::lowest())
        return int_literal(-static_cast<std::int64_t>(a->value), l);
      return cst(-a->value, l);
    }
    return unary(TeOp::Neg, a, l);
  }

  Te number() {
    const TeToken t = tok_;
    next();
    if (t.integer) {
      std::int64_t v = 0;
      auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      // An integer beyond 2^53 is not exact as a value; keep it a plain (rounded) constant.
      if (ec == std::errc() && p == t.text.data() + t.text.size() && v <= (std::int64_t{1} << 53))
        return int_literal(v, loc_of(t));
    }
    return cst(std::strtod(t.text.c_str(), nullptr), loc_of(t));
  }

  Te primary(int depth) {
    enter(depth);
    if (tok_.kind == TeTok::Number) return number();
    if (tok_.kind == TeTok::LParen) {
      next();
      Te a = expr(depth + 1);
      expect(TeTok::RParen, "')'");
      return a;
    }
    if (tok_.kind != TeTok::Ident)
      fail_at(tok_, fmt::format("expected an expression, found {}", describe(tok_)));
    const TeToken t = tok_;
    const SrcLoc l = loc_of(t);
    if (t.text == "inf" || t.text == "nan") {
      next();
      return cst(t.text == "inf" ? std::numeric_limits<double>::infinity()
                                 : std::numeric_limits<double>::quiet_NaN(),
                 l);
    }
    if (t.text == "sum" || t.text == "max")
      fail_at(t,
              "a reduction must be the whole right-hand side of an assignment (assign it to its own tensor)");
    if (t.text == "exp") {
      next();
      expect(TeTok::LParen, "'('");
      Te a = expr(depth + 1);
      expect(TeTok::RParen, "')'");
      return unary(TeOp::Exp, a, l);
    }
    if (t.text == "where") {
      next();
      expect(TeTok::LParen, "'('");
      Te c = expr(depth + 1);
      expect(TeTok::Comma, "','");
      Te a = expr(depth + 1);
      expect(TeTok::Comma, "','");
      Te b = expr(depth + 1);
      expect(TeTok::RParen, "')'");
      return fe::where(c, a, b, l);
    }
    next();
    if (tok_.kind == TeTok::LBracket) {
      next();
      auto axes = axis_list("an axis name");
      expect(TeTok::RBracket, "']'");
      return read(t.text, axes, l);
    }
    return ix(t.text, l);  // a bare name is an axis position
  }

  // ---- end of file: outputs and the training request ----
  ParsedProgram finish() {
    SrcLoc eof = loc_of(tok_);
    for (const auto& o : outputs_) b_.output(o.name, o.loc);
    ParsedProgram out;
    out.program = b_.program();
    const Program& p = out.program;
    if (grads_.empty() != losses_.empty()) {
      SrcLoc l = grads_.empty() ? losses_[0].first.loc : grads_[0].loc;
      fail(l, "a training step needs both 'grad' (the inputs to differentiate) and 'loss' (TENSOR * SEED)");
    }
    if (grads_.empty()) {
      if (outputs_.empty()) fail(eof, "the program has no output (add an 'output NAME' line)");
      return out;
    }
    GradRequest req;
    for (const auto& g : grads_) {
      const TensorDecl* t = p.find_tensor(g.name);
      if (!t || !t->is_input)
        fail(g.loc, fmt::format("'{}' is not an input; only inputs get gradients", g.name));
      if (!is_float(t->prec)) fail(g.loc, fmt::format("'{}' is not a float tensor", g.name));
      if (std::find(req.wrt.begin(), req.wrt.end(), g.name) != req.wrt.end())
        fail(g.loc, fmt::format("gradient of '{}' requested twice", g.name));
      req.wrt.push_back(g.name);
    }
    for (const auto& [o, s] : losses_) {
      const TensorDecl* ot = p.find_tensor(o.name);
      const TensorDecl* st = p.find_tensor(s.name);
      if (!ot || ot->is_input) fail(o.loc, fmt::format("'{}' is not a computed tensor", o.name));
      if (!st || !st->is_input) fail(s.loc, fmt::format("the loss seed '{}' is not an input", s.name));
      if (st->dims != ot->dims)
        fail(s.loc, fmt::format("the loss seed '{}' does not have the dims of '{}'", s.name, o.name));
      req.loss.push_back({o.name, s.name});
    }
    out.grad = std::move(req);
    return out;
  }

  TeLexer lex_;
  std::string file_;
  ProgramBuilder b_;
  TeToken tok_;
  Prec default_prec_ = Prec::F32;
  std::vector<Located> outputs_;
  std::vector<Located> grads_;
  std::vector<std::pair<Located, Located>> losses_;
};

}  // namespace

ParsedProgram parse_program(std::string_view text, const std::string& file, const std::string& default_name) {
  return Parser(text, file, default_name).parse();
}

Routine lower_source(std::string_view text, const std::string& file, const std::string& default_name,
                     bool differentiable_max) {
  ParsedProgram pp = parse_program(text, file, default_name);
  if (!pp.grad) return lower(pp.program);
  pp.grad->differentiable_max = differentiable_max;
  return lower_training_step(pp.program, *pp.grad, file);
}

}  // namespace fp::fe
