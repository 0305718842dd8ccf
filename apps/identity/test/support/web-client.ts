/** What the client sends requests through: a service's `request`, or a harness's `app`. */
interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

/**
 * One browser talking to the service over a loopback socket: it keeps cookies like a browser does (name and
 * value; Max-Age=0 deletes) and fills the CSRF field of forms from the last page it saw.
 */
export function webClient(app: Requester, base = "http://localhost") {
  const jar = new Map<string, string>();
  let csrf = "";

  async function request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (jar.size > 0) headers.set("cookie", [...jar].map(([k, v]) => `${k}=${v}`).join("; "));
    const response = await app.request(`${base}${path}`, { ...init, headers, redirect: "manual" });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair = ""] = cookie.split(";");
      const [name = "", value = ""] = pair.split("=");
      if (/max-age=0/i.test(cookie)) jar.delete(name);
      else jar.set(name, value);
    }
    if (response.headers.get("content-type")?.startsWith("text/html")) {
      const html = await response.clone().text();
      csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? csrf;
    }
    return response;
  }

  const client = {
    jar,
    request,
    get: (path: string) => request(path),
    /** Posts a form with this browser's CSRF token (unless `_csrf` is given); a list is a field repeated. */
    async post(
      path: string,
      fields: Record<string, string | string[]>,
      headers: Record<string, string> = {},
    ) {
      if (!csrf) await request("/sign-in");
      const body = new URLSearchParams({ _csrf: csrf });
      for (const [name, value] of Object.entries(fields)) {
        body.delete(name);
        for (const each of [value].flat()) body.append(name, each);
      }
      return request(path, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: body.toString(),
      });
    },
    /** Follows a 303 to the page it names, as a browser does; any other answer as it is. */
    async follow(response: Response): Promise<Response> {
      const location = response.headers.get("location");
      return response.status === 303 && location ? request(location) : response;
    },
    /** Posts a form and follows its 303, as a browser does: the page the person then sees. */
    async submit(path: string, fields: Record<string, string>) {
      return client.follow(await client.post(path, fields));
    },
    /** The text of a page, for assertions on what a person sees. */
    async text(path: string) {
      return (await request(path)).text();
    },
  };
  return client;
}

export type WebClient = ReturnType<typeof webClient>;
