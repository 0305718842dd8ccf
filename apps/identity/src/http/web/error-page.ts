import type { Answer, PlainAnswer, RefusedRequest } from "@agentpass/http";
import type { WebRequest } from "./guard.ts";
import { html } from "./html.ts";
import { renderPage } from "./page.ts";
import { htmlAnswer, withPageHeaders } from "./page-answers.ts";

/** Whether the caller is a browser asking for a page, not an API client: it gets HTML errors. */
function wantsPage(request: RefusedRequest): boolean {
  return (
    !request.path.startsWith("/api/") && (request.header("accept") ?? "").includes("text/html")
  );
}

const TITLES: Record<number, string> = { 404: "Page not found", 405: "Not allowed here" };

/** An error as a page: what happened and where to go from here. No detail of the fault. */
function errorPage(status: number, message: string) {
  return renderPage({
    title: TITLES[status] ?? "Something went wrong",
    session: null,
    csrf: "",
    body: html`<p class="error" role="alert">${message} (HTTP ${status}).</p>
<p><a href="/">Go to the front page</a> or <a href="/keys">your keys</a>.</p>`,
  });
}

/**
 * The router's answer to a refusal or a fault on a page or an unknown path: for a browser, a page
 * naming the status and, for a fault, the request id; for an API client the JSON it was.
 */
export function renderPageError(answer: PlainAnswer, request: RefusedRequest): Answer {
  if (!wantsPage(request)) return answer;
  const { error, requestId } = answer.body;
  const message = requestId ? `${error} (request id ${requestId})` : String(error);
  return withPageHeaders(
    htmlAnswer(errorPage(answer.status, message), answer.status, answer.headers),
  );
}

/** What a signed-in person gets for a key or partner that does not exist or is not theirs. */
export function notFoundPage(web: WebRequest): Answer {
  return htmlAnswer(
    renderPage({
      title: "Not found",
      session: web.session,
      csrf: web.csrf,
      body: html`<p>There is nothing here, or it is not yours. <a href="/keys">Back to your keys</a>.</p>`,
    }),
    404,
  );
}
