# imagegate in a container: `docker build -t imagegate .`, then
# `docker run -p 8080:8080 -v imagegate-data:/data imagegate` (one node on the embedded SQLite and
# disk storage), or `docker compose up` for several nodes (compose.yaml). docs/operations.md says
# what each setting here is for.

FROM node:20-bookworm-slim AS build
# better-sqlite3 builds from source where no prebuilt binary fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
# npm ci runs `prepare`, which builds dist/; then only what runs in production stays.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    IMAGEGATE_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The drain starts on SIGTERM; node is PID 1 here, so nothing swallows the signal.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
