import {
  type AgentAnswer,
  agentJwt,
  agentReason,
  createEd25519Jwk,
  discover,
  type Ed25519Key,
  hostJwt,
  hostName,
  importEd25519Key,
  request,
} from "./agents.ts";
import type { CommandContext } from "./commands.ts";
import { CliError, EXIT } from "./exit-codes.ts";
import type { SavedAgent } from "./profiles.ts";
import { printable } from "./terminal-text.ts";

/**
 * `agentpass agents add|list|revoke`: agents of the saved login, each with its own key, under
 * the login's host key (Agent Auth Protocol v1.0-draft). Registering asks the person to approve
 * the agent in the browser, with a code typed at `/device`, as `agentpass login` does.
 */

const NAME = /^[^\p{Cc}\p{Cf}]{1,100}$/u;

export async function addAgent(
  ctx: CommandContext,
  options: { name: string; sleep?: (ms: number) => Promise<void> },
): Promise<void> {
  const { name } = options;
  if (!NAME.test(name) || name.trim() === "") {
    throw new CliError(EXIT.USAGE, "An agent's name is 1 to 100 visible characters");
  }
  if (ctx.profiles.agents(ctx.url)[name]) {
    throw new CliError(
      EXIT.USAGE,
      `An agent named ${printable(name, 100)} is saved already. Pick another name, or revoke it: agentpass agents revoke ${printable(name, 100)}`,
    );
  }
  const host = hostKeyOf(ctx);
  const config = await discover(ctx.url);
  const agentJwk = createEd25519Jwk();
  const agent = importEd25519Key(agentJwk);
  if (!agent) throw new CliError(EXIT.ERROR, "Could not make an Ed25519 key");
  const registered = await request(config.endpoints.register, {
    bearer: hostJwt(host, config.issuer, ctx.now, { agent_public_key: agent.publicJwk }),
    json: { name, host_name: hostName() },
  });
  const agentId = registered.body.agent_id;
  const approval = registered.body.approval as Record<string, unknown> | undefined;
  if (registered.status !== 200 || typeof agentId !== "string" || !approval) {
    throw refused("register the agent", registered);
  }
  ctx.tell(
    `To approve agent ${printable(name, 100)}, open ${ctx.url}/device and enter the code ${printable(approval.user_code, 20)}`,
  );
  ctx.tell("Waiting for you to approve in the browser…");
  const sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  const interval = secondsOr(approval.interval, 5) * 1000;
  const deadline = ctx.now() + secondsOr(approval.expires_in, 600) * 1000;
  while (ctx.now() < deadline) {
    await sleep(interval);
    const status = await statusOf(ctx, host, config, agentId);
    if (status.status !== 200) throw refused("read the agent's status", status);
    switch (status.body.status) {
      case "pending":
        continue;
      case "active":
        ctx.profiles.saveAgent(ctx.url, name, { id: agentId, key: agentJwk });
        ctx.out(`Agent ${printable(name, 100)} is active (${printable(agentId, 40)})`);
        return;
      case "rejected":
        throw new CliError(EXIT.ERROR, "The agent was denied in the browser");
      default:
        throw new CliError(EXIT.ERROR, `The agent is ${printable(status.body.status, 20)}`);
    }
  }
  throw new CliError(EXIT.ERROR, "The code expired. Run: agentpass agents add again");
}

/** Each saved agent, with its state as AgentPass tells it now. */
export async function listAgents(ctx: CommandContext, options: { json: boolean }): Promise<void> {
  const saved = Object.entries(ctx.profiles.agents(ctx.url));
  if (saved.length === 0 && !options.json) {
    ctx.out(`No agents saved for ${ctx.url}. Add one: agentpass agents add <name>`);
    return;
  }
  const host = hostKeyOf(ctx);
  const config = await discover(ctx.url);
  const rows: Array<{ name: string; id: string; status: string }> = [];
  for (const [name, agent] of saved) {
    const answer = await statusOf(ctx, host, config, agent.id);
    const status =
      answer.status === 200 && typeof answer.body.status === "string"
        ? answer.body.status
        : answer.status === 404 || answer.body.error === "host_revoked"
          ? "revoked"
          : `unknown (${agentReason(answer)})`;
    rows.push({ name, id: agent.id, status });
  }
  if (options.json) return ctx.out(JSON.stringify(rows));
  for (const row of rows) {
    ctx.out(`${printable(row.name, 100)}\t${printable(row.id, 40)}\t${printable(row.status, 60)}`);
  }
}

/** Revokes a saved agent on the server (its host asks), then forgets it here. */
export async function revokeAgent(ctx: CommandContext, options: { name: string }): Promise<void> {
  const agent = ctx.profiles.agents(ctx.url)[options.name];
  if (!agent) {
    throw new CliError(EXIT.USAGE, `No agent named ${printable(options.name, 100)} is saved`);
  }
  const host = hostKeyOf(ctx);
  const config = await discover(ctx.url);
  const answer = await request(config.endpoints.revoke, {
    bearer: hostJwt(host, config.issuer, ctx.now),
    json: { agent_id: agent.id },
  });
  // Gone already (revoked with its host, say): forgetting it is all that is left to do.
  const gone = answer.status === 404 || answer.body.error === "host_revoked";
  if (answer.status !== 200 && !gone) throw refused("revoke the agent", answer);
  ctx.profiles.saveAgent(ctx.url, options.name, null);
  ctx.out(`Agent ${printable(options.name, 100)} is revoked`);
}

/** A JWT of a saved agent for AgentPass itself (`aud` its issuer): what a mint as it sends. */
export async function agentJwtFor(ctx: CommandContext, saved: SavedAgent): Promise<string> {
  const key = importEd25519Key(saved.key);
  if (!key) throw new CliError(EXIT.ERROR, "The saved agent's key is not an Ed25519 private key");
  const config = await discover(ctx.url);
  return agentJwt(key, hostKeyOf(ctx).thumbprint, saved.id, config.issuer, ctx.now);
}

function statusOf(
  ctx: CommandContext,
  host: Ed25519Key,
  config: Awaited<ReturnType<typeof discover>>,
  agentId: string,
): Promise<AgentAnswer> {
  const url = new URL(config.endpoints.status);
  url.searchParams.set("agent_id", agentId);
  return request(url.href, { bearer: hostJwt(host, config.issuer, ctx.now) });
}

/** The saved login's host key, made on first need. */
function hostKeyOf(ctx: CommandContext): Ed25519Key {
  if (!ctx.profiles.userKey(ctx.url)) {
    throw new CliError(EXIT.NOT_LOGGED_IN, `Not logged in to ${ctx.url}. Run: agentpass login`);
  }
  const key = importEd25519Key(ctx.profiles.hostKey(ctx.url, createEd25519Jwk));
  if (!key) {
    throw new CliError(EXIT.ERROR, `The host key saved for ${ctx.url} is not an Ed25519 key`);
  }
  return key;
}

function refused(what: string, answer: AgentAnswer): CliError {
  return new CliError(EXIT.ERROR, `AgentPass did not ${what} (${agentReason(answer)})`);
}

function secondsOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : fallback;
}
