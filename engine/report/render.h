// Human renderings of a diagnose/v1 Report: text for terminals, Markdown, and one self-contained
// HTML file. They read only the Report (and the per-job triage facts in report.facts when present);
// JSON is ToJson() in report.h.
#pragma once

#include <string>

#include "engine/core/status.h"
#include "engine/report/report.h"

namespace diagnose {

struct RenderOptions {
  bool color = false;     // ANSI colours in text (a TTY without NO_COLOR)
  bool verbose = false;   // text/md: after the first screen, every check with its evidence
};

// The first screen (first_screen.h); with `verbose`, followed by the full listing.
std::string RenderText(const Report& report, const RenderOptions& options = {});
// The first screen and a table of exclusions, for tickets and chat; no evidence dumps.
std::string RenderMarkdown(const Report& report, const RenderOptions& options = {});
// One self-contained file with the charts (html_report.h).
std::string RenderHtml(const Report& report);
// The full listing: every job fact, finding and evidence line (text --verbose, HTML details).
std::string RenderFullListing(const Report& report, const std::string& format, bool color = false);

// format: text | md | json | html; kInvalidArgument naming the format otherwise.
StatusOr<std::string> RenderReport(const Report& report, const std::string& format,
                                   const RenderOptions& options = {});

// HTML-escapes & < > " ', and writes a control character as ? (WithoutControls).
std::string HtmlEscape(const std::string& text);

}  // namespace diagnose
