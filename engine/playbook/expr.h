// The condition language of playbooks (playbooks/README.md §6): a tiny, typed, side-effect-free
// expression language over JSON values. Maps behave like PromQL vectors (`m > 5` filters), lists of
// strings are host sets. Parsing is separate from evaluation so the loader can check syntax,
// references and the types it can know before anything runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace diagnose::playbook {

using Value = nlohmann::json;

enum class ExprKind { kLiteral, kName, kField, kIndex, kCall, kUnary, kBinary, kList, kMap };

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  size_t offset = 0;          // byte offset of this node in the source string
  std::string text;           // name, field name, function name or operator
  Value literal;              // kLiteral
  std::vector<std::unique_ptr<Expr>> children;
  std::vector<std::string> keys;   // kMap: one key per child
};

struct ExprSyntaxError {
  size_t offset = 0;          // where in the source string
  std::string message;
};

// Parses `source`; on failure returns the first syntax error with its offset.
std::unique_ptr<Expr> ParseExpr(const std::string& source, ExprSyntaxError* error);

// A name path `a.b.c` (leading kName then kField chain) with its offset, as found in an expression;
// the loader resolves the root against rules, facts, params and thresholds.
struct NameRef {
  std::vector<std::string> path;   // at least one element
  size_t offset = 0;
};
void CollectNameRefs(const Expr& expr, std::vector<NameRef>* out);

// Static types the loader can know ("" = unknown until run time).
std::string StaticType(const Expr& expr,
                       const std::function<std::string(const std::vector<std::string>&)>& name_type,
                       std::vector<ExprSyntaxError>* type_errors);

// Resolves the root name of a path at run time ("facts", a rule id, ...). Returns nullptr for an
// unknown or null name. The pointee must outlive the evaluation; paths are walked without copying.
// A field of a name (`common.x`) is first asked as the dotted name "common.x": a resolver that
// keeps the member apart from its root (the evaluator's shared rules, which it would otherwise
// copy into one `common` object) returns it there; every other resolver returns nullptr for a
// dotted name, and the root's value is walked.
using NameResolver = std::function<const Value*(const std::string& root)>;

// Evaluates; errors (type mismatch at run time, unknown function) carry the offset in the message.
StatusOr<Value> EvalExpr(const Expr& expr, const NameResolver& resolve);
// The same value without copying one the expression only names: a path's value is returned where
// the resolver keeps it (valid as long as that is), a computed one is moved into `*held` and
// returned there. Never nullptr; a null value is a pointer to null.
StatusOr<const Value*> EvalExprInPlace(const Expr& expr, const NameResolver& resolve, Value* held);

// Truthiness: null/false/0/""/empty list or map are false.
bool Truthy(const Value& v);

// Known functions and their arity ({min, max}; max -1 = variadic). For load-time checks.
bool LookupFunction(const std::string& name, int* min_args, int* max_args);

// `{{ expr }}` templates: the parsed pieces of a string with interpolations.
struct TemplatePiece {
  bool is_expr = false;
  std::string text;                 // literal text or expression source
  size_t offset = 0;                // offset of `text` inside the template string
  std::shared_ptr<Expr> expr;       // parsed when is_expr
};
// Splits and parses; syntax errors come back with offsets into `source`.
std::vector<TemplatePiece> ParseTemplate(const std::string& source, std::vector<ExprSyntaxError>* errors);
// Renders: numbers as %g, strings as is, lists joined with ", ".
// `rendered_empty`, when given, is set when a placeholder rendered nothing (an empty list, map or
// string): a sentence with a hole in it.
StatusOr<std::string> RenderTemplate(const std::vector<TemplatePiece>& pieces, const NameResolver& resolve,
                                     bool* rendered_empty = nullptr);
std::string ValueToText(const Value& v);

}  // namespace diagnose::playbook
