# The AgentPass services in one image: the identity service (agentpass-server) and the notes API
# (agentpass-notes); a container runs one of them, chosen by its command (compose.yaml).
# Build: docker build -t agentpass .        Run: see docs/operations.md, "Deploying".

# Stage 1: the production install. `npm ci --omit=dev` builds @agentpass/verify and the CLI
# (their prepare step, with TypeScript, a runtime dependency of the workspace for this reason).
FROM node:24-bookworm-slim AS install
WORKDIR /app
COPY . .
RUN npm ci --omit=dev --no-audit --no-fund \
  && npm cache clean --force

# Stage 2: what runs, as an unprivileged user, with the compile cache filled at build time so no
# process loads the type stripper (docs/operations.md, "In production").
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    NODE_COMPILE_CACHE=/app/.compile-cache \
    DATA_DIR=/data \
    HOST=0.0.0.0
WORKDIR /app
COPY --from=install --chown=root:root /app /app
# /keys: where compose's notes-partner job writes the notes API's partner key (a new volume
# takes the folder's owner from the image, so the node user can write there).
RUN mkdir -p /data /keys /app/.compile-cache \
  && node apps/identity/src/bin.ts --help > /dev/null \
  && node apps/notes/src/bin.ts --help > /dev/null \
  && chown -R node:node /data /keys /app/.compile-cache
USER node
EXPOSE 4000 4001
# The identity service by default; the notes API's command is in compose.yaml.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=30", "apps/identity/src/bin.ts", "serve"]
