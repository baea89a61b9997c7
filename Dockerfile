# cellgate as a sidecar image: docker build -t cellgate . && docker run -p 6379:6379 cellgate
# Options are arguments: docker run cellgate --maxmemory 64mb --requirepass s3cret

# Build stage: compile with the Debian toolchain and -dev packages.
FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc make libc6-dev pkg-config libuv1-dev libhiredis-dev libmicrohttpd-dev \
      libyaml-dev libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler \
      liblua5.1-0-dev lua-cjson-dev lua-bitop-dev libmsgpack-dev tzdata \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY lib lib
COPY server server
COPY protocol protocol
COPY algorithms algorithms
COPY conf conf
RUN make -j2 cellgate && strip cellgate && ./cellgate --version
# The runtime file system: the binary, exactly the shared libraries it
# loads (ldd), the config, the zone database RL.FIXED's CALENDAR and the
# limits file's `calendar:` read (tzdata's /usr/share/zoneinfo, without the
# leap-second "right/" zones cellgate refuses), and a passwd/group entry
# for an unprivileged user.
RUN mkdir -p /rootfs/usr/local/bin /rootfs/etc/cellgate \
 && cp cellgate /rootfs/usr/local/bin/ \
 && cp conf/cellgate.conf /rootfs/etc/cellgate/ \
 && mkdir -p /rootfs/usr/share \
 && cp -a /usr/share/zoneinfo /rootfs/usr/share/ \
 && rm -rf /rootfs/usr/share/zoneinfo/right \
 && for lib in $(ldd cellgate | grep -o '/[^ ]*'); do \
        mkdir -p "/rootfs$(dirname "$lib")" && cp -L "$lib" "/rootfs$lib"; \
    done \
 && echo 'cellgate:x:10001:10001:cellgate:/nonexistent:/usr/sbin/nologin' \
      > /rootfs/etc/passwd \
 && echo 'cellgate:x:10001:' > /rootfs/etc/group \
 && mkdir -p /rootfs/data && chown 10001:10001 /rootfs/data

# Runtime stage: only what the build stage gathered (a few MB); no shell,
# no package manager, no redis-tools: the health check is the binary.
FROM scratch
COPY --from=build /rootfs/ /
USER 10001:10001
# Snapshots go to /data: the default save rules write one on SIGTERM and in
# the background, and the next start loads it, so mount a volume there to
# keep limiter state across container restarts.
WORKDIR /data
VOLUME /data
EXPOSE 6379
# The health check pings the port the daemon (PID 1) was started with,
# arguments of `docker run` included (--port 7000 moves it too).
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["/usr/local/bin/cellgate", "--ping-pid", "1"]
# Listen on every interface inside the container (the port is published by
# the runtime); arguments given to `docker run` follow and win.
ENTRYPOINT ["/usr/local/bin/cellgate", "/etc/cellgate/cellgate.conf", "--bind", "0.0.0.0", "--dir", "/data"]
