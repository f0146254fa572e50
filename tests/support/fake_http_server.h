// A tiny loopback HTTP/1.1 server on a thread, for fault tests of the HTTP query client: it answers
// each request through a handler (status, body, optional stall) and closes the connection.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace diagnose::testing {

struct FakeRequest {
  std::string method;
  std::string target;   // path + query string
  std::string body;
  std::vector<std::string> headers;  // "Name: value"
};

struct FakeResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::chrono::milliseconds stall{0};   // sleep before answering
  bool drop_connection = false;         // close without answering
};

class FakeHttpServer {
 public:
  explicit FakeHttpServer(std::function<FakeResponse(const FakeRequest&)> handler);
  ~FakeHttpServer();
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  int requests() const { return requests_.load(); }
  std::vector<FakeRequest> received();

 private:
  void Serve();
  void HandleConnection(int fd);
  std::function<FakeResponse(const FakeRequest&)> handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0};
  std::mutex mutex_;
  std::vector<FakeRequest> received_;
  std::vector<std::thread> workers_;
  std::thread thread_;
};

// Form/query-string value of `key` (URL-decoded); empty when absent.
std::string FormValue(const std::string& form, const std::string& key);

}  // namespace diagnose::testing
