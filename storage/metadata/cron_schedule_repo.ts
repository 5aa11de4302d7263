// Cron schedules in the metadata database (table cron_schedule): one row per schedule, its
// message as JSON. The runtime's CronService keeps the rows in memory and writes through.
import { eq } from "drizzle-orm";
import { cronSchedule, type MetadataDb } from "./schema.ts";

export type CronScheduleRow = typeof cronSchedule.$inferSelect;

export class CronScheduleRepo {
  constructor(private readonly db: MetadataDb) {}

  async all(): Promise<CronScheduleRow[]> {
    return await this.db.select().from(cronSchedule);
  }

  async insert(row: CronScheduleRow): Promise<void> {
    await this.db.insert(cronSchedule).values(row);
  }

  async setPaused(
    scheduleId: string,
    change: { paused: boolean; updatedAtMs: number; lastTickMs: number | null },
  ): Promise<void> {
    await this.db.update(cronSchedule).set(change).where(eq(cronSchedule.scheduleId, scheduleId));
  }

  /** Records the scheduled time of the last tick published. */
  async setLastTick(scheduleId: string, lastTickMs: number): Promise<void> {
    await this.db.update(cronSchedule).set({ lastTickMs }).where(
      eq(cronSchedule.scheduleId, scheduleId),
    );
  }

  async delete(scheduleId: string): Promise<void> {
    await this.db.delete(cronSchedule).where(eq(cronSchedule.scheduleId, scheduleId));
  }
}
