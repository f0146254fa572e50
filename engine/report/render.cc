#include "engine/report/render.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "engine/core/text.h"
#include "engine/core/utf8.h"
#include "engine/report/first_screen.h"
#include "engine/report/html_report.h"

namespace diagnose {

namespace {

// The three renderers share one walk over the report; a Sink decides the markup.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void Title(const std::string& t) = 0;
  virtual void Section(const std::string& t) = 0;
  virtual void KeyValue(const std::string& k, const std::string& v, bool emphasize = false) = 0;
  virtual void Table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) = 0;
  virtual void Bullet(const std::string& text, const std::string& quote = "") = 0;
  virtual std::string Finish() = 0;
};

std::string Num(double v, int prec = 1) { return FixedDecimal(v, prec); }

std::string EvidenceLine(const Evidence& e) {
  std::string where = e.role == JobRole::kBaseline ? "(baseline) " + e.query : e.query;
  if (e.kind == EvidenceKind::kPromql && e.window) where += " " + IsoWindow(*e.window);
  return where;
}

// What triage measured about one job, beneath its headline.
void JobFactLines(const JobEntry& job, const JobFacts& facts, Sink* s) {
  const Progress& p = facts.progress;
  if (p.step_time_seconds > 0) {
    std::string line = "step time " + Num(p.step_time_seconds, 2) + " s, sum of step times " +
                       Num(p.sum_step_seconds, 0) + " s";
    // The gap is wall - sum(step seconds) - setup allowance: at or below zero the wall is explained.
    if (p.unexplained_gap_seconds) {
      const double gap = *p.unexplained_gap_seconds;
      line += gap > 0 ? ", unexplained gap " + Num(gap, 0) + " s" : ", no unexplained stall";
    }
    // Progress lost and time remaining only mean something for a job that did not finish.
    const bool finished = job.status == JobStatus::kCompleted;
    if (!finished && p.last_checkpoint_step)
      line += ", last checkpoint " + std::to_string(*p.last_checkpoint_step) + " (lost " +
              (p.progress_lost_steps ? std::to_string(*p.progress_lost_steps) : "null") + " steps)";
    if (!finished && p.remaining_seconds) line += ", remaining " + Num(*p.remaining_seconds / 3600.0, 1) + " h";
    s->KeyValue("progress", line);
  }
  const TgsAnalysis& tgs = facts.tgs;
  std::string head = tgs.pattern + ", steady " + Num(tgs.steady_tgs, 0) + ", recent " + Num(tgs.recent_tgs, 0) + " (" +
                     Num(tgs.degradation_pct, 1) + "% lower)";
  if (tgs.decline_onset_step) head += ", decline from step " + std::to_string(*tgs.decline_onset_step);
  s->KeyValue("TGS", head);
  std::vector<std::vector<std::string>> rows;
  for (const auto& ph : tgs.phases)
    rows.push_back({std::to_string(ph.first_step) + "-" + std::to_string(ph.last_step), Num(ph.mean_tgs, 1),
                    Num(ph.stddev_tgs, 1)});
  if (!rows.empty()) s->Table({"steps", "mean TGS", "stddev"}, rows);
  if (!tgs.spike_steps.empty()) s->KeyValue("step-time spikes", nlohmann::json(tgs.spike_steps).dump());
  const HeartbeatFacts& hb = facts.heartbeat;
  if (hb.present) {
    std::string line = "accused tasks " + nlohmann::json(hb.accused_tasks).dump() + " on " +
                       nlohmann::json(hb.accused_hosts).dump() + ", self-reported death " +
                       nlohmann::json(hb.self_reported_death_tasks).dump();
    if (hb.crash_time)
      line += ", crash " + IsoOf(*hb.crash_time) + " (log " + hb.crash_time->text + ", year from " +
              hb.crash_time->year_source + ")";
    if (hb.heartbeat_stop_time) line += ", heartbeats stopped ~" + IsoOf(*hb.heartbeat_stop_time);
    s->KeyValue("heartbeat", line);
  }
  for (const auto& n : facts.notes) s->Bullet("note: " + n);
}

void Walk(const Report& r, Sink* s, bool with_title = true) {
  if (with_title) s->Title("diagnose report");
  // First, before anything a reader might act on.
  if (r.incomplete) s->KeyValue("INCOMPLETE", *r.incomplete + " (exit status 3; the decision is none)", true);
  for (const auto& job : r.jobs) {
    s->Section("Job " + job.id + (job.role == JobRole::kBaseline ? " (baseline)" : ""));
    s->KeyValue("status", std::string(ToString(job.status)), true);
    s->KeyValue("failure class", job.failure_class.empty() ? "none" : job.failure_class, true);
    if (!job.dir.empty()) s->KeyValue("dir", job.dir);
    if (!job.hosts.empty()) s->KeyValue("hosts", std::to_string(job.hosts.size()) + ": " + PrintableLine(JoinStrings(job.hosts)));
    s->KeyValue("steps", OptionalInt(job.first_step) + " .. " + OptionalInt(job.last_step) + " of " + OptionalInt(job.total_steps));
    if (const JobFacts* facts = FactsOf(r, job.id)) JobFactLines(job, *facts, s);
  }
  s->Section("Verdict");
  s->KeyValue("root cause", r.verdict.root_cause, true);
  s->KeyValue("domain", r.verdict.domain);
  s->KeyValue("confidence", std::string(ToString(r.verdict.confidence)));
  if (!r.verdict.summary.empty()) s->KeyValue("summary", r.verdict.summary);
  if (!r.verdict.refuted.empty())
    s->KeyValue("refuted", JoinStrings(r.verdict.refuted, ", ") + " (the log suggested it; the metrics contradict it)");
  if (!r.verdict.runner_up.empty()) s->KeyValue("runner-up", r.verdict.runner_up);
  if (!r.causal_chain.empty()) s->KeyValue("causal chain", JoinStrings(r.causal_chain, " -> "));
  s->Section("Decision");
  s->KeyValue("action", std::string(ToString(r.decision.action)), true);
  if (const std::string policy = PolicyLine(r.decision); !policy.empty()) s->KeyValue("sweep policy", policy);
  if (!r.decision.root_cause.empty())
    s->KeyValue("acted on", r.decision.root_cause + " (the sweep rules' cause; the diagnosis names none)");
  for (const auto& x : r.decision.exclude)
    s->Bullet("exclude " + PrintableLine(x.host) + " (priority " + std::to_string(x.priority) + "): " + PrintableLine(x.reason));
  for (const auto& [k, v] : r.decision.changes) s->Bullet("change " + k + "=" + v);
  for (const auto& n : r.decision.notes) s->Bullet(n);
  if (!r.findings.empty()) {
    s->Section("Findings");
    for (const auto& f : r.findings) {
      std::string head = "[" + std::string(ToString(f.status)) + "] " + f.id;
      if (!f.hosts.empty()) head += " hosts: " + PrintableLine(JoinStrings(f.hosts));
      if (!f.summary.empty()) head += " - " + PrintableLine(f.summary);
      s->Bullet(head);
      for (const auto& e : f.evidence)
        s->Bullet("  " + std::string(ToString(e.kind)) + " " + EvidenceLine(e), PrintableLine(e.text));
    }
  }
  if (!r.not_evaluated.empty()) {
    s->Section("Not evaluated");
    for (const auto& n : r.not_evaluated) s->Bullet(n);
  }
}

class TextSink : public Sink {
 public:
  explicit TextSink(bool color) : color_(color) {}
  // What the report quotes (an endpoint's error text, a log line) loses its controls before Bold
  // adds the only escapes this sink writes.
  void Title(const std::string& t) override { out_ << Bold(WithoutControls(t)) << "\n"; }
  void Section(const std::string& t) override { out_ << "\n" << Bold("== " + WithoutControls(t) + " ==") << "\n"; }
  void KeyValue(const std::string& k, const std::string& v, bool em) override {
    std::string key = WithoutControls(k) + ":";
    key.resize(std::max<size_t>(key.size(), 18), ' ');
    out_ << "  " << key << (em ? Bold(WithoutControls(v)) : WithoutControls(v)) << "\n";
  }
  void Table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) override {
    std::vector<size_t> w(head.size());
    for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    auto line = [&](const std::vector<std::string>& r) {
      out_ << "    ";
      for (size_t i = 0; i < w.size(); ++i) {
        std::string c = i < r.size() ? WithoutControls(r[i]) : "";
        out_ << c << std::string(w[i] - c.size() + 2, ' ');
      }
      out_ << "\n";
    };
    line(head);
    for (const auto& r : rows) line(r);
  }
  void Bullet(const std::string& text, const std::string& quote) override {
    out_ << "  - " << WithoutControls(text) << "\n";
    if (!quote.empty()) out_ << "      > " << WithoutControls(quote) << "\n";
  }
  std::string Finish() override { return out_.str(); }

 private:
  std::string Bold(const std::string& s) const { return color_ ? "\x1b[1m" + s + "\x1b[0m" : s; }
  bool color_;
  std::ostringstream out_;
};

// A newline is a space here (a playbook's PromQL spans lines); any other control is written visibly.
std::string MdEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>' || c == '[' || c == ']') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return PrintableLine(out);
}

class MarkdownSink : public Sink {
 public:
  void Title(const std::string& t) override { out_ << "# " << MdEscape(t) << "\n"; }
  void Section(const std::string& t) override { out_ << "\n## " << MdEscape(t) << "\n\n"; }
  void KeyValue(const std::string& k, const std::string& v, bool em) override {
    out_ << "- **" << MdEscape(k) << "**: " << (em ? "**" + MdEscape(v) + "**" : MdEscape(v)) << "\n";
  }
  void Table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) override {
    out_ << "\n|";
    for (const auto& h : head) out_ << " " << MdEscape(h) << " |";
    out_ << "\n|";
    for (size_t i = 0; i < head.size(); ++i) out_ << "---|";
    out_ << "\n";
    for (const auto& r : rows) {
      out_ << "|";
      for (const auto& c : r) out_ << " " << MdEscape(c) << " |";
      out_ << "\n";
    }
    out_ << "\n";
  }
  void Bullet(const std::string& text, const std::string& quote) override {
    out_ << "- " << MdEscape(text) << "\n";
    if (!quote.empty()) {
      std::string q = quote;
      for (auto& c : q)
        if (c == '`') c = '\'';
      out_ << "  `" << WithoutControls(q) << "`\n";
    }
  }
  std::string Finish() override { return out_.str(); }

 private:
  std::ostringstream out_;
};

// The full listing inside the HTML report's <details>; the document around it is html_report.cc's.
class HtmlFragmentSink : public Sink {
 public:
  void Title(const std::string& t) override { out_ << "<h2>" << HtmlEscape(t) << "</h2>\n"; }
  void Section(const std::string& t) override {
    CloseList();
    out_ << "<h3>" << HtmlEscape(t) << "</h3>\n";
  }
  void KeyValue(const std::string& k, const std::string& v, bool em) override {
    CloseList();
    out_ << "<p><b>" << HtmlEscape(k) << ":</b> " << (em ? "<span class=\"em\">" : "") << HtmlEscape(v)
         << (em ? "</span>" : "") << "</p>\n";
  }
  void Table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) override {
    CloseList();
    out_ << "<table><tr>";
    for (const auto& h : head) out_ << "<th>" << HtmlEscape(h) << "</th>";
    out_ << "</tr>\n";
    for (const auto& r : rows) {
      out_ << "<tr>";
      for (const auto& c : r) out_ << "<td>" << HtmlEscape(c) << "</td>";
      out_ << "</tr>\n";
    }
    out_ << "</table>\n";
  }
  void Bullet(const std::string& text, const std::string& quote) override {
    if (!in_list_) {
      out_ << "<ul>\n";
      in_list_ = true;
    }
    out_ << "<li>" << HtmlEscape(text);
    if (!quote.empty()) out_ << "<br><code>" << HtmlEscape(quote) << "</code>";
    out_ << "</li>\n";
  }
  std::string Finish() override {
    CloseList();
    return out_.str();
  }

 private:
  void CloseList() {
    if (in_list_) out_ << "</ul>\n";
    in_list_ = false;
  }
  bool in_list_ = false;
  std::ostringstream out_;
};

std::string Paint(const std::string& text, const char* code, bool color) {
  return color ? std::string("\x1b[") + code + "m" + text + "\x1b[0m" : text;
}

const char* VerdictColour(const std::string& verdict) {
  return verdict.rfind("none ", 0) == 0 ? "1;32" : verdict.rfind("unknown ", 0) == 0 ? "1;33" : "1;31";
}

// Every field of the first screen passes PrintableLine on its way out: hosts and evidence values
// are label values from an endpoint or the job's TSDB, log excerpts and reasons quote the job, and
// any of them may carry a terminal escape or a newline forging a line of the decision.
std::string FirstScreenText(const FirstScreen& s, bool color, bool verbose) {
  const auto P = [](const std::string& field) { return PrintableLine(field); };
  std::ostringstream out;
  for (size_t i = 0; i < s.jobs.size(); ++i) out << (i ? "  " : "") << Paint(P(s.jobs[i]), "1", color && i == 0) << "\n";
  for (const auto& d : s.job_details) out << "  " << P(d) << "\n";
  if (s.incomplete) out << Paint("INCOMPLETE: " + P(*s.incomplete) + " (exit status 3; the decision is none)", "1;31", color) << "\n";
  out << "\n" << Paint("WHAT HAPPENED", "1", color) << "  " << Paint(P(s.verdict), VerdictColour(s.verdict), color) << "\n";
  if (!s.summary.empty()) out << "  " << P(s.summary) << "\n";
  if (!s.causal_chain.empty()) out << "  chain: " << P(s.causal_chain) << "\n";
  if (!s.refuted.empty()) out << "  refuted: " << P(s.refuted) << " (the log suggested it; the metrics contradict it)\n";
  if (!s.runner_up.empty()) out << "  runner-up: " << P(s.runner_up) << "\n";
  out << "\n" << Paint("WHAT TO DO", "1", color) << "  " << Paint(P(s.action), "1", color) << "\n";
  if (!s.policy.empty()) out << "  sweep policy: " << P(s.policy) << "\n";
  for (const auto& x : s.exclude)
    out << "  exclude " << Paint(P(x.host), "1", color) << " (priority " << x.priority << "): " << PrintableLine(x.reason, 240) << "\n";
  if (!s.slurm_exclude.empty()) out << "  slurm: --exclude=" << P(s.slurm_exclude) << "\n";
  for (const auto& c : s.changes) out << "  change " << P(c) << "\n";
  for (const auto& n : s.notes) out << "  note: " << P(n) << "\n";
  if (s.notes_hidden) out << "  (+" << s.notes_hidden << " more notes with --verbose)\n";
  if (!s.why.empty()) {
    out << "\n" << Paint("WHY", "1", color) << "\n";
    for (const auto& w : s.why) {
      out << "  " << P(w.finding) << ": " << P(w.summary) << "\n";
      if (w.evidence) out << "    evidence: " << P(w.evidence->where) << "\n    " << std::string(10, ' ') << P(w.evidence->detail) << "\n";
    }
  }
  out << "\n" << Paint("FINDINGS", "1", color) << "  " << FindingTally(s) << "\n";
  for (const auto& f : s.fired) out << "  ! " << P(f) << "\n";
  if (s.fired_hidden) out << "  (+" << s.fired_hidden << " more fired)\n";
  if (!verbose) out << "Every check with its evidence: --verbose; charts: --format html\n";
  return out.str();
}

// Inside a Markdown code span a backslash escapes nothing: a backtick would end the span early.
std::string MdCode(const std::string& s) {
  std::string out = PrintableLine(s);
  std::replace(out.begin(), out.end(), '`', '\'');
  return "`" + out + "`";
}

std::string FirstScreenMarkdown(const FirstScreen& s, bool verbose) {
  std::ostringstream out;
  out << "### " << MdEscape(s.jobs.empty() ? "diagnose report" : s.jobs.front()) << "\n\n";
  for (size_t i = 1; i < s.jobs.size(); ++i) out << "- " << MdEscape(s.jobs[i]) << "\n";
  for (const auto& d : s.job_details) out << "- " << MdEscape(d) << "\n";
  if (s.incomplete) out << "\n**INCOMPLETE:** " << MdEscape(*s.incomplete) << " (exit status 3; the decision is none)\n";
  out << "\n**What happened:** " << MdCode(s.verdict);
  if (!s.summary.empty()) out << " " << MdEscape(s.summary);
  out << "\n";
  if (!s.causal_chain.empty()) out << "\n- chain: " << MdEscape(s.causal_chain) << "\n";
  if (!s.refuted.empty()) out << "- refuted: " << MdEscape(s.refuted) << "\n";
  if (!s.runner_up.empty()) out << "- runner-up: " << MdEscape(s.runner_up) << "\n";
  out << "\n**What to do:** " << MdCode(s.action) << "\n";
  if (!s.policy.empty()) out << "\n- sweep policy: " << MdEscape(s.policy) << "\n";
  if (!s.exclude.empty()) {
    out << "\n| exclude | priority | reason |\n|---|---|---|\n";
    for (const auto& x : s.exclude)
      out << "| " << MdCode(x.host) << " | " << x.priority << " | " << MdEscape(PrintableLine(x.reason, 200)) << " |\n";
    if (!s.slurm_exclude.empty()) out << "\nslurm: " << MdCode("--exclude=" + s.slurm_exclude) << "\n";
  }
  for (const auto& c : s.changes) out << "- change " << MdCode(c) << "\n";
  for (const auto& n : s.notes) out << "- " << MdEscape(n) << "\n";
  if (!s.why.empty()) {
    out << "\n**Why:**\n\n";
    for (const auto& w : s.why) {
      out << "- " << MdCode(w.finding) << ": " << MdEscape(w.summary) << "\n";
      if (w.evidence) out << "  - " << MdEscape(w.evidence->where) << ": " << MdEscape(w.evidence->detail) << "\n";
    }
  }
  out << "\n**Findings:** " << FindingTally(s) << "\n\n";
  for (const auto& f : s.fired) out << "- " << MdEscape(f) << "\n";
  if (s.fired_hidden) out << "- +" << s.fired_hidden << " more\n";
  if (!verbose) out << "\n_Every check with its evidence: `--verbose`; charts: `--format html`._\n";
  return out.str();
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return WithoutControls(out);
}

std::string RenderFullListing(const Report& report, const std::string& format, bool color) {
  if (format == "md") {
    MarkdownSink s;
    Walk(report, &s, false);
    return s.Finish();
  }
  if (format == "html") {
    HtmlFragmentSink s;
    Walk(report, &s, false);
    return s.Finish();
  }
  TextSink s(color);
  Walk(report, &s, false);
  return s.Finish();
}

namespace {

// What the playbooks cost the TSDB (issue 36), from the report's timings; empty without them.
std::string MetricsReadLine(const Report& report) {
  const auto& t = report.timings;
  if (!t.is_object() || !t.contains("playbook_requests")) return "";
  return "Metrics read by the playbooks: " + std::to_string(t["playbook_requests"].get<int64_t>()) + " requests, " +
         std::to_string(t.value("playbook_points_returned", int64_t{0})) + " points returned\n";
}

}  // namespace

std::string RenderText(const Report& report, const RenderOptions& options) {
  std::string out = FirstScreenText(BuildFirstScreen(report), options.color, options.verbose);
  if (options.verbose) out += RenderFullListing(report, "text", options.color) + MetricsReadLine(report);
  return out;
}

std::string RenderMarkdown(const Report& report, const RenderOptions& options) {
  std::string out = FirstScreenMarkdown(BuildFirstScreen(report), options.verbose);
  if (options.verbose) {
    out += "\n## Every check\n" + RenderFullListing(report, "md");
    if (std::string cost = MetricsReadLine(report); !cost.empty()) out += "\n" + cost;
  }
  return out;
}

std::string RenderHtml(const Report& report) { return RenderHtmlReport(report, RenderFullListing(report, "html")); }

StatusOr<std::string> RenderReport(const Report& report, const std::string& format, const RenderOptions& options) {
  if (format == "text") return RenderText(report, options);
  if (format == "md") return RenderMarkdown(report, options);
  if (format == "html") return RenderHtml(report);
  if (format == "json") return DumpJson(ToJson(report), 2) + "\n";
  return InvalidArgumentError("unknown report format '" + format + "' (text|md|json|html)");
}

}  // namespace diagnose
