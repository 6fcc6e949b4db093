/** An upload's bytes, refused with a 413 past `maxBytes` (the object store then keeps nothing). */
export function capped(stream: ReadableStream<Uint8Array>, maxBytes: number): { stream: ReadableStream<Uint8Array>; exceeded(): boolean } {
  let received = 0;
  let over = false;
  const counted = stream.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        received += chunk.byteLength;
        if (received > maxBytes) {
          over = true;
          controller.error(new Error("upload size limit reached"));
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
  return { stream: counted, exceeded: () => over };
}
