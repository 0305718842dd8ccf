import { isDatabaseUnavailable } from "@agentpass/db";
import { answerError, type FastPath, incomingHeader, writeJson } from "@agentpass/http";
import { SESSION_TOKEN_HEADER } from "@agentpass/verify";
import type { Logger } from "pino";
import type { NotesContext } from "./context.ts";
import { parseQuery } from "./request.ts";
import { authenticatedEmail, localUser } from "./routes/authenticate.ts";
import { notesPage, presentPage } from "./routes/notes.ts";
import { NoteListQuery } from "./schemas.ts";

/** `/api/notes`, optionally with `limit` and `offset` (each at most once) as digits. */
const PLAIN_LIST = /^\/api\/notes(?:\?(limit|offset)=(\d{1,16})(?:&(limit|offset)=(\d{1,16}))?)?$/;

/**
 * The plain list — `GET /api/notes`, with at most `limit` and `offset` as digits — the call
 * an agent makes most, answered straight from `node:http` in front of Hono, its page read with
 * the user in one statement (`plainListOf`). Where that finds no page — no such user, or a
 * query to refuse — the Hono route's own steps decide, in its order (`localUser`, then
 * `parseQuery`), so the answers are the same bytes (tested side by side); any other URL, where
 * Hono's own decoding of the query would matter, is passed on.
 */
export function createListFastPath(ctx: NotesContext, logger: Logger): FastPath {
  return (request, response) => {
    if (request.method !== "GET") return false;
    const match = PLAIN_LIST.exec(request.url ?? "");
    if (!match) return false;
    const [, firstName, firstValue, secondName, secondValue] = match;
    if (firstName !== undefined && firstName === secondName) return false;
    const params: Record<string, string> = {};
    if (firstName && firstValue) params[firstName] = firstValue;
    if (secondName && secondValue) params[secondName] = secondValue;
    const token = incomingHeader(request, SESSION_TOKEN_HEADER);
    authenticatedEmail(ctx, token)
      .then(async (email) => {
        const query = NoteListQuery.safeParse(params);
        const page = query.success ? await ctx.store.plainListOf(email, query.data) : undefined;
        if (page) return presentPage(page);
        const user = await localUser(ctx, email);
        return notesPage(ctx, user.id, parseQuery(NoteListQuery, params));
      })
      .then(
        (page) => writeJson(response, 200, page, undefined),
        (error: unknown) => {
          const path = "/api/notes";
          const answer = answerError(error, logger, { method: "GET", path }, isDatabaseUnavailable);
          writeJson(response, answer.status, answer.body, answer.headers);
        },
      );
    return true;
  };
}
