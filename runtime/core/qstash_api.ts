// The QStash front end's core calls (QstashApi), put together from the parts that own
// them: keys, checks and settings (qstash.ts), the DLQ (qstash_dlq.ts), cron schedules.
import type { StoredMessage } from "../cron_service.ts";
import type { QstashApi } from "../protocol/core_api.ts";
import type { QstashCore } from "./qstash.ts";
import type { QstashDeadLetters } from "./qstash_dlq.ts";

/** The QStash front end's core calls: the keys and checks of `core`, the DLQ of `dead`,
 * the cron service's stored messages. */
export function qstashApi(
  core: QstashCore,
  dead: QstashDeadLetters,
  schedule: (id: string) => { message: StoredMessage; createdAtMs: number },
): QstashApi {
  return {
    qstashSigningKeys: () => core.qstashSigningKeys(),
    rotateQstashSigningKeys: () => core.rotateQstashSigningKeys(),
    setQstashSigningKeys: (keys) => core.setQstashSigningKeys(keys),
    checkDestination: (url) => core.checkDestination(url),
    qstashSettings: () => core.qstashSettings(),
    listDeadLetters: (group, max) => dead.listDeadLetters(group, max),
    retryDeadLetters: (group, ids) => dead.retryDeadLetters(group, ids),
    deleteDeadLetters: (group, ids) => dead.deleteDeadLetters(group, ids),
    qstashSchedule: (id) =>
      Promise.resolve().then(() => {
        const { message, createdAtMs } = schedule(id);
        return {
          createdAt: createdAtMs,
          body: message.body,
          ...(message.contentType ? { contentType: message.contentType } : {}),
          properties: message.properties ?? {},
        };
      }),
  };
}
