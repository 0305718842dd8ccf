import type { KeyObject } from "node:crypto";
import type { EndpointRequest } from "@agentpass/http";
import { z } from "zod";
import { openFlash, sealFlash } from "../../infra/crypto.ts";
import { cookieHeader, readCookies } from "./cookies.ts";

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
const FLASH_LIFETIME_MS = 60_000;

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
    /** The cookie (`Set-Cookie`) that leaves `flash` for the next GET of `path` by `reader`. */
    leave(reader: FlashReader, path: string, flash: Flash): string {
      const sealed = sealFlash(options.key, {
        text: JSON.stringify(flash),
        boundTo: boundTo(reader, path),
        expiresAt: options.clock() + FLASH_LIFETIME_MS,
      });
      return cookieHeader(name, sealed, { ...attributes, path, maxAge: FLASH_LIFETIME_MS / 1000 });
    },

    /**
     * The flash left for this page and reader, if any, with the cookie that clears it; null when
     * none was left.
     */
    take(
      request: EndpointRequest,
      reader: FlashReader,
    ): { flash: Flash | null; clear: string } | null {
      const path = request.path;
      // A flash left for a parent path (`/partners` on `/partners/…`) is sent too: try each.
      for (const value of readCookies(request, name)) {
        const text = openFlash(options.key, value, boundTo(reader, path), options.clock());
        if (text === null) continue;
        return {
          flash: decodeFlash(text),
          clear: cookieHeader(name, "", { ...attributes, path, maxAge: 0 }),
        };
      }
      return null;
    },
  };
}

function boundTo(reader: FlashReader, path: string): string {
  return [reader.browserId, reader.session?.idHash ?? "", path].join("\n");
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
