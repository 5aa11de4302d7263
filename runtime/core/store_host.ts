// The addresses a record carries (bornHost, storeHost): this broker stores loopback with
// its HTTP port, as the wire has no client address to give.
export interface StoreHost {
  ip: Uint8Array;
  port: number;
}

export const LOOPBACK: StoreHost = { ip: new Uint8Array([127, 0, 0, 1]), port: 0 };
