# Evalgate's image: one image for `evalgate serve`, `evalgate worker` and `evalgate migrate` (the command
# chooses), configured through EVALGATE_* environment variables only (secrets also as EVALGATE_*_FILE;
# see docs/deploy.md). The stage `sandbox` (`--target sandbox`) is the sandbox runner's image
# (`evalgate sandbox-runner`, compose.yaml's `sandbox` service): the same plus Python and bubblewrap.
# NODE_IMAGE: the Node.js base of the build stage (Debian bookworm, with npm); any 22.13+ or 24.18-.
# DEBIAN_IMAGE: the run stage's base, to which only the node binary is copied (no npm, no headers).
ARG NODE_IMAGE=node:22-bookworm-slim
ARG DEBIAN_IMAGE=debian:bookworm-slim

# Build: the dependencies (better-sqlite3 compiled for this Node.js), the bundled server and CLI and the
# dashboard; then, apart, what the bundle loads from node_modules at run time and a stripped node.
FROM ${NODE_IMAGE} AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 make g++ binutils >/dev/null \
 && rm -rf /var/lib/apt/lists/*
# node-gyp builds against the base image's own headers instead of downloading them.
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 esbuild
COPY tsconfig.json ./
COPY scripts/bundle.mjs scripts/externals.mjs scripts/runtime-modules.mjs scripts/
COPY src src
COPY web web
# The bundle is the server (tsc's dist/ is only for the npm package's client, so it is not built here).
RUN node scripts/bundle.mjs \
 && find dist/bundle -name '*.map' -delete \
 && npm run build:web
# The packages the bundle leaves outside (native addons, packages that read their own files) and their
# dependencies, without what only compilers, editors and debuggers read.
RUN node scripts/runtime-modules.mjs /runtime \
 && cd /runtime/node_modules \
 && rm -rf better-sqlite3/deps better-sqlite3/src better-sqlite3/build/Release/obj* \
      better-sqlite3/build/Release/.deps better-sqlite3/build/Release/test_extension.node \
 && find . -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.cts' -o -name '*.d.mts' \
      -o -name '*.md' -o -name '*.tsbuildinfo' \) -delete \
 && strip -o /runtime/node /usr/local/bin/node

# Run: Debian with node, a non-root user (node, uid 1000); the data directory /data (mount a volume).
FROM ${DEBIAN_IMAGE} AS runtime
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    EVALGATE_HOST=0.0.0.0 \
    EVALGATE_PORT=8080 \
    EVALGATE_DATA_DIR=/data \
    EVALGATE_LOG_FORMAT=json
COPY --from=build /runtime/node /usr/local/bin/node
RUN groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && mkdir -p /data && chown node:node /data && chmod 700 /data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /runtime/node_modules node_modules
# The server and CLI as one bundle (the evalgate command).
COPY --from=build /app/dist/bundle dist/bundle
COPY --from=build /app/web/dist web/dist
COPY python python
COPY data data
# The docs, served to MCP clients as resources (evalgate://docs/<page>).
COPY docs docs
RUN ln -s /app/dist/bundle/evalgate.js /usr/local/bin/evalgate
USER node
EXPOSE 8080
# /healthz of `serve` (a worker has no HTTP port: compose.yaml turns the check off for workers).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.EVALGATE_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["evalgate"]
CMD ["serve"]

# The sandbox runner: the image above plus what code evaluators run with — Python 3 with pip and venv
# (requirements' virtualenvs) and bubblewrap (the sandbox), from Debian's packages. Only this image has
# them: the API and the run workers stay without Python.
FROM runtime AS sandbox
USER root
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv bubblewrap >/dev/null \
 && rm -rf /var/lib/apt/lists/* /root/.cache \
 && mkdir -p /sandbox-token && chown node:node /sandbox-token
# The runner runs as root (of the container; compose.yaml gives it only CAP_SYS_ADMIN and CAP_NET_ADMIN on
# top of Docker's defaults): bubblewrap then needs no user namespace, and each worker drops every
# capability and runs as a uid of its own (docs/deploy.md, "Code evaluators").
ENV EVALGATE_SANDBOX_RUNNER_HOST=0.0.0.0 \
    EVALGATE_SANDBOX_RUNNER_PORT=8090
EXPOSE 8090
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.EVALGATE_SANDBOX_RUNNER_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["sandbox-runner"]

# The default target: Evalgate's image (above, without the sandbox's additions).
FROM runtime
