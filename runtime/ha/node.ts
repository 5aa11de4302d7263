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
// writes at once (the gate, node_gate.ts), then close the Broker and follow the new master, whose
// handshake truncates whatever this replica wrote past the point the two logs share.
//
// Every client write passes the gate twice: before it is appended (this replica must be
// the master, its lease deadline ahead) and before it is acknowledged (still so after the
// flush and, in SYNC mode, after inSyncReplicas replicas hold it). So a replica that lost
// its lease acknowledges nothing, even if it was paused while the put was in flight.
import type { BrokerClient } from "../protocol/core_api.ts";
import { haMetrics } from "./ha_metrics.ts";
import process from "node:process";
import { joinPath } from "../../storage/file_port.ts";
import type { MessageStore } from "../../storage/message_store.ts";
import { EPOCH_FILE_NAME, EpochFile } from "../../storage/ha/epoch_file.ts";
import type { Broker, ReplicationGate } from "../broker.ts";
import type { BrokerError } from "../protocol/errors.ts";

import type { LeaseKeeper, LeaseLostReason, ReplicaEligibility } from "./lease.ts";
import { KvLeaseStore, type LeaseRecord } from "./lease_store.ts";
import { openMetadataDb } from "../../storage/metadata/sqlite.ts";
import { formatNodeAddress, parseNodeAddress } from "./node_address.ts";
import { notLeaderError, replicationGate } from "./node_gate.ts";
import {
  followMetadata,
  leaseKeeper,
  openBroker,
  openStore,
  registerRoutes,
  replicationMaster,
  replicationSlave,
} from "./node_parts.ts";
import { NodeEligibility } from "./node_eligibility.ts";
import { isAlive } from "./election.ts";
import { haStatus } from "./node_status.ts";
import type { HaNodeDeps, HaRole, HaStatus, MasterParts, SlaveParts } from "./node_types.ts";
import type { HaApi } from "../protocol/ha_api.ts";

export { formatNodeAddress, parseNodeAddress } from "./node_address.ts";
export {
  type HaNodeDeps,
  type HaRole,
  type HaStatus,
  METADATA_SNAPSHOT_PATH,
} from "./node_types.ts";

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
  /** What this replica says for itself in elections, and the state that rests on. */
  readonly #self = new NodeEligibility();
  #stopped = false;
  /** A lease read after a link failure, at most one at a time. */
  #leaseRead: Promise<void> | undefined;

  constructor(deps: HaNodeDeps) {
    this.#d = deps;
    const { config } = deps;
    this.#address = formatNodeAddress(deps.httpAddress, deps.haAddress, deps.remotingAddress);
    this.#leases = new KvLeaseStore(deps.kv);
    deps.files.mkdirp(config.store.storePathRootDir);
    this.#epochs = EpochFile.open(
      deps.files,
      joinPath(config.store.storePathRootDir, EPOCH_FILE_NAME),
    );
    this.#keeper = leaseKeeper(deps, this.#address, this.#leases, {
      eligibility: () => this.#eligibility(),
      onAcquired: ({ epoch }) => this.#change(() => this.#becomeMaster(epoch)),
      onLost: ({ epoch, reason }) => this.#lost(epoch, reason),
    });
  }

  get role(): HaRole {
    return this.#role;
  }

  /** Opens the store as a slave, then competes for the lease. */
  async start(): Promise<void> {
    const seen = await this.#leases.readLease(this.#d.config.brokerName).catch(() => null);
    // A brand-new group (no record, nothing in our log): every empty replica may lead it.
    this.#self.inSync = seen?.record == null && this.#epochs.lastEpoch === 0;
    await this.#change(() => this.#becomeSlave(seen?.record ?? null));
    this.#keeper.start();
  }

  /** The Broker, when this replica is the master and may take writes; else NOT_LEADER. */
  client(): BrokerClient {
    const m = this.#master;
    if (this.#role === "master" && m !== undefined && this.#writable(m)) return m.broker;
    throw this.#notLeader("Cannot serve this request");
  }

  /** The group as remoting clients reach it (the NameServer's brokerAddrs): the live lease
   * holder's remoting address and those of the replicas that published lately. */
  async remotingReplicas(): Promise<{ brokerId: number; remoting: string; master: boolean }[]> {
    const record = this.#keeper.lastSeenRecord();
    const owner = record && this.#recordLive(record) ? record.owner : undefined;
    const states = await this.#leases.readReplicas(this.#d.config.brokerName);
    const now = this.#d.nowMs();
    const out = [];
    for (const s of states) {
      const remoting = parseNodeAddress(s.address)?.remoting;
      if (!remoting || !isAlive(s, now, this.#keeper.settings.replicaStateTtlMs)) continue;
      out.push({ brokerId: s.brokerId, remoting, master: s.brokerId === owner });
    }
    const holder = record && owner !== undefined ? parseNodeAddress(record.address) : undefined;
    if (holder?.remoting && !out.some((r) => r.master)) {
      out.push({ brokerId: owner!, remoting: holder.remoting, master: true });
    }
    return out;
  }

  /** The master's broker figures (on a master) and this replica's replication figures. */
  async metrics(): Promise<string> {
    const own = this.#role === "master" && this.#master ? await this.#master.broker.metrics() : "";
    return own + haMetrics(this.status());
  }

  status(): HaStatus {
    return haStatus({
      role: this.#role,
      config: this.#d.config,
      record: this.#keeper.lastSeenRecord(),
      recordLive: (record) => this.#recordLive(record),
      slave: this.#slave,
      master: this.#master,
      lastEpoch: this.#epochs.lastEpoch,
      inSync: this.#self.inSync,
    });
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
    return replicationGate(this.#d.config, parts, {
      writable: (m) => this.#writable(m),
      notLeader: (what) => this.#notLeader(what),
    });
  }

  #notLeader(what: string): BrokerError {
    const record = this.#keeper.lastSeenRecord();
    return notLeaderError(what, this.#d.config, record, (r) => this.#recordLive(r));
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
      this.#self.lapsedConfirmOffset = m.master.confirmOffset;
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
    const store = await this.#stopSlave({ keepStore: true }) ?? await openStore(this.#d);
    if (!this.#keeper.isLeader() || this.#keeper.epoch !== epoch) {
      // Lost again while the slave parts were stopping: follow instead.
      await store.close();
      return await this.#becomeSlave(this.#keeper.lastSeenRecord());
    }
    const { log } = this.#d;
    const started = performance.now();
    // The epoch's start is recorded (and replication listens) before any service of the
    // Broker can append: timers, delay levels and POP revive write as soon as they start,
    // and a byte written before the entry would count as the previous epoch's.
    await this.#epochs.clipTo(store.maxPhysicalOffset);
    const master = replicationMaster(this.#d, {
      store,
      epochs: this.#epochs,
      epoch,
      onDeposed: (higher, peer) => {
        log("warn", "a peer showed a higher epoch; stepping down", { epoch, higher, peer });
        // The keeper gives the record up too (else it would renew an epoch nobody
        // follows); its onLost steps us down. Not holding: step down here.
        if (!this.#keeper.supersede(higher)) this.#lost(epoch, "SUPERSEDED");
      },
    });
    await this.#d.haPortHold?.release();
    await master.start();
    const ref: { parts?: MasterParts } = {};
    let broker: Broker;
    try {
      broker = await openBroker(this.#d, store, this.#gate(() => ref.parts));
    } catch (err) {
      await master.stop();
      throw err;
    }
    const parts: MasterParts = { epoch, broker, master, routes: undefined };
    ref.parts = parts;
    this.#master = parts;
    this.#self.inSync = true;
    this.#self.lapsedConfirmOffset = undefined;
    this.#role = "master";
    const mine = parts;
    parts.routes = await registerRoutes(this.#d, broker, epoch, () => this.#writable(mine));
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
    if (!this.#stopped) await this.#d.haPortHold?.hold();
    await m.broker.close();
  }

  async #becomeSlave(record: LeaseRecord | null): Promise<void> {
    if (this.#stopped) return;
    if (this.#role === "slave" && this.#slave) return this.#follow(record);
    await this.#stopMaster();
    this.#role = "changing";
    const { config, log } = this.#d;
    this.#self.inSync = this.#self.inSync && this.#epochs.lastEpoch === 0 && record === null;
    const store = await openStore(this.#d);
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
      s.slave = replicationSlave(this.#d, {
        store: s.store,
        epochs: this.#epochs,
        master: address.ha,
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
    s.metadata = followMetadata(this.#d, s, address.http);
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

  /** This replica's eligibility (node_eligibility.ts), after following the lease's master. */
  async #eligibility(): Promise<ReplicaEligibility> {
    const record = this.#keeper.lastSeenRecord();
    if (this.#slave !== undefined && this.#role === "slave") this.#follow(record);
    return await this.#self.report({
      role: this.#role,
      config: this.#d.config,
      record,
      recordLive: (r) => this.#recordLive(r),
      slave: this.#slave,
      master: this.#master,
      lastEpoch: () => this.#epochs.lastEpoch,
      leases: this.#leases,
    });
  }
}
