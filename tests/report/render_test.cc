#include "engine/report/render.h"

#include <gtest/gtest.h>

#include "engine/triage/job_facts.h"

namespace diagnose {
namespace {

Report SampleReport() {
  Report r;
  JobEntry j;
  j.id = "9101";
  j.dir = "outputs/9101-JAX-x";
  j.status = "failed";
  j.failure_class = "oom-gpu";
  j.hosts = {"gpu400", "gpu401"};
  j.first_step = 0;
  j.last_step = 20;
  j.total_steps = 400;
  r.jobs.push_back(j);
  r.verdict = {"gpu-oom", "gpu", "confirmed", "GPU memory exhausted on task 1 <script>alert(1)</script>."};
  Finding f;
  f.id = "log-triage/oom-gpu";
  f.playbook = "log-triage";
  f.status = "fired";
  f.hosts = {"gpu401"};
  f.evidence.push_back({"log", "9101-JAX-x.log:812", std::nullopt, nullptr,
                        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 221.71GiB & <more>"});
  r.findings.push_back(f);
  r.decision.action = "no-retry";
  r.decision.notes = {"never retry an OOM at the same batch size"};
  JobFacts facts;
  facts.id = "9101";
  facts.tgs.pattern = "phased";
  facts.tgs.phases = {{0, 96, 3293.0, 10.0}, {97, 216, 2620.0, 9.0}};
  facts.progress.step_time_seconds = 30.0;
  facts.progress.sum_step_seconds = 630;
  facts.heartbeat.present = true;
  facts.heartbeat.accused_tasks = {8, 10};
  facts.heartbeat.accused_hosts = {"gpu408", "gpu410"};
  r.facts["9101"] = facts;
  return r;
}

TEST(RenderTest, TextShowsStatusClassPhasesVerdictDecisionAndEvidence) {
  std::string t = RenderText(SampleReport());
  for (const char* want : {"failed", "oom-gpu", "0-96", "3293.0", "97-216", "gpu-oom", "no-retry",
                           "9101-JAX-x.log:812", "221.71GiB", "[8,10]", "gpu408"})
    EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  EXPECT_EQ(t.find("\x1b["), std::string::npos);
  EXPECT_NE(RenderText(SampleReport(), {.color = true}).find("\x1b[1m"), std::string::npos);
}

TEST(RenderTest, MarkdownHasTableAndEscapes) {
  std::string md = RenderMarkdown(SampleReport());
  EXPECT_NE(md.find("| steps | mean TGS | stddev |"), std::string::npos) << md;
  EXPECT_NE(md.find("## Verdict"), std::string::npos);
  EXPECT_EQ(md.find("<script>"), std::string::npos);
}

TEST(RenderTest, HtmlIsSelfContainedAndEscaped) {
  std::string h = RenderHtml(SampleReport());
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("</html>"), std::string::npos);
  EXPECT_EQ(h.find("<script>"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(h.find("&amp; &lt;more&gt;"), std::string::npos);
  EXPECT_EQ(h.find("http://"), std::string::npos);   // nothing external
  EXPECT_EQ(h.find("src="), std::string::npos);
}

TEST(RenderTest, FormatDispatch) {
  Report r = SampleReport();
  ASSERT_TRUE(RenderReport(r, "json").ok());
  EXPECT_NE(RenderReport(r, "json")->find("\"schema\": \"diagnose/v1\""), std::string::npos);
  auto bad = RenderReport(r, "pdf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("pdf"), std::string::npos);
}

TEST(RenderTest, EmptyReportRenders) {
  Report r;
  EXPECT_FALSE(RenderText(r).empty());
  EXPECT_FALSE(RenderHtml(r).empty());
  EXPECT_FALSE(RenderMarkdown(r).empty());
}

}  // namespace
}  // namespace diagnose
