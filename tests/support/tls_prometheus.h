// A real Prometheus behind TLS and basic auth, for the tests of --cacert, --insecure and
// --header 'Authorization: ...' (issue 14 point 4). Test certificates are made at test time with
// the `openssl` CLI (argument vectors, never a shell); everything lives in one temp dir that is
// removed, servers first, when the test bed goes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/subprocess.h"
#include "engine/tsdb/web_auth.h"

namespace diagnose::testing {

// Paths of the generated PEM files.
struct TestPki {
  std::string ca_cert;         // the CA that signs the server certificates
  std::string other_ca_cert;   // an unrelated CA
  std::string server_key;
  std::string server_cert;     // CN and subjectAltName IP:127.0.0.1, valid now
  std::string expired_cert;    // the same key and names, valid 2020-01-01..02 only
};

// Why these tests cannot run here (openssl or prometheus missing from PATH), or "".
std::string TlsToolsMissing();

class TlsTestBed {
 public:
  // A temp dir with the PKI and fresh basic-auth credentials.
  static StatusOr<std::unique_ptr<TlsTestBed>> Create();
  ~TlsTestBed();
  TlsTestBed(const TlsTestBed&) = delete;
  TlsTestBed& operator=(const TlsTestBed&) = delete;

  // Starts Prometheus on 127.0.0.1:0 serving TLS with `cert_file` (the PKI's key) and basic auth;
  // returns its https:// URL. An empty `cert_file` serves plain HTTP (basic auth only) and returns
  // an http:// URL. With `tsdb_dir` it serves a copy of that TSDB (never the original), else an
  // empty storage (`vector(1)` still answers).
  StatusOr<std::string> StartServer(const std::string& cert_file, const std::string& tsdb_dir = "");

  const TestPki& pki() const { return pki_; }
  // Authorization header values: the right credentials, and the right user with a wrong password.
  std::string authorization() const;
  std::string wrong_authorization() const;

 private:
  TlsTestBed() = default;
  std::string dir_;
  TestPki pki_;
  WebCredentials credentials_;
  std::vector<ChildProcess> servers_;
};

}  // namespace diagnose::testing
