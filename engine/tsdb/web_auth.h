// Per-run credentials for the private Prometheus: on a shared login node its loopback port is open
// to every local user for as long as a diagnosis runs, and the job's metrics are not theirs to read.
// Prometheus checks them from `--web.config.file` (basic_auth_users, bcrypt hashes).
#pragma once

#include <string>

#include "engine/core/status.h"

namespace diagnose {

struct WebCredentials {
  std::string user;
  std::string password;      // 64 hex digits from the kernel's CSPRNG
  std::string bcrypt_hash;   // "$2b$..." for basic_auth_users
};

// kUnavailable when the system has no randomness or no bcrypt in its crypt(3).
StatusOr<WebCredentials> NewWebCredentials();

// "Basic <base64(user:password)>", the value of an Authorization header (RFC 7617).
std::string BasicAuthorization(const std::string& user, const std::string& password);

// The web config Prometheus reads: basic auth only (TLS is pointless on loopback).
std::string WebConfigYaml(const WebCredentials& credentials);

}  // namespace diagnose
