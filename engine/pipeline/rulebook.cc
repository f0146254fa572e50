#include "engine/pipeline/rulebook.h"

#include <filesystem>

#include "engine/playbook/loader.h"

namespace diagnose {

StatusOr<std::shared_ptr<const Rulebook>> LoadRulebook(
    const std::string& data_dir, const std::vector<std::string>& playbook_dirs,
    const std::function<void(const RulesBeforePlaybooks&)>& parsed_before_playbooks) {
  namespace fs = std::filesystem;
  const fs::path rules = fs::path(data_dir) / "rules";
  auto book = std::make_shared<Rulebook>();
  book->data_dir = data_dir;
  // What triage and discovery read is parsed (and handed over) before the sweep decisions, which
  // only the end of a diagnosis reads; a file that does not load is still reported in the order
  // decisions, signatures, discovery, playbooks.
  Status before_decisions = Status::Ok();
  if (auto signatures = LoadSignatureTable((rules / "triage" / "failure-signatures.yaml").string()); signatures.ok())
    book->signatures = std::move(signatures).value();
  else
    before_decisions = signatures.status();
  if (before_decisions.ok()) {
    if (auto discovery = LoadDiscoveryRules((rules / "discovery.yaml").string()); discovery.ok())
      book->discovery = std::move(discovery).value();
    else
      before_decisions = discovery.status();
  }
  if (before_decisions.ok() && parsed_before_playbooks)
    parsed_before_playbooks({std::shared_ptr<const SignatureTable>(book, &book->signatures),
                             std::shared_ptr<const DiscoveryRules>(book, &book->discovery)});
  ASSIGN_OR_RETURN(book->decisions, LoadDecisionRules(data_dir));
  RETURN_IF_ERROR(before_decisions);
  playbook::LoadResult load;
  for (const auto& dir : playbook_dirs)
    if (std::error_code ec; !fs::is_directory(dir, ec)) return NotFoundError("--playbooks " + dir + ": not a directory");
  book->library = playbook::LoadLibraryDir(data_dir, &load, playbook_dirs);
  for (const auto& d : load.diagnostics())
    if (!d.warning()) return InvalidArgumentError("invalid playbook: " + d.ToString());
  return std::shared_ptr<const Rulebook>(std::move(book));
}

}  // namespace diagnose
