/** An answer of AgentPass: its status, its headers, and its body if that is a JSON object. */
export interface ServiceAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
}

export interface ServiceCall {
  endpoint: string;
  partnerKey: string;
  timeoutMs: number;
  fetch: typeof fetch;
}

/**
 * One POST to AgentPass with the partner key as Bearer, answered within `timeoutMs`. Never
 * throws: null when no answer came back (no connection, the time limit, a redirect, a body cut
 * off), which callers report as the network error.
 */
export async function postToAgentPass(
  call: ServiceCall,
  content: { type: string; data: string },
): Promise<ServiceAnswer | null> {
  try {
    const response = await call.fetch(call.endpoint, {
      method: "POST",
      headers: {
        authorization: `Bearer ${call.partnerKey}`,
        "content-type": content.type,
        accept: "application/json",
      },
      body: content.data,
      signal: AbortSignal.timeout(call.timeoutMs),
      redirect: "error",
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: parseJson(text) };
  } catch {
    return null;
  }
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
