#include "src/server/xds/xds_client.h"

#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "envoy/service/discovery/v3/discovery.grpc.pb.h"
#include "spdlog/spdlog.h"
#include <grpc/support/time.h>
#include <grpcpp/grpcpp.h>

#include "sluice/clock.h"

#include "src/server/observe/prometheus_text.h"
#include "src/server/xds/xds_backoff.h"
#include "src/server/xds/xds_config_convert.h"

namespace sluice::server {
namespace {

namespace discovery = ::envoy::service::discovery::v3;

// gRPC's own default receive bound, which the reference also keeps when the variable is unset.
constexpr size_t kDefaultMaxMessageBytes = size_t{4} << 20;
// How long a connect or a back-off sleeps before looking at Stop() again.
constexpr std::chrono::milliseconds kStopSlice{100};
constexpr std::chrono::seconds kLogRepeat{30};

absl::StatusOr<std::string> ReadFile(const std::string& what, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeCredentials(const XdsSettings& s) {
  if (!s.use_tls) return grpc::InsecureChannelCredentials();
  if (s.client_tls_cert.empty() != s.client_tls_key.empty()) {
    return absl::InvalidArgumentError(
        "CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY go together; set both "
        "or neither");
  }
  grpc::SslCredentialsOptions ssl;
  if (!s.server_tls_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadFile("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", s.server_tls_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!s.client_tls_cert.empty()) {
    absl::StatusOr<std::string> cert =
        ReadFile("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", s.client_tls_cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", s.client_tls_key);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

discovery::DiscoveryRequest FirstRequest(const XdsSettings& s) {
  discovery::DiscoveryRequest request;
  request.set_type_url(std::string(kRateLimitConfigTypeUrl));
  auto* node = request.mutable_node();
  node->set_id(s.node_id);
  node->set_user_agent_name("sluiced");
  auto* fields = node->mutable_metadata()->mutable_fields();
  for (const auto& [key, value] : s.node_metadata) (*fields)[key].set_string_value(value);
  return request;
}

gpr_timespec In(std::chrono::milliseconds d) {
  return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(d.count(), GPR_TIMESPAN));
}

}  // namespace

absl::StatusOr<std::unique_ptr<XdsClient>> XdsClient::Create(const XdsSettings& settings,
                                                             XdsClientCallbacks callbacks) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = MakeCredentials(settings);
  if (!credentials.ok()) return credentials.status();
  return std::unique_ptr<XdsClient>(
      new XdsClient(settings, std::move(callbacks), *std::move(credentials)));
}

XdsClient::XdsClient(XdsSettings settings, XdsClientCallbacks callbacks,
                     std::shared_ptr<grpc::ChannelCredentials> credentials)
    : settings_(std::move(settings)),
      callbacks_(std::move(callbacks)),
      credentials_(std::move(credentials)) {}

XdsClient::~XdsClient() { Stop(); }

void XdsClient::Start() {
  spdlog::info("xds: subscribing to {} as node '{}'", settings_.server_url, settings_.node_id);
  thread_ = std::thread([this] { Run(); });
}

void XdsClient::Stop() {
  {
    internal::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

XdsClientStats XdsClient::Stats() const {
  internal::MutexLock lock(&mu_);
  return stats_;
}

void AppendXdsFamilies(const XdsClientStats& stats, std::string& out) {
  AppendCounter(out, "sluice_xds_responses_total",
                "DiscoveryResponses received from the xDS server.", stats.responses);
  AppendCounter(out, "sluice_xds_acks_total", "xDS responses applied and ACKed.", stats.acks);
  AppendCounter(out, "sluice_xds_nacks_total",
                "xDS responses refused and NACKed (the config stays).", stats.nacks);
  AppendCounter(out, "sluice_xds_streams_total",
                "xDS streams opened (subscriptions and re-subscriptions).", stats.streams);
  AppendCounter(out, "sluice_xds_stream_failures_total",
                "xDS streams that ended, or connections to the xDS server that could not be made.",
                stats.stream_failures);
  AppendGauge(out, "sluice_xds_connected", "1 while a stream to the xDS server is open.",
              stats.connected ? 1 : 0);
}

bool XdsClient::Stopping() const {
  internal::MutexLock lock(&mu_);
  return stopping_;
}

void XdsClient::Sleep(std::chrono::milliseconds d) {
  internal::MutexLock lock(&mu_);
  wake_.wait_for(mu_, d, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stopping_; });
}

void XdsClient::LogError(const std::string& message) {
  const auto now = Clock::Real().Now();
  if (message == last_error_ && now - last_error_at_ < kLogRepeat) return;
  last_error_ = message;
  last_error_at_ = now;
  spdlog::error("xds: {}", message);
}

void XdsClient::Run() {
  XdsBackoff backoff(settings_);
  while (!Stopping()) {
    if (RunStream()) backoff.Reset();
    if (Stopping()) break;
    const std::chrono::milliseconds delay = backoff.Next();
    spdlog::info("xds: subscribing to {} again in {} ms", settings_.server_url, delay.count());
    Sleep(delay);
  }
}

bool XdsClient::RunStream() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(
      settings_.max_message_bytes > 0 ? settings_.max_message_bytes : kDefaultMaxMessageBytes));
  // Connection attempts every connect_retry_interval while the server is away, as the reference's
  // blocking dial retries; gRPC adds its own +-20% jitter.
  const int retry_ms =
      static_cast<int>(std::max<int64_t>(settings_.connect_retry_interval.count(), 1));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, retry_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, retry_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, retry_ms);
  if (settings_.use_tls && !settings_.server_tls_san.empty()) {
    args.SetSslTargetNameOverride(settings_.server_tls_san);
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(settings_.server_url, credentials_, args);

  // Connect in slices, so that Stop() never waits for a server that does not answer. As the
  // reference's blocking dial, wait on this channel (gRPC retries every connect_retry_interval)
  // until it connects; the back-off is for streams that end.
  auto next_report = Clock::Real().Now() + settings_.connect_retry_interval;
  while (!channel->WaitForConnected(In(kStopSlice))) {
    if (Stopping()) return false;
    if (Clock::Real().Now() >= next_report) {
      next_report += settings_.connect_retry_interval;
      {
        internal::MutexLock lock(&mu_);
        ++stats_.stream_failures;
      }
      LogError(absl::StrCat("cannot connect to ", settings_.server_url, " yet; trying every ",
                            settings_.connect_retry_interval.count(), " ms"));
    }
  }

  auto stub = discovery::AggregatedDiscoveryService::NewStub(channel);
  grpc::ClientContext context;
  for (const auto& [key, value] : settings_.additional_headers) context.AddMetadata(key, value);
  {
    internal::MutexLock lock(&mu_);
    if (stopping_) return false;
    context_ = &context;
    ++stats_.streams;
    stats_.connected = true;
  }
  spdlog::info("xds: connected to {}", settings_.server_url);
  auto stream = stub->StreamAggregatedResources(&context);
  std::string applied_version;
  {
    internal::MutexLock lock(&mu_);
    applied_version = stats_.version;
  }
  bool delivered = false;
  bool write_failed = !stream->Write(FirstRequest(settings_));
  if (!write_failed) {
    discovery::DiscoveryResponse response;
    while (stream->Read(&response)) {
      delivered = true;
      discovery::DiscoveryRequest next;
      next.set_type_url(std::string(kRateLimitConfigTypeUrl));
      next.set_response_nonce(response.nonce());
      absl::StatusOr<std::shared_ptr<const RateLimitConfig>> config =
          ParseXdsResponse(response, settings_);
      const bool accepted = config.ok();
      if (accepted) {
        applied_version = response.version_info();
        callbacks_.apply(absl::StrCat("xds ", settings_.server_url, " version ", applied_version),
                         *std::move(config));
        next.set_version_info(applied_version);
      } else {
        LogError(absl::StrCat("refused version '", response.version_info(), "', keeping version '",
                              applied_version, "': ", config.status().message()));
        if (callbacks_.reject) callbacks_.reject(config.status());
        next.set_version_info(applied_version);
        next.mutable_error_detail()->set_code(static_cast<int>(config.status().code()));
        next.mutable_error_detail()->set_message(std::string(config.status().message()));
      }
      {
        internal::MutexLock lock(&mu_);
        ++stats_.responses;
        ++(accepted ? stats_.acks : stats_.nacks);
        stats_.version = applied_version;
      }
      if (!stream->Write(next)) {
        write_failed = true;
        break;
      }
    }
  }
  // A failed write means the call is over, but reads may still wait: end them, then collect why.
  if (write_failed) context.TryCancel();
  const grpc::Status status = stream->Finish();
  {
    internal::MutexLock lock(&mu_);
    context_ = nullptr;
    stats_.connected = false;
    if (!stopping_) ++stats_.stream_failures;
  }
  if (!Stopping()) {
    LogError(absl::StrCat("stream to ", settings_.server_url, " ended: ",
                          status.error_message().empty() ? "no message" : status.error_message(),
                          " (code ", static_cast<int>(status.error_code()), ")"));
  }
  return delivered;
}

}  // namespace sluice::server
