// Loads and validates playbook and shared-rule files. Every problem of a file is collected (not
// only the first) with file:line:col, the playbook, the rule id and the field; the loader never
// throws across this API.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/playbook/messages.h"
#include "engine/playbook/playbook.h"

namespace diagnose::playbook {

struct LoadDiagnostic {
  LoadCode code = LoadCode::kBadValue;
  SourcePos pos;
  std::string playbook;   // "" for shared-rule files
  std::string rule;       // "" when not inside a rule
  std::string field;
  std::string message;
  bool warning() const { return IsWarning(code); }
  // `file:line:col: playbook "p", rule "r": message`
  std::string ToString() const;
};

class LoadResult {
 public:
  void Add(LoadDiagnostic d) { diagnostics_.push_back(std::move(d)); }
  const std::vector<LoadDiagnostic>& diagnostics() const { return diagnostics_; }
  bool ok() const;                    // no errors (warnings allowed)
  int errors() const;
  int warnings() const;
  std::vector<LoadDiagnostic> ForFile(const std::string& file) const;
  nlohmann::json AsJson() const;

 private:
  std::vector<LoadDiagnostic> diagnostics_;
};

class Loader {
 public:
  // Shared rules and thresholds (rules/common/*.yaml). Load these before the playbooks using them.
  void LoadCommonFile(const std::string& path);
  // Several shared files: thresholds of all of them are known before any rule is checked, so a
  // rule may use a threshold defined in a file that sorts after it.
  void LoadCommonFiles(const std::vector<std::string>& paths);
  void LoadCommonText(const std::string& text, const std::string& name);
  void LoadPlaybookFile(const std::string& path);
  void LoadPlaybookText(const std::string& text, const std::string& name);
  // A file that has a top-level `playbook:` key is a playbook, otherwise a rules file.
  void LoadAnyFile(const std::string& path);

  const LoadResult& result() const { return result_; }
  const Library& library() const { return library_; }
  Library TakeLibrary() { return std::move(library_); }

 private:
  LoadResult result_;
  Library library_;
};

// The *.yaml and *.yml regular files directly in `dir` (a symlink to one included), sorted by name;
// none when it is not a directory. What LoadLibraryDir loads from each of its dirs, and so what
// `lint --playbooks DIR` lints.
std::vector<std::string> YamlFilesIn(const std::string& dir);

// Loads <data_dir>/rules/common/*.yaml then <data_dir>/playbooks/*.yaml (not recursive: tests and
// examples live in subdirectories). Files sorted by name so order is deterministic.
// `overlay_dirs`: more playbooks, loaded after the data dir's (`--playbooks DIR`).
Library LoadLibraryDir(const std::string& data_dir, LoadResult* result,
                       const std::vector<std::string>& overlay_dirs = {});

// True when the file's top level has a `playbook:` key (or is not valid YAML: the playbook loader
// then reports the parse error with its position).
bool LooksLikePlaybook(const std::string& path);

// Where rules/ and playbooks/ live: $DIAGNOSE_DATA_DIR, else the source tree the binary was built
// from.
std::string PlaybookDataDir();

// YAML files under `path` (a file, or a directory searched recursively), sorted; test files
// (*.test.yaml) are excluded.
std::vector<std::string> FindYamlFiles(const std::string& path, bool include_tests);

}  // namespace diagnose::playbook
