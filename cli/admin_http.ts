// The operations routes the SDK client does not cover yet (GET /v1/groups, topic stats,
// group progress, the cluster, metrics, moving a schedule), over fetch; refusals become
// BrokerErrors as in the SDK.
import { BrokerError } from "../client/mod.ts";
import type {
  ClusterView,
  DrainStatus,
  GroupProgress,
  TopicStats,
} from "../runtime/protocol/ops_types.ts";
import type { CronScheduleView, GroupView } from "../runtime/protocol/types.ts";
import type { CronScheduleExport } from "../runtime/protocol/cluster_types.ts";

/** A schedule whole as JSON: its message's body in base64 (bodyEncoding). */
export type ScheduleExportJson = Omit<CronScheduleExport, "message"> & {
  message: Record<string, unknown> & { body: string; bodyEncoding?: "utf8" | "base64" };
};

export class AdminHttp {
  constructor(
    readonly baseUrl: string,
    readonly token?: string,
    /** The global fetch unless given (the functions' broker link passes its own). */
    readonly fetchFn: typeof fetch = (input, init) => fetch(input, init),
  ) {}

  async listGroups(): Promise<GroupView[]> {
    return (await this.get<{ groups: GroupView[] }>("/v1/groups")).groups;
  }
  topicStats(topic: string): Promise<TopicStats> {
    return this.get(`/v1/topics/${encodeURIComponent(topic)}/stats`);
  }
  groupProgress(group: string): Promise<GroupProgress> {
    return this.get(`/v1/groups/${encodeURIComponent(group)}/progress`);
  }
  clusterView(): Promise<ClusterView> {
    return this.get("/v1/cluster");
  }
  /** What is still owed on `topic` on this broker (admin key), also for `groups`. */
  drainStatus(topic: string, groups: string[] = []): Promise<DrainStatus> {
    const q = groups.length ? `?groups=${encodeURIComponent(groups.join(","))}` : "";
    return this.get(`/v1/topics/${encodeURIComponent(topic)}/drain-status${q}`);
  }

  /** A schedule whole (admin key), to move it to another broker. */
  exportSchedule(id: string): Promise<ScheduleExportJson> {
    return this.get(`/v1/schedules/${encodeURIComponent(id)}/export`);
  }
  /** Creates it here with its id, creation time and last tick (admin key). */
  importSchedule(s: ScheduleExportJson): Promise<CronScheduleView> {
    return this.get(`/v1/schedules/${encodeURIComponent(s.id)}`, { method: "PUT", json: s });
  }

  async get<T>(path: string, send?: { method: string; json: unknown }): Promise<T> {
    let res: Response;
    const auth: Record<string, string> = this.token
      ? { authorization: `Bearer ${this.token}` }
      : {};
    try {
      res = await this.fetchFn(
        this.baseUrl + path,
        send
          ? {
            method: send.method,
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify(send.json),
          }
          : { headers: auth },
      );
    } catch (err) {
      throw new BrokerError("BROKER_UNAVAILABLE", `Cannot reach ${this.baseUrl}: ${err}`);
    }
    const text = await res.text();
    if (!res.ok) {
      let problem = {};
      try {
        problem = JSON.parse(text);
      } catch { /* not JSON: the status says it */ }
      throw BrokerError.fromProblem(problem, res.status);
    }
    return JSON.parse(text) as T;
  }
}
