// A partner's whole integration: who sent this session token?
//   AGENTPASS_PARTNER_KEY=apk_… AGENTPASS_URL=http://localhost:4000 node examples/verify-token.mjs "$(agentpass token)"
import { verify } from "@agentpass/verify";

const result = await verify(
  process.env.AGENTPASS_PARTNER_KEY,
  process.argv[2],
  process.env.AGENTPASS_URL,
);
if (result.ok) {
  console.log(result.email);
} else {
  console.error(`${result.status} ${result.error}`);
  process.exitCode = 1;
}
