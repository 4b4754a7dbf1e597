// graphql-js's introspection query, every option on, sent as a client would:
// node introspect.mjs URL  ->  {"types": N, "queryFields": [...]} or an error
import { buildClientSchema, getIntrospectionQuery } from "graphql";

const url = process.argv[2];
const query = getIntrospectionQuery({
  descriptions: true,
  specifiedByUrl: true,
  directiveIsRepeatable: true,
  schemaDescription: true,
  inputValueDeprecation: true,
  oneOf: true,
});
const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", accept: "application/graphql-response+json" },
  body: JSON.stringify({ query }),
});
const body = await response.json();
if (body.errors) {
  console.log(JSON.stringify({ status: response.status, errors: body.errors }));
} else {
  const schema = buildClientSchema(body.data);
  const fields = Object.keys(schema.getQueryType().getFields()).sort();
  console.log(JSON.stringify({ status: response.status, types: Object.keys(schema.getTypeMap()).length, queryFields: fields }));
}
