// Drives the directory with Eclipse node-wot as a WoT consumer: explore, read the listing, invoke every write and
// search action of the directory's TD. Prints one JSON object of outcomes (each a value or {"error": message}).
import core from "@node-wot/core";
import http from "@node-wot/binding-http";

const { Servient, ContentSerdes, JsonCodec } = core;
const { HttpClientFactory } = http;

async function outcome(step) {
  try {
    return { value: await step() };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

async function bytesOf(output) {
  return Buffer.from(await output.arrayBuffer()).toString("utf8");
}

const [directoryUrl, thingId, td10Id] = process.argv.slice(2);
const thing = {
  "@context": "https://www.w3.org/2022/wot/td/v1.1",
  id: thingId,
  title: "node-wot lamp",
  securityDefinitions: { nosec_sc: { scheme: "nosec" } },
  security: "nosec_sc",
  properties: { on: { type: "boolean", forms: [{ href: "http://127.0.0.1:9/lamp/on" }] } },
};

const servient = new Servient();
servient.addClientFactory(new HttpClientFactory());
const WoT = await servient.start();
const results = {};
const td = await WoT.requestThingDescription(`${directoryUrl}/.well-known/wot`);
results.requested = td.title;
const directory = await WoT.consume(td);
results.createThing = await outcome(async () =>
  bytesOf(await directory.invokeAction("createThing", thing, { uriVariables: { id: thingId } })),
);
results.createAnonymousThing = await outcome(async () =>
  bytesOf(await directory.invokeAction("createAnonymousThing", { ...thing, id: undefined, title: "anonymous lamp" })),
);
results.retrieveThing = await outcome(async () =>
  (await (await directory.invokeAction("retrieveThing", undefined, { uriVariables: { id: thingId } })).value()).title,
);
results.updateThing = await outcome(async () =>
  bytesOf(await directory.invokeAction("updateThing", { ...thing, title: "node-wot lamp 2" }, { uriVariables: { id: thingId } })),
);
// node-wot has no codec for application/merge-patch+json and sends String(value): "[object Object]".
results.partiallyUpdateThing = await outcome(async () =>
  bytesOf(await directory.invokeAction("partiallyUpdateThing", { description: "patched" }, { uriVariables: { id: thingId } })),
);
// The workaround: a JSON codec for the merge-patch media type.
ContentSerdes.get().addCodec(new JsonCodec("application/merge-patch+json"));
results.partiallyUpdateThingWithCodec = await outcome(async () =>
  bytesOf(await directory.invokeAction("partiallyUpdateThing", { description: "patched" }, { uriVariables: { id: thingId } })),
);
// A TD 1.0 description, the only kind node-wot's exploration yields (it validates each against TD 1.0's schema).
results.createTd10Thing = await outcome(async () =>
  bytesOf(
    await directory.invokeAction(
      "createThing",
      { ...thing, "@context": "https://www.w3.org/2019/wot/td/v1", id: td10Id, title: "TD 1.0 lamp" },
      { uriVariables: { id: td10Id } },
    ),
  ),
);
results.things = await outcome(async () => (await (await directory.readProperty("things")).value()).map((t) => t.id));
results.searchJSONPath = await outcome(async () =>
  (await directory.invokeAction("searchJSONPath", undefined, { uriVariables: { query: "$[?@.title=='node-wot lamp 2'].id" } })).value(),
);
const sparql = "SELECT ?title WHERE { ?thing <https://www.w3.org/2019/wot/td#title> ?title } ORDER BY ?title";
for (const formIndex of [0, 1]) {
  results[`searchSPARQL_form${formIndex}`] = await outcome(async () => {
    const output = await directory.invokeAction("searchSPARQL", formIndex === 1 ? sparql : undefined, {
      formIndex,
      uriVariables: { query: sparql },
    });
    return (await output.value()).results.bindings.map((b) => b.title.value);
  });
}
results.explored = await outcome(async () => {
  const process = await WoT.exploreDirectory(`${directoryUrl}/.well-known/wot`);
  const ids = [];
  for await (const found of process) ids.push(found.id);
  return { ids, error: process.error?.message ?? null };
});
results.deleteThing = await outcome(async () =>
  bytesOf(await directory.invokeAction("deleteThing", undefined, { uriVariables: { id: thingId } })),
);
console.log(JSON.stringify(results));
await servient.shutdown();
process.exit(0);
