#include "engine/profile/kernel_families.h"

#include <optional>

#include "engine/core/bounded_regex.h"
#include "engine/core/bounded_yaml.h"

namespace diagnose::profile {

namespace {

std::string At(const std::string& source, const YAML::Node& node) {
  return source + ":" + std::to_string(node.Mark().line + 1) + ":" + std::to_string(node.Mark().column + 1);
}

StatusOr<std::regex> CompileRegex(const YAML::Node& node, const std::string& source, const std::string& key) {
  try {
    return std::regex(node.as<std::string>(), std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return InvalidArgumentError(At(source, node) + ": " + key + " is not a valid regex: " + e.what());
  }
}

StatusOr<KernelFamilies> Build(const YAML::Node& root, const std::string& source) {
  KernelFamilies result;
  result.source = source;
  const YAML::Node list = root["families"];
  if (!list || !list.IsSequence()) return InvalidArgumentError(source + ": expected a `families:` list");
  for (const auto& entry : list) {
    if (!entry.IsMap()) return InvalidArgumentError(At(source, entry) + ": a family is a mapping");
    for (const char* key : {"id", "label", "match", "kind"})
      if (!entry[key] || !entry[key].IsScalar())
        return InvalidArgumentError(At(source, entry) + ": family without `" + key + "`");
    KernelFamily family;
    family.id = entry["id"].as<std::string>();
    family.label = entry["label"].as<std::string>();
    family.match_text = entry["match"].as<std::string>();
    ASSIGN_OR_RETURN(family.match, CompileRegex(entry["match"], source, "match"));
    if (entry["exclude"]) {
      ASSIGN_OR_RETURN(std::regex exclude, CompileRegex(entry["exclude"], source, "exclude"));
      family.exclude = std::move(exclude);
    }
    const std::string kind = entry["kind"].as<std::string>();
    if (kind == "compute") family.kind = KernelKind::kCompute;
    else if (kind == "communication") family.kind = KernelKind::kCommunication;
    else
      return InvalidArgumentError(At(source, entry["kind"]) + ": kind must be compute or communication, not '" +
                                  kind + "'");
    family.itemise = entry["itemise"] && entry["itemise"].as<bool>();
    if (entry["remedy"]) family.remedy = entry["remedy"].as<std::string>();
    if (family.id == kOtherFamilyId)
      return InvalidArgumentError(At(source, entry) + ": '" + family.id + "' is the implicit catch-all");
    for (const auto& earlier : result.families)
      if (earlier.id == family.id) return InvalidArgumentError(At(source, entry) + ": duplicate id '" + family.id + "'");
    result.families.push_back(std::move(family));
  }
  return result;
}

}  // namespace

size_t KernelFamilies::Classify(std::string_view kernel) const {
  for (size_t i = 0; i < families.size(); ++i) {
    const auto& f = families[i];
    if (!BoundedRegexSearch(kernel, f.match)) continue;
    if (f.exclude && BoundedRegexSearch(kernel, *f.exclude)) continue;
    return i;
  }
  return families.size();
}

const std::string& KernelFamilies::LabelOf(size_t family) const {
  static const std::string kOther = "other kernels";
  return family < families.size() ? families[family].label : kOther;
}

KernelKind KernelFamilies::KindOf(size_t family) const {
  return family < families.size() ? families[family].kind : KernelKind::kCompute;
}

StatusOr<KernelFamilies> ParseKernelFamilies(const std::string& yaml_text, const std::string& source) {
  ASSIGN_OR_RETURN(const YAML::Node root, LoadBoundedYaml(yaml_text, source));
  try {
    return Build(root, source);
  } catch (const YAML::Exception& e) {
    return ParseError(source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": " + e.msg);
  }
}

StatusOr<KernelFamilies> LoadKernelFamilies(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadYamlFile(path));
  return ParseKernelFamilies(text, path);
}

std::string KernelFamiliesPath(const std::string& data_dir) { return data_dir + "/rules/profile/kernel-families.yaml"; }

}  // namespace diagnose::profile
