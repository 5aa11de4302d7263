// Reads keep-alive HTTP/1.1 responses framed by Content-Length off a node:net socket, for the
// Node.js load scripts of bench/http (paced_producer.mjs, pull_consumer.mjs). Nothing else
// is needed from the broker's answers; a response without Content-Length is an error.

/**
 * Calls `onResponse(status, body)` for each whole response on `socket`, in order, and
 * `onError(err)` (then destroys the socket) when a head has no Content-Length.
 */
export function onResponses(socket, onResponse, onError) {
  let buf = Buffer.alloc(0);
  let bodyLeft = -1, status = 0;
  socket.on("data", (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    for (;;) {
      if (bodyLeft < 0) {
        const end = buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buf.toString("latin1", 0, end);
        status = Number(head.slice(9, 12));
        const m = /\r\ncontent-length:\s*(\d+)/i.exec(head);
        if (!m) {
          onError(new Error(`answer without Content-Length:\n${head}`));
          return socket.destroy();
        }
        bodyLeft = Number(m[1]);
        buf = buf.subarray(end + 4);
      }
      if (buf.length < bodyLeft) return;
      const body = buf.subarray(0, bodyLeft);
      buf = buf.subarray(bodyLeft);
      bodyLeft = -1;
      onResponse(status, body);
      if (socket.destroyed) return;
    }
  });
}
