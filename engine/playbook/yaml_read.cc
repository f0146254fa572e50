// Read stage, YAML level: positions of nodes and of characters inside scalars, typed getters and
// the bounded parse, so the rule reader and the checker report positions the same way.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/bounded_yaml.h"
#include "engine/core/limits.h"
#include "engine/playbook/yaml_file.h"

namespace diagnose::playbook {
namespace {

SourcePos PosInScalar(const std::string& file, const std::string& text, const YAML::Mark& m,
                      const std::string& value, size_t offset) {
  if (m.pos < 0 || static_cast<size_t>(m.pos) >= text.size()) return {file, m.line + 1, m.column + 1};
  size_t r = static_cast<size_t>(m.pos);
  int line = m.line, col = m.column;
  enum { kPlain, kSingle, kDouble, kBlock } style = kPlain;
  size_t block_indent = 0;
  char c = text[r];
  if (c == '"' || c == '\'') {
    style = c == '"' ? kDouble : kSingle;
    ++r;
    ++col;
  } else if (c == '|' || c == '>') {
    style = kBlock;
    while (r < text.size() && text[r] != '\n') ++r;
    if (r < text.size()) ++r;
    ++line;
    col = 0;
    while (r + block_indent < text.size() && text[r + block_indent] == ' ') ++block_indent;
    r += block_indent;
    col = static_cast<int>(block_indent);
  }
  size_t i = 0;
  while (i < offset && r < text.size()) {
    char rc = text[r];
    if (rc == '\n') {
      ++r;
      ++line;
      col = 0;
      while (r < text.size() && text[r] == ' ' &&
             (style != kBlock || static_cast<size_t>(col) < block_indent)) {
        ++r;
        ++col;
      }
      if (i < value.size() && (value[i] == '\n' || value[i] == ' ')) ++i;
      continue;
    }
    if (style == kDouble && rc == '\\') {
      r += 2;
      col += 2;
      ++i;
      continue;
    }
    if (style == kSingle && rc == '\'' && r + 1 < text.size() && text[r + 1] == '\'') {
      r += 2;
      col += 2;
      ++i;
      continue;
    }
    ++r;
    ++col;
    ++i;
  }
  return {file, line + 1, col + 1};
}

}  // namespace

std::string JoinSet(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

SourcePos FileCtx::Pos(const YAML::Node& n) const {
  YAML::Mark m = n.Mark();
  if (m.line < 0) m = expanded_from;
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

std::function<SourcePos(size_t)> FileCtx::Locator(const YAML::Node& n) const {
  auto file_copy = file;
  auto text_copy = text;
  YAML::Mark mark = n.Mark();
  if (mark.line < 0) mark = expanded_from;
  // A copy's text is not in the file: point at the rule it was expanded from.
  const bool copied = n.Mark().line < 0;
  std::string value = n.IsScalar() ? n.Scalar() : std::string();
  return [file_copy, text_copy, mark, value, copied](size_t offset) {
    if (copied) return SourcePos{file_copy, mark.line + 1, mark.column + 1};
    return PosInScalar(file_copy, text_copy ? *text_copy : std::string(), mark, value, offset);
  };
}

void FileCtx::Add(LoadCode code, const SourcePos& pos, const std::string& field, std::string message) const {
  LoadDiagnostic d;
  d.code = code;
  d.pos = pos;
  d.playbook = playbook;
  d.rule = rule;
  d.field = field;
  d.message = std::move(message);
  result->Add(std::move(d));
}

FileCtx FileCtx::ForRule(std::string rule_id) const {
  FileCtx ctx = *this;
  ctx.rule = std::move(rule_id);
  return ctx;
}

void FileCtx::Add(LoadCode code, const YAML::Node& n, const std::string& field, std::string message) const {
  Add(code, Pos(n), field, std::move(message));
}

void CheckKeys(const FileCtx& ctx, const YAML::Node& map, const std::set<std::string>& allowed) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.IsScalar() ? it->first.Scalar() : "?";
    if (!allowed.count(key))
      ctx.Add(LoadCode::kUnknownKey, it->first, key, fmt::format(fmt::runtime(msg::kUnknownKey), key, JoinSet(allowed)));
  }
}

bool GetScalar(const FileCtx& ctx, const YAML::Node& parent, const std::string& key, bool required, std::string* out) {
  YAML::Node n = parent[key];
  if (!n) {
    if (required) ctx.Add(LoadCode::kMissingField, parent, key, fmt::format(fmt::runtime(msg::kMissingField), key));
    return false;
  }
  if (!n.IsScalar()) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a string"));
    return false;
  }
  *out = n.Scalar();
  return true;
}

bool GetStringList(const FileCtx& ctx, const YAML::Node& n, const std::string& key, std::vector<std::string>* out) {
  if (n.IsScalar()) {
    out->push_back(n.Scalar());
    return true;
  }
  if (!n.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a list of strings"));
    return false;
  }
  for (const auto& item : n) {
    if (!item.IsScalar()) {
      ctx.Add(LoadCode::kFieldType, item, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a list of strings"));
      return false;
    }
    out->push_back(item.Scalar());
  }
  return true;
}

bool GetBool(const FileCtx& ctx, const YAML::Node& n, const std::string& key, bool* out) {
  const std::optional<bool> value = ScalarAs<bool>(n);
  if (!value) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "true or false"));
    return false;
  }
  *out = *value;
  return true;
}

bool GetNumber(const FileCtx& ctx, const YAML::Node& n, const std::string& key, double* out) {
  const std::optional<double> value = ScalarAs<double>(n);
  if (!value) {
    ctx.Add(LoadCode::kFieldType, n, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a number"));
    return false;
  }
  *out = *value;
  return true;
}

bool ParseYaml(FileCtx& ctx, YAML::Node* root) {
  if (static_cast<int64_t>(ctx.text->size()) > GetLimit(LimitId::kYamlFileBytes)) {
    ctx.Add(LoadCode::kLimit, SourcePos{ctx.file, 0, 0}, "", LimitExceeded(LimitId::kYamlFileBytes, ctx.file).message());
    return false;
  }
  try {
    *root = YAML::Load(*ctx.text);
  } catch (const YAML::ParserException& e) {
    ctx.Add(LoadCode::kYamlParse, SourcePos{ctx.file, e.mark.line + 1, e.mark.column + 1}, "",
            fmt::format(fmt::runtime(msg::kYamlParse), e.msg));
    return false;
  }
  if (Status bounded = CheckYamlBounds(*root, ctx.file); !bounded.ok()) {
    ctx.Add(LoadCode::kLimit, SourcePos{ctx.file, 0, 0}, "", bounded.message());
    return false;
  }
  return true;
}

}  // namespace diagnose::playbook
