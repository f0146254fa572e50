// Shared by the expression language's evaluator (expr.cc) and its built-in functions
// (expr_functions.cc), nothing else: other modules use expr.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/playbook/expr.h"

namespace diagnose::playbook {

// Run-time errors carry the offset of the node that failed.
Status EvalError(const Expr& e, const std::string& msg);
std::string TypeName(const Value& v);
bool IsCmp(const std::string& op);
bool Compare(const std::string& op, const Value& a, const Value& b);

// A built-in's evaluated arguments, read in place: a rule's per-host series passed to `fmt` or
// `keys` is the rule's own value, not a copy of it. The caller keeps each alive for the call.
class Args {
 public:
  explicit Args(std::vector<const Value*> values) : values_(std::move(values)) {}
  size_t size() const { return values_.size(); }
  const Value& operator[](size_t i) const { return *values_[i]; }

  class Iterator {
   public:
    explicit Iterator(std::vector<const Value*>::const_iterator at) : at_(at) {}
    const Value& operator*() const { return **at_; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return at_ != other.at_; }

   private:
    std::vector<const Value*>::const_iterator at_;
  };
  Iterator begin() const { return Iterator(values_.begin()); }
  Iterator end() const { return Iterator(values_.end()); }

 private:
  std::vector<const Value*> values_;
};

// A built-in function gets its arguments evaluated; `call.text` is its name, for bodies shared by
// two names, and `resolve` reaches the job data (discovery, facts) a few of them read.
using FunctionImpl = StatusOr<Value> (*)(const Expr& call, const Args& args, const NameResolver& resolve);

// The one list of built-ins: the parser checks arity against it, StaticType reads result_type and
// the evaluator calls impl.
struct FunctionSpec {
  std::string_view name;
  int min_args;
  int max_args;                   // -1 = variadic
  std::string_view result_type;   // "number" | "list" | "bool" | "string" | "" (depends on args)
  FunctionImpl impl;              // nullptr for `if` and `default`, which Eval runs itself
};

const FunctionSpec* FindFunction(std::string_view name);

// Arity is not checked again: the parser rejected wrong counts.
StatusOr<Value> CallFunction(const Expr& call, const Args& args, const NameResolver& resolve);

}  // namespace diagnose::playbook
