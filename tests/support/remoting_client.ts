// A bare RocketMQ remoting client for tests and the benchmark: requests by code over one
// node:net connection, answers matched by opaque, server-sent requests (NOTIFY_CONSUMER_
// IDS_CHANGED) collected, and raw bytes for malformed-frame tests.
import net from "node:net";
import {
  decodeCommand,
  encodeCommand,
  FrameDecoder,
  isResponse,
  type RemotingCommand,
  SERIALIZE_JSON,
} from "../../functions/remoting/codec.ts";

export class RawRemoting {
  readonly notices: RemotingCommand[] = [];
  readonly closed: Promise<void>;
  #pending = new Map<number, (cmd: RemotingCommand) => void>();
  #opaque = 0;
  #decoder = new FrameDecoder();
  #isClosed = false;

  private constructor(private readonly socket: net.Socket) {
    this.closed = new Promise((resolve) => socket.on("close", () => resolve()));
    socket.on("close", () => {
      this.#isClosed = true;
    });
    socket.on("error", () => {});
    socket.on("data", (chunk: Uint8Array) => {
      for (const frame of this.#decoder.push(chunk)) {
        const cmd = decodeCommand(frame);
        if (!isResponse(cmd)) {
          this.notices.push(cmd);
          continue;
        }
        const done = this.#pending.get(cmd.opaque);
        this.#pending.delete(cmd.opaque);
        done?.(cmd);
      }
    });
  }

  static connect(address: string): Promise<RawRemoting> {
    const [host, port] = address.split(":");
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), host, () => {
        socket.off("error", reject);
        socket.setNoDelay(true);
        resolve(new RawRemoting(socket));
      });
      socket.once("error", reject);
    });
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  request(
    code: number,
    extFields: Record<string, string | number> = {},
    body?: Uint8Array,
    options: { serializeType?: 0 | 1; timeoutMs?: number } = {},
  ): Promise<RemotingCommand> {
    const opaque = ++this.#opaque;
    const ext: Record<string, string> = {};
    for (const k in extFields) ext[k] = String(extFields[k]);
    const answer = new Promise<RemotingCommand>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(opaque);
        reject(new Error(`no answer to request ${code} in ${options.timeoutMs ?? 10_000} ms`));
      }, options.timeoutMs ?? 10_000);
      this.#pending.set(opaque, (cmd) => {
        clearTimeout(timer);
        resolve(cmd);
      });
    });
    this.socket.write(encodeCommand({
      code,
      language: "JAVA",
      version: 0,
      opaque,
      flag: 0,
      extFields: ext,
      body,
      serializeType: options.serializeType ?? SERIALIZE_JSON,
    }));
    return answer;
  }

  writeRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  close(): Promise<void> {
    this.socket.destroy();
    return this.closed;
  }
}

export function json(cmd: RemotingCommand): unknown {
  return JSON.parse(new TextDecoder().decode(cmd.body));
}
