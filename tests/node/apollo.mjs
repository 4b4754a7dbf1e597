// Apollo Client 4 with its persisted-query link (hashed queries sent with GET), as a
// frontend would use it: node apollo.mjs URL  ->  the answers of a query asked twice
// (through two clients, so that the second is not answered from Apollo's own cache).
import { createHash } from "node:crypto";
import { ApolloClient, HttpLink, InMemoryCache, gql } from "@apollo/client";
import { PersistedQueryLink } from "@apollo/client/link/persisted-queries";

const url = process.argv[2];
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const QUERY = gql`
  query Tags {
    tags {
      name
      numSpecs
    }
  }
`;

function client() {
  const persisted = new PersistedQueryLink({ sha256, useGETForHashedQueries: true });
  return new ApolloClient({
    link: persisted.concat(new HttpLink({ uri: url })),
    cache: new InMemoryCache(),
  });
}

const answers = [];
for (let i = 0; i < 2; i++) {
  const result = await client().query({ query: QUERY, fetchPolicy: "network-only" });
  answers.push({ data: result.data, error: result.error ? String(result.error) : null });
}
console.log(JSON.stringify(answers));
