# rlserver's container image: a static binary built beforehand, on nothing at all.
#
#   deploy/build-image [TAG]          # builds the binaries and this image (podman, else docker)
#
# The build context is not the repository: it holds the binary at
# <os>/<arch>/rlserver (linux/amd64/rlserver, linux/arm64/rlserver: GoReleaser's
# layout, $TARGETPLATFORM) and an empty directory data/. deploy/build-image
# makes it; by hand:
#
#   CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
#     -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" -o ctx/linux/amd64/rlserver ./cmd/rlserver
#   mkdir ctx/data
#   podman build --format docker --platform linux/amd64 -f Dockerfile -t rlserver ctx
#
# (--format docker: the OCI format has no HEALTHCHECK, and podman drops it.)
# The image holds /rlserver and /data, nothing else: no shell, no libc, no CA
# certificates (rlserver makes no TLS connection a public CA must vouch for).
# deploy/Dockerfile.multistage builds from source instead, for a machine that
# can pull golang.
FROM scratch

ARG TARGETPLATFORM
ARG VERSION=0.1.0-dev
ARG REVISION=unknown
ARG CREATED
ARG SOURCE=https://github.com/rlserver/rlserver
# The repository names no license yet: NOASSERTION is SPDX's word for that.
ARG LICENSES=NOASSERTION

LABEL org.opencontainers.image.title="rlserver" \
      org.opencontainers.image.description="A rate-limit server that speaks the Redis protocol: one atomic command decides, Raft clusters keep the counts" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"

# Owned by root and not writable by the server's user, who owns only /data
# (so that a new named volume, which copies its mount point's owner, is
# writable by it).
COPY ${TARGETPLATFORM}/rlserver /rlserver
COPY --chown=65532:65532 data/ /data/

# The container's defaults are environment variables, not CMD: arguments
# given to `run` replace CMD whole, but add to these (a flag on the command
# line wins over its RLSERVER_ variable). Every client reaches the node from
# another network namespace, hence 0.0.0.0; protected mode stays on, so a
# node without a password (RLSERVER_REQUIREPASS, --config, --aclfile) still
# refuses them. The log is JSON on standard output, where log collectors
# look for an application's; an error that stops the start is still on
# standard error. The metrics port serves /readyz to the HEALTHCHECK below.
ENV RLSERVER_BIND=0.0.0.0 \
    RLSERVER_DATA_DIR=/data \
    RLSERVER_LOG_FORMAT=json \
    RLSERVER_LOG_OUTPUT=stdout \
    RLSERVER_METRICS_PORT=9380

USER 65532:65532
VOLUME /data
# 6380 clients, 16380 the cluster bus (client port + 10000), 9380 metrics,
# /healthz, /readyz and the status page; 8081 Envoy's rate limit service
# over gRPC, served only with --grpc-port 8081 --rls-config FILE.
EXPOSE 6380 16380 9380 8081
# Ready: every shard this node serves has a leader (rlserver health reads
# /readyz). A cluster's node is not ready until a majority of its members is
# up, hence the start period.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/rlserver", "health"]
# SIGTERM hands leaderships over and snapshots before the exit: give it time
# (podman run --stop-timeout 60, compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/rlserver"]
