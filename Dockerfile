# syntax=docker/dockerfile:1

# --- build: compile TypeScript with the full toolchain ---
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json nest-cli.json ./
COPY src ./src
COPY packages/client-sdk ./packages/client-sdk
RUN npm run build && npm prune --omit=dev

# --- runtime: production dependencies and compiled code only, as a non-root user ---
FROM node:22-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
# The client SDK's browser build, served to the web console.
COPY --from=build --chown=node:node /app/packages/client-sdk/dist ./packages/client-sdk/dist
COPY --chown=node:node package.json ./
USER node
EXPOSE 9400
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CLOUD_PORT || 9400) + '/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM closes every socket with a close frame and exits 0.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
