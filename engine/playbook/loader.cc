// Collect stage: which files are loaded in what order, and each file taken through read then check
// (rule_reader.cc, rule_checker.cc); the public API of loader.h.
#include "engine/playbook/loader.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "engine/core/bounded_regex.h"
#include "engine/core/bounded_yaml.h"
#include "engine/core/data_dir.h"
#include "engine/core/limits.h"
#include "engine/core/utf8.h"
#include "engine/playbook/loader_internal.h"

namespace diagnose::playbook {
namespace {

namespace fs = std::filesystem;

}  // namespace

namespace internal {
namespace {

const std::set<std::string> kPlaybookKeys = {"playbook", "description", "triggers", "params",
                                             "windows", "macros", "rules", "precedence"};
const std::set<std::string> kRulesFileKeys = {"rules", "thresholds", "gpu_models", "macros", "windows", "description"};

const std::regex& PlaybookIdPattern() {
  static const std::regex re("^[a-z0-9][a-z0-9-]*$");
  return re;
}

std::shared_ptr<const std::string> ReadText(const std::string& path, LoadResult* result) {
  auto text = ReadYamlFile(path);
  if (!text.ok()) {
    const bool limit = text.status().code() == StatusCode::kResourceExhausted;
    result->Add({limit ? LoadCode::kLimit : LoadCode::kFileRead, {path, 0, 0}, "", "", "",
                 limit ? text.status().message() : fmt::format(fmt::runtime(msg::kFileRead), text.status().message())});
    return nullptr;
  }
  return std::make_shared<const std::string>(std::move(text).value());
}

// rules/common `windows:`. Loaded for every shared file before any rule, so a rule may use a window
// of a file loaded after its own.
void LoadSharedWindows(const FileCtx& ctx, const YAML::Node& root, Library* library) {
  if (YAML::Node windows = root["windows"]) {
    if (!windows.IsMap()) {
      ctx.Add(LoadCode::kFieldType, windows, "windows", fmt::format(fmt::runtime(msg::kFieldType), "windows", "a map"));
    } else {
      for (auto it = windows.begin(); it != windows.end(); ++it) {
        auto w = ParseWindow(ctx, it->first.Scalar(), it->second);
        if (!w) continue;
        if (const WindowSpec* prev = library->FindSharedWindow(w->name)) {
          ctx.Add(LoadCode::kDuplicateId, it->first, "windows", fmt::format(fmt::runtime(msg::kDuplicateId), w->name, prev->pos.ToString()));
          continue;
        }
        // Shared windows read the context and the windows before them, never rules.
        Scope no_rules;
        no_rules.library = library;
        no_rules.allow_rules = false;
        std::set<std::string> ignored;
        for (const auto* e : {&w->start, &w->end, &w->list}) CheckExpr(ctx, no_rules, *e, "windows." + w->name, &ignored);
        library->shared_windows.push_back(std::move(*w));
      }
    }
  }
}

// rules/common `gpu_models:`: each GPU model's rated levels (a map of positive numbers per model
// name: a rule divides by sclk_rated_mhz, and no level of a GPU is zero or negative), readable as
// thresholds.gpu_models.<model>.<level> (or thresholds.gpu_models[name]). Several files may hold
// the table: they merge model by model, a later file (in load order) adding models and replacing
// the levels it names, keeping the others.
void LoadGpuModels(FileCtx& ctx, const YAML::Node& models, Library* library) {
  const char* what = "a map of GPU model names to maps of numbers";
  if (!models.IsMap()) {
    ctx.Add(LoadCode::kFieldType, models, "gpu_models", fmt::format(fmt::runtime(msg::kFieldType), "gpu_models", what));
    return;
  }
  nlohmann::json table = nlohmann::json::object();
  for (auto model = models.begin(); model != models.end(); ++model) {
    const std::string name = model->first.Scalar();
    if (!model->second.IsMap()) {
      ctx.Add(LoadCode::kFieldType, model->second, "gpu_models." + name, fmt::format(fmt::runtime(msg::kFieldType), "gpu_models." + name, "a map of numbers"));
      continue;
    }
    nlohmann::json levels = nlohmann::json::object();
    for (auto level = model->second.begin(); level != model->second.end(); ++level) {
      double v = 0;
      const std::string key = "gpu_models." + name + "." + level->first.Scalar();
      if (!GetNumber(ctx, level->second, key, &v)) continue;
      if (v <= 0) {
        ctx.Add(LoadCode::kFieldType, level->second, key, fmt::format(fmt::runtime(msg::kFieldType), key, "a positive number"));
        continue;
      }
      levels[level->first.Scalar()] = v;
    }
    table[name] = std::move(levels);
  }
  nlohmann::json& merged = library->thresholds["gpu_models"];
  if (!merged.is_object()) merged = nlohmann::json::object();
  for (auto& [name, levels] : table.items()) {
    if (!merged[name].is_object()) merged[name] = nlohmann::json::object();
    merged[name].update(levels);
  }
}

void LoadCommonRoot(FileCtx& ctx, const YAML::Node& root, Library* library, bool windows_loaded) {
  if (!root.IsMap()) {
    ctx.Add(LoadCode::kFieldType, root, "", fmt::format(fmt::runtime(msg::kFieldType), "(file)", "a map with 'rules' and/or 'thresholds'"));
    return;
  }
  CheckKeys(ctx, root, kRulesFileKeys);
  if (YAML::Node th = root["thresholds"]) {
    if (!th.IsMap()) {
      ctx.Add(LoadCode::kFieldType, th, "thresholds", fmt::format(fmt::runtime(msg::kFieldType), "thresholds", "a map of numbers"));
    } else {
      for (auto it = th.begin(); it != th.end(); ++it) {
        double v = 0;
        if (GetNumber(ctx, it->second, "thresholds." + it->first.Scalar(), &v)) library->thresholds[it->first.Scalar()] = v;
      }
    }
  }
  if (YAML::Node models = root["gpu_models"]) LoadGpuModels(ctx, models, library);
  if (!windows_loaded) LoadSharedWindows(ctx, root, library);
  size_t first_macro = library->common_macros.size();
  if (YAML::Node macros = root["macros"]) {
    for (auto& b : ParseBindings(ctx, macros, "macros")) {
      for (const auto& prev : library->common_macros)
        if (prev.name == b.name)
          ctx.Add(LoadCode::kDuplicateId, b.expr.pos, "macros", fmt::format(fmt::runtime(msg::kDuplicateId), b.name, prev.expr.pos.ToString()));
      library->common_macros.push_back(std::move(b));
    }
  }
  // Shared macros see the shared rules loaded so far and the macros before them.
  auto check_macros = [&] {
    // Shared macros are read in every playbook's scope, where a bare id is that playbook's rule:
    // they name shared rules as `common.<id>`.
    Scope scope;
    scope.library = library;
    std::vector<Binding> mine(std::make_move_iterator(library->common_macros.begin() + first_macro),
                              std::make_move_iterator(library->common_macros.end()));
    library->common_macros.resize(first_macro);
    scope.common_macros_visible = first_macro;
    Scope own = scope;
    own.lets = &mine;
    CheckBindings(ctx, own, &mine, &own.lets_visible, "macros");
    for (auto& b : mine) library->common_macros.push_back(std::move(b));
  };
  YAML::Node rules = root["rules"];
  if (!rules) {
    check_macros();
    return;
  }
  if (!rules.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, rules, "rules", fmt::format(fmt::runtime(msg::kFieldType), "rules", "a list"));
    return;
  }
  size_t first_new = library->common_rules.size();
  std::vector<RuleNode> parsed;
  for (const auto& [rn, expanded_from] : ExpandForEach(ctx, rules)) {
    RuleSpec rule;
    ctx.expanded_from = expanded_from;
    if (!ParseRule(ctx, rn, "", &rule)) continue;
    if (const RuleSpec* prev = library->FindCommonRule(rule.id)) {
      ctx.Add(LoadCode::kDuplicateId, rn["id"], "id", fmt::format(fmt::runtime(msg::kDuplicateId), rule.id, prev->pos.ToString()));
      continue;
    }
    library->common_rules.push_back(std::move(rule));
    parsed.push_back({rn, expanded_from});
  }
  ctx.expanded_from = YAML::Mark::null_mark();
  check_macros();
  Scope scope;
  scope.library = library;
  scope.local_rules = &library->common_rules;
  for (size_t i = first_new; i < library->common_rules.size(); ++i) {
    auto& rule = library->common_rules[i];
    // Shared rules reference each other as bare ids or `common.<id>`.
    CheckRuleRefs(ctx, scope, &rule);
    const RuleNode& written = parsed[i - first_new];
    ctx.expanded_from = written.expanded_from;
    if (rule.kind == RuleKind::kQuery) CheckQueryTemplate(ctx, scope, &rule, written.node["query"]);
    ctx.expanded_from = YAML::Mark::null_mark();
  }
  ctx.rule.clear();
  CheckCycles(ctx, library->common_rules);
}

// The playbook's `rules` list, for_each expanded; a rule that does not parse or repeats an id is
// reported and left out. Returns the YAML each kept rule was read from, in the same order.
std::vector<RuleNode> ParsePlaybookRules(FileCtx& ctx, const YAML::Node& root, PlaybookSpec* pb) {
  YAML::Node rules = root["rules"];
  std::vector<RuleNode> rule_nodes;
  if (!rules) {
    ctx.Add(LoadCode::kMissingField, root, "rules", fmt::format(fmt::runtime(msg::kMissingField), "rules"));
    return rule_nodes;
  }
  if (!rules.IsSequence()) {
    ctx.Add(LoadCode::kFieldType, rules, "rules", fmt::format(fmt::runtime(msg::kFieldType), "rules", "a list"));
    return rule_nodes;
  }
  for (const auto& [rn, expanded_from] : ExpandForEach(ctx, rules)) {
    RuleSpec rule;
    ctx.expanded_from = expanded_from;
    if (!ParseRule(ctx, rn, pb->id, &rule)) {
      ctx.rule.clear();
      continue;
    }
    if (const RuleSpec* prev = pb->FindRule(rule.id)) {
      ctx.Add(LoadCode::kDuplicateId, rn["id"], "id", fmt::format(fmt::runtime(msg::kDuplicateId), rule.id, prev->pos.ToString()));
      ctx.rule.clear();
      continue;
    }
    pb->rules.push_back(std::move(rule));
    rule_nodes.push_back({rn, expanded_from});
    ctx.rule.clear();
  }
  ctx.expanded_from = YAML::Mark::null_mark();
  return rule_nodes;
}

// Reference and type pass: every rule is known now, so forward references work. Triggers, windows
// and params may not name rules; macros and rules may; no rule may share a shared macro's name.
void CheckPlaybookReferences(FileCtx& ctx, Library* library, const std::vector<RuleNode>& rule_nodes, PlaybookSpec* pb) {
  Scope scope;
  scope.library = library;
  scope.playbook = pb;
  scope.local_rules = &pb->rules;
  Scope no_rules = scope;
  no_rules.allow_rules = false;
  std::set<std::string> ignored;
  for (auto& t : pb->triggers) CheckExpr(ctx, no_rules, t.when, "triggers.when", &ignored);
  for (auto& [k, w] : pb->windows) {
    if (library->FindSharedWindow(k))
      ctx.Add(LoadCode::kDuplicateId, w.pos, "windows." + k, fmt::format(fmt::runtime(msg::kDuplicateId), k, library->FindSharedWindow(k)->pos.ToString()));
    CheckExpr(ctx, no_rules, w.start, "windows." + k + ".start", &ignored);
    CheckExpr(ctx, no_rules, w.end, "windows." + k + ".end", &ignored);
    CheckExpr(ctx, no_rules, w.list, "windows." + k + ".list", &ignored);
  }
  for (auto& [k, p] : pb->params) CheckExpr(ctx, no_rules, p.expr, "params." + k, &ignored);
  CheckBindings(ctx, scope, &pb->macros, &scope.playbook_macros_visible, "macros");
  for (const auto& r : pb->rules)
    for (const auto& m : library->common_macros)
      if (m.name == r.id) {
        ctx.rule = r.id;
        ctx.Add(LoadCode::kDuplicateId, r.pos, "id",
                fmt::format(fmt::runtime(msg::kBindingHides), "id", r.id, "the shared macro at " + m.expr.pos.ToString()));
      }
  ctx.rule.clear();
  for (size_t i = 0; i < pb->rules.size(); ++i) {
    CheckRuleRefs(ctx, scope, &pb->rules[i]);
    ctx.expanded_from = rule_nodes[i].expanded_from;
    if (pb->rules[i].kind == RuleKind::kQuery) CheckQueryTemplate(ctx, scope, &pb->rules[i], rule_nodes[i].node["query"]);
    ctx.expanded_from = YAML::Mark::null_mark();
  }
  ctx.rule.clear();
  CheckCycles(ctx, pb->rules);
}

// Unused rules: nothing references them and they report nothing themselves.
void ReportUnusedRules(FileCtx& ctx, const PlaybookSpec& pb) {
  std::set<std::string> referenced;
  for (const auto& r : pb.rules) {
    referenced.insert(r.needs.begin(), r.needs.end());
    referenced.insert(r.after.begin(), r.after.end());   // read by a verdict's onset
  }
  for (const auto& r : pb.rules) {
    if (r.kind == RuleKind::kVerdict || r.finding || referenced.count(r.qualified_id)) continue;
    ctx.rule = r.id;
    ctx.Add(LoadCode::kUnusedRule, r.pos, "id", fmt::format(fmt::runtime(msg::kUnusedRule), r.id));
  }
  ctx.rule.clear();
}

// `precedence` names verdicts only; verdicts missing from it follow in file order.
void ReadPrecedence(FileCtx& ctx, const YAML::Node& root, PlaybookSpec* pb) {
  if (YAML::Node prec = root["precedence"]) {
    std::vector<std::string> ids;
    GetStringList(ctx, prec, "precedence", &ids);
    for (const auto& id : ids) {
      const RuleSpec* r = pb->FindRule(id);
      if (!r || r->kind != RuleKind::kVerdict)
        ctx.Add(LoadCode::kUnknownReference, prec, "precedence", fmt::format(fmt::runtime(msg::kPrecedenceNotVerdict), id));
      else
        pb->precedence.push_back(id);
    }
  }
  for (const auto& r : pb->rules)
    if (r.kind == RuleKind::kVerdict && std::find(pb->precedence.begin(), pb->precedence.end(), r.id) == pb->precedence.end())
      pb->precedence.push_back(r.id);
}

void LoadPlaybook(LoadResult* result, Library* library, std::shared_ptr<const std::string> text, const std::string& name) {
  FileCtx ctx;
  ctx.file = name;
  ctx.text = text;
  ctx.result = result;
  YAML::Node root;
  if (!ParseYaml(ctx, &root)) return;
  if (!root.IsMap()) {
    ctx.Add(LoadCode::kFieldType, root, "", fmt::format(fmt::runtime(msg::kFieldType), "(file)", "a map with 'playbook'"));
    return;
  }
  PlaybookSpec pb;
  pb.file = name;
  pb.pos = ctx.Pos(root);
  CheckKeys(ctx, root, kPlaybookKeys);
  if (!GetScalar(ctx, root, "playbook", true, &pb.id)) return;
  ctx.playbook = pb.id;
  if (!BoundedRegexMatch(pb.id, PlaybookIdPattern()))
    ctx.Add(LoadCode::kBadValue, root["playbook"], "playbook", fmt::format(fmt::runtime(msg::kBadValue), "playbook", pb.id, "[a-z0-9-]+"));
  if (const PlaybookSpec* prev = library->FindPlaybook(pb.id)) {
    ctx.Add(LoadCode::kDuplicateId, root["playbook"], "playbook", fmt::format(fmt::runtime(msg::kDuplicateId), pb.id, prev->pos.ToString()));
    return;
  }
  GetScalar(ctx, root, "description", true, &pb.description);
  if (YAML::Node params = root["params"]) pb.params = ParseParams(ctx, params);
  if (YAML::Node windows = root["windows"]) {
    if (!windows.IsMap()) {
      ctx.Add(LoadCode::kFieldType, windows, "windows", fmt::format(fmt::runtime(msg::kFieldType), "windows", "a map"));
    } else {
      for (auto it = windows.begin(); it != windows.end(); ++it)
        if (auto w = ParseWindow(ctx, it->first.Scalar(), it->second)) pb.windows[w->name] = std::move(*w);
    }
  }
  if (YAML::Node macros = root["macros"]) pb.macros = ParseBindings(ctx, macros, "macros");
  if (YAML::Node triggers = root["triggers"]) pb.triggers = ParseTriggers(ctx, triggers);
  const std::vector<RuleNode> rule_nodes = ParsePlaybookRules(ctx, root, &pb);
  CheckPlaybookReferences(ctx, library, rule_nodes, &pb);
  ReportUnusedRules(ctx, pb);
  ReadPrecedence(ctx, root, &pb);
  library->playbooks.push_back(std::move(pb));
}

void LoadCommon(LoadResult* result, Library* library, std::shared_ptr<const std::string> text, const std::string& name) {
  FileCtx ctx;
  ctx.file = name;
  ctx.text = std::move(text);
  ctx.result = result;
  YAML::Node root;
  if (ParseYaml(ctx, &root)) LoadCommonRoot(ctx, root, library, false);
}

}  // namespace
}  // namespace internal

std::string LoadDiagnostic::ToString() const {
  std::string out = pos.ToString() + ": ";
  if (!playbook.empty()) out += "playbook \"" + playbook + "\", ";
  if (!rule.empty()) out += "rule \"" + rule + "\": ";
  else if (!playbook.empty()) out.replace(out.size() - 2, 2, ": ");
  out += std::string(warning() ? "warning: " : "") + message;
  return out;
}

bool LoadResult::ok() const { return errors() == 0; }

int LoadResult::errors() const {
  int n = 0;
  for (const auto& d : diagnostics_) n += d.warning() ? 0 : 1;
  return n;
}

int LoadResult::warnings() const {
  return static_cast<int>(diagnostics_.size()) - errors();
}

std::vector<LoadDiagnostic> LoadResult::ForFile(const std::string& file) const {
  std::vector<LoadDiagnostic> out;
  for (const auto& d : diagnostics_)
    if (d.pos.file == file) out.push_back(d);
  std::stable_sort(out.begin(), out.end(), [](const LoadDiagnostic& a, const LoadDiagnostic& b) {
    return a.pos.line != b.pos.line ? a.pos.line < b.pos.line : a.pos.col < b.pos.col;
  });
  return out;
}

nlohmann::json LoadResult::AsJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : diagnostics_) {
    // Names and messages quote the file's own bytes, which need not be UTF-8.
    out.push_back({{"file", ValidUtf8(d.pos.file)}, {"line", d.pos.line}, {"col", d.pos.col},
                   {"severity", d.warning() ? "warning" : "error"}, {"code", LoadCodeName(d.code)},
                   {"playbook", ValidUtf8(d.playbook)}, {"rule", ValidUtf8(d.rule)}, {"field", ValidUtf8(d.field)},
                   {"message", ValidUtf8(d.message)}});
  }
  return out;
}

void Loader::LoadCommonFile(const std::string& path) { LoadCommonFiles({path}); }

void Loader::LoadCommonFiles(const std::vector<std::string>& paths) {
  std::vector<std::pair<internal::FileCtx, YAML::Node>> files;
  for (const auto& path : paths) {
    auto text = internal::ReadText(path, &result_);
    if (!text) continue;
    internal::FileCtx ctx;
    ctx.file = path;
    ctx.text = text;
    ctx.result = &result_;
    YAML::Node root;
    if (internal::ParseYaml(ctx, &root)) files.emplace_back(std::move(ctx), root);
  }
  // Every file's thresholds first: a shared window or rule may use one another file defines.
  for (auto& [ctx, root] : files) {
    if (!root.IsMap() || !root["thresholds"] || !root["thresholds"].IsMap()) continue;
    for (auto it = root["thresholds"].begin(); it != root["thresholds"].end(); ++it) {
      // One that is not a number is reported with its position when the file's rules are loaded below.
      if (const std::optional<double> value = ScalarAs<double>(it->second))
        library_.thresholds[it->first.Scalar()] = *value;
    }
  }
  // The GPU model table is known to every file's rules too; its levels are read (and reported)
  // with the file that holds it.
  for (auto& [ctx, root] : files)
    if (root.IsMap() && root["gpu_models"]) library_.thresholds["gpu_models"] = nlohmann::json::object();
  for (auto& [ctx, root] : files)
    if (root.IsMap()) internal::LoadSharedWindows(ctx, root, &library_);
  for (auto& [ctx, root] : files) internal::LoadCommonRoot(ctx, root, &library_, true);
}

void Loader::LoadCommonText(const std::string& text, const std::string& name) {
  internal::LoadCommon(&result_, &library_, std::make_shared<const std::string>(text), name);
}

void Loader::LoadPlaybookFile(const std::string& path) {
  auto text = internal::ReadText(path, &result_);
  if (!text) return;
  internal::LoadPlaybook(&result_, &library_, text, path);
}

void Loader::LoadPlaybookText(const std::string& text, const std::string& name) {
  internal::LoadPlaybook(&result_, &library_, std::make_shared<const std::string>(text), name);
}

void Loader::LoadAnyFile(const std::string& path) {
  auto text = internal::ReadText(path, &result_);
  if (!text) return;
  // Unparsable or past a limit: the playbook loader reports it with its position.
  StatusOr<YAML::Node> root = LoadBoundedYaml(*text, path);
  const bool is_playbook = !root.ok() || (root->IsMap() && (*root)["playbook"]);
  if (is_playbook) internal::LoadPlaybook(&result_, &library_, text, path);
  else internal::LoadCommon(&result_, &library_, text, path);
}

std::vector<std::string> FindYamlFiles(const std::string& path, bool include_tests) {
  std::vector<std::string> out;
  auto is_yaml = [&](const fs::path& p) {
    std::string name = p.filename().string();
    bool yaml = p.extension() == ".yaml" || p.extension() == ".yml";
    bool test = name.find(".test.") != std::string::npos;
    return yaml && (include_tests ? test : !test);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      if (it->is_regular_file() && is_yaml(it->path())) out.push_back(it->path().string());
    }
  } else {
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool LooksLikePlaybook(const std::string& path) {
  StatusOr<YAML::Node> root = LoadBoundedYamlFile(path);
  return !root.ok() || (root->IsMap() && (*root)["playbook"]);
}

std::string PlaybookDataDir() { return DefaultDataDir(); }

std::vector<std::string> YamlFilesIn(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  if (!fs::is_directory(dir, ec)) return files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Library LoadLibraryDir(const std::string& data_dir, LoadResult* result, const std::vector<std::string>& overlay_dirs) {
  Loader loader;
  loader.LoadCommonFiles(YamlFilesIn(data_dir + "/rules/common"));
  for (const auto& f : YamlFilesIn(data_dir + "/playbooks")) loader.LoadPlaybookFile(f);
  for (const auto& dir : overlay_dirs)
    for (const auto& f : YamlFilesIn(dir)) loader.LoadPlaybookFile(f);
  for (const auto& d : loader.result().diagnostics()) result->Add(d);
  return loader.TakeLibrary();
}


}  // namespace diagnose::playbook
