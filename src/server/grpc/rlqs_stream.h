// RlqsStream: one Envoy's StreamRateLimitQuotas stream (rlqs_grpc_service.h): its reports and
// top-ups, and what it writes back. Internal to the service.
//
// Thread safety: a stream's methods are called by gRPC and by the service's top-up pass;
// it guards its own state.
#ifndef SLUICE_SERVER_GRPC_RLQS_STREAM_H_
#define SLUICE_SERVER_GRPC_RLQS_STREAM_H_

#include <string>

#include <grpcpp/grpcpp.h>

#include "src/server/grpc/rlqs_grpc_service_impl.h"

namespace sluice::server::rlqs_internal {

// A new stream of `client` (docs/rlqs.md, "Clients"), registered with `impl` for top-ups; it
// deletes itself when gRPC is done with it.
grpc::ServerBidiReactor<Reports, Response>* NewRlqsStream(RlqsGrpcService::Impl& impl,
                                                          std::string client);

// A stream refused past the service's bound: finished at once with RESOURCE_EXHAUSTED.
grpc::ServerBidiReactor<Reports, Response>* NewRefusedRlqsStream();

// Starts a top-up round on `stream` if it has grants held below their share and is idle.
// REQUIRES: the caller holds impl.streams_mu and `stream` is registered.
void MaybeTopUp(RlqsStream& stream);

}  // namespace sluice::server::rlqs_internal

#endif  // SLUICE_SERVER_GRPC_RLQS_STREAM_H_
