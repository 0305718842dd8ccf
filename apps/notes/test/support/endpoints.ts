/**
 * One request to every authenticated endpoint of the notes API (method and path), for specs that
 * must hold on each: ids are fresh UUIDs of nothing, and one is not a UUID at all, since
 * authentication comes before any other check.
 */
export const AUTHENTICATED_ENDPOINTS: readonly [string, string][] = [
  ["GET", "/api/notes"],
  ["POST", "/api/notes"],
  ["GET", `/api/notes/${crypto.randomUUID()}`],
  ["PATCH", `/api/notes/${crypto.randomUUID()}`],
  ["DELETE", `/api/notes/${crypto.randomUUID()}`],
  ["GET", "/api/tags"],
  ["POST", "/api/tags"],
  ["PATCH", `/api/tags/${crypto.randomUUID()}`],
  ["DELETE", `/api/tags/${crypto.randomUUID()}`],
  ["GET", "/api/notes/not-a-uuid"],
];
