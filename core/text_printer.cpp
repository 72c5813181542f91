// The `.fp` printer. Everything appends to one std::string (no intermediate strings per node) so
// that printing large routines stays fast; see bench/parser_bench.cpp.

#include "core/text_printer.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

#include "core/text_lexer.h"
#include "flashproof/version.h"

namespace fp {

namespace {

void append_int(std::string& out, std::int64_t v) {
  fmt::format_int f(v);
  out.append(f.data(), f.size());
}

void append_uint(std::string& out, std::uint64_t v) {
  fmt::format_int f(v);
  out.append(f.data(), f.size());
}

// |v| without overflow for INT64_MIN.
std::uint64_t magnitude(std::int64_t v) {
  return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
}

void append_indent(std::string& out, int indent) {
  out.append(2 * static_cast<std::size_t>(indent), ' ');
}

// Escapes what cannot appear raw in a string or comment line: quotes (when quoting), '\',
// control characters and bytes that are not well-formed UTF-8.
void append_escaped(std::string& out, std::string_view text, bool quoting) {
  for (std::size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      std::size_t n = text::utf8_sequence_length(text, i);
      if (n == 0) {
        fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
        ++i;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    } else if (quoting && (c == '"' || c == '\\')) {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
}

void append_constant(std::string& out, double v, Prec prec) {
  if (std::isnan(v)) {
    out += "nan";  // every NaN is the same value (ir.h)
    return;
  }
  if (prec == Prec::I32 && std::trunc(v) == v && std::fabs(v) < 9.2e18) {
    append_int(out, static_cast<std::int64_t>(v));
    return;
  }
  fmt::format_to(std::back_inserter(out), "{}", v);  // shortest round-trip decimal, inf, -inf, -0
}

bool is_canonical(const Index& idx) {
  for (std::size_t i = 0; i < idx.terms.size(); ++i) {
    if (idx.terms[i].coef == 0) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (idx.terms[j].sym == idx.terms[i].sym) return false;
  }
  return true;
}

void append_canonical_index(std::string& out, const Index& idx) {
  if (idx.terms.empty()) {
    append_int(out, idx.offset);
    return;
  }
  bool first = true;
  for (const auto& t : idx.terms) {
    std::uint64_t mag = magnitude(t.coef);
    if (first) {
      if (t.coef < 0) out.push_back('-');
    } else {
      out += t.coef < 0 ? " - " : " + ";
    }
    if (mag != 1) {
      append_uint(out, mag);
      out.push_back('*');
    }
    out += t.sym;
    first = false;
  }
  if (idx.offset != 0) {
    out += idx.offset < 0 ? " - " : " + ";
    append_uint(out, magnitude(idx.offset));
  }
}

void append_index(std::string& out, const Index& idx) {
  if (is_canonical(idx))
    append_canonical_index(out, idx);
  else
    append_canonical_index(out, idx.canonical());
}

void append_index_list(std::string& out, const std::vector<Index>& indices) {
  out.push_back('[');
  for (std::size_t i = 0; i < indices.size(); ++i) {
    if (i) out += ", ";
    append_index(out, indices[i]);
  }
  out.push_back(']');
}

void append_op_head(std::string& out, const char* op, Prec prec) {
  out += op;
  out.push_back('.');
  out += prec_name(prec);
  out.push_back('(');
}

void append_expr(std::string& out, const Expr& e) {
  switch (e.kind) {
    case ExprKind::Get:
      out += e.name;
      append_index_list(out, e.indices);
      return;
    case ExprKind::GetLocal:
      out += e.name;
      return;
    case ExprKind::Const:
      append_constant(out, e.value, e.prec);
      out.push_back(':');
      out += prec_name(e.prec);
      return;
    case ExprKind::EmbedIndex:
      append_op_head(out, "idx", e.prec);
      if (!e.indices.empty()) append_index(out, e.indices[0]);
      out.push_back(')');
      return;
    case ExprKind::Unary:
      append_op_head(out, unop_name(e.unop()), e.prec);
      break;
    case ExprKind::Binary:
      append_op_head(out, binop_name(e.binop()), e.prec);
      break;
    case ExprKind::Ternary:
      append_op_head(out, ternop_name(e.ternop()), e.prec);
      break;
  }
  for (std::size_t i = 0; i < e.args.size(); ++i) {
    if (i) out += ", ";
    append_expr(out, *e.args[i]);
  }
  out.push_back(')');
}

void append_stmt(std::string& out, const Stmt& s, int indent);

void append_block(std::string& out, const std::vector<StmtP>& body, int indent) {
  out += " {\n";
  for (const auto& child : body) append_stmt(out, *child, indent + 1);
  append_indent(out, indent);
  out += "}\n";
}

void append_range(std::string& out, const Stmt& s) {
  out += s.sym;
  out += " in ";
  append_int(out, s.from);
  out += "..";
  append_int(out, s.to);
}

void append_carried(std::string& out, const Carried& c) {
  out += c.prev;
  out += " -> ";
  out += c.next;
  out += " : ";
  out += prec_name(c.prec);
  out += " = ";
  if (c.init) append_expr(out, *c.init);
}

void append_scan_head(std::string& out, const Stmt& s) {
  out += "scan ";
  append_range(out, s);
  out += s.dir == ScanDir::Forward ? " forward carry(" : " backward carry(";
  for (std::size_t i = 0; i < s.carried.size(); ++i) {
    if (i) out += ", ";
    append_carried(out, s.carried[i]);
  }
  out.push_back(')');
}

void append_stmt(std::string& out, const Stmt& s, int indent) {
  if (s.kind == StmtKind::Seq) {
    for (const auto& child : s.body) append_stmt(out, *child, indent);
    return;
  }
  append_indent(out, indent);
  switch (s.kind) {
    case StmtKind::Seq:
      break;
    case StmtKind::For:
      out += "for ";
      append_range(out, s);
      append_block(out, s.body, indent);
      return;
    case StmtKind::Scan:
      append_scan_head(out, s);
      append_block(out, s.body, indent);
      return;
    case StmtKind::If:
      out += "if ";
      if (s.value) append_expr(out, *s.value);
      append_block(out, s.body, indent);
      return;
    case StmtKind::Zero:
      out += "zero ";
      out += s.name;
      break;
    case StmtKind::Set:
      out += s.name;
      append_index_list(out, s.indices);
      out += " = ";
      if (s.value) append_expr(out, *s.value);
      break;
    case StmtKind::DeclareLocal:
      out += "local ";
      out += s.name;
      out += " : ";
      out += prec_name(s.prec);
      break;
    case StmtKind::SetLocal:
      out += s.name;
      out += " := ";
      if (s.value) append_expr(out, *s.value);
      break;
    case StmtKind::Comment:
      out += "comment ";
      out += print_string_literal(s.name);
      break;
    case StmtKind::Noop:
      out += "noop";
      break;
  }
  out.push_back('\n');
}

void append_node(std::string& out, const Node& n) {
  out += "  node ";
  out += n.name;
  out += " : ";
  out += prec_name(n.prec);
  out.push_back('[');
  for (std::size_t i = 0; i < n.dims.size(); ++i) {
    if (i) out += ", ";
    append_int(out, n.dims[i]);
  }
  out += "] ";
  out += mem_mode_name(n.mode);
  if (n.is_input) out += " input";
  if (n.is_output) out += " output";
  out.push_back('\n');
}

}  // namespace

std::string format_file_header(const FileHeader& h) {
  std::string out = "# flashproof " FLASHPROOF_VERSION "\n# command: ";
  append_escaped(out, h.command, /*quoting=*/false);
  out.push_back('\n');
  if (h.seed) fmt::format_to(std::back_inserter(out), "# seed: {}\n", *h.seed);
  return out;
}

std::string print_routine(const Routine& r) {
  std::string out;
  out += "routine ";
  out += r.name;
  out += " {\n";
  for (const auto& [name, value] : r.attrs) {
    out += "  attr ";
    out += name;
    out += " = ";
    append_int(out, value);
    out.push_back('\n');
  }
  for (const auto& n : r.nodes) append_node(out, n);
  if (r.body) append_stmt(out, *r.body, 1);
  out += "}\n";
  return out;
}

std::string print_routine_file(const Routine& r, const FileHeader& h) {
  return format_file_header(h) + print_routine(r);
}

std::string print_expr(const Expr& e) {
  std::string out;
  append_expr(out, e);
  return out;
}

std::string print_index(const Index& i) {
  std::string out;
  append_index(out, i);
  return out;
}

std::string print_stmt(const Stmt& s, int indent) {
  std::string out;
  append_stmt(out, s, indent);
  return out;
}

std::string print_constant(double value, Prec prec) {
  std::string out;
  append_constant(out, value, prec);
  return out;
}

std::string print_string_literal(const std::string& text) {
  std::string out = "\"";
  append_escaped(out, text, /*quoting=*/true);
  out.push_back('"');
  return out;
}

}  // namespace fp
