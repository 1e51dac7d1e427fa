// Resolves Agent Cards from the directory with the A2A JavaScript SDK, as an A2A client given an agent's base URL:
// the card resolver (with its A2A 0.3 compatibility on) and the client factory, which picks a transport from the
// card's interfaces. Arguments: the directory URL, then description ids. Prints one JSON object: by id, what the
// base URL `{directory}/a2a/{id}/` gives (and, under "withoutSlash", what `{directory}/a2a/{id}` gives).
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver } from "@a2a-js/sdk/client";

const [directoryUrl, ...ids] = process.argv.slice(2);
const resolver = new DefaultAgentCardResolver({ legacyCompat: { enabled: true } });
const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { cardResolver: resolver }));

async function outcome(step) {
  try {
    return { value: await step() };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

const results = {};
for (const id of ids) {
  const base = `${directoryUrl}/a2a/${encodeURIComponent(id)}`;
  results[id] = {
    card: await outcome(async () => {
      const card = await resolver.resolve(`${base}/`);
      return {
        name: card.name,
        interfaces: (card.supportedInterfaces ?? []).map((i) => [i.protocolBinding, i.url]),
        securitySchemes: Object.keys(card.securitySchemes ?? {}).sort(),
        securityRequirements: (card.securityRequirements ?? []).map((r) => Object.keys(r.schemes ?? {}).sort()),
      };
    }),
    client: await outcome(async () => {
      const client = await factory.createFromUrl(`${base}/`);
      return client.constructor.name;
    }),
    withoutSlash: await outcome(async () => (await resolver.resolve(base)).name),
  };
}
console.log(JSON.stringify(results));
