import { definePage, type Page } from "@agentpass/http";

/** The one stylesheet and the one script of the dashboard, served from /assets (CSP 'self'). */
const STYLESHEET = `
:root{color-scheme:light dark;--fg:#18181b;--muted:#5b5b66;--line:#dcdce3;--bg:#fafafa;--surface:#fff;--code:#f0f0f4;--secret:#fff8e1;--accent:#2350d8;--on-accent:#fff;--bad:#b42318;--ok:#11734b}
@media (prefers-color-scheme:dark){:root{--fg:#ececf1;--muted:#a3a3ae;--line:#34343c;--bg:#111114;--surface:#1a1a1f;--code:#26262d;--secret:#2b2613;--accent:#8aa5ff;--on-accent:#0b0b10;--bad:#ff7a6b;--ok:#4cd48f}}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
header{background:var(--surface);border-bottom:1px solid var(--line)}
header nav{max-width:960px;margin:0 auto;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center}
header .brand{font-weight:700;margin-right:auto;color:var(--fg);text-decoration:none}
nav a{color:var(--accent)}
.who{color:var(--muted);font-size:.9rem}
.landing{display:grid;gap:1rem;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr))}
.landing h2{margin-top:0}
.warning{border-left:4px solid var(--bad);background:var(--secret);padding:.5rem .75rem;border-radius:4px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dd{margin:0}
.landing code{word-break:normal;overflow-wrap:anywhere}
main{max-width:960px;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
a{color:var(--accent)}
.card{background:var(--surface);border:1px solid var(--line);border-radius:8px;padding:1rem;margin:0 0 1rem}
table{width:100%;border-collapse:collapse;background:var(--surface)}
th,td{text-align:left;padding:.5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:.85rem;color:var(--muted);font-weight:600}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=text],input[type=email],input[type=url],textarea{width:100%;max-width:32rem;padding:.55rem;border:1px solid var(--line);border-radius:6px;font:inherit;color:var(--fg);background:var(--surface)}
button,.button{display:inline-block;padding:.5rem .9rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:var(--on-accent);font:inherit;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:var(--surface);color:var(--accent)}
button.danger,.button.danger{background:var(--bad);border-color:var(--bad);color:var(--on-accent)}
td.actions{white-space:nowrap}
td.actions .button,button.small{padding:.2rem .6rem;font-size:.9rem}
details{margin:1rem 0}
summary{cursor:pointer;color:var(--muted);font-weight:600}
:focus-visible{outline:3px solid #f5a524;outline-offset:2px}
.muted{color:var(--muted)}
.error{color:var(--bad);font-weight:600}
.ok{color:var(--ok)}
.secret{font-family:ui-monospace,monospace;background:var(--secret);border:1px dashed #c9a227;padding:.6rem;border-radius:6px;word-break:break-all}
code{font-family:ui-monospace,monospace;background:var(--code);padding:.1rem .3rem;border-radius:4px;word-break:break-all}
.empty{color:var(--muted);font-style:italic}
.chart{max-width:100%;height:auto;background:var(--surface);border:1px solid var(--line);border-radius:8px}
.inline{display:inline}
ul.directory,ul.plain{list-style:none;padding:0}
ul.plain li{padding:.25rem 0}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (max-width:600px){th.optional,td.optional{display:none}td.actions{white-space:normal}}
`;

/** Progressive enhancement only: copy buttons, and the sign-in link's fragment into its form. */
const SCRIPT = `
document.querySelectorAll("[data-copy]").forEach(function (button) {
  button.hidden = false;
  button.addEventListener("click", function () {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (target && navigator.clipboard) navigator.clipboard.writeText(target.textContent.trim()).then(function () { button.textContent = "Copied"; });
  });
});
var link = document.getElementById("link-token");
if (link && location.hash.length > 1) { link.value = location.hash.slice(1); history.replaceState(null, "", location.pathname); }
`;

/** The icon of every page: a key, in the accent colour. */
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2350d8"/><circle cx="12" cy="16" r="5" fill="none" stroke="#fff" stroke-width="3"/><path d="M17 16h10M23 16v4M27 16v3" stroke="#fff" stroke-width="3" stroke-linecap="round"/></svg>`;

const ASSET_CACHE = "public, max-age=3600";

/** The stylesheet, the script and the icon, as routes; `/favicon.ico` is the icon's old name. */
export function assetRoutes(): Page[] {
  const asset = (path: string, type: string, data: string) =>
    definePage({
      method: "GET",
      path,
      handle: () => ({
        status: 200,
        content: { type, data },
        headers: { "Cache-Control": ASSET_CACHE },
      }),
    });
  return [
    asset("/assets/style.css", "text/css; charset=utf-8", STYLESHEET),
    asset("/assets/app.js", "text/javascript; charset=utf-8", SCRIPT),
    asset("/favicon.svg", "image/svg+xml", FAVICON),
    definePage({
      method: "GET",
      path: "/favicon.ico",
      handle: () => ({ status: 301, headers: { Location: "/favicon.svg" } }),
    }),
  ];
}
