#include "engine/dag/prometheus_series_backend.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "engine/tsdb/block_writer.h"
#include "engine/tsdb/private_prometheus.h"

namespace diagnose::dag {
namespace {

namespace fs = std::filesystem;

// The blocks of one test, served by a private Prometheus; both removed on destruction.
class PrometheusServedSeries : public ServedSeries {
 public:
  PrometheusServedSeries(std::string dir, std::unique_ptr<PrivatePrometheus> server)
      : dir_(std::move(dir)), server_(std::move(server)) {}
  ~PrometheusServedSeries() override {
    server_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  QueryClient* client() override { return &server_->client(); }

 private:
  std::string dir_;
  std::unique_ptr<PrivatePrometheus> server_;
};

class PrometheusBackend : public SeriesBackend {
 public:
  StatusOr<std::unique_ptr<ServedSeries>> Serve(std::vector<Series> series, double, double,
                                                     const std::string& name) override {
    std::error_code ec;
    fs::path root = fs::temp_directory_path(ec);
    if (ec) root = "/tmp";
    fs::path dir = root / ("diagnose-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(dir, ec);
    fs::create_directories(dir / "tsdb", ec);
    if (ec) return InternalError("cannot create " + dir.string() + ": " + ec.message());
    BlockWriteOptions options;
    options.output_dir = (dir / "tsdb").string();
    options.scratch_dir = (dir / "scratch").string();
    fs::create_directories(options.scratch_dir, ec);
    auto written = WriteBlocks(std::move(series), options);
    if (!written.ok()) {
      fs::remove_all(dir, ec);
      return written.status().WithContext("writing TSDB blocks for '" + name + "'");
    }
    auto server = PrivatePrometheus::Start(options.output_dir);
    if (!server.ok()) {
      fs::remove_all(dir, ec);
      return server.status().WithContext("starting a private Prometheus for '" + name + "'");
    }
    return std::unique_ptr<ServedSeries>(new PrometheusServedSeries(dir.string(), std::move(*server)));
  }
  std::string Describe() const override { return "TSDB blocks + private Prometheus"; }

 private:
  int counter_ = 0;
};

}  // namespace

std::unique_ptr<SeriesBackend> MakePrometheusSeriesBackend() { return std::make_unique<PrometheusBackend>(); }

}  // namespace diagnose::dag
