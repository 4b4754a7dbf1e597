// The graphql-http audit of a GraphQL over HTTP server: node audit.mjs URL
// Prints [{id, name, status, reason}] as JSON; status is "ok", "warn" or "error".
import { auditServer } from "graphql-http";

const url = process.argv[2];
const results = await auditServer({ url });
const out = [];
for (const result of results) {
  const entry = { id: result.id, name: result.name, status: result.status };
  if (result.status !== "ok") {
    entry.reason = result.reason;
    if (result.response) {
      entry.response = { status: result.response.status, body: await result.response.text() };
    }
  }
  out.push(entry);
}
console.log(JSON.stringify(out));
