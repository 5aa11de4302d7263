// A bare grpc-js client of apache.rocketmq.v2.MessagingService for tests: signed like the
// official clients (MQv2-HMAC-SHA1 over x-mq-date-time), able to call any RPC by name,
// a method the service lacks ("bogus") and a request of garbage bytes ("garbage").
import { createHmac } from "node:crypto";
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { loadMessagingService } from "../../functions/grpc/proto.ts";

const SERVICE = "/apache.rocketmq.v2.MessagingService/";

export interface RawClient {
  client: grpc.Client;
  service: grpc.ServiceDefinition;
  metadata(): grpc.Metadata;
  close(): void;
}

export function connectRaw(
  address: string,
  key: { name: string; key: string } | undefined,
): RawClient {
  const service = loadMessagingService();
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return {
    client,
    service,
    metadata() {
      const md = new grpc.Metadata();
      const dateTime = new Date().toISOString().split(".")[0].replace(/[-:]/g, "") + "Z";
      md.set("x-mq-client-id", "raw-test-client");
      md.set("x-mq-date-time", dateTime);
      md.set("x-mq-protocol", "v2");
      if (key) {
        const signature = createHmac("sha1", key.key).update(dateTime).digest("hex").toUpperCase();
        md.set(
          "authorization",
          `MQv2-HMAC-SHA1 Credential=${key.name}, SignedHeaders=x-mq-date-time, Signature=${signature}`,
        );
      }
      return md;
    },
    close: () => client.close(),
  };
}

/** Calls `rpc` (a service method, "bogus" or "garbage"); a stream's responses come as a
 * list. Rejects with the grpc-js error (its `code` is the gRPC status). */
export function rawCall(raw: RawClient, rpc: string, request: unknown): Promise<unknown> {
  const deadline = Date.now() + 10_000;
  if (rpc === "bogus" || rpc === "garbage") {
    const path = rpc === "bogus" ? `${SERVICE}Bogus` : `${SERVICE}QueryRoute`;
    return new Promise((resolve, reject) =>
      raw.client.makeUnaryRequest(
        path,
        () => Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]),
        (b: Buffer) => b,
        request,
        raw.metadata(),
        { deadline },
        (err, res) => err ? reject(err) : resolve(res),
      )
    );
  }
  const m = Object.values(raw.service).find((d) => d.originalName === rpc);
  if (!m) throw new Error(`no RPC ${rpc}`);
  if (m.responseStream) {
    return new Promise((resolve, reject) => {
      const out: unknown[] = [];
      const call = raw.client.makeServerStreamRequest(
        m.path,
        m.requestSerialize,
        m.responseDeserialize,
        request,
        raw.metadata(),
        { deadline },
      );
      call.on("data", (d) => out.push(d));
      call.on("error", reject);
      call.on("end", () => resolve(out));
    });
  }
  return new Promise((resolve, reject) =>
    raw.client.makeUnaryRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      request,
      raw.metadata(),
      { deadline },
      (err, res) => err ? reject(err) : resolve(res),
    )
  );
}
