// Evaluation, static types and `{{ }}` templates of the condition language. The lexer and parser
// are in expr_parse.cc, the built-in functions in expr_functions.cc.
#include "engine/playbook/expr.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "engine/playbook/expr_internal.h"

namespace diagnose::playbook {

Status EvalError(const Expr& e, const std::string& msg) {
  return InvalidArgumentError("at offset " + std::to_string(e.offset) + ": " + msg);
}

std::string TypeName(const Value& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "bool";
  if (v.is_number()) return "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "list";
  return "map";
}

bool Compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return a == b || (a.is_number() && b.is_number() && a.get<double>() == b.get<double>());
  if (op == "!=") return !Compare("==", a, b);
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    if (op == ">=") return x >= y;
  }
  if (a.is_string() && b.is_string()) {
    auto x = a.get<std::string>(), y = b.get<std::string>();
    if (op == "<") return x < y;
    if (op == "<=") return x <= y;
    if (op == ">") return x > y;
    if (op == ">=") return x >= y;
  }
  return false;
}

bool IsCmp(const std::string& op) {
  return op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
}
namespace {

Value Arith(const std::string& op, double a, double b) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "/") return b == 0 ? Value() : Value(a / b);
  if (op == "%") return b == 0 ? Value() : Value(std::fmod(a, b));
  return Value();
}

// One key of a map operation on two numbers: arithmetic keeps its result (none where it is
// undefined, as x/0), a comparison keeps the map's own value `kept` where it holds.
void CombineEntry(const std::string& op, bool arith, const std::string& key, const Value& l, const Value& r,
                  const Value& kept, Value& out) {
  if (arith) {
    Value v = Arith(op, l.get<double>(), r.get<double>());
    if (!v.is_null()) out[key] = std::move(v);
  } else if (IsCmp(op) && Compare(op, l, r)) {
    out[key] = kept;
  }
}

StatusOr<Value> EvalBinary(const Expr& e, const Value& a, const Value& b) {
  const std::string& op = e.text;
  if (op == "in") {
    if (b.is_null() || a.is_null()) return Value(false);
    if (b.is_object()) return Value(a.is_string() && b.contains(a.get<std::string>()));
    if (b.is_array()) {
      for (const auto& x : b)
        if (Compare("==", x, a)) return Value(true);
      return Value(false);
    }
    if (b.is_string() && a.is_string()) return Value(b.get<std::string>().find(a.get<std::string>()) != std::string::npos);
    return EvalError(e, "'in' needs a list, map or string on the right, got " + TypeName(b));
  }
  bool arith = op == "+" || op == "-" || op == "*" || op == "/" || op == "%";
  // Vector semantics: map op scalar, scalar op map, map op map (matching keys).
  if (a.is_object() || b.is_object()) {
    Value out = Value::object();
    if (a.is_object() && b.is_object()) {
      for (const auto& [k, x] : a.items()) {
        if (!b.contains(k)) continue;
        const Value& y = b[k];
        if (!x.is_number() || !y.is_number()) continue;
        CombineEntry(op, arith, k, x, y, x, out);
      }
      return out;
    }
    const Value& m = a.is_object() ? a : b;
    const Value& s = a.is_object() ? b : a;
    if (s.is_null()) return arith ? Value() : Value(Value::object());
    if (!s.is_number()) return EvalError(e, "cannot apply '" + op + "' to a map and a " + TypeName(s));
    for (const auto& [k, x] : m.items()) {
      if (!x.is_number()) continue;
      const Value& l = a.is_object() ? x : s;
      const Value& r = a.is_object() ? s : x;
      CombineEntry(op, arith, k, l, r, x, out);
    }
    return out;
  }
  if (arith) {
    if (a.is_null() || b.is_null()) return Value();
    if (op == "+" && a.is_string() && b.is_string()) return Value(a.get<std::string>() + b.get<std::string>());
    if (op == "+" && a.is_array() && b.is_array()) {
      Value out = a;
      for (const auto& x : b) out.push_back(x);
      return out;
    }
    if (!a.is_number() || !b.is_number())
      return EvalError(e, "cannot apply '" + op + "' to " + TypeName(a) + " and " + TypeName(b));
    return Arith(op, a.get<double>(), b.get<double>());
  }
  if (IsCmp(op)) {
    if ((op == "==" || op == "!=")) return Value(Compare(op, a, b));
    if (a.is_null() || b.is_null()) return Value(false);
    if (!((a.is_number() && b.is_number()) || (a.is_string() && b.is_string())))
      return EvalError(e, "cannot compare " + TypeName(a) + " and " + TypeName(b) + " with '" + op + "'");
    return Value(Compare(op, a, b));
  }
  return EvalError(e, "unknown operator '" + op + "'");
}

// Walks a name.field.field chain by pointer (no copies of large rule results). `is_path` is false
// when the chain does not start at a name.
const Value* ResolvePath(const Expr& e, const NameResolver& resolve, bool* is_path) {
  if (e.kind == ExprKind::kName) {
    *is_path = true;
    return resolve(e.text);
  }
  if (e.kind != ExprKind::kField) {
    *is_path = false;
    return nullptr;
  }
  if (e.children[0]->kind == ExprKind::kName) {
    if (const Value* member = resolve(e.children[0]->text + "." + e.text)) {
      *is_path = true;
      return member;
    }
  }
  const Value* base = ResolvePath(*e.children[0], resolve, is_path);
  if (!*is_path || base == nullptr) return nullptr;
  if (base->is_object()) {
    auto it = base->find(e.text);
    if (it != base->end()) return &*it;
  }
  return nullptr;
}

// What a node evaluated to: borrowed where the value outlives the evaluation (a path into the job
// data, a literal of the expression), held where it was computed. Reading a rule's per-host series
// into a comparison, a function or an analysis thus reads it in place instead of copying it at
// every node it passes through.
class Evaluated {
 public:
  Evaluated() = default;
  explicit Evaluated(Value held) : held_(std::move(held)) {}
  // nullptr is null (an unknown name, a missing field).
  static Evaluated Borrowed(const Value* value) {
    Evaluated out;
    out.borrowed_ = value;
    return out;
  }

  const Value& get() const { return borrowed_ != nullptr ? *borrowed_ : held_; }
  Value Take() && { return borrowed_ != nullptr ? *borrowed_ : std::move(held_); }
  // Where the value is: where it was borrowed from, or `*held` which then holds it.
  const Value* Keep(Value* held) && {
    if (borrowed_ != nullptr) return borrowed_;
    *held = std::move(held_);
    return held;
  }

  // The member `select` finds in this value (nullptr: none, which is null): borrowed from a
  // borrowed value, moved out of a held one.
  template <typename Select>
  Evaluated Member(Select select) && {
    if (borrowed_ != nullptr) return Borrowed(select(*borrowed_));
    Value* member = select(held_);
    return member != nullptr ? Evaluated(std::move(*member)) : Evaluated();
  }

 private:
  const Value* borrowed_ = nullptr;
  Value held_;
};

// The element `idx` names in a list (negative counts from the end), or none.
std::optional<size_t> ElementIndex(const Value& list, const Value& idx) {
  const double at = idx.get<double>();
  // Out of range (or NaN) is no element, not a cast that overflows.
  if (!(std::fabs(at) < static_cast<double>(list.size()) + 1)) return std::nullopt;
  long i = static_cast<long>(at);
  if (i < 0) i += static_cast<long>(list.size());
  if (i >= 0 && i < static_cast<long>(list.size())) return static_cast<size_t>(i);
  return std::nullopt;
}

StatusOr<Evaluated> Eval(const Expr& e, const NameResolver& resolve);

StatusOr<Evaluated> EvalIndex(const Expr& e, const NameResolver& resolve) {
  ASSIGN_OR_RETURN(Evaluated base, Eval(*e.children[0], resolve));
  ASSIGN_OR_RETURN(Evaluated idx, Eval(*e.children[1], resolve));
  const Value& b = base.get();
  const Value& i = idx.get();
  if (b.is_object() && i.is_string()) {
    const auto& key = i.get_ref<const std::string&>();
    return std::move(base).Member([&](auto& map) -> decltype(&map) {
      auto it = map.find(key);
      return it != map.end() ? &*it : nullptr;
    });
  }
  if (b.is_array() && i.is_number()) {
    const std::optional<size_t> at = ElementIndex(b, i);
    return std::move(base).Member([&](auto& list) -> decltype(&list) { return at ? &list[*at] : nullptr; });
  }
  if (b.is_null() || i.is_null()) return Evaluated();
  return EvalError(e, "cannot index a " + TypeName(b) + " with a " + TypeName(i));
}

StatusOr<Evaluated> EvalCall(const Expr& e, const NameResolver& resolve) {
  // if(cond, then, else): only the branch taken is evaluated, so the other may be meaningless
  // (an empty list's first element) without an error.
  if (e.text == "if" && e.children.size() == 3) {
    ASSIGN_OR_RETURN(Evaluated cond, Eval(*e.children[0], resolve));
    return Eval(*e.children[Truthy(cond.get()) ? 1 : 2], resolve);
  }
  std::vector<Evaluated> evaluated;
  evaluated.reserve(e.children.size());
  for (const auto& c : e.children) {
    ASSIGN_OR_RETURN(Evaluated v, Eval(*c, resolve));
    evaluated.push_back(std::move(v));
  }
  // default(x, fallback): both are evaluated (an error in either is the call's), one is the result.
  if (e.text == "default" && evaluated.size() == 2)
    return std::move(evaluated[evaluated[0].get().is_null() ? 1 : 0]);
  std::vector<const Value*> args;
  args.reserve(evaluated.size());
  for (const auto& v : evaluated) args.push_back(&v.get());
  ASSIGN_OR_RETURN(Value result, CallFunction(e, Args(std::move(args)), resolve));
  return Evaluated(std::move(result));
}

StatusOr<Evaluated> EvalOperator(const Expr& e, const NameResolver& resolve) {
  ASSIGN_OR_RETURN(Evaluated l, Eval(*e.children[0], resolve));
  if (e.kind == ExprKind::kUnary) {
    const Value& v = l.get();
    if (e.text == "not") return Evaluated(Value(!Truthy(v)));
    if (v.is_null()) return Evaluated();
    if (v.is_object()) {
      Value out = Value::object();
      for (const auto& [k, x] : v.items())
        if (x.is_number()) out[k] = -x.get<double>();
      return Evaluated(std::move(out));
    }
    if (!v.is_number()) return EvalError(e, "cannot negate a " + TypeName(v));
    return Evaluated(Value(-v.get<double>()));
  }
  if (e.text == "and" || e.text == "or") {
    const bool left = Truthy(l.get());
    if (left == (e.text == "or")) return Evaluated(Value(left));
    ASSIGN_OR_RETURN(Evaluated r, Eval(*e.children[1], resolve));
    return Evaluated(Value(Truthy(r.get())));
  }
  ASSIGN_OR_RETURN(Evaluated r, Eval(*e.children[1], resolve));
  ASSIGN_OR_RETURN(Value out, EvalBinary(e, l.get(), r.get()));
  return Evaluated(std::move(out));
}

StatusOr<Evaluated> Eval(const Expr& e, const NameResolver& resolve) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return Evaluated::Borrowed(&e.literal);
    case ExprKind::kName:
    case ExprKind::kField: {
      bool is_path = false;
      const Value* ref = ResolvePath(e, resolve, &is_path);
      if (is_path) return Evaluated::Borrowed(ref);
      ASSIGN_OR_RETURN(Evaluated base, Eval(*e.children[0], resolve));
      return std::move(base).Member([&](auto& map) -> decltype(&map) {
        if (!map.is_object()) return nullptr;
        auto it = map.find(e.text);
        return it != map.end() ? &*it : nullptr;
      });
    }
    case ExprKind::kIndex:
      return EvalIndex(e, resolve);
    case ExprKind::kList: {
      Value out = Value::array();
      for (const auto& c : e.children) {
        ASSIGN_OR_RETURN(Evaluated v, Eval(*c, resolve));
        out.push_back(std::move(v).Take());
      }
      return Evaluated(std::move(out));
    }
    case ExprKind::kMap: {
      Value out = Value::object();
      for (size_t i = 0; i < e.children.size(); ++i) {
        ASSIGN_OR_RETURN(Evaluated v, Eval(*e.children[i], resolve));
        out[e.keys[i]] = std::move(v).Take();
      }
      return Evaluated(std::move(out));
    }
    case ExprKind::kCall:
      return EvalCall(e, resolve);
    case ExprKind::kUnary:
    case ExprKind::kBinary:
      return EvalOperator(e, resolve);
  }
  return EvalError(e, "unknown expression node");
}

void CollectRefs(const Expr& e, std::vector<NameRef>* out) {
  if (e.kind == ExprKind::kName) {
    out->push_back({{e.text}, e.offset});
    return;
  }
  if (e.kind == ExprKind::kField) {
    // Flatten the a.b.c chain into one path when it starts at a name.
    std::vector<std::string> rev;
    const Expr* cur = &e;
    while (cur->kind == ExprKind::kField) {
      rev.push_back(cur->text);
      cur = cur->children[0].get();
    }
    if (cur->kind == ExprKind::kName) {
      NameRef ref;
      ref.offset = cur->offset;
      ref.path.push_back(cur->text);
      for (auto it = rev.rbegin(); it != rev.rend(); ++it) ref.path.push_back(*it);
      out->push_back(std::move(ref));
      return;
    }
    CollectRefs(*cur, out);
    return;
  }
  for (const auto& c : e.children) CollectRefs(*c, out);
}

}  // namespace

void CollectNameRefs(const Expr& expr, std::vector<NameRef>* out) { CollectRefs(expr, out); }

std::string StaticType(const Expr& e,
                       const std::function<std::string(const std::vector<std::string>&)>& name_type,
                       std::vector<ExprSyntaxError>* errors) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal.is_null() ? "" : TypeName(e.literal);
    case ExprKind::kName:
      return name_type({e.text});
    case ExprKind::kField: {
      std::vector<NameRef> refs;
      CollectRefs(e, &refs);
      if (refs.size() == 1 && refs[0].offset == [&] {
            const Expr* cur = &e;
            while (cur->kind == ExprKind::kField) cur = cur->children[0].get();
            return cur->offset;
          }())
        return name_type(refs[0].path);
      StaticType(*e.children[0], name_type, errors);
      return "";
    }
    case ExprKind::kList:
      for (const auto& c : e.children) StaticType(*c, name_type, errors);
      return "list";
    case ExprKind::kMap:
      for (const auto& c : e.children) StaticType(*c, name_type, errors);
      return "map";
    case ExprKind::kIndex:
      StaticType(*e.children[0], name_type, errors);
      StaticType(*e.children[1], name_type, errors);
      return "";
    case ExprKind::kCall: {
      std::vector<std::string> types;
      for (const auto& c : e.children) types.push_back(StaticType(*c, name_type, errors));
      // if(c, a, b) has its branches' type when they agree, which a fixed result type cannot say.
      if (e.text == "if" && types.size() == 3) return types[1] == types[2] ? types[1] : "";
      const FunctionSpec* spec = FindFunction(e.text);
      return spec ? std::string(spec->result_type) : "";
    }
    case ExprKind::kUnary: {
      std::string t = StaticType(*e.children[0], name_type, errors);
      if (e.text == "not") return "bool";
      if (!t.empty() && t != "number" && t != "map")
        errors->push_back({e.offset, "cannot negate a " + t});
      return t;
    }
    case ExprKind::kBinary: {
      std::string l = StaticType(*e.children[0], name_type, errors);
      std::string r = StaticType(*e.children[1], name_type, errors);
      const std::string& op = e.text;
      if (op == "and" || op == "or" || op == "in") {
        if (op == "in" && !r.empty() && r != "list" && r != "map" && r != "string")
          errors->push_back({e.offset, "'in' needs a list, map or string on the right, got " + r});
        return "bool";
      }
      bool arith = op == "+" || op == "-" || op == "*" || op == "/" || op == "%";
      auto bad_arith = [&](const std::string& t) {
        return !t.empty() && t != "number" && t != "map" && !(op == "+" && (t == "string" || t == "list"));
      };
      if (arith) {
        if (bad_arith(l) || bad_arith(r) || (!l.empty() && !r.empty() && l != r && l != "map" && r != "map"))
          errors->push_back({e.offset, "cannot apply '" + op + "' to " + (l.empty() ? "?" : l) + " and " +
                                           (r.empty() ? "?" : r)});
        return l == "map" || r == "map" ? "map" : (l.empty() ? r : l);
      }
      if (op != "==" && op != "!=") {
        auto ordered = [](const std::string& t) { return t.empty() || t == "number" || t == "string" || t == "map"; };
        if (!ordered(l) || !ordered(r) || (!l.empty() && !r.empty() && l != r && l != "map" && r != "map"))
          errors->push_back({e.offset, "cannot compare " + (l.empty() ? "?" : l) + " and " + (r.empty() ? "?" : r) +
                                           " with '" + op + "'"});
      }
      return l == "map" || r == "map" ? "map" : "bool";
    }
  }
  return "";
}

StatusOr<Value> EvalExpr(const Expr& expr, const NameResolver& resolve) {
  ASSIGN_OR_RETURN(Evaluated v, Eval(expr, resolve));
  return std::move(v).Take();
}

StatusOr<const Value*> EvalExprInPlace(const Expr& expr, const NameResolver& resolve, Value* held) {
  ASSIGN_OR_RETURN(Evaluated v, Eval(expr, resolve));
  return std::move(v).Keep(held);
}

bool Truthy(const Value& v) {
  if (v.is_null()) return false;
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number()) return v.get<double>() != 0;
  if (v.is_string()) return !v.get<std::string>().empty();
  return !v.empty();
}

std::string ValueToText(const Value& v) {
  if (v.is_null()) return "n/a";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  if (v.is_array()) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + ValueToText(v[i]);
    return out;
  }
  return v.dump();
}

std::vector<TemplatePiece> ParseTemplate(const std::string& source, std::vector<ExprSyntaxError>* errors) {
  std::vector<TemplatePiece> pieces;
  size_t pos = 0;
  while (pos < source.size()) {
    size_t open = source.find("{{", pos);
    if (open == std::string::npos) {
      pieces.push_back({false, source.substr(pos), pos, nullptr});
      break;
    }
    if (open > pos) pieces.push_back({false, source.substr(pos, open - pos), pos, nullptr});
    size_t close = source.find("}}", open + 2);
    if (close == std::string::npos) {
      errors->push_back({open, "unterminated '{{' in template"});
      break;
    }
    TemplatePiece piece;
    piece.is_expr = true;
    piece.offset = open + 2;
    piece.text = source.substr(open + 2, close - open - 2);
    ExprSyntaxError err;
    auto parsed = ParseExpr(piece.text, &err);
    if (!parsed) {
      errors->push_back({piece.offset + err.offset, err.message});
    } else {
      piece.expr = std::shared_ptr<Expr>(std::move(parsed));
    }
    pieces.push_back(std::move(piece));
    pos = close + 2;
  }
  return pieces;
}

StatusOr<std::string> RenderTemplate(const std::vector<TemplatePiece>& pieces, const NameResolver& resolve,
                                     bool* rendered_empty) {
  std::string out;
  for (const auto& p : pieces) {
    if (!p.is_expr) {
      out += p.text;
      continue;
    }
    if (!p.expr) return InvalidArgumentError("template expression '" + p.text + "' did not parse");
    ASSIGN_OR_RETURN(Evaluated v, Eval(*p.expr, resolve));
    std::string text = ValueToText(v.get());
    if (rendered_empty && text.empty()) *rendered_empty = true;
    out += text;
  }
  return out;
}

}  // namespace diagnose::playbook
