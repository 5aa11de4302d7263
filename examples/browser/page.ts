/// <reference lib="dom" />
// The page's script: produce the form's text to "orders". The API key a page holds is
// visible to its users: give it a key that may only publish (MQ_API_KEYS "publish").
import { BrokerError, MqClient } from "../../client/mod.ts";

const params = new URLSearchParams(location.search);
const mq = new MqClient({
  baseUrl: params.get("broker") ?? "http://127.0.0.1:8080",
  token: params.get("token") ?? undefined,
  retries: 0,
});
const out = document.getElementById("out")!;

async function send(text: string): Promise<unknown> {
  try {
    const { messageId } = await mq.produce("orders", {
      body: text,
      properties: { via: "browser" },
    });
    return { ok: true, messageId };
  } catch (err) {
    return { ok: false, error: err instanceof BrokerError ? err.code : String(err) };
  }
}

const form = document.getElementById("send") as HTMLFormElement;
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const result = await send(new FormData(form).get("text") as string);
  out.textContent = JSON.stringify(result);
  (globalThis as { edgemqResult?: unknown }).edgemqResult = result;
});
if (params.has("auto")) form.requestSubmit();
