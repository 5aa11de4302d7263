// One replica of a broker group (haMode "cluster"): master or slave as the lease in KV
// says (lease.ts), never both. The roles are whole sets of running parts:
//
//   slave:  MessageStore + ReplicationSlave (follows the master named in the lease record)
//           + MetadataFollower (copies topics, groups, offsets, subscriptions). Client
//           requests get 503 not-leader, naming the master.
//   master: Broker (every service: produce, pull, POP, timers, webhooks...) + a
//           ReplicationMaster of the lease's epoch + the route entry with that epoch.
//
// A role change stops one set and starts the other over the same data folder, one change
// at a time. Becoming master: stop following, close the store, start a Broker on it, let
// ReplicationMaster record where the new epoch begins, and only then take writes. Losing
// the lease (deadline passed, record taken, or a peer showed a higher epoch): refuse
// writes at once (the gate below), then close the Broker and follow the new master, whose
// handshake truncates whatever this replica wrote past the point the two logs share.
//
// Every client write passes the gate twice: before it is appended (this replica must be
// the master, its lease deadline ahead) and before it is acknowledged (still so after the
// flush and, in SYNC mode, after inSyncReplicas replicas hold it). So a replica that lost
// its lease acknowledges nothing, even if it was paused while the put was in flight.
import type { BrokerClient } from "../protocol/core_api.ts";
import process from "node:process";
import { joinPath } from "../../storage/file_port.ts";
import { MessageStore } from "../../storage/message_store.ts";
import { EPOCH_FILE_NAME, EpochFile } from "../../storage/ha/epoch_file.ts";
import { Broker, type BrokerDeps, type ReplicationGate } from "../broker.ts";
import type { KvOpenOptions, KvPort } from "../platform/kv_port.ts";
import { BrokerError } from "../protocol/errors.ts";
import {
  type HaApi,
  type HaRole,
  type HaStatus,
  METADATA_SNAPSHOT_PATH,
} from "../protocol/ha_api.ts";

import { type RouteRegistration, startRouteRegistration } from "../route_registry.ts";
import { LeaseKeeper, type LeaseLostReason } from "./lease.ts";
import { KvLeaseStore, type LeaseRecord } from "./lease_store.ts";
import type { ReplicationConfig } from "./replication_config.ts";
import { ReplicationError } from "./replication_errors.ts";
import { ReplicationMaster } from "./replication_master.ts";
import { type MasterAddress, ReplicationSlave } from "./replication_slave.ts";
import { importMetadata, MetadataFollower } from "./metadata_sync.ts";
import { type MetadataDbHandle, openMetadataDb } from "../../storage/metadata/sqlite.ts";

/** What a Broker needs (the node starts one per mastership; nowMs is the wall clock),
 * plus the replica's own parts. */
export interface HaNodeDeps extends Omit<BrokerDeps, "store" | "replication"> {
  kv: KvPort;
  /** The platform's: a master's route registration opens a KV of its own. */
  openKv: (pathOrUrl: string, options: KvOpenOptions) => Promise<KvPort>;
  /** host:port clients reach this broker's HTTP API at. */
  httpAddress: string;
  /** host:port of this broker's replication listener (fixed for the process). */
  haAddress: { host: string; port: number };
}

// The status and snapshot the HTTP front end serves (functions/routes/ha.ts).
export { METADATA_SNAPSHOT_PATH } from "../protocol/ha_api.ts";
export type { HaRole, HaStatus } from "../protocol/ha_api.ts";

/** "host:port|haHost:haPort": the HTTP and replication addresses of one replica, as the
 * lease record and the published replica states carry them. */
export function formatNodeAddress(http: string, ha: { host: string; port: number }): string {
  return `${http}|${ha.host}:${ha.port}`;
}

export function parseNodeAddress(
  address: string,
): { http: string; ha: MasterAddress } | undefined {
  const [http, ha] = address.split("|");
  const at = ha?.lastIndexOf(":") ?? -1;
  const port = Number(ha?.slice(at + 1));
  if (!http || at <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  return { http, ha: { host: ha.slice(0, at), port } };
}

interface SlaveParts {
  store: MessageStore;
  db: MetadataDbHandle;
  slave: ReplicationSlave | undefined;
  metadata: { stop(): Promise<void> } | undefined;
  /** Lease record (owner, epoch) the slave follows. */
  following: LeaseRecord | undefined;
}

interface MasterParts {
  epoch: number;
  broker: Broker;
  master: ReplicationMaster;
  routes: RouteRegistration | undefined;
}

export class HaNode implements HaApi {
  readonly #d: HaNodeDeps;
  readonly #keeper: LeaseKeeper;
  readonly #leases: KvLeaseStore;
  readonly #epochs: EpochFile;
  readonly #address: string;
  #role: HaRole = "starting";
  #slave: SlaveParts | undefined;
  #master: MasterParts | undefined;
  /** Role changes run one after another. */
  #changes: Promise<void> = Promise.resolve();
  /** In the master's in-sync set at the last contact (what an election may trust). */
  #inSync = false;
  /** The log's end as last known (also while a role change has the store closed). */
  #maxOffset = 0;
  /**
   * Set when this master's lease lapsed with nobody else taking it (KV down or slow):
   * the confirm offset it had. Until another broker's record shows up or this replica
   * follows a master, it publishes itself in sync at that offset. RocketMQ keeps a
   * valid old master eligible: it holds every write it acknowledged. And its peers then
   * measure themselves against what it acknowledged, never against bytes it wrote and
   * did not acknowledge (else none of them would count as in sync, and nobody could be
   * elected once the KV returned).
   */
  #lapsedConfirmOffset: number | undefined;
  #stopped = false;
  /** A lease read after a link failure, at most one at a time. */
  #leaseRead: Promise<void> | undefined;

  constructor(deps: HaNodeDeps) {
    this.#d = deps;
    const { config } = deps;
    this.#address = formatNodeAddress(deps.httpAddress, deps.haAddress);
    this.#leases = new KvLeaseStore(deps.kv);
    deps.files.mkdirp(config.store.storePathRootDir);
    this.#epochs = EpochFile.open(
      deps.files,
      joinPath(config.store.storePathRootDir, EPOCH_FILE_NAME),
    );
    this.#keeper = new LeaseKeeper({
      brokerGroup: config.brokerName,
      brokerId: config.brokerId,
      address: this.#address,
      store: this.#leases,
      clock: {
        monotonicMs: () => performance.now(),
        wallMs: deps.nowMs,
        setTimer: (ms, fn) => {
          const t = setTimeout(fn, ms);
          return () => clearTimeout(t);
        },
      },
      eligibility: () => this.#eligibility(),
      settings: {
        leaseTtlMs: config.leaseTtlMs,
        leaseSafetyMarginMs: config.leaseSafetyMarginMs,
      },
      onAcquired: ({ epoch }) => this.#change(() => this.#becomeMaster(epoch)),
      onLost: ({ epoch, reason }) => this.#lost(epoch, reason),
      log: deps.log,
    });
  }

  get role(): HaRole {
    return this.#role;
  }

  /** Opens the store as a slave, then competes for the lease. */
  async start(): Promise<void> {
    const seen = await this.#leases.readLease(this.#d.config.brokerName).catch(() => null);
    // A brand-new group (no record, nothing in our log): every empty replica may lead it.
    this.#inSync = seen?.record == null && this.#epochs.lastEpoch === 0;
    await this.#change(() => this.#becomeSlave(seen?.record ?? null));
    this.#keeper.start();
  }

  /** The Broker, when this replica is the master and may take writes; else NOT_LEADER. */
  client(): BrokerClient {
    const m = this.#master;
    if (this.#role === "master" && m !== undefined && this.#writable(m)) return m.broker;
    throw this.#notLeader("Cannot serve this request");
  }

  metrics(): string {
    return this.#role === "master" && this.#master ? this.#master.broker.metrics() : "";
  }

  status(): HaStatus {
    const record = this.#keeper.lastSeenRecord();
    const master = record && this.#recordLive(record)
      ? {
        brokerId: record.owner,
        httpAddress: parseNodeAddress(record.address)?.http ?? "",
        epoch: record.epoch,
      }
      : null;
    const s = this.#slave;
    const m = this.#master;
    return {
      role: this.#role,
      brokerId: this.#d.config.brokerId,
      brokerGroup: this.#d.config.brokerName,
      epoch: m?.epoch ?? this.#epochs.lastEpoch,
      maxOffset: (m?.broker.store ?? s?.store)?.maxPhysicalOffset ?? 0,
      master,
      ...(s?.slave
        ? {
          slave: {
            state: s.slave.state,
            heldOffset: s.slave.heldOffset,
            masterMaxOffset: s.slave.masterMaxOffset,
            inSync: this.#inSync,
          },
        }
        : {}),
      ...(m
        ? {
          replicas: m.master.replicas().map((r) => ({
            brokerId: r.brokerId,
            ackedOffset: r.ackedOffset,
            inSync: r.inSync,
          })),
        }
        : {}),
    };
  }

  /**
   * Graceful stop: hands the lease over at once (release), then closes whichever role is
   * running. The KV is the caller's to close, after whenStoreIdle().
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#keeper.release().catch((err) =>
      this.#d.log("warn", "releasing the lease failed", { err: String(err) })
    );
    await this.#change(async () => {
      await this.#stopMaster();
      await this.#stopSlave();
      this.#role = "stopped";
    });
  }

  /** First step of a graceful stop: held pulls are answered now, new writes refused. */
  drain(): void {
    this.#master?.broker.drain();
  }

  /** Resolves when no KV call of the lease is pending (bound it: KV may be down). */
  whenStoreIdle(): Promise<void> {
    return this.#keeper.whenStoreIdle();
  }

  // ---- the gate ----

  #writable(m: MasterParts): boolean {
    return this.#master === m && this.#role === "master" && this.#keeper.isLeader() &&
      this.#keeper.epoch === m.epoch && m.master.deposedBy === 0;
  }

  #gate(parts: () => MasterParts | undefined): ReplicationGate {
    const { config } = this.#d;
    return {
      checkWritable: () => {
        const m = parts();
        if (m === undefined || !this.#writable(m)) {
          throw this.#notLeader("Cannot accept writes");
        }
        // Refuse up front, writing nothing, when SYNC could not be met anyway.
        const slavesNeeded = config.inSyncReplicas - 1;
        if (config.replicationMode === "SYNC" && slavesNeeded > 0) {
          const inSync = m.master.inSyncSlaveCount();
          if (inSync < slavesNeeded) {
            throw new BrokerError(
              "REPLICAS_NOT_AVAILABLE",
              `Cannot accept writes: ${inSync} slaves are in sync, inSyncReplicas ${config.inSyncReplicas} needs ${slavesNeeded}; nothing was written, retry later`,
              { inSyncReplicas: config.inSyncReplicas, inSyncSlaves: inSync },
            );
          }
        }
      },
      confirm: async (endOffset) => {
        const m = parts();
        if (m === undefined) throw this.#notLeader("Cannot confirm the write");
        let replicas = 1;
        if (config.replicationMode === "SYNC" && config.inSyncReplicas > 1) {
          try {
            await m.master.waitForReplicas(
              endOffset,
              config.inSyncReplicas,
              config.haSlaveTimeoutMs,
            );
          } catch (err) {
            throw this.#replicationFailure(err, endOffset);
          }
          replicas = config.inSyncReplicas;
        }
        // Leadership may have ended while the put or the wait was in flight.
        if (!this.#writable(m)) {
          throw this.#notLeader(
            "Cannot acknowledge the write (it may or may not survive; retry with the same Idempotency-Key)",
          );
        }
        return replicas;
      },
    };
  }

  #replicationFailure(err: unknown, endOffset: number): BrokerError {
    if (!(err instanceof ReplicationError)) return err as BrokerError;
    const { inSyncReplicas, haSlaveTimeoutMs } = this.#d.config;
    switch (err.code) {
      case "FLUSH_SLAVE_TIMEOUT":
        return new BrokerError(
          "REPLICATION_TIMEOUT",
          `Written on the master but not held by ${inSyncReplicas} replicas within ${haSlaveTimeoutMs} ms (haSlaveTimeoutMs); it may still be delivered: retry with an Idempotency-Key`,
          { endOffset, inSyncReplicas },
        );
      case "SLAVE_NOT_AVAILABLE":
        return new BrokerError(
          "REPLICAS_NOT_AVAILABLE",
          `Fewer than ${
            inSyncReplicas - 1
          } slaves are in sync (inSyncReplicas ${inSyncReplicas}); written on the master only, so not acknowledged: retry later`,
          { endOffset, inSyncReplicas },
        );
      default:
        return this.#notLeader(`Cannot confirm replication (${err.code})`);
    }
  }

  #notLeader(what: string): BrokerError {
    const record = this.#keeper.lastSeenRecord();
    const live = record !== null && this.#recordLive(record) &&
      record.owner !== this.#d.config.brokerId;
    const leader = live ? parseNodeAddress(record.address)?.http : undefined;
    return new BrokerError(
      "NOT_LEADER",
      `${what}: broker ${this.#d.config.brokerId} of ${this.#d.config.brokerName} is not the master${
        leader ? `; the master is at ${leader}` : "; no master is known yet"
      }`,
      leader ? { leader, epoch: record!.epoch } : {},
    );
  }

  #recordLive(record: LeaseRecord): boolean {
    return this.#d.nowMs() <= record.expiresAtMs + this.#d.config.leaseSafetyMarginMs;
  }

  // ---- role changes ----

  #change(step: () => Promise<void>): Promise<void> {
    const run = this.#changes.then(step).catch((err) => {
      this.#d.log("error", "role change failed; the process exits to restart clean", {
        err: String(err),
        stack: (err as Error)?.stack,
      });
      // A half-changed replica must not linger: the supervisor (or the test) restarts it,
      // and recovery plus the slave handshake bring it back to a consistent state.
      setTimeout(() => process.exit(70), 10);
    });
    this.#changes = run;
    return run;
  }

  #lost(epoch: number, reason: LeaseLostReason) {
    if (this.#stopped) return;
    this.#d.log("warn", "lease lost; stepping down to slave", { epoch, reason });
    const m = this.#master;
    if (reason === "DEADLINE_PASSED" && m?.epoch === epoch) {
      this.#lapsedConfirmOffset = m.master.confirmOffset;
    }
    if (this.#role === "master") this.#role = "changing"; // refuse writes now
    void this.#change(() => this.#becomeSlave(this.#keeper.lastSeenRecord()));
  }

  async #becomeMaster(epoch: number): Promise<void> {
    if (this.#stopped) return;
    if (this.#master?.epoch === epoch && this.#role === "master") return; // renewed hold
    await this.#stopMaster();
    this.#role = "changing";
    // The slave's store is open and recovered: the Broker takes it over as it is.
    const store = await this.#stopSlave({ keepStore: true }) ?? await this.#openStore();
    if (!this.#keeper.isLeader() || this.#keeper.epoch !== epoch) {
      // Lost again while the slave parts were stopping: follow instead.
      await store.close();
      return await this.#becomeSlave(this.#keeper.lastSeenRecord());
    }
    const { config, log } = this.#d;
    const started = performance.now();
    // The epoch's start is recorded (and replication listens) before any service of the
    // Broker can append: timers, delay levels and POP revive write as soon as they start,
    // and a byte written before the entry would count as the previous epoch's.
    await this.#epochs.clipTo(store.maxPhysicalOffset);
    const master = new ReplicationMaster({
      store,
      epochs: this.#epochs,
      epoch,
      host: config.haHost,
      port: this.#d.haAddress.port,
      nowMs: () => performance.now(),
      config: this.#replicationConfig(),
      log,
      onDeposed: (higher, peer) => {
        log("warn", "a peer showed a higher epoch; stepping down", { epoch, higher, peer });
        // The keeper gives the record up too (else it would renew an epoch nobody
        // follows); its onLost steps us down. Not holding: step down here.
        if (!this.#keeper.supersede(higher)) this.#lost(epoch, "SUPERSEDED");
      },
    });
    await master.start();
    const ref: { parts?: MasterParts } = {};
    let broker: Broker;
    try {
      broker = await Broker.open({
        config,
        files: this.#d.files,
        nowMs: this.#d.nowMs,
        log,
        runtime: this.#d.runtime,
        pid: this.#d.pid,
        random: this.#d.random,
        diskUsedRatio: this.#d.diskUsedRatio,
        bodyText: this.#d.bodyText,
        openSqlite: this.#d.openSqlite,
        store,
        replication: this.#gate(() => ref.parts),
      });
    } catch (err) {
      await master.stop();
      throw err;
    }
    const parts: MasterParts = { epoch, broker, master, routes: undefined };
    ref.parts = parts;
    this.#master = parts;
    this.#inSync = true;
    this.#lapsedConfirmOffset = undefined;
    this.#role = "master";
    const mine = parts;
    parts.routes = await startRouteRegistration({
      config,
      address: this.#d.httpAddress,
      broker,
      log,
      nowMs: this.#d.nowMs,
      openKv: this.#d.openKv,
      epoch,
      stillValid: () => this.#writable(mine),
    }).catch((err) => {
      log("warn", "route registration failed; clients find the master through the lease", {
        err: String(err),
      });
      return undefined;
    });
    log("info", "became master", {
      epoch,
      maxOffset: broker.store.maxPhysicalOffset,
      ms: Math.round(performance.now() - started),
    });
    if (!this.#writable(parts)) this.#lost(epoch, "DEADLINE_PASSED");
  }

  async #stopMaster(): Promise<void> {
    const m = this.#master;
    if (m === undefined) return;
    this.#master = undefined;
    this.#role = "changing";
    m.broker.drain();
    await m.routes?.stop({ remove: false });
    await m.master.stop();
    await m.broker.close();
  }

  async #becomeSlave(record: LeaseRecord | null): Promise<void> {
    if (this.#stopped) return;
    if (this.#role === "slave" && this.#slave) return this.#follow(record);
    await this.#stopMaster();
    this.#role = "changing";
    const { config, log } = this.#d;
    this.#inSync = this.#inSync && this.#epochs.lastEpoch === 0 && record === null;
    const store = await this.#openStore();
    await this.#epochs.clipTo(store.maxPhysicalOffset);
    const db = await openMetadataDb(`${config.dataDir}/metadata.sqlite`, this.#d.openSqlite);
    this.#slave = { store, db, slave: undefined, metadata: undefined, following: undefined };
    this.#role = "slave";
    this.#follow(record);
    log("info", "following as slave", {
      maxOffset: store.maxPhysicalOffset,
      epoch: this.#epochs.lastEpoch,
    });
  }

  /** Opens (recovers) and starts the store in the data folder. */
  async #openStore(): Promise<MessageStore> {
    const { config, log } = this.#d;
    const store = new MessageStore({
      files: this.#d.files,
      config: config.store,
      nowMs: this.#d.nowMs,
      log,
      diskUsedRatio: this.#d.diskUsedRatio,
    });
    this.#d.files.mkdirp(config.dataDir);
    await store.open();
    store.start();
    return store;
  }

  /** Points the slave at the master named by `record` (if live and not us). */
  #follow(record: LeaseRecord | null) {
    const s = this.#slave;
    if (s === undefined || this.#role !== "slave" || record === null) return;
    if (record.owner === this.#d.config.brokerId || !this.#recordLive(record)) return;
    const address = parseNodeAddress(record.address);
    if (address === undefined) return;
    const same = s.following?.owner === record.owner && s.following.epoch === record.epoch &&
      s.following.address === record.address;
    if (same) return;
    s.following = record;
    if (s.slave === undefined) {
      s.slave = new ReplicationSlave({
        store: s.store,
        epochs: this.#epochs,
        brokerId: this.#d.config.brokerId,
        master: address.ha,
        nowMs: () => performance.now(),
        config: this.#replicationConfig(),
        log: this.#d.log,
        fenceEpoch: record.epoch,
        // The link failed: the master may have changed. Read the lease now rather than at
        // the next poll (TTL/10), so a new master is followed a poll sooner.
        onError: () => this.#recheckLease(),
      });
      s.slave.start();
    } else {
      s.slave.fence(record.epoch);
      s.slave.setMaster(address.ha);
    }
    void s.metadata?.stop();
    s.metadata = this.#followMetadata(s, address.http);
  }

  /** Copies the master's metadata tables into ours every haMetadataSyncIntervalMs
   * (RocketMQ's SlaveSynchronize); a Broker started here on promotion loads them. */
  #followMetadata(s: SlaveParts, http: string): MetadataFollower {
    const { config, log } = this.#d;
    const admin = config.apiKeys.find((k) => k.admin);
    const follower = new MetadataFollower({
      fetchSnapshot: async (signal) => {
        const res = await fetch(`http://${http}${METADATA_SNAPSHOT_PATH}`, {
          headers: admin ? { authorization: `Bearer ${admin.key}` } : {},
          signal: AbortSignal.any([
            signal,
            AbortSignal.timeout(config.haMetadataSyncIntervalMs * 3),
          ]),
        });
        if (!res.ok) {
          await res.body?.cancel();
          throw new Error(`Master ${http} answered ${res.status} to the metadata fetch`);
        }
        return new Uint8Array(await res.arrayBuffer());
      },
      apply: async (snapshot) => {
        await importMetadata(s.db.db, snapshot);
      },
      intervalMs: config.haMetadataSyncIntervalMs,
      log,
      nowMs: this.#d.nowMs,
    });
    follower.start();
    return follower;
  }

  /** This master's metadata for a slave; NOT_LEADER elsewhere. */
  metadataSnapshot(): Promise<Uint8Array> {
    const m = this.#master;
    if (this.#role !== "master" || m === undefined) {
      return Promise.reject(this.#notLeader("Cannot export metadata"));
    }
    return m.broker.metadataSnapshot();
  }

  /** Stops following; the store is closed unless kept (then it is returned, open). */
  #recheckLease() {
    if (this.#leaseRead !== undefined || this.#role !== "slave") return;
    this.#leaseRead = this.#leases.readLease(this.#d.config.brokerName)
      .then((read) => this.#follow(read.record))
      .catch(() => {}) // the keeper's next poll tries again
      .finally(() => this.#leaseRead = undefined);
  }

  async #stopSlave(options: { keepStore?: boolean } = {}): Promise<MessageStore | undefined> {
    const s = this.#slave;
    if (s === undefined) return undefined;
    this.#slave = undefined;
    await s.metadata?.stop();
    await s.slave?.stop();
    s.db.close();
    if (options.keepStore) return s.store;
    await s.store.close();
    return undefined;
  }

  /**
   * What this replica says for itself in an election, published every poll. A master
   * publishes its confirm offset (the least offset every in-sync replica holds): once it is
   * gone, that is the bar. A slave is in sync while it streams within haMaxGapNotInSync of
   * the master; once the master's lease has lapsed, only if it holds at least the confirm
   * offset the master last published. So a replica that fell behind (or was down) while
   * the master went on is never elected, even after everything restarted. A master whose
   * lease lapsed goes on publishing its confirm offset, in sync (see #lapsedConfirmOffset).
   */
  async #eligibility() {
    const s = this.#slave;
    const record = this.#keeper.lastSeenRecord();
    const m = this.#master;
    if (s !== undefined && this.#role === "slave") {
      this.#follow(record);
      const slave = s.slave;
      if (slave?.state === "TRANSFER") {
        this.#lapsedConfirmOffset = undefined;
        this.#inSync = slave.masterMaxOffset - slave.heldOffset <=
          this.#d.config.haMaxGapNotInSync;
      }
    }
    if (record !== null && record.owner !== this.#d.config.brokerId) {
      this.#lapsedConfirmOffset = undefined;
    }
    const store = m?.broker.store ?? s?.store;
    if (store !== undefined) this.#maxOffset = store.maxPhysicalOffset;
    if (this.#role === "master" && m !== undefined) {
      return { epoch: this.#epochs.lastEpoch, maxOffset: m.master.confirmOffset, inSync: true };
    }
    if (this.#lapsedConfirmOffset !== undefined) {
      return { epoch: this.#epochs.lastEpoch, maxOffset: this.#lapsedConfirmOffset, inSync: true };
    }
    if (
      record !== null && record.owner !== this.#d.config.brokerId && !this.#recordLive(record)
    ) {
      const states = await this.#leases.readReplicas(this.#d.config.brokerName);
      const last = states.find((x) => x.brokerId === record.owner);
      if (last !== undefined) this.#inSync = this.#maxOffset >= last.maxOffset;
    }
    return {
      epoch: this.#epochs.lastEpoch,
      maxOffset: this.#maxOffset,
      inSync: this.#inSync,
    };
  }

  #replicationConfig(): Partial<ReplicationConfig> {
    const { config } = this.#d;
    return {
      slaveTimeout: config.haSlaveTimeoutMs,
      haSendHeartbeatInterval: config.haHeartbeatIntervalMs,
      haHousekeepingInterval: config.haHousekeepingIntervalMs,
      haMaxGapNotInSync: config.haMaxGapNotInSync,
      // A slave finds a new master within a lease poll or so (RocketMQ retries every 5 s).
      haReconnectDelayMsMax: Math.max(200, Math.min(5000, Math.round(config.leaseTtlMs / 10))),
      haReconnectDelayMsMin: Math.max(20, Math.min(200, Math.round(config.leaseTtlMs / 50))),
    };
  }
}
