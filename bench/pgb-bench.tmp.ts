import { execFileSync } from "node:child_process";
import { startPgBouncer } from "../packages/db/src/testing.ts";
const bouncer = await startPgBouncer("postgres://postgres@127.0.0.1:5432/postgres", { poolMode: "transaction", serverConnections: 10 });
try {
  execFileSync(process.execPath, ["bench/run.ts", "--only", "verify,mint", "--rounds", "3", "--duration", "5", "--notes", "1000"], {
    stdio: "inherit", env: { ...process.env, DATABASE_URL: bouncer.databaseUrl, DATABASE_POOL_MODE: "transaction" },
  });
} finally { await bouncer.close(); }
