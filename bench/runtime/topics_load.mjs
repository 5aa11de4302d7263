// Single 1 KiB produces with autocannon (Node.js, like bench/http), each request to the next
// of `topics` topics named t0, t1, …: node topics_load.mjs URL TOPICS CONNECTIONS SECONDS
// Prints {"requests_per_s": N, "non2xx": N, "errors": N}.
import autocannon from "autocannon";

const [url, topics, connections, seconds] = process.argv.slice(2);
const n = Number(topics);
let next = 0;
const result = await autocannon({
  url,
  connections: Number(connections),
  duration: Number(seconds),
  requests: [{
    method: "POST",
    body: "m".repeat(1024),
    setupRequest: (req) => ({ ...req, path: `/v1/topics/t${next++ % n}/messages` }),
  }],
});
process.stdout.write(
  JSON.stringify({
    requests_per_s: result.requests.average,
    non2xx: result.non2xx,
    errors: result.errors,
  }) + "\n",
);
