export {
  clientAddress,
  clientAddressOf,
  parseTrustProxy,
  type TrustProxy,
} from "./client-address.ts";
export { type OpenApiDocument, renderDocsPage } from "./docs-page.ts";
export { type FastPath, incomingHeader, writeJson, writeJsonText } from "./fast-path.ts";
export {
  answerError,
  type BearerCredential,
  createErrorHandler,
  HttpError,
  type PlainAnswer,
  readBearer,
  renderError,
  unauthorized,
} from "./http-error.ts";
export { isoTime } from "./iso-time.ts";
export { allowedMethods, type RouteEntry } from "./not-allowed.ts";
export {
  type JsonBody,
  readHeader,
  readIncomingJson,
  readJsonBody,
  readTextBody,
} from "./read-body.ts";
export {
  type RunningServer,
  type ServableService,
  type ServerOptions,
  SOCKET_LIMITS,
  startServer,
} from "./server.ts";
