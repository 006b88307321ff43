# Evalgate's image: one image for `evalgate serve` and `evalgate worker` (the command chooses), configured
# through EVALGATE_* environment variables only (secrets also as EVALGATE_*_FILE; see docs/deploy.md).
# NODE_IMAGE: the Node.js 22 base of both stages (Debian bookworm, with npm); any 22.13+ or 24.18-.
ARG NODE_IMAGE=node:22-bookworm-slim

# Build: the dependencies (better-sqlite3 compiled for this Node.js), the server and the dashboard, then
# only the production dependencies are kept.
FROM ${NODE_IMAGE} AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 make g++ >/dev/null \
 && rm -rf /var/lib/apt/lists/*
# node-gyp builds against the base image's own headers instead of downloading them.
ENV npm_config_nodedir=/usr/local
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && npm rebuild better-sqlite3 esbuild
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/bundle.mjs scripts/
COPY src src
COPY web web
RUN npm run build \
 && find dist/bundle -name '*.map' -delete \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -rf node_modules/better-sqlite3/build/Release/obj* node_modules/better-sqlite3/build/Release/.deps \
      node_modules/better-sqlite3/build/Release/test_extension.node node_modules/better-sqlite3/deps \
      node_modules/better-sqlite3/src

# Run: a non-root user (node, uid 1000), the data directory a volume at /data.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    NODE_OPTIONS=--max-semi-space-size=64 \
    EVALGATE_HOST=0.0.0.0 \
    EVALGATE_PORT=8080 \
    EVALGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules node_modules
# The server and CLI as one bundle (the evalgate command); tsc's dist/ is for the npm package's client.
COPY --from=build /app/dist/bundle dist/bundle
COPY --from=build /app/web/dist web/dist
COPY python python
COPY data data
# The docs, served to MCP clients as resources (evalgate://docs/<page>).
COPY docs docs
RUN ln -s /app/dist/bundle/evalgate.js /usr/local/bin/evalgate \
 && mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# /healthz of `serve` (a worker has no HTTP port: compose.yaml turns the check off for workers).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.EVALGATE_PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["evalgate"]
CMD ["serve"]
