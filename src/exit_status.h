// The exit statuses a sweep driver branches on, with the meaning the man page prints for each
// (docs/contract.md, "Exit status", restates this table).
#pragma once

namespace diagnose::cli {

inline constexpr int kExitReport = 0;
inline constexpr int kExitNoReport = 1;
inline constexpr int kExitUsage = 2;
// A report was written, but diagnose could not read metrics it needed (a "failed" tsdb entry): the
// decision is `none` and must not be read as the job's. Distinct from 1 (no report) and 2 (usage).
inline constexpr int kExitIncomplete = 3;
// diagnose itself failed (an exception, memory exhausted): distinct from every answer about a job,
// so a sweep driver never mistakes it for one. sysexits' EX_SOFTWARE.
inline constexpr int kExitInternalFailure = 70;

struct ExitStatus {
  int code;
  const char* meaning;
};

inline constexpr ExitStatus kExitStatuses[] = {
    {kExitReport, "A complete report was produced, whatever it concludes (healthy or not)."},
    {kExitNoReport,
     "No report could be produced: job not found, a file that is not a job log, an invalid playbook or rule, or "
     "the report could not be written to standard output (full disk, closed pipe). Nothing on standard output."},
    {kExitUsage,
     "Usage error: unknown option, bad value, a word one typo from a subcommand; a suggestion (\"did you mean "
     "...\") when one is close. Nothing on standard output."},
    {kExitIncomplete,
     "Diagnosis incomplete: a report is on standard output, but diagnose could not read metrics it needed "
     "through its own failure (endpoint unreachable or answering garbage, TLS or credentials refused, private "
     "Prometheus died twice, no prometheus on PATH, temporary filesystem full, --deadline passed, an answer past "
     "one of its own limits, named with how to raise it). Its decision is none, with no exclusions, and nothing "
     "is written to the history."},
    {kExitInternalFailure,
     "diagnose itself failed (uncaught exception, out of memory): \"diagnose: internal failure: ...\" on "
     "standard error, never a report."},
};

}  // namespace diagnose::cli
