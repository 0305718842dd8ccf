import { isDatabaseUnavailable } from "@agentpass/db";
import {
  answerError,
  type FastPath,
  HttpError,
  incomingHeader,
  readIncomingJson,
  writeJson,
} from "@agentpass/http";
import type { Logger } from "pino";
import type { IdentityContext } from "./context.ts";
import { MAX_BODY_BYTES } from "./limits.ts";
import { type VerifyLimits, verifiedHeaders, verifyRequest } from "./routes/verify.ts";

/**
 * `POST /api/verify` answered straight from `node:http`, in front of Hono: the one route on
 * every partner request skips routing, the framework's `Context` and the conversion of a Fetch
 * `Response` into Node writes. The checks are the same function the Hono route runs
 * (`verifyRequest`), and the answers the same bytes; anything else (another method, a path
 * Hono would first decode) is passed on.
 */
export function createVerifyFastPath(
  ctx: IdentityContext,
  limits: VerifyLimits,
  logger: Logger,
): FastPath {
  return (request, response) => {
    if (request.method !== "POST" || !isVerifyPath(request.url)) return false;
    verifyRequest(ctx, limits, {
      authorization: incomingHeader(request, "authorization"),
      readBody: () => readIncomingJson(request, MAX_BODY_BYTES),
      clientIp: () => request.socket.remoteAddress ?? "unknown",
    }).then(
      (answer) =>
        answer instanceof HttpError
          ? writeJson(response, answer.status, { error: answer.message }, answer.headers)
          : writeJson(response, 200, { email: answer.email }, verifiedHeaders(answer)),
      (error: unknown) => {
        const answer = answerError(
          error,
          logger,
          { method: "POST", path: "/api/verify" },
          isDatabaseUnavailable,
        );
        writeJson(response, answer.status, answer.body, answer.headers);
      },
    );
    return true;
  };
}

function isVerifyPath(url: string | undefined): boolean {
  return url === "/api/verify" || (url?.startsWith("/api/verify?") ?? false);
}
