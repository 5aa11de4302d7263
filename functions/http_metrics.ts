// HTTP figures of any process that serves the app (broker, split-mode functions, Deploy):
// a request duration histogram per route family, and the process's own uptime and memory.
// Wraps the fetch handler instead of adding a Hono middleware, so routes stay
// middleware-free (app.ts).
import { family, Histogram } from "../runtime/protocol/prom_text.ts";

/** Seconds: 1 ms to 30 s (long polls end up in the last buckets). */
const BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const FAMILIES: Array<[RegExp, string]> = [
  [/^\/v1\/topics\/[^/]+\/messages(\/batch)?$/, "produce"],
  [/^\/v1\/topics\/[^/]+\/queues\//, "pull"],
  [/^\/v1\/groups\/[^/]+\/(receive|ack|nack|visibility)/, "pop"],
  [/^\/v1\/groups\/[^/]+\/offsets\//, "offsets"],
  [/^\/v1\/groups\/[^/]+\/(heartbeat|members|assignment|lock|unlock)/, "membership"],
  [/^\/v1\/topics\/[^/]+\/scheduled/, "scheduled"],
  [/^\/v1\/(topics|groups|schedules|subscriptions|messages|cluster|ha|internal)\b/, "admin"],
  [/^\/(healthz|readyz|metrics|openapi\.json)$/, "probe"],
  [/^\/dashboard\b/, "dashboard"],
];

const CODE_CLASSES = ["0xx", "1xx", "2xx", "3xx", "4xx", "5xx"];

export function routeFamily(path: string): string {
  for (const [pattern, name] of FAMILIES) if (pattern.test(path)) return name;
  return "other";
}

export interface HttpMetrics {
  fetch(request: Request): Response | Promise<Response>;
  lines(): string[];
}

/**
 * `handler` timed per request (to the response head) into a histogram per route family.
 * No async frame of its own: the handler's promise goes back to the server as it is and
 * the timing rides on a side reaction. The async wrapper it replaces cost ~2 µs of server
 * CPU per request on Deno (~0.5 on Bun), five times its in-process cost (bench/README.md,
 * "Produce path (issue #27, round 3…)").
 */
export function instrumentFetch(
  handler: (request: Request) => Response | Promise<Response>,
  nowMs: () => number = () => performance.now(),
): HttpMetrics {
  const duration = new Histogram(
    "mq_http_request_duration_seconds",
    "HTTP request duration to the response head, per route family",
    BOUNDS,
  );
  const observe = (path: string, started: number, status: number) => {
    try {
      const family = routeFamily(path);
      const code = CODE_CLASSES[Math.floor(status / 100)] ?? "5xx";
      duration.observe({ family, code }, (nowMs() - started) / 1000, family + code);
    } catch {
      // A figure lost, never a request (the side chain in fetch() has no handler after it).
    }
  };
  return {
    fetch(request) {
      const started = nowMs();
      // The path now: a server may close the request once it is answered.
      const url = request.url;
      const query = url.indexOf("?", 8);
      const path = url.slice(url.indexOf("/", 8), query < 0 ? undefined : query);
      let answer: Response | Promise<Response>;
      try {
        answer = handler(request);
      } catch (err) {
        observe(path, started, 500);
        throw err;
      }
      if (answer instanceof Response) {
        observe(path, started, answer.status);
        return answer;
      }
      // The side chain ends here, so observe() never throws (an unhandled rejection would
      // end a Deno process).
      answer.then(
        (response) => observe(path, started, response.status),
        () => observe(path, started, 500),
      );
      return answer;
    },
    lines: () => duration.lines(),
  };
}

/** The process's own figures: uptime and resident memory. */
export function processLines(startedMs: number, nowMs: number, rssBytes: number): string[] {
  return [
    ...family(
      "process_uptime_seconds",
      "gauge",
      "Seconds since this process started",
      (nowMs - startedMs) / 1000,
    ),
    ...family(
      "process_resident_memory_bytes",
      "gauge",
      "Resident memory of this process",
      rssBytes,
    ),
  ];
}
