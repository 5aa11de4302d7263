// The names of a consumer group's own topics: where POP and webhook delivery put a message
// back for retry, and where one past its retries is buried. A leaf, so dlq.ts names them
// without importing PopService (pop_service.ts re-exports them for its old importers).

export const retryTopicOf = (group: string) => `%RETRY%${group}`;
export const dlqTopicOf = (group: string) => `%DLQ%${group}`;
