import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { agentState } from "../../domain/agents.ts";
import {
  findAgentOfPerson,
  listAgentsOfPerson,
  revokeAgentOfPerson,
  revokeHostOfPerson,
} from "../../domain/agents-of-person.ts";
import type { HostRecord, ListedAgent } from "../../store/agent-store.ts";
import { byPerson } from "../web/audit.ts";
import { confirmPage } from "../web/confirm-page.ts";
import { notFoundPage } from "../web/error-page.ts";
import { notice } from "../web/flash.ts";
import type { WebGuard } from "../web/guard.ts";
import { formatTime, html } from "../web/page.ts";

type ListedHost = HostRecord & { agents: ListedAgent[] };

/**
 * A person's agents, on `/keys`, by host (the machine or process they run on): each agent with
 * its state, its last use by each partner, and a revoke that confirms and ends that agent alone
 * on the next request everywhere; a host's revoke ends every agent under it.
 */
export function agentsSection(ctx: IdentityContext, hosts: ListedHost[]) {
  const now = ctx.clock();
  const hostBlocks = hosts.map((host) => {
    const rows = host.agents.map((agent) => {
      const state = agentState(agent, ctx.agentLifetimes, now);
      const seen = agent.partners.length
        ? html`${agent.partners.map(
            (partner) =>
              html`<span data-partner="${partner.partnerId}">${partner.partnerName}: ${formatTime(partner.lastAt)} (${String(partner.count)}×)</span><br>`,
          )}`
        : html`<span class="muted">no partner yet</span>`;
      const revocable = state !== "revoked" && state !== "rejected";
      return html`<tr data-agent="${agent.id}"><td><strong>${agent.name}</strong><br><span class="muted">${agent.id}</span></td>
<td data-state="${state}">${state}</td>
<td class="optional">${formatTime(agent.createdAt)}</td>
<td>${seen}</td>
<td class="actions">${revocable ? html`<a class="button danger" href="/agents/${agent.id}/revoke" aria-label="Revoke ${agent.name}">Revoke</a>` : ""}</td></tr>`;
    });
    return html`<section class="card" data-host="${host.id}"><h3>${host.name ?? "Unnamed host"} <span class="muted">(its own name; key <code>${host.thumbprint.slice(0, 12)}…</code>, ${host.status})</span></h3>
<table><thead><tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col" class="optional">Registered</th><th scope="col">Seen by partners</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table>
${host.status === "revoked" ? "" : html`<p><a class="button danger" href="/hosts/${host.id}/revoke" aria-label="Revoke host ${host.name ?? host.id}">Revoke host and all its agents</a></p>`}</section>`;
  });
  return html`<h2 id="agents">Agents</h2>
<p>Each agent has its own key, kept on the machine it runs on (its host). Partners see which agent acts for you; revoking one agent leaves the others working.</p>
${hosts.length === 0 ? html`<p class="empty">No agents. Register one with <code>agentpass agents add &lt;name&gt;</code>.</p>` : hostBlocks}`;
}

/** The confirmations and revocations of one agent, or one host, of the signed-in account. */
export function agentRoutes(ctx: IdentityContext, guard: WebGuard): Page[] {
  async function findHost(accountId: string, hostId: string) {
    const hosts = await listAgentsOfPerson(ctx, accountId);
    return hosts.find((host) => host.id === hostId);
  }
  async function findAgent(accountId: string, agentId: string) {
    return findAgentOfPerson(ctx, accountId, agentId);
  }

  const agentPath = "/agents/{agentId}/revoke";
  const hostPath = "/hosts/{hostId}/revoke";
  return [
    definePage({
      method: "GET",
      path: agentPath,
      handle: guard.signedIn(async (request, web) => {
        const agent = await findAgent(web.session.accountId, request.params.agentId ?? "");
        if (!agent) return notFoundPage(web);
        return confirmPage(web, {
          title: "Revoke this agent?",
          text: html`<strong>${agent.name}</strong> stops working at once, on every partner: its JWTs and the tokens it minted stop verifying. Your other agents keep working.`,
          action: `/agents/${agent.id}/revoke`,
          button: "Revoke agent",
          cancel: "/keys#agents",
        });
      }),
    }),
    definePage({
      method: "POST",
      path: agentPath,
      handle: guard.signedIn(async (request, web) => {
        const agentId = request.params.agentId ?? "";
        const agent = await findAgent(web.session.accountId, agentId);
        if (!agent) return notFoundPage(web);
        if (web.form.get("confirm") !== "yes")
          return guard.seeOther(web, `/agents/${agentId}/revoke`);
        if (await revokeAgentOfPerson(ctx, web.session.accountId, agent.id)) {
          await ctx.audit.record({
            ...byPerson(request, web.session.accountId),
            action: "agent.revoke",
            outcome: "success",
            subject: { kind: "agent", id: agent.id },
            detail: { agentName: agent.name, hostId: agent.hostId },
          });
        }
        return guard.seeOther(web, "/keys#agents", notice("ok", `${agent.name} revoked.`));
      }),
    }),
    definePage({
      method: "GET",
      path: hostPath,
      handle: guard.signedIn(async (request, web) => {
        const host = await findHost(web.session.accountId, request.params.hostId ?? "");
        if (!host) return notFoundPage(web);
        return confirmPage(web, {
          title: "Revoke this host?",
          text: html`Every agent on <strong>${host.name ?? "this host"}</strong> (${String(host.agents.length)}) stops working at once, and the host can register no other.`,
          action: `/hosts/${host.id}/revoke`,
          button: "Revoke host",
          cancel: "/keys#agents",
        });
      }),
    }),
    definePage({
      method: "POST",
      path: hostPath,
      handle: guard.signedIn(async (request, web) => {
        const hostId = request.params.hostId ?? "";
        const host = await findHost(web.session.accountId, hostId);
        if (!host) return notFoundPage(web);
        if (web.form.get("confirm") !== "yes")
          return guard.seeOther(web, `/hosts/${hostId}/revoke`);
        const revoked = await revokeHostOfPerson(ctx, web.session.accountId, host.id);
        await ctx.audit.record({
          ...byPerson(request, web.session.accountId),
          action: "host.revoke",
          outcome: "success",
          subject: { kind: "host", id: host.id },
          detail: { hostName: host.name, agentsRevoked: revoked ?? 0 },
        });
        return guard.seeOther(web, "/keys#agents", notice("ok", "Host revoked with its agents."));
      }),
    }),
  ];
}
