import { defineEndpoint, type Endpoint } from "@agentpass/http";
import { z } from "zod";
import type { IdentityContext } from "../../context.ts";
import { type DirectoryEntry, listDirectory } from "../../domain/partners.ts";

const DirectoryResponse = z.object({
  partners: z.array(
    z.object({
      id: z.string().meta({ description: "Partner id: an agent passes it as the token audience" }),
      name: z.string(),
      description: z.string().nullable(),
      website: z.string().nullable(),
      verified: z.boolean().meta({
        description: "The partner proved it controls its website's origin; false without a website",
      }),
      resembles: z.string().nullable().meta({
        description:
          "The name of a verified partner this one's name looks like (this one is not it): treat it as a possible impostor",
      }),
    }),
  ),
});

function publicFields({ partner, verified, resembles }: DirectoryEntry) {
  return {
    id: partner.id,
    name: partner.name,
    description: partner.description,
    website: partner.website,
    verified,
    resembles,
  };
}

/** GET /api/partners: the partners that chose to be listed, readable from any origin. */
export function directoryEndpoint(ctx: IdentityContext): Endpoint {
  return defineEndpoint({
    method: "GET",
    path: "/api/partners",
    public: true,
    operation: {
      operationId: "listPartners",
      description:
        "Public, no credentials: each listed partner's id (the `audience` of a token bound to it), name, website and whether AgentPass verified that the partner controls it.",
      tags: ["Directory"],
      summary: "The public partner directory: partners that chose to be listed",
      security: [],
      responses: {
        "200": {
          description: "Listed partners, by name",
          content: { "application/json": { schema: DirectoryResponse } },
        },
      },
    },
    async handle() {
      const entries = await listDirectory(ctx);
      return {
        status: 200,
        body: { partners: entries.map(publicFields) },
        headers: { "Cache-Control": "public, max-age=60" },
      };
    },
  });
}
