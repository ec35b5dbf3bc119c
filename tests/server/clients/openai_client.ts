// Drives `augur serve` through the official `openai` npm client, so every response is read
// through the client's own types (ChatCompletion, ChatCompletionChunk, Completion): a field the
// server names or shapes differently from OpenAI's schema fails here, at compile or run time.
//
// Usage: node dist/openai_client.js CONFIG.json
// CONFIG (written by tests/server/openai_client_test.cpp):
//   { "base_url": "http://127.0.0.1:PORT/v1", "model": "...", "api_key": "KEY" | null,
//     "drafter": "none", "seed_reproducible": true,
//     "completion": { "prompt": "...", "max_tokens": N, "text": "...", "finish_reason": "..." },
//     "chat": { "messages": [...], "max_tokens": N, "text": "...", "finish_reason": "..." } }
// The expected texts are `augur run --temp 0` on the same prompt (chat: the rendered template).
// Prints one line per check; exits 1 with the first mismatch, named, on stderr.
import * as fs from "node:fs";
import OpenAI from "openai";
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionTokenLogprob,
} from "openai/resources/chat/completions";
import type { Completion, CompletionUsage } from "openai/resources/completions";

interface Expected {
  max_tokens: number;
  text: string;
  finish_reason: "stop" | "length";
}
interface CompletionCase extends Expected {
  prompt: string;
}
interface ChatCase extends Expected {
  messages: ChatCompletionMessageParam[];
}
interface Config {
  base_url: string;
  model: string;
  api_key: string | null;
  drafter: string; // the server's augur.drafter
  seed_reproducible: boolean; // false with --draft auto, whose choices follow live timings
  completion: CompletionCase;
  chat: ChatCase;
}

// augur's extension object, in the non-stream response and the final stream chunk.
interface AugurStats {
  drafter: string;
  cycles: number;
  drafted: number;
  accepted: number;
  tau: number;
  decode_tok_s: number;
  prefill_tok_s: number;
}

class Mismatch extends Error {}

function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Mismatch(what);
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

function expectEqual<T>(actual: T, expected: T, what: string): void {
  check(actual === expected, `${what}: got ${show(actual)}, expected ${show(expected)}`);
}

// The `augur` object the server adds; the client's types do not know it, so it is read through
// an explicit, checked cast.
function augurStats(response: object, what: string): AugurStats {
  const stats = (response as { augur?: unknown }).augur;
  check(typeof stats === "object" && stats !== null, `${what}: no 'augur' object`);
  const s = stats as Record<string, unknown>;
  for (const name of ["cycles", "drafted", "accepted", "tau", "decode_tok_s", "prefill_tok_s"]) {
    check(typeof s[name] === "number", `${what}: augur.${name} is ${show(s[name])}, not a number`);
  }
  check(typeof s.drafter === "string" && s.drafter !== "", `${what}: augur.drafter missing`);
  return stats as AugurStats;
}

function checkUsage(usage: CompletionUsage | undefined | null, tokens: number, what: string) {
  check(usage != null, `${what}: no usage`);
  expectEqual(usage.completion_tokens, tokens, `${what}: usage.completion_tokens`);
  check(usage.prompt_tokens > 0, `${what}: usage.prompt_tokens is ${usage.prompt_tokens}`);
  expectEqual(
    usage.total_tokens,
    usage.prompt_tokens + usage.completion_tokens,
    `${what}: usage.total_tokens`,
  );
}

// A stop string cut from the middle of the expected text, at its first occurrence there: the
// answer must then be the text before it, with finish_reason "stop".
function stopStringFor(text: string): { stop: string; before: string } {
  const middle = Math.floor(text.length / 2);
  const starts = [...Array(text.length).keys()].map((i) => (middle + i) % text.length);
  for (const length of [4, 3, 2]) {
    for (const at of starts.filter((i) => i > 0 && i + length <= text.length)) {
      const stop = text.slice(at, at + length);
      if (stop.trim() !== "" && text.indexOf(stop) === at) return { stop, before: text.slice(0, at) };
    }
  }
  throw new Mismatch(`no usable stop string in the expected text ${show(text)}`);
}

// Log-probabilities sorted best first, each <= 0.
function checkSorted(logprobs: number[], what: string): void {
  for (let i = 0; i < logprobs.length; ++i) {
    check(logprobs[i] <= 0, `${what}: logprob ${logprobs[i]} > 0`);
    if (i > 0) {
      check(logprobs[i] <= logprobs[i - 1], `${what}: top logprobs not sorted: ${show(logprobs)}`);
    }
  }
}

function checkChatLogprobs(
  content: ChatCompletionTokenLogprob[],
  n_top: number,
  greedy: boolean,
  what: string,
): void {
  content.forEach((entry, i) => {
    const at = `${what}: logprobs.content[${i}]`;
    check(typeof entry.token === "string", `${at}.token is not a string`);
    check(entry.logprob <= 0, `${at}.logprob = ${entry.logprob} > 0`);
    check(Array.isArray(entry.bytes), `${at}.bytes is not a list`);
    expectEqual(
      Buffer.from(entry.bytes ?? []).toString("latin1"),
      Buffer.from(entry.token, "utf8").toString("latin1"),
      `${at}.bytes`,
    );
    expectEqual(entry.top_logprobs.length, n_top, `${at}.top_logprobs.length`);
    checkSorted(
      entry.top_logprobs.map((t) => t.logprob),
      `${at}.top_logprobs`,
    );
    if (greedy && n_top > 0) {
      // Temperature 0 picks the argmax: the chosen token heads the alternatives.
      const best = entry.top_logprobs[0];
      expectEqual(best.token, entry.token, `${at}: greedy token vs top_logprobs[0].token`);
      check(
        Math.abs(best.logprob - entry.logprob) < 1e-6,
        `${at}: chosen logprob ${entry.logprob} != top_logprobs[0].logprob ${best.logprob}`,
      );
    }
  });
}

class ClientTest {
  private readonly client: OpenAI;
  private passed = 0;

  constructor(private readonly config: Config) {
    this.client = this.makeClient(config.api_key ?? "unused");
  }

  makeClient(apiKey: string): OpenAI {
    return new OpenAI({ baseURL: this.config.base_url, apiKey, maxRetries: 0, timeout: 120_000 });
  }

  async step(name: string, body: () => Promise<void>): Promise<void> {
    const start = Date.now();
    try {
      await body();
    } catch (e) {
      const message = e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e);
      throw new Mismatch(`[${name}] ${message}`);
    }
    ++this.passed;
    console.log(`ok ${name} (${Date.now() - start} ms)`);
  }

  // Non-stream completion; returns the text.
  async completion(
    params: Omit<OpenAI.CompletionCreateParamsNonStreaming, "model">,
  ): Promise<Completion> {
    return this.client.completions.create({ model: this.config.model, ...params });
  }

  async chat(
    params: Omit<OpenAI.ChatCompletionCreateParamsNonStreaming, "model">,
  ): Promise<ChatCompletion> {
    return this.client.chat.completions.create({ model: this.config.model, ...params });
  }

  // Streams a chat completion; returns the concatenated deltas, every chunk, and the final one.
  async chatStream(params: Omit<OpenAI.ChatCompletionCreateParamsStreaming, "model" | "stream">) {
    const stream = await this.client.chat.completions.create({
      model: this.config.model,
      stream: true,
      ...params,
    });
    const chunks: ChatCompletionChunk[] = [];
    let text = "";
    for await (const chunk of stream) {
      chunks.push(chunk);
      expectEqual(chunk.object, "chat.completion.chunk", "chunk.object");
      for (const choice of chunk.choices) text += choice.delta.content ?? "";
    }
    return { text, chunks };
  }

  async completionStream(params: Omit<OpenAI.CompletionCreateParamsStreaming, "model" | "stream">) {
    const stream = await this.client.completions.create({
      model: this.config.model,
      stream: true,
      ...params,
    });
    const chunks: Completion[] = [];
    let text = "";
    for await (const chunk of stream) {
      chunks.push(chunk);
      expectEqual(chunk.object, "text_completion", "chunk.object");
      for (const choice of chunk.choices) text += choice.text;
    }
    return { text, chunks };
  }

  // The chunk that carries finish_reason: exactly one, followed by nothing but a usage chunk.
  finishChunk<T extends { choices: Array<{ finish_reason: string | null }> }>(
    chunks: T[],
    what: string,
  ): T {
    const finished = chunks.filter((c) => c.choices.some((choice) => choice.finish_reason));
    expectEqual(finished.length, 1, `${what}: chunks with a finish_reason`);
    return finished[0];
  }

  async run(): Promise<number> {
    const { completion, chat } = this.config;
    const greedy = { temperature: 0 } as const;

    await this.step("completions greedy", async () => {
      const r = await this.completion({
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        ...greedy,
      });
      expectEqual(r.object, "text_completion", "object");
      expectEqual(r.choices.length, 1, "choices.length");
      expectEqual(r.choices[0].text, completion.text, "text vs augur run");
      expectEqual(r.choices[0].finish_reason, completion.finish_reason, "finish_reason");
      if (completion.finish_reason === "length") {
        checkUsage(r.usage, completion.max_tokens, "usage");
      }
      expectEqual(augurStats(r, "response").drafter, this.config.drafter, "augur.drafter");
    });

    await this.step("completions greedy stream", async () => {
      const { text, chunks } = await this.completionStream({
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        ...greedy,
      });
      expectEqual(text, completion.text, "streamed text vs augur run");
      check(chunks.length >= 3, `only ${chunks.length} chunks: not streamed`);
      const last = this.finishChunk(chunks, "stream");
      expectEqual(last, chunks[chunks.length - 1], "the finish chunk is the last");
      expectEqual(last.choices[0].finish_reason, completion.finish_reason, "finish_reason");
      augurStats(last, "final chunk");
    });

    await this.step("chat greedy", async () => {
      const r = await this.chat({ messages: chat.messages, max_tokens: chat.max_tokens, ...greedy });
      expectEqual(r.object, "chat.completion", "object");
      expectEqual(r.choices[0].message.role, "assistant", "message.role");
      expectEqual(r.choices[0].message.content, chat.text, "text vs augur run");
      expectEqual(r.choices[0].finish_reason, chat.finish_reason, "finish_reason");
      if (chat.finish_reason === "length") checkUsage(r.usage, chat.max_tokens, "usage");
      const stats = augurStats(r, "response");
      if (this.config.drafter !== "none") check(stats.cycles > 0, `augur.cycles = ${stats.cycles}`);
    });

    await this.step("chat greedy stream", async () => {
      const { text, chunks } = await this.chatStream({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        ...greedy,
      });
      expectEqual(text, chat.text, "streamed text vs augur run");
      check(chunks.length >= 3, `only ${chunks.length} chunks: not streamed`);
      expectEqual(chunks[0].choices[0].delta.role, "assistant", "first delta's role");
      const last = this.finishChunk(chunks, "stream");
      expectEqual(last, chunks[chunks.length - 1], "the finish chunk is the last");
      expectEqual(last.choices[0].finish_reason, chat.finish_reason, "finish_reason");
      check(last.usage == null, "usage sent without stream_options.include_usage");
      augurStats(last, "final chunk");
    });

    await this.step("stream_options.include_usage", async () => {
      const { text, chunks } = await this.chatStream({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        stream_options: { include_usage: true },
        ...greedy,
      });
      expectEqual(text, chat.text, "streamed text");
      const usageChunk = chunks[chunks.length - 1];
      expectEqual(usageChunk.choices.length, 0, "usage chunk's choices.length");
      const tokens = chunks.reduce((n, c) => n + (c.choices[0]?.logprobs?.content?.length ?? 0), 0);
      expectEqual(tokens, 0, "logprobs sent without being asked for");
      if (chat.finish_reason === "length") {
        checkUsage(usageChunk.usage, chat.max_tokens, "usage chunk");
      } else {
        check(usageChunk.usage != null, "usage chunk has no usage");
      }
      const others = chunks.slice(0, -1).filter((c) => c.usage != null);
      expectEqual(others.length, 0, "chunks before the last with usage");
    });

    await this.step("max_tokens and finish_reason length", async () => {
      const r = await this.completion({ prompt: completion.prompt, max_tokens: 3, ...greedy });
      expectEqual(r.choices[0].finish_reason, "length", "finish_reason");
      checkUsage(r.usage, 3, "usage");
      check(
        completion.text.startsWith(r.choices[0].text),
        `3-token text ${show(r.choices[0].text)} is not a prefix of ${show(completion.text)}`,
      );
    });

    const { stop, before } = stopStringFor(completion.text);
    await this.step(`stop ${show(stop)} and finish_reason stop`, async () => {
      const r = await this.completion({
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        stop: [stop],
        ...greedy,
      });
      expectEqual(r.choices[0].text, before, "text before the stop string");
      expectEqual(r.choices[0].finish_reason, "stop", "finish_reason");
      const streamed = await this.completionStream({
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        stop,
        ...greedy,
      });
      expectEqual(streamed.text, before, "streamed text before the stop string");
      const last = this.finishChunk(streamed.chunks, "stream");
      expectEqual(last.choices[0].finish_reason, "stop", "streamed finish_reason");
    });

    const chatStop = stopStringFor(chat.text);
    await this.step(`chat stop ${show(chatStop.stop)}`, async () => {
      const r = await this.chat({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        stop: chatStop.stop,
        ...greedy,
      });
      expectEqual(r.choices[0].message.content, chatStop.before, "text before the stop string");
      expectEqual(r.choices[0].finish_reason, "stop", "finish_reason");
    });

    await this.step("seed: same seed at temperature 0.8 gives the same text", async () => {
      if (!this.config.seed_reproducible) {
        console.log("  (skipped: this drafter's sampled tokens follow live timings)");
        return;
      }
      const params = {
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        temperature: 0.8,
        seed: 4242,
      };
      const first = await this.completion(params);
      const second = await this.completion(params);
      expectEqual(second.choices[0].text, first.choices[0].text, "second seeded text");
      const streamed = await this.completionStream(params);
      expectEqual(streamed.text, first.choices[0].text, "seeded streamed text");
      const chatParams = {
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        temperature: 0.8,
        seed: 7,
      };
      const a = await this.chat(chatParams);
      const b = await this.chat(chatParams);
      expectEqual(b.choices[0].message.content, a.choices[0].message.content, "seeded chat");
    });

    await this.step("chat logprobs + top_logprobs", async () => {
      const n_top = 3;
      const r = await this.chat({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        logprobs: true,
        top_logprobs: n_top,
        ...greedy,
      });
      expectEqual(r.choices[0].message.content, chat.text, "text with logprobs");
      const content = r.choices[0].logprobs?.content;
      check(content != null, "choices[0].logprobs.content missing");
      expectEqual(content.length, r.usage?.completion_tokens, "one entry per completion token");
      checkChatLogprobs(content, n_top, true, "chat");
      const joined = content.map((e) => e.token).join("");
      check(
        joined.startsWith(chat.text),
        `tokens ${show(joined)} do not spell the text ${show(chat.text)}`,
      );

      const streamed = await this.chatStream({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        logprobs: true,
        top_logprobs: n_top,
        ...greedy,
      });
      const streamedContent = streamed.chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
      expectEqual(streamedContent.length, content.length, "streamed logprobs entries");
      checkChatLogprobs(streamedContent, n_top, true, "chat stream");
      streamedContent.forEach((e, i) =>
        expectEqual(e.token, content[i].token, `streamed logprobs.content[${i}].token`),
      );

      // Sampled at temperature 0.8: the logprobs are still the model's, each <= 0.
      const sampled = await this.chat({
        messages: chat.messages,
        max_tokens: chat.max_tokens,
        logprobs: true,
        top_logprobs: n_top,
        temperature: 0.8,
        seed: 11,
      });
      checkChatLogprobs(sampled.choices[0].logprobs?.content ?? [], n_top, false, "sampled");
    });

    await this.step("completions logprobs: N", async () => {
      const n_top = 3;
      const r = await this.completion({
        prompt: completion.prompt,
        max_tokens: completion.max_tokens,
        logprobs: n_top,
        ...greedy,
      });
      expectEqual(r.choices[0].text, completion.text, "text with logprobs");
      const lp = r.choices[0].logprobs;
      check(lp != null, "choices[0].logprobs missing");
      const { tokens, token_logprobs, top_logprobs, text_offset } = lp;
      check(
        tokens != null && token_logprobs != null && top_logprobs != null && text_offset != null,
        `logprobs fields missing: ${show(Object.keys(lp))}`,
      );
      const n = r.usage?.completion_tokens;
      expectEqual(tokens.length, n, "tokens.length");
      expectEqual(token_logprobs.length, n, "token_logprobs.length");
      expectEqual(top_logprobs.length, n, "top_logprobs.length");
      expectEqual(text_offset.length, n, "text_offset.length");
      let offset = 0;
      tokens.forEach((token, i) => {
        const at = `logprobs[${i}]`;
        check(token_logprobs[i] <= 0, `${at}: token_logprob ${token_logprobs[i]} > 0`);
        expectEqual(text_offset[i], offset, `${at}: text_offset`);
        offset += Buffer.byteLength(token, "utf8");
        const top = Object.entries(top_logprobs[i]);
        // Distinct tokens can share a piece, and a dict keeps one: at most n_top entries.
        check(top.length >= 1 && top.length <= n_top, `${at}: ${top.length} top entries`);
        const values = top.map(([, logprob]) => logprob).sort((a, b) => b - a);
        checkSorted(values, `${at}.top_logprobs`);
        // Greedy: the chosen token is the best, and is among the alternatives.
        check(token in top_logprobs[i], `${at}: chosen ${show(token)} not among the top`);
        check(
          Math.abs(top_logprobs[i][token] - token_logprobs[i]) < 1e-6,
          `${at}: top logprob of the chosen token ${top_logprobs[i][token]} != ${token_logprobs[i]}`,
        );
        check(
          Math.abs(values[0] - token_logprobs[i]) < 1e-6,
          `${at}: greedy token's logprob ${token_logprobs[i]} is not the best ${values[0]}`,
        );
      });
    });

    await this.step("errors: n = 2 and a bad temperature are 400 APIErrors", async () => {
      const expect400 = async (what: string, call: () => Promise<unknown>) => {
        try {
          await call();
        } catch (e) {
          check(e instanceof OpenAI.APIError, `${what}: ${String(e)} is not an APIError`);
          expectEqual(e.status, 400, `${what}: status`);
          check(e instanceof OpenAI.BadRequestError, `${what}: not a BadRequestError`);
          check(e.message.length > 0, `${what}: empty message`);
          return;
        }
        throw new Mismatch(`${what}: no error`);
      };
      await expect400("chat n=2", () =>
        this.chat({ messages: chat.messages, max_tokens: 2, n: 2 }),
      );
      await expect400("completions n=2", () =>
        this.completion({ prompt: completion.prompt, max_tokens: 2, n: 2 }),
      );
      await expect400("temperature -1", () =>
        this.chat({ messages: chat.messages, max_tokens: 2, temperature: -1 }),
      );
      await expect400("stream with temperature 'hot'", async () => {
        const stream = await this.client.chat.completions.create({
          model: this.config.model,
          messages: chat.messages,
          stream: true,
          // A wrong type the client's types forbid, sent anyway to see the server's answer.
          temperature: "hot" as unknown as number,
        });
        for await (const chunk of stream) void chunk;
      });
    });

    if (this.config.api_key != null) {
      await this.step("api key: a wrong key is an AuthenticationError, the right one works", async () => {
        for (const key of ["wrong-" + this.config.api_key, ""]) {
          const wrong = this.makeClient(key);
          try {
            await wrong.chat.completions.create({
              model: this.config.model,
              messages: chat.messages,
              max_tokens: 2,
            });
            throw new Mismatch(`key ${show(key)} was accepted`);
          } catch (e) {
            if (e instanceof Mismatch) throw e;
            check(e instanceof OpenAI.AuthenticationError, `key ${show(key)}: ${String(e)}`);
            expectEqual(e.status, 401, "status");
          }
        }
        const models = await this.client.models.list();
        expectEqual(models.data[0]?.id, this.config.model, "models.list with the right key");
      });
    }
    return this.passed;
  }
}

async function main(): Promise<void> {
  if (process.argv.length !== 3) {
    console.error("usage: node openai_client.js CONFIG.json");
    process.exit(2);
  }
  const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as Config;
  const test = new ClientTest(config);
  try {
    const passed = await test.run();
    console.log(`openai client: all ${passed} checks passed`);
  } catch (e) {
    console.error(`MISMATCH ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
}

void main();
