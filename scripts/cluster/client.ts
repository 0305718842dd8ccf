/** One answer, with when it was asked and answered (`performance.now()`) and who answered. */
export interface Reply {
  /** 0 when no answer came: the connection failed or the 15 s budget ran out. */
  status: number;
  /** Parsed JSON, else the text. */
  body: unknown;
  headers: Headers;
  /** The instance haproxy sent it to (`X-Served-By`); null when asked directly. */
  server: string | null;
  sentAt: number;
  answeredAt: number;
}

/** How long one request may take before it counts as unanswered: far past every deadline. */
const REQUEST_BUDGET_MS = 15_000;

/** `fetch`, never throwing: a failed or hung request is a Reply of status 0. */
export async function call(url: string, init: RequestInit = {}): Promise<Reply> {
  const sentAt = performance.now();
  try {
    const response = await fetch(url, {
      redirect: "manual",
      ...init,
      signal: AbortSignal.timeout(REQUEST_BUDGET_MS),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return {
      status: response.status,
      body,
      headers: response.headers,
      server: response.headers.get("x-served-by"),
      sentAt,
      answeredAt: performance.now(),
    };
  } catch (error) {
    return {
      status: 0,
      body: `${error}${(error as Error).cause ? `: ${(error as Error).cause}` : ""}`,
      headers: new Headers(),
      server: null,
      sentAt,
      answeredAt: performance.now(),
    };
  }
}

/** Milliseconds between asking and the answer. */
export const took = (reply: Reply) => Math.round(reply.answeredAt - reply.sentAt);

/** `POST /api/session-tokens` with a user key. */
export function mint(identityUrl: string, userKey: string): Promise<Reply> {
  return call(`${identityUrl}/api/session-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${userKey}` },
  });
}

/** A session token of `userKey`, minted through `identityUrl`; throws unless it is 201. */
export async function mintToken(identityUrl: string, userKey: string): Promise<string> {
  const reply = await mint(identityUrl, userKey);
  const token = (reply.body as { sessionToken?: string }).sessionToken;
  if (reply.status !== 201 || !token) {
    throw new Error(`mint answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  }
  return token;
}

/** `POST /api/verify` of `sessionToken` with a partner key. */
export function verify(identityUrl: string, partnerKey: string, sessionToken: string) {
  return call(`${identityUrl}/api/verify`, {
    method: "POST",
    headers: { authorization: `Bearer ${partnerKey}`, "content-type": "application/json" },
    body: JSON.stringify({ sessionToken }),
  });
}

/** `POST /api/notes` on the notes API. */
export function createNote(notesUrl: string, sessionToken: string, title: string) {
  return call(`${notesUrl}/api/notes`, {
    method: "POST",
    headers: { "x-session-token": sessionToken, "content-type": "application/json" },
    body: JSON.stringify({ title, contentText: "written while instances were killed" }),
  });
}

/** `GET /api/notes`, one page. */
function listNotes(notesUrl: string, sessionToken: string, offset = 0) {
  return call(`${notesUrl}/api/notes?limit=500&offset=${offset}`, {
    headers: { "x-session-token": sessionToken },
  });
}

/** Every note of the token's user, by id, read page by page; throws on anything but 200. */
export async function readAllNotes(notesUrl: string, sessionToken: string) {
  const notes = new Map<string, string>();
  for (let offset = 0; ; offset += 500) {
    const page = await listNotes(notesUrl, sessionToken, offset);
    if (page.status !== 200) throw new Error(`list answered ${page.status}`);
    const body = page.body as { notes: { id: string; title: string }[]; total: number };
    for (const note of body.notes) notes.set(note.id, note.title);
    if (body.notes.length === 0 || notes.size >= body.total) return notes;
  }
}

/** The `{ error, code }` of a refusal, for comparing with what the README lists. */
export function refusal(reply: Reply) {
  const body = reply.body as { error?: unknown; code?: unknown };
  return { status: reply.status, error: body?.error, code: body?.code };
}
