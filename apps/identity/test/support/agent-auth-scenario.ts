import { agentJwt, call, type Ed25519Key, ed25519Key, hostJwt } from "./agent-auth-client.ts";

/**
 * One Agent Auth Protocol scenario, run by an outside client (`jose` alone) against any provider:
 * discover, register a host and an agent, have the person approve, poll the status, use and
 * replay JWTs, introspect, rotate a key, revoke the agent and the host. Each step records what
 * the provider answered (status and error code, and the one field that step is about), so that
 * two providers' records can be compared step by step.
 */

export interface Provider {
  /** Its discovery document's URL. */
  discovery: string;
  /** The person approves the agent's code, as they would in the provider's browser page. */
  approve(agentId: string, userCode: string): Promise<void>;
  /** Introspects an agent JWT as a resource server of this provider does (with its credentials). */
  introspect(token: string): Promise<{ status: number; body: Record<string, unknown> }>;
  /** The `aud` of an agent JWT meant for that resource server. */
  audience: string;
  /**
   * Where `list_notes` and `create_note` execute (section 2.15): the `aud` of an execution's JWT
   * and the URL its `{ capability, arguments }` are posted to.
   */
  location: string;
}

export interface Step {
  step: string;
  status: number;
  /** The error code, or the field the step is about (an agent's status, `active`, …). */
  outcome: string;
}

export async function runScenario(provider: Provider): Promise<Step[]> {
  const steps: Step[] = [];
  const record = (
    step: string,
    answer: { status: number; body: Record<string, unknown> },
    field?: string,
  ) => {
    const error = answer.body.error;
    const value = field === undefined ? undefined : answer.body[field];
    steps.push({
      step,
      status: answer.status,
      outcome: typeof error === "string" ? error : value === undefined ? "" : String(value),
    });
  };

  const discovered = await call(provider.discovery);
  record("discover", discovered, "version");
  const issuer = discovered.body.issuer as string;
  const endpoints = discovered.body.endpoints as Record<string, string>;
  const at = (name: string) => new URL(endpoints[name] ?? "", issuer).href;

  const host = await ed25519Key();
  const jwtFor = (key: Ed25519Key, id: string, audience: string) =>
    agentJwt(key, host.thumbprint, id, audience);
  async function registered(
    name: string,
    capabilities?: unknown[],
  ): Promise<{ id: string; key: Ed25519Key; hostId: string }> {
    const key = await ed25519Key();
    const answer = await call(at("register"), {
      bearer: await hostJwt(host, issuer, { agent_public_key: key.jwk }),
      body: { name, ...(capabilities && { capabilities }) },
    });
    record(`register ${name}`, answer, "status");
    const id = answer.body.agent_id as string;
    // A provider may approve an agent of a host its person approved before (the reference does).
    const approval = answer.body.approval as { user_code: string } | undefined;
    if (approval) await provider.approve(id, approval.user_code);
    return { id, key, hostId: answer.body.host_id as string };
  }
  const statusOf = async (id: string, bearer?: string) =>
    call(`${at("status")}?agent_id=${encodeURIComponent(id)}`, {
      bearer: bearer ?? (await hostJwt(host, issuer)),
    });

  const agent = await registered("first");
  const hostToken = await hostJwt(host, issuer);
  record("status after approval", await statusOf(agent.id, hostToken), "status");
  record("status with a replayed host JWT", await statusOf(agent.id, hostToken), "status");

  const jwt = (key: Ed25519Key, id: string) =>
    agentJwt(key, host.thumbprint, id, provider.audience);
  const token = await jwt(agent.key, agent.id);
  record("introspect an agent JWT", await provider.introspect(token), "active");
  record("introspect it again (a replay)", await provider.introspect(token), "active");
  record(
    "introspect without credentials",
    await call(at("introspect"), { body: { token: await jwt(agent.key, agent.id) } }),
    "active",
  );

  const capabilities = await call(at("capabilities"));
  steps.push({
    step: "list the capabilities",
    status: capabilities.status,
    outcome: ((capabilities.body.capabilities ?? []) as { name: string }[])
      .map((capability) => capability.name)
      .sort()
      .join(" "),
  });
  record("describe one", await call(`${at("describe_capability")}?name=list_notes`), "name");
  record(
    "describe an unknown one",
    await call(`${at("describe_capability")}?name=launch_rockets`),
    "name",
  );
  const capable = await registered("capable", [
    { name: "list_notes", constraints: { limit: { max: 5 } } },
  ]);
  // Signed as section 4.3 says (`iss` the host key's thumbprint), then with `iss` the host's id,
  // as the reference wants: the same grant checked by both providers, whichever they accept.
  for (const [signed, iss] of [
    ["", host.thumbprint],
    [", iss the host's id", capable.hostId],
  ] as const) {
    const execute = async (capability: string, args: Record<string, unknown>) =>
      call(provider.location, {
        bearer: await agentJwt(capable.key, iss, capable.id, provider.location),
        body: { capability, arguments: args },
      });
    record(`execute within its grant${signed}`, await execute("list_notes", { limit: 3 }));
    record(`execute beyond a constraint${signed}`, await execute("list_notes", { limit: 50 }));
    record(
      `execute what it was not granted${signed}`,
      await execute("create_note", { title: "t" }),
    );
  }
  record(
    "ask for another capability",
    await call(at("request_capability"), {
      bearer: await jwtFor(capable.key, capable.id, issuer),
      body: { capabilities: ["create_note"] },
    }),
  );

  const second = await registered("second");
  const rotatedKey = await ed25519Key();
  record(
    "rotate the second agent's key",
    await call(at("rotate_key"), {
      bearer: await hostJwt(host, issuer),
      body: { agent_id: second.id, public_key: rotatedKey.jwk },
    }),
    "status",
  );
  record(
    "introspect by its old key",
    await provider.introspect(await jwt(second.key, second.id)),
    "active",
  );
  record(
    "introspect by its new key",
    await provider.introspect(await jwt(rotatedKey, second.id)),
    "active",
  );

  record(
    "revoke the first agent",
    await call(at("revoke"), { bearer: await hostJwt(host, issuer), body: { agent_id: agent.id } }),
    "status",
  );
  record(
    "introspect the revoked agent",
    await provider.introspect(await jwt(agent.key, agent.id)),
    "active",
  );
  record(
    "the other agent still works",
    await provider.introspect(await jwt(rotatedKey, second.id)),
    "active",
  );

  record(
    "revoke the host",
    await call(at("revoke_host"), { bearer: await hostJwt(host, issuer), body: {} }),
    "agents_revoked",
  );
  record(
    "introspect under the revoked host",
    await provider.introspect(await jwt(rotatedKey, second.id)),
    "active",
  );
  return steps;
}
