import { isDatabaseUnavailable } from "@agentpass/db";
import {
  answerError,
  type FastPath,
  incomingHeader,
  writeJson,
  writeJsonText,
} from "@agentpass/http";
import { SESSION_TOKEN_HEADER } from "@agentpass/verify";
import type { Logger } from "pino";
import type { NotesContext } from "./context.ts";
import { listedPageJson, listingPageJson } from "./presenters.ts";
import { parseQuery } from "./request.ts";
import { authenticatedEmail, localUser } from "./routes/authenticate.ts";
import { answerOfRefusal } from "./routes/refusals.ts";
import { NoteListQuery } from "./schemas.ts";
import { searchTerms } from "./store/search.ts";

const LIST_PATH = "/api/notes";
/**
 * A parameter the fast path takes: a name the list knows, and a value of URL-unreserved
 * characters only, which Hono's decoding of the query leaves as it is.
 */
const PARAMETER = /^(search|tagId|limit|offset)=([\w.~-]{1,1000})$/;

/**
 * `GET /api/notes`, the call an agent makes most, answered straight from `node:http` in front of
 * Hono. It takes the URLs whose parameters Hono would read as they stand: `search`, `tagId`,
 * `limit` and `offset`, each at most once, in unreserved characters (`listParameters`); any other
 * URL, where Hono's own decoding of the query would matter, is passed on. The answer is the Hono
 * route's, step for step: authentication, the local user, then the query (tested side by side,
 * the same bytes). Every page is written straight from the rows read (`listedPageJson`); the
 * plain list reads its page with the user in one statement (`plainListOf`) as its notes' stored
 * listings and tags (`listingPageJson`), and where that finds no page (no such user, a query to
 * refuse), the route's steps decide.
 */
export function createListFastPath(ctx: NotesContext, logger: Logger): FastPath {
  return (request, response) => {
    if (request.method !== "GET") return false;
    const params = listParameters(request.url ?? "");
    if (!params) return false;
    const token = incomingHeader(request, SESSION_TOKEN_HEADER);
    authenticatedEmail(ctx, token, incomingHeader(request, "authorization"))
      .then(async (email) => {
        const query = NoteListQuery.safeParse(params);
        if (query.success && !query.data.tagId && searchTerms(query.data.search).length === 0) {
          const page = await ctx.store.plainListOf(email, query.data);
          if (page) return listingPageJson(page);
        }
        const user = await localUser(ctx, email);
        const listQuery = query.success ? query.data : parseQuery(NoteListQuery, params);
        return listedPageJson(await ctx.store.listedPage(user.id, listQuery));
      })
      .then(
        (json) => writeJsonText(response, 200, json, undefined),
        (error: unknown) => {
          const path = LIST_PATH;
          const answer = answerError(
            answerOfRefusal(error),
            logger,
            { method: "GET", path },
            isDatabaseUnavailable,
          );
          writeJson(response, answer.status, answer.body, answer.headers);
        },
      );
    return true;
  };
}

/** The parameters of a list URL the fast path takes, as Hono would read them; else undefined. */
export function listParameters(url: string): Record<string, string> | undefined {
  if (url === LIST_PATH) return {};
  if (!url.startsWith(`${LIST_PATH}?`)) return undefined;
  const params: Record<string, string> = {};
  for (const pair of url.slice(LIST_PATH.length + 1).split("&")) {
    const [, name, value] = PARAMETER.exec(pair) ?? [];
    if (name === undefined || value === undefined || Object.hasOwn(params, name)) return undefined;
    params[name] = value;
  }
  return params;
}
