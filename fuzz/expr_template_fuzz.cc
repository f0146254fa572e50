// The playbook expression and template language: parse, type-check, collect references, and
// evaluate against a fixed set of facts (numbers, strings, host lists, maps, null).
#include <string>
#include <vector>

#include "engine/playbook/expr.h"
#include "fuzz/fuzz_input.h"

namespace {

using diagnose::playbook::Value;

const Value& Facts() {
  static const Value facts = Value::parse(R"({
    "facts": {"status": "failed", "steps": 1200, "tgs": [410.5, 380.25, 0], "hosts": ["a", "b", "c"],
              "phase": {"degraded": true, "drop": 0.31}, "nothing": null},
    "rdma": {"h1": 1876.0, "h2": 0.2, "h3": 0.0},
    "thresholds": {"min_drop": 0.1, "name": "x"}
  })");
  return facts;
}

const Value* Resolve(const std::string& root) {
  const Value& all = Facts();
  auto it = all.find(root);
  return it == all.end() ? nullptr : &*it;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace diagnose::playbook;
  std::string_view text = diagnose::fuzz::AsText(data, size);
  const std::string source(text);
  if (diagnose::fuzz::TakeMode(&text) % 2 == 0) {
    std::vector<ExprSyntaxError> errors;
    auto pieces = ParseTemplate(source, &errors);
    if (errors.empty()) (void)RenderTemplate(pieces, Resolve);
    return 0;
  }
  ExprSyntaxError error;
  std::unique_ptr<Expr> expr = ParseExpr(std::string(text), &error);
  if (!expr) return 0;
  std::vector<NameRef> refs;
  CollectNameRefs(*expr, &refs);
  std::vector<ExprSyntaxError> type_errors;
  StaticType(*expr, [](const std::vector<std::string>& path) { return path.size() == 1 ? "map" : ""; }, &type_errors);
  auto value = EvalExpr(*expr, Resolve);
  if (value.ok()) {
    (void)Truthy(*value);
    (void)ValueToText(*value);
  }
  return 0;
}
