#include "tests/support/fake_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

namespace diagnose::testing {

FakeHttpServer::FakeHttpServer(std::function<FakeResponse(const FakeRequest&)> handler)
    : handler_(std::move(handler)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  listen(listen_fd_, 64);
  socklen_t len = sizeof addr;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { Serve(); });
}

FakeHttpServer::~FakeHttpServer() {
  stop_ = true;
  thread_.join();
  for (auto& w : workers_) w.join();
  close(listen_fd_);
}

std::vector<FakeRequest> FakeHttpServer::received() {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_;
}

void FakeHttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    workers_.emplace_back([this, fd] { HandleConnection(fd); });
  }
}

void FakeHttpServer::HandleConnection(int fd) {
  std::string data;
  char buf[8192];
  size_t header_end = std::string::npos;
  size_t content_length = 0;
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos) {
      header_end = data.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        std::string lower = data.substr(0, header_end);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t cl = lower.find("content-length:");
        if (cl != std::string::npos) content_length = std::stoul(lower.substr(cl + 15));
      }
    }
    if (header_end != std::string::npos && data.size() >= header_end + 4 + content_length) break;
  }
  if (header_end == std::string::npos) {
    close(fd);
    return;
  }
  FakeRequest req;
  std::istringstream head(data.substr(0, header_end));
  std::string line;
  std::getline(head, line);
  std::istringstream first(line);
  first >> req.method >> req.target;
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) req.headers.push_back(line);
  }
  req.body = data.substr(header_end + 4, content_length);
  ++requests_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    received_.push_back(req);
  }
  FakeResponse resp = handler_(req);
  auto until = std::chrono::steady_clock::now() + resp.stall;
  while (!stop_ && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!resp.drop_connection && !stop_) {
    std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\nContent-Type: " + resp.content_type +
                      "\r\nContent-Length: " + std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n" +
                      resp.body;
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
  }
  close(fd);
}

namespace {
std::string Decode(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '%' && i + 2 < raw.size() + 0 && i + 2 <= raw.size() - 1) {
      out += static_cast<char>(std::stoi(raw.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += raw[i] == '+' ? ' ' : raw[i];
    }
  }
  return out;
}
}  // namespace

std::string FormValue(const std::string& form, const std::string& key) {
  size_t pos = 0;
  while (pos <= form.size()) {
    size_t amp = form.find('&', pos);
    if (amp == std::string::npos) amp = form.size();
    std::string pair = form.substr(pos, amp - pos);
    size_t eq = pair.find('=');
    if (eq != std::string::npos && Decode(pair.substr(0, eq)) == key) return Decode(pair.substr(eq + 1));
    pos = amp + 1;
  }
  return "";
}

}  // namespace diagnose::testing
