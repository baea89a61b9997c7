/*
 * grpc_streams.h - the streaming gRPC calls grpc-port serves: one table
 * (grpc_streams.c) of struct grpc_stream_service (stream_service.h).
 */
#ifndef CELLGATE_GRPC_STREAMS_H
#define CELLGATE_GRPC_STREAMS_H

#include <stdbool.h>

#include "server/envoy/stream_service.h"

/* The service of a streaming call's :path; NULL for a unary one. */
const struct grpc_stream_service *grpc_stream_service(const char *path);

/* Is path a streaming call (h2_budget's `streaming` predicate)? */
bool grpc_is_streaming(const char *path);

#endif
