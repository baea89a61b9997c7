/*
 * grpc_streams.c - the table of grpc-port's streaming calls, looked up by
 * :path when a stream's headers come (grpc.c). A service adds its row
 * here and nowhere else; what a row is: stream_service.h.
 */
#include "server/envoy/grpc_streams.h"

#include <stddef.h>
#include <string.h>

#include "server/envoy/rlqs.h"
#include "server/envoy/rls.h"

static const struct grpc_stream_service *const services[] = {
    &rls_health_watch,          /* /grpc.health.v1.Health/Watch (rls.c) */
    &rlqs_stream,               /* StreamRateLimitQuotas (rlqs.c) */
};

const struct grpc_stream_service *
grpc_stream_service(const char *path)
{
    for (size_t i = 0; i < sizeof(services) / sizeof(services[0]); i++) {
        if (strcmp(services[i]->path, path) == 0) {
            return services[i];
        }
    }
    return NULL;
}

bool
grpc_is_streaming(const char *path)
{
    return grpc_stream_service(path) != NULL;
}
