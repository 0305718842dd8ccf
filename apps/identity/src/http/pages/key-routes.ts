import { type Answer, definePage, type EndpointRequest, type Page } from "@agentpass/http";
import type { IdentityContext } from "../../context.ts";
import { findOwnedKey, issueKey, renameKey, revokeKey } from "../../domain/credentials.ts";
import type { KeyKind } from "../../domain/keys.ts";
import type { KeyRecord } from "../../store/store.ts";
import { byPerson } from "../web/audit.ts";
import { confirmPage } from "../web/confirm-page.ts";
import { notFoundPage } from "../web/error-page.ts";
import { notice } from "../web/flash.ts";
import type { SignedInRequest, WebGuard } from "../web/guard.ts";
import { csrfField, html, renderPage } from "../web/page.ts";
import { htmlAnswer } from "../web/page-answers.ts";

/** Whose keys a request is about, once the signed-in account may act for them. */
interface KeyOwner {
  /** The account (user keys) or partner (partner keys). */
  id: string;
  /** The page that lists the keys, where every action returns. */
  page: string;
  /** The path of the keys themselves: `/keys`, `/partners/…/keys`. */
  keysPath: string;
}

interface OwnedKey {
  owner: KeyOwner;
  key: KeyRecord;
}

interface KeyRoutesOptions {
  kind: KeyKind;
  /** The route of the keys, with the owner's parameters: `/keys`, `/partners/{id}/keys`. */
  route: string;
  ownerOf(request: EndpointRequest, web: SignedInRequest): Promise<KeyOwner | null>;
  /** The owner's page, answered 400 with `message`, when a new key's name is refused. */
  refuseNewKey(request: EndpointRequest, web: SignedInRequest, message: string): Promise<Answer>;
}

const WORDS = {
  user: {
    noun: "key",
    revokeTitle: "Revoke this key?",
    revokeButton: "Revoke key",
    revokeEffect: (key: KeyRecord) =>
      html`Agents using <strong>${key.name}</strong> (<code>${key.displayPrefix}…</code>) stop working at once, and every session token made with it stops verifying.`,
  },
  partner: {
    noun: "partner key",
    revokeTitle: "Revoke this partner key?",
    revokeButton: "Revoke partner key",
    revokeEffect: (key: KeyRecord) =>
      html`Verifications with <strong>${key.name}</strong> (<code>${key.displayPrefix}…</code>) get 403 from the next request on.`,
  },
} as const;

const INVALID_NAME = "Give the key a name of 1 to 100 characters.";

/**
 * What can be done to the keys of an account or a partner, the same for both: create (the key
 * goes to the owner's page in a flash, shown once), rename, and revoke after a confirmation.
 * Every success answers 303 to the owner's page.
 */
export function keyRoutes(
  ctx: IdentityContext,
  guard: WebGuard,
  options: KeyRoutesOptions,
): Page[] {
  const { kind, route } = options;
  const words = WORDS[kind];
  const capitalized = words.noun[0]?.toUpperCase() + words.noun.slice(1);

  /** Wraps the handler of a page about the key of the URL, when the account may act on it. */
  function ownedKey(
    handler: (
      web: SignedInRequest,
      owned: OwnedKey,
      request: EndpointRequest,
    ) => Promise<Answer> | Answer,
  ) {
    return guard.signedIn(async (request, web) => {
      const owner = await options.ownerOf(request, web);
      const key = owner && (await findOwnedKey(ctx, kind, owner.id, request.params.keyId ?? ""));
      return owner && key ? handler(web, { owner, key }, request) : notFoundPage(web);
    });
  }

  /** Records what the signed-in person did to a key of theirs (or of their partner). */
  function audit(
    request: EndpointRequest,
    web: SignedInRequest,
    change: "create" | "rename" | "revoke",
    key: KeyRecord,
    detail: Record<string, string>,
  ) {
    return ctx.audit.record({
      ...byPerson(request, web.session.accountId),
      action: `${kind}_key.${change}`,
      outcome: "success",
      subject: { kind: `${kind}_key`, id: key.id },
      detail: kind === "partner" ? { ...detail, partnerId: key.ownerId } : detail,
    });
  }

  /** The rename form; after a refused name, with the name typed and why it was refused. */
  function renamePage(web: SignedInRequest, { owner, key }: OwnedKey, refused?: { typed: string }) {
    const error = refused ? INVALID_NAME : "";
    return htmlAnswer(
      renderPage({
        title: `Rename ${words.noun}`,
        session: web.session,
        csrf: web.csrf,
        body: html`<form method="post" action="${owner.keysPath}/${key.id}/rename" class="card">${csrfField(web.csrf)}
<p>The ${words.noun} <code>${key.displayPrefix}…</code> keeps working under its new name.</p>
<label for="key-new-name">Name</label>
<input id="key-new-name" name="name" type="text" required maxlength="100" value="${refused?.typed.slice(0, 200) ?? key.name}" ${error ? html`aria-describedby="name-error" aria-invalid="true"` : ""}>
${error ? html`<p id="name-error" class="error" role="alert">${error}</p>` : ""}
<p><button type="submit">Save name</button> <a href="${owner.page}">Cancel</a></p></form>`,
      }),
      error ? 400 : 200,
    );
  }

  const create = definePage({
    method: "POST",
    path: route,
    handle: guard.signedIn(async (request, web) => {
      const owner = await options.ownerOf(request, web);
      if (!owner) return notFoundPage(web);
      const issued = await issueKey(ctx, kind, owner.id, web.form.get("name") ?? "");
      if (!issued.ok) return options.refuseNewKey(request, web, INVALID_NAME);
      await audit(request, web, "create", issued.record, { name: issued.record.name });
      return guard.seeOther(web, owner.page, { kind: "new-key", key: issued.key });
    }),
  });
  const renameForm = definePage({
    method: "GET",
    path: `${route}/{keyId}/rename`,
    handle: ownedKey((web, owned) => renamePage(web, owned)),
  });
  const rename = definePage({
    method: "POST",
    path: `${route}/{keyId}/rename`,
    handle: ownedKey(async (web, owned, request) => {
      const { owner, key } = owned;
      const typed = web.form.get("name") ?? "";
      const renamed = await renameKey(ctx, kind, owner.id, key.id, typed);
      if (!renamed.ok && renamed.code === "INVALID_NAME") {
        return renamePage(web, owned, { typed });
      }
      if (!renamed.ok) return notFoundPage(web);
      await audit(request, web, "rename", key, { from: key.name, name: renamed.name });
      const text = `${capitalized} ${key.name} is now called ${renamed.name}.`;
      return guard.seeOther(web, owner.page, notice("ok", text));
    }),
  });
  const confirmRevocation = definePage({
    method: "GET",
    path: `${route}/{keyId}/revoke`,
    handle: ownedKey((web, { owner, key }) =>
      confirmPage(web, {
        title: words.revokeTitle,
        text: words.revokeEffect(key),
        action: `${owner.keysPath}/${key.id}/revoke`,
        button: words.revokeButton,
        cancel: owner.page,
      }),
    ),
  });
  const revocation = definePage({
    method: "POST",
    path: `${route}/{keyId}/revoke`,
    handle: ownedKey(async (web, { owner, key }, request) => {
      const confirmation = `${owner.keysPath}/${key.id}/revoke`;
      if (web.form.get("confirm") !== "yes") return guard.seeOther(web, confirmation);
      const revoked = await revokeKey(ctx, kind, key.id);
      if (revoked.ok) await audit(request, web, "revoke", key, { name: key.name });
      return guard.seeOther(web, owner.page, notice("ok", `${capitalized} ${key.name} revoked.`));
    }),
  });
  return [create, renameForm, rename, confirmRevocation, revocation];
}
