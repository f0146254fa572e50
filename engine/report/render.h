// Human renderings of a diagnose/v1 Report: text for terminals, Markdown, and one self-contained
// HTML file. They read only the Report (and the per-job triage facts in report.facts when present);
// JSON is ToJson() in report.h.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/report/report.h"

namespace diagnose {

struct RenderOptions {
  bool color = false;   // ANSI colours in text (a TTY)
};

std::string RenderText(const Report& report, const RenderOptions& options = {});
std::string RenderMarkdown(const Report& report);
std::string RenderHtml(const Report& report);

// format: text | md | json | html; kInvalidArgument naming the format otherwise.
StatusOr<std::string> RenderReport(const Report& report, const std::string& format,
                                   const RenderOptions& options = {});

// HTML-escapes & < > " '.
std::string HtmlEscape(const std::string& text);

}  // namespace diagnose
