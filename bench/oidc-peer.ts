/**
 * The standard peer: RFC 7662 token introspection on oidc-provider (the certified Node.js
 * OAuth 2.0 / OpenID Connect server), with an opaque access token, in its default in-memory
 * configuration. Prints `{ "url", "token", "authorization" }` once it listens.
 */
import Provider from "oidc-provider";

const port = Number(process.argv[2] ?? 0);
const clientSecret = "bench-secret-0123456789abcdef0123456789abcdef";
const provider = new Provider(`http://127.0.0.1:${port}`, {
  clients: [
    {
      client_id: "bench",
      client_secret: clientSecret,
      grant_types: ["authorization_code"],
      response_types: ["code"],

      redirect_uris: ["http://127.0.0.1/callback"],
    },
  ],
  features: { introspection: { enabled: true }, devInteractions: { enabled: false } },
  findAccount: async (_ctx: unknown, sub: string) => ({
    accountId: sub,
    claims: async () => ({ sub }),
  }),
});
// Quiet: the provider warns about development defaults on every start.
provider.on("server_error", () => {});

const client = await provider.Client.find("bench");
if (!client) throw new Error("the bench client is missing");
const token = await new provider.AccessToken({
  accountId: "bench-user",
  client,
  scope: "openid",
  grantId: "bench-grant",
  gty: "client_credentials",
}).save();
const server = provider.listen(port, "127.0.0.1");
server.on("listening", () => {
  const address = server.address() as { port: number };
  console.log(
    JSON.stringify({
      url: `http://127.0.0.1:${address.port}`,
      token,
      authorization: `Basic ${Buffer.from(`bench:${clientSecret}`).toString("base64")}`,
    }),
  );
});
