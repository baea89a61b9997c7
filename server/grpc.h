/*
 * grpc.h - grpc-port: Envoy's rate limit service over gRPC (HTTP/2
 * cleartext, prior knowledge) on the server's event loop (grpc.c).
 */
#ifndef CELLGATE_GRPC_H
#define CELLGATE_GRPC_H

/* Listen on grpc-bind:grpc-port when grpc-port is set. 0, or -1 (logged). */
int grpc_setup(void);

/* From cron: close connections idle for `timeout` seconds. */
void grpc_cron(void);

/* Close every gRPC connection and the listener. */
void grpc_shutdown(void);

#endif
