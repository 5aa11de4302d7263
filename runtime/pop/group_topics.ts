// The names of a consumer group's own topics: where POP and webhook delivery put a message
// back for retry, and where one past its retries is buried; and the name POP keeps its
// progress under. A leaf, so dlq.ts and core/offsets.ts name them without importing
// PopService (pop_service.ts re-exports them for its old importers).

export const retryTopicOf = (group: string) => `%RETRY%${group}`;
export const dlqTopicOf = (group: string) => `%DLQ%${group}`;
/** Where a POP consumer's progress is kept in the consumer offsets: its pop offset per queue,
 * ahead of the acked messages by those in flight. GET and reset of the group's offsets read
 * and move it (core/offsets.ts). Groups cannot start with %, so it is no group's name. */
export const popOffsetGroupOf = (group: string) => `%POP%${group}`;
