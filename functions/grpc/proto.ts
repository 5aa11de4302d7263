// The RocketMQ 5 service definitions, from the JSON descriptor that
// scripts/gen_grpc_descriptor.ts builds out of the .proto files of the rocketmq-client-nodejs
// package (a runtime dependency: they are not copied here; descriptor_source.ts).
import { Buffer } from "node:buffer";
import type * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import descriptor from "./messaging_descriptor.json" with { type: "json" };

/** The MessagingService definition grpc-js serves. */
export function loadMessagingService(): grpc.ServiceDefinition {
  const json = descriptor as unknown as Parameters<typeof protoLoader.fromJSON>[0];
  const definition = protoLoader.fromJSON(json, {
    // camelCase field names (the descriptor's), enums and 64-bit integers as numbers, bytes
    // as Buffers; no defaults filled in, so proto3 `optional` presence shows as undefined;
    // the oneof in use named by its virtual field (e.g. `command: "settings"`).
    keepCase: false,
    enums: Number,
    longs: Number,
    defaults: false,
    oneofs: true,
  });
  // proto-loader's definition of the service is what grpc-js serves (without loading it).
  const service = definition["apache.rocketmq.v2.MessagingService"] as grpc.ServiceDefinition;
  // Responses may come already encoded (delivered_wire.ts): those pass as they are.
  for (const name of ["ReceiveMessage", "PullMessage"]) {
    const method = service[name];
    const serialize = method.responseSerialize;
    method.responseSerialize = (value: unknown) =>
      value instanceof Uint8Array
        ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        : serialize(value);
  }
  return service;
}

/** The RPC names of the service, as grpc-js keys its handlers (lower camel case). */
export function rpcNames(service: grpc.ServiceDefinition): string[] {
  return Object.keys(service);
}
