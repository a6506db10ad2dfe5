# A minimal container for the server on the embedded SQLite store. The image's own Node is 24, the version
# package.json pins; only the runtime dependencies are installed. Not built on the project's machines (no
# container runtime there): see README, "Service files".
FROM node:24-bookworm-slim

ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data

WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY generated ./generated

# Owned by the unprivileged user the server runs as; everything it writes lives here.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 3000

# /readyz: 200 once the database answers with this build's schema, 503 while starting or shutting down.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Node runs as PID 1 with no npm in between, so SIGTERM reaches the server, which drains and re-queues its runs.
# (`docker run --init` adds a reaper for the sandbox processes function blocks start, should any be orphaned.)
STOPSIGNAL SIGTERM
CMD ["node", "bin/start.js"]
