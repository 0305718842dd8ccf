import type { KeyObject } from "node:crypto";
import type { Context } from "hono";
import { setCookie } from "hono/cookie";
import { z } from "zod";
import { openFlash, sealFlash } from "../../infra/crypto.ts";

const FlashSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("notice"), tone: z.enum(["ok", "error"]), text: z.string() }),
  /** A key just made: its secret, shown on the next page and never again. */
  z.object({ kind: z.literal("new-key"), key: z.string() }),
  /** The device login a person looked up, to confirm on the next page. */
  z.object({ kind: z.literal("device-code"), userCode: z.string() }),
]);

/** What a form post leaves for the page it redirects to, shown there once. */
export type Flash = z.infer<typeof FlashSchema>;

/** Long enough to follow a redirect; a flash not shown by then is gone. */
export const FLASH_LIFETIME_MS = 60_000;

/** Who may open a flash: the browser, and its session when signed in. */
export interface FlashReader {
  browserId: string;
  session: { idHash: string } | null;
}

export function notice(tone: "ok" | "error", text: string): Flash {
  return { kind: "notice", tone, text };
}

/**
 * Flash messages carried by a cookie from a form post to the page it redirects to (see
 * `sealFlash`): HttpOnly, SameSite=Lax, Secure over https, sent only to the page's path, opened
 * only by the browser and session it was left for and only on that page, and cleared by the
 * first GET of that page. A key shown once therefore survives the redirect without being stored,
 * and reloading the page does not show it again.
 */
export function createFlashCookies(options: {
  key: KeyObject;
  secure: boolean;
  clock: () => number;
}) {
  // Not `__Host-`: that prefix needs `Path=/`, and a flash goes to one page only.
  const name = options.secure ? "__Secure-agentpass_flash" : "agentpass_flash";
  const attributes = { httpOnly: true, secure: options.secure, sameSite: "Lax" } as const;

  return {
    /** Leaves `flash` for the next GET of `path` by `reader`. */
    leave(c: Context, reader: FlashReader, path: string, flash: Flash): void {
      const sealed = sealFlash(options.key, {
        text: JSON.stringify(flash),
        boundTo: boundTo(reader, path),
        expiresAt: options.clock() + FLASH_LIFETIME_MS,
      });
      setCookie(c, name, sealed, { ...attributes, path, maxAge: FLASH_LIFETIME_MS / 1000 });
    },

    /** The flash left for this page and reader, if any; its cookie is cleared. */
    take(c: Context, reader: FlashReader): Flash | null {
      const path = c.req.path;
      // A flash left for a parent path (`/partners` on `/partners/…`) is sent too: try each.
      for (const value of cookieValues(c, name)) {
        const text = openFlash(options.key, value, boundTo(reader, path), options.clock());
        if (text === null) continue;
        setCookie(c, name, "", { ...attributes, path, maxAge: 0 });
        return decodeFlash(text);
      }
      return null;
    },
  };
}

export type FlashCookies = ReturnType<typeof createFlashCookies>;

function boundTo(reader: FlashReader, path: string): string {
  return [reader.browserId, reader.session?.idHash ?? "", path].join("\n");
}

function cookieValues(c: Context, name: string): string[] {
  const prefix = `${name}=`;
  return (c.req.header("cookie") ?? "")
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair.startsWith(prefix))
    .map((pair) => pair.slice(prefix.length));
}

/** Only this service seals flashes, but one left by an older release may have another shape. */
function decodeFlash(text: string): Flash | null {
  try {
    const parsed = FlashSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
