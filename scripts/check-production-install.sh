#!/usr/bin/env bash
# The production install, as docs/operations.md ("Deploying") and the Dockerfile run it: a copy of
# the repository's files, `npm ci --omit=dev` (no dev dependency: no test tool, no linter, no
# pinned Node), then each service's documented entrypoint: the identity service serves and
# answers /readyz; the notes API migrates its database. Run by .ci/run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# The Node 24 the workspace pins (a container has its own, node:24).
node24="$root/node_modules/node/bin/node"
work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$work")
cd "$work"
export PATH="$(dirname "$node24"):$PATH"
npm ci --omit=dev --no-audit --no-fund
for dev_only in @biomejs/biome @redocly/cli fast-check; do
  if [ -e "node_modules/$dev_only" ]; then echo "a dev dependency was installed: $dev_only" >&2; exit 1; fi
done

port="$("$node24" -e 'const s=require("node:net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
DATA_DIR="$work/data" PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn \
  "$node24" --max-semi-space-size=4 --heap-growing-percent=30 apps/identity/src/bin.ts serve &
pid=$!
"$node24" -e '
  const url = process.argv[1];
  const deadline = Date.now() + 60_000;
  (async () => {
    for (;;) {
      try { const r = await fetch(url); if (r.status === 200) return console.log(`ready: ${url}`); } catch {}
      if (Date.now() > deadline) { console.error(`no answer from ${url}`); process.exit(1); }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();' "http://127.0.0.1:$port/readyz"
DATA_DIR="$work/data" LOG_LEVEL=warn "$node24" apps/notes/src/bin.ts migrate
echo "the production install serves"
