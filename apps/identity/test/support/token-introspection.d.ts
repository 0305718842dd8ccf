/** The RFC 7662 client used as an independent introspection client in the tests. */
declare module "token-introspection" {
  interface Options {
    endpoint: string;
    client_id?: string;
    client_secret?: string;
    access_token?: string;
  }
  export default function tokenIntrospection(
    options: Options,
  ): (token: string, tokenTypeHint?: string) => Promise<unknown>;
}
