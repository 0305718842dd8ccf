export { apiDocsEndpoints } from "./api-docs.ts";
export {
  type ApiOptions,
  createApiListener,
  type Listener,
  logRequest,
  UNKNOWN_ROUTE,
} from "./api-router.ts";
export {
  clientAddress,
  clientAddressOf,
  parseTrustProxy,
  type TrustProxy,
} from "./client-address.ts";
export {
  type Answer,
  defineEndpoint,
  type Endpoint,
  type EndpointRequest,
  type Method,
} from "./endpoint.ts";
export {
  answerError,
  type BearerCredential,
  COMMON_ERRORS,
  createErrorHandler,
  defineErrors,
  type ErrorDef,
  HttpError,
  type PlainAnswer,
  readBearer,
  renderError,
  unauthorized,
} from "./http-error.ts";
export { isoTime } from "./iso-time.ts";
export { createLogDestination, type LogDestination } from "./log-destination.ts";
export { createLoopbackClient, type LoopbackRequest } from "./loopback.ts";
export { allowedMethods, type RouteEntry } from "./not-allowed.ts";
export { buildOpenApiDocument, type DocumentedRoute, RATE_LIMIT_HEADERS } from "./openapi.ts";
export {
  type JsonBody,
  readHeader,
  readIncomingJson,
  readIncomingText,
  readJsonBody,
  readTextBody,
} from "./read-body.ts";
export {
  LOOPBACK_HOSTS,
  type RunningServer,
  type ServableService,
  type ServerOptions,
  SOCKET_LIMITS,
  startServer,
} from "./server.ts";
