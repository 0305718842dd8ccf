import { type Answer, definePage, type EndpointRequest, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { decideAgentApproval, findPendingAgentApproval } from "../../domain/agents-of-person.ts";
import { pendingGrantsOf } from "../../domain/capability-grants.ts";
import {
  decideDeviceLogin,
  findPendingDeviceLogin,
  isSameNetwork,
  networkOf,
  normalizeUserCode,
  type PendingDeviceLogin,
} from "../../domain/device-login.ts";
import type { RateLimiter } from "../../infra/rate-limit.ts";
import type { PendingAgentApproval } from "../../store/agent-store.ts";
import { byPerson } from "../web/audit.ts";
import { notice } from "../web/flash.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import type { SafeHtml } from "../web/html.ts";
import { csrfField, flashNotice, html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";

/**
 * The page of `agentpass login` (RFC 8628): the person types the code their terminal shows and
 * approves it while signed in (the API half is `http/api/device.ts`). The code typed goes to the
 * confirmation in a flash, never in a URL.
 */
export function deviceRoutes(
  ctx: IdentityContext,
  guard: WebGuard,
  options: {
    /** User codes one signed-in account may look up or decide: guessing codes is bounded. */
    perAccount: RateLimiter;
  },
): Page[] {
  function devicePage(
    web: SignedInRequest,
    body: SafeHtml,
    status: 200 | 400 | 404 | 429 = 200,
    headers: Record<string, string> = {},
  ): Answer {
    return htmlAnswer(
      renderPage({ title: "Log in a device", session: web.session, csrf: web.csrf, body }),
      status,
      headers,
    );
  }

  function codeForm(csrf: string, error = "", fromLink?: string) {
    return html`${
      fromLink !== undefined
        ? html`<p class="warning" role="note">A link never approves a login. If someone sent you this link, close this page: they are asking for a key to your account.</p>`
        : ""
    }<form method="post" action="/device" class="card">${csrfField(csrf)}
<label for="user-code">Type the code shown in your own terminal by <code>agentpass login</code></label>
<input id="user-code" name="code" type="text" autocomplete="off" autocapitalize="characters" maxlength="20" required placeholder="XXXX-XXXX" ${fromLink ? html`value="${fromLink}" ` : ""}${error ? html`aria-describedby="code-error" aria-invalid="true"` : ""}>
${error ? html`<p id="code-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Continue</button></p></form>`;
  }

  const ask = definePage({
    method: "GET",
    path: "/device",
    // A link's code (`verification_uri_complete`) only fills in the form, under a warning: the
    // person still sends it and approves on the next page, so a link someone sent cannot
    // bring them to an approval (RFC 8628 section 5.4).
    handle: guard.signedIn(async (request, web) => {
      if (web.flash?.kind === "device-code") {
        const pending = await findPendingDeviceLogin(ctx, web.flash.userCode);
        if (pending) return devicePage(web, confirmation(web, pending, request.clientAddress()));
        const agent = await findPendingAgent(web.flash.userCode);
        if (agent) {
          const asked = await pendingGrantsOf(ctx, agent.agent.id);
          return devicePage(
            web,
            agentConfirmation(web, agent, asked, web.flash.userCode, request.clientAddress()),
          );
        }
        return devicePage(web, codeForm(web.csrf, EXPIRED));
      }
      const linked = request.query.get("code");
      const fromLink = linked === null ? undefined : normalizeUserCode(linked);
      return devicePage(web, html`${flashNotice(web.flash)}${codeForm(web.csrf, "", fromLink)}`);
    }),
  });
  const lookUpOrDecide = definePage({
    method: "POST",
    path: "/device",
    handle: guard.signedIn(async (request, web) => {
      const limited = await options.perAccount.take(web.session.accountId);
      if (!limited.ok) {
        return devicePage(
          web,
          codeForm(web.csrf, "Too many codes tried. Wait a few minutes, then try again."),
          429,
          { "Retry-After": String(limited.resetSeconds) },
        );
      }
      const typed = (web.form.get("code") ?? "").slice(0, 20);
      const decision = web.form.get("decision");
      if (decision === "approve" || decision === "deny") {
        return decide(request, web, typed, decision === "approve");
      }
      const pending = typed ? await findPendingDeviceLogin(ctx, typed) : null;
      if (pending) {
        return guard.seeOther(web, "/device", { kind: "device-code", userCode: pending.userCode });
      }
      const agent = await findPendingAgent(typed);
      if (!agent) return devicePage(web, codeForm(web.csrf, NO_SUCH_CODE), 404);
      return guard.seeOther(web, "/device", {
        kind: "device-code",
        userCode: normalizeUserCode(typed),
      });
    }),
  });
  return [ask, lookUpOrDecide];

  async function decide(
    request: EndpointRequest,
    web: SignedInRequest,
    typed: string,
    approve: boolean,
  ) {
    const code = normalizeUserCode(typed);
    const agent = await findPendingAgent(code);
    if (agent) return decideAgent(request, web, agent, approve);
    // Read for the audit log: what the device called itself, and where it started from.
    const pending = code === "" ? null : await findPendingDeviceLogin(ctx, code);
    const decided =
      pending !== null && (await decideDeviceLogin(ctx, code, web.session.accountId, approve));
    if (!pending || !decided) {
      return devicePage(web, codeForm(web.csrf, EXPIRED), 400);
    }
    await ctx.audit.record({
      ...byPerson(request, web.session.accountId),
      action: approve ? "device_login.approve" : "device_login.deny",
      outcome: "success",
      subject: { kind: "device_login", id: null },
      detail: { clientName: pending.clientName, startedFrom: pending.startedFrom },
    });
    const outcome = approve
      ? notice(
          "ok",
          "Approved. Your terminal receives its key in a few seconds; you can close this page.",
        )
      : notice("error", "Denied. The terminal gets no key.");
    return guard.seeOther(web, "/device", outcome);
  }

  /** The agent registration a typed code approves, if it is one still waiting. */
  async function findPendingAgent(typed: string): Promise<PendingAgentApproval | undefined> {
    const code = normalizeUserCode(typed);
    if (code === "") return undefined;
    return findPendingAgentApproval(ctx, code);
  }

  /**
   * Approves or denies an agent: approving links its host to this person (a host another person
   * approved is refused as an unknown code: nothing tells whose it is).
   */
  async function decideAgent(
    request: EndpointRequest,
    web: SignedInRequest,
    pending: PendingAgentApproval,
    approve: boolean,
  ) {
    const chosen = web.form.getAll("capability");
    const decided = await decideAgentApproval(
      ctx,
      pending.deviceHash,
      web.session.accountId,
      approve ? "approve" : "deny",
      chosen,
    );
    if (decided !== "decided") return devicePage(web, codeForm(web.csrf, EXPIRED), 400);
    await ctx.audit.record({
      ...byPerson(request, web.session.accountId),
      action: approve ? "agent.approve" : "agent.deny",
      outcome: "success",
      subject: { kind: "agent", id: pending.agent.id },
      detail: {
        agentName: pending.agent.name,
        ...(approve && chosen.length > 0 && { capabilities: chosen.join(" ") }),
        hostId: pending.host.id,
        hostName: pending.host.name,
        startedFrom: pending.clientAddress,
      },
    });
    const outcome = approve
      ? notice("ok", "Approved. The agent can act for you now; you can close this page.")
      : notice("error", "Denied. The agent cannot act for you.");
    return guard.seeOther(web, "/device", outcome);
  }

  /** What the person checks before approving an agent: its name, its host, where it asked from. */
  function agentConfirmation(
    web: SignedInRequest,
    pending: PendingAgentApproval,
    asked: Awaited<ReturnType<typeof pendingGrantsOf>>,
    userCode: string,
    here: string,
  ) {
    const from = pending.clientAddress ?? "an unrecorded address";
    const elsewhere = pending.clientAddress !== null && !isSameNetwork(pending.clientAddress, here);
    const linked = pending.host.accountId !== null;
    const more = pending.agent.status === "active";
    return html`<div class="card">
<p class="warning" role="alert">${
      more
        ? html`An agent you approved asks to do more for you. Approve only what you asked it to do, just now.`
        : html`An agent asks to act for you. Approve only an agent you registered yourself, just now. Approving lets it prove to every AgentPass partner that it acts for <strong>${web.session.email}</strong>, until you revoke it on the Agents page.`
    }</p>
<dl>
<dt>Code</dt><dd><code id="device-code">${userCode}</code> <span class="muted">(it must be the code your own terminal shows)</span></dd>
<dt>Agent</dt><dd id="agent-name">${pending.agent.name} <span class="muted">(the agent's own name for itself, not verified)</span></dd>
<dt>Host</dt><dd>${pending.host.name ?? "unnamed"} <span class="muted">(its own name; key <code>${pending.host.thumbprint.slice(0, 12)}…</code>${linked ? ", one of your hosts" : ", new"})</span></dd>
<dt>From</dt><dd>${from}${pending.clientAddress ? html` <span class="muted">(network ${networkOf(pending.clientAddress)})</span>` : ""}</dd>
</dl>
${elsewhere ? html`<p class="warning" role="alert">This agent asked from another network than the one you are using now. If you did not register it on another machine of yours, deny it.</p>` : ""}
<form method="post" action="/device">${csrfField(web.csrf)}<input type="hidden" name="code" value="${userCode}">
${
  asked.length > 0
    ? html`<fieldset id="capabilities"><legend>It asks to</legend>${asked.map(
        (capability) =>
          html`<p><label><input type="checkbox" name="capability" value="${capability.name}" checked> <strong>${capability.description}</strong> <span class="muted">(${capability.name}, at ${capability.partnerName}${capability.limits ? html`; only with ${capability.limits}` : ""})</span></label></p>`,
      )}<p class="muted">Clear what you do not want it to do: that part is denied.</p></fieldset>`
    : ""
}
<p class="inline"><button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve" class="secondary">Approve</button></p></form></div>`;
  }

  /** What the person checks before approving: who asks, from where, since when. */
  function confirmation(web: SignedInRequest, pending: PendingDeviceLogin, here: string) {
    const minutes = Math.max(0, Math.round((ctx.clock() - pending.startedAt) / 60_000));
    const from = pending.startedFrom ?? "an unrecorded address";
    const elsewhere = pending.startedFrom !== null && !isSameNetwork(pending.startedFrom, here);
    return html`<div class="card">
<p class="warning" role="alert">Approve only a login you started yourself, just now, on a machine you control. Approving gives that machine a user key that acts as <strong>${web.session.email}</strong> with every AgentPass partner.</p>
<dl>
<dt>Code</dt><dd><code id="device-code">${pending.userCode}</code> <span class="muted">(it must be the code your own terminal shows)</span></dd>
<dt>Device</dt><dd>${pending.clientName} <span class="muted">(the device's own name for itself, not verified)</span></dd>
<dt>Started</dt><dd>${minutes === 0 ? "less than a minute ago" : `${minutes} minute${minutes === 1 ? "" : "s"} ago`} (${new Date(pending.startedAt).toISOString().slice(0, 16).replace("T", " ")} UTC)</dd>
<dt>From</dt><dd>${from}${pending.startedFrom ? html` <span class="muted">(network ${networkOf(pending.startedFrom)})</span>` : ""}</dd>
</dl>
${elsewhere ? html`<p class="warning" role="alert">This login was started from another network than the one you are using now. If you did not start it on another machine of yours, deny it.</p>` : ""}
<form method="post" action="/device" class="inline">${csrfField(web.csrf)}<input type="hidden" name="code" value="${pending.userCode}">
<button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve" class="secondary">Approve</button></form></div>`;
  }
}

const NO_SUCH_CODE = "No pending login has this code. It may have expired (codes last 10 minutes).";
const EXPIRED = "This login request has expired or was already decided.";
