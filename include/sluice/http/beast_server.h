// Moved: the Beast HTTP server is sluice::net::BeastServer (sluice/net/beast_server.h), in the
// network room beside the accept loop, so that the gRPC engines need not link the middleware.
// These names stay for code written against the old header.
#ifndef SLUICE_HTTP_BEAST_SERVER_H_
#define SLUICE_HTTP_BEAST_SERVER_H_

#include "sluice/net/beast_server.h"

namespace sluice::http {

using BeastServer = ::sluice::net::BeastServer;
using BeastServerOptions = ::sluice::net::BeastServerOptions;

}  // namespace sluice::http

#endif  // SLUICE_HTTP_BEAST_SERVER_H_
