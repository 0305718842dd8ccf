/**
 * The person's part of an agent registration, for the Python tests: approves the pending agent
 * whose code is argv[2] as the account of argv[3], as they would on AgentPass's /device page, on
 * the identity service's own database (the environment names it). Prints `decided`, or why not.
 */
import { loadConfig } from "../../../apps/identity/src/config.ts";
import { findAccountByEmail } from "../../../apps/identity/src/domain/accounts.ts";
import { hashUserCode, normalizeUserCode } from "../../../apps/identity/src/domain/device-login.ts";
import { openIdentityService } from "../../../apps/identity/src/service.ts";

const [userCode = "", email = ""] = process.argv.slice(2);
const loaded = loadConfig(process.env);
if (!loaded.ok) throw new Error(loaded.error);
const service = await openIdentityService(loaded.config);
try {
  const { ctx } = service;
  const account = await findAccountByEmail(ctx, email);
  if (!account.ok) throw new Error(`no account ${email}`);
  const codeHash = hashUserCode(ctx, normalizeUserCode(userCode));
  const pending = await ctx.agents.findPendingAgentApproval(codeHash, ctx.clock());
  console.log(
    pending
      ? await ctx.agents.decideAgentApproval(
          pending.deviceHash,
          account.account.id,
          "approve",
          ctx.clock(),
        )
      : "gone",
  );
} finally {
  await service.close();
}
