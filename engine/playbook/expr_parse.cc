// Lexer and parser of the condition language: source text to an Expr tree, or the first syntax
// error with its offset. Calls are checked against the function registry here so that an unknown
// name or a wrong argument count is a load error, not a run-time one.
#include "engine/playbook/expr.h"

#include <cctype>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>

namespace diagnose::playbook {
namespace {

enum class Tok { kEnd, kNumber, kString, kIdent, kOp, kError };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  double number = 0;
  size_t offset = 0;
};

class Lexer {
 public:
  explicit Lexer(const std::string& s) : s_(s) {}

  Token Next() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    Token t;
    t.offset = pos_;
    if (pos_ >= s_.size()) return t;
    char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])))) {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        size_t save = pos_++;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
          while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        } else {
          pos_ = save;
        }
      }
      t.kind = Tok::kNumber;
      t.text = s_.substr(start, pos_ - start);
      char* end = nullptr;
      t.number = std::strtod(t.text.c_str(), &end);
      if (end == nullptr || *end != '\0') {
        t.kind = Tok::kError;
        t.text = "malformed number '" + t.text + "'";
      }
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
      t.kind = Tok::kIdent;
      t.text = s_.substr(start, pos_ - start);
      return t;
    }
    if (c == '\'' || c == '"') {
      char quote = c;
      ++pos_;
      std::string out;
      while (pos_ < s_.size() && s_[pos_] != quote) {
        if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) {
          ++pos_;
          char e = s_[pos_];
          out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          out += s_[pos_];
        }
        ++pos_;
      }
      if (pos_ >= s_.size()) {
        t.kind = Tok::kError;
        t.text = "unterminated string";
        return t;
      }
      ++pos_;
      t.kind = Tok::kString;
      t.text = out;
      return t;
    }
    static const char* kTwo[] = {"==", "!=", "<=", ">="};
    for (const char* op : kTwo) {
      if (s_.compare(pos_, 2, op) == 0) {
        pos_ += 2;
        t.kind = Tok::kOp;
        t.text = op;
        return t;
      }
    }
    if (std::string("+-*/%<>()[],.{}:").find(c) != std::string::npos) {
      ++pos_;
      t.kind = Tok::kOp;
      t.text = std::string(1, c);
      return t;
    }
    t.kind = Tok::kError;
    t.text = std::string("unexpected character '") + c + "'";
    if (c == '=') t.text += " (use '==' to compare)";
    if (c == '&' || c == '|') t.text += " (use 'and' / 'or')";
    if (c == '!') t.text += " (use 'not' or '!=')";
    ++pos_;
    return t;
  }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

class Parser {
 public:
  Parser(const std::string& s, ExprSyntaxError* err) : lexer_(s), err_(err) { Advance(); }

  std::unique_ptr<Expr> ParseAll() {
    auto e = ParseOr();
    if (!e) return nullptr;
    if (tok_.kind != Tok::kEnd) return Fail(tok_.offset, "unexpected '" + tok_.text + "' after expression");
    return e;
  }

 private:
  void Advance() { tok_ = lexer_.Next(); }
  bool IsOp(const char* op) const { return tok_.kind == Tok::kOp && tok_.text == op; }
  bool IsWord(const char* w) const { return tok_.kind == Tok::kIdent && tok_.text == w; }

  std::unique_ptr<Expr> Fail(size_t offset, std::string msg) {
    if (!failed_) {
      failed_ = true;
      err_->offset = offset;
      err_->message = std::move(msg);
    }
    return nullptr;
  }

  static std::unique_ptr<Expr> Node(ExprKind k, size_t off, std::string text) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->offset = off;
    e->text = std::move(text);
    return e;
  }

  std::unique_ptr<Expr> Unary(std::string op, size_t off, std::unique_ptr<Expr> operand) {
    auto e = Node(ExprKind::kUnary, off, std::move(op));
    e->children.push_back(std::move(operand));
    return e;
  }

  std::unique_ptr<Expr> Binary(std::string op, size_t off, std::unique_ptr<Expr> l, std::unique_ptr<Expr> r) {
    auto e = Node(ExprKind::kBinary, off, std::move(op));
    e->children.push_back(std::move(l));
    e->children.push_back(std::move(r));
    return e;
  }

  // One left-associative level: `operand (operator operand)*`, the operator being whichever of
  // `operators` the current token is (all words or all symbols).
  std::unique_ptr<Expr> ParseLeftAssociative(std::unique_ptr<Expr> (Parser::*operand)(),
                                             std::initializer_list<const char*> operators, bool words) {
    const auto at_operator = [&] {
      for (const char* op : operators)
        if (words ? IsWord(op) : IsOp(op)) return true;
      return false;
    };
    auto l = (this->*operand)();
    while (l && at_operator()) {
      std::string op = tok_.text;
      size_t off = tok_.offset;
      Advance();
      auto r = (this->*operand)();
      if (!r) return nullptr;
      l = Binary(std::move(op), off, std::move(l), std::move(r));
    }
    return l;
  }
  // Every nesting (parentheses, brackets, call arguments, prefix operators) passes through here or
  // ParsePrefix, so their depth is counted there: the parser, the tree's destructor and every walk
  // over it recurse per level (5,000 parentheses overflowed the stack).
  std::unique_ptr<Expr> Nested(std::unique_ptr<Expr> (Parser::*parse)()) {
    if (depth_ >= kMaxExprDepth)
      return Fail(tok_.offset, "expression nested deeper than " + std::to_string(kMaxExprDepth) + " levels");
    ++depth_;
    auto e = (this->*parse)();
    --depth_;
    return e;
  }
  std::unique_ptr<Expr> ParseOr() { return Nested(&Parser::ParseOrLevel); }
  std::unique_ptr<Expr> ParseOrLevel() { return ParseLeftAssociative(&Parser::ParseAnd, {"or"}, true); }
  std::unique_ptr<Expr> ParseAnd() { return ParseLeftAssociative(&Parser::ParseNot, {"and"}, true); }
  // One prefix level: `op operand`, the operand parsed by `self` (so `not not x` nests), else `next`.
  std::unique_ptr<Expr> ParsePrefix(const char* op, bool word, std::unique_ptr<Expr> (Parser::*self)(),
                                    std::unique_ptr<Expr> (Parser::*next)()) {
    if (!(word ? IsWord(op) : IsOp(op))) return (this->*next)();
    size_t off = tok_.offset;
    Advance();
    auto operand = Nested(self);
    if (!operand) return nullptr;
    return Unary(op, off, std::move(operand));
  }
  std::unique_ptr<Expr> ParseNot() { return ParsePrefix("not", true, &Parser::ParseNot, &Parser::ParseCmp); }
  std::unique_ptr<Expr> ParseCmp() {
    auto l = ParseAdd();
    if (!l) return nullptr;
    // `l op r`, the operator's tokens consumed and `off` where they began.
    const auto with_right_operand = [&](const char* op, size_t off) -> std::unique_ptr<Expr> {
      auto r = ParseAdd();
      if (!r) return nullptr;
      return Binary(op, off, std::move(l), std::move(r));
    };
    static const char* kCmp[] = {"==", "!=", "<", "<=", ">", ">="};
    const size_t off = tok_.offset;
    for (const char* op : kCmp) {
      if (IsOp(op)) {
        Advance();
        return with_right_operand(op, off);
      }
    }
    if (IsWord("in")) {
      Advance();
      return with_right_operand("in", off);
    }
    if (IsWord("not")) {
      Advance();
      if (!IsWord("in")) return Fail(tok_.offset, "expected 'in' after 'not'");
      Advance();
      auto in = with_right_operand("in", off);
      if (!in) return nullptr;
      return Unary("not", off, std::move(in));
    }
    return l;
  }
  std::unique_ptr<Expr> ParseAdd() { return ParseLeftAssociative(&Parser::ParseMul, {"+", "-"}, false); }
  std::unique_ptr<Expr> ParseMul() { return ParseLeftAssociative(&Parser::ParseUnary, {"*", "/", "%"}, false); }
  std::unique_ptr<Expr> ParseUnary() { return ParsePrefix("-", false, &Parser::ParseUnary, &Parser::ParsePostfix); }
  std::unique_ptr<Expr> ParsePostfix() {
    auto e = ParsePrimary();
    while (e) {
      if (IsOp(".")) {
        Advance();
        if (tok_.kind != Tok::kIdent) return Fail(tok_.offset, "expected a field name after '.'");
        auto f = Node(ExprKind::kField, tok_.offset, tok_.text);
        f->children.push_back(std::move(e));
        e = std::move(f);
        Advance();
      } else if (IsOp("[")) {
        size_t off = tok_.offset;
        Advance();
        auto idx = ParseOr();
        if (!idx) return nullptr;
        if (!IsOp("]")) return Fail(tok_.offset, "expected ']'");
        Advance();
        auto n = Node(ExprKind::kIndex, off, "[]");
        n->children.push_back(std::move(e));
        n->children.push_back(std::move(idx));
        e = std::move(n);
      } else if (IsOp("(")) {
        if (e->kind != ExprKind::kName) return Fail(tok_.offset, "only functions can be called");
        Advance();
        auto call = Node(ExprKind::kCall, e->offset, e->text);
        if (!IsOp(")")) {
          while (true) {
            auto arg = ParseOr();
            if (!arg) return nullptr;
            call->children.push_back(std::move(arg));
            if (IsOp(",")) {
              Advance();
              continue;
            }
            if (IsOp(")")) break;
            return Fail(tok_.offset, "expected ',' or ')' in call to '" + call->text + "'");
          }
        }
        Advance();
        int min_args = 0, max_args = 0;
        if (!LookupFunction(call->text, &min_args, &max_args))
          return Fail(call->offset, "unknown function '" + call->text + "'");
        int n = static_cast<int>(call->children.size());
        if (n < min_args || (max_args >= 0 && n > max_args))
          return Fail(call->offset, "function '" + call->text + "' takes " +
                                        (min_args == max_args ? std::to_string(min_args)
                                                              : std::to_string(min_args) + ".." +
                                                                    (max_args < 0 ? std::string("n") : std::to_string(max_args))) +
                                        " argument(s), got " + std::to_string(n));
        e = std::move(call);
      } else {
        break;
      }
    }
    return e;
  }
  std::unique_ptr<Expr> ParsePrimary() {
    Token t = tok_;
    switch (t.kind) {
      case Tok::kEnd:
        return Fail(t.offset, "unexpected end of expression");
      case Tok::kError:
        return Fail(t.offset, t.text);
      case Tok::kNumber: {
        Advance();
        auto e = Node(ExprKind::kLiteral, t.offset, t.text);
        e->literal = t.number;
        return e;
      }
      case Tok::kString: {
        Advance();
        auto e = Node(ExprKind::kLiteral, t.offset, t.text);
        e->literal = t.text;
        return e;
      }
      case Tok::kIdent: {
        if (t.text == "true" || t.text == "false" || t.text == "null") {
          Advance();
          auto e = Node(ExprKind::kLiteral, t.offset, t.text);
          e->literal = t.text == "null" ? Value() : Value(t.text == "true");
          return e;
        }
        if (t.text == "and" || t.text == "or" || t.text == "in" || t.text == "not")
          return Fail(t.offset, "unexpected keyword '" + t.text + "'");
        Advance();
        return Node(ExprKind::kName, t.offset, t.text);
      }
      case Tok::kOp:
        if (t.text == "(") {
          Advance();
          auto e = ParseOr();
          if (!e) return nullptr;
          if (!IsOp(")")) return Fail(tok_.offset, "expected ')' to close '(' at offset " + std::to_string(t.offset));
          Advance();
          return e;
        }
        if (t.text == "[") {
          Advance();
          auto list = Node(ExprKind::kList, t.offset, "[]");
          if (!IsOp("]")) {
            while (true) {
              auto item = ParseOr();
              if (!item) return nullptr;
              list->children.push_back(std::move(item));
              if (IsOp(",")) {
                Advance();
                continue;
              }
              if (IsOp("]")) break;
              return Fail(tok_.offset, "expected ',' or ']' in list");
            }
          }
          Advance();
          return list;
        }
        if (t.text == "{") {
          Advance();
          auto map = Node(ExprKind::kMap, t.offset, "{}");
          if (!IsOp("}")) {
            while (true) {
              if (tok_.kind != Tok::kString && tok_.kind != Tok::kIdent)
                return Fail(tok_.offset, "expected a key (name or string) in map");
              std::string key = tok_.text;
              Advance();
              if (!IsOp(":")) return Fail(tok_.offset, "expected ':' after map key '" + key + "'");
              Advance();
              auto value = ParseOr();
              if (!value) return nullptr;
              map->keys.push_back(key);
              map->children.push_back(std::move(value));
              if (IsOp(",")) {
                Advance();
                continue;
              }
              if (IsOp("}")) break;
              return Fail(tok_.offset, "expected ',' or '}' in map");
            }
          }
          Advance();
          return map;
        }
        return Fail(t.offset, "unexpected '" + t.text + "'");
    }
    return Fail(t.offset, "unexpected token");
  }

  Lexer lexer_;
  Token tok_;
  static constexpr int kMaxExprDepth = 256;
  ExprSyntaxError* err_;
  bool failed_ = false;
  int depth_ = 0;
};

}  // namespace

std::unique_ptr<Expr> ParseExpr(const std::string& source, ExprSyntaxError* error) {
  ExprSyntaxError local;
  Parser p(source, error ? error : &local);
  return p.ParseAll();
}

}  // namespace diagnose::playbook
