import { definePage, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import type { AuditAction } from "../../domain/audit.ts";
import type { StoredAuditEvent } from "../../store/audit-store.ts";
import type { WebGuard } from "../web/guard.ts";
import { formatTime, html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";
import { describeUserAgent } from "../web/user-agent.ts";

/** Events shown on one page; older ones are a link away. */
const SECURITY_LOG_PAGE_SIZE = 50;

const WHAT: Record<AuditAction, string> = {
  sign_in: "Sign-in",
  sign_out: "Sign-out",
  sign_out_everywhere: "Signed out everywhere",
  "user_key.create": "User key created",
  "user_key.rename": "User key renamed",
  "user_key.revoke": "User key revoked",
  "partner_key.create": "Partner key created",
  "partner_key.rename": "Partner key renamed",
  "partner_key.revoke": "Partner key revoked",
  "consent.approve": "App allowed",
  "consent.deny": "App denied",
  "grant.create": "App connected",
  "grant.revoke": "Connected app revoked",
  "device_login.approve": "Device login approved",
  "device_login.deny": "Device login denied",
  "agent.register": "Agent registration asked for",
  "agent.approve": "Agent approved",
  "agent.deny": "Agent denied",
  "agent.revoke": "Agent revoked",
  "agent.reactivate": "Agent reactivated",
  "agent.rotate_key": "Agent key replaced",
  "host.revoke": "Agent host revoked",
  "host.rotate_key": "Agent host key replaced",
  "partner.create": "Partner created",
  "partner.update": "Partner changed",
  "partner.verify_site": "Partner website checked",
  "partner.delete": "Partner deleted",
  "partner.suspend": "Partner suspended",
  "partner.reinstate": "Partner reinstated",
  "partner_resource.add": "Partner resource added",
  "partner_resource.remove": "Partner resource removed",
  "account.create": "Account created",
  "account.delete": "Account deleted",
  "account.export": "Account data exported",
  "sealing_key.rotate": "Sealing key rotated",
  "sealing_key.rewrap": "Sealing keys rewrapped",
};

/** Who acted, when it was neither the person nor the service. */
const BY: Record<string, string> = { admin: "by the operator", client: "by the app" };

/** Why the service did by itself what an event records. */
const REASON: Record<string, string> = {
  code_reused: "its authorization code was used twice",
  undelivered: "the device never received it",
};

/** What someone else's refused sign-in on the person's address was, by its reason. */
const ATTEMPT: Record<string, string> = {
  wrong_code: "Someone typed a wrong sign-in code for your address",
  no_open_code: "Someone tried a sign-in code for your address when none was open",
};

const OUTCOME: Record<string, string> = {
  success: "done",
  failure: "failed",
  locked_out: "failed: code locked",
};

/**
 * `/account/security`: the signed-in person's own audit events (sign-ins, key changes,
 * approvals), newest first, with the address and browser each came from. Only events of their
 * own account: the filter is the session's account, never a parameter.
 */
export function securityLogPages(ctx: IdentityContext, guard: WebGuard): Page[] {
  const log = definePage({
    method: "GET",
    path: "/account/security",
    handle: guard.signedIn(async (request, web) => {
      const before = Number(request.query.get("before"));
      const events = await ctx.audit.list({
        accountId: web.session.accountId,
        beforeId: Number.isSafeInteger(before) && before > 0 ? before : undefined,
        limit: SECURITY_LOG_PAGE_SIZE,
      });
      const last = events.at(-1);
      const attempts = events.filter(isSomeoneElses);
      const own = events.filter((event) => !isSomeoneElses(event));
      const older =
        events.length === SECURITY_LOG_PAGE_SIZE && last
          ? html`<p><a href="/account/security?before=${last.id}">Older events</a></p>`
          : "";
      return htmlAnswer(
        renderPage({
          title: "Security log",
          session: web.session,
          csrf: web.csrf,
          body: html`<p>Sign-ins, key changes and approvals on your account, newest first, with where they came from. If you do not recognise one, revoke the keys concerned and <a href="/account">sign out everywhere</a>.</p>
${
  own.length === 0
    ? html`<p class="empty">Nothing recorded yet.</p>`
    : html`<table id="security-log"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Outcome</th><th scope="col">From</th><th scope="col" class="optional">Browser</th></tr></thead>
<tbody>${own.map(eventRow)}</tbody></table>`
}${
  attempts.length === 0
    ? ""
    : html`<h2>Sign-in attempts by others</h2>
<p>Anyone who knows your address can ask for a code or type one; these were refused. Nobody got in through them: repeats from one network are counted on one line.</p>
<table id="sign-in-attempts"><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">From</th><th scope="col" class="optional">Browser</th></tr></thead>
<tbody>${attempts.map(attemptRow)}</tbody></table>`
}${older}`,
        }),
      );
    }),
  });
  return [log];
}

/** A refused sign-in no one signed in caused: a stranger's doing, or the person's own typo. */
function isSomeoneElses(event: StoredAuditEvent): boolean {
  return event.action === "sign_in" && event.actorKind === "service" && event.outcome !== "success";
}

function eventRow(event: StoredAuditEvent) {
  const named = event.detail?.name ?? event.detail?.clientName;
  const name = typeof named === "string" ? named : null;
  const reason = typeof event.detail?.reason === "string" ? event.detail.reason : undefined;
  const what =
    event.action === "grant.revoke" && reason === "refresh_token_reused"
      ? html`AgentPass disconnected <strong>${name ?? "an app"}</strong>: an old refresh token was used again, which can mean it was copied`
      : html`${WHAT[event.action as AuditAction] ?? event.action}${name ? html`: <strong>${name}</strong>` : ""}`;
  const why = BY[event.actorKind] ?? (reason === undefined ? undefined : REASON[reason]);
  const by = why ? html` <span class="muted">(${why})</span>` : "";
  return html`<tr data-action="${event.action}"><td>${formatTime(event.at)}</td>
<td>${what}${by}</td>
<td>${OUTCOME[event.outcome] ?? event.outcome}</td>
<td>${event.clientAddress ?? html`<span class="muted">—</span>`}</td>
<td class="optional">${event.userAgent === null ? "" : describeUserAgent(event.userAgent)}</td></tr>`;
}

/** Repeats of one refusal from one network: how many, from where, first and last. */
function attemptRow(event: StoredAuditEvent) {
  const reason = typeof event.detail?.reason === "string" ? event.detail.reason : "";
  const what = ATTEMPT[reason] ?? "Someone failed to sign in with your address";
  const locked = event.outcome === "locked_out" ? ", using up the code's tries" : "";
  const times = event.occurrences === 1 ? "once" : `${event.occurrences} times`;
  const from = event.clientAddress ?? "several networks";
  const when =
    event.lastAt === null
      ? formatTime(event.at)
      : `first ${formatTime(event.at)}, last ${formatTime(event.lastAt)}`;
  return html`<tr data-action="${event.action}" data-occurrences="${event.occurrences}"><td>${when}</td>
<td>${what}${locked}, ${times} from ${from}</td>
<td>${from}</td>
<td class="optional">${event.userAgent === null ? "" : describeUserAgent(event.userAgent)}</td></tr>`;
}
