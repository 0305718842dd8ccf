/**
 * Registers resource URLs (RFC 8707) for a partner of the identity service whose environment
 * this runs in (DATA_DIR, …), as the dashboard's partner page does: the admin command line has
 * no command for it. Usage: node register-resource.ts <partnerId> <url>...
 */
import { loadConfig } from "../../../apps/identity/src/config.ts";
import { addPartnerResource } from "../../../apps/identity/src/domain/oauth.ts";
import { createLogger } from "../../../apps/identity/src/infra/logger.ts";
import { openIdentityService } from "../../../apps/identity/src/service.ts";

const [partnerId, ...urls] = process.argv.slice(2);
const loaded = loadConfig();
if (!loaded.ok) throw new Error(loaded.error);
if (!partnerId || urls.length === 0)
  throw new Error("usage: register-resource.ts <partnerId> <url>...");
const service = await openIdentityService(
  { ...loaded.config, migrateOnStart: false },
  { logger: createLogger("silent", "stderr") },
);
try {
  for (const url of urls) {
    const added = await addPartnerResource(service.ctx, partnerId, url);
    if (!added.ok) throw new Error(`cannot register ${url}: ${added.code}`);
  }
} finally {
  await service.close();
}
