import type { IncomingMessage, ServerResponse } from "node:http";
import { isDatabaseUnavailable } from "@agentpass/db";
import {
  answerError,
  clientAddressOf,
  type FastPath,
  HttpError,
  incomingHeader,
  readIncomingJson,
  type TrustProxy,
  writeJson,
} from "@agentpass/http";
import type { Logger } from "pino";
import type { IdentityContext } from "./context.ts";
import { MAX_BODY_BYTES } from "./limits.ts";
import { type MintLimits, mintRequest } from "./routes/session-tokens.ts";
import { type VerifyLimits, verifiedHeaders, verifyRequest } from "./routes/verify.ts";

/**
 * `POST /api/verify` (on every partner request) and `POST /api/session-tokens` (before every
 * agent's call) answered straight from `node:http`, in front of Hono: they skip routing, the
 * framework's `Context` and the conversion of a Fetch `Response` into Node writes. The checks
 * are the same functions the Hono routes run (`verifyRequest`, `mintRequest`), and the answers
 * the same bytes; anything else (another method, a path Hono would first decode) is passed on.
 */
export function createIdentityFastPath(
  ctx: IdentityContext,
  limits: { verify: VerifyLimits; mint: MintLimits; trustProxy: TrustProxy },
  logger: Logger,
): FastPath {
  return (request, response) => {
    if (request.method !== "POST") return false;
    const path = pathOf(request.url);
    if (path !== "/api/verify" && path !== "/api/session-tokens") return false;
    const input = {
      authorization: incomingHeader(request, "authorization"),
      readBody: () => readIncomingJson(request, MAX_BODY_BYTES),
      clientIp: () => clientAddressOf(limits.trustProxy, request),
    };
    const failed = (error: unknown) => fail(response, error, logger, path);
    if (path === "/api/verify") {
      verifyRequest(ctx, limits.verify, input).then(
        (answer) =>
          answer instanceof HttpError
            ? failed(answer)
            : writeJson(response, 200, { email: answer.email }, verifiedHeaders(answer)),
        failed,
      );
    } else {
      mintRequest(ctx, limits.mint, input).then(
        (answer) =>
          answer instanceof HttpError
            ? failed(answer)
            : writeJson(response, 201, answer.body, answer.headers),
        failed,
      );
    }
    return true;
  };
}

/** An `HttpError` as its answer; anything else as `answerError` decides (503, or a logged 500). */
function fail(response: ServerResponse, error: unknown, logger: Logger, path: string): void {
  const answer = answerError(error, logger, { method: "POST", path }, isDatabaseUnavailable);
  writeJson(response, answer.status, answer.body, answer.headers);
}

/** The path of a URL that Hono would route as it is; undefined when it would decode it first. */
function pathOf(url: IncomingMessage["url"]): string | undefined {
  const end = url?.indexOf("?") ?? -1;
  const path = end === -1 ? url : url?.slice(0, end);
  return path?.includes("%") ? undefined : path;
}
