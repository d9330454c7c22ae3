// Moved: the accept back-off is sluice::net (sluice/net/accept_backoff.h). These names stay for
// code written against the old header.
#ifndef SLUICE_HTTP_ACCEPT_BACKOFF_H_
#define SLUICE_HTTP_ACCEPT_BACKOFF_H_

#include "sluice/net/accept_backoff.h"

namespace sluice::http {

using AcceptBackoff = ::sluice::net::AcceptBackoff;
using ListenerStats = ::sluice::net::ListenerStats;

}  // namespace sluice::http

#endif  // SLUICE_HTTP_ACCEPT_BACKOFF_H_
