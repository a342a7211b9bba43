/** The Redis Cluster hash slot of a key (CRC16 of its braced part, or of the whole key), as ioredis computes it. */
declare module 'cluster-key-slot' {
  export default function calculateSlot(key: string | Buffer): number;
}
