#include "engine/tsdb/http_query_client.h"

#include <curl/curl.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <optional>
#include <thread>

#include "engine/core/json.h"
#include "engine/core/limits.h"
#include "engine/core/logging.h"
#include "engine/core/regular_file.h"
#include "engine/core/url_encode.h"
#include "engine/tsdb/prometheus_api.h"
#include "engine/core/utf8.h"

namespace diagnose {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

class Form {
 public:
  Form& Add(const std::string& key, const std::string& value) {
    if (!body_.empty()) body_ += '&';
    body_ += UrlEncode(key);
    body_ += '=';
    body_ += UrlEncode(value);
    return *this;
  }
  const std::string& str() const { return body_; }

 private:
  std::string body_;
};

// Unix seconds with millisecond precision; the API accepts floats.
std::string FormatTime(double t) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", t);
  return buf;
}

std::string FormatStep(double step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", step);
  return buf;
}


// The same TLS settings for every transfer: verification is on unless deliberately switched off.
void ApplyTlsOptions(CURL* easy, const RemoteEndpointOptions& options) {
  if (options.insecure_skip_verify) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!options.ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options.ca_file.c_str());
}

// Credentials written in the URL's userinfo authenticate every transfer, sent as curl would send
// them from the URL (Basic), while the URL requests go to and messages name carries none.
void ApplyUrlCredentials(CURL* easy, const RemoteEndpointOptions& options) {
  const UrlCredentials credentials = SplitUrlCredentials(options.url);
  if (credentials.user.empty() && !credentials.has_password) return;
  auto decoded = [easy](const std::string& text) {
    int length = 0;
    char* raw = curl_easy_unescape(easy, text.c_str(), static_cast<int>(text.size()), &length);
    std::string out = raw ? std::string(raw, static_cast<size_t>(length)) : text;
    curl_free(raw);
    return out;
  };
  curl_easy_setopt(easy, CURLOPT_USERNAME, decoded(credentials.user).c_str());
  if (credentials.has_password) curl_easy_setopt(easy, CURLOPT_PASSWORD, decoded(credentials.password).c_str());
}

// A TLS failure said so that a user can act on it, or nullopt when `code` is not one. `detail` is
// curl's error buffer ("SSL certificate problem: certificate has expired"), which says far more
// than curl_easy_strerror ("SSL peer certificate or SSH remote key was not OK").
std::optional<Status> TlsFailure(CURLcode code, const std::string& detail, const std::string& endpoint) {
  const std::string why = detail.empty() ? curl_easy_strerror(code) : detail;
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ISSUER_ERROR:
      if (why.find("expired") != std::string::npos) {
        return FailedPreconditionError("the TLS certificate of " + endpoint + " has expired (" + why +
                                       "); the server needs a renewed certificate");
      }
      return FailedPreconditionError("the TLS certificate of " + endpoint + " could not be verified (" + why +
                                     "); give the CA that signed it with --cacert FILE (--insecure skips "
                                     "verification, which is dangerous)");
    case CURLE_SSL_CONNECT_ERROR:
      return FailedPreconditionError("TLS handshake with " + endpoint + " failed (" + why +
                                     "); is it an HTTPS endpoint? An https:// URL is never tried as plain http");
    case CURLE_SSL_CACERT_BADFILE:
      return FailedPreconditionError("the CA file for " + endpoint + " could not be loaded (" + why + ")");
    default:
      return std::nullopt;
  }
}

// What a 401/403 means for the request that got it.
std::string AuthRefusal(long http, bool sent_authorization) {
  if (http == 403) return "forbidden: the credentials sent do not allow this request";
  if (sent_authorization) return "unauthorized: the endpoint refused the Authorization header sent";
  return "unauthorized: the endpoint requires credentials and no Authorization header was sent "
         "(--header 'Authorization: Basic ...' or 'Bearer ...')";
}

}  // namespace

// Where a transfer's body goes. `held` (shared by the transfers of one batch, which one thread
// drives) counts the bytes their bodies hold, by capacity: each answer under http.response_bytes,
// eight in parallel (compressed answers inflating to 250 MiB each) held 3 GiB at once. Past
// `held_budget` the transfer is cut off and `over_budget` says why.
// Outside the anonymous namespace: HttpQueryClient::Request holds one.
struct BodySink {
  std::string body;
  int64_t* held = nullptr;        // nullptr: a lone transfer, bounded by http.response_bytes only
  int64_t held_budget = 0;
  bool over_budget = false;

  // Empties the body, giving its bytes back to the batch's count.
  void Release() {
    if (held != nullptr) *held -= static_cast<int64_t>(body.capacity());
    body.clear();
    body.shrink_to_fit();
    if (held != nullptr) *held += static_cast<int64_t>(body.capacity());
  }
};

namespace {

// The bytes one batch's answers may hold at once: twice one answer's limit, so two answers of
// nearly the limit still arrive together.
int64_t AnswerBytesHeldBudget() { return 2 * GetLimit(LimitId::kHttpResponseBytes); }

// Returning less than was offered makes curl fail the transfer with CURLE_WRITE_ERROR: an answer
// past http.response_bytes, or past what the batch may hold at once, is cut off there rather than
// held in memory.
size_t AppendBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  std::string* body = &sink->body;
  const size_t n = size * nmemb;
  const auto limit = static_cast<size_t>(GetLimit(LimitId::kHttpResponseBytes));
  if (body->size() + n > limit) return 0;
  // Grown by doubling but never past the limit: a 256 MiB bound must not cost 512 MiB.
  if (body->size() + n > body->capacity()) {
    const size_t capacity = std::min(limit, std::max(body->size() + n, 2 * body->capacity()));
    const auto growth = static_cast<int64_t>(capacity - body->capacity());
    if (sink->held != nullptr && *sink->held + growth > sink->held_budget) {
      sink->over_budget = true;
      return 0;
    }
    body->reserve(capacity);
    if (sink->held != nullptr) *sink->held += growth;
  }
  body->append(data, n);
  return n;
}

// An endpoint on this host (127.0.0.0/8, ::1, localhost): a live job's Prometheus listens there.
bool IsLoopbackUrl(const std::string& url) {
  CURLU* parsed = curl_url();
  char* host = nullptr;
  bool loopback = false;
  if (curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_HOST, &host, 0) == CURLUE_OK && host != nullptr) {
    const std::string h = host;
    loopback = h == "localhost" || h == "[::1]" || h.rfind("127.", 0) == 0;
  }
  curl_free(host);
  curl_url_cleanup(parsed);
  return loopback;
}

Status ResponseTooLarge(const std::string& where) {
  return LimitExceeded(LimitId::kHttpResponseBytes, "the answer" + where);
}

// Seconds left before the run's deadline (unbounded without one).
double SecondsLeft(const std::optional<Clock::time_point>& deadline) {
  if (!deadline) return 1e9;
  return std::chrono::duration<double>(*deadline - Clock::now()).count();
}

}  // namespace

struct HttpQueryClient::Request {
  // What to send.
  std::string path;           // "/api/v1/query", appended to the base URL
  std::string form;           // POST body, or the query string when post == false
  bool post = true;
  std::string subject;        // for error messages: "query `up`" or "label values of host"
  double timeout_seconds = 30;
  int max_attempts = 1;
  bool query_answer = false;  // a query's answer: decoded while parsed when it has the usual shape
  int64_t estimated_samples = 0;   // Query::estimated_samples
  // Outcome.
  Status status;
  json data;                  // the envelope's data on success
  std::optional<StatusOr<QueryResult>> streamed;   // a query answer decoded without `data`
  std::optional<int64_t> samples_read;             // the streamed answer's stats
  std::vector<std::string> warnings;
  int attempts = 0;
  double elapsed_seconds = 0;
  // In flight.
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string url;
  BodySink sink;               // the answer's body, sink.body
  std::array<char, CURL_ERROR_SIZE> error{};   // curl's detailed message for a failed transfer
  Clock::time_point first_start{};
  Clock::time_point not_before{};
};

double ClampRangeStep(double start, double end, double requested_step) {
  const double min_step = std::ceil((end - start) / kMaxPointsPerSeries);
  return std::max(requested_step, min_step);
}

StatusOr<std::unique_ptr<HttpQueryClient>> HttpQueryClient::Create(RemoteEndpointOptions options,
                                                                   std::string description) {
  if (options.url.empty()) return InvalidArgumentError("no PromQL endpoint URL given");
  const std::string shown = OneLine(ShownUrl(options.url));
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    return InvalidArgumentError("endpoint URL '" + shown + "' must start with http:// or https://");
  }
  if (options.timeout_seconds <= 0) {
    return InvalidArgumentError("endpoint timeout must be positive for " + shown);
  }
  if (!options.ca_file.empty()) {
    // A FIFO given as the CA file blocked the probe below (and curl after it) forever.
    if (Status regular = RequireRegularFile(options.ca_file); !regular.ok()) {
      return Status(regular.code(), "CA file for " + shown + ": " + regular.message());
    }
    if (FILE* f = std::fopen(options.ca_file.c_str(), "r")) {
      std::fclose(f);
    } else {
      return NotFoundError("CA file '" + options.ca_file + "' for " + shown + " cannot be read");
    }
  }
  if (Status headers = CheckRequestHeaders(options); !headers.ok()) return headers.WithContext(shown);
  GlobalInitOnce();
  std::unique_ptr<HttpQueryClient> client(new HttpQueryClient(std::move(options), std::move(description)));
  client->IdentifyEndpoint();
  return client;
}

void HttpQueryClient::IdentifyEndpoint() {
  evaluates_promql_ = options_.is_prometheus && !options_.ask_as_written;
  if (!options_.identify_prometheus) return;
  const std::string as_written = "every question is sent to " + base_url_ + " as written";
  auto decide = [&](bool compose, const std::string& why) {
    evaluates_promql_ = compose;
    composition_note_ = compose ? "the engine computes answers from the answers to their parts on " + base_url_ + ": " + why
                                : as_written + ": " + why;
    Stage("{}", composition_note_);
  };
  if (options_.ask_as_written) return decide(false, "--ask-as-written");
  if (options_.thanos) return decide(false, "--thanos: a Thanos querier evaluates with an engine of its own");
  if (!options_.tenant.empty()) return decide(false, "--tenant: a Mimir/Cortex tenant, evaluated by its own engine");
  // A few seconds at most: an endpoint that does not answer this has the rest of the run to fail in.
  const double timeout = std::max(0.001, std::min({options_.timeout_seconds, 3.0, SecondsLeft(options_.deadline)}));
  StatusOr<HttpResponse> answer = Get("/api/v1/status/buildinfo", timeout);
  if (!answer.ok()) return decide(false, "its build information could not be read (" + answer.status().message() + ")");
  if (answer->http_code != 200)
    return decide(false, "it answered HTTP " + std::to_string(answer->http_code) + " for its build information ('" +
                             QuoteAnswer(answer->body) + "'), which Prometheus serves");
  StatusOr<PrometheusBuildInfo> info = ParsePrometheusBuildInfo(answer->body);
  if (!info.ok()) return decide(false, "it is not Prometheus: " + info.status().message());
  if (!PrometheusVerifiedForComposition(*info))
    return decide(false, "its build information names release " + info->version +
                             ", not a Prometheus release the engine's composed answers were verified against (" +
                             kPrometheusVerifiedForComposition + ")");
  decide(true, "it is Prometheus " + info->version + " (--ask-as-written to send every question as written)");
}

HttpQueryClient::HttpQueryClient(RemoteEndpointOptions options, std::string description)
    : options_(std::move(options)), description_(std::move(description)) {
  base_url_ = SplitUrlCredentials(options_.url).url;   // the credentials go with each transfer
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  std::string prefix = options_.path_prefix;
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  if (!prefix.empty()) {
    if (prefix.front() != '/') prefix = "/" + prefix;
    // The prefix may already be part of --prometheus; do not double it.
    if (base_url_.size() < prefix.size() ||
        base_url_.compare(base_url_.size() - prefix.size(), prefix.size(), prefix) != 0) {
      base_url_ += prefix;
    }
  }
  if (!options_.compressed_answers) options_.compressed_answers = !IsLoopbackUrl(base_url_);
  for (const auto& [name, value] : options_.headers) header_lines_.push_back(name + ": " + value);
  if (!options_.tenant.empty() && !options_.headers.count("X-Scope-OrgID")) {
    header_lines_.push_back("X-Scope-OrgID: " + options_.tenant);
  }
  multi_ = curl_multi_init();
}

HttpQueryClient::~HttpQueryClient() {
  if (multi_) curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

std::string HttpQueryClient::Describe() const { return description_.empty() ? base_url_ : description_; }

HttpQueryClient::Request HttpQueryClient::MakeQueryRequest(const Query& query, double* effective_step) const {
  Request req;
  req.timeout_seconds = options_.timeout_seconds;
  req.max_attempts = 1 + std::max(0, options_.max_retries);
  req.query_answer = true;
  req.estimated_samples = std::max<int64_t>(0, query.estimated_samples);
  Form form;
  form.Add("query", query.promql);
  if (query.kind == Query::Kind::kInstant) {
    req.path = "/api/v1/query";
    req.subject = "instant query `" + query.promql + "` at " + FormatTime(query.time);
    form.Add("time", FormatTime(query.time));
  } else {
    req.path = "/api/v1/query_range";
    const double step = ClampRangeStep(query.start, query.end, query.step);
    if (effective_step) *effective_step = step;
    req.subject = "range query `" + query.promql + "` [" + FormatTime(query.start) + ", " +
                  FormatTime(query.end) + "] step " + FormatStep(step);
    form.Add("start", FormatTime(query.start)).Add("end", FormatTime(query.end)).Add("step", FormatStep(step));
  }
  if (options_.thanos) form.Add("partial_response", "false");
  if (options_.query_stats) form.Add("stats", "all");
  req.form = form.str();
  return req;
}

namespace {

// Who was asked, for error messages.
struct Endpoint {
  std::string label;        // the description and/or URL naming the endpoint
  std::string base_url;
  bool sent_authorization = false;
  std::optional<Clock::time_point> deadline;   // the run's: reading an answer stops there too
};

// Maps a finished transfer to a Status; sets `retryable` for transient failures.
Status Evaluate(HttpQueryClient::Request& req, CURLcode code, long http, const Endpoint& endpoint, bool* retryable);

}  // namespace

namespace {


// One transfer's easy handle set up from scratch (a retry reuses the handle, never its options).
void ConfigureTransfer(HttpQueryClient::Request& r, size_t index, const std::string& base_url,
                       const std::vector<std::string>& header_lines, const RemoteEndpointOptions& options) {
  const double timeout_seconds = std::max(0.001, std::min(r.timeout_seconds, SecondsLeft(options.deadline)));
  r.sink.Release();
  r.sink.over_budget = false;
  r.url = base_url + r.path + (r.post || r.form.empty() ? "" : "?" + r.form);
  CURL* easy = r.easy ? r.easy : curl_easy_init();
  curl_easy_reset(easy);
  r.easy = easy;
  curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &r.sink);
  r.error[0] = '\0';
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, r.error.data());
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(timeout_seconds * 1000)));
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   std::max(1L, static_cast<long>(std::min(timeout_seconds, 10.0) * 1000)));
  if (options.compressed_answers.value_or(true)) curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");  // gzip when offered
  curl_easy_setopt(easy, CURLOPT_PRIVATE, reinterpret_cast<void*>(index));
  if (r.post) {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.form.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.form.size()));
  }
  if (!r.headers) {
    for (const auto& h : header_lines) r.headers = curl_slist_append(r.headers, h.c_str());
    if (r.post) r.headers = curl_slist_append(r.headers, "Content-Type: application/x-www-form-urlencoded");
  }
  if (r.headers) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, r.headers);
  ApplyTlsOptions(easy, options);
  ApplyUrlCredentials(easy, options);
  if (r.attempts == 0) r.first_start = Clock::now();
  ++r.attempts;
}

// A finished transfer judged: its status, its timing, and whether it goes back in the queue.
// Returns true when it is to be retried (its not_before set to the end of its backoff).
bool FinishTransfer(HttpQueryClient::Request& r, CURLcode code, long http, const Endpoint& endpoint,
                    const RemoteEndpointOptions& options) {
  bool retryable = false;
  r.status = Evaluate(r, code, http, endpoint, &retryable);
  if (code == CURLE_OPERATION_TIMEDOUT && SecondsLeft(options.deadline) <= 0.05) {
    // The transfer's timeout was the run's deadline, not the per-request one: say which.
    r.status = DeadlineExceededError("the run's deadline passed while waiting for " + r.subject + " at " +
                                     endpoint.label + r.path);
    retryable = false;
  }
  r.elapsed_seconds = std::chrono::duration<double>(Clock::now() - r.first_start).count();
  // -vvv: where a slow run spends its time, one line per answer (with what the server decoded for
  // it and what it returned, when the answer says).
  std::string decoded;
  if (r.streamed && r.streamed->ok()) {
    int64_t points = 0;
    for (const auto& series : (*r.streamed)->series) points += static_cast<int64_t>(series.samples.size());
    decoded = ", " + std::to_string((*r.streamed)->series.size()) + " series, " + std::to_string(points) + " points";
  }
  if (const auto samples = r.streamed ? r.samples_read : QueryStatsSamples(r.data))
    decoded += ", " + std::to_string(*samples) + " samples read";
  Log().trace("{:.3f} s, {} bytes{}: {}", r.elapsed_seconds, r.sink.body.size(), decoded, r.subject);
  // Decoded, or failed (what the error quotes of it is in its message): the text is not needed
  // while the rest of the batch arrives.
  if (r.streamed || !r.status.ok()) r.sink.Release();
  if (!r.status.ok() && retryable && r.attempts < r.max_attempts && SecondsLeft(options.deadline) > 0) {
    const double backoff = options.retry_backoff_seconds * std::pow(2.0, r.attempts - 1);
    r.not_before = Clock::now() + std::chrono::microseconds(static_cast<int64_t>(backoff * 1e6));
    return true;
  }
  if (!r.status.ok() && r.attempts > 1)
    r.status = Status(r.status.code(), r.status.message() + " (after " + std::to_string(r.attempts) + " attempts)");
  return false;
}

void ReleaseTransfers(std::vector<HttpQueryClient::Request>& requests) {
  for (auto& r : requests) {
    if (r.easy) curl_easy_cleanup(r.easy);
    if (r.headers) curl_slist_free_all(r.headers);
    r.easy = nullptr;
    r.headers = nullptr;
    r.sink.Release();
    r.sink.held = nullptr;
  }
}

// Who is asked, as error messages name it.
Endpoint DescribeEndpoint(const std::string& base_url, const std::string& description,
                          const RemoteEndpointOptions& options, const std::vector<std::string>& header_lines) {
  Endpoint endpoint;
  endpoint.base_url = base_url;
  // A description that already names the URL (the CLI's "endpoint URL") is not followed by it again.
  endpoint.label = description.empty() || description.find(base_url) != std::string::npos
                       ? base_url
                       : description + " " + base_url;
  endpoint.deadline = options.deadline;
  const UrlCredentials in_url = SplitUrlCredentials(options.url);
  endpoint.sent_authorization = !in_url.user.empty() || in_url.has_password ||
                                std::any_of(header_lines.begin(), header_lines.end(), [](const std::string& h) {
                                  return h.size() > 14 && strncasecmp(h.c_str(), "Authorization:", 14) == 0;
                                });
  return endpoint;
}

}  // namespace

void HttpQueryClient::Perform(std::vector<Request>& requests, int max_in_flight) {
  std::lock_guard<std::mutex> lock(mutex_);
  CURLM* multi = static_cast<CURLM*>(multi_);
  const int allowed = max_in_flight > 0 ? std::min(max_in_flight, options_.max_parallel) : options_.max_parallel;
  const size_t parallel = static_cast<size_t>(std::max(1, allowed));
  std::deque<size_t> waiting;
  for (size_t i = 0; i < requests.size(); ++i) waiting.push_back(i);
  size_t active = 0;
  int64_t samples_in_flight = 0;   // the estimates of the requests in flight
  int64_t answer_bytes_held = 0;   // the batch's bodies, arriving or kept (BodySink)
  for (Request& r : requests) {
    r.sink.held = &answer_bytes_held;
    r.sink.held_budget = AnswerBytesHeldBudget();
  }
  const Endpoint endpoint = DescribeEndpoint(base_url_, description_, options_, header_lines_);
  // A request that would take the estimates in flight past the bound waits for others to finish (never
  // when nothing is in flight); later requests that fit go first.
  auto fits = [&](const Request& r) {
    return active == 0 || options_.max_estimated_samples_in_flight <= 0 ||
           samples_in_flight + r.estimated_samples <= options_.max_estimated_samples_in_flight;
  };

  while (!waiting.empty() || active > 0) {
    const auto now = Clock::now();
    // Start whatever is due, in order; a request waiting out its backoff does not block later ones.
    for (auto it = waiting.begin(); it != waiting.end() && active < parallel;) {
      if (SecondsLeft(options_.deadline) <= 0) {
        Request& r = requests[*it];
        r.status = DeadlineExceededError("the run's deadline passed before " + r.subject + " could be answered" +
                                         (r.attempts > 0 ? " (after " + std::to_string(r.attempts) + " attempts)" : ""));
        it = waiting.erase(it);
      } else if (requests[*it].not_before <= now && fits(requests[*it])) {
        ConfigureTransfer(requests[*it], *it, base_url_, header_lines_, options_);
        curl_multi_add_handle(multi, requests[*it].easy);
        ++active;
        samples_in_flight += requests[*it].estimated_samples;
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode code = msg->data.result;
      void* priv = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
      const size_t i = reinterpret_cast<size_t>(priv);
      long http = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http);
      curl_multi_remove_handle(multi, easy);
      --active;
      samples_in_flight -= requests[i].estimated_samples;
      if (FinishTransfer(requests[i], code, http, endpoint, options_)) waiting.push_back(i);
    }
    if (active > 0) {
      curl_multi_poll(multi, nullptr, 0, 20, nullptr);
    } else if (!waiting.empty()) {
      auto next = std::min_element(waiting.begin(), waiting.end(), [&](size_t a, size_t b) {
        return requests[a].not_before < requests[b].not_before;
      });
      auto wake = requests[*next].not_before;
      if (options_.deadline && *options_.deadline < wake) wake = *options_.deadline;
      std::this_thread::sleep_until(wake);
    }
  }
  ReleaseTransfers(requests);
}

namespace {

Status Evaluate(HttpQueryClient::Request& req, CURLcode code, long http, const Endpoint& endpoint, bool* retryable) {
  const std::string where = " (" + req.subject + " at " + endpoint.label + req.path + ")";
  *retryable = false;
  if (code == CURLE_WRITE_ERROR && req.sink.over_budget) {
    return LimitExceeded(LimitId::kHttpResponseBytes,
                         "the answers held at once (twice the limit, " +
                             FormatLimitValue(LimitId::kHttpResponseBytes, AnswerBytesHeldBudget()) +
                             ", for the requests in flight)" + where);
  }
  if (code == CURLE_WRITE_ERROR) return ResponseTooLarge(where);
  if (code != CURLE_OK) {
    const std::string what = curl_easy_strerror(code);
    if (auto tls = TlsFailure(code, req.error.data(), endpoint.base_url)) {
      return Status(tls->code(), tls->message() + where);
    }
    switch (code) {
      case CURLE_OPERATION_TIMEDOUT:
        *retryable = true;
        return DeadlineExceededError("no answer within " + FormatStep(req.timeout_seconds) + " s" + where);
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
        *retryable = code != CURLE_COULDNT_RESOLVE_HOST;
        return UnavailableError("endpoint unreachable: " + what + where);
      default:
        return UnavailableError("request failed: " + what + where);
    }
  }
  req.streamed.reset();
  req.samples_read.reset();
  if (endpoint.deadline && Clock::now() >= *endpoint.deadline)
    return DeadlineExceededError("the run's deadline passed before the answer could be read" + where);
  if (req.query_answer && http >= 200 && http < 300) {
    StreamedQueryAnswer answer = ParseQueryAnswer(req.sink.body, endpoint.deadline);
    if (!answer.fallback) {
      req.warnings = std::move(answer.warnings);
      req.streamed = std::move(answer.result);
      req.samples_read = answer.samples_read;
      return Status::Ok();
    }
  }
  // A label-values or series answer is one array of values: refused as soon as it is longer than
  // allowed, not after all of it became a tree.
  JsonParseBounds bounds{endpoint.deadline, std::nullopt, "the answer to " + req.subject};
  if (!req.query_answer) bounds.array_limit = LimitId::kHttpSeriesPerQuery;
  ApiEnvelope envelope = ParseApiEnvelope(req.sink.body, bounds);
  if (envelope.stopped) return Status(envelope.stopped->code(), envelope.stopped->message() + where);
  req.warnings = std::move(envelope.warnings);
  if (envelope.present && envelope.status == "success" && http >= 200 && http < 300) {
    req.data = std::move(envelope.data);
    return Status::Ok();
  }
  if (envelope.present && envelope.status == "error") {
    const std::string& type = envelope.error_type;
    const std::string& error = envelope.error;
    const std::string message = "HTTP " + std::to_string(http) + " " + type + ": " + error + where;
    if (http == 503 || http == 502 || http == 504 || type == "unavailable") {
      *retryable = true;
      return UnavailableError(message);
    }
    if (type == "timeout" || error.find("context deadline exceeded") != std::string::npos) {
      return DeadlineExceededError(message);
    }
    if (http == 401 || http == 403) {
      return PermissionDeniedError(message + "; " + AuthRefusal(http, endpoint.sent_authorization));
    }
    if (http == 404) return NotFoundError(message);
    return InvalidArgumentError(message);  // bad_data (400), execution (422): the query itself
  }
  // No envelope: proxies, wrong paths and broken servers answer with plain text or HTML.
  const std::string message = "HTTP " + std::to_string(http) + " with a non-API body '" +
                              QuoteAnswer(req.sink.body) + "'" + where;
  if (http == 502 || http == 503 || http == 504) {
    *retryable = true;
    return UnavailableError(message);
  }
  if (http == 404) return NotFoundError(message + "; is the path prefix right?");
  if (http == 401 || http == 403) {
    return PermissionDeniedError("HTTP " + std::to_string(http) + " " + AuthRefusal(http, endpoint.sent_authorization) +
                                 " ('" + QuoteAnswer(req.sink.body) + "')" + where);
  }
  if (http == 400 && req.sink.body.find("HTTP request to an HTTPS server") != std::string::npos) {
    return FailedPreconditionError(endpoint.base_url + " speaks HTTPS, not plain HTTP: use https:// (HTTP 400 '" +
                                   QuoteAnswer(req.sink.body) + "')" + where);
  }
  return ParseError(message);
}

}  // namespace

namespace {

// Prometheus answers a range query with a matrix, and an instant query with a vector, a matrix
// (for a range selector such as `tb_step[7467s]`) or a scalar (for a scalar expression such as
// `scalar(up)` or a number, which a playbook may ask). A string answer, or anything but a matrix to a
// range query, comes from something else speaking the API. A scalar read as series is one series
// without labels; a verdict never excludes its host "" (evaluate_verdicts drops it with a note).
StatusOr<QueryResult> CheckResultTypeOf(Query::Kind kind, QueryResult result) {
  if (result.result_type == "matrix") return result;
  if (kind == Query::Kind::kInstant && (result.result_type == "vector" || result.result_type == "scalar")) return result;
  return ParseError("a " + QuoteAnswer(result.result_type) + " answer where " +
                    (kind == Query::Kind::kRange ? "a range query asks for a matrix"
                                                 : "an instant query asks for a vector, a matrix or a scalar"));
}

}  // namespace

StatusOr<QueryResult> HttpQueryClient::Run(const Query& query) {
  auto results = RunBatch({query});
  return std::move(results.front());
}

std::vector<StatusOr<QueryResult>> HttpQueryClient::RunBatch(const std::vector<Query>& queries) {
  std::vector<Request> requests;
  std::vector<double> steps(queries.size(), 0);
  std::vector<std::optional<Status>> invalid(queries.size());
  requests.reserve(queries.size());
  std::vector<size_t> request_of(queries.size(), SIZE_MAX);
  for (size_t i = 0; i < queries.size(); ++i) {
    const Query& q = queries[i];
    if (q.promql.empty()) {
      invalid[i] = InvalidArgumentError("empty PromQL" + (q.id.empty() ? "" : " for " + q.id));
    } else if (q.kind == Query::Kind::kRange && !(q.step > 0)) {
      invalid[i] = InvalidArgumentError("range query `" + q.promql + "` needs a positive step");
    } else if (q.kind == Query::Kind::kRange && q.end < q.start) {
      invalid[i] = InvalidArgumentError("range query `" + q.promql + "` ends before it starts");
    }
    if (invalid[i]) continue;
    request_of[i] = requests.size();
    requests.push_back(MakeQueryRequest(q, &steps[i]));
  }
  Perform(requests);
  std::vector<StatusOr<QueryResult>> results;
  results.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    if (invalid[i]) {
      results.emplace_back(*invalid[i]);
      continue;
    }
    Request& r = requests[request_of[i]];
    if (!r.status.ok()) {
      results.emplace_back(r.status);
      continue;
    }
    if (const auto samples = r.streamed ? r.samples_read : QueryStatsSamples(r.data)) samples_read_ += *samples;
    StatusOr<QueryResult> decoded = r.streamed ? std::move(*r.streamed) : DecodeQueryData(r.data);
    if (decoded.ok()) decoded = CheckResultTypeOf(queries[i].kind, std::move(decoded).value());
    if (!decoded.ok()) {
      results.emplace_back(Status(decoded.status().code(),
                                  decoded.status().message() + " (" + r.subject + " at " + base_url_ + r.path + ")"));
      continue;
    }
    decoded->warnings = std::move(r.warnings);
    CapWarnings(&decoded->warnings);
    decoded->effective_step = steps[i];
    decoded->elapsed_seconds = r.elapsed_seconds;
    decoded->attempts = r.attempts;
    results.emplace_back(std::move(decoded).value());
  }
  return results;
}

HttpQueryClient::Request HttpQueryClient::MakeLabelValuesRequest(const LabelValuesQuestion& question) const {
  Request req;
  req.post = false;  // the label-values endpoint is GET-only
  req.path = "/api/v1/label/" + UrlEncode(question.label) + "/values";
  req.subject = "label values of `" + question.label + "`";
  req.timeout_seconds = options_.timeout_seconds;
  req.max_attempts = 1 + std::max(0, options_.max_retries);
  Form form;
  form.Add("start", FormatTime(question.start)).Add("end", FormatTime(question.end));
  for (const auto& m : question.matchers) form.Add("match[]", m);
  if (options_.thanos) form.Add("partial_response", "false");
  req.form = form.str();
  return req;
}

StatusOr<std::vector<std::string>> HttpQueryClient::LabelValues(const std::string& label,
                                                                const std::vector<std::string>& matchers,
                                                                double start, double end) {
  return std::move(LabelValuesBatch({LabelValuesQuestion{label, matchers, start, end}}).front());
}

namespace {

Status NoSeriesMatcher() { return InvalidArgumentError("/api/v1/series needs at least one matcher"); }

// A performed request's `data` as `decode` reads it: the request's failure, or the decoder's naming
// the endpoint.
template <typename Decode>
auto DecodedData(HttpQueryClient::Request& r, const std::string& base_url, Decode decode)
    -> decltype(decode(r.data)) {
  if (!r.status.ok()) return r.status;
  auto value = decode(r.data);
  if (!value.ok()) return Status(value.status().code(), value.status().message() + " (" + base_url + ")");
  return value;
}

}  // namespace

std::vector<StatusOr<std::vector<std::string>>> HttpQueryClient::LabelValuesBatch(
    const std::vector<LabelValuesQuestion>& questions) {
  std::vector<Request> requests;
  requests.reserve(questions.size());
  for (const auto& q : questions) requests.push_back(MakeLabelValuesRequest(q));
  Perform(requests);
  std::vector<StatusOr<std::vector<std::string>>> results;
  results.reserve(requests.size());
  for (Request& r : requests) results.push_back(DecodedData(r, base_url_, DecodeLabelValues));
  return results;
}

HttpQueryClient::Request HttpQueryClient::MakeSeriesRequest(const SeriesQuestion& question) const {
  Request req;
  req.path = "/api/v1/series";
  req.subject = "series matching `" + question.matchers.front() + "`" + (question.matchers.size() > 1 ? " (+more)" : "");
  req.timeout_seconds = options_.timeout_seconds;
  req.max_attempts = 1 + std::max(0, options_.max_retries);
  Form form;
  for (const auto& m : question.matchers) form.Add("match[]", m);
  form.Add("start", FormatTime(question.start)).Add("end", FormatTime(question.end));
  if (options_.thanos) form.Add("partial_response", "false");
  req.form = form.str();
  return req;
}

StatusOr<std::vector<Labels>> HttpQueryClient::SeriesMatching(const std::vector<std::string>& matchers,
                                                              double start, double end) {
  if (matchers.empty()) return NoSeriesMatcher();
  std::vector<Request> batch;
  batch.push_back(MakeSeriesRequest({matchers, start, end}));
  Perform(batch);
  return DecodedData(batch.front(), base_url_, DecodeSeriesData);
}

// Series look-ups cost the server CPU, not waiting: at 128 nodes x 24 h on a loaded 2-core machine 14
// of them took 0.28-0.51 s one at a time and 0.63-1.09 s eight at a time (each across 96 blocks).
constexpr int kEstimatesInFlight = 2;

std::vector<StatusOr<int64_t>> HttpQueryClient::SeriesCountsForEstimate(const std::vector<SeriesQuestion>& questions) {
  std::vector<Request> requests;
  std::vector<size_t> request_of(questions.size(), SIZE_MAX);
  for (size_t i = 0; i < questions.size(); ++i) {
    if (questions[i].matchers.empty()) continue;
    request_of[i] = requests.size();
    requests.push_back(MakeSeriesRequest(questions[i]));
  }
  Perform(requests, kEstimatesInFlight);
  std::vector<StatusOr<int64_t>> counts;
  counts.reserve(questions.size());
  for (size_t i = 0; i < questions.size(); ++i) {
    if (request_of[i] == SIZE_MAX) {
      counts.emplace_back(NoSeriesMatcher());
      continue;
    }
    counts.push_back(DecodedData(requests[request_of[i]], base_url_, SeriesCountOf));
  }
  return counts;
}

StatusOr<HttpResponse> HttpQueryClient::Get(const std::string& path, double timeout_seconds) {
  return Transfer("GET", path, nullptr, "", timeout_seconds);
}

StatusOr<HttpResponse> HttpQueryClient::Post(const std::string& path, const std::string& body,
                                             const std::string& content_type, double timeout_seconds) {
  return Transfer("POST", path, &body, content_type, timeout_seconds);
}

StatusOr<HttpResponse> HttpQueryClient::Transfer(const char* method, const std::string& path, const std::string* body,
                                                 const std::string& content_type, double timeout_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  CURL* easy = curl_easy_init();
  HttpResponse response;
  const std::string url = base_url_ + path;
  const std::string what = std::string(method) + " " + url;
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, AppendBody);
  BodySink sink;   // a lone transfer: bounded by http.response_bytes alone
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_seconds * 1000));
  curl_slist* headers = nullptr;
  for (const auto& h : header_lines_) headers = curl_slist_append(headers, h.c_str());
  if (body) {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    if (!content_type.empty()) headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
  }
  if (headers) curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  ApplyTlsOptions(easy, options_);
  ApplyUrlCredentials(easy, options_);
  std::array<char, CURL_ERROR_SIZE> error{};
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, error.data());
  const CURLcode code = curl_easy_perform(easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &response.http_code);
  curl_easy_cleanup(easy);
  if (headers) curl_slist_free_all(headers);
  if (code == CURLE_OPERATION_TIMEDOUT) return DeadlineExceededError(what + " timed out");
  if (code == CURLE_WRITE_ERROR) return ResponseTooLarge(" to " + what);
  if (auto tls = TlsFailure(code, error.data(), base_url_)) return Status(tls->code(), tls->message() + " (" + what + ")");
  if (code != CURLE_OK) return UnavailableError(what + ": " + curl_easy_strerror(code));
  response.body = std::move(sink.body);
  return response;
}

}  // namespace diagnose
