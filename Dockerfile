# syntax=docker/dockerfile:1

# --- build: compile TypeScript with the full toolchain ---
# Debian, not Alpine: onnxruntime-node (Silero VAD) ships binaries linked against glibc.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No scripts: "prepare" builds, and the sources are not copied yet (no dependency has install scripts).
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY packages/client-sdk ./packages/client-sdk
# Nest is a peer dependency (shared with apps built on the gateway) and, for development, a dev
# one too, which --omit=dev would prune: drop the dev entries so the peers are kept.
RUN npm run build \
  && node -e "const p = require('./package.json'); for (const name in p.peerDependencies) delete p.devDependencies[name]; require('fs').writeFileSync('package.json', JSON.stringify(p))" \
  && npm prune --omit=dev --no-audit --no-fund

# --- runtime: production dependencies, compiled code and data files only, as a non-root user ---
FROM node:22-bookworm-slim
# tini reaps the child processes of stdio MCP upstreams and forwards signals to node.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
# Reachable from outside the container, so it will not start without AUTH_TOKENS (or
# ALLOW_UNAUTHENTICATED=true): an image run as is must not be an open gateway.
ENV CLOUD_HOST=0.0.0.0
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The client SDK's browser build, served to the web console.
COPY --from=build --chown=node:node /app/packages/client-sdk/dist ./packages/client-sdk/dist
COPY --chown=node:node package.json ./
COPY --chown=node:node data ./data
USER node
EXPOSE 9400
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CLOUD_PORT || 9400) + '/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains: turns in flight finish (SHUTDOWN_DRAIN_TIMEOUT), sockets close with 1001, exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
