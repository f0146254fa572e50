#include "src/test_backend.h"

namespace diagnose::cli {
namespace {

// Until the private-Prometheus server manager lands (branch tsdb), input series cannot be served:
// say so instead of pretending.
class UnavailableBackend : public dag::SeriesBackend {
 public:
  StatusOr<std::unique_ptr<dag::ServedSeries>> Serve(std::vector<Series>, double, double, const std::string&) override {
    return UnavailableError("the private Prometheus server manager is not available in this build");
  }
  std::string Describe() const override { return "no series backend"; }
};

}  // namespace

std::unique_ptr<dag::SeriesBackend> MakeTestSeriesBackend() { return std::make_unique<UnavailableBackend>(); }

}  // namespace diagnose::cli
