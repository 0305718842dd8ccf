import {
  type Answer,
  type ApiCall,
  defineEndpoint,
  type Endpoint,
  HttpError,
  type InputFailure,
  type PlainAnswer,
  readBearer,
} from "@agentpass/http";
import type { Capability } from "@agentpass/verify";
import { z } from "zod";
import type { NotesContext } from "../context.ts";
import { ERRORS } from "../errors.ts";
import { presentNote } from "../presenters.ts";
import { NoteCreate, NoteListQuery, newNoteOf } from "../schemas.ts";
import { callContextOf, localUser } from "./authenticate.ts";

/**
 * The notes API's capabilities for agents (Agent Auth Protocol sections 2.12 and 5.11), and
 * their location, `POST /agent/execute`. AgentPass judges each execution (the agent's JWT for
 * this URL, its person's grant, the arguments against the schema and the grant's constraints);
 * its refusal is answered as ours, in the protocol's `{ error, message }`.
 */

export const EXECUTE_PATH = "/agent/execute";
/** A note's arguments: a title and its text. */
const MAX_EXECUTE_BYTES = 256 * 1024;
const NO_STORE = { "Cache-Control": "no-store" };

/** What the notes API offers agents, executed at `location`. */
export function notesCapabilities(publicUrl: string): Capability[] {
  const location = `${publicUrl}${EXECUTE_PATH}`;
  return [
    {
      name: "list_notes",
      description: "Read your notes, newest-updated first, optionally those matching a search",
      location,
      input: {
        type: "object",
        properties: {
          search: { type: "string", maxLength: 1000, description: "Words every note must hold" },
          limit: { type: "integer", minimum: 1, maximum: 100, description: "At most this many" },
        },
        additionalProperties: false,
      },
      output: {
        type: "object",
        properties: { notes: { type: "array" }, total: { type: "integer" } },
      },
    },
    {
      name: "create_note",
      description: "Write a new note in your notes",
      location,
      input: {
        type: "object",
        required: ["title"],
        properties: {
          title: { type: "string", minLength: 1, maxLength: 500 },
          text: { type: "string", maxLength: 100_000, description: "The note's plain text" },
        },
        additionalProperties: false,
      },
      output: { type: "object", properties: { note: { type: "object" } } },
    },
  ];
}

export function agentExecuteEndpoint(ctx: NotesContext, agentpassUrl: string): Endpoint {
  const challenge = `AgentAuth discovery="${agentpassUrl}/.well-known/agent-configuration"`;
  return defineEndpoint({
    method: "POST",
    path: EXECUTE_PATH,
    maxBodyBytes: MAX_EXECUTE_BYTES,
    renderError: renderProtocolError,
    operation: {
      operationId: "executeCapability",
      tags: ["Agent Auth"],
      summary: "An agent executes one of the notes API's capabilities (Agent Auth Protocol 5.11)",
      description:
        "`Authorization: Bearer <agent JWT>` whose `aud` is this URL. Capabilities: `list_notes`, `create_note` (their schemas: AgentPass's `GET /capability/describe`). Errors are the protocol's `{ error, message }`; `constraint_violated` carries `violations`.",
      security: [{ agentJwt: [] }],
      responses: {
        "200": {
          description: "The capability's result, as `data`",
          content: { "application/json": { schema: z.object({ data: z.unknown() }) } },
        },
        "400": refusal("invalid_request: a body, or arguments, the capability does not take"),
        "401": refusal("invalid_jwt: no agent JWT, or one refused (used already, another aud, …)"),
        "403": refusal(
          "capability_not_granted, constraint_violated (with violations), agent_revoked, agent_expired, no_account",
        ),
        "404": refusal("capability_not_found"),
        "413": refusal("invalid_request: the body is over the limit"),
        "503": refusal("temporarily_unavailable: AgentPass could not be asked"),
      },
    },
    admit(request: ApiCall) {
      const bearer = readBearer(request.header("authorization"));
      return { ok: true, admitted: bearer.kind === "present" ? bearer.value : undefined };
    },
    input: {
      body: z.object({
        capability: z.string().min(1).max(200),
        arguments: z.record(z.string(), z.unknown()).optional(),
      }),
    },
    refuseInput: refuseProtocolInput,
    async handle(request, { admitted, body }) {
      const allowed = await ctx.verifier.authorizeCapability?.(
        admitted,
        body.capability,
        body.arguments ?? {},
        callContextOf(request),
      );
      if (!allowed) return protocolError(503, "temporarily_unavailable", "No partner key set");
      if (!allowed.ok) {
        return {
          status: allowed.status,
          headers: {
            ...NO_STORE,
            ...(allowed.status === 401 && { "WWW-Authenticate": challenge }),
          },
          body: allowed.body,
        };
      }
      // A person AgentPass vouches for who has no notes account here: 403, the agent's JWT was
      // good. Any other failure (the database) is the router's 503, as on every endpoint.
      const noAccount = new HttpError(ERRORS.no_account);
      const user = await localUser(ctx, allowed.email, noAccount).catch((error: unknown) => {
        if (error === noAccount) return undefined;
        throw error;
      });
      if (!user) return protocolError(403, "no_account", ERRORS.no_account.message);
      const args = body.arguments ?? {};
      const agent = { id: allowed.agent.id, name: allowed.agent.name };
      if (allowed.capability === "create_note") {
        const input = NoteCreate.safeParse({ title: args.title, contentText: args.text ?? "" });
        if (!input.success) return protocolError(400, "invalid_request", input.error.message);
        const { fields, tagIds } = newNoteOf(input.data);
        const note = await ctx.store.createNote(user.id, fields, tagIds, ctx.clock(), agent);
        return { status: 200, headers: NO_STORE, body: { data: { note: presentNote(note) } } };
      }
      if (allowed.capability !== "list_notes") {
        return protocolError(404, "capability_not_found", "The notes API does not run it");
      }
      const query = NoteListQuery.safeParse({ search: args.search, limit: args.limit ?? 20 });
      if (!query.success) return protocolError(400, "invalid_request", query.error.message);
      const { notes, total } = await ctx.store.listNotes(user.id, query.data);
      return {
        status: 200,
        headers: NO_STORE,
        body: { data: { notes: notes.map(presentNote), total } },
      };
    },
  });
}

const ProtocolError = z.object({
  error: z.string(),
  message: z.string(),
  violations: z
    .array(z.object({ field: z.string(), constraint: z.unknown(), actual: z.unknown() }))
    .optional(),
});

function refusal(description: string) {
  return { description, content: { "application/json": { schema: ProtocolError } } };
}

function protocolError(status: number, error: string, message: string): Answer {
  return { status, headers: NO_STORE, body: { error, message } };
}

function refuseProtocolInput(failure: InputFailure): Answer {
  return protocolError(
    400,
    "invalid_request",
    failure.problem === "schema"
      ? "The body must be { capability, arguments }"
      : "The body must be a JSON object",
  );
}

/** What the router answers here (a body too large, a fault), in the protocol's form. */
function renderProtocolError(answer: PlainAnswer): Answer {
  const error =
    answer.status === 503
      ? "temporarily_unavailable"
      : answer.status >= 500
        ? "internal_error"
        : "invalid_request";
  return {
    status: answer.status,
    headers: answer.headers,
    body: { error, message: String(answer.body.error) },
  };
}
