# hloserve, the appliance image. Two targets (docs/install.md):
#   docker build --target cpu  -t hloserve:cpu  .    the pinned XLA CPU plugin
#   docker build --target cuda -t hloserve:cuda .    XLA's CUDA plugin (NVIDIA GPUs, CUDA 13)
# Ports: 8000 KServe V2 HTTP/REST, 8001 KServe V2 gRPC, 8002 Prometheus metrics and health
# (/healthz, /readyz), 8003 console and control API.
# Volumes: /models (the model repository), /var/lib/hloserve (state: cache_dir).
# Configuration: /etc/hloserve/node.yaml (deploy/container/node.yaml), HLOSERVE_* overrides.

ARG NODE_IMAGE=node:20-bookworm-slim
ARG CUDA_IMAGE=nvidia/cuda:13.0.1-cudnn-runtime-ubuntu24.04

# ---- build: fetch and hash-check the plugins, build the addon and the TypeScript ----
FROM ${NODE_IMAGE} AS build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates g++ make python3 python3-pip \
    && rm -rf /var/lib/apt/lists/*
# node-gyp builds against the image's own Node headers, never downloading them.
ENV npm_config_nodedir=/usr/local \
    HLOSERVE_PLUGIN_DIR=/opt/hloserve/plugins \
    HLOSERVE_SKIP_ABI_HEADER=1
WORKDIR /opt/hloserve
COPY . .
# npm ci runs native's install script: pip downloads the pinned CPU plugin wheel, its sha256 is
# checked against native/plugins.json, then the addon is compiled.
RUN npm ci --no-audit --no-fund \
    && npm run build \
    && npm prune --omit=dev --no-audit --no-fund \
    && rm -rf plugins/.wheels .cache /root/.npm /root/.cache

FROM build AS build-cuda
RUN node native/scripts/fetch-plugin.mjs cuda13 && rm -rf plugins/.wheels /root/.cache

# ---- cpu: the runtime image ----
FROM ${NODE_IMAGE} AS cpu
# A fixed uid/gid, so that volumes can be chowned to it on the host (chown 10001:10001 DIR).
RUN groupadd --system --gid 10001 hloserve \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/hloserve --shell /usr/sbin/nologin hloserve \
    && mkdir -p /models /var/lib/hloserve /etc/hloserve \
    && chown 10001:10001 /var/lib/hloserve
COPY --from=build /opt/hloserve /opt/hloserve
COPY deploy/container/node.yaml /etc/hloserve/node.yaml
ENV NODE_ENV=production \
    HLOSERVE_PLUGIN_DIR=/opt/hloserve/plugins \
    HLOSERVE_CACHE_DIR=/var/lib/hloserve
WORKDIR /var/lib/hloserve
USER 10001:10001
VOLUME ["/models", "/var/lib/hloserve"]
EXPOSE 8000 8001 8002 8003
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:8002/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=8", "--min-semi-space-size=8", "/opt/hloserve/engine/dist/bundle/cli.js"]
CMD ["serve", "--config", "/etc/hloserve/node.yaml"]

# ---- cuda: the same server on the CUDA runtime, with XLA's CUDA plugin ----
FROM ${NODE_IMAGE} AS node
FROM ${CUDA_IMAGE} AS cuda
COPY --from=node /usr/local/bin/node /usr/local/bin/node
# A fixed uid/gid, so that volumes can be chowned to it on the host (chown 10001:10001 DIR).
RUN groupadd --system --gid 10001 hloserve \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/hloserve --shell /usr/sbin/nologin hloserve \
    && mkdir -p /models /var/lib/hloserve /etc/hloserve \
    && chown 10001:10001 /var/lib/hloserve
COPY --from=build-cuda /opt/hloserve /opt/hloserve
COPY deploy/container/node.yaml /etc/hloserve/node.yaml
ENV NODE_ENV=production \
    HLOSERVE_PLUGIN_DIR=/opt/hloserve/plugins \
    HLOSERVE_CACHE_DIR=/var/lib/hloserve \
    HLOSERVE_RUNTIME_PLUGIN=cuda \
    HLOSERVE_CUDA_PLUGIN=/opt/hloserve/plugins/jax-cuda13-pjrt-0.11.2/jax_plugins/xla_cuda13/xla_cuda_plugin.so
WORKDIR /var/lib/hloserve
USER 10001:10001
VOLUME ["/models", "/var/lib/hloserve"]
EXPOSE 8000 8001 8002 8003
HEALTHCHECK --interval=15s --timeout=5s --start-period=180s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:8002/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=8", "--min-semi-space-size=8", "/opt/hloserve/engine/dist/bundle/cli.js"]
CMD ["serve", "--config", "/etc/hloserve/node.yaml"]
