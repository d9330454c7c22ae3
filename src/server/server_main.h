// What sluiced does once its settings are known (src/server/main.cc parses them): set up logging,
// build the stores, load the config, start every listener and sink the settings ask for, then
// serve until SIGTERM or SIGINT, reloading the config on change and on SIGHUP.
//
// Thread safety: call from the main thread, once.
#ifndef SLUICE_SERVER_SERVER_MAIN_H_
#define SLUICE_SERVER_SERVER_MAIN_H_

#include <string>

#include "absl/status/status.h"

#include "sluice/config.h"

#include "src/server/settings.h"

namespace sluice::server {

// SetUpLogging()
//
// Applies settings.log_level and settings.log_format ("text", or "json" for the reference's JSON
// lines) to every spdlog logger, and routes gRPC's own log lines through spdlog so that they take
// the same format. Returns InvalidArgument for an unknown level or format.
absl::Status SetUpLogging(const ServerSettings& settings);

// RunServer()
//
// Serves per `settings` until SIGTERM or SIGINT. Returns the process exit status: 0 after a clean
// stop, 1 when a listener, the store or the config cannot be set up, 2 for a bad setting.
int RunServer(const ServerSettings& settings);

// ValidateConfig()
//
// Loads `path` with `options`; prints the rules and returns 0, or prints the error and returns 1.
int ValidateConfig(const std::string& path, const ConfigLoadOptions& options);

}  // namespace sluice::server

#endif  // SLUICE_SERVER_SERVER_MAIN_H_
