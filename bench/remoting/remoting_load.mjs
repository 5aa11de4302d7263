// Load client for bench/remoting/remoting_bench.ts, run by Node.js (like autocannon for
// HTTP) so the load costs the broker's 2 cores little and is the same for Deno and Bun.
//   node remoting_load.mjs send <host:port> <topic> <connections> <seconds> <bodyBytes>
//   node remoting_load.mjs pull <host:port> <topic> <queues> <connections> <seconds>
//   node remoting_load.mjs http-pull <baseUrl> <topic> <queues> <connections> <seconds>
// Each connection keeps one request in flight (autocannon -c N does the same). Prints one
// JSON line: {requests, msgs, errors, seconds}. Pulls wrap to offset 0 at a queue's end.
import net from "node:net";
import http from "node:http";

const [mode, target, topic, ...rest] = process.argv.slice(2);

function frame(code, extFields, body) {
  const header = Buffer.from(JSON.stringify({
    code,
    language: "JAVA",
    version: 0,
    opaque: 0,
    flag: 0,
    extFields,
  }));
  const bodyLen = body ? body.length : 0;
  const out = Buffer.allocUnsafe(8 + header.length + bodyLen);
  out.writeInt32BE(4 + header.length + bodyLen, 0);
  out.writeInt32BE(header.length, 4);
  header.copy(out, 8);
  if (body) body.copy(out, 8 + header.length);
  return out;
}

/** One connection: send(code, ext, body) resolves with {code, ext, body} of the answer. */
function connect(address) {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), host, () => {
      socket.setNoDelay(true);
      let buf = Buffer.alloc(0);
      let waiter;
      socket.on("data", (chunk) => {
        buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
        while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
          const len = buf.readInt32BE(0);
          const headerLen = buf.readInt32BE(4) & 0xffffff;
          const header = JSON.parse(buf.subarray(8, 8 + headerLen).toString());
          const body = buf.subarray(8 + headerLen, 4 + len);
          buf = buf.subarray(4 + len);
          const w = waiter;
          waiter = undefined;
          w({ code: header.code, ext: header.extFields || {}, body });
        }
      });
      resolve({
        send(code, ext, body) {
          return new Promise((r) => {
            waiter = r;
            socket.write(frame(code, ext, body));
          });
        },
        close: () => socket.destroy(),
      });
    });
    socket.once("error", reject);
  });
}

/** Records in a pull answer: walk the TOTALSIZE fields. */
function countRecords(body) {
  let n = 0;
  for (let p = 0; p + 4 <= body.length; p += body.readInt32BE(p)) n++;
  return n;
}

async function run(connections, seconds, loop) {
  const end = performance.now() + seconds * 1000;
  const totals = { requests: 0, msgs: 0, errors: 0 };
  const started = performance.now();
  await Promise.all([...Array(connections).keys()].map((i) => loop(i, end, totals)));
  totals.seconds = (performance.now() - started) / 1000;
  process.stdout.write(JSON.stringify(totals) + "\n");
}

if (mode === "send") {
  const [connections, seconds, bodyBytes] = rest.map(Number);
  const body = Buffer.alloc(bodyBytes, 120);
  const conns = await Promise.all([...Array(connections)].map(() => connect(target)));
  await run(connections, seconds, async (i, end, t) => {
    while (performance.now() < end) {
      const r = await conns[i].send(310, {
        a: "PG_bench",
        b: topic,
        c: "TBW102",
        d: 4,
        e: -1,
        f: 0,
        g: Date.now(),
        h: 0,
        i: "",
        j: 0,
        k: false,
      }, body);
      t.requests++;
      if (r.code === 0) t.msgs++;
      else t.errors++;
    }
  });
  for (const c of conns) c.close();
} else if (mode === "pull") {
  const [queues, connections, seconds] = rest.map(Number);
  const conns = await Promise.all([...Array(connections)].map(() => connect(target)));
  await run(connections, seconds, async (i, end, t) => {
    let offset = 0;
    while (performance.now() < end) {
      const r = await conns[i].send(11, {
        consumerGroup: "CG_bench",
        topic,
        queueId: i % queues,
        queueOffset: offset,
        maxMsgNums: 32,
        sysFlag: 0,
        commitOffset: 0,
        suspendTimeoutMillis: 0,
      });
      t.requests++;
      if (r.code === 0) {
        t.msgs += countRecords(r.body);
        offset = Number(r.ext.nextBeginOffset);
      } else if (r.code === 19 || r.code === 20 || r.code === 21) offset = 0;
      else t.errors++;
    }
  });
  for (const c of conns) c.close();
} else if (mode === "http-pull") {
  const [queues, connections, seconds] = rest.map(Number);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const get = (path) =>
    new Promise((resolve, reject) => {
      http.get(target + path, { agent }, (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
      }).on("error", reject);
    });
  await run(connections, seconds, async (i, end, t) => {
    let offset = 0;
    while (performance.now() < end) {
      const r = await get(
        `/v1/topics/${topic}/queues/${i % queues}/messages?offset=${offset}&max=32`,
      );
      t.requests++;
      if (r.status !== 200) {
        t.errors++;
        offset = 0;
        continue;
      }
      const page = JSON.parse(r.body.toString());
      t.msgs += page.messages.length;
      offset = page.messages.length ? page.nextOffset : 0;
    }
  });
  agent.destroy();
} else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
