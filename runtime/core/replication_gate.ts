// What a replicated group's master asks of every client write (runtime/ha/node.ts
// implements it); declared here, by its consumer, the producer.
export interface ReplicationGate {
  /** Throws NOT_LEADER when this broker may not take writes now. */
  checkWritable(): void;
  /**
   * Resolves, once the replication policy holds for the log below `endOffset`, with how
   * many replicas hold it (this one included). Rejects with a BrokerError otherwise, an
   * info-class 504 REPLICATION_TIMEOUT as the record is written (never a 503, which says
   * nothing was written and is sent again): never a success that promises more than
   * happened.
   */
  confirm(endOffset: number): Promise<number>;
}
