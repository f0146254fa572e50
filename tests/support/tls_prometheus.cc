#include "tests/support/tls_prometheus.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/tsdb/http_query_client.h"
#include "engine/tsdb/private_prometheus.h"
#include "tests/support/files.h"

namespace diagnose::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// One config for every openssl step: the CA and server extensions, and `openssl ca`'s database
// (openssl 3.0's `x509` has no -not_before, so the expired certificate is issued by `openssl ca`
// with -startdate/-enddate in the past).
std::string OpensslConfig(const std::string& dir) {
  return "[req]\n"
         "distinguished_name = dn\n"
         "[dn]\n"
         "[v3_ca]\n"
         "basicConstraints = critical,CA:TRUE\n"
         "keyUsage = critical,keyCertSign,cRLSign\n"
         "subjectKeyIdentifier = hash\n"
         "[server]\n"
         "basicConstraints = CA:FALSE\n"
         "keyUsage = critical,digitalSignature,keyEncipherment\n"
         "extendedKeyUsage = serverAuth\n"
         "subjectAltName = IP:127.0.0.1\n"
         "[ca]\n"
         "default_ca = test_ca\n"
         "[test_ca]\n"
         "database = " + dir + "/index.txt\n"
         "new_certs_dir = " + dir + "\n"
         "certificate = " + dir + "/ca.crt\n"
         "private_key = " + dir + "/ca.key\n"
         "serial = " + dir + "/serial\n"
         "default_md = sha256\n"
         "policy = policy_any\n"
         "unique_subject = no\n"
         "[policy_any]\n"
         "commonName = supplied\n";
}

Status WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path);
  out << content;
  return out ? Status::Ok() : UnavailableError("cannot write " + path);
}

Status Openssl(std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  auto run = RunCommand(args, std::chrono::seconds(30));
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) {
    std::string command;
    for (const auto& a : args) command += a + " ";
    return UnavailableError(command + "exited " + std::to_string(run->exit_code) + ": " + run->output);
  }
  return Status::Ok();
}

// A self-signed CA (P-256 keys: fast to make).
Status MakeCa(const std::string& config, const std::string& key, const std::string& cert, const std::string& name) {
  return Openssl({"req", "-x509", "-config", config, "-extensions", "v3_ca", "-newkey", "ec", "-pkeyopt",
                  "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-subj", "/CN=" + name,
                  "-days", "2"});
}

}  // namespace

std::string TlsToolsMissing() {
  for (const char* tool : {"openssl", "prometheus"}) {
    if (FindExecutable(tool).empty()) return std::string(tool) + " not found in PATH";
  }
  return "";
}

StatusOr<std::unique_ptr<TlsTestBed>> TlsTestBed::Create() {
  std::unique_ptr<TlsTestBed> bed(new TlsTestBed());
  std::string pattern = (fs::temp_directory_path() / "diagnose-tls-XXXXXX").string();
  if (!mkdtemp(pattern.data())) return UnavailableError("cannot create a temp dir for the TLS test bed");
  bed->dir_ = pattern;
  const std::string& d = bed->dir_;
  const std::string config = d + "/openssl.cnf";
  RETURN_IF_ERROR(WriteFile(config, OpensslConfig(d)));
  RETURN_IF_ERROR(WriteFile(d + "/index.txt", ""));
  RETURN_IF_ERROR(WriteFile(d + "/serial", "1000\n"));
  TestPki& pki = bed->pki_;
  pki.ca_cert = d + "/ca.crt";
  pki.other_ca_cert = d + "/other-ca.crt";
  pki.server_key = d + "/server.key";
  pki.server_cert = d + "/server.crt";
  pki.expired_cert = d + "/expired.crt";
  const std::string csr = d + "/server.csr";
  RETURN_IF_ERROR(MakeCa(config, d + "/ca.key", pki.ca_cert, "diagnose test CA"));
  RETURN_IF_ERROR(MakeCa(config, d + "/other-ca.key", pki.other_ca_cert, "unrelated test CA"));
  RETURN_IF_ERROR(Openssl({"req", "-new", "-config", config, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                           "-nodes", "-keyout", pki.server_key, "-out", csr, "-subj", "/CN=127.0.0.1"}));
  RETURN_IF_ERROR(Openssl({"x509", "-req", "-in", csr, "-CA", pki.ca_cert, "-CAkey", d + "/ca.key", "-set_serial", "2",
                           "-days", "2", "-extfile", config, "-extensions", "server", "-out", pki.server_cert}));
  RETURN_IF_ERROR(Openssl({"ca", "-batch", "-config", config, "-extensions", "server", "-notext", "-startdate",
                           "20200101000000Z", "-enddate", "20200102000000Z", "-in", csr, "-out", pki.expired_cert}));
  ASSIGN_OR_RETURN(bed->credentials_, NewWebCredentials());
  return bed;
}

TlsTestBed::~TlsTestBed() {
  servers_.clear();  // terminates and reaps each server before its storage goes
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string TlsTestBed::authorization() const {
  return BasicAuthorization(credentials_.user, credentials_.password);
}

std::string TlsTestBed::wrong_authorization() const {
  return BasicAuthorization(credentials_.user, credentials_.password + "x");
}

StatusOr<std::string> TlsTestBed::StartServer(const std::string& cert_file, const std::string& tsdb_dir) {
  const std::string dir = dir_ + "/server" + std::to_string(servers_.size());
  std::error_code ec;
  fs::create_directories(dir + "/data", ec);
  if (ec) return UnavailableError("cannot create " + dir + ": " + ec.message());
  if (!tsdb_dir.empty()) {
    // A copy: Prometheus writes its lock, WAL and compactions into what it serves.
    fs::copy(tsdb_dir, dir + "/data", fs::copy_options::recursive, ec);
    if (ec) return UnavailableError("cannot copy " + tsdb_dir + ": " + ec.message());
  }
  RETURN_IF_ERROR(WriteFile(dir + "/prometheus.yml", "global:\n  scrape_interval: 1h\nscrape_configs: []\n"));
  const std::string tls = cert_file.empty() ? "" : "tls_server_config:\n  cert_file: " + cert_file +
                                                       "\n  key_file: " + pki_.server_key + "\n";
  RETURN_IF_ERROR(WriteFile(dir + "/web.yml", tls + WebConfigYaml(credentials_)));
  const std::string log = dir + "/prometheus.log";
  SpawnOptions spawn;
  spawn.argv = {"prometheus",
                "--config.file=" + dir + "/prometheus.yml",
                "--web.config.file=" + dir + "/web.yml",
                "--storage.tsdb.path=" + dir + "/data",
                "--web.listen-address=127.0.0.1:0",
                "--storage.tsdb.retention.time=100y",
                "--storage.tsdb.max-block-duration=2h"};
  spawn.stdout_path = log;
  spawn.stderr_path = log;
  ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(spawn));
  servers_.push_back(std::move(child));
  ChildProcess& server = servers_.back();

  // The port, from its log as the private Prometheus reads it.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::string url;
  while (url.empty()) {
    const std::string text = ReadFileOrEmpty(log);
    if (const std::optional<int> port = ListeningPortInLog(text)) {
      url = (cert_file.empty() ? "http" : "https") + std::string("://127.0.0.1:") + std::to_string(*port);
    } else if (!server.Running() || Clock::now() > deadline) {
      return UnavailableError("TLS Prometheus did not start; log: " + text.substr(0, 3000));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  // Ready once its storage is open (probed without verification: the expired server too).
  RemoteEndpointOptions probe;
  probe.url = url;
  probe.insecure_skip_verify = true;
  probe.headers["Authorization"] = authorization();
  ASSIGN_OR_RETURN(auto client, HttpQueryClient::Create(probe));
  while (true) {
    auto ready = client->Get("/-/ready", 2);
    if (ready.ok() && ready->http_code == 200) return url;
    if (!server.Running() || Clock::now() > deadline) {
      return UnavailableError("TLS Prometheus at " + url + " was not ready; log: " + ReadFileOrEmpty(log).substr(0, 3000));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace diagnose::testing
