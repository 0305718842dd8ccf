import type { Context } from "hono";
import type { WebRequest } from "./guard.ts";
import { html, renderPage } from "./page.ts";

/** Whether the caller is a browser asking for a page, not an API client: it gets HTML errors. */
export function wantsPage(c: Context): boolean {
  return !c.req.path.startsWith("/api/") && (c.req.header("accept") ?? "").includes("text/html");
}

const TITLES: Record<number, string> = { 404: "Page not found", 405: "Not allowed here" };

/** An error as a page: what happened and where to go from here. No detail of the fault. */
export function errorPage(status: number, message: string) {
  return renderPage({
    title: TITLES[status] ?? "Something went wrong",
    session: null,
    csrf: "",
    body: html`<p class="error" role="alert">${message} (HTTP ${status}).</p>
<p><a href="/">Go to the front page</a> or <a href="/keys">your keys</a>.</p>`,
  });
}

/** What a signed-in person gets for a key or partner that does not exist or is not theirs. */
export function notFoundPage(c: Context, web: WebRequest) {
  return c.html(
    renderPage({
      title: "Not found",
      session: web.session,
      csrf: web.csrf,
      body: html`<p>There is nothing here, or it is not yours. <a href="/keys">Back to your keys</a>.</p>`,
    }),
    404,
  );
}
