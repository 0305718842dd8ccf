import { isDatabaseUnavailable } from "@agentpass/db";
import { answerError, HttpError } from "@agentpass/http";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "pino";
import type { NotesContext } from "../context.ts";
import type { Caller } from "../routes/authenticate.ts";
import { answerOfRefusal } from "../routes/refusals.ts";

/** What every tool and resource of one MCP request acts with: the caller and the service. */
export interface McpScope {
  ctx: NotesContext;
  user: Caller;
  logger: Logger;
}

/**
 * Runs a tool's work and makes its result: a structured result (also as JSON text, for clients
 * that read only text), or a tool error (`isError`) whose text is the REST API's own refusal,
 * `{ error, code }` from the error table. A fault is logged with a request id and answered
 * with that id only, as the router answers a 500: no message that could carry internals.
 */
export async function toolResult(
  scope: McpScope,
  tool: string,
  work: () => Promise<Record<string, unknown> | HttpError>,
): Promise<CallToolResult> {
  let outcome: Record<string, unknown> | HttpError;
  try {
    outcome = await work();
  } catch (error) {
    const refusal = answerOfMcpFault(scope, error, `tools/call ${tool}`);
    return { isError: true, content: [{ type: "text", text: JSON.stringify(refusal) }] };
  }
  if (outcome instanceof HttpError) {
    return { isError: true, content: [{ type: "text", text: JSON.stringify(outcome.body) }] };
  }
  return {
    content: [{ type: "text", text: JSON.stringify(outcome) }],
    structuredContent: outcome,
  };
}

/**
 * The `{ error, code }` of what an MCP handler threw: a store refusal or an `HttpError` as the
 * REST API answers it, an unreachable database as `unavailable`, anything else as
 * `internal_error` with the request id its log line carries.
 */
export function answerOfMcpFault(
  scope: McpScope,
  error: unknown,
  operation: string,
): Record<string, unknown> {
  const answer = answerError(
    answerOfRefusal(error),
    scope.logger,
    { method: "POST", path: `/mcp ${operation}` },
    isDatabaseUnavailable,
  );
  return answer.body;
}
