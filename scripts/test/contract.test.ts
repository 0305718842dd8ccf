import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, describe, it } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { hashUserCode } from "../../apps/identity/src/domain/device-login.ts";
import {
  agentJwt,
  ed25519Key,
  hostJwt,
} from "../../apps/identity/test/support/agent-auth-client.ts";
import { openTestIdentity } from "../../apps/identity/test/support/harness.ts";
import { openTestNotes } from "../../apps/notes/test/support/harness.ts";

/**
 * The contract test: each service's own OpenAPI document, fetched live, and for every operation
 * in it a fixed set of hostile requests (no credentials, wrong ones, broken and ill-typed bodies,
 * a body over the limit, hostile path and query values) and one plausible valid request. Every
 * answer's status must be documented for its operation, its media type documented for that
 * status, and a JSON body must validate against the documented schema: a client generated from
 * the document can read every answer it will ever get from these requests.
 */

const FORM = "application/x-www-form-urlencoded";
const JSON_TYPE = "application/json";
/** Over every service's body limit (64 KiB) and every endpoint's own. */
const OVERSIZED = "x".repeat(70 * 1024);
const HOSTILE_SEGMENTS = [
  "not-a-uuid",
  "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
  "..%2F..%2Fetc%2Fpasswd",
  "%ZZ",
  "%00",
  "'%20OR%201%3D1%20--",
  "x".repeat(2000),
];
const HOSTILE_QUERY_VALUES = [
  "",
  "-1",
  "1e309",
  "abc",
  "%00",
  "%ZZ",
  "%3Cscript%3E",
  "x".repeat(5000),
];

type Headers = Record<string, string>;
/** What the test sends when it means a valid request to an operation. */
interface ValidRequest {
  params?: Record<string, string>;
  query?: string;
  headers?: Headers;
  body?: string | Uint8Array<ArrayBuffer>;
  type?: string;
}
interface Probe extends ValidRequest {
  label: string;
  path: string;
  /** Sent with working credentials: a 401 means the probes behind authentication never ran. */
  authenticated?: boolean;
}
interface Operation {
  method: string;
  path: string;
  pointer: string;
  operationId?: string;
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, unknown> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
/** A running service as the contract sees it. */
interface Subject {
  send: (path: string, init: RequestInit) => Promise<Response>;
  /** Per security scheme of the document: a working credential and a wrong one. */
  schemes: Record<string, { valid: Headers; wrong: Headers }>;
  /** Per operationId: a plausible valid request (built fresh, so a delete has its own note). */
  valid: Record<string, () => Promise<ValidRequest> | ValidRequest>;
  close(): Promise<void>;
}

describe("the identity service's OpenAPI document describes every live answer", async () => {
  const identity = await openTestIdentity("sqlite");
  // Agent Auth JWTs are signed on the wall clock (the notes API's suite signs at the same time):
  // the service's clock starts where it is.
  identity.advance(Date.now() - identity.now());
  const user = await identity.userKey();
  const partner = await identity.partner();
  const token = await identity.token(user.key);
  const form = (fields: Record<string, string>) => ({
    type: FORM,
    body: new URLSearchParams(fields).toString(),
  });
  const json = (value: unknown) => ({ type: JSON_TYPE, body: JSON.stringify(value) });
  // Agent Auth: host JWTs are each used once, so every valid request of a host endpoint gets a
  // host (and an agent of it) of its own, approved.
  const configuration = await identity.app.request("/.well-known/agent-configuration");
  const { issuer } = (await configuration.json()) as { issuer: string };
  const person = await identity.account();
  async function approvedAgent() {
    const host = await ed25519Key();
    const agent = await ed25519Key();
    const registered = await identity.app.request("/agent/register", {
      method: "POST",
      headers: {
        authorization: `Bearer ${await hostJwt(host, issuer, { agent_public_key: agent.jwk })}`,
      },
      body: JSON.stringify({ name: "contract" }),
    });
    const { agent_id: agentId, approval } = (await registered.json()) as {
      agent_id: string;
      approval: { user_code: string };
    };
    const codeHash = hashUserCode(identity.ctx, approval.user_code);
    const pending = await identity.ctx.agents.findPendingAgentApproval(codeHash, identity.now());
    assert.ok(pending);
    await identity.ctx.agents.decideAgentApproval(
      pending.deviceHash,
      person.id,
      "approve",
      identity.now(),
    );
    const headers = async () => ({ authorization: `Bearer ${await hostJwt(host, issuer)}` });
    return { agentId, headers };
  }
  const asHost = async (body: (agentId: string) => unknown) => {
    const { agentId, headers } = await approvedAgent();
    return { ...json(body(agentId)), headers: await headers() };
  };
  await contractOf("identity", {
    send: identity.app.request,
    schemes: {
      partnerKey: bearer(partner.key, "apk_wrong"),
      userKey: bearer(user.key, "apu_wrong"),
      // The working JWT is each valid request's own (`asHost`): one is good once.
      hostJwt: { valid: {}, wrong: { authorization: "Bearer eyJhbGciOiJFZERTQSJ9.e30.AAAA" } },
    },
    valid: {
      async agentAuthRegister() {
        const host = await ed25519Key();
        const agent = await ed25519Key();
        const jwt = await hostJwt(host, issuer, { agent_public_key: agent.jwk });
        return { ...json({ name: "contract" }), headers: { authorization: `Bearer ${jwt}` } };
      },
      async agentAuthStatus() {
        const { agentId, headers } = await approvedAgent();
        return { query: `agent_id=${agentId}`, headers: await headers() };
      },
      agentAuthReactivate: () => asHost((agentId) => ({ agent_id: agentId })),
      agentAuthRevoke: () => asHost((agentId) => ({ agent_id: agentId })),
      agentAuthRotateKey: async () => {
        const { jwk } = await ed25519Key();
        return asHost((agentId) => ({ agent_id: agentId, public_key: jwk }));
      },
      agentAuthRotateHostKey: async () => {
        const { jwk } = await ed25519Key();
        return asHost(() => ({ public_key: jwk }));
      },
      agentAuthRevokeHost: () => asHost(() => ({})),
      agentAuthIntrospect: () => json({ token: "eyJhbGciOiJFZERTQSJ9.e30.AAAA" }),
      agentAuthDescribeCapability: () => ({ query: "name=read_notes" }),
      verifySessionToken: () => json({ sessionToken: token }),
      mintSessionToken: () => json({}),
      startDeviceLogin: () => json({ client_name: "contract" }),
      async pollDeviceLogin() {
        const started = await identity.app.request("/api/device/code", { method: "POST" });
        const { device_code } = (await started.json()) as { device_code: string };
        return json({ device_code });
      },
      oauthToken: () =>
        form({ grant_type: "refresh_token", refresh_token: "unknown", client_id: "agentpass-cli" }),
      oauthDeviceAuthorization: () => form({ client_id: "agentpass-cli" }),
      oauthIntrospect: () => form({ token }),
      oauthRevoke: () => form({ token: "unknown" }),
      oauthRegister: () =>
        json({
          redirect_uris: ["http://127.0.0.1:9/callback"],
          token_endpoint_auth_method: "none",
        }),
      authorize: () => ({
        query: "response_type=code&client_id=agentpass-cli&code_challenge_method=S256",
      }),
    },
    close: async () => {
      await identity.close();
    },
  });
});

const NOTES_URL = "https://notes.example";

describe("the notes API's OpenAPI document describes every live answer", async () => {
  const notes = await openTestNotes("sqlite", {}, { PUBLIC_URL: NOTES_URL });
  // Agent JWTs carry the wall clock's time: the services' clock starts where it is.
  notes.advance(Date.now() - notes.now());
  const person = await notes.person();
  const agent = await notesAgent(notes, person.email).catch(async (error) => {
    await notes.close();
    throw error;
  });
  const bound = await notes.mint(person.key, notes.partner.id);
  const json = (value: unknown) => ({ type: JSON_TYPE, body: JSON.stringify(value) });
  const created = async (path: string, body: unknown, field: "note" | "tag") => {
    const answer = await person.call("POST", path, body);
    return ((await answer.json()) as Record<string, { id: string }>)[field]?.id ?? randomUUID();
  };
  const note = () => created("/api/notes", { title: "Contract" }, "note");
  const tag = () => created("/api/tags", { name: `tag-${randomUUID()}` }, "tag");
  await contractOf("notes", {
    send: notes.app.request,
    schemes: {
      sessionToken: {
        valid: { "x-session-token": person.token },
        wrong: { "x-session-token": "aps_wrong" },
      },
      bearerToken: bearer(person.token, "aps_wrong"),
      boundToken: bearer(bound, "aps_wrong"),
      // The working JWT is the valid request's own: one is good once.
      agentJwt: { valid: {}, wrong: { authorization: "Bearer eyJhbGciOiJFZERTQSJ9.e30.AAAA" } },
    },
    valid: {
      listNotes: () => ({ query: "search=contract&limit=5" }),
      getNote: async () => ({ params: { id: await note() } }),
      createNote: () => json({ title: "Contract", content: [{ type: "paragraph" }] }),
      updateNote: async () => ({ params: { id: await note() }, ...json({ title: "Renamed" }) }),
      deleteNote: async () => ({ params: { id: await note() } }),
      createTag: () => json({ name: `tag-${randomUUID()}` }),
      renameTag: async () => ({
        params: { id: await tag() },
        ...json({ name: `t-${randomUUID()}` }),
      }),
      deleteTag: async () => ({ params: { id: await tag() } }),
      executeCapability: async () => ({
        headers: { authorization: `Bearer ${await agent.jwt()}` },
        ...json({ capability: "list_notes", arguments: { limit: 1 } }),
      }),
      mcpMessage: () => ({
        headers: { accept: "application/json, text/event-stream" },
        ...json({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "contract", version: "1" },
          },
        }),
      }),
    },
    close: () => notes.close(),
  });
});

function bearer(valid: string, wrong: string) {
  return {
    valid: { authorization: `Bearer ${valid}` },
    wrong: { authorization: `Bearer ${wrong}` },
  };
}

/** One test per operation of the service's document; the service closes after the last. */
async function contractOf(name: string, subject: Subject): Promise<void> {
  after(() => subject.close());
  const answer = await subject.send("/api/openapi.json", {});
  const document = (await answer.json()) as { paths: Record<string, Record<string, Operation>> };
  const id = `urn:agentpass:contract:${name}`;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  // ajv-formats is CommonJS: its default export is the plugin itself at run time.
  (formats as unknown as (target: Ajv2020) => void)(ajv);
  ajv.addSchema(document, id);

  it("publishes a document with operations", () => {
    assert.ok(Object.keys(document.paths).length > 0);
  });
  it("tags and describes every operation, each tag declared with a description", () => {
    const declared = new Map(
      ((document as { tags?: { name: string; description?: string }[] }).tags ?? []).map((tag) => [
        tag.name,
        tag.description ?? "",
      ]),
    );
    const faults: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const { tags = [], description = "" } = operation as Operation & {
          tags?: string[];
          description?: string;
        };
        const named = `${method.toUpperCase()} ${path}`;
        if (tags.length === 0) faults.push(`${named}: no tag`);
        if (description.trim() === "") faults.push(`${named}: no description`);
        for (const tag of tags)
          if (!declared.get(tag)) faults.push(`${named}: tag ${tag} undeclared`);
      }
    }
    assert.deepEqual(faults, []);
  });
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (typeof operation !== "object" || !("responses" in operation)) continue;
      const op: Operation = {
        ...operation,
        method: method.toUpperCase(),
        path,
        pointer: `/paths/${pointerToken(path)}/${method}`,
      };
      it(`${op.method} ${path} answers only what the document says`, async () => {
        const failures: string[] = [];
        for (const probe of await probesOf(op, subject)) {
          const failure = await check(op, probe);
          if (failure) failures.push(failure);
        }
        assert.equal(failures.length, 0, `\n${failures.join("\n\n")}`);
      });
    }
  }

  async function check(op: Operation, probe: Probe): Promise<string | undefined> {
    const target = `${probe.path}${probe.query === undefined ? "" : `?${probe.query}`}`;
    const headers: Headers = { ...probe.headers };
    if (probe.type) headers["content-type"] = probe.type;
    const response = await subject.send(target, {
      method: op.method,
      headers,
      ...(probe.body === undefined ? {} : { body: probe.body }),
    });
    const text = await response.text();
    const type = (response.headers.get("content-type") ?? "").split(";")[0]?.trim() ?? "";
    const problem =
      probe.authenticated && response.status === 401
        ? "working credentials were refused"
        : problemOf(op, response.status, type, text);
    if (problem === undefined) return undefined;
    return [
      `${op.method} ${op.path} (${op.operationId ?? "no operationId"}) — ${probe.label}`,
      `  request: ${op.method} ${shorten(target)} ${shorten(JSON.stringify(redact(headers)))} ${typeof probe.body === "string" ? shorten(probe.body) : `<${probe.body?.length ?? 0} bytes>`}`,
      `  answer:  ${response.status} ${type} ${shorten(text)}`,
      `  problem: ${problem}`,
    ].join("\n");
  }

  function problemOf(op: Operation, status: number, type: string, text: string) {
    const documented = op.responses[String(status)];
    if (!documented) {
      return `status ${status} is not documented (${Object.keys(op.responses).join(", ")})`;
    }
    const content = documented.content;
    if (!content) return text === "" ? undefined : `status ${status} is documented without a body`;
    if (text === "") return `status ${status} is documented with a body, answered none`;
    if (!(type in content)) {
      return `answered ${type || "no Content-Type"}, documented ${Object.keys(content).join(", ")}`;
    }
    if (type !== JSON_TYPE || content[type]?.schema === undefined) return undefined;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return "the body is not JSON";
    }
    const pointer = `${op.pointer}/responses/${status}/content/${pointerToken(type)}/schema`;
    const validate = ajv.getSchema(`${id}#${pointer}`);
    if (!validate) return `no schema at ${pointer}`;
    if (validate(body)) return undefined;
    return `the body does not match the schema: ${ajv.errorsText(validate.errors)}`;
  }
}

/** The valid request of an operation (first, so what it needs still exists), then the hostile ones. */
async function probesOf(op: Operation, subject: Subject): Promise<Probe[]> {
  const valid: ValidRequest = (await subject.valid[op.operationId ?? ""]?.()) ?? {};
  const schemes = (op.security ?? []).flatMap((requirement) => Object.keys(requirement));
  const credentials = schemes.map((scheme) => subject.schemes[scheme]);
  const working = credentials[0]?.valid ?? {};
  const names = [...op.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  const pathWith = (values: Record<string, string>) =>
    op.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? randomUUID());
  const path = pathWith(valid.params ?? {});
  const base = { path, query: valid.query, headers: { ...valid.headers, ...working } };
  const media = Object.keys(op.requestBody?.content ?? {});
  const bodyType = media.includes(JSON_TYPE) ? JSON_TYPE : media[0];
  const probes: Probe[] = [
    { label: "the valid request", ...valid, ...base, authenticated: credentials.length > 0 },
    { label: "no credentials", ...valid, path, headers: { ...valid.headers } },
    ...credentials.map((scheme, index) => ({
      label: `wrong credentials (${schemes[index]})`,
      ...valid,
      path,
      headers: { ...valid.headers, ...scheme?.wrong },
    })),
  ];
  if (op.method !== "GET") {
    const type = bodyType ?? JSON_TYPE;
    const bodies: [string, string, string | Uint8Array<ArrayBuffer>][] = [
      ["malformed JSON", JSON_TYPE, '{"title":'],
      ["JSON array", JSON_TYPE, "[]"],
      ["JSON string", JSON_TYPE, '"x"'],
      ["JSON number", JSON_TYPE, "42"],
      ["JSON null", JSON_TYPE, "null"],
      ["a title of the wrong type", JSON_TYPE, '{"title":123}'],
      ["every field of the wrong type", JSON_TYPE, wrongTypes(op, bodyType, 123)],
      ["every field an object", JSON_TYPE, wrongTypes(op, bodyType, {})],
      ["JSON nested 200 deep", JSON_TYPE, `${"[".repeat(200)}${"]".repeat(200)}`],
      ["a body that is not UTF-8", type, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])],
      ["a broken form", FORM, "%ZZ=%ZZ&&=&a"],
      ["a repeated form field", FORM, "token=a&token=b&client_id=a&client_id=b"],
      [
        "a body over the limit",
        type,
        type === FORM ? `token=${OVERSIZED}` : `{"title":"${OVERSIZED}"}`,
      ],
    ];
    const plain = typeof valid.body === "string" ? valid.body : "{}";
    bodies.push(["a body of another media type", "text/plain", plain]);
    for (const [label, bodyMedia, body] of bodies) {
      probes.push({ label, ...base, type: bodyMedia, body });
    }
  }
  for (const name of names) {
    for (const value of [randomUUID(), ...HOSTILE_SEGMENTS]) {
      probes.push({
        label: `path parameter ${name} = ${shorten(value)}`,
        ...valid,
        ...base,
        path: pathWith({ ...valid.params, [name]: value }),
      });
    }
  }
  const queryNames = (op.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
  for (const name of queryNames) {
    for (const value of HOSTILE_QUERY_VALUES) {
      probes.push({
        label: `query ${name} = ${shorten(value)}`,
        ...valid,
        ...base,
        query: `${name}=${value}`,
      });
    }
    probes.push({
      label: `query ${name} repeated`,
      ...valid,
      ...base,
      query: `${name}=1&${name}=x`,
    });
  }
  probes.push({
    label: "Accept: text/html only",
    ...valid,
    ...base,
    headers: { ...base.headers, accept: "text/html" },
  });
  probes.push({
    label: "an unknown hostile query",
    ...valid,
    ...base,
    query: "__proto__[polluted]=1&constructor=x&%ZZ=%ZZ",
  });
  return probes;
}

/** A JSON object with every documented field of the request body set to `value`. */
function wrongTypes(op: Operation, type: string | undefined, value: unknown): string {
  const schema = op.requestBody?.content[type ?? ""] as
    | { schema?: { properties?: Record<string, unknown> } }
    | undefined;
  const fields = Object.keys(schema?.schema?.properties ?? { title: 0 });
  return JSON.stringify(Object.fromEntries(fields.map((field) => [field, value])));
}

/** A JSON pointer token (RFC 6901), as a URI fragment holds it. */
function pointerToken(token: string): string {
  return encodeURIComponent(token.replaceAll("~", "~0").replaceAll("/", "~1"));
}

function shorten(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}… (${text.length} characters)` : text;
}

/** Credentials shown by their start only: the failure names which one, never all of it. */
function redact(headers: Headers): Headers {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [
      name,
      /authorization|token/.test(name) && value.length > 20 ? `${value.slice(0, 16)}…` : value,
    ]),
  );
}

/** An agent of `email` granted the notes API's `list_notes`, as a person approves one. */
async function notesAgent(notes: Awaited<ReturnType<typeof openTestNotes>>, email: string) {
  await notes.identity.addPartnerResource(notes.partner.id, NOTES_URL);
  const declared = await notes.service.declareCapabilities();
  assert.ok(declared?.ok, JSON.stringify(declared));
  const configuration = await fetch(`${notes.identity.url}/.well-known/agent-configuration`);
  const { issuer } = (await configuration.json()) as { issuer: string };
  const host = await ed25519Key();
  const key = await ed25519Key();
  const registered = await fetch(`${notes.identity.url}/agent/register`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await hostJwt(host, issuer, { agent_public_key: key.jwk })}`,
    },
    body: JSON.stringify({ name: "contract", capabilities: ["list_notes"] }),
  });
  const answer = (await registered.json()) as {
    agent_id: string;
    approval: { user_code: string };
  };
  assert.equal(registered.status, 200, JSON.stringify(answer));
  const { agent_id: id, approval } = answer;
  assert.equal(await notes.identity.decideAgent(approval.user_code, email), "decided");
  const location = `${NOTES_URL}/agent/execute`;
  return { jwt: () => agentJwt(key, host.thumbprint, id, location) };
}
