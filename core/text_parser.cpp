// The `.fp` parser: recursive descent over the lexer's tokens with one token of lookahead. Every
// recursion goes through a NestingGuard (blocks and expressions together are capped at
// kMaxNesting), every integer is range-checked, every name lookup is a hash lookup, and every
// piece of the routine is charged against kMaxRoutineBytes as it is built, so the work is linear in
// the input, the stack depth bounded and the memory bounded whatever the input.

#include "core/text_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/diagnostic.h"
#include "core/support/input_file.h"
#include "core/text_lexer.h"

namespace fp {

namespace {

using text::Kw;
using text::Tok;
using text::Token;

constexpr std::size_t kMaxShownToken = 32;
// An index can only mention enclosing loop symbols, and loops nest at most kMaxNesting deep; the
// cap keeps merging repeated symbols linear.
constexpr std::size_t kMaxIndexTerms = kMaxNesting;
constexpr std::uint64_t kInt64MinMagnitude = std::uint64_t{1} << 63;

// What each piece of the routine costs, charged against kMaxRoutineBytes as it is built: its size,
// its allocation (a shared_ptr's control block, the allocator's header) and twice its slot in the
// vector holding it (vectors grow by doubling). An over-estimate, so that the budget holds.
constexpr std::size_t kAllocation = 32;
constexpr std::size_t kStmtCost = sizeof(Stmt) + kAllocation + 2 * sizeof(StmtP);
constexpr std::size_t kExprCost = sizeof(Expr) + kAllocation + 2 * sizeof(ExprP);
constexpr std::size_t kIndexCost = 2 * sizeof(Index);
constexpr std::size_t kTermCost = 2 * sizeof(Index::Term);
constexpr std::size_t kExtentCost = 2 * sizeof(std::int64_t);
constexpr std::size_t kNodeCost = 2 * sizeof(Node) + 64;  // and its entry in the name index
constexpr std::size_t kAttrCost = 96;                     // a std::map node
constexpr std::size_t kCarriedCost = 2 * sizeof(Carried);
constexpr std::size_t kLocalCost = 64;  // a scope entry and its undo record

// A std::string keeps up to 15 bytes inline; a longer one is allocated.
constexpr std::size_t string_cost(std::size_t bytes) {
  return bytes > 15 ? bytes + 1 + kAllocation : 0;
}

SrcLoc loc_of(const Token& t) {
  return SrcLoc{t.line, t.col};
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::End:
      return "end of file";
    case Tok::String:
      return "a string";
    default:
      if (t.text.size() <= kMaxShownToken) return fmt::format("'{}'", t.text);
      return fmt::format("'{}...'", t.text.substr(0, kMaxShownToken));
  }
}

// Magnitude of a decimal integer literal, or nullopt past 2^64 - 1.
std::optional<std::uint64_t> parse_magnitude(std::string_view digits) {
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// sign * magnitude as int64, or nullopt when out of range.
std::optional<std::int64_t> apply_sign(bool negative, std::uint64_t mag) {
  if (negative) {
    if (mag > kInt64MinMagnitude) return std::nullopt;
    return static_cast<std::int64_t>(std::uint64_t{0} - mag);  // two's complement (C++20)
  }
  if (mag > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return static_cast<std::int64_t>(mag);
}

// from_chars reports a decimal beyond binary64's range without its value; the decimal exponent
// of the literal's leading nonzero digit tells overflow (>= 0: round to inf) from underflow
// (< 0: round to 0).
bool literal_overflows(std::string_view lit) {
  std::size_t e = lit.find_first_of("eE");
  std::string_view mantissa = lit.substr(0, e);
  std::int64_t exponent = 0;
  if (e != std::string_view::npos) {
    std::string_view exp_text = lit.substr(e + 1);
    bool negative = !exp_text.empty() && exp_text[0] == '-';
    if (!exp_text.empty() && (exp_text[0] == '-' || exp_text[0] == '+')) exp_text.remove_prefix(1);
    std::int64_t magnitude = 0;
    for (char c : exp_text) magnitude = std::min<std::int64_t>(magnitude * 10 + (c - '0'), 1'000'000'000);
    exponent = negative ? -magnitude : magnitude;
  }
  std::size_t point = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, point);
  std::size_t first_nonzero = whole.find_first_not_of('0');
  if (first_nonzero != std::string_view::npos)
    return static_cast<std::int64_t>(whole.size() - first_nonzero) - 1 + exponent >= 0;
  std::string_view fraction =
      point == std::string_view::npos ? std::string_view{} : mantissa.substr(point + 1);
  std::size_t lead = fraction.find_first_not_of('0');
  return -static_cast<std::int64_t>(lead + 1) + exponent >= 0;
}

// The double nearest to a Number token (the lexer guarantees its shape).
double decimal_value(std::string_view lit) {
  double v = 0.0;
  auto [ptr, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), v);
  if (ec == std::errc::result_out_of_range)
    return literal_overflows(lit) ? std::numeric_limits<double>::infinity() : 0.0;
  return v;
}

// Locals in lexical scope: name -> stack of precisions (innermost last), with an undo log so a
// scope is left in time proportional to what it declared.
class LocalScopes {
 public:
  std::size_t mark() const { return log_.size(); }
  void declare(std::string_view name, Prec prec) {
    by_name_[name].push_back(prec);
    log_.push_back(name);
  }
  void pop_to(std::size_t mark) {
    while (log_.size() > mark) {
      by_name_[log_.back()].pop_back();
      log_.pop_back();
    }
  }
  std::optional<Prec> find(std::string_view name) const {
    auto it = by_name_.find(name);
    if (it == by_name_.end() || it->second.empty()) return std::nullopt;
    return it->second.back();
  }

 private:
  std::unordered_map<std::string_view, std::vector<Prec>> by_name_;
  std::vector<std::string_view> log_;
};

// Accumulates the terms of an index in canonical form (ir.h Index::canonical) with overflow
// checks.
struct IndexAccumulator {
  Index index;
  // False on overflow; `added` tells whether a new term (memory to charge) was made.
  bool add_term(std::int64_t coef, std::string_view sym, bool& added) {
    added = false;
    for (auto& t : index.terms)
      if (t.sym == sym) return !__builtin_add_overflow(t.coef, coef, &t.coef);
    index.terms.push_back(Index::Term{coef, std::string(sym)});
    added = true;
    return true;
  }
  bool add_offset(std::int64_t v) { return !__builtin_add_overflow(index.offset, v, &index.offset); }
  Index finish() {
    std::erase_if(index.terms, [](const Index::Term& t) { return t.coef == 0; });
    return std::move(index);
  }
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : src_(text), lex_(text), file_(file) {
    cur_ = lex_.next();
  }
  Routine parse_file();

 private:
  friend class NestingGuard;

  // ---- tokens
  void advance() { cur_ = lex_.next(); }
  bool at(Tok k) const { return cur_.kind == k; }
  bool at_kw(Kw k) const { return cur_.kind == Tok::Ident && cur_.kw == k; }
  [[noreturn]] void fail(std::string_view expected) const;
  [[noreturn]] void fail_at(const Token& t, const std::string& message) const;
  Token expect(Tok k, std::string_view what);
  Token expect_kw(Kw k, std::string_view what);
  Token expect_name(std::string_view what);
  Prec expect_prec();
  std::int64_t expect_int(std::string_view what);
  std::string_view span(const Token& first, const Token& last) const;

  // ---- memory: every piece of the routine is charged as it is made (kMaxRoutineBytes)
  void charge(std::size_t bytes);
  std::shared_ptr<Stmt> new_stmt(StmtKind kind);
  std::shared_ptr<Expr> new_expr(ExprKind kind);

  // ---- declarations
  void parse_attr();
  void parse_node();
  void parse_extents(Node& node);
  MemMode expect_mode();

  // ---- statements
  std::vector<StmtP> parse_block(const std::vector<std::pair<std::string_view, Prec>>& carried);
  std::vector<StmtP> parse_statements();
  StmtP parse_stmt();
  StmtP parse_simple_stmt();
  StmtP parse_for();
  StmtP parse_scan();
  Carried parse_carried(std::vector<std::pair<std::string_view, Prec>>& names);
  StmtP parse_if();
  StmtP parse_assignment();
  void parse_range(Stmt& s);

  // ---- expressions
  ExprP parse_expr();
  ExprP parse_constant();
  ExprP parse_embed_index();
  ExprP parse_named_expr();
  ExprP parse_operation(const Token& op_token);

  // ---- indices
  Index parse_index();
  void parse_index_term(IndexAccumulator& acc, bool negate);
  std::vector<Index> parse_index_list();

  std::string_view src_;
  text::Lexer lex_;
  const std::string& file_;
  Token cur_;
  int depth_ = 0;
  std::size_t charged_ = 0;  // bytes of routine built so far
  Routine routine_;
  std::unordered_map<std::string_view, std::size_t> node_index_;  // name -> routine_.nodes slot
  LocalScopes locals_;
};

// One level of recursion (a block or an expression); rejects the level past kMaxNesting.
class NestingGuard {
 public:
  explicit NestingGuard(Parser& p) : p_(p) {
    if (++p_.depth_ > kMaxNesting)
      p_.fail_at(p_.cur_, fmt::format("expected at most {} levels of nesting, found more", kMaxNesting));
  }
  ~NestingGuard() { --p_.depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  Parser& p_;
};

// ---- tokens ------------------------------------------------------------------------------------

void Parser::fail(std::string_view expected) const {
  if (cur_.kind == Tok::Error) throw_malformed(file_, cur_.line, cur_.col, lex_.error_message());
  fail_at(cur_, fmt::format("expected {}, found {}", expected, describe(cur_)));
}

void Parser::fail_at(const Token& t, const std::string& message) const {
  throw_malformed(file_, t.line, t.col, message);
}

Token Parser::expect(Tok k, std::string_view what) {
  if (!at(k)) fail(what);
  Token t = cur_;
  advance();
  return t;
}

Token Parser::expect_kw(Kw k, std::string_view what) {
  if (!at_kw(k)) fail(what);
  Token t = cur_;
  advance();
  return t;
}

Token Parser::expect_name(std::string_view what) {
  if (!at(Tok::Ident)) fail(what);
  if (cur_.kw != Kw::None) fail_at(cur_, fmt::format("expected {}, found keyword '{}'", what, cur_.text));
  Token t = cur_;
  advance();
  return t;
}

Prec Parser::expect_prec() {
  if (at(Tok::Ident)) {
    if (auto p = parse_prec(cur_.text)) {
      advance();
      return *p;
    }
  }
  fail("a precision (f64, f32, f16, bf16, i32)");
}

// The source text from the start of first to the end of last (both tokens of this source).
std::string_view Parser::span(const Token& first, const Token& last) const {
  auto begin = static_cast<std::size_t>(first.text.data() - src_.data());
  auto end = static_cast<std::size_t>(last.text.data() + last.text.size() - src_.data());
  return src_.substr(begin, end - begin);
}

std::int64_t Parser::expect_int(std::string_view what) {
  Token first = cur_;
  bool negative = at(Tok::Minus);
  if (negative) advance();
  if (!at(Tok::Number) || !cur_.integer) fail(what);
  Token digits = cur_;
  advance();
  auto mag = parse_magnitude(digits.text);
  auto v = mag ? apply_sign(negative, *mag) : std::nullopt;
  if (!v) {
    std::string_view shown = span(first, digits).substr(0, kMaxShownToken);
    fail_at(first, fmt::format("expected an integer in the 64-bit range, found '{}'", shown));
  }
  return *v;
}

// ---- memory ------------------------------------------------------------------------------------

void Parser::charge(std::size_t bytes) {
  charged_ += bytes;
  if (charged_ > kMaxRoutineBytes)
    fail_at(cur_, fmt::format("expected a routine of at most {} MiB in memory (statements, expressions, "
                              "indices), found a bigger one",
                              kMaxRoutineBytes >> 20));
}

std::shared_ptr<Stmt> Parser::new_stmt(StmtKind kind) {
  charge(kStmtCost);
  auto s = std::make_shared<Stmt>();
  s->kind = kind;
  return s;
}

std::shared_ptr<Expr> Parser::new_expr(ExprKind kind) {
  charge(kExprCost);
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  return e;
}

// ---- declarations ------------------------------------------------------------------------------

Routine Parser::parse_file() {
  expect_kw(Kw::Routine, "'routine'");
  routine_.name = std::string(expect_name("a routine name").text);
  Token open = expect(Tok::LBrace, "'{'");
  while (at_kw(Kw::Attr)) parse_attr();
  while (at_kw(Kw::Node)) parse_node();
  auto body = new_stmt(StmtKind::Seq);
  body->loc = loc_of(open);
  body->body = parse_statements();
  expect(Tok::RBrace, "'}'");
  if (!at(Tok::End)) fail("end of file");
  routine_.body = std::move(body);
  return std::move(routine_);
}

void Parser::parse_attr() {
  advance();  // 'attr'
  Token name = expect_name("an attr name");
  expect(Tok::Assign, "'='");
  std::int64_t value = expect_int("an integer");
  charge(kAttrCost + string_cost(name.text.size()));
  if (!routine_.attrs.emplace(std::string(name.text), value).second)
    fail_at(name, fmt::format("expected a new attr name, found duplicate '{}'", name.text));
}

MemMode Parser::expect_mode() {
  if (at(Tok::Ident)) {
    if (auto m = parse_mem_mode(cur_.text)) {
      advance();
      return *m;
    }
  }
  fail("a memory mode (virtual, local, materialized, requested)");
}

void Parser::parse_extents(Node& node) {
  expect(Tok::LBracket, "'['");
  std::int64_t cells = 1;
  for (;;) {
    Token first = cur_;
    std::int64_t extent = expect_int("an extent (an integer >= 1)");
    if (extent < 1) fail_at(first, fmt::format("expected an extent of at least 1, found {}", extent));
    if (extent > kMaxNodeCells / cells)
      fail_at(first, fmt::format("expected at most 2^40 cells in node '{}', found more", node.name));
    cells *= extent;
    charge(kExtentCost);
    node.dims.push_back(extent);
    if (!at(Tok::Comma)) break;
    advance();
  }
  expect(Tok::RBracket, "',' or ']'");
}

void Parser::parse_node() {
  Token keyword = cur_;
  advance();  // 'node'
  Node node;
  node.loc = loc_of(keyword);
  Token name = expect_name("a node name");
  charge(kNodeCost + string_cost(name.text.size()));
  node.name = std::string(name.text);
  if (auto it = node_index_.find(name.text); it != node_index_.end()) {
    const SrcLoc& first = routine_.nodes[it->second].loc;
    fail_at(name, fmt::format("expected a new node name, found duplicate '{}' (declared at {}:{})", name.text,
                              first.line, first.col));
  }
  expect(Tok::Colon, "':'");
  node.prec = expect_prec();
  parse_extents(node);
  node.mode = expect_mode();
  if (at_kw(Kw::Input)) {
    node.is_input = true;
    advance();
  }
  if (at_kw(Kw::Output)) {
    node.is_output = true;
    advance();
  }
  node_index_.emplace(name.text, routine_.nodes.size());
  routine_.nodes.push_back(std::move(node));
}

// ---- statements --------------------------------------------------------------------------------

std::vector<StmtP> Parser::parse_statements() {
  std::vector<StmtP> out;
  while (!at(Tok::RBrace)) {
    if (at(Tok::End)) fail("'}'");
    out.push_back(parse_stmt());
  }
  return out;
}

std::vector<StmtP> Parser::parse_block(const std::vector<std::pair<std::string_view, Prec>>& carried) {
  NestingGuard guard(*this);
  expect(Tok::LBrace, "'{'");
  std::size_t mark = locals_.mark();
  for (const auto& [name, prec] : carried) {
    charge(kLocalCost);
    locals_.declare(name, prec);
  }
  std::vector<StmtP> body = parse_statements();
  advance();  // '}'
  locals_.pop_to(mark);
  return body;
}

StmtP Parser::parse_stmt() {
  if (!at(Tok::Ident)) fail("a statement or '}'");
  switch (cur_.kw) {
    case Kw::None:
      return parse_assignment();
    case Kw::For:
      return parse_for();
    case Kw::Scan:
      return parse_scan();
    case Kw::If:
      return parse_if();
    case Kw::Zero:
    case Kw::Local:
    case Kw::Comment:
    case Kw::Noop:
      return parse_simple_stmt();
    default:
      fail("a statement or '}'");
  }
}

// zero, local, comment and noop: one line, no nested statements.
StmtP Parser::parse_simple_stmt() {
  auto s = new_stmt(StmtKind::Noop);
  s->loc = loc_of(cur_);
  Kw kw = cur_.kw;
  advance();
  if (kw == Kw::Zero) {
    s->kind = StmtKind::Zero;
    Token name = expect_name("a node name");
    charge(string_cost(name.text.size()));
    s->name = std::string(name.text);
  } else if (kw == Kw::Local) {
    s->kind = StmtKind::DeclareLocal;
    Token name = expect_name("a local name");
    charge(string_cost(name.text.size()) + kLocalCost);
    s->name = std::string(name.text);
    expect(Tok::Colon, "':'");
    s->prec = expect_prec();
    locals_.declare(name.text, s->prec);
  } else if (kw == Kw::Comment) {
    s->kind = StmtKind::Comment;
    Token text = expect(Tok::String, "a string");
    charge(string_cost(text.text.size()));
    s->name = text::decode_string(text.text);
  }
  return s;
}

// `name[...] = e` (node store) or `name := e` (local store).
StmtP Parser::parse_assignment() {
  Token name = cur_;
  advance();
  auto s = new_stmt(StmtKind::Set);
  charge(string_cost(name.text.size()));
  s->loc = loc_of(name);
  s->name = std::string(name.text);
  if (at(Tok::LBracket)) {
    s->kind = StmtKind::Set;
    s->indices = parse_index_list();
    expect(Tok::Assign, "'='");
  } else if (at(Tok::ColonAssign)) {
    s->kind = StmtKind::SetLocal;
    advance();
  } else {
    fail(fmt::format("'[' or ':=' after '{}'", name.text));
  }
  s->value = parse_expr();
  return s;
}

// `sym in from..to`
void Parser::parse_range(Stmt& s) {
  Token sym = expect_name("a loop symbol");
  charge(string_cost(sym.text.size()));
  s.sym = std::string(sym.text);
  expect_kw(Kw::In, "'in'");
  s.from = expect_int("an integer");
  expect(Tok::DotDot, "'..'");
  s.to = expect_int("an integer");
}

StmtP Parser::parse_for() {
  auto s = new_stmt(StmtKind::For);
  s->loc = loc_of(cur_);
  advance();  // 'for'
  parse_range(*s);
  s->body = parse_block({});
  return s;
}

Carried Parser::parse_carried(std::vector<std::pair<std::string_view, Prec>>& names) {
  Carried c;
  Token prev = expect_name("a carried local name");
  expect(Tok::Arrow, "'->'");
  Token next = expect_name("a carried local name");
  expect(Tok::Colon, "':'");
  charge(kCarriedCost + string_cost(prev.text.size()) + string_cost(next.text.size()));
  c.prev = std::string(prev.text);
  c.next = std::string(next.text);
  c.prec = expect_prec();
  expect(Tok::Assign, "'='");
  c.init = parse_expr();  // before the body: the carried locals are not in scope here
  names.emplace_back(prev.text, c.prec);
  names.emplace_back(next.text, c.prec);
  return c;
}

StmtP Parser::parse_scan() {
  auto s = new_stmt(StmtKind::Scan);
  s->loc = loc_of(cur_);
  advance();  // 'scan'
  parse_range(*s);
  if (at_kw(Kw::Forward)) {
    s->dir = ScanDir::Forward;
  } else if (at_kw(Kw::Backward)) {
    s->dir = ScanDir::Backward;
  } else {
    fail("'forward' or 'backward'");
  }
  advance();
  expect_kw(Kw::Carry, "'carry'");
  expect(Tok::LParen, "'('");
  std::vector<std::pair<std::string_view, Prec>> names;
  if (!at(Tok::RParen)) {
    s->carried.push_back(parse_carried(names));
    while (at(Tok::Comma)) {
      advance();
      s->carried.push_back(parse_carried(names));
    }
  }
  expect(Tok::RParen, "',' or ')'");
  s->body = parse_block(names);
  return s;
}

StmtP Parser::parse_if() {
  auto s = new_stmt(StmtKind::If);
  s->loc = loc_of(cur_);
  advance();  // 'if'
  s->value = parse_expr();
  s->body = parse_block({});
  return s;
}

// ---- expressions -------------------------------------------------------------------------------

ExprP Parser::parse_expr() {
  NestingGuard guard(*this);
  switch (cur_.kind) {
    case Tok::Number:
    case Tok::Minus:
      return parse_constant();
    case Tok::Ident:
      if (cur_.kw == Kw::Inf || cur_.kw == Kw::Nan) return parse_constant();
      if (cur_.kw == Kw::Idx) return parse_embed_index();
      if (cur_.kw == Kw::None) return parse_named_expr();
      break;
    default:
      break;
  }
  fail("an expression");
}

// NUMBER ':' PREC
ExprP Parser::parse_constant() {
  Token first = cur_;
  bool negative = at(Tok::Minus);
  if (negative) advance();
  Token literal = cur_;
  double value = 0.0;
  if (at_kw(Kw::Inf)) {
    value = std::numeric_limits<double>::infinity();
  } else if (at_kw(Kw::Nan)) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (at(Tok::Number)) {
    value = decimal_value(literal.text);
  } else {
    fail("a number");
  }
  advance();
  if (negative) value = -value;
  expect(Tok::Colon, "':' and a precision after a constant");
  auto e = new_expr(ExprKind::Const);
  e->loc = loc_of(first);
  e->prec = expect_prec();
  if (e->prec == Prec::I32) {
    // An i32 constant is an integer in range: the printer never writes anything else.
    auto mag = literal.kind == Tok::Number && literal.integer ? parse_magnitude(literal.text) : std::nullopt;
    auto v = mag ? apply_sign(negative, *mag) : std::nullopt;
    if (!v || *v < std::numeric_limits<std::int32_t>::min() || *v > std::numeric_limits<std::int32_t>::max())
      fail_at(first, fmt::format("expected an i32 constant (an integer from -2147483648 to 2147483647), "
                                 "found '{}'",
                                 span(first, literal).substr(0, kMaxShownToken)));
    value = static_cast<double>(*v);
  }
  e->value = value;
  return e;
}

// 'idx' '.' PREC '(' index ')'
ExprP Parser::parse_embed_index() {
  auto e = new_expr(ExprKind::EmbedIndex);
  e->loc = loc_of(cur_);
  advance();  // 'idx'
  expect(Tok::Dot, "'.' and a precision after 'idx'");
  e->prec = expect_prec();
  expect(Tok::LParen, "'('");
  charge(kIndexCost);
  e->indices.push_back(parse_index());
  expect(Tok::RParen, "')' (idx takes one index)");
  return e;
}

// A node read `x[...]`, an operation `op.prec(...)` or a local read `x`.
ExprP Parser::parse_named_expr() {
  Token name = cur_;
  advance();
  if (at(Tok::Dot)) return parse_operation(name);
  auto e = new_expr(ExprKind::GetLocal);
  charge(string_cost(name.text.size()));
  e->loc = loc_of(name);
  e->name = std::string(name.text);
  if (at(Tok::LBracket)) {
    auto it = node_index_.find(name.text);
    if (it == node_index_.end())
      fail_at(name, fmt::format("expected a declared node, found unknown node '{}'", name.text));
    e->kind = ExprKind::Get;
    e->prec = routine_.nodes[it->second].prec;
    e->indices = parse_index_list();
    return e;
  }
  auto prec = locals_.find(name.text);
  if (!prec) fail_at(name, fmt::format("expected a declared local, found unknown local '{}'", name.text));
  e->kind = ExprKind::GetLocal;
  e->prec = *prec;
  return e;
}

ExprP Parser::parse_operation(const Token& op_token) {
  auto e = new_expr(ExprKind::Unary);
  e->loc = loc_of(op_token);
  std::size_t arity = 0;
  if (auto u = parse_unop(op_token.text)) {
    e->kind = ExprKind::Unary;
    e->op = static_cast<std::uint8_t>(*u);
    arity = 1;
  } else if (auto b = parse_binop(op_token.text)) {
    e->kind = ExprKind::Binary;
    e->op = static_cast<std::uint8_t>(*b);
    arity = 2;
  } else if (auto t = parse_ternop(op_token.text)) {
    e->kind = ExprKind::Ternary;
    e->op = static_cast<std::uint8_t>(*t);
    arity = 3;
  } else {
    fail_at(op_token, fmt::format("expected an operation (neg, exp, sqrt, abs, cast, add, sub, mul, div, "
                                  "max, min, pow, eq, lt, where, fma), found '{}'",
                                  op_token.text.substr(0, kMaxShownToken)));
  }
  advance();  // '.'
  e->prec = expect_prec();
  expect(Tok::LParen, "'('");
  for (std::size_t i = 0; i < arity; ++i) {
    e->args.push_back(parse_expr());
    Tok separator = i + 1 < arity ? Tok::Comma : Tok::RParen;
    if (!at(separator))  // the message is built only on failure: this loop is hot
      fail(fmt::format("'{}' ({} takes {} operand{})", separator == Tok::Comma ? ',' : ')', op_token.text,
                       arity, arity == 1 ? "" : "s"));
    advance();
  }
  return e;
}

// ---- indices -----------------------------------------------------------------------------------

std::vector<Index> Parser::parse_index_list() {
  advance();  // '['
  std::vector<Index> out;
  charge(kIndexCost);
  out.push_back(parse_index());
  while (at(Tok::Comma)) {
    advance();
    charge(kIndexCost);
    out.push_back(parse_index());
  }
  expect(Tok::RBracket, "',' or ']'");
  return out;
}

// ['-'] term (('+' | '-') term)*, folded into canonical form.
Index Parser::parse_index() {
  IndexAccumulator acc;
  bool negate = at(Tok::Minus);
  if (negate) advance();
  parse_index_term(acc, negate);
  while (at(Tok::Plus) || at(Tok::Minus)) {
    negate = at(Tok::Minus);
    advance();
    parse_index_term(acc, negate);
  }
  return acc.finish();
}

// INT | IDENT | INT '*' IDENT, where INT may carry its own '-'.
void Parser::parse_index_term(IndexAccumulator& acc, bool negate) {
  Token first = cur_;
  auto overflow = [&] {
    fail_at(first, "expected an index whose coefficients and offset fit in 64 bits, found an overflow");
  };
  if (at(Tok::Ident)) {
    Token sym = expect_name("an index term (an integer or a symbol)");
    bool added = false;
    if (!acc.add_term(negate ? -1 : 1, sym.text, added)) overflow();
    if (added) charge(kTermCost + string_cost(sym.text.size()));
  } else {
    if (at(Tok::Minus)) {
      negate = !negate;
      advance();
    }
    if (!at(Tok::Number) || !cur_.integer) fail("an index term (an integer or a symbol)");
    Token digits = cur_;
    advance();
    auto mag = parse_magnitude(digits.text);
    auto v = mag ? apply_sign(negate, *mag) : std::nullopt;
    if (!v)
      fail_at(first, fmt::format("expected an integer in the 64-bit range, found '{}'",
                                 digits.text.substr(0, kMaxShownToken)));
    if (at(Tok::Star)) {
      advance();
      Token sym = expect_name("a symbol after '*'");
      bool added = false;
      if (!acc.add_term(*v, sym.text, added)) overflow();
      if (added) charge(kTermCost + string_cost(sym.text.size()));
    } else if (!acc.add_offset(*v)) {
      overflow();
    }
  }
  if (acc.index.terms.size() > kMaxIndexTerms)
    fail_at(first, fmt::format("expected at most {} symbols in an index, found more", kMaxIndexTerms));
}

}  // namespace

Routine parse_routine(std::string_view text, const std::string& file_name) {
  return Parser(text, file_name).parse_file();
}

Routine parse_routine_file(const std::string& path) {
  // A directory, a device or a socket is refused before a byte is read; a pipe is read up to the
  // cap (core/support/input_file.h).
  const std::string contents =
      read_input_file(path, InputFileRules{kMaxRoutineBytes, true, "a routine in the .fp text format"});
  return parse_routine(contents, path);
}

bool is_text_keyword(std::string_view word) {
  return text::is_keyword(word);
}

bool is_valid_text_name(std::string_view word) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (word.empty() || !letter(word[0]) || text::is_keyword(word)) return false;
  for (char c : word)
    if (!letter(c) && !digit(c)) return false;
  return true;
}

}  // namespace fp
