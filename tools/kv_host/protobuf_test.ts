import assert from "node:assert/strict";
import {
  ProtobufError,
  type ProtoField,
  ProtoReader,
  ProtoWriter,
  readFields,
} from "./protobuf.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const unhex = (s: string) => new Uint8Array(s.match(/../g)!.map((h) => parseInt(h, 16)));

Deno.test("ProtoWriter.varint() writes the spec's examples; ProtoReader reads them back", () => {
  const cases: [bigint, string][] = [
    [0n, "00"],
    [1n, "01"],
    [150n, "9601"], // protobuf.dev encoding guide
    [300n, "ac02"],
    [2n ** 53n - 1n, "ffffffffffffff0f"],
    [2n ** 64n - 1n, "ffffffffffffffffff01"],
  ];
  for (const [value, bytes] of cases) {
    assert.equal(hex(new ProtoWriter().varint(value).finish()), bytes);
    assert.equal(new ProtoReader(unhex(bytes)).varintBig(), value);
  }
  assert.equal(hex(new ProtoWriter().varint(-1).finish()), "ffffffffffffffffff01");
  assert.equal(new ProtoReader(unhex("ffffffffffffffffff01")).int64(), -1n);
  assert.throws(() => new ProtoReader(unhex("ffffffffffffffffff01")).varint(), ProtobufError);
  assert.throws(() => new ProtoReader(unhex("ffffffffffffffffffff01")).varintBig(), ProtobufError);
  assert.throws(() => new ProtoReader(unhex("80")).varintBig(), /past the end/);
});

Deno.test("readFields() reads known fields in order and skips unknown ones of every wire type", () => {
  // field 1 = 7; field 9, a fixed64; field 10, a fixed32; field 2 = "hi"; field 3, packed [1, 300]
  const bytes = unhex(
    "0807" + "49" + "0102030405060708" + "55" + "01020304" + "12026869" + "1a0301ac02",
  );
  const seen: string[] = [];
  const uints: number[] = [];
  readFields(bytes, (f: ProtoField) => {
    if (f.number === 1) seen.push(`1=${f.uint()}`);
    else if (f.number === 2) seen.push(`2=${new TextDecoder().decode(f.bytes())}`);
    else if (f.number === 3) f.uints(uints);
    else seen.push(`skip ${f.number}/${f.wireType}`);
  });
  assert.deepEqual(seen, ["1=7", "skip 9/1", "skip 10/5", "2=hi"]);
  assert.deepEqual(uints, [1, 300]);
});

Deno.test("readFields() refuses a wrong wire type, a truncated field and field number 0", () => {
  const read = (bytes: string, onField: (f: ProtoField) => void) => () =>
    readFields(unhex(bytes), onField);
  assert.throws(
    read("0807", (f) => f.bytes()),
    new ProtobufError("Field 1 has wire type 0, expected 2"),
  );
  assert.throws(read("0a0568", (f) => f.bytes()), /Field of 5 bytes runs past the end \(1 left\)/);
  assert.throws(read("0a0568", () => {}), ProtobufError, "skipping checks lengths too");
  assert.throws(read("0001", () => {}), /Field number 0/);
  assert.throws(read("0b", () => {}), /Unsupported wire type 3/);
});

Deno.test("ProtoWriter omits proto3 defaults but always writes nested messages", () => {
  const w = new ProtoWriter().uint(1, 0).bool(2, false).bytes(3, new Uint8Array())
    .message(4, new ProtoWriter()).packed(5, []).packed(6, [1, 300]);
  assert.equal(hex(w.finish()), "2200" + "3203" + "01ac02");
  const big = new Uint8Array(1000).fill(7);
  const out = new ProtoWriter().bytes(1, big).finish();
  assert.equal(out.length, 1 + 2 + 1000);
  let read = new Uint8Array();
  readFields(out, (f) => (read = new Uint8Array(f.bytes())));
  assert.deepEqual(read, big);
});
