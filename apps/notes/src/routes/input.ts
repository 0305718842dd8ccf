import {
  type Admission,
  type ApiCall,
  type ErrorDef,
  HttpError,
  type InputFailure,
  MAX_JSON_DEPTH,
} from "@agentpass/http";
import { z } from "zod";
import { ERRORS } from "../errors.ts";
import type { Authenticate, Caller } from "./authenticate.ts";

/**
 * The refusal of input the router's parse did not take (the endpoint's documented schemas), with
 * the notes API's messages: a path id that is not a UUID (`invalidId`), an invalid query, a body
 * that is not JSON, or one the schema refuses, with zod's flattened details.
 */
export function refuseNotesInput(invalidId?: ErrorDef) {
  return (failure: InputFailure): HttpError => {
    if (failure.part === "params") return new HttpError(invalidId ?? ERRORS.invalid_body);
    if (failure.problem === "not_json") return new HttpError(ERRORS.invalid_json_body);
    if (failure.problem === "schema") {
      const def = failure.part === "query" ? ERRORS.invalid_query : ERRORS.invalid_body;
      return new HttpError(def, { extra: { details: z.flattenError(failure.error) } });
    }
    const formErrors = [`JSON nested deeper than ${MAX_JSON_DEPTH} levels`];
    return new HttpError(ERRORS.invalid_body, {
      extra: { details: { formErrors, fieldErrors: {} } },
    });
  };
}

/** The endpoints' `admit`: the local user the session token names, or the refusal it throws. */
export function admitUser(authenticate: Authenticate) {
  return async (request: ApiCall): Promise<Admission<Caller>> => ({
    ok: true,
    admitted: await authenticate(request),
  });
}
